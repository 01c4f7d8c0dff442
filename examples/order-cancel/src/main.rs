//! order-cancel: `order-cancel` serves stdio on the embedded SQLite store;
//! `order-cancel --pg URL --pg-schema S` serves it on PostgreSQL as the server's restricted
//! role; `order-cancel setup-postgres` creates that schema and role; `order-cancel demo`
//! plays prepare → confirm → repeated confirm and the refusals, and prints the story.

use std::{path::PathBuf, process::ExitCode, sync::Arc};

use clap::{Parser, Subcommand};
use guard_runtime::{
    EnvIdentity, Guard,
    ops::{OperationStore, Operations},
};
use order_cancel::{OrderCancel, demo, schema, stores};
use rmcp::ServiceExt;

#[derive(Parser)]
#[command(
    name = "order-cancel",
    about = "An MCP server that prepares and confirms order cancellation requests"
)]
struct Cli {
    /// The SQLite database (created and seeded with the demo orders on first start).
    #[arg(
        long,
        env = "ORDER_CANCEL_DB",
        default_value = ".order-cancel/orders.db"
    )]
    db: PathBuf,
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
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Prepare, confirm, confirm again, and the refusals, in a fresh SQLite database under
    /// .order-cancel/demo; prints what the model saw and what the database holds.
    Demo,
    /// As the schema owner (`--pg` is the owner's URL): create the schema, the tables, the
    /// demo orders, and the server's role with its grants.
    SetupPostgres,
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
        Some(Command::SetupPostgres) => setup(&cli).await,
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

async fn setup(cli: &Cli) -> Result<(), String> {
    let url = cli
        .pg
        .as_deref()
        .ok_or("setup-postgres needs --pg (or ORDER_CANCEL_PG): the schema owner's URL")?;
    stores::setup_postgres(url, &cli.pg_schema, schema::DEMO_ORDERS)
        .await
        .map_err(|e| e.to_string())?;
    eprintln!(
        "schema {} is ready; serve with --pg postgres://{}@HOST/DB --pg-schema {}",
        cli.pg_schema,
        schema::APP_ROLE,
        cli.pg_schema
    );
    Ok(())
}

async fn serve(cli: &Cli) -> Result<(), String> {
    let store: Arc<dyn OperationStore> = match &cli.pg {
        Some(url) => Arc::new(
            stores::connect_postgres(url, &cli.pg_schema, cli.pg_connections)
                .map_err(|e| e.to_string())?,
        ),
        None => Arc::new(
            stores::open_sqlite(&cli.db, schema::DEMO_ORDERS)
                .await
                .map_err(|e| format!("cannot open {}: {e}", cli.db.display()))?,
        ),
    };
    let identity = EnvIdentity::from_env()?;
    let guard = Guard::from_env()
        .map_err(|e| e.to_string())?
        .with_operations(Operations::new(store, identity));
    let running = OrderCancel::new(guard)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("the MCP session did not start: {e}"))?;
    running
        .waiting()
        .await
        .map_err(|e| format!("the MCP session ended abnormally: {e}"))?;
    Ok(())
}
