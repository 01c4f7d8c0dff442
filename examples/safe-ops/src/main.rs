//! safe-ops: the seed's confirmation-guarded server, on guard.
//!
//! `safe-ops` serves stdio; `safe-ops --http 127.0.0.1:8080` serves streamable HTTP;
//! `safe-ops demo` plays every outcome of every tool against an in-process client.

use std::{net::SocketAddr, path::PathBuf, process::ExitCode};

use clap::{Parser, Subcommand};
use rmcp::{
    ServiceExt,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};
use rmcp_guard::{Exposure, Guard, exposure::read_only_from_env};

use safe_ops::{SafeOps, demo};

/// How often the allowlist file is checked for changes (SIGHUP reloads at once).
const RELOAD_POLL: std::time::Duration = std::time::Duration::from_millis(500);

#[derive(Parser)]
#[command(
    name = "safe-ops",
    about = "An MCP server whose destructive tools ask the human first"
)]
struct Cli {
    /// Sandbox directory for delete_file.
    #[arg(long, env = "SAFE_OPS_ROOT", default_value = ".safe-ops/files")]
    root: PathBuf,
    /// SQLite database for drop_table and deploy (created and seeded on first start; in
    /// read-only mode it must exist, and is only read).
    #[arg(long, env = "SAFE_OPS_DB", default_value = ".safe-ops/safe-ops.db")]
    db: PathBuf,
    /// The allowlist of tools to publish (TOML or JSON). Missing or broken: no tool is
    /// enabled. It reloads when the file changes or on SIGHUP.
    #[arg(long, env = "GUARD_ALLOWLIST", default_value = safe_ops::server::DEFAULT_ALLOWLIST)]
    allowlist: PathBuf,
    /// Publish only read-only tools (also GUARD_READ_ONLY=1).
    #[arg(long)]
    read_only: bool,
    /// Serve streamable HTTP on this loopback address instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Play accept, decline, cancel, a wrong typed name and an invalid form for each tool,
    /// in a fresh workspace under .safe-ops/demo, and print the transcript.
    Demo,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let quiet = matches!(cli.command, Some(Command::Demo));
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| if quiet { "warn" } else { "info" }.into()),
        )
        .init();
    let result = match cli.command {
        Some(Command::Demo) => demo::run().await,
        None => serve(&cli).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("safe-ops: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(cli: &Cli) -> Result<(), String> {
    let exposure =
        Exposure::allowlist(&cli.allowlist).read_only(cli.read_only || read_only_from_env());
    let guard = Guard::from_env()
        .map_err(|e| e.to_string())?
        .with_exposure(exposure);
    let server = SafeOps::open(&cli.root, &cli.db, guard)?;
    tracing::info!(root = %server.sandbox().root().display(), db = %cli.db.display(), "safe-ops ready");
    match cli.http {
        None => {
            let exposure = server.guard_config().exposure().cloned();
            let running = server
                .serve(rmcp::transport::stdio())
                .await
                .map_err(|e| format!("stdio session failed to start: {e}"))?;
            if let Some(exposure) = exposure {
                exposure.watch(Some(running.peer().clone()), RELOAD_POLL);
            }
            running
                .waiting()
                .await
                .map_err(|e| format!("stdio session ended with an error: {e}"))?;
        }
        Some(addr) => serve_http(server, addr).await?,
    }
    Ok(())
}

/// Streamable HTTP on loopback. Host and Origin must be local, which blocks DNS rebinding.
async fn serve_http(server: SafeOps, addr: SocketAddr) -> Result<(), String> {
    if !addr.ip().is_loopback() {
        return Err(format!(
            "--http {addr}: safe-ops serves HTTP on loopback only (127.0.0.1 or [::1])"
        ));
    }
    if let Some(exposure) = server.guard_config().exposure() {
        exposure.watch(None, RELOAD_POLL);
    }
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(["localhost", "127.0.0.1", "::1"])
        .with_allowed_origins(["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"]);
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        LocalSessionManager::default().into(),
        config,
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    tracing::info!("serving streamable HTTP at http://{addr}/mcp");
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|e| format!("HTTP server failed: {e}"))
}
