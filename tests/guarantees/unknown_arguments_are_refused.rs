//! An argument a guarded tool does not take is refused, not dropped: serde would ignore
//! `path2`, a misspelled `dryrun` or a field's Rust name where it reads the `rename`, and
//! the tool would run while the model believes it set an option. Each such call answers
//! `INVALID_INPUT` naming the unknown argument and the ones the tool takes, with an audit
//! record, before anything is asked or changed, on a `#[destructive]`, a disclosing
//! `#[read_only]`, a `#[prepare]` and a keyed tool, on both eras. A tool that writes
//! `unknown_arguments = "ignore"` takes them as serde does.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use crate::support::*;
use rmcp::{
    ServerHandler,
    handler::server::wrapper::Parameters,
    model::{ProtocolVersion, ServerCapabilities, ServerConfig},
    tool, tool_handler,
};
use rmcp_guard::{
    Boundary, Code, Confirmed, Disclosed, Exposure, Guard, Guarded, Preview, ToolArgs, ToolError,
    audit::AuditLog,
    destructive, exposed,
    forms::Checkbox,
    ops::{SqlValue, SqliteStore},
    outcome::Outcome,
    read_only, tool_router,
};
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use serde_json::{Value, json};

both_eras!(
    a_destructive_tool_refuses_what_it_does_not_take_and_asks_nobody,
    an_ignoring_tool_takes_unknown_arguments_as_serde_does,
    safe_ops_delete_file_refuses_a_second_path,
    two_phase_and_keyed_tools_refuse_what_they_do_not_take,
);

#[derive(Clone)]
struct Notes {
    guard: Arc<Guard>,
    deleted: Arc<AtomicUsize>,
}

impl Guarded for Notes {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
struct DeleteArgs {
    /// The note to delete.
    name: String,
    /// Only say what would be deleted.
    #[serde(default)]
    dry_run: bool,
    /// Keep a copy beside the note.
    #[serde(rename = "keepBackup", default)]
    keep_backup: bool,
    /// How to report.
    #[serde(default)]
    report: Option<Report>,
}

#[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
struct Report {
    /// Name every line removed.
    #[serde(default)]
    verbose: bool,
}

#[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
struct ReadArgs {
    /// The note to show.
    name: String,
}

#[tool_router]
impl Notes {
    /// Delete a note, after the user ticks a box.
    #[destructive(confirm = "checkbox", preview = Self::preview_delete)]
    #[tool]
    async fn delete_note(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        self.deleted.fetch_add(1, Ordering::SeqCst);
        let verbose = args.report.is_some_and(|r| r.verbose);
        Ok(format!(
            "Deleted {} (dry run: {}, backup: {}, verbose: {verbose}).",
            args.name, args.dry_run, args.keep_backup
        ))
    }

    /// Delete a note; arguments it does not take are dropped.
    #[destructive(
        confirm = "checkbox",
        preview = Self::preview_delete,
        unknown_arguments = "ignore"
    )]
    #[tool]
    async fn delete_note_leniently(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        self.deleted.fetch_add(1, Ordering::SeqCst);
        Ok(format!("Deleted {}.", args.name))
    }

    async fn preview_delete(&self, args: &DeleteArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(&args.name, format!("Delete {}", args.name)))
    }

    /// Show a note, after the user agrees to disclose it.
    #[read_only(discloses = "sensitive", boundary = Self::note_boundary)]
    #[tool]
    async fn read_note(
        &self,
        Parameters(args): Parameters<ReadArgs>,
    ) -> Result<Disclosed<String>, ToolError> {
        Ok(Disclosed::new(1, format!("the note {}", args.name)))
    }

    async fn note_boundary(&self, args: &ReadArgs) -> Result<Boundary, ToolError> {
        Ok(Boundary::new(format!("the note {}", args.name), "its text"))
    }
}

#[tool_handler(router = exposed(self, Self::tool_router))]
impl ServerHandler for Notes {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

impl Notes {
    fn new(log: &AuditLog) -> Self {
        let guard = Guard::ephemeral()
            .expect("guard")
            .with_exposure(Exposure::all_tools())
            .with_audit(log.clone());
        Self {
            guard: Arc::new(guard),
            deleted: Arc::default(),
        }
    }
}

fn audit_log(dir: &tempfile::TempDir) -> AuditLog {
    AuditLog::new(
        SqliteStore::open(dir.path().join("audit.db")).unwrap(),
        "unknown arguments test",
    )
}

/// The refusal of an unknown argument: `INVALID_INPUT`, tagged `outcome`, naming each of
/// `unknown` and each of `takes`; its trace id.
#[track_caller]
fn refused(
    result: &rmcp::model::CallToolResult,
    outcome: Outcome,
    unknown: &[&str],
    takes: &[&str],
) -> String {
    assert_refused(result, Code::InvalidInput, outcome);
    let said = text(result);
    let noun = if unknown.len() == 1 {
        "argument"
    } else {
        "arguments"
    };
    let named = unknown
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    assert!(
        said.contains(&format!("unknown {noun} {named} (")),
        "names {named}: {said}"
    );
    let listed = takes
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    assert!(
        said.contains(&format!("it takes {listed}")),
        "lists {listed}: {said}"
    );
    trace_id(result).unwrap_or_else(|| panic!("no trace id in {said}"))
}

/// The one audit record of `trace`, which must say `outcome` for `tool`.
async fn audited(log: &AuditLog, trace: &str, tool: &str, outcome: &str) {
    let records = log.records().await.unwrap();
    let of_call: Vec<Value> = records
        .iter()
        .filter_map(|r| r.json())
        .filter(|e| e["trace_id"] == trace)
        .collect();
    assert_eq!(of_call.len(), 1, "one record of {trace}: {of_call:?}");
    assert_eq!(of_call[0]["outcome"], outcome, "{of_call:?}");
    assert_eq!(
        of_call[0]["code"],
        Code::InvalidInput.as_str(),
        "{of_call:?}"
    );
    assert_eq!(of_call[0]["tool"], tool, "{of_call:?}");
}

async fn a_destructive_tool_refuses_what_it_does_not_take_and_asks_nobody(era: ProtocolVersion) {
    let dir = tempfile::tempdir().unwrap();
    let log = audit_log(&dir);
    let server = Notes::new(&log);
    let human = ScriptedHuman::new(era);
    let client = connect(server.clone(), human.clone()).await;
    let takes = ["name", "dry_run", "keepBackup", "report"];
    let calls = [
        // An extra argument.
        (
            "delete_note",
            json!({"name": "a", "name2": "b"}),
            vec!["name2"],
            &takes[..],
        ),
        // A misspelled option.
        (
            "delete_note",
            json!({"name": "a", "dryrun": true}),
            vec!["dryrun"],
            &takes[..],
        ),
        // The Rust name of a renamed field.
        (
            "delete_note",
            json!({"name": "a", "keep_backup": true}),
            vec!["keep_backup"],
            &takes[..],
        ),
        // A misspelling inside a nested argument, and two at once.
        (
            "delete_note",
            json!({"name": "a", "report": {"verbos": true}, "force": true}),
            vec!["report.verbos", "force"],
            &takes[..],
        ),
        // A read-only tool that discloses.
        (
            "read_note",
            json!({"name": "a", "nmae": "b"}),
            vec!["nmae"],
            &["name"][..],
        ),
    ];
    let mut traces = Vec::new();
    for (tool, args, unknown, takes) in calls {
        let result = call(&client, tool, args).await;
        let trace = refused(&result, Outcome::InvalidArguments, &unknown, takes);
        traces.push((tool, trace));
    }
    assert!(human.shown().is_empty(), "nobody was asked");
    assert_eq!(server.deleted.load(Ordering::SeqCst), 0, "nothing ran");

    // What the tool takes, spelled as serde reads it, still goes through.
    human.will(Answer::Accept(json!({"confirm": true})));
    let args =
        json!({"name": "a", "dry_run": true, "keepBackup": true, "report": {"verbose": true}});
    let result = call(&client, "delete_note", args).await;
    assert!(!is_error(&result), "{}", text(&result));
    assert_eq!(server.deleted.load(Ordering::SeqCst), 1);
    let _ = client.cancel().await;

    server.guard.audit_settled().await;
    for (tool, trace) in traces {
        audited(&log, &trace, tool, "invalid_arguments").await;
    }
}

async fn an_ignoring_tool_takes_unknown_arguments_as_serde_does(era: ProtocolVersion) {
    let dir = tempfile::tempdir().unwrap();
    let server = Notes::new(&audit_log(&dir));
    let human = ScriptedHuman::new(era);
    human.will(Answer::Accept(json!({"confirm": true})));
    let client = connect(server.clone(), human.clone()).await;
    let args = json!({"name": "a", "dryrun": true});
    let result = call(&client, "delete_note_leniently", args).await;
    let _ = client.cancel().await;
    assert!(!is_error(&result), "{}", text(&result));
    assert_eq!(human.shown().len(), 1, "the human was asked");
    assert_eq!(server.deleted.load(Ordering::SeqCst), 1);
}

async fn safe_ops_delete_file_refuses_a_second_path(era: ProtocolVersion) {
    let world = World::new();
    let dir = tempfile::tempdir().unwrap();
    let log = audit_log(&dir);
    let guard = Guard::ephemeral()
        .unwrap()
        .with_exposure(Exposure::all_tools())
        .with_audit(log.clone());
    let server = world.server_with(guard);
    let guard = server.guard_config().clone();
    let human = ScriptedHuman::new(era);
    let client = connect(server, human.clone()).await;
    let args = json!({"path": "old.log", "path2": "notes.txt"});
    let result = call(&client, "delete_file", args).await;
    let _ = client.cancel().await;
    let trace = refused(&result, Outcome::InvalidArguments, &["path2"], &["path"]);
    assert!(human.shown().is_empty(), "nobody was asked");
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
    guard.audit_settled().await;
    audited(&log, &trace, "delete_file", "invalid_arguments").await;
}

async fn two_phase_and_keyed_tools_refuse_what_they_do_not_take(era: ProtocolVersion) {
    let world = orders::World::new(orders::Engine::Sqlite)
        .await
        .expect("SQLite needs no configuration");
    let client = connect(
        world.server("tenant_demo", "alice", &[orders::SCOPE]),
        ScriptedHuman::new(era),
    )
    .await;
    let calls = [
        (
            "prepare_order_cancel",
            json!({"order_no": "A10001", "reason": "changed my mind", "refund_to": "card"}),
            "refund_to",
        ),
        (
            "open_ticket",
            json!({"request_id": "0b6c2f4e-9d1a-4c3b-8e7f-2a5d6c7b8e9f", "order_no": "A10001", "subject": "Where is it?", "priority": "high"}),
            "priority",
        ),
    ];
    for (tool, args, unknown) in calls {
        let result = call(&client, tool, args.clone()).await;
        assert_refused(
            &result,
            Code::InvalidInput,
            Outcome::Refused(Code::InvalidInput),
        );
        assert!(
            text(&result).contains(&format!("unknown argument `{unknown}`")),
            "{tool} {args}: {}",
            text(&result)
        );
        let trace = trace_id(&result).expect("a trace id");
        let rows = world
            .query(
                "SELECT tool, outcome FROM guard_audit_log WHERE trace_id = $1",
                &[SqlValue::from(trace.as_str())],
            )
            .await;
        assert_eq!(rows.len(), 1, "{tool} {args}: one record");
        assert_eq!(rows[0].text("tool").unwrap(), tool);
    }
    let _ = client.cancel().await;
    for table in [
        "guard_operations",
        "guard_idempotency",
        "order_cancel_requests",
        "support_tickets",
    ] {
        let n = world
            .count(&format!("SELECT COUNT(*) AS n FROM {table}"), &[])
            .await;
        assert_eq!(n, 0, "nothing ran, so nothing is in {table}");
    }
}

/// A state of 2026-07-28 is bound to the arguments' RFC 8785 form; an integer beyond ±2^53
/// has none (two different numbers would bind alike), so a call carrying one, here through a
/// tool that lets unknown arguments through, is refused before anyone is asked, and nothing
/// runs.
#[tokio::test]
async fn arguments_without_a_canonical_form_are_refused_before_asking() {
    let dir = tempfile::tempdir().unwrap();
    let server = Notes::new(&audit_log(&dir));
    let client = connect(server.clone(), ScriptedHuman::new(MRTR)).await;
    for big in [
        "9007199254740993",
        "-9007199254740993",
        "18446744073709551615",
    ] {
        let args: Value =
            serde_json::from_str(&format!(r#"{{"name": "a", "copies": {big}}}"#)).unwrap();
        let result = complete(call_once(&client, params("delete_note_leniently", args)).await);
        assert_refused(&result, Code::InvalidInput, Outcome::InvalidArguments);
        let said = text(&result);
        assert!(
            said.contains("Nothing was changed") && said.contains("as strings"),
            "{big}: {said}"
        );
    }
    // Within the exact range the same call asks as usual.
    let response = call_once(
        &client,
        params(
            "delete_note_leniently",
            json!({"name": "a", "copies": 9007199254740991_i64}),
        ),
    )
    .await;
    assert!(
        matches!(response, rmcp::model::CallToolResponse::InputRequired(_)),
        "{response:?}"
    );
    assert_eq!(server.deleted.load(Ordering::SeqCst), 0);
    let _ = client.cancel().await;
}
