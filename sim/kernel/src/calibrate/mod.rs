//! Calibration (in progress).
