//! Stand-alone calibration runner, equivalent to `dlsim calibrate` (which wraps the same
//! `CalibrateArgs`): `cargo run --release -p dlsim-kernel --example calibrate -- --quick`.

use clap::Parser;
use dlsim_kernel::calibrate::{run_cli, CalibrateArgs};

#[derive(Parser)]
#[command(about = "Measure the kernel and fit the simulator's throughput model")]
struct Cli {
    #[command(flatten)]
    args: CalibrateArgs,
}

fn main() -> std::process::ExitCode {
    match run_cli(&Cli::parse().args, None) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}
