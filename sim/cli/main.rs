//! The `dlsim` binary: a thin shell over `dlsim_cli::run`.

use std::process::ExitCode;

fn main() -> ExitCode {
    match dlsim_cli::run(std::env::args_os()) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(dlsim_cli::exit_code(&err))
        }
    }
}
