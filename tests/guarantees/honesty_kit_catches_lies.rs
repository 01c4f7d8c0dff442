//! The annotation-honesty kit against real servers: every safe-ops tool (its download links
//! served, so `create_download_link` hands out real ones), order-cancel's
//! confirm and get_operation_result, and small fixture servers whose annotations lie or tell
//! the truth (honesty_kit_catches_lies/fixtures.rs holds one liar and one honest tool for
//! each blind spot the kit closes: request-id deduplication, failed calls that write, a
//! write on every third call, `destructiveHint: false` on a delete or overwrite, a
//! check-then-insert race, state only a custom observer sees, and a read that touches a
//! file). Each case runs on a fresh SQLite file or folder in a temporary directory, through
//! real rmcp clients and servers in process.

mod fixtures;
use crate::support;

use std::{path::PathBuf, sync::Arc};

use crate::support::{MRTR, PUSH, World};
use rmcp::{handler::server::wrapper::Parameters, model::ProtocolVersion, tool};
use rmcp_guard::tool_router;
use rmcp_guard::{
    Guard, Guarded, ToolError,
    db::{ReadDb, WriteDb},
    idempotent, read_only,
};
use rmcp_guard_test::{
    honesty::{
        DirObserver, Fixture, Kit, OutboxObserver, Probe, Report, Snapshot, SqliteObserver, Verdict,
    },
    testing::Answer,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tempfile::TempDir;

// ── safe-ops ───────────────────────────────────────────────────────────────────────────

/// A fresh safe-ops world, observed in full: the database, the whole temporary directory
/// (sandbox files and the file outside the root; the database files are the SQLite
/// observer's), and the outbox.
async fn safe_ops_fixture() -> Fixture<safe_ops::SafeOps> {
    let world = World::new();
    let (server, _) = world.server_with_downloads().await;
    let outbox = OutboxObserver::new(server.guard_config().clone());
    Fixture::new(server)
        // When a deployment happened is not what makes two deployments differ from one.
        .observe(SqliteObserver::new(&world.db).ignore_column("deployments", "deployed_at"))
        .observe(DirObserver::new(&world.base).named("files").skipping([
            "safe-ops.db",
            "safe-ops.db-wal",
            "safe-ops.db-shm",
            "safe-ops.db-journal",
        ]))
        .observe(outbox)
        .keep(world)
}

fn safe_ops_probes() -> Vec<Probe> {
    vec![
        Probe::new("delete_file", json!({"path": "old.log"}))
            .invalid([
                json!({"path": "missing.txt"}),
                json!({"path": "../outside.txt"}),
                json!({"path": "/etc/hostname"}),
                json!({"path": 7}),
                json!({}),
            ])
            .human(Answer::Accept(
                json!({"confirm": true, "reason": "rotated"}),
            )),
        Probe::new("delete_files", json!({"pattern": "*.log"}))
            .invalid([
                json!({"pattern": "*.gz"}),
                json!({"pattern": "../*"}),
                json!({"pattern": "/etc/*"}),
                json!({}),
            ])
            .human(Answer::Accept(json!({"items": ["old.log"]}))),
        Probe::new("drop_table", json!({"table": "orders"}))
            .invalid([
                json!({"table": "no_such_table"}),
                json!({"table": "orders; DROP TABLE customers"}),
                json!({"table": ""}),
                json!({}),
            ])
            // The human retypes whichever table the call names.
            .human_for(|args| {
                Answer::Accept(json!({
                    "typed_name": args.get("table").cloned().unwrap_or(Value::Null),
                    "approver": "ops-lead",
                }))
            }),
        Probe::new("deploy", json!({"service": "billing"}))
            .invalid([
                json!({"service": "billing api"}),
                json!({"service": ""}),
                json!({"service": ["billing"]}),
            ])
            .human(Answer::Accept(json!({
                "approval_level": "standard",
                "rollback_plan": "redeploy the previous release",
            }))),
        Probe::new("list_tables", json!({})).invalid([json!({"table": "orders"})]),
        Probe::new("create_download_link", json!({"path": "report.csv"}))
            .invalid([
                json!({"path": "missing.csv"}),
                json!({"path": "../outside.txt"}),
                json!({"path": "report.csv", "minutes": 0}),
                json!({}),
            ])
            .human(Answer::Accept(json!({"confirm": true}))),
    ]
}

async fn check_safe_ops(era: ProtocolVersion) {
    let kit = Kit::new(safe_ops_fixture).protocol(era);
    let mut reports = Vec::new();
    for probe in safe_ops_probes() {
        let report = kit.check(&probe).await;
        println!("{report}");
        reports.push(report);
    }
    let by_name = |name: &str| {
        reports
            .iter()
            .find(|r| r.tool == name)
            .unwrap_or_else(|| panic!("a report for {name}"))
    };

    let list = by_name("list_tables");
    assert_eq!(list.claims.as_ref().and_then(|c| c.read_only), Some(true));
    assert!(list.passed(), "list_tables is honestly read-only:\n{list}");
    assert!(
        list.cases.iter().all(|c| c.verdict == Verdict::Consistent),
        "every case was judged against readOnlyHint:\n{list}"
    );

    // It hands out a signed link, and declares the capability it is.
    let link = by_name("create_download_link");
    assert!(link.passed(), "create_download_link is honest:\n{link}");
    assert_eq!(
        link.claims
            .as_ref()
            .and_then(|c| c.discloses.as_ref())
            .map(|d| d.class.as_str()),
        Some("capability")
    );
    let disclosed = case(link, "what the valid calls disclosed");
    assert_eq!(disclosed.verdict, Verdict::Consistent, "{link}");
    assert!(
        disclosed
            .remote_records
            .iter()
            .any(|r| r.contains("a signed link") && r.contains("(capability)")),
        "the kit saw the link as a capability:\n{link}"
    );

    for name in ["delete_file", "delete_files", "drop_table", "deploy"] {
        let report = by_name(name);
        assert_eq!(
            report.claims.as_ref().and_then(|c| c.idempotent),
            Some(false),
            "{name} claims no idempotency"
        );
        assert!(
            report.passed(),
            "{name} claims nothing the kit judges, so it is reported, not failed:\n{report}"
        );
        assert_has_every_case(report);
        assert!(
            report.cases.iter().all(|c| c.verdict == Verdict::Reported),
            "{name}: every case is reported, none judged:\n{report}"
        );
    }

    // What the reports say must be what happened.
    let picked = by_name("delete_files").to_string();
    assert!(
        picked.contains("files files/old.log: removed"),
        "the picked file's deletion is recorded:\n{picked}"
    );
    let delete = by_name("delete_file").to_string();
    assert!(
        delete.contains("files files/old.log: removed"),
        "the deletion is recorded:\n{delete}"
    );
    let drop = by_name("drop_table");
    assert!(
        first_case(drop)
            .remote_records
            .iter()
            .any(|r| r.contains("table orders: removed")),
        "the dropped table is recorded:\n{drop}"
    );
    let deploy = by_name("deploy");
    let repeat = case(deploy, "byte-identical repeat");
    assert!(
        repeat.result.starts_with("not idempotent")
            && repeat.result.contains("table deployments")
            && repeat.result.contains("outbox channel deployments"),
        "a second deploy adds a row and a message:\n{deploy}"
    );
    // However the concurrent deploys interleave (guard's re-check may refuse some with
    // STATE_CHANGED), the records hold one row per deploy that went through.
    let at_once = case(deploy, "identical calls at once");
    let went_through = std::iter::once(at_once.first_call.as_str())
        .chain(at_once.second_call.split(" | "))
        .filter(|c| c.starts_with("ok "))
        .count();
    assert!(went_through >= 1, "{deploy}");
    let rows = if went_through == 1 {
        "1 row".to_owned()
    } else {
        format!("{went_through} rows")
    };
    assert!(
        at_once
            .remote_records
            .iter()
            .any(|r| r.starts_with("sqlite safe-ops.db table deployments")
                && r.contains(&format!("→ {rows},"))),
        "{rows} after {went_through} deploys went through:\n{deploy}"
    );
    let retry = case(deploy, "retry after the client dropped");
    assert!(
        retry
            .first_call
            .contains("after the server received the request"),
        "{deploy}"
    );
}

#[tokio::test]
async fn every_safe_ops_tool_is_honest_push() {
    check_safe_ops(PUSH).await;
}

#[tokio::test]
async fn every_safe_ops_tool_is_honest_mrtr() {
    check_safe_ops(MRTR).await;
}

// ── a read tool that writes ──────────────────────────────────────────────────────────────

#[derive(Deserialize, JsonSchema)]
struct DocArgs {
    /// Document id.
    doc: String,
}

/// Documents and, next to them, an access log the "read" writes to.
#[derive(Clone)]
struct Docs {
    db: PathBuf,
    guard: Arc<Guard>,
}

impl Guarded for Docs {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[tool_router(server_handler)]
impl Docs {
    /// Claims to read, and records an access timestamp: the lie the kit must catch.
    #[read_only]
    #[tool(description = "Read a document's title")]
    async fn touch(&self, Parameters(args): Parameters<DocArgs>) -> Result<String, ToolError> {
        let title: String = ReadDb::open(&self.db)?.query_row(
            "SELECT title FROM docs WHERE id = ?1",
            [&args.doc],
            |r| r.get(0),
        )?;
        let db = WriteDb::open(&self.guard)?;
        db.execute(
            "INSERT OR REPLACE INTO access (doc, last_accessed_at) VALUES (?1, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
            [&args.doc],
        )?;
        Ok(title)
    }

    /// Really reads, through the engine-enforced read-only handle.
    #[read_only]
    #[tool(description = "Read a document's title, honestly")]
    async fn title(
        &self,
        db: ReadDb,
        Parameters(args): Parameters<DocArgs>,
    ) -> Result<String, ToolError> {
        Ok(
            db.query_row("SELECT title FROM docs WHERE id = ?1", [&args.doc], |r| {
                r.get(0)
            })?,
        )
    }
}

struct Db {
    _dir: TempDir,
    path: PathBuf,
}

fn database(schema: &str) -> Db {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("app.db");
    rusqlite::Connection::open(&path)
        .and_then(|c| c.execute_batch(schema))
        .expect("fixture database");
    Db { _dir: dir, path }
}

const DOCS: &str = "
CREATE TABLE docs (id TEXT PRIMARY KEY, title TEXT NOT NULL);
CREATE TABLE access (doc TEXT PRIMARY KEY, last_accessed_at TEXT NOT NULL);
INSERT INTO docs VALUES ('42', 'Quarterly report'), ('43', 'Runbook');
";

async fn docs_fixture() -> Fixture<Docs> {
    let db = database(DOCS);
    let server = Docs {
        db: db.path.clone(),
        guard: Arc::new(Guard::ephemeral().expect("guard").with_sqlite(&db.path)),
    };
    Fixture::new(server)
        .observe(SqliteObserver::new(&db.path))
        .keep(db)
}

#[tokio::test]
async fn a_read_only_tool_that_writes_an_access_time_fails() {
    let kit = Kit::new(docs_fixture);
    let report = kit
        .check(&Probe::new("touch", json!({"doc": "42"})).invalid([json!({"doc": "nope"})]))
        .await;
    println!("{report}");
    assert_eq!(report.claims.as_ref().and_then(|c| c.read_only), Some(true));
    assert!(!report.passed(), "the kit must catch the lie:\n{report}");
    let failures = report.failures();
    assert!(
        failures
            .iter()
            .any(|f| f.contains("NOT read-only") && f.contains("sqlite app.db table access")),
        "the failure names the table that changed: {failures:#?}"
    );
    assert!(
        first_case(&report).verdict == Verdict::Contradicts,
        "one call is enough to catch it:\n{report}"
    );
    assert!(
        report.to_string().contains("verdict: FAIL"),
        "the printed report says so:\n{report}"
    );
    // The unknown document fails before the write: that case is consistent.
    let invalid = case(&report, "nonexistent or invalid input 1");
    assert_eq!(invalid.verdict, Verdict::Consistent, "{report}");
    assert!(invalid.first_call.starts_with("isError"), "{report}");
}

#[tokio::test]
async fn an_honest_read_only_tool_passes() {
    for era in [PUSH, MRTR] {
        let kit = Kit::new(docs_fixture).protocol(era);
        let report = kit
            .check(&Probe::new("title", json!({"doc": "42"})).invalid([json!({"doc": "nope"})]))
            .await;
        println!("{report}");
        assert!(report.passed(), "{report}");
        assert_has_every_case(&report);
        assert!(first_case(&report).first_call.contains("Quarterly report"));
    }
}

// ── idempotency: a lie and the truth ─────────────────────────────────────────────────────

#[derive(Deserialize, JsonSchema)]
struct Comment {
    ticket: i64,
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct Status {
    ticket: i64,
    status: String,
}

#[derive(Clone)]
struct Tickets {
    guard: Arc<Guard>,
}

impl Guarded for Tickets {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[tool_router(server_handler)]
impl Tickets {
    /// Claims idempotency and appends a row on every call.
    #[idempotent]
    #[tool(description = "Comment on a ticket")]
    async fn comment(
        &self,
        Parameters(args): Parameters<Comment>,
        db: WriteDb,
    ) -> Result<String, ToolError> {
        db.execute(
            "INSERT INTO comments (ticket, text) VALUES (?1, ?2)",
            (args.ticket, &args.text),
        )?;
        Ok("commented".into())
    }

    /// Sets a status: doing it again, or twice at once, leaves the same ticket.
    #[idempotent]
    #[tool(description = "Set a ticket's status")]
    async fn set_status(
        &self,
        Parameters(args): Parameters<Status>,
        db: WriteDb,
    ) -> Result<String, ToolError> {
        if !["open", "closed"].contains(&args.status.as_str()) {
            return Err(ToolError::invalid_input("status must be open or closed"));
        }
        let changed = db.execute(
            "UPDATE tickets SET status = ?2 WHERE id = ?1",
            (args.ticket, &args.status),
        )?;
        if changed == 0 {
            return Err(ToolError::invalid_input(format!(
                "no ticket {}",
                args.ticket
            )));
        }
        Ok(format!("ticket {} is {}", args.ticket, args.status))
    }
}

const TICKETS: &str = "
CREATE TABLE tickets (id INTEGER PRIMARY KEY, status TEXT NOT NULL);
CREATE TABLE comments (id INTEGER PRIMARY KEY AUTOINCREMENT, ticket INTEGER NOT NULL, text TEXT NOT NULL);
INSERT INTO tickets VALUES (1, 'open'), (2, 'open');
";

async fn tickets_fixture() -> Fixture<Tickets> {
    let db = database(TICKETS);
    let server = Tickets {
        guard: Arc::new(Guard::ephemeral().expect("guard").with_sqlite(&db.path)),
    };
    Fixture::new(server)
        .observe(SqliteObserver::new(&db.path))
        .keep(db)
}

#[tokio::test]
async fn an_idempotent_tool_that_appends_fails() {
    let kit = Kit::new(tickets_fixture);
    let report = kit
        .check(&Probe::new("comment", json!({"ticket": 1, "text": "seen"})))
        .await;
    println!("{report}");
    assert_eq!(
        report.claims.as_ref().and_then(|c| c.idempotent),
        Some(true)
    );
    assert!(!report.passed(), "{report}");
    for name in [
        "byte-identical repeat",
        "retry after the client dropped",
        "identical calls at once",
    ] {
        let case = case(&report, name);
        assert_eq!(case.verdict, Verdict::Contradicts, "{name}:\n{report}");
        assert!(
            case.result.contains("NOT idempotent") && case.result.contains("table comments"),
            "{name} names the table that grew:\n{report}"
        );
    }
    // The dropped call really ran on the server: its answer was lost, not its effect.
    let retry = case(&report, "retry after the client dropped");
    assert!(retry.first_call.contains("answer was lost"), "{report}");
    assert!(
        retry.remote_records[0].contains("table comments"),
        "the lost call still wrote:\n{report}"
    );
}

#[tokio::test]
async fn an_honest_idempotent_tool_passes() {
    let kit = Kit::new(tickets_fixture);
    let report = kit
        .check(
            &Probe::new("set_status", json!({"ticket": 1, "status": "closed"})).invalid([
                json!({"ticket": 99, "status": "closed"}),
                json!({"ticket": 1, "status": "archived"}),
                json!({"ticket": "one", "status": "closed"}),
            ]),
        )
        .await;
    println!("{report}");
    assert_has_every_case(&report);
    assert_honestly_idempotent(&report);
    assert!(
        first_case(&report)
            .remote_records
            .iter()
            .any(|r| r.contains("table tickets")),
        "the first call did change the ticket:\n{report}"
    );
}

// ── observers ────────────────────────────────────────────────────────────────────────────

#[test]
fn observers_see_content_not_just_counts() {
    let db = database(TICKETS);
    let sqlite = SqliteObserver::new(&db.path);
    let snap = |o: &dyn rmcp_guard_test::honesty::Observe| o.snapshot().expect("snapshot");
    let before = snap(&sqlite);
    // Same row count, different content.
    rusqlite::Connection::open(&db.path)
        .and_then(|c| c.execute("UPDATE tickets SET status = 'closed' WHERE id = 2", []))
        .expect("update");
    let after = snap(&sqlite);
    assert_eq!(
        before.describe_diff(&after).len(),
        1,
        "{:?}",
        before.describe_diff(&after)
    );
    assert!(before.describe_diff(&after)[0].starts_with("table tickets: 2 rows"));
    // An ignored column does not count; the others still do.
    let lenient = SqliteObserver::new(&db.path).ignore_column("tickets", "status");
    assert_eq!(
        snap(&lenient).describe_diff(&snap(&lenient)),
        Vec::<String>::new()
    );
    let lenient_before = snap(&lenient);
    rusqlite::Connection::open(&db.path)
        .and_then(|c| c.execute("UPDATE tickets SET status = 'open' WHERE id = 2", []))
        .expect("update");
    assert_eq!(lenient_before, snap(&lenient), "status is ignored");
    assert_ne!(after, snap(&sqlite), "but not by the full observer");
    rusqlite::Connection::open(&db.path)
        .and_then(|c| c.execute("UPDATE tickets SET status = 'closed' WHERE id = 2", []))
        .expect("update");
    // An insert that is deleted again still moves the AUTOINCREMENT counter.
    rusqlite::Connection::open(&db.path)
        .and_then(|c| {
            c.execute_batch(
                "INSERT INTO comments (ticket, text) VALUES (1, 'x'); DELETE FROM comments;",
            )
        })
        .expect("insert and delete");
    let later = snap(&sqlite);
    let diff = after.describe_diff(&later);
    assert!(
        diff.iter().any(|d| d.starts_with("table sqlite_sequence")),
        "{diff:?}"
    );
    // A new table shows up, a dropped one too.
    rusqlite::Connection::open(&db.path)
        .and_then(|c| c.execute_batch("CREATE TABLE extra (x); DROP TABLE comments;"))
        .expect("schema change");
    let diff = later.diff(&snap(&sqlite));
    let keys: Vec<_> = diff
        .iter()
        .map(|c| (c.key.as_str(), c.before.is_some(), c.after.is_some()))
        .collect();
    assert!(keys.contains(&("table extra", false, true)), "{keys:?}");
    assert!(keys.contains(&("table comments", true, false)), "{keys:?}");

    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("a.txt"), "one").expect("write");
    std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
    std::fs::write(dir.path().join("sub/b.txt"), "two").expect("write");
    #[cfg(unix)]
    std::os::unix::fs::symlink("/etc/hostname", dir.path().join("link")).expect("symlink");
    let files = DirObserver::new(dir.path());
    let before = snap(&files);
    assert!(before.0.contains_key("sub/b.txt"), "{before:?}");
    // Same size, other bytes.
    std::fs::write(dir.path().join("sub/b.txt"), "TWO").expect("rewrite");
    let diff = before.describe_diff(&snap(&files));
    assert_eq!(diff.len(), 1, "{diff:?}");
    assert!(diff[0].starts_with("sub/b.txt: 3 bytes"), "{diff:?}");
    #[cfg(unix)]
    assert!(
        before.0["link"].starts_with("symlink → /etc/hostname"),
        "links are recorded, not followed: {before:?}"
    );

    let guard = Arc::new(Guard::ephemeral().expect("guard"));
    let outbox = OutboxObserver::new(guard.clone());
    let empty = snap(&outbox);
    guard.outbox().send("mail", json!({"to": "a@example.com"}));
    let one = snap(&outbox);
    let diff = empty.describe_diff(&one);
    assert!(
        diff.iter()
            .any(|d| d.starts_with("channel mail: added (1 message")),
        "{diff:?}"
    );
    guard.outbox().send("mail", json!({"to": "a@example.com"}));
    assert_ne!(one, snap(&outbox), "a second identical message is a change");
    assert_eq!(
        Snapshot::default().describe_diff(&Snapshot::default()),
        Vec::<String>::new()
    );
}

// ── the blind spots the kit closes: one liar and one honest tool each ──────────────────────

/// A small kit for the ledger: fewer concurrent runs than the default where the race is not
/// the point, so the suite stays quick.
fn ledger_kit() -> Kit<impl Fn() -> LedgerFixture> {
    Kit::new(|| Box::pin(fixtures::ledger_fixture()) as LedgerFixture).races(3)
}

type LedgerFixture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Fixture<fixtures::Ledger>>>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tool_that_deduplicates_on_the_request_id_fails() {
    let report = ledger_kit()
        .check(&Probe::new("file_by_request_id", json!({"key": "k1"})))
        .await;
    println!("{report}");
    assert!(!report.passed(), "{report}");
    let repeats = case(&report, "byte-identical repeat");
    assert_eq!(repeats.verdict, Verdict::Contradicts, "{report}");
    assert!(
        repeats
            .result
            .contains("repeat 1 of 3 (the first call's session, the next request id)")
            && repeats.result.contains("table entries"),
        "the repeat on the same session is what shows it:\n{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tool_that_deduplicates_on_its_arguments_passes() {
    let report = ledger_kit()
        .check(&Probe::new("file_by_key", json!({"key": "k1"})).invalid([json!({"key": 7})]))
        .await;
    println!("{report}");
    assert!(report.passed(), "{report}");
    assert_has_every_case(&report);
    let repeats = case(&report, "byte-identical repeat");
    assert_eq!(repeats.verdict, Verdict::Consistent, "{report}");
    // Three repeats, on the first call's session and on a new one.
    for how in [
        "repeat 1 of 3 (the first call's session",
        "repeat 2 of 3 (a new session, the request id shifted by 2)",
        "repeat 3 of 3 (the first call's session",
    ] {
        assert!(
            repeats.remote_records.iter().any(|r| r.starts_with(how)),
            "{how}:\n{report}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_idempotent_tool_that_writes_on_every_failed_call_fails() {
    let report = ledger_kit()
        .check(
            &Probe::new("file_logging_every_failure", json!({"key": "k1"}))
                .invalid([json!({"key": ""})]),
        )
        .await;
    println!("{report}");
    assert!(!report.passed(), "{report}");
    let failed = case(&report, "nonexistent or invalid input 1");
    assert_eq!(failed.verdict, Verdict::Contradicts, "{report}");
    assert!(
        failed.result.contains("repeating this failed call changed")
            && failed.result.contains("table errors"),
        "{report}"
    );
    assert!(failed.first_call.starts_with("isError"), "{report}");
    // Its valid calls are honest.
    assert_eq!(
        case(&report, "byte-identical repeat").verdict,
        Verdict::Consistent
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_idempotent_tool_that_notes_a_failure_once_passes() {
    let report = ledger_kit()
        .check(
            &Probe::new("file_noting_failures_once", json!({"key": "k1"}))
                .invalid([json!({"key": ""})]),
        )
        .await;
    println!("{report}");
    assert!(report.passed(), "{report}");
    let failed = case(&report, "nonexistent or invalid input 1");
    assert_eq!(failed.verdict, Verdict::Consistent, "{report}");
    assert!(
        failed
            .remote_records
            .iter()
            .any(|r| r.contains("table failed_keys")),
        "the first failed call did write, once:\n{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_on_every_third_call_fails() {
    let report = ledger_kit()
        .check(&Probe::new("file_every_third_call", json!({"key": "k1"})))
        .await;
    println!("{report}");
    assert!(!report.passed(), "{report}");
    let repeats = case(&report, "byte-identical repeat");
    assert_eq!(repeats.verdict, Verdict::Contradicts, "{report}");
    assert!(
        repeats.result.contains("repeat 2 of 3"),
        "the third call is the second repeat:\n{report}"
    );
    // With a single repeat, as the kit used to run, the lie goes unseen.
    let short = Kit::new(fixtures::ledger_fixture)
        .repeats(1)
        .races(1)
        .in_flight(2)
        .check(&Probe::new("file_every_third_call", json!({"key": "k1"})))
        .await;
    assert_eq!(
        case(&short, "byte-identical repeat").verdict,
        Verdict::Consistent,
        "{short}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn destructive_false_on_a_delete_or_an_overwrite_fails() {
    for (tool, args, what) in [
        (
            "tidy_notes",
            json!({}),
            "deleted sqlite ledger.db table notes rowid 1",
        ),
        (
            "edit_note",
            json!({"id": 1, "text": "gone"}),
            "overwrote sqlite ledger.db table notes rowid 1",
        ),
    ] {
        let report = ledger_kit().check(&Probe::new(tool, args)).await;
        println!("{report}");
        assert_eq!(
            report.claims.as_ref().and_then(|c| c.destructive),
            Some(false)
        );
        assert!(!report.passed(), "{tool}:\n{report}");
        let destructive = case(&report, "destructiveHint against");
        assert_eq!(destructive.verdict, Verdict::Contradicts, "{report}");
        assert!(
            destructive
                .result
                .starts_with("DESTRUCTIVE: destructiveHint is false")
                && destructive.result.contains(what),
            "{what}:\n{report}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn destructive_false_on_a_tool_that_only_adds_passes() {
    let report = ledger_kit()
        .check(&Probe::new("add_note", json!({"text": "new"})).invalid([json!({"text": 7})]))
        .await;
    println!("{report}");
    assert!(report.passed(), "{report}");
    assert_has_every_case(&report);
    let destructive = case(&report, "destructiveHint against");
    assert_eq!(destructive.verdict, Verdict::Consistent, "{report}");
    // It did change the table; adding is not destroying.
    assert!(
        first_case(&report)
            .remote_records
            .iter()
            .any(|r| r.contains("table notes")),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_check_then_insert_race_is_caught_and_the_run_named() {
    let kit = Kit::new(fixtures::ledger_fixture).races(20);
    let report = kit
        .check(&Probe::new(
            "register_check_then_insert",
            json!({"name": "ada"}),
        ))
        .await;
    println!("{report}");
    // A single call and its repeats are honest: only calls at once show the race.
    assert_eq!(
        case(&report, "byte-identical repeat").verdict,
        Verdict::Consistent,
        "{report}"
    );
    let race = case(&report, "identical calls at once: 4 clients, up to 20 runs");
    assert_eq!(race.verdict, Verdict::Contradicts, "{report}");
    assert!(
        race.result.contains("the race showed in run ") && race.result.contains("table names"),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_unique_constraint_survives_every_concurrent_run() {
    let kit = Kit::new(fixtures::ledger_fixture).races(20);
    let report = kit
        .check(&Probe::new("register_unique", json!({"name": "ada"})))
        .await;
    println!("{report}");
    assert!(report.passed(), "{report}");
    let race = case(&report, "identical calls at once");
    assert_eq!(race.verdict, Verdict::Consistent, "{report}");
    assert!(
        race.result
            .contains("20 runs of 4 identical calls at once each left the same state as one call"),
        "{report}"
    );
}

/// The kit sees only its observers: an in-memory counter passes unseen until an observer of
/// one's own reads it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn state_only_a_custom_observer_sees_needs_that_observer() {
    let probe = Probe::new("count_notes", json!({}));
    let blind = ledger_kit().check(&probe).await;
    assert!(
        blind.passed(),
        "the SQLite observer cannot see memory:\n{blind}"
    );
    let seeing = Kit::new(fixtures::ledger_fixture_with_counter)
        .check(&probe)
        .await;
    println!("{seeing}");
    assert!(!seeing.passed(), "{seeing}");
    assert!(
        seeing
            .failures()
            .iter()
            .any(|f| f.contains("NOT read-only") && f.contains("call counter calls")),
        "{seeing}"
    );
}

/// Items, for the destructiveHint judgement: rows by rowid (a WITHOUT ROWID table's rows by
/// content), no sqlite_sequence, and outbox messages by their place in sending order, so an
/// insert or a send is an addition and an update or delete is a loss.
#[test]
fn items_tell_additions_from_losses() {
    use rmcp_guard_test::honesty::Observe;
    let db = database(
        "CREATE TABLE log (id INTEGER PRIMARY KEY AUTOINCREMENT, line TEXT NOT NULL);
         CREATE TABLE tags (name TEXT PRIMARY KEY, color TEXT NOT NULL) WITHOUT ROWID;
         INSERT INTO log (line) VALUES ('one');
         INSERT INTO tags VALUES ('red', '#f00');",
    );
    let sqlite = SqliteObserver::new(&db.path);
    let lost = |before: &Snapshot, after: &Snapshot| -> Vec<String> {
        before
            .diff(after)
            .into_iter()
            .filter(|c| c.before.is_some())
            .map(|c| c.key)
            .collect()
    };
    let exec = |sql: &str| {
        rusqlite::Connection::open(&db.path)
            .and_then(|c| c.execute_batch(sql))
            .expect(sql)
    };
    let before = sqlite.items().expect("items");
    assert!(before.0.contains_key("table log rowid 1"), "{before:?}");
    assert!(
        !before.0.keys().any(|k| k.contains("sqlite_sequence rowid")),
        "{before:?}"
    );
    exec("INSERT INTO log (line) VALUES ('two'); INSERT INTO tags VALUES ('blue', '#00f');");
    let grown = sqlite.items().expect("items");
    assert_eq!(
        lost(&before, &grown),
        Vec::<String>::new(),
        "inserts only add"
    );
    assert_eq!(before.diff(&grown).len(), 2, "{:?}", before.diff(&grown));
    exec("UPDATE tags SET color = '#e00' WHERE name = 'red'; DELETE FROM log WHERE id = 1;");
    let shrunk = sqlite.items().expect("items");
    let gone = lost(&grown, &shrunk);
    assert!(gone.contains(&"table log rowid 1".to_owned()), "{gone:?}");
    assert!(
        gone.iter().any(|k| k.starts_with("table tags row ")),
        "the updated WITHOUT ROWID row is a loss: {gone:?}"
    );

    let guard = Arc::new(Guard::ephemeral().expect("guard"));
    let outbox = OutboxObserver::new(guard.clone());
    guard.outbox().send("mail", json!({"to": "a@example.com"}));
    let one = outbox.items().expect("items");
    guard.outbox().send("mail", json!({"to": "a@example.com"}));
    let two = outbox.items().expect("items");
    assert_eq!(lost(&one, &two), Vec::<String>::new(), "a send only adds");
    assert_eq!(one.diff(&two).len(), 1);
}

// ── modification times: a read that touches a file writes ────────────────────────────────

/// The report on a notes tool called for `plan.txt`, and for a note that is not there.
async fn notes_report(tool: &str) -> Report {
    let report = Kit::new(fixtures::notes_fixture)
        .check(
            &Probe::new(tool, json!({"name": "plan.txt"}))
                .invalid([json!({"name": "missing.txt"})]),
        )
        .await;
    println!("{report}");
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_read_only_tool_that_touches_a_file_fails() {
    let report = notes_report("read_note_touching").await;
    assert!(!report.passed(), "{report}");
    for name in ["one call with a valid input", "byte-identical repeat"] {
        let case = case(&report, name);
        assert_eq!(case.verdict, Verdict::Contradicts, "{name}:\n{report}");
        assert!(
            case.result.starts_with(
                "NOT read-only: readOnlyHint is true but the call changed the modification time of notes plan.txt"
            ),
            "{name}:\n{report}"
        );
        assert!(
            case.remote_records.iter().any(|r| {
                r.starts_with("the modification time of notes plan.txt: ")
                    && r.ends_with(&format!("→ {}", fixtures::TOUCHED_AT))
            }),
            "the evidence is the entry and both times:\n{report}"
        );
    }
    // Its bytes and mode did not change, nothing was deleted, and a refused read touches
    // nothing.
    assert!(
        !first_case(&report)
            .remote_records
            .iter()
            .any(|r| r.starts_with("notes plan.txt")),
        "{report}"
    );
    for name in ["destructiveHint against", "nonexistent or invalid input 1"] {
        assert_eq!(
            case(&report, name).verdict,
            Verdict::Consistent,
            "{name}:\n{report}"
        );
    }
}

/// Reading a file moves no modification time, and neither does a database whose skipped
/// companion files come and go in the observed folder.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_read_only_tool_that_only_reads_files_passes() {
    for tool in ["read_note", "find_note"] {
        let report = notes_report(tool).await;
        assert!(report.passed(), "{tool}:\n{report}");
        assert_has_every_case(&report);
        let verdicts: Vec<Verdict> = report.cases.iter().map(|c| c.verdict).collect();
        assert_eq!(verdicts, [Verdict::Consistent; 8], "{tool}:\n{report}");
    }
}

/// Writing the same bytes again moves the modification time: that is not a second effect,
/// so idempotency is judged on what the file holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_idempotent_tool_that_writes_the_same_bytes_again_passes() {
    let report = Kit::new(fixtures::notes_fixture)
        .races(3)
        .check(&Probe::new(
            "save_note",
            json!({"name": "plan.txt", "text": "ship it"}),
        ))
        .await;
    println!("{report}");
    assert_honestly_idempotent(&report);
    assert!(
        !report.to_string().contains("modification time"),
        "times are evidence for readOnlyHint only:\n{report}"
    );
}

/// A directory observer's times: a touch moves them while the content stays, reading does
/// not, and the directory a skipped path sits in has none.
#[test]
fn dir_times_see_a_touch_the_content_does_not() {
    use rmcp_guard_test::honesty::Observe;
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join("db")).expect("mkdir");
    std::fs::write(dir.path().join("db/app.db"), "rows").expect("write");
    std::fs::write(dir.path().join("plan.txt"), "draft").expect("write");
    let files = DirObserver::new(dir.path()).skipping(["db/app.db"]);
    let times = files.times().expect("times");
    let content = files.snapshot().expect("snapshot");
    assert_eq!(
        times.0.keys().collect::<Vec<_>>(),
        [".", "plan.txt"],
        "the same keys as the content, but not the folder of a skipped path: {times:?}"
    );
    assert_eq!(
        times,
        files.times().expect("times"),
        "reading the bytes moves no time"
    );
    fixtures::touch_long_ago(&dir.path().join("plan.txt")).expect("touch");
    assert_eq!(content, files.snapshot().expect("snapshot"));
    let moved = times.diff(&files.times().expect("times"));
    assert_eq!(moved.len(), 1, "{moved:?}");
    assert_eq!(moved[0].key, "plan.txt");
    assert_eq!(moved[0].after.as_deref(), Some(fixtures::TOUCHED_AT));
}

// ── disclosure, capabilities, header bytes and answers that drift ────────────────────────

/// A report share in the fixture's database, and a hit counter only answers can betray.
#[derive(Clone)]
struct Shares {
    db: PathBuf,
    guard: Arc<Guard>,
    hits: Arc<std::sync::atomic::AtomicU64>,
}

impl Guarded for Shares {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[derive(Deserialize, JsonSchema, rmcp_guard::ToolArgs)]
struct ShareArgs {
    /// The report.
    report: String,
}

/// A signed download link: whoever holds it reads the report, until it expires.
fn signed_link(report: &str) -> String {
    format!("https://files.example/{report}.csv?expires=1796300000&sig=4f1c2a9be07d55aa0c3e")
}

#[tool_router(server_handler)]
impl Shares {
    /// Claims a plain read, and hands out a bearer capability: the lie the kit must catch.
    #[read_only]
    #[tool(description = "Share a report")]
    async fn share(&self, Parameters(args): Parameters<ShareArgs>) -> Result<String, ToolError> {
        Ok(signed_link(&args.report))
    }

    /// The same link, declared: it asks, and says it creates a capability.
    #[read_only(discloses = "capability", boundary = Self::share_boundary)]
    #[tool(description = "Share a report, declared")]
    async fn share_declared(
        &self,
        Parameters(args): Parameters<ShareArgs>,
    ) -> Result<rmcp_guard::Disclosed<String>, ToolError> {
        Ok(rmcp_guard::Disclosed::new(1, signed_link(&args.report)))
    }

    /// Claims a plain read, and prints a cloud key.
    #[read_only]
    #[tool(description = "Show the report's settings")]
    async fn settings(
        &self,
        Parameters(_args): Parameters<ShareArgs>,
    ) -> Result<String, ToolError> {
        Ok("region=eu-west-1 key=AKIAIOSFODNN7EXAMPLE".into())
    }

    /// Reads nothing the kit observes, and answers differently every time.
    #[read_only]
    #[tool(description = "Count the report's views")]
    async fn views(&self, Parameters(_args): Parameters<ShareArgs>) -> Result<String, ToolError> {
        let n = self.hits.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        Ok(format!("{n} views"))
    }

    /// Claims a plain read, and stamps the database's header.
    #[read_only]
    #[tool(description = "Check the report database")]
    async fn stamp(&self, Parameters(_args): Parameters<ShareArgs>) -> Result<String, ToolError> {
        let db = WriteDb::open(&self.guard)?;
        db.execute_batch("PRAGMA application_id = 1196573006")?;
        Ok("checked".into())
    }

    async fn share_boundary(&self, args: &ShareArgs) -> Result<rmcp_guard::Boundary, ToolError> {
        Ok(rmcp_guard::Boundary::new(
            format!("report {}", args.report),
            "a download link anyone holding it can use until it expires",
        )
        .items(1, "link"))
    }
}

async fn shares_fixture() -> Fixture<Shares> {
    let db = database(DOCS);
    let server = Shares {
        db: db.path.clone(),
        guard: Arc::new(Guard::ephemeral().expect("guard").with_sqlite(&db.path)),
        hits: Arc::default(),
    };
    let _ = &server.db;
    Fixture::new(server)
        .observe(SqliteObserver::new(&db.path))
        .keep(db)
}

async fn shares_report(tool: &str) -> Report {
    let report = Kit::new(shares_fixture)
        .check(
            &Probe::new(tool, json!({"report": "q3"}))
                .human(Answer::Accept(json!({"confirm": true}))),
        )
        .await;
    println!("{report}");
    report
}

#[tokio::test]
async fn an_undeclared_capability_or_credential_in_a_read_fails() {
    for (tool, kind) in [
        ("share", "a signed link"),
        ("settings", "an AWS access key id"),
    ] {
        let report = shares_report(tool).await;
        assert!(!report.passed(), "{tool}:\n{report}");
        let disclosed = case(&report, "what the valid calls disclosed");
        assert_eq!(disclosed.verdict, Verdict::Contradicts, "{report}");
        assert!(disclosed.result.contains(kind), "{}", disclosed.result);
        assert!(
            disclosed.result.contains("declares no disclosure"),
            "{}",
            disclosed.result
        );
        assert!(
            !report.to_string().contains("wJalr") && !disclosed.result.contains("AKIAIOSF"),
            "the evidence names the kind, never the secret:\n{report}"
        );
    }
}

#[tokio::test]
async fn a_declared_capability_passes_with_every_case_consistent() {
    let report = shares_report("share_declared").await;
    assert!(report.passed(), "{report}");
    assert_eq!(
        report
            .claims
            .as_ref()
            .and_then(|c| c.discloses.as_ref())
            .map(|d| d.class.as_str()),
        Some("capability")
    );
    let disclosed = case(&report, "what the valid calls disclosed");
    assert_eq!(disclosed.verdict, Verdict::Consistent, "{report}");
    assert!(
        report.to_string().contains("discloses: capability"),
        "{report}"
    );
}

#[tokio::test]
async fn a_read_only_tool_that_answers_differently_each_time_is_a_warning() {
    let report = shares_report("views").await;
    let alike = case(&report, "the same call answers alike");
    assert_eq!(alike.verdict, Verdict::Warning, "{report}");
    assert!(
        alike.result.contains("answered differently"),
        "{}",
        alike.result
    );
    assert!(
        alike.result.contains("1 views") && alike.result.contains("2 views"),
        "{}",
        alike.result
    );
    assert!(
        report.passed(),
        "a warning is evidence, not a failure:\n{report}"
    );
}

#[tokio::test]
async fn a_read_only_tool_that_stamps_the_database_header_fails() {
    let report = shares_report("stamp").await;
    assert!(!report.passed(), "{report}");
    assert!(
        report
            .failures()
            .iter()
            .any(|f| f.contains("NOT read-only") && f.contains("application_id")),
        "{report}"
    );
}

#[tokio::test]
async fn the_report_says_what_it_observes_and_what_it_does_not() {
    let report = shares_report("share_declared").await;
    let text = report.to_string();
    assert!(text.contains("observed: sqlite app.db;"), "{text}");
    assert!(text.contains("not observed: every other file"), "{text}");
    assert_eq!(report.observed, ["sqlite app.db"]);
}

// ── helpers ──────────────────────────────────────────────────────────────────────────────

#[track_caller]
fn case<'r>(report: &'r Report, name: &str) -> &'r rmcp_guard_test::honesty::CaseReport {
    report
        .cases
        .iter()
        .find(|c| c.case.starts_with(name))
        .unwrap_or_else(|| panic!("no case {name:?} in:\n{report}"))
}

#[track_caller]
fn first_case(report: &Report) -> &rmcp_guard_test::honesty::CaseReport {
    case(report, "one call with a valid input")
}

/// The report passes, and every case that judges idempotency finds it consistent.
#[track_caller]
fn assert_honestly_idempotent(report: &Report) {
    assert!(report.passed(), "{report}");
    for name in [
        "byte-identical repeat",
        "retry after the client dropped",
        "identical calls at once",
    ] {
        assert_eq!(
            case(report, name).verdict,
            Verdict::Consistent,
            "{name}:\n{report}"
        );
    }
}

#[track_caller]
fn assert_has_every_case(report: &Report) {
    for name in [
        "one call with a valid input",
        "byte-identical repeat",
        "nonexistent or invalid input",
        "retry after the client dropped",
        "identical calls at once",
        "destructiveHint against",
        "what the valid calls disclosed",
        "the same call answers alike",
    ] {
        let case = case(report, name);
        assert_ne!(case.verdict, Verdict::Error, "{name} ran:\n{report}");
        let text = case.to_string();
        for field in [
            "case: ",
            "request: ",
            "first call: ",
            "second call: ",
            "remote records: ",
            "result: ",
        ] {
            assert!(text.contains(field), "{name} has {field:?}:\n{text}");
        }
    }
}

// ── order-cancel ───────────────────────────────────────────────────────────────────────

/// The operation every order-cancel fixture holds, prepared for alice to cancel A10001.
const OPERATION: &str = "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f";

/// What order-cancel's tools may change: the orders, the cancellation requests, and the
/// intents (status and result). Audit records, rate counters and timestamps are bookkeeping of
/// every call, not the effect a repeat must not repeat.
struct OrdersObserver(PathBuf);

impl rmcp_guard_test::honesty::Observe for OrdersObserver {
    fn label(&self) -> String {
        "orders".into()
    }

    fn snapshot(&self) -> Result<Snapshot, String> {
        let conn = rusqlite::Connection::open_with_flags(
            &self.0,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .map_err(|e| e.to_string())?;
        let mut snapshot = Snapshot::default();
        for (table, sql) in [
            (
                "orders",
                "SELECT order_id, tenant || ' ' || order_no || ' ' || status FROM orders",
            ),
            (
                "order_cancel_requests",
                "SELECT request_id, order_id || ' ' || requested_by || ' ' || reason || ' ' || status || ' ' || source_operation_id FROM order_cancel_requests",
            ),
            (
                "guard_operations",
                "SELECT operation_id, status || ' ' || coalesce(result, '-') FROM guard_operations",
            ),
            (
                "support_tickets",
                "SELECT ticket_id, order_id || ' ' || opened_by || ' ' || subject FROM support_tickets",
            ),
            (
                "guard_idempotency",
                "SELECT tenant || ' ' || user_id || ' ' || tool || ' ' || idem_key, status || ' ' || body_sha256 || ' ' || coalesce(result, '-') FROM guard_idempotency",
            ),
        ] {
            let mut statement = conn.prepare(sql).map_err(|e| e.to_string())?;
            let rows = statement
                .query_map([], |r| {
                    Ok((
                        r.get::<_, rusqlite::types::Value>(0)?,
                        r.get::<_, String>(1)?,
                    ))
                })
                .map_err(|e| e.to_string())?;
            for row in rows {
                let (key, value) = row.map_err(|e| e.to_string())?;
                snapshot.insert(format!("{table} {key:?}"), value);
            }
        }
        Ok(snapshot)
    }
}

async fn order_cancel_fixture() -> Fixture<order_cancel::OrderCancel> {
    let world = support::orders::World::new(support::orders::Engine::Sqlite)
        .await
        .expect("SQLite always runs");
    world.store_intent(OPERATION, 1001, "A10001", "alice").await;
    let server = world.server("tenant_demo", "alice", &[support::orders::SCOPE]);
    let db = world.sqlite_path().expect("a SQLite world");
    Fixture::new(server).observe(OrdersObserver(db)).keep(world)
}

/// confirm claims idempotency: a repeat, a retry after the client dropped mid-call (the
/// seed's timeout) and identical confirms at once must each leave the state of one
/// confirm. get_operation_result claims to read only.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn order_cancel_hints_are_honest() {
    let kit = Kit::new(order_cancel_fixture);
    let confirm = kit
        .check(
            &Probe::new("confirm_order_cancel", json!({"operation_id": OPERATION})).invalid([
                json!({"operation_id": "not-a-uuid"}),
                json!({"operation_id": "00000000-0000-4000-8000-000000000000"}),
                json!({}),
            ]),
        )
        .await;
    println!("{confirm}");
    assert_eq!(
        confirm.claims.as_ref().and_then(|c| c.idempotent),
        Some(true)
    );
    assert!(
        confirm.passed(),
        "confirm is honestly idempotent:\n{confirm}"
    );
    assert_has_every_case(&confirm);
    assert!(
        first_case(&confirm)
            .to_string()
            .contains("order_cancel_requests"),
        "the first confirm files the request:\n{confirm}"
    );

    let lookup = kit
        .check(
            &Probe::new("get_operation_result", json!({"operation_id": OPERATION}))
                .invalid([json!({"operation_id": "nope"})]),
        )
        .await;
    println!("{lookup}");
    assert_eq!(lookup.claims.as_ref().and_then(|c| c.read_only), Some(true));
    assert!(
        lookup.passed(),
        "get_operation_result is honestly read-only:\n{lookup}"
    );
    assert!(
        lookup
            .cases
            .iter()
            .all(|c| c.verdict == Verdict::Consistent),
        "{lookup}"
    );
}

/// open_ticket claims idempotency through its key: a repeat, a retry after the client
/// dropped mid-call and identical calls at once must each leave one ticket, on both eras;
/// a call with another key is a second ticket, which the kit does not count against it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn open_ticket_keyed_claim_is_honest() {
    for protocol in [
        rmcp::model::ProtocolVersion::V_2025_11_25,
        rmcp::model::ProtocolVersion::V_2026_07_28,
    ] {
        let kit = Kit::new(order_cancel_fixture).protocol(protocol.clone());
        let report = kit
            .check(
                &Probe::new(
                    "open_ticket",
                    json!({"request_id": "7d0c5b9e-1", "order_no": "A10001", "subject": "parcel arrived damaged"}),
                )
                .invalid([
                    json!({"request_id": "7d0c5b9e-2", "order_no": "Z99999", "subject": "parcel arrived damaged"}),
                    json!({"request_id": "not a key", "order_no": "A10001", "subject": "parcel arrived damaged"}),
                    json!({"order_no": "A10001", "subject": "parcel arrived damaged"}),
                ]),
            )
            .await;
        println!("{report}");
        assert_eq!(
            report.claims.as_ref().and_then(|c| c.idempotent),
            Some(true),
            "{protocol:?}"
        );
        assert!(
            report.passed(),
            "open_ticket is honestly idempotent on {protocol:?}:\n{report}"
        );
        assert_has_every_case(&report);
        assert!(
            first_case(&report).to_string().contains("support_tickets"),
            "the first call opens the ticket:\n{report}"
        );
    }
}
