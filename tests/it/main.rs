//! Integration tests, one binary, modules named by the behaviour they pin down.

mod bad_input;
mod baselines;
mod calibration;
mod cli;
mod determinism;
mod dlrover;
mod elastic;
mod faults;
mod golden;
mod importers;
mod limits;
mod mutation;
mod online;
mod outputs;
mod paired;
mod report;
mod reproduce;
mod simulation;
mod support;
mod sweep;
