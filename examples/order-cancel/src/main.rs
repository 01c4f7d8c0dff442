//! order-cancel: `order-cancel` serves stdio on the embedded SQLite store;
//! `order-cancel --pg URL --pg-schema S` serves it on PostgreSQL as the server's restricted
//! role; `order-cancel setup-postgres` creates that schema and role; `order-cancel demo`
//! plays prepare → confirm → repeated confirm and the refusals, and prints the story.
//!
//! A deployment sets its limits by flag or environment: `--intent-ttl` (how long the user
//! has to confirm) and `--prepare-rate` (prepares per user), and which tools exist with
//! `--allowlist`. `--defer-confirm 2m` makes a confirmed cancellation wait two minutes
//! before it is filed, withdrawable with `withdraw(operation_id)` until then. A value that
//! does not read is a startup error naming the setting.
//!
//! Unless named on the command line, the SQLite database lives under the user's data
//! directory (`$XDG_DATA_HOME/order-cancel/orders.db`, else
//! `~/.local/share/order-cancel/orders.db`) and the allowlist under the configuration
//! directory (`$XDG_CONFIG_HOME/order-cancel/allowlist.toml`, else
//! `~/.config/order-cancel/allowlist.toml`), where the shipped list is copied on first start.

use std::{path::PathBuf, process::ExitCode, sync::Arc, time::Duration};

use clap::{Parser, Subcommand};
use order_cancel::{OrderCancel, demo, schema, stores};
use rmcp::ServiceExt;
use rmcp_guard::{
    EnvIdentity, Exposure, Guard, Guarded,
    audit::Anchor,
    ops::{OperationStore, Operations, Rate},
    user_dirs::{UserDirs, install_default},
};

/// The prepare tool whose limits the flags set.
const PREPARE_TOOL: &str = "prepare_order_cancel";
/// The longest intent lifetime a deployment may set: an intent is a moment's consent.
const MAX_TTL: Duration = Duration::from_secs(24 * 3600);
/// The longest a deployment may defer a confirm, as `#[confirm(defer = ...)]` allows.
const MAX_DEFER: Duration = Duration::from_secs(24 * 3600);
/// How often due deferred confirms are looked for.
const RUN_EVERY: Duration = Duration::from_secs(1);
/// How often the allowlist file is checked for changes (SIGHUP reloads at once).
const RELOAD_POLL: Duration = Duration::from_secs(2);

#[derive(Parser)]
#[command(
    name = "order-cancel",
    version,
    about = "An MCP server that prepares and confirms order cancellation requests"
)]
struct Cli {
    /// The SQLite database (created and seeded with the demo orders on first start)
    /// [default: $XDG_DATA_HOME/order-cancel/orders.db].
    #[arg(long, env = "ORDER_CANCEL_DB")]
    db: Option<PathBuf>,
    /// Use PostgreSQL at this URL instead of SQLite; the server connects as the role
    /// `order_cancel_app`, which `setup-postgres` creates.
    #[arg(long, env = "ORDER_CANCEL_PG")]
    pg: Option<String>,
    /// The PostgreSQL schema holding the orders and guard's tables.
    #[arg(long, env = "ORDER_CANCEL_PG_SCHEMA", default_value = "order_cancel")]
    pg_schema: String,
    /// PostgreSQL connections per server process.
    #[arg(long, default_value_t = 8)]
    pg_connections: usize,
    /// How long a prepared cancellation may be confirmed, e.g. 90s, 10m, 2h (at most 24h);
    /// default: the 10m the tool declares.
    #[arg(long, env = "ORDER_CANCEL_INTENT_TTL", value_parser = parse_ttl)]
    intent_ttl: Option<Duration>,
    /// Defer each confirmed cancellation by this long, e.g. 90s, 2m, 1h (at most 24h): the
    /// confirm answers when the request will be filed, `withdraw(operation_id)` stops it
    /// until then, and the order is checked again when it runs; default: file at once.
    #[arg(long, env = "ORDER_CANCEL_DEFER_CONFIRM", value_parser = parse_defer)]
    defer_confirm: Option<Duration>,
    /// How many prepares each user may make, e.g. 5/min, 100/h, 1000/day; default: the
    /// 5/min the tool declares.
    #[arg(long, env = "ORDER_CANCEL_PREPARE_RATE", value_parser = parse_rate)]
    prepare_rate: Option<Rate>,
    /// The allowlist file naming the tools to publish (TOML or JSON) [default:
    /// $XDG_CONFIG_HOME/order-cancel/allowlist.toml, where the shipped list, naming all
    /// three tools, is copied on first start].
    #[arg(long, env = "GUARD_ALLOWLIST")]
    allowlist: Option<PathBuf>,
    /// Have the audit log's checkpoints cosigned by the witnesses this C2SP tlog-policy
    /// names (`log VKEY` for --log-key's key, `witness NAME VKEY URL`, and a quorum): every
    /// --checkpoint-every seconds while the log grows, and once more on exit. A witness that
    /// is down never holds up a call; the log says so.
    #[arg(long, env = "ORDER_CANCEL_WITNESS_POLICY", value_name = "FILE")]
    witness_policy: Option<PathBuf>,
    /// The key that signs the audit log's checkpoints (the first line of `guard-audit keygen
    /// NAME --for log`, mode 0600), kept apart from the database [default:
    /// $XDG_CONFIG_HOME/order-cancel/audit/log.key].
    #[arg(long, env = "ORDER_CANCEL_LOG_KEY", value_name = "FILE")]
    log_key: Option<PathBuf>,
    /// How often, with --witness-policy, a grown log is checkpointed and sent to the
    /// witnesses.
    #[arg(long, value_name = "SECONDS", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    checkpoint_every: u64,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Prepare, confirm, confirm again, and the refusals, in a fresh SQLite database under
    /// .order-cancel/demo; prints what the model saw and what the database holds.
    Demo,
    /// As the schema owner (`--pg` is the owner's URL): create the schema, the tables, the
    /// demo orders, the server's role with its grants, and the lock function (owned by the
    /// NOLOGIN role order_cancel_definer).
    SetupPostgres {
        /// Also revoke TEMPORARY on the database from PUBLIC and from order_cancel_app, so the
        /// server's role cannot create temporary tables or views (roles that need them must
        /// then be granted TEMPORARY by name). Needs a superuser or the database's owner.
        #[arg(long)]
        revoke_temp: bool,
    },
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
        Some(Command::SetupPostgres { revoke_temp }) => setup(&cli, revoke_temp).await,
        None => serve(&cli).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("order-cancel: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn setup(cli: &Cli, revoke_temp: bool) -> Result<(), String> {
    let url = cli
        .pg
        .as_deref()
        .ok_or("setup-postgres needs --pg (or ORDER_CANCEL_PG): the schema owner's URL")?;
    stores::setup_postgres(url, &cli.pg_schema, schema::DEMO_ORDERS)
        .await
        .map_err(|e| e.to_string())?;
    if revoke_temp {
        stores::revoke_temp(url).await.map_err(|e| e.to_string())?;
        eprintln!(
            "TEMPORARY on the database is revoked from PUBLIC and {}; grant it by name to roles that need temporary tables",
            schema::APP_ROLE
        );
    } else {
        eprintln!(
            "{} may still create temporary tables (PostgreSQL grants TEMPORARY to PUBLIC); run setup-postgres --revoke-temp to take that away",
            schema::APP_ROLE
        );
    }
    eprintln!(
        "schema {} is ready; serve with --pg postgres://{}@HOST/DB --pg-schema {}",
        cli.pg_schema,
        schema::APP_ROLE,
        cli.pg_schema
    );
    Ok(())
}

/// The allowlist shipped with order-cancel: all three tools.
const SHIPPED_ALLOWLIST: &str = include_str!("../allowlist.toml");

/// The allowlist as named, else the user's, copied from the shipped one on first start.
fn allowlist(cli: &Cli) -> Result<PathBuf, String> {
    if let Some(allowlist) = &cli.allowlist {
        return Ok(allowlist.clone());
    }
    let allowlist = UserDirs::new("order-cancel")?
        .config()
        .join("allowlist.toml");
    if install_default(&allowlist, SHIPPED_ALLOWLIST)? {
        tracing::info!(allowlist = %allowlist.display(), "installed the shipped allowlist");
    }
    Ok(allowlist)
}

async fn serve(cli: &Cli) -> Result<(), String> {
    let store: Arc<dyn OperationStore> = match &cli.pg {
        Some(url) => Arc::new(
            stores::connect_postgres(url, &cli.pg_schema, cli.pg_connections)
                .map_err(|e| e.to_string())?,
        ),
        None => {
            let db = match &cli.db {
                Some(db) => db.clone(),
                None => UserDirs::new("order-cancel")?.data().join("orders.db"),
            };
            Arc::new(
                stores::open_sqlite(&db, schema::DEMO_ORDERS)
                    .await
                    .map_err(|e| format!("cannot open {}: {e}", db.display()))?,
            )
        }
    };
    let identity = EnvIdentity::from_env()?;
    let mut operations = Operations::new(store, identity);
    if let Some(ttl) = cli.intent_ttl {
        operations = operations.intent_ttl(PREPARE_TOOL, ttl);
    }
    if let Some(rate) = cli.prepare_rate {
        operations = operations.rate_limit(PREPARE_TOOL, rate);
    }
    if let Some(wait) = cli.defer_confirm {
        operations = operations.defer_confirm(OrderCancel::CONFIRM_TOOL, wait);
    }
    let guard = Guard::from_env()
        .map_err(|e| e.to_string())?
        .with_exposure(Exposure::allowlist(allowlist(cli)?))
        .with_operations(operations);
    let anchoring = anchor(cli, &guard)?.map(|anchor| {
        let task = anchor.spawn(Duration::from_secs(cli.checkpoint_every));
        (anchor, task)
    });
    let server = OrderCancel::new(guard);
    // Confirms deferred before (by this process or another on the same store) run when
    // due, even if this start defers none.
    let _runner = server.run_deferred(RUN_EVERY);
    let exposure = server.guard().exposure().cloned();
    let running = server
        .clone()
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("the MCP session did not start: {e}"))?;
    if let Some(exposure) = exposure {
        exposure.watch(Some(running.peer().clone()), RELOAD_POLL);
    }
    let served = running
        .waiting()
        .await
        .map(drop)
        .map_err(|e| format!("the MCP session ended abnormally: {e}"));
    if let Some((anchor, task)) = anchoring {
        task.abort();
        // What the last calls recorded is witnessed too: written to the log first (the
        // guard would write it when dropped, after this checkpoint).
        server.guard().audit_settled().await;
        if let Err(error) = anchor.checkpoint().await {
            tracing::warn!(%error, "cannot checkpoint the audit log on exit");
        }
    }
    served
}

/// With --witness-policy, what has the audit log's checkpoints witnessed: the log key from
/// --log-key or the user's configuration directory, never from beside the database.
fn anchor(cli: &Cli, guard: &Guard) -> Result<Option<Anchor>, String> {
    let Some(policy) = &cli.witness_policy else {
        return Ok(None);
    };
    let key = match &cli.log_key {
        Some(key) => key.clone(),
        None => UserDirs::new("order-cancel")?
            .config()
            .join("audit")
            .join("log.key"),
    };
    let log = guard
        .audit_log()
        .ok_or("--witness-policy needs the operation store's audit log")?
        .clone();
    let anchor =
        Anchor::from_files(log, &key, policy).map_err(|e| format!("--witness-policy: {e}"))?;
    for witness in anchor.status() {
        tracing::info!(witness = %witness.witness, url = %witness.url, every_secs = cli.checkpoint_every, "the audit log's checkpoints go to witness {}", witness.witness);
    }
    Ok(Some(anchor))
}

/// `90s`, `10m`, `2h`: a whole number above zero and a unit, at most [`MAX_TTL`].
fn parse_ttl(value: &str) -> Result<Duration, String> {
    parse_duration(value, MAX_TTL).ok_or_else(|| {
        format!(
            "`{value}` is not an intent lifetime (--intent-ttl, ORDER_CANCEL_INTENT_TTL); write a whole number above zero and s, m or h (for example 10m), at most 24h"
        )
    })
}

/// `90s`, `2m`, `1h`: a whole number above zero and a unit, at most [`MAX_DEFER`].
fn parse_defer(value: &str) -> Result<Duration, String> {
    parse_duration(value, MAX_DEFER).ok_or_else(|| {
        format!(
            "`{value}` is not a wait (--defer-confirm, ORDER_CANCEL_DEFER_CONFIRM); write a whole number above zero and s, m or h (for example 2m), at most 24h, or leave it out to file confirmed requests at once"
        )
    })
}

/// A whole number above zero and s, m or h, at most `max`.
fn parse_duration(value: &str, max: Duration) -> Option<Duration> {
    let value = value.trim();
    let split = value.find(|c: char| !c.is_ascii_digit())?;
    let (digits, unit) = value.split_at(split);
    let n: u64 = digits.parse().ok().filter(|n| *n > 0)?;
    let secs = match unit {
        "s" => Some(n),
        "m" => n.checked_mul(60),
        "h" => n.checked_mul(3600),
        _ => None,
    }?;
    Some(Duration::from_secs(secs)).filter(|wait| *wait <= max)
}

/// `5/min`, as `#[prepare(rate = …)]` spells it.
fn parse_rate(value: &str) -> Result<Rate, String> {
    value
        .trim()
        .parse()
        .map_err(|_: rmcp_guard::ops::BadRate| {
            format!(
                "`{value}` is not a prepare rate (--prepare-rate, ORDER_CANCEL_PREPARE_RATE); write CALLS/UNIT with CALLS a whole number above zero and UNIT one of s, min, h, day (for example 5/min)"
            )
        })
}
