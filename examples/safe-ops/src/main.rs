//! safe-ops: the seed's confirmation-guarded server, on guard.
//!
//! `safe-ops` serves stdio; `safe-ops --http 127.0.0.1:8080` serves streamable HTTP (feature
//! `http`); `--downloads 127.0.0.1:0` serves the links create_download_link makes (feature
//! `downloads`); `safe-ops demo` plays every outcome of every tool against an in-process
//! client (feature `demo`); `safe-ops grants` lists the grants people opened and
//! `safe-ops grants --revoke ID` ends one. The features are on by default; a stdio-only server
//! is `cargo build --release -p safe-ops --no-default-features`.
//!
//! Unless named on the command line, the sandbox, the database and the audit log
//! (`audit.db`, every outcome of every call, for `guard-audit verify`) live under the user's data
//! directory (`$XDG_DATA_HOME/safe-ops`, else `~/.local/share/safe-ops`) and the allowlist
//! under the configuration directory (`$XDG_CONFIG_HOME/safe-ops/allowlist.toml`, else
//! `~/.config/safe-ops/allowlist.toml`), where the shipped list is copied on first start.

#[cfg(any(feature = "http", feature = "downloads"))]
use std::net::SocketAddr;
use std::{path::PathBuf, process::ExitCode};

use clap::{Parser, Subcommand};
use rmcp::ServiceExt;
#[cfg(feature = "http")]
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp_guard::{
    Exposure, Guard,
    exposure::read_only_from_env,
    ops::{Operations, SqliteStore},
    user_dirs::{UserDirs, install_default},
};

use safe_ops::SafeOps;
#[cfg(feature = "demo")]
use safe_ops::demo;

/// The name safe-ops' audit log carries in its checkpoints (`guard-audit checkpoint
/// --origin`).
const AUDIT_ORIGIN: &str = "safe-ops audit log";

/// How often closed undo windows are looked for and their trashed files purged.
const PURGE_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// How often the allowlist file is checked for changes (SIGHUP reloads at once).
const RELOAD_POLL: std::time::Duration = std::time::Duration::from_millis(500);

#[derive(Parser)]
#[command(
    name = "safe-ops",
    version,
    about = "An MCP server whose destructive tools ask the human first"
)]
struct Cli {
    /// Sandbox directory for delete_file [default: $XDG_DATA_HOME/safe-ops/files].
    #[arg(long, env = "SAFE_OPS_ROOT")]
    root: Option<PathBuf>,
    /// SQLite database for drop_table and deploy (created and seeded on first start; in
    /// read-only mode it must exist, and is only read) [default:
    /// $XDG_DATA_HOME/safe-ops/safe-ops.db].
    #[arg(long, env = "SAFE_OPS_DB")]
    db: Option<PathBuf>,
    /// The audit log: every outcome of every tool call, one tamper-evident record each,
    /// kept in this SQLite file (created on first start) and checked with
    /// `guard-audit verify --db FILE` [default: $XDG_DATA_HOME/safe-ops/audit.db].
    #[arg(long, env = "SAFE_OPS_AUDIT_DB")]
    audit_db: Option<PathBuf>,
    /// Have the audit log's checkpoints cosigned by the witnesses this C2SP tlog-policy
    /// names (`log VKEY` for --log-key's key, `witness NAME VKEY URL`, and a quorum): every
    /// --checkpoint-every seconds while the log grows, and once more on exit. A witness that
    /// is down never holds up a call; the log says so.
    #[cfg(feature = "witness")]
    #[arg(long, env = "SAFE_OPS_WITNESS_POLICY", value_name = "FILE")]
    witness_policy: Option<PathBuf>,
    /// The key that signs the audit log's checkpoints (the first line of `guard-audit keygen
    /// NAME --for log`, mode 0600), kept apart from the database [default:
    /// $XDG_CONFIG_HOME/safe-ops/audit/log.key].
    #[cfg(feature = "witness")]
    #[arg(long, env = "SAFE_OPS_LOG_KEY", value_name = "FILE")]
    log_key: Option<PathBuf>,
    /// How often, with --witness-policy, a grown log is checkpointed and sent to the
    /// witnesses.
    #[cfg(feature = "witness")]
    #[arg(long, value_name = "SECONDS", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    checkpoint_every: u64,
    /// The allowlist of tools to publish (TOML or JSON). Missing or broken: no tool is
    /// enabled. It reloads when the file changes or on SIGHUP [default:
    /// $XDG_CONFIG_HOME/safe-ops/allowlist.toml, where the shipped list is copied on first
    /// start].
    #[arg(long, env = "GUARD_ALLOWLIST")]
    allowlist: Option<PathBuf>,
    /// Publish only read-only tools (also GUARD_READ_ONLY=1).
    #[arg(long)]
    read_only: bool,
    /// Serve streamable HTTP on this loopback address instead of stdio.
    #[cfg(feature = "http")]
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Serve the links create_download_link makes on this loopback address (port 0 picks a
    /// free one, and the log says which). Links are signed under a key made at start and
    /// kept in memory: they end with the process. Without it the tool makes no links.
    #[cfg(feature = "downloads")]
    #[arg(long, env = "SAFE_OPS_DOWNLOADS", value_name = "ADDR")]
    downloads: Option<SocketAddr>,
    /// Where the approval page for deploy_production listens (loopback; port 0 picks a free
    /// one, and the log says which).
    #[cfg(feature = "approval")]
    #[arg(
        long,
        env = "SAFE_OPS_APPROVAL_ADDR",
        value_name = "ADDR",
        default_value = "127.0.0.1:0"
    )]
    approval_addr: std::net::SocketAddr,
    /// Someone who may approve a production deploy (repeat, or comma-separated in
    /// SAFE_OPS_APPROVERS); deploy_production needs two besides the requester. Their
    /// one-time links go out through --approver-webhook or --approver-drop, never the log.
    #[cfg(feature = "approval")]
    #[arg(
        long = "approver",
        env = "SAFE_OPS_APPROVERS",
        value_name = "NAME",
        value_delimiter = ','
    )]
    approvers: Vec<String>,
    /// Deliver approver links by signed POST to this receiver on loopback (http://127.0.0.1:
    /// PORT/PATH); the signing secret is read from SAFE_OPS_WEBHOOK_SECRET.
    #[cfg(feature = "approval")]
    #[arg(long, env = "SAFE_OPS_APPROVER_WEBHOOK", value_name = "URL")]
    approver_webhook: Option<String>,
    /// Deliver approver links as JSON files into this directory (which must not be
    /// writable by other users), for a relay or the approvers to pick up.
    #[cfg(feature = "approval")]
    #[arg(long, env = "SAFE_OPS_APPROVER_DROP", value_name = "DIR")]
    approver_drop: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Play accept, decline, cancel, a wrong typed name and an invalid form for each tool,
    /// in a fresh workspace under .safe-ops/demo, and print the transcript.
    #[cfg(feature = "demo")]
    Demo,
    /// List the grants that let delete_file run without asking (in the audit log's store),
    /// or revoke one.
    Grants {
        /// End this grant now, for every server sharing the store.
        #[arg(long, value_name = "ID")]
        revoke: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Kept to the end of main: dropping it writes out the lines still queued.
    let _log = match safe_ops::logging::init(is_demo(&cli)) {
        Ok(log) => log,
        Err(message) => {
            eprintln!("safe-ops: {message}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match runtime(&cli) {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("safe-ops: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("safe-ops: {message}");
            ExitCode::FAILURE
        }
    }
}

/// A stdio server has one client, whose requests one thread serves as fast as several
/// (SQLite and the log have threads of their own) and with less memory; HTTP serves many
/// clients at once, and the demo runs a client and a server in one process.
fn runtime(cli: &Cli) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = if serves_stdio(cli) {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    builder.enable_all().build()
}

fn serves_stdio(cli: &Cli) -> bool {
    #[cfg(feature = "http")]
    if cli.http.is_some() {
        return false;
    }
    cli.command.is_none()
}

/// The allowlist shipped with safe-ops: every tool it defines.
const SHIPPED_ALLOWLIST: &str = include_str!("../allowlist.toml");

/// Where the sandbox, the database, the audit log and the allowlist are: as named, else in
/// the user's directories (the allowlist copied there from the shipped one on first start).
fn paths(cli: &Cli) -> Result<Paths, String> {
    let dirs = || UserDirs::new("safe-ops");
    let root = match &cli.root {
        Some(root) => root.clone(),
        None => dirs()?.data().join("files"),
    };
    let db = match &cli.db {
        Some(db) => db.clone(),
        None => dirs()?.data().join("safe-ops.db"),
    };
    let audit_db = match &cli.audit_db {
        Some(audit_db) => audit_db.clone(),
        None => dirs()?.data().join("audit.db"),
    };
    let allowlist = match &cli.allowlist {
        Some(allowlist) => allowlist.clone(),
        None => {
            let allowlist = dirs()?.config().join("allowlist.toml");
            if install_default(&allowlist, SHIPPED_ALLOWLIST)? {
                tracing::info!(allowlist = %allowlist.display(), "installed the shipped allowlist");
            }
            allowlist
        }
    };
    Ok(Paths {
        root,
        db,
        audit_db,
        allowlist,
    })
}

/// The files and directories safe-ops serves from.
struct Paths {
    root: PathBuf,
    db: PathBuf,
    audit_db: PathBuf,
    allowlist: PathBuf,
}

#[cfg(feature = "demo")]
fn is_demo(cli: &Cli) -> bool {
    matches!(cli.command, Some(Command::Demo))
}

#[cfg(not(feature = "demo"))]
fn is_demo(_: &Cli) -> bool {
    false
}

async fn run(cli: &Cli) -> Result<(), String> {
    match &cli.command {
        #[cfg(feature = "demo")]
        Some(Command::Demo) => demo::run().await,
        Some(Command::Grants { revoke }) => {
            let audit_db = paths(cli)?.audit_db;
            let operator = std::env::var("USER").unwrap_or_else(|_| "operator".to_owned());
            let said = safe_ops::grants::run(&audit_db, AUDIT_ORIGIN, revoke.as_deref(), &operator)
                .await?;
            println!("{said}");
            Ok(())
        }
        None => serve(cli).await,
    }
}

async fn serve(cli: &Cli) -> Result<(), String> {
    let Paths {
        root,
        db,
        audit_db,
        allowlist,
    } = paths(cli)?;
    let exposure = Exposure::allowlist(&allowlist).read_only(cli.read_only || read_only_from_env());
    if let Some(dir) = audit_db.parent().filter(|d| !d.as_os_str().is_empty()) {
        safe_ops::private_dir(dir)
            .map_err(|e| format!("cannot create {} for the audit log: {e}", dir.display()))?;
    }
    let log = SqliteStore::open(&audit_db).map_err(|e| {
        format!(
            "cannot open the audit log {}: {e}; give another file with --audit-db",
            audit_db.display()
        )
    })?;
    // The audit log's store keeps the undo windows too, bound to the local user.
    let operations =
        Operations::new(log, safe_ops::identity::local_user()?).audit_origin(AUDIT_ORIGIN);
    let guard = Guard::from_env()
        .map_err(|e| e.to_string())?
        .with_exposure(exposure)
        .with_operations(operations);
    #[cfg(feature = "approval")]
    let guard = guard.with_approval_page(approval_page(cli).await?);
    #[cfg(feature = "witness")]
    let anchor = anchor(cli, &guard)?;
    let server = SafeOps::open(&root, &db, guard)?;
    #[cfg(feature = "downloads")]
    let server = match cli.downloads {
        Some(addr) => serve_downloads(server, addr).await?,
        None => server,
    };
    tracing::info!(root = %server.sandbox().root().display(), db = %db.display(), audit_db = %audit_db.display(), allowlist = %allowlist.display(), "safe-ops ready");
    #[cfg(feature = "witness")]
    let anchoring = anchor.map(|anchor| {
        let task = anchor.spawn(std::time::Duration::from_secs(cli.checkpoint_every));
        (anchor, task)
    });
    #[cfg(feature = "witness")]
    let witnessed = server.clone();
    // Deleted files and dropped tables whose undo window closed leave the trash.
    let _purger = server.purge_undo_windows(PURGE_EVERY);
    let served = serve_on(cli, server).await;
    #[cfg(feature = "witness")]
    if let Some((anchor, task)) = anchoring {
        task.abort();
        // What the last calls recorded is witnessed too: written to the log first (the
        // guard would write it when dropped, after this checkpoint).
        witnessed.guard_config().audit_settled().await;
        if let Err(error) = anchor.checkpoint().await {
            tracing::warn!(%error, "cannot checkpoint the audit log on exit");
        }
    }
    served
}

async fn serve_on(cli: &Cli, server: SafeOps) -> Result<(), String> {
    #[cfg(feature = "http")]
    if let Some(addr) = cli.http {
        return serve_http(server, addr).await;
    }
    #[cfg(not(feature = "http"))]
    let _ = cli;
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
    Ok(())
}

/// With --witness-policy, what has the audit log's checkpoints witnessed: the log key from
/// --log-key or the user's configuration directory, never from beside the database.
#[cfg(feature = "witness")]
fn anchor(cli: &Cli, guard: &Guard) -> Result<Option<rmcp_guard::audit::Anchor>, String> {
    let Some(policy) = &cli.witness_policy else {
        return Ok(None);
    };
    let key = match &cli.log_key {
        Some(key) => key.clone(),
        None => UserDirs::new("safe-ops")?
            .config()
            .join("audit")
            .join("log.key"),
    };
    let log = guard
        .audit_log()
        .ok_or("--witness-policy needs the audit log")?
        .clone();
    let anchor = rmcp_guard::audit::Anchor::from_files(log, &key, policy)
        .map_err(|e| format!("--witness-policy: {e}"))?;
    for witness in anchor.status() {
        tracing::info!(witness = %witness.witness, url = %witness.url, every_secs = cli.checkpoint_every, "the audit log's checkpoints go to witness {}", witness.witness);
    }
    Ok(Some(anchor))
}

/// The approval page deploy_production sends the human to; the log says where it is, who
/// approves and how their links reach them, never a link: over stdio the requester's client
/// reads this log.
#[cfg(feature = "approval")]
async fn approval_page(cli: &Cli) -> Result<rmcp_guard::approval::ApprovalPage, String> {
    use safe_ops::approval;
    let requester = approval::local_identity()?;
    let approvers = approval::approvers(&cli.approvers, &requester);
    let channel =
        approval::Channel::configured(cli.approver_webhook.as_deref(), cli.approver_drop.as_ref())?;
    let notifier = channel.map(approval::Channel::notifier).transpose()?;
    let delivered = notifier.as_ref().map(|n| n.channel());
    let page = approval::start(cli.approval_addr, requester.clone(), &approvers, notifier).await?;
    tracing::info!(
        page = %page.base_url(),
        requester = %requester.user,
        approvers = %approvers.join(","),
        links = delivered.as_deref().unwrap_or("nowhere"),
        "the approval page for deploy_production is at {}",
        page.base_url()
    );
    if delivered.is_none() {
        tracing::warn!(
            "deploy_production's approver links have no way to reach the approvers: set --approver-webhook (with SAFE_OPS_WEBHOOK_SECRET) or --approver-drop; until then it refuses and nothing is deployed"
        );
    }
    if approvers.len() < approval::REQUIRED {
        tracing::warn!(
            "deploy_production needs {} approvers besides {} and has {}: name them with --approver or SAFE_OPS_APPROVERS=bob,carol; until then it refuses and nothing is deployed",
            approval::REQUIRED,
            requester.user,
            approvers.len()
        );
    }
    Ok(page)
}

/// The endpoint create_download_link's links point at; the log says where it is, never a
/// link.
#[cfg(feature = "downloads")]
async fn serve_downloads(server: SafeOps, addr: SocketAddr) -> Result<SafeOps, String> {
    let links = safe_ops::downloads::serve(addr, server.sandbox().clone()).await?;
    tracing::info!(
        "download links are served at {}; they end when safe-ops stops",
        links.base()
    );
    Ok(server.with_downloads(links))
}

/// Streamable HTTP on loopback. Host and Origin must be local, which blocks DNS rebinding.
#[cfg(feature = "http")]
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
