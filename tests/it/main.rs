//! Integration tests, one binary, modules named by the behaviour they pin down.

mod bad_input;
mod baselines;
mod browser;
mod calibration;
mod cli;
mod determinism;
mod dlrover;
mod elastic;
mod faults;
mod folders;
mod golden;
mod importers;
mod limits;
mod locations;
mod mutation;
mod one_build;
mod online;
mod outputs;
mod paired;
mod policies;
mod report;
mod reproduce;
mod schema;
mod simulation;
mod support;
mod sweep;
