//! Read-only mode and read handles. In read-only mode only `#[read_only]` tools exist; a
//! read tool's database handle is read-only in the engine, so even a careless read tool
//! that runs whatever SQL it is given cannot write; and no write handle is handed out.

#[path = "support/mod.rs"]
mod support;

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use guard_runtime::{
    Exposure, Guard, Guarded, ToolError,
    db::{ReadDb, WriteDb},
    exposed, read_only,
    testing::ScriptedHuman,
};
use rmcp::{
    RoleClient, ServerHandler, ServiceExt,
    handler::server::wrapper::Parameters,
    model::{CallToolResult, ErrorCode, ServerCapabilities, ServerConfig},
    service::{RunningService, ServiceError},
    tool, tool_handler, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use support::{stdio::StdioServer, *};

const ALL_TOOLS: &str = "tools = [\"delete_file\", \"drop_table\", \"deploy\", \"list_tables\"]\n";

fn allowlist(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("allowlist.toml");
    std::fs::write(&path, text).unwrap();
    path
}

// ---------------------------------------------------------------------------------------
// safe-ops in read-only mode
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn read_only_mode_publishes_only_list_tables() {
    for era in [PUSH, MRTR] {
        let world = World::new();
        let list = allowlist(&world.base, ALL_TOOLS);
        let guard = Guard::ephemeral()
            .unwrap()
            .with_exposure(Exposure::allowlist(&list).read_only(true));
        let human = ScriptedHuman::new(era.clone());
        // Had anyone been asked, this answer would have let every effect run.
        human.will(guard_runtime::testing::Answer::Accept(json!({
            "confirm": true, "typed_name": "orders", "approver": "ada",
            "approval_level": "urgent", "rollback_plan": "redeploy v41 from the registry"
        })));
        let client = connect(world.server_with(guard), human.clone()).await;
        assert_eq!(tool_names(&client).await, ["list_tables"], "{era:?}");

        let unknown = call_error(&client, "no_such_tool", json!({})).await;
        assert_eq!(unknown.code, ErrorCode::INVALID_PARAMS);
        for (tool, args) in [
            ("delete_file", json!({"path": "old.log"})),
            ("drop_table", json!({"table": "orders"})),
            ("deploy", json!({"service": "billing"})),
        ] {
            let refused = call_error(&client, tool, args).await;
            assert_eq!(
                (&refused.code, &refused.message, &refused.data),
                (&unknown.code, &unknown.message, &unknown.data),
                "{tool} answers like an unknown tool in read-only mode"
            );
        }
        let listed = call(&client, "list_tables", json!({})).await;
        assert!(!is_error(&listed), "{}", text(&listed));
        assert!(
            text(&listed).contains("orders: 4 rows"),
            "{}",
            text(&listed)
        );

        assert!(human.shown().is_empty());
        assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
        assert_eq!(world.rows("orders"), Some(4));
        assert!(world.deployments().is_empty());
    }
}

#[tokio::test]
async fn read_only_mode_is_off_unless_asked() {
    let world = World::new();
    let list = allowlist(&world.base, ALL_TOOLS);
    let exposure = Exposure::allowlist(&list);
    assert!(!exposure.is_read_only());
    let guard = Guard::ephemeral().unwrap().with_exposure(exposure);
    let client = connect(world.server_with(guard), ScriptedHuman::new(PUSH)).await;
    assert_eq!(
        tool_names(&client).await,
        ["delete_file", "deploy", "drop_table", "list_tables"]
    );
}

// ---------------------------------------------------------------------------------------
// A careless read tool, and a tool that lies about reading
// ---------------------------------------------------------------------------------------

#[derive(Clone)]
struct Reports {
    guard: Arc<Guard>,
    /// The file `count_orders` opens by hand.
    db_path: PathBuf,
}

impl Guarded for Reports {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[derive(Deserialize, JsonSchema)]
struct Sql {
    sql: String,
}

#[tool_router]
impl Reports {
    /// Run a report query. Deliberately careless: it runs whatever SQL it is given.
    #[read_only]
    #[tool]
    async fn run_report(
        &self,
        db: ReadDb,
        Parameters(args): Parameters<Sql>,
    ) -> Result<String, ToolError> {
        db.execute_batch(&args.sql)?;
        Ok("report done".into())
    }

    /// Count the orders, opening the database by hand.
    #[read_only]
    #[tool]
    async fn count_orders(&self) -> Result<String, ToolError> {
        let db = ReadDb::open(&self.db_path)?;
        let count: i64 = db.query_row("SELECT count(*) FROM orders", [], |r| r.get(0))?;
        Ok(format!("{count} orders"))
    }

    /// Claims to only read (a hand-set hint, no `#[read_only]`) but takes a write handle.
    #[tool(annotations(read_only_hint = true))]
    async fn claims_to_read(
        &self,
        db: WriteDb,
        Parameters(args): Parameters<Sql>,
    ) -> Result<String, ToolError> {
        db.execute_batch(&args.sql)?;
        Ok("done".into())
    }
}

#[tool_handler(router = exposed(self, Self::tool_router()))]
impl ServerHandler for Reports {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

const REPORT_TOOLS: &str = "tools = [\"run_report\", \"count_orders\", \"claims_to_read\"]\n";

/// Serves [`Reports`] on `db` (the database its extractors open) and `by_hand` (the file
/// `count_orders` opens).
async fn connect_reports(
    world: &World,
    db: &Path,
    by_hand: &Path,
    read_only: bool,
) -> RunningService<RoleClient, ScriptedHuman> {
    let list = allowlist(&world.base, REPORT_TOOLS);
    let server = Reports {
        guard: Arc::new(
            Guard::ephemeral()
                .unwrap()
                .with_exposure(Exposure::allowlist(&list).read_only(read_only))
                .with_sqlite(db),
        ),
        db_path: by_hand.to_path_buf(),
    };
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    ScriptedHuman::new(PUSH)
        .connect(client_io)
        .await
        .expect("client connects")
}

/// Writes a careless read tool might be handed. Each one really writes through a write
/// handle (checked below), so a refusal is the read handle's doing.
const WRITES: &[&str] = &[
    "DROP TABLE orders",
    "SELECT 1; DELETE FROM orders",
    "DELETE FROM orders",
    "WITH doomed AS (SELECT id FROM orders) DELETE FROM orders WHERE id IN (SELECT id FROM doomed)",
    "/* tidy up */ dElEtE\n  FrOm orders",
    "UPDATE orders SET status = 'cancelled'",
    "INSERT INTO orders (customer_id, total_cents, status) VALUES (1, 1, 'fake')",
    "CREATE TABLE audit_wiped (x)",
    "PRAGMA query_only = OFF; DELETE FROM orders",
    "BEGIN IMMEDIATE; DELETE FROM orders; COMMIT",
];

/// What the database looks like: every table and the orders.
fn snapshot(world: &World) -> (Vec<String>, Vec<(i64, String)>) {
    let conn = rusqlite::Connection::open_with_flags(
        &world.db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let tables = world.tables();
    if !tables.iter().any(|t| t == "orders") {
        return (tables, Vec::new());
    }
    let mut stmt = conn
        .prepare("SELECT id, status FROM orders ORDER BY id")
        .unwrap();
    let orders = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    (tables, orders)
}

#[test]
fn every_listed_statement_really_writes_through_a_write_handle() {
    for sql in WRITES {
        let world = World::new();
        let before = snapshot(&world);
        let db = WriteDb::open(&world.db).expect("write handle");
        db.execute_batch(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        drop(db);
        assert_ne!(snapshot(&world), before, "{sql} must change something");
    }
}

#[tokio::test]
async fn the_engine_refuses_every_write_through_a_read_handle() {
    for read_only_mode in [false, true] {
        let world = World::new();
        let before = snapshot(&world);
        assert_eq!(world.rows("orders"), Some(4));
        let client = connect_reports(&world, &world.db, &world.db, read_only_mode).await;
        for sql in WRITES {
            let result = call(&client, "run_report", json!({"sql": sql})).await;
            assert!(is_error(&result), "{sql}: {}", text(&result));
            assert_eq!(
                code(&result).as_deref(),
                Some("READ_ONLY"),
                "{sql}: {}",
                text(&result)
            );
            assert!(
                text(&result).contains("nothing was changed"),
                "{sql}: {}",
                text(&result)
            );
            assert_eq!(snapshot(&world), before, "{sql} changed the database");
        }
        // Reading through the same tool works.
        let read = call(
            &client,
            "run_report",
            json!({"sql": "SELECT count(*) FROM orders"}),
        )
        .await;
        assert!(!is_error(&read), "{}", text(&read));
        assert_eq!(text(&read), "report done");
        assert_eq!(world.rows("orders"), Some(4));
        assert!(world.tables().contains(&"orders".to_owned()));
    }
}

#[tokio::test]
async fn a_read_handle_never_creates_a_file() {
    let world = World::new();
    let client = connect_reports(&world, &world.db, &world.db, false).await;
    let copy = world.base.join("copy.db");
    let attached = world.base.join("attached.db");
    for sql in [
        format!("VACUUM INTO '{}'", copy.display()),
        format!("ATTACH DATABASE '{}' AS side", attached.display()),
    ] {
        let result = call(&client, "run_report", json!({"sql": sql})).await;
        assert!(is_error(&result), "{sql}: {}", text(&result));
        assert_eq!(code(&result).as_deref(), Some("READ_ONLY"), "{sql}");
    }
    assert!(!copy.exists(), "VACUUM INTO created {}", copy.display());
    assert!(!attached.exists(), "ATTACH created {}", attached.display());
}

#[tokio::test]
async fn a_read_handle_never_creates_a_missing_database() {
    let world = World::new();
    let missing = world.base.join("nowhere").join("gone.db");
    let also_missing = world.base.join("gone-too.db");
    let client = connect_reports(&world, &also_missing, &missing, false).await;

    // Opened by hand in the tool: an isError result with a stable code.
    let result = call(&client, "count_orders", json!({})).await;
    assert!(is_error(&result), "{}", text(&result));
    assert_eq!(
        code(&result).as_deref(),
        Some("UNAVAILABLE"),
        "{}",
        text(&result)
    );
    let message = text(&result);
    assert!(message.contains("does not exist"), "{message}");
    assert!(message.contains("Nothing was changed"), "{message}");
    assert!(!missing.exists(), "the database file is not created");
    assert!(!missing.parent().unwrap().exists(), "nor its directory");

    // Through the `ReadDb` extractor: the same code and sentence, and no file either.
    let reason = match client
        .call_tool(params("run_report", json!({"sql": "SELECT 1"})))
        .await
    {
        Ok(result) => {
            assert!(is_error(&result), "{}", text(&result));
            text(&result)
        }
        Err(ServiceError::McpError(error)) => error.message.to_string(),
        Err(other) => panic!("unexpected failure: {other}"),
    };
    assert!(reason.starts_with("[UNAVAILABLE]"), "{reason}");
    assert!(reason.contains("does not exist"), "{reason}");
    assert!(
        !also_missing.exists(),
        "the extractor does not create it either"
    );
}

#[test]
fn read_db_open_on_a_missing_file_is_unavailable_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.db");
    let error = ReadDb::open(&missing).expect_err("a missing file does not open");
    assert_eq!(error.code(), "UNAVAILABLE");
    assert!(
        error.message().contains("does not exist"),
        "{}",
        error.message()
    );
    assert!(!missing.exists());
    // A path with URI metacharacters is a path, not a query string.
    let odd = dir.path().join("odd?mode=rwc#x.db");
    assert_eq!(ReadDb::open(&odd).unwrap_err().code(), "UNAVAILABLE");
    assert!(!odd.exists());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no file of any name"
    );
}

#[tokio::test]
async fn no_write_handle_is_given_out_in_read_only_mode() {
    // The hand-set hint lets `claims_to_read` through the read-only filter; the write
    // handle itself is what refuses.
    let world = World::new();
    let before = snapshot(&world);
    let client = connect_reports(&world, &world.db, &world.db, true).await;
    assert_eq!(
        tool_names(&client).await,
        ["claims_to_read", "count_orders", "run_report"]
    );
    let refused = client
        .call_tool(params(
            "claims_to_read",
            json!({"sql": "DELETE FROM orders"}),
        ))
        .await;
    let message = match refused {
        Err(ServiceError::McpError(error)) => error.message.to_string(),
        Ok(result) => {
            assert!(is_error(&result), "{}", text(&result));
            text(&result)
        }
        Err(other) => panic!("unexpected failure: {other}"),
    };
    assert!(message.contains("read-only mode"), "{message}");
    assert_eq!(snapshot(&world), before);

    // Outside read-only mode the same tool gets its handle (and writes).
    let world = World::new();
    let client = connect_reports(&world, &world.db, &world.db, false).await;
    let result: CallToolResult = call(
        &client,
        "claims_to_read",
        json!({"sql": "DELETE FROM orders"}),
    )
    .await;
    assert!(!is_error(&result), "{}", text(&result));
    assert_eq!(world.rows("orders"), Some(0));
}

// ---------------------------------------------------------------------------------------
// The binary: --read-only and GUARD_READ_ONLY
// ---------------------------------------------------------------------------------------

/// A label, the command line, and the environment of one run of the binary.
type Run<'a> = (&'a str, &'a [&'a str], &'a [(&'a str, &'a str)]);

fn orders_in(db: &Path) -> Option<i64> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    safe_ops::db::table_rows(&conn, "orders").unwrap()
}

#[test]
fn the_binary_in_read_only_mode_publishes_only_list_tables() {
    let dir = tempfile::tempdir().unwrap();
    let list = allowlist(dir.path(), ALL_TOOLS);
    let list = list.to_str().unwrap();
    let runs: [Run; 3] = [
        ("--read-only", &["--allowlist", list, "--read-only"], &[]),
        (
            "GUARD_READ_ONLY=1",
            &["--allowlist", list],
            &[("GUARD_READ_ONLY", "1")],
        ),
        (
            "GUARD_READ_ONLY=0 with --read-only",
            &["--allowlist", list, "--read-only"],
            &[("GUARD_READ_ONLY", "0")],
        ),
    ];
    for (label, args, env) in runs {
        let mut server = StdioServer::start_in(dir.path(), args, env);
        assert_eq!(server.tool_names(), ["list_tables"], "{label}");
        let unknown = server
            .request(
                "tools/call",
                json!({"name": "no_such_tool", "arguments": {}}),
            )
            .unwrap_err();
        assert_eq!(unknown["code"], -32602, "{label}");
        for (tool, args) in [
            ("delete_file", json!({"path": "old.log"})),
            ("drop_table", json!({"table": "orders"})),
            ("deploy", json!({"service": "billing"})),
        ] {
            let refused = server
                .request("tools/call", json!({"name": tool, "arguments": args}))
                .unwrap_err();
            assert_eq!(refused, unknown, "{label}: {tool}");
        }
        let listed = server
            .request(
                "tools/call",
                json!({"name": "list_tables", "arguments": {}}),
            )
            .expect("list_tables runs");
        assert_ne!(listed["isError"], true, "{label}: {listed}");
        assert!(
            listed["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("orders: 4 rows"),
            "{label}: {listed}"
        );
        drop(server);
        assert_eq!(orders_in(&dir.path().join("ops.db")), Some(4), "{label}");
    }
    // Control: the same allowlist without read-only mode publishes all four.
    let mut server = StdioServer::start_in(dir.path(), &["--allowlist", list], &[]);
    assert_eq!(
        server.tool_names(),
        ["delete_file", "deploy", "drop_table", "list_tables"]
    );
}
