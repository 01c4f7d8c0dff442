//! Every outcome of a guarded call reaches the guard's audit log: a `#[destructive]` tool's
//! declines, refusals and executions with what the human saw, and a call of a tool that is
//! not published. Redacted answers (free text by default) reach neither the log, nor its
//! `guard::audit` tracing mirror, nor an export.

use crate::support;

use std::sync::{Arc, Mutex};

use crate::support::{MRTR, OLD_LOG, PUSH, World, call, connect};
use rmcp_guard::outcome::Outcome;
use rmcp_guard::{
    Exposure, Guard,
    audit::{AuditLog, export},
    ops::SqliteStore,
};
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use serde_json::{Value, json};

const SECRET: &str = "SECRET-ROLLBACK-7731 via blue/green";

/// Every field of every event guard logs on this thread, as text.
#[derive(Clone, Default)]
struct Everything(Arc<Mutex<String>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Everything {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Text<'a>(&'a mut String);
        impl tracing::field::Visit for Text<'_> {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                self.0.push_str(&format!(" {}={value:?}", field.name()));
            }
        }
        let target = event.metadata().target();
        if !(target.starts_with("guard") || target.starts_with("rmcp_guard")) {
            return;
        }
        let mut all = self.0.lock().unwrap();
        all.push_str(target);
        event.record(&mut Text(&mut all));
        all.push('\n');
    }
}

#[tokio::test]
async fn destructive_outcomes_and_refused_calls_are_recorded_with_answers_redacted() {
    let everything = Everything::default();
    let _capture = support::events::capture(everything.clone());
    let world = World::new();
    let log = AuditLog::new(
        SqliteStore::open(world.base.join("audit.db")).unwrap(),
        "safe-ops test",
    );
    let guard = Guard::ephemeral()
        .unwrap()
        .with_exposure(Exposure::all_tools())
        .with_audit(log.clone());
    let server = world.server_with(guard);
    let guard = server.guard_config().clone();
    let human = ScriptedHuman::new(PUSH);
    human.will(Answer::Decline);
    human.will(Answer::Accept(
        json!({"approval_level": "standard", "rollback_plan": SECRET}),
    ));
    human.will(Answer::Accept(
        json!({"typed_name": "customers", "approver": "grace"}),
    ));
    let client = connect(server, human).await;

    let declined = call(&client, "deploy", json!({"service": "billing"})).await;
    let executed = call(&client, "deploy", json!({"service": "billing"})).await;
    let dropped = call(&client, "drop_table", json!({"table": "customers"})).await;
    assert_eq!(support::outcome(&dropped), Some(Outcome::Executed));
    let unknown = client
        .call_tool(support::params("no_such_tool", json!({})))
        .await;
    assert!(unknown.is_err());
    guard.audit_settled().await;

    let records = log.records().await.unwrap();
    let entries: Vec<Value> = records.iter().map(|r| r.json().unwrap()).collect();
    let outcomes: Vec<(&str, Option<Outcome>)> = entries
        .iter()
        .map(|e| {
            let outcome = Outcome::parse(e["outcome"].as_str().unwrap());
            (e["tool"].as_str().unwrap(), outcome)
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("deploy", Some(Outcome::Declined)),
            ("deploy", Some(Outcome::Accepted)),
            ("deploy", Some(Outcome::Executed)),
            ("drop_table", Some(Outcome::Accepted)),
            ("drop_table", Some(Outcome::Executed)),
            ("no_such_tool", Some(Outcome::UnknownTool))
        ]
    );
    assert_eq!(
        entries[0]["trace_id"].as_str(),
        support::trace_id(&declined).as_deref()
    );
    assert_eq!(entries[1]["trace_id"], entries[2]["trace_id"]);
    assert_eq!(entries[1]["answer"]["rollback_plan"], "[redacted]");
    let done = &entries[2];
    assert_eq!(
        done["trace_id"].as_str(),
        support::trace_id(&executed).as_deref()
    );
    assert_eq!(done["target"], "billing");
    assert!(
        done["preview"].as_str().unwrap().contains("billing"),
        "{done}"
    );
    assert_eq!(done["answer"]["approval_level"], "standard");
    assert_eq!(done["answer"]["rollback_plan"], "[redacted]");
    assert_eq!(done["args_sha256"].as_str().unwrap().len(), 64);
    assert_eq!(done["result_sha256"].as_str().unwrap().len(), 64);
    assert!(
        entries[0].get("answer").is_none(),
        "a decline has no answer"
    );
    assert!(log.verify(None).await.is_ok());

    let exported = export(&records);
    let mirrored = everything.0.lock().unwrap().clone();
    let this_call = support::trace_id(&executed).unwrap();
    assert!(
        mirrored
            .lines()
            .any(|line| line.starts_with("guard::audit") && line.contains(&this_call)),
        "the mirror has no line for the executed call {this_call}: {mirrored}"
    );
    for (place, text) in [("the log", &exported), ("the tracing mirror", &mirrored)] {
        assert!(
            !text.contains("SECRET-ROLLBACK"),
            "{place} holds the answer: {text}"
        );
    }
}

/// The confirmation is committed to the log before the effect runs, so a process that stops
/// during the effect still leaves the record. A log that cannot take the record stops the
/// call before the effect, on both protocol eras.
#[tokio::test]
async fn nothing_runs_unless_its_confirmation_is_in_the_log_first() {
    support::events::install();
    for era in [PUSH, MRTR] {
        let world = World::new();
        let path = world.base.join("audit.db");
        let log = AuditLog::new(SqliteStore::open(&path).unwrap(), "safe-ops test");
        let guard = Guard::ephemeral()
            .unwrap()
            .with_exposure(Exposure::all_tools())
            .with_audit(log.clone());
        let server = world.server_with(guard);
        let guard = server.guard_config().clone();
        let human = ScriptedHuman::new(era.clone());
        human.will(Answer::Accept(json!({"confirm": true})));
        human.will(Answer::Accept(json!({"confirm": true})));
        let client = connect(server, human).await;

        // The disk fills up: every insert fails.
        guard.audit_settled().await;
        let outside = rusqlite::Connection::open(&path).unwrap();
        outside
            .execute_batch(
                "CREATE TRIGGER full_disk BEFORE INSERT ON guard_audit_log
                 BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;",
            )
            .unwrap();
        let refused = call(&client, "delete_file", json!({"path": "old.log"})).await;
        assert_eq!(
            support::outcome(&refused),
            Some(Outcome::AuditFailed),
            "{era:?}"
        );
        let text = support::text(&refused);
        assert!(
            text.contains("Nothing was changed") && text.contains("audit log"),
            "{era:?}: {text}"
        );
        assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG), "{era:?}");

        // Writable again: the confirmation precedes the effect's outcome in the log. (The
        // log's writer runs on this test's one thread: let it finish the refusal's record
        // before this thread blocks on the database.)
        guard.audit_settled().await;
        outside.execute_batch("DROP TRIGGER full_disk").unwrap();
        let done = call(&client, "delete_file", json!({"path": "old.log"})).await;
        assert_eq!(support::outcome(&done), Some(Outcome::Executed));
        assert_eq!(world.file("old.log"), None);
        guard.audit_settled().await;
        let trace = support::trace_id(&done).unwrap();
        let story: Vec<Option<Outcome>> = log
            .by_trace(&trace)
            .await
            .unwrap()
            .iter()
            .map(|r| Outcome::parse(r.json().unwrap()["outcome"].as_str().unwrap()))
            .collect();
        assert_eq!(story.last(), Some(&Some(Outcome::Executed)), "{era:?}");
        assert_eq!(
            story[story.len() - 2],
            Some(Outcome::Accepted),
            "{era:?}: the confirmation is written before the outcome: {story:?}"
        );
        let _ = client.cancel().await;
    }
}

/// A call whose confirmation is the last thing recorded (the process stopped during the
/// effect) is flagged when its story is read.
#[test]
fn a_story_that_ends_at_the_confirmation_says_the_outcome_is_missing() {
    support::events::install();
    let accepted =
        r#"{"seq":4,"prev":"00","at":0,"tool":"delete_file","outcome":"accepted","trace_id":"t"}"#;
    let executed =
        r#"{"seq":5,"prev":"00","at":0,"tool":"delete_file","outcome":"executed","trace_id":"t"}"#;
    let cut = rmcp_guard::audit::story([accepted]);
    assert!(cut.contains("no outcome was recorded"), "{cut}");
    let whole = rmcp_guard::audit::story([accepted, executed]);
    assert!(!whole.contains("no outcome was recorded"), "{whole}");
}

/// safe-ops as a server keeps a persisted log by default, under its data directory
/// (`$XDG_DATA_HOME/safe-ops/audit.db`), beside its stderr mirror: every outcome of its
/// calls is a record there, and the log verifies, read-only, as `guard-audit verify` reads it.
#[test]
fn safe_ops_keeps_a_verifiable_log_under_its_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("files")).unwrap();
    std::fs::write(dir.path().join("files/old.log"), OLD_LOG).unwrap();
    drop(safe_ops::db::open(&dir.path().join("ops.db")).expect("seeded database"));
    let mut server = support::stdio::StdioServer::start_in(dir.path(), &[], &[]);
    // The client declares no elicitation: the call ends without asking, and is recorded.
    let unasked = server
        .request(
            "tools/call",
            json!({"name": "delete_file", "arguments": {"path": "old.log"}}),
        )
        .expect("a result");
    let malformed = server
        .request(
            "tools/call",
            json!({"name": "delete_file", "arguments": {"path": 5}}),
        )
        .expect("a result");
    // The files are the user's alone: they hold names, paths and answers. (The folder is
    // the configuration's too here, which made it first.)
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |path: &std::path::Path| {
            std::fs::metadata(path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
                .permissions()
                .mode()
                & 0o777
        };
        // While the server runs, SQLite's journal files are there too.
        for name in ["audit.db", "audit.db-wal", "audit.db-shm"] {
            let file = dir.path().join("safe-ops").join(name);
            assert_eq!(mode(&file), 0o600, "{}", file.display());
        }
    }
    server.stop();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("files/old.log")).unwrap(),
        OLD_LOG
    );

    let audit = dir.path().join("safe-ops").join("audit.db");
    let log = AuditLog::new(
        SqliteStore::open_read_only(&audit).expect("the log is where the server said"),
        "safe-ops audit log",
    );
    let verified = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let verified = log.verify(None).await.expect("the log verifies");
            (verified, log.records().await.unwrap())
        });
    let (verified, records) = verified;
    assert_eq!(verified.records, records.len() as u64);
    let recorded: Vec<(String, String)> = records
        .iter()
        .filter_map(|r| r.json())
        .map(|e| {
            (
                e["trace_id"].as_str().unwrap_or_default().to_owned(),
                e["outcome"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    for (result, outcome) in [
        (&unasked, Outcome::UnsupportedClient),
        (&malformed, Outcome::InvalidArguments),
    ] {
        let trace = result["_meta"]["guard"]["traceId"]
            .as_str()
            .unwrap_or_else(|| panic!("a trace id: {result}"));
        assert!(
            recorded
                .iter()
                .any(|(t, o)| t == trace && Outcome::parse(o) == Some(outcome)),
            "{outcome:?} of {trace} in {recorded:?}"
        );
    }
}

/// A client that closes stdin right after an accepted call's answer ends the session the
/// normal way: the process stops, and its log holds the call's `executed`, with no
/// `audit_settled` in the server's `main` (the guard settles when it is dropped). Several
/// runs, since the last record raced the exit.
#[test]
fn the_last_outcome_survives_a_normal_shutdown() {
    use support::stdio::StdioServer;
    for run in 0..4 {
        let dir = tempfile::tempdir().unwrap();
        drop(safe_ops::db::open(&dir.path().join("ops.db")).unwrap());
        std::fs::create_dir_all(dir.path().join("files")).unwrap();
        std::fs::write(dir.path().join("files/old.log"), "bytes").unwrap();
        let env = [("GUARD_TENANT", "local"), ("GUARD_USER", "alice")];
        let form = json!({"elicitation": {"form": {}}});
        let mut server = StdioServer::start_declaring(dir.path(), &[], &env, form);
        let deleted = server.call_answering(
            "delete_file",
            json!({"path": "old.log"}),
            json!({"action": "accept", "content": {"confirm": true}}),
        );
        assert_eq!(
            deleted["result"]["_meta"]["guard"]["outcome"], "executed",
            "run {run}: {deleted}"
        );
        let trace = deleted["result"]["_meta"]["guard"]["traceId"].clone();
        let stderr = server.stop();

        let runtime = tokio::runtime::Runtime::new().unwrap();
        let store = SqliteStore::open(dir.path().join("safe-ops/audit.db")).unwrap();
        let log = AuditLog::new(store, "reader");
        let records = runtime.block_on(log.records()).unwrap();
        let outcomes: Vec<String> = records
            .iter()
            .map(|r| r.json().unwrap())
            .filter(|e| e["trace_id"] == trace)
            .map(|e| e["outcome"].as_str().unwrap().to_owned())
            .collect();
        assert!(
            outcomes.contains(&"accepted".to_owned()) && outcomes.contains(&"executed".to_owned()),
            "run {run}: the call's records are {outcomes:?}; the server said:\n{stderr}"
        );
    }
}
