//! The hand-written `delete_file` server on stdio, the baseline of the end-to-end bench.
//! Its sandbox root is `SAFE_OPS_ROOT` (as for safe-ops), created if missing.

use std::{path::PathBuf, process::ExitCode};

use hand_written_delete::HandWritten;
use rmcp::ServiceExt;

#[tokio::main]
async fn main() -> ExitCode {
    let root = std::env::var_os("SAFE_OPS_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(".safe-ops/files"));
    if let Err(e) = std::fs::create_dir_all(&root) {
        eprintln!("hand-written-delete: cannot create {}: {e}", root.display());
        return ExitCode::FAILURE;
    }
    let server = match HandWritten::new(&root) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("hand-written-delete: cannot open {}: {e}", root.display());
            return ExitCode::FAILURE;
        }
    };
    let running = match server.serve(rmcp::transport::stdio()).await {
        Ok(running) => running,
        Err(e) => {
            eprintln!("hand-written-delete: the stdio session failed to start: {e}");
            return ExitCode::FAILURE;
        }
    };
    match running.waiting().await {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hand-written-delete: the stdio session ended with an error: {e}");
            ExitCode::FAILURE
        }
    }
}
