//! Read-only mode and read handles. In read-only mode only `#[read_only]` tools exist; a
//! read tool's database handle is read-only in the engine, so even a careless read tool
//! that runs whatever SQL it is given cannot write; and no write handle is handed out.

use crate::support;

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use crate::support::{stdio::StdioServer, *};
use rmcp::{
    RoleClient, ServerHandler, ServiceExt,
    handler::server::wrapper::Parameters,
    model::{CallToolResult, ErrorCode, ServerCapabilities, ServerConfig},
    service::{RunningService, ServiceError},
    tool, tool_handler,
};
use rmcp_guard::tool_router;
use rmcp_guard::{
    Exposure, Guard, Guarded, ToolError,
    db::{ReadDb, WriteDb},
    exposed, read_only,
};
use rmcp_guard_test::testing::ScriptedHuman;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

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
        human.will(rmcp_guard_test::testing::Answer::Accept(json!({
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

    /// Claims to only read, and opens a write handle in its body, where no parameter type
    /// shows it.
    #[read_only]
    #[tool]
    async fn writes_in_its_body(
        &self,
        Parameters(args): Parameters<Sql>,
    ) -> Result<String, ToolError> {
        WriteDb::open(&self.guard)?.execute_batch(&args.sql)?;
        Ok("done".into())
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

// A router already built (not its function) is filtered again on every call; both forms
// must enforce the same exposure.
#[tool_handler(router = exposed(self, Self::tool_router()))]
impl ServerHandler for Reports {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

const REPORT_TOOLS: &str =
    "tools = [\"run_report\", \"count_orders\", \"claims_to_read\", \"writes_in_its_body\"]\n";

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
        let guard = Guard::ephemeral().unwrap().with_sqlite(&world.db);
        let db = WriteDb::open(&guard).expect("write handle");
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
    assert_eq!(error.code(), rmcp_guard::Code::Unavailable);
    assert!(
        error.message().contains("does not exist"),
        "{}",
        error.message()
    );
    assert!(!missing.exists());
    // A path with URI metacharacters is a path, not a query string.
    let odd = dir.path().join("odd?mode=rwc#x.db");
    assert_eq!(
        ReadDb::open(&odd).unwrap_err().code(),
        rmcp_guard::Code::Unavailable
    );
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
        [
            "claims_to_read",
            "count_orders",
            "run_report",
            "writes_in_its_body"
        ]
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

#[tokio::test]
async fn a_write_handle_opened_in_a_tool_body_is_refused_in_read_only_mode() {
    let world = World::new();
    let before = snapshot(&world);
    let digest = sha256_of(&world.db);
    let client = connect_reports(&world, &world.db, &world.db, true).await;
    for sql in WRITES {
        let result = call(&client, "writes_in_its_body", json!({"sql": sql})).await;
        assert!(is_error(&result), "{sql}: {}", text(&result));
        assert_eq!(
            code(&result).as_deref(),
            Some("READ_ONLY"),
            "{sql}: {}",
            text(&result)
        );
        let message = text(&result);
        assert!(message.contains("read-only mode"), "{message}");
        assert!(message.contains("nothing was changed"), "{message}");
        assert!(
            message.contains("restart the server without read-only mode"),
            "{message}"
        );
    }
    assert_eq!(snapshot(&world), before);
    assert_eq!(
        sha256_of(&world.db),
        digest,
        "not one byte of the file changed"
    );

    // Outside read-only mode the same body gets its handle and writes.
    let world = World::new();
    let client = connect_reports(&world, &world.db, &world.db, false).await;
    let result = call(
        &client,
        "writes_in_its_body",
        json!({"sql": "DELETE FROM orders"}),
    )
    .await;
    assert!(!is_error(&result), "{}", text(&result));
    assert_eq!(world.rows("orders"), Some(0));
}

#[test]
fn write_db_open_refuses_in_read_only_mode_before_touching_any_file() {
    let dir = tempfile::tempdir().unwrap();
    let list = allowlist(dir.path(), REPORT_TOOLS);
    let read_only = |db: &Path| {
        Guard::ephemeral()
            .unwrap()
            .with_exposure(Exposure::allowlist(&list).read_only(true))
            .with_sqlite(db)
    };

    // An existing database: refused, and its bytes stay as they were.
    let world = World::new();
    let digest = sha256_of(&world.db);
    let error = WriteDb::open(&read_only(&world.db)).expect_err("read-only mode refuses");
    assert_eq!(error.code(), rmcp_guard::Code::ReadOnly);
    assert!(
        error
            .message()
            .contains("restart the server without read-only mode"),
        "{}",
        error.message()
    );
    assert!(error.message().contains("`ReadDb`"), "{}", error.message());
    assert_eq!(sha256_of(&world.db), digest);

    // A missing one: the refusal comes first, and nothing is created.
    let missing = dir.path().join("nowhere").join("gone.db");
    let error = WriteDb::open(&read_only(&missing)).expect_err("read-only mode refuses");
    assert_eq!(error.code(), rmcp_guard::Code::ReadOnly);
    assert!(!missing.exists() && !missing.parent().unwrap().exists());

    // Outside read-only mode a write handle never creates a missing file either.
    let writable = Guard::ephemeral().unwrap().with_sqlite(&missing);
    let error = WriteDb::open(&writable).expect_err("a missing file does not open");
    assert_eq!(error.code(), rmcp_guard::Code::Unavailable);
    assert!(
        error.message().contains("does not exist"),
        "{}",
        error.message()
    );
    assert!(!missing.exists() && !missing.parent().unwrap().exists());

    // And a guard with no database says so.
    let error = WriteDb::open(&Guard::ephemeral().unwrap()).expect_err("no database");
    assert_eq!(error.code(), rmcp_guard::Code::Unavailable);
    assert!(
        error.message().contains("Guard::with_sqlite"),
        "{}",
        error.message()
    );
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
    drop(safe_ops::db::open(&dir.path().join("ops.db")).expect("seeded database"));
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

// ---------------------------------------------------------------------------------------
// The binary in read-only mode never writes its database
// ---------------------------------------------------------------------------------------

fn sha256_of(path: &Path) -> String {
    use sha2::{Digest, Sha256};
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The names in `dir` that start with `ops.db`: the database and any journal, WAL or
/// shared-memory file SQLite made next to it.
fn database_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("ops.db"))
        .collect();
    names.sort();
    names
}

/// SQLite's file format version bytes (18 and 19 of the header): 1 for a rollback journal,
/// 2 for WAL.
fn journal_format(db: &Path) -> (u8, u8) {
    let header = std::fs::read(db).unwrap();
    (header[18], header[19])
}

/// A seeded safe-ops database at `dir/ops.db` in rollback-journal mode (`DELETE`).
fn rollback_journal_database(dir: &Path) -> PathBuf {
    let db = dir.join("ops.db");
    let conn = safe_ops::db::open(&db).expect("seeded database");
    let mode: String = conn
        .query_row("PRAGMA journal_mode = DELETE", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "delete");
    drop(conn);
    assert_eq!(journal_format(&db), (1, 1), "a rollback-journal database");
    assert_eq!(database_files(dir), ["ops.db"]);
    db
}

/// Every call a model can make of safe-ops in read-only mode: the one published tool, more
/// than once, and each hidden tool (refused as unknown).
fn call_every_tool(server: &mut StdioServer, label: &str, after_each: &dyn Fn(&str)) {
    assert_eq!(server.tool_names(), ["list_tables"], "{label}");
    after_each("tools/list");
    for _ in 0..2 {
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
        after_each("list_tables");
    }
    for (tool, args) in [
        ("delete_file", json!({"path": "old.log"})),
        ("drop_table", json!({"table": "orders"})),
        ("deploy", json!({"service": "billing"})),
    ] {
        let refused = server.call_error(tool, args);
        assert_eq!(refused["code"], -32602, "{label}: {tool}");
        after_each(tool);
    }
}

#[test]
fn the_binary_in_read_only_mode_leaves_a_rollback_journal_database_byte_for_byte() {
    let runs: [Run; 2] = [
        ("--read-only", &["--read-only"], &[]),
        ("GUARD_READ_ONLY=1", &[], &[("GUARD_READ_ONLY", "1")]),
    ];
    for (label, flags, env) in runs {
        let dir = tempfile::tempdir().unwrap();
        let db = rollback_journal_database(dir.path());
        let digest = sha256_of(&db);
        let list = allowlist(dir.path(), ALL_TOOLS);
        let mut args = vec!["--allowlist", list.to_str().unwrap()];
        args.extend_from_slice(flags);

        let mut server = StdioServer::start_in(dir.path(), &args, env);
        let unchanged = |when: &str| {
            assert_eq!(
                sha256_of(&db),
                digest,
                "{label}: the file changed by {when}"
            );
            assert_eq!(
                database_files(dir.path()),
                ["ops.db"],
                "{label}: a journal, WAL or shared-memory file appeared by {when}"
            );
        };
        unchanged("startup");
        call_every_tool(&mut server, label, &unchanged);
        let log = server.stop();
        unchanged("the end");
        assert_eq!(
            journal_format(&db),
            (1, 1),
            "{label}: still a rollback journal"
        );
        assert!(log.contains("safe-ops ready"), "{label}: {log}");
    }
}

#[test]
fn without_read_only_mode_the_same_start_does_change_the_file() {
    // The control for the test above: a normal start converts the database to WAL, so the
    // comparison there would see a write.
    let dir = tempfile::tempdir().unwrap();
    let db = rollback_journal_database(dir.path());
    let digest = sha256_of(&db);
    let list = allowlist(dir.path(), ALL_TOOLS);
    let server = StdioServer::start_in(dir.path(), &["--allowlist", list.to_str().unwrap()], &[]);
    server.stop();
    assert_eq!(
        journal_format(&db),
        (2, 2),
        "a normal start switches to WAL"
    );
    assert_ne!(sha256_of(&db), digest);
}

/// safe-ops started with `root`, `db`, the allowlist `list` and `flags` (GUARD_* cleared, then
/// `env` set) and no client: it runs until it exits, which a refused start does at once.
fn run_to_exit(
    root: &Path,
    db: &Path,
    list: &Path,
    flags: &[&str],
    env: &[(&str, &str)],
) -> std::process::Output {
    std::process::Command::new(support::stdio::safe_ops_bin())
        .arg("--root")
        .arg(root)
        .arg("--db")
        .arg(db)
        .arg("--allowlist")
        .arg(list)
        .args(flags)
        .env_remove("GUARD_READ_ONLY")
        .env_remove("GUARD_ALLOWLIST")
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("safe-ops runs")
}

#[test]
fn the_binary_in_read_only_mode_refuses_a_missing_database_and_creates_nothing() {
    let runs: [Run; 2] = [
        ("--read-only", &["--read-only"], &[]),
        ("GUARD_READ_ONLY=1", &[], &[("GUARD_READ_ONLY", "1")]),
    ];
    for (label, flags, env) in runs {
        let dir = tempfile::tempdir().unwrap();
        let list = allowlist(dir.path(), ALL_TOOLS);
        let db = dir.path().join("data").join("ops.db");
        let root = dir.path().join("files");
        let output = run_to_exit(&root, &db, &list, flags, env);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !output.status.success(),
            "{label}: it must not start\n{stderr}"
        );
        assert!(
            stderr.contains(&format!(
                "the database {} does not exist, and read-only mode never creates one",
                db.display()
            )),
            "{label}: the message names the file\n{stderr}"
        );
        assert!(
            stderr.contains("Start safe-ops once without --read-only"),
            "{label}: the message says how to create it\n{stderr}"
        );
        assert!(output.stdout.is_empty(), "{label}: nothing was served");
        assert!(!db.exists(), "{label}: no database file was created");
        assert!(!db.parent().unwrap().exists(), "{label}: nor its directory");
        assert!(!root.exists(), "{label}: nor the sandbox");
    }
}

#[test]
fn the_binary_in_read_only_mode_refuses_a_missing_sandbox_root_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let list = allowlist(dir.path(), ALL_TOOLS);
    let db = rollback_journal_database(dir.path());
    let before = sha256_of(&db);
    let root = dir.path().join("missing").join("files");
    let output = run_to_exit(&root, &db, &list, &["--read-only"], &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "it must not start\n{stderr}");
    assert!(
        stderr.contains("read-only mode never creates one"),
        "the message says why\n{stderr}"
    );
    assert!(output.stdout.is_empty(), "nothing was served");
    assert!(!root.parent().unwrap().exists(), "no directory was created");
    assert_eq!(sha256_of(&db), before, "the database is untouched");
}

#[test]
fn the_binary_in_read_only_mode_leaves_a_wal_database_file_unchanged() {
    // The database a normal start leaves behind is in WAL mode. A reader of a WAL database
    // needs SQLite's shared-memory index, so `-shm` (and an empty `-wal`) may appear next to
    // it; the database file itself is not written and no WAL content is added.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ops.db");
    drop(safe_ops::db::open(&db).expect("seeded database"));
    assert_eq!(journal_format(&db), (2, 2), "a WAL database");
    let digest = sha256_of(&db);
    let list = allowlist(dir.path(), ALL_TOOLS);
    let args = ["--allowlist", list.to_str().unwrap(), "--read-only"];
    let mut server = StdioServer::start_in(dir.path(), &args, &[]);
    let wal = dir.path().join("ops.db-wal");
    let unchanged = |when: &str| {
        assert_eq!(sha256_of(&db), digest, "the file changed by {when}");
        let wal_len = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
        assert_eq!(wal_len, 0, "WAL content was written by {when}");
    };
    unchanged("startup");
    call_every_tool(&mut server, "WAL", &unchanged);
    server.stop();
    unchanged("the end");
    assert_eq!(journal_format(&db), (2, 2));
}

/// A rollback-journal database at `dir/ops.db` as a writer leaves it when it stops in the
/// middle of a transaction: changed pages in the file and a hot journal holding the old ones.
fn database_with_hot_journal(dir: &Path) -> PathBuf {
    let live = dir.join("live.db");
    let conn = safe_ops::db::open(&live).expect("seeded database");
    conn.query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(()))
        .unwrap();
    conn.execute_batch("PRAGMA cache_size = 1; BEGIN; UPDATE orders SET status = 'cut off';")
        .unwrap();
    for _ in 0..2000 {
        conn.execute(
            "INSERT INTO customers (name, email) VALUES (?1, 'x@example.com')",
            ["x".repeat(200)],
        )
        .unwrap();
    }
    // The transaction is open and has spilled to the file: copy both files as they are now.
    let db = dir.join("ops.db");
    std::fs::copy(&live, &db).unwrap();
    std::fs::copy(dir.join("live.db-journal"), dir.join("ops.db-journal")).unwrap();
    conn.execute_batch("ROLLBACK").unwrap();
    drop(conn);
    db
}

#[test]
fn the_binary_in_read_only_mode_does_not_roll_back_a_hot_journal() {
    let dir = tempfile::tempdir().unwrap();
    let db = database_with_hot_journal(dir.path());
    let journal = dir.path().join("ops.db-journal");
    let (db_digest, journal_digest) = (sha256_of(&db), sha256_of(&journal));
    let list = allowlist(dir.path(), ALL_TOOLS);
    let output = run_to_exit(&dir.path().join("files"), &db, &list, &["--read-only"], &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "it must not start\n{stderr}");
    assert!(
        stderr.contains(&format!(
            "the database {} has a write that was cut off mid-transaction",
            db.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("Start safe-ops once without --read-only"),
        "{stderr}"
    );
    assert_eq!(sha256_of(&db), db_digest, "the file was not rolled back");
    assert_eq!(
        sha256_of(&journal),
        journal_digest,
        "nor its journal touched"
    );

    // The control: the journal is hot, and opening the file for writing rolls it back.
    drop(safe_ops::db::open(&db).expect("a writer recovers the database"));
    assert_ne!(sha256_of(&db), db_digest);
    assert!(!journal.exists());
    assert_eq!(orders_in(&db), Some(4));
    let conn =
        rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let cut_off: i64 = conn
        .query_row(
            "SELECT count(*) FROM orders WHERE status = 'cut off'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(cut_off, 0, "the unfinished write was undone");
}
