//! Every outcome of every safe-ops tool, through a real rmcp client, on both protocol eras:
//! push elicitation (2025-11-25) and MRTR (2026-07-28). Each test checks the disk and the
//! database after the call, not only the text the model sees.

use crate::support;

use std::time::Duration;

use crate::support::*;
use rmcp::model::ProtocolVersion;
use rmcp_guard::Guard;
use rmcp_guard::outcome::Outcome;
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use serde_json::{Value, json};

both_eras!(
    delete_accept_removes_the_file,
    delete_decline_keeps_the_file,
    delete_cancel_keeps_the_file,
    delete_string_true_is_invalid,
    delete_unticked_box_is_refused,
    delete_unknown_field_is_refused,
    delete_missing_file_asks_nobody,
    delete_parent_dir_escape_is_refused,
    delete_absolute_path_outside_is_refused,
    delete_symlink_out_of_root_is_refused,
    delete_file_changed_while_asked_is_refused,
    drop_accept_removes_the_table,
    drop_decline_keeps_the_table,
    drop_cancel_keeps_the_table,
    drop_wrong_case_is_refused,
    drop_cyrillic_lookalike_is_refused,
    drop_surrounding_whitespace_is_accepted,
    drop_missing_approver_is_refused,
    drop_table_changed_while_asked_is_refused,
    deploy_accept_records_the_level,
    deploy_default_level_when_omitted,
    deploy_urgent_short_plan_is_refused,
    deploy_unknown_level_is_refused,
    deploy_decline_and_cancel_record_nothing,
    schemas_are_exact,
    schema_properties_arrive_in_declaration_order,
    annotations_mark_destructive_tools,
);

fn accept(content: Value) -> Answer {
    Answer::Accept(content)
}

/// One call of `tool` with the human answering `answer`; returns the result and the human.
async fn run(
    world: &World,
    era: &ProtocolVersion,
    tool: &str,
    args: Value,
    answer: Answer,
) -> (rmcp::model::CallToolResult, ScriptedHuman) {
    let human = ScriptedHuman::new(era.clone());
    human.will(answer);
    let client = connect(world.server(), human.clone()).await;
    let result = call(&client, tool, args).await;
    let _ = client.cancel().await;
    (result, human)
}

#[track_caller]
fn asked_once(human: &ScriptedHuman) -> rmcp_guard_test::testing::Shown {
    let shown = human.shown();
    assert_eq!(
        shown.len(),
        1,
        "exactly one elicitation per call: {shown:?}"
    );
    shown.into_iter().next().unwrap_or_else(|| unreachable!())
}

// ── delete_file ────────────────────────────────────────────────────────────────────────

async fn delete_accept_removes_the_file(era: ProtocolVersion) {
    let world = World::new();
    let (result, human) = run(
        &world,
        &era,
        "delete_file",
        json!({"path": "old.log"}),
        accept(json!({"confirm": true, "reason": "rotated"})),
    )
    .await;
    assert_natural(&result, Outcome::Executed);
    assert!(trace_id(&result).is_some_and(|id| !id.is_empty()));
    assert_eq!(text(&result), "Deleted old.log. Reason: rotated.");
    assert_eq!(world.file("old.log"), None, "the file is gone");
    assert_eq!(world.file("report.csv").as_deref(), Some(REPORT));
    let shown = asked_once(&human);
    assert_eq!(
        shown.message,
        format!(
            "Delete file old.log ({} bytes).\n\nThis cannot be undone.",
            OLD_LOG.len()
        ),
        "the question names the file (relative to the root, never the server's path) and \
         its size, and guard states the terms: the tool declares no undo"
    );
}

async fn delete_decline_keeps_the_file(era: ProtocolVersion) {
    let world = World::new();
    let (result, human) = run(
        &world,
        &era,
        "delete_file",
        json!({"path": "old.log"}),
        Answer::Decline,
    )
    .await;
    assert_natural(&result, Outcome::Declined);
    assert_eq!(text(&result), "The user declined; nothing was deleted.");
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
    asked_once(&human);
}

async fn delete_cancel_keeps_the_file(era: ProtocolVersion) {
    let world = World::new();
    let (result, human) = run(
        &world,
        &era,
        "delete_file",
        json!({"path": "old.log"}),
        Answer::Cancel,
    )
    .await;
    assert_natural(&result, Outcome::Cancelled);
    assert_eq!(
        text(&result),
        "The confirmation was cancelled; nothing was deleted."
    );
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
    asked_once(&human);
}

async fn delete_string_true_is_invalid(era: ProtocolVersion) {
    let world = World::new();
    let (result, human) = run(
        &world,
        &era,
        "delete_file",
        json!({"path": "old.log"}),
        accept(json!({"confirm": "true"})),
    )
    .await;
    assert_refused(
        &result,
        rmcp_guard::Code::InvalidConfirmation,
        Outcome::InvalidAnswer,
    );
    assert!(text(&result).contains("confirm"), "{}", text(&result));
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
    asked_once(&human);
}

async fn delete_unticked_box_is_refused(era: ProtocolVersion) {
    let world = World::new();
    for content in [json!({"confirm": false}), json!({}), json!({"reason": "x"})] {
        let (result, human) = run(
            &world,
            &era,
            "delete_file",
            json!({"path": "old.log"}),
            accept(content.clone()),
        )
        .await;
        assert_refused(
            &result,
            rmcp_guard::Code::InvalidConfirmation,
            Outcome::InvalidAnswer,
        );
        assert!(
            text(&result).contains("not ticked"),
            "{content}: {}",
            text(&result)
        );
        assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
        asked_once(&human);
    }
}

async fn delete_unknown_field_is_refused(era: ProtocolVersion) {
    let world = World::new();
    let (result, human) = run(
        &world,
        &era,
        "delete_file",
        json!({"path": "old.log"}),
        accept(json!({"confirm": true, "also_delete": "report.csv"})),
    )
    .await;
    assert_refused(
        &result,
        rmcp_guard::Code::InvalidConfirmation,
        Outcome::InvalidAnswer,
    );
    assert!(text(&result).contains("also_delete"), "{}", text(&result));
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
    assert_eq!(world.file("report.csv").as_deref(), Some(REPORT));
    asked_once(&human);
}

async fn delete_missing_file_asks_nobody(era: ProtocolVersion) {
    let world = World::new();
    let (result, human) = run(
        &world,
        &era,
        "delete_file",
        json!({"path": "nope.txt"}),
        accept(json!({"confirm": true})),
    )
    .await;
    assert_natural(&result, Outcome::PreconditionFailed);
    assert_eq!(text(&result), "File not found, nothing to delete: nope.txt");
    assert!(human.shown().is_empty(), "nobody is asked");
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
    assert_eq!(world.file("report.csv").as_deref(), Some(REPORT));
}

async fn escape_is_refused(era: ProtocolVersion, world: &World, path: &str) {
    let (result, human) = run(
        world,
        &era,
        "delete_file",
        json!({ "path": path }),
        accept(json!({"confirm": true})),
    )
    .await;
    assert_refused(
        &result,
        rmcp_guard::Code::InvalidInput,
        Outcome::PreviewFailed,
    );
    assert!(human.shown().is_empty(), "{path}: nobody is asked");
    assert_eq!(read(&world.outside).as_deref(), Some(OUTSIDE), "{path}");
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
}

async fn delete_parent_dir_escape_is_refused(era: ProtocolVersion) {
    let world = World::new();
    escape_is_refused(era.clone(), &world, "../outside.txt").await;
    escape_is_refused(era, &world, "sub/../../outside.txt").await;
}

async fn delete_absolute_path_outside_is_refused(era: ProtocolVersion) {
    let world = World::new();
    let absolute = world.outside.display().to_string();
    escape_is_refused(era, &world, &absolute).await;
}

async fn delete_symlink_out_of_root_is_refused(era: ProtocolVersion) {
    let world = World::new();
    let link = world.path("innocent.txt");
    std::os::unix::fs::symlink(&world.outside, &link).expect("symlink");
    escape_is_refused(era, &world, "innocent.txt").await;
    assert!(
        std::fs::symlink_metadata(&link).is_ok(),
        "the link itself is left alone"
    );
}

async fn delete_file_changed_while_asked_is_refused(era: ProtocolVersion) {
    let world = World::new();
    let path = world.path("old.log");
    let human = ScriptedHuman::new(era.clone());
    human.will(accept(json!({"confirm": true})));
    let observer = Observer::new(human.clone()).while_asked(move || {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("open for append");
        file.write_all(b"a line written after the question\n")
            .expect("append");
    });
    let client = connect(world.server(), observer).await;
    let result = call(&client, "delete_file", json!({"path": "old.log"})).await;
    let _ = client.cancel().await;
    assert_refused(
        &result,
        rmcp_guard::Code::StateChanged,
        Outcome::StateChanged,
    );
    assert_eq!(
        world.file("old.log"),
        Some(format!("{OLD_LOG}a line written after the question\n")),
        "the changed file is not deleted"
    );
    asked_once(&human);
}

// ── drop_table ─────────────────────────────────────────────────────────────────────────

async fn drop_accept_removes_the_table(era: ProtocolVersion) {
    let world = World::new();
    let (result, human) = run(
        &world,
        &era,
        "drop_table",
        json!({"table": "orders"}),
        accept(json!({"typed_name": "orders", "approver": "ada"})),
    )
    .await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(
        text(&result),
        "Dropped table orders (4 rows). Approver: ada."
    );
    assert_eq!(world.rows("orders"), None, "gone from sqlite_master");
    assert_eq!(world.tables(), ["customers", "deployments"]);
    // A guard without a store keeps no undo window: the drop is final at once, as the
    // question said, so nothing waits in the trash either.
    let every: i64 = rusqlite::Connection::open(&world.db)
        .expect("database")
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(every, 2, "no trashed table left behind");
    assert_eq!(world.rows("customers"), Some(3));
    let shown = asked_once(&human);
    assert!(
        shown.message.contains("drop table `orders`")
            && shown.message.contains("all its 4 rows")
            && shown.message.contains("This cannot be undone.")
            && shown.message.ends_with("To confirm, type orders exactly."),
        "{}",
        shown.message
    );
}

async fn drop_refused_or_kept(
    era: ProtocolVersion,
    answer: Answer,
) -> (rmcp::model::CallToolResult, World) {
    let world = World::new();
    let (result, human) = run(
        &world,
        &era,
        "drop_table",
        json!({"table": "orders"}),
        answer,
    )
    .await;
    assert_eq!(world.rows("orders"), Some(4), "the table and its rows stay");
    assert_eq!(world.rows("customers"), Some(3));
    asked_once(&human);
    (result, world)
}

async fn drop_decline_keeps_the_table(era: ProtocolVersion) {
    let (result, _world) = drop_refused_or_kept(era, Answer::Decline).await;
    assert_natural(&result, Outcome::Declined);
    assert_eq!(text(&result), "The user declined; no table was dropped.");
}

async fn drop_cancel_keeps_the_table(era: ProtocolVersion) {
    let (result, _world) = drop_refused_or_kept(era, Answer::Cancel).await;
    assert_natural(&result, Outcome::Cancelled);
    assert_eq!(
        text(&result),
        "The confirmation was cancelled; no table was dropped."
    );
}

async fn drop_wrong_case_is_refused(era: ProtocolVersion) {
    let (result, _world) = drop_refused_or_kept(
        era,
        accept(json!({"typed_name": "Orders", "approver": "ada"})),
    )
    .await;
    assert_refused(
        &result,
        rmcp_guard::Code::InvalidConfirmation,
        Outcome::InvalidAnswer,
    );
    assert!(
        text(&result).contains("does not match"),
        "{}",
        text(&result)
    );
}

async fn drop_cyrillic_lookalike_is_refused(era: ProtocolVersion) {
    // U+043E CYRILLIC SMALL LETTER O in place of the Latin o.
    let (result, _world) = drop_refused_or_kept(
        era,
        accept(json!({"typed_name": "\u{43e}rders", "approver": "ada"})),
    )
    .await;
    assert_refused(
        &result,
        rmcp_guard::Code::InvalidConfirmation,
        Outcome::InvalidAnswer,
    );
}

async fn drop_surrounding_whitespace_is_accepted(era: ProtocolVersion) {
    let world = World::new();
    let (result, human) = run(
        &world,
        &era,
        "drop_table",
        json!({"table": "orders"}),
        accept(json!({"typed_name": " \torders \n", "approver": "ada"})),
    )
    .await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(world.rows("orders"), None);
    asked_once(&human);
}

async fn drop_missing_approver_is_refused(era: ProtocolVersion) {
    for content in [
        json!({"typed_name": "orders"}),
        json!({"typed_name": "orders", "approver": null}),
        json!({"typed_name": "orders", "approver": ""}),
    ] {
        let (result, _world) = drop_refused_or_kept(era.clone(), accept(content.clone())).await;
        assert_refused(
            &result,
            rmcp_guard::Code::InvalidConfirmation,
            Outcome::InvalidAnswer,
        );
        assert!(
            text(&result).contains("approver"),
            "{content}: {}",
            text(&result)
        );
    }
}

async fn drop_table_changed_while_asked_is_refused(era: ProtocolVersion) {
    let world = World::new();
    let human = ScriptedHuman::new(era.clone());
    human.will(accept(json!({"typed_name": "orders", "approver": "ada"})));
    let db = world.db.clone();
    let observer = Observer::new(human.clone()).while_asked(move || {
        let conn = rusqlite::Connection::open(&db).expect("writable connection");
        conn.execute(
            "INSERT INTO orders (customer_id, total_cents, status) VALUES (2, 1, 'new')",
            [],
        )
        .expect("insert order");
    });
    let client = connect(world.server(), observer).await;
    let result = call(&client, "drop_table", json!({"table": "orders"})).await;
    let _ = client.cancel().await;
    assert_refused(
        &result,
        rmcp_guard::Code::StateChanged,
        Outcome::StateChanged,
    );
    assert_eq!(
        world.rows("orders"),
        Some(5),
        "the grown table is not dropped"
    );
    asked_once(&human);
}

// ── deploy ─────────────────────────────────────────────────────────────────────────────

async fn deploy_accept_records_the_level(era: ProtocolVersion) {
    let world = World::new();
    let plan = "redeploy v41 from the registry";
    let (result, human) = run(
        &world,
        &era,
        "deploy",
        json!({"service": "billing"}),
        accept(json!({"approval_level": "urgent", "rollback_plan": plan})),
    )
    .await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(
        text(&result),
        "Deployment of billing submitted (urgent); rollback plan recorded."
    );
    assert_eq!(
        world.deployments(),
        [("billing".to_owned(), "urgent".to_owned(), plan.to_owned())]
    );
    asked_once(&human);
}

async fn deploy_default_level_when_omitted(era: ProtocolVersion) {
    let world = World::new();
    let (result, _human) = run(
        &world,
        &era,
        "deploy",
        json!({"service": "billing"}),
        accept(json!({"rollback_plan": "revert"})),
    )
    .await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(
        world.deployments(),
        [(
            "billing".to_owned(),
            "standard".to_owned(),
            "revert".to_owned()
        )]
    );
}

async fn deploy_urgent_short_plan_is_refused(era: ProtocolVersion) {
    // Short, and short once invisible padding is not counted: "revert" plus zero-width
    // spaces and joiners is 10 characters long but shows 6.
    for plan in ["  revert  ", "revert\u{200b}\u{200b}\u{2060}\u{feff}"] {
        let world = World::new();
        let (result, _human) = run(
            &world,
            &era,
            "deploy",
            json!({"service": "billing"}),
            accept(json!({"approval_level": "urgent", "rollback_plan": plan})),
        )
        .await;
        assert_refused(
            &result,
            rmcp_guard::Code::InvalidConfirmation,
            Outcome::InvalidAnswer,
        );
        assert!(
            text(&result).contains("10 visible characters"),
            "{}",
            text(&result)
        );
        assert!(world.deployments().is_empty(), "no row for {plan:?}");
    }
}

async fn deploy_unknown_level_is_refused(era: ProtocolVersion) {
    let world = World::new();
    for level in [json!("asap"), json!("Urgent"), json!(1), json!(true)] {
        let (result, _human) = run(
            &world,
            &era,
            "deploy",
            json!({"service": "billing"}),
            accept(json!({"approval_level": level, "rollback_plan": "redeploy v41"})),
        )
        .await;
        assert_refused(
            &result,
            rmcp_guard::Code::InvalidConfirmation,
            Outcome::InvalidAnswer,
        );
        assert!(
            text(&result).contains("approval_level"),
            "{level}: {}",
            text(&result)
        );
    }
    assert!(world.deployments().is_empty(), "no row");
}

async fn deploy_decline_and_cancel_record_nothing(era: ProtocolVersion) {
    let world = World::new();
    for (answer, outcome, expected) in [
        (
            Answer::Decline,
            Outcome::Declined,
            "The user declined; nothing was deployed.",
        ),
        (
            Answer::Cancel,
            Outcome::Cancelled,
            "The deployment was cancelled; nothing was deployed.",
        ),
    ] {
        let (result, human) = run(
            &world,
            &era,
            "deploy",
            json!({"service": "billing"}),
            answer,
        )
        .await;
        assert_natural(&result, outcome);
        assert_eq!(text(&result), expected);
        asked_once(&human);
    }
    assert!(world.deployments().is_empty(), "no row");
}

// ── schemas and annotations ────────────────────────────────────────────────────────────

fn expected_schema(tool: &str) -> (Value, Vec<&'static str>) {
    match tool {
        "delete_file" => (
            json!({
                "type": "object",
                "properties": {
                    "confirm": {
                        "type": "boolean",
                        "title": "Confirm deletion",
                        "description": "Delete the file.",
                        "default": false
                    },
                    "reason": {
                        "type": "string",
                        "title": "Reason",
                        "description": "Why (optional, for the audit log).",
                        "maxLength": 500
                    }
                }
            }),
            vec!["confirm", "reason"],
        ),
        "drop_table" => (
            json!({
                "type": "object",
                "properties": {
                    "typed_name": {
                        "type": "string",
                        "title": "Table name",
                        "description": "Type the table name exactly to confirm."
                    },
                    "approver": {
                        "type": "string",
                        "title": "Approver",
                        "description": "Who approves this drop.",
                        "minLength": 1,
                        "maxLength": 100
                    }
                },
                "required": ["typed_name", "approver"]
            }),
            vec!["typed_name", "approver"],
        ),
        "deploy" => (
            json!({
                "type": "object",
                "properties": {
                    "approval_level": {
                        "type": "string",
                        "title": "Approval level",
                        "description": "Approval level.",
                        "oneOf": [
                            {"const": "standard", "title": "Standard"},
                            {"const": "urgent", "title": "Urgent"}
                        ],
                        "default": "standard"
                    },
                    "rollback_plan": {
                        "type": "string",
                        "title": "Rollback plan",
                        "description": "Summary of the rollback plan.",
                        "minLength": 1,
                        "maxLength": 2000
                    }
                },
                "required": ["rollback_plan"]
            }),
            vec!["approval_level", "rollback_plan"],
        ),
        other => panic!("no form for {other}"),
    }
}

const FORMS: [(&str, &str); 3] = [
    ("delete_file", r#"{"path": "old.log"}"#),
    ("drop_table", r#"{"table": "orders"}"#),
    ("deploy", r#"{"service": "billing"}"#),
];

/// Shows each tool's form once (the human declines) and returns what the client received.
async fn show_each_form(era: &ProtocolVersion) -> Vec<(&'static str, Observer)> {
    let world = World::new();
    let mut seen = Vec::new();
    for (tool, args) in FORMS {
        let args: Value = serde_json::from_str(args).expect("arguments");
        let human = ScriptedHuman::new(era.clone());
        human.will(Answer::Decline);
        let observer = Observer::new(human.clone());
        let client = connect(world.server(), observer.clone()).await;
        let result = call(&client, tool, args).await;
        let _ = client.cancel().await;
        assert_natural(&result, Outcome::Declined);
        asked_once(&human);
        seen.push((tool, observer));
    }
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
    assert_eq!(world.rows("orders"), Some(4));
    assert!(world.deployments().is_empty());
    seen
}

async fn schemas_are_exact(era: ProtocolVersion) {
    for (tool, observer) in show_each_form(&era).await {
        let (schema, _) = expected_schema(tool);
        assert_eq!(
            observer.human.shown()[0].schema,
            schema,
            "{tool}: requestedSchema"
        );
    }
}

/// Clients render `properties` in the order they arrive, so the wire order is the
/// declaration order of the form's fields.
async fn schema_properties_arrive_in_declaration_order(era: ProtocolVersion) {
    for (tool, observer) in show_each_form(&era).await {
        let (_, order) = expected_schema(tool);
        assert_eq!(
            observer.property_orders(),
            [order],
            "{tool}: properties in declaration order on the wire"
        );
    }
}

async fn annotations_mark_destructive_tools(era: ProtocolVersion) {
    let world = World::new();
    let client = connect(world.server(), ScriptedHuman::new(era)).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let _ = client.cancel().await;
    let mut names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "create_download_link",
            "delete_file",
            "delete_files",
            "deploy",
            "deploy_production",
            "drop_table",
            "list_tables",
            "read_build_log"
        ]
    );
    for tool in &tools {
        let hints = tool
            .annotations
            .as_ref()
            .unwrap_or_else(|| panic!("{} has no annotations", tool.name));
        if ["list_tables", "read_build_log", "create_download_link"].contains(&&*tool.name) {
            // Reads; `read_build_log` and `create_download_link` disclose, which their
            // `_meta.guard` says, not their hints.
            assert_eq!(hints.read_only_hint, Some(true), "{}", tool.name);
            assert_ne!(hints.destructive_hint, Some(true), "{}", tool.name);
        } else {
            assert_eq!(hints.destructive_hint, Some(true), "{}", tool.name);
            assert_eq!(hints.read_only_hint, Some(false), "{}", tool.name);
            assert_eq!(hints.idempotent_hint, Some(false), "{}", tool.name);
        }
    }
}

// ── timeout (push only: MRTR has no server-side wait) ─────────────────────────────────

#[tokio::test]
async fn push_unanswered_question_times_out_as_cancel() {
    let world = World::new();
    let human = ScriptedHuman::new(PUSH);
    human.will(Answer::Ignore);
    let server = world.server_with(
        Guard::ephemeral()
            .expect("guard key")
            .answer_timeout(Duration::from_millis(300)),
    );
    let client = connect(server, human.clone()).await;
    let result = call(&client, "delete_file", json!({"path": "old.log"})).await;
    assert_natural(&result, Outcome::Cancelled);
    assert_eq!(
        text(&result),
        "The confirmation was cancelled; nothing was deleted."
    );
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
    assert_eq!(human.shown().len(), 1);
    // The scripted human is still "thinking"; dropping the client ends the session.
    drop(client);
}

#[tokio::test]
async fn list_tables_reads_without_asking() {
    let world = World::new();
    for era in [PUSH, MRTR] {
        let human = ScriptedHuman::new(era);
        let client = connect(world.server(), human.clone()).await;
        let result = call(&client, "list_tables", json!({})).await;
        let _ = client.cancel().await;
        assert!(!is_error(&result));
        assert_eq!(
            text(&result),
            "customers: 3 rows\ndeployments: 0 rows\norders: 4 rows"
        );
        assert!(human.shown().is_empty());
    }
}

// ── cancellation (push: the call waits on its open question) ──────────────────────────

/// A human who is shown the form, then waits until the test lets them accept it.
#[derive(Clone)]
struct HeldHuman {
    asked: std::sync::Arc<tokio::sync::Notify>,
    release: std::sync::Arc<tokio::sync::Notify>,
    content: Value,
}

impl HeldHuman {
    fn accepting(content: Value) -> Self {
        Self {
            asked: Default::default(),
            release: Default::default(),
            content,
        }
    }
}

impl rmcp::ClientHandler for HeldHuman {
    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.asked.notify_one();
        self.release.notified().await;
        let mut result = rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept);
        result.content = Some(self.content.clone());
        Ok(result)
    }

    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut elicitation = rmcp::model::ElicitationCapability::new();
        elicitation.form = Some(rmcp::model::FormElicitationCapability::new());
        let mut capabilities = rmcp::model::ClientCapabilities::default();
        capabilities.elicitation = Some(elicitation);
        rmcp::model::ClientConfig::new(
            capabilities,
            rmcp::model::Implementation::new("held-human", "0.1.0"),
        )
        .with_protocol_version(PUSH)
    }
}

/// Sends the `guard::audit` events' `(tool, outcome)` to the test, on this thread only (the
/// in-process server runs on the test's current-thread runtime).
struct AuditLayer(tokio::sync::mpsc::UnboundedSender<(String, String)>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for AuditLayer {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Fields(Option<String>, Option<String>);
        impl tracing::field::Visit for Fields {
            fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                match field.name() {
                    "tool" => self.0 = Some(value.to_owned()),
                    "outcome" => self.1 = Some(value.to_owned()),
                    _ => {}
                }
            }
            fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
        }
        if event.metadata().target() != "guard::audit" {
            return;
        }
        let mut fields = Fields(None, None);
        event.record(&mut fields);
        if let Fields(Some(tool), Some(outcome)) = fields {
            let _ = self.0.send((tool, outcome));
        }
    }
}

fn audit_events() -> (
    support::events::Capture,
    tokio::sync::mpsc::UnboundedReceiver<(String, String)>,
) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    (support::events::capture(AuditLayer(tx)), rx)
}

/// The next audited outcome of `tool` (bounded, so a missing event fails instead of hanging).
async fn next_outcome(
    events: &mut tokio::sync::mpsc::UnboundedReceiver<(String, String)>,
    tool: &str,
) -> Outcome {
    tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let (audited, outcome) = events.recv().await.expect("audit channel open");
            if audited == tool {
                return Outcome::parse(&outcome).unwrap_or_else(|| {
                    panic!("{tool} was audited with an unknown outcome {outcome:?}")
                });
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no audit event for {tool}"))
}

/// Starts `delete_file(old.log)` as a cancellable request and waits until the human is asked.
async fn delete_waiting_on_the_human(
    client: &rmcp::service::RunningService<rmcp::RoleClient, HeldHuman>,
    human: &HeldHuman,
) -> rmcp::service::RequestHandle<rmcp::RoleClient> {
    let request = rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(
        params("delete_file", json!({"path": "old.log"})),
    ));
    let handle = client
        .peer()
        .send_cancellable_request(request, rmcp::service::PeerRequestOptions::no_options())
        .await
        .expect("tools/call sent");
    human.asked.notified().await;
    handle
}

#[tokio::test]
async fn push_call_cancelled_by_the_client_never_runs_after_a_late_accept() {
    let (_audit, mut events) = audit_events();
    let world = World::new();
    let human = HeldHuman::accepting(json!({"confirm": true}));
    let client = connect(world.server(), human.clone()).await;
    let call = delete_waiting_on_the_human(&client, &human).await;

    call.cancel(Some("the user pressed stop".to_owned()))
        .await
        .expect("notifications/cancelled sent");
    // The human accepts after the call was cancelled.
    human.release.notify_one();
    assert_eq!(
        next_outcome(&mut events, "delete_file").await,
        Outcome::CancelledByClient
    );
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));

    // The session is still usable, and a new call asks afresh and runs on an accept.
    let second = delete_waiting_on_the_human(&client, &human).await;
    human.release.notify_one();
    let response = second.await_response().await.expect("a response");
    let rmcp::model::ServerResult::CallToolResult(result) = response else {
        panic!("expected a tool result, got {response:?}");
    };
    assert_natural(&result, Outcome::Executed);
    assert_eq!(
        next_outcome(&mut events, "delete_file").await,
        Outcome::Accepted
    );
    assert_eq!(
        next_outcome(&mut events, "delete_file").await,
        Outcome::Executed
    );
    assert_eq!(world.file("old.log"), None);
    let _ = client.cancel().await;
}

#[tokio::test]
async fn push_call_whose_connection_closes_never_runs_after_a_late_accept() {
    let (_audit, mut events) = audit_events();
    let world = World::new();
    let human = HeldHuman::accepting(json!({"confirm": true}));
    let client = connect(world.server(), human.clone()).await;
    let _call = delete_waiting_on_the_human(&client, &human).await;

    let _ = client.cancel().await;
    human.release.notify_one();
    assert_eq!(
        next_outcome(&mut events, "delete_file").await,
        Outcome::CancelledByClient
    );
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
}

/// A server whose second preview (the re-check's) waits for the test, so a cancellation can
/// arrive after the human accepted and before the body would run.
mod gated {
    use std::sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    };

    use rmcp::{ServerHandler, handler::server::wrapper::Parameters, tool, tool_handler};
    use rmcp_guard::forms::Checkbox;
    use rmcp_guard::tool_router;
    use rmcp_guard::{
        Confirmed, Exposure, Guard, Guarded, Preview, ToolArgs, ToolError, destructive, exposed,
    };
    use schemars::JsonSchema;
    use serde::Deserialize;
    use tokio::sync::Notify;

    #[derive(Clone)]
    pub struct Gated {
        guard: Arc<Guard>,
        previews: Arc<AtomicUsize>,
        pub rechecking: Arc<Notify>,
        pub resume: Arc<Notify>,
        pub ran: Arc<AtomicBool>,
    }

    impl Gated {
        pub fn new() -> Self {
            Self {
                guard: Arc::new(
                    Guard::ephemeral()
                        .expect("guard key")
                        .with_exposure(Exposure::all_tools()),
                ),
                previews: Default::default(),
                rechecking: Default::default(),
                resume: Default::default(),
                ran: Default::default(),
            }
        }

        async fn preview_wipe(&self, args: &WipeArgs) -> Result<Preview, ToolError> {
            if self.previews.fetch_add(1, Ordering::SeqCst) == 1 {
                self.rechecking.notify_one();
                self.resume.notified().await;
            }
            Ok(Preview::effect(
                &args.cache,
                format!("Wipe cache {}", args.cache),
            ))
        }
    }

    impl Guarded for Gated {
        fn guard(&self) -> &Guard {
            &self.guard
        }
    }

    #[derive(Deserialize, JsonSchema, ToolArgs)]
    pub struct WipeArgs {
        /// Name of the cache.
        cache: String,
    }

    #[tool_router]
    impl Gated {
        /// Wipe a cache.
        #[destructive(confirm = "checkbox", preview = Self::preview_wipe)]
        #[tool]
        async fn wipe(
            &self,
            Parameters(args): Parameters<WipeArgs>,
            _confirmed: Confirmed<Checkbox>,
        ) -> Result<String, ToolError> {
            self.ran.store(true, Ordering::SeqCst);
            Ok(format!("Wiped {}", args.cache))
        }
    }

    #[tool_handler(router = exposed(self, Self::tool_router))]
    impl ServerHandler for Gated {}
}

#[tokio::test]
async fn call_cancelled_between_the_accept_and_the_body_never_runs() {
    use rmcp::ServiceExt;
    let (_audit, mut events) = audit_events();
    let server = gated::Gated::new();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let serving = server.clone();
    tokio::spawn(async move {
        if let Ok(running) = serving.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let human = ScriptedHuman::new(PUSH);
    human.will(Answer::Accept(json!({"confirm": true})));
    let client = human
        .clone()
        .connect(client_io)
        .await
        .expect("client connects");

    let request = rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(
        params("wipe", json!({"cache": "thumbnails"})),
    ));
    let call = client
        .peer()
        .send_cancellable_request(request, rmcp::service::PeerRequestOptions::no_options())
        .await
        .expect("tools/call sent");
    // The human has accepted; the re-check's preview is running.
    server.rechecking.notified().await;
    call.cancel(Some("the user pressed stop".to_owned()))
        .await
        .expect("notifications/cancelled sent");
    // The server reads its input in order: once a later request is answered, the
    // cancellation has been applied to the waiting call.
    client.list_tools(None).await.expect("tools/list");
    server.resume.notify_one();

    assert_eq!(
        next_outcome(&mut events, "wipe").await,
        Outcome::CancelledByClient
    );
    assert!(
        !server.ran.load(std::sync::atomic::Ordering::SeqCst),
        "the body ran"
    );
    assert_eq!(human.shown().len(), 1);
    let _ = client.cancel().await;
}
