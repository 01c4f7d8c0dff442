//! `incident-lab [--dir DIR]`: replays the incident and the three layers that stop it, in a
//! fresh workspace (default `.incident-lab/`), and exits 0 only if every step behaved as
//! the story says.

use std::{path::PathBuf, process::ExitCode};

use clap::Parser;

#[derive(Parser)]
#[command(
    version,
    about = "A naive run_sql server drops a table; restore, record, and stop it three times"
)]
struct Cli {
    /// Workspace directory, deleted and recreated on every run.
    #[arg(long, default_value = ".incident-lab")]
    dir: PathBuf,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match incident_lab::transcript::run(&cli.dir).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("incident-lab: {message}");
            ExitCode::FAILURE
        }
    }
}
