//! Batch operations on both protocol eras, in process: safe-ops' `delete_files` offers the
//! files a glob matches, the human picks some, and only those go. Covers the question, the
//! cap, an empty pick, a pick that was never offered, a file swapped while the human looked,
//! the per-item report and the per-item audit records.

use std::path::Path;

use crate::support::*;
use rmcp::model::{CallToolResponse, InputRequest, InputResponses};
use rmcp_guard::outcome::Outcome;
use rmcp_guard::{
    Exposure, Guard,
    audit::{AuditLog, story},
    batch::ItemOutcome,
    ops::SqliteStore,
};
use rmcp_guard_test::testing::{Answer, INPUT_KEY, ScriptedHuman};
use serde_json::{Value, json};

const LOGS: [&str; 3] = ["logs/a.log", "logs/b.log", "logs/c.log"];

/// `logs/{a,b,c}.log` and `logs/keep.txt` in a fresh world.
fn logs() -> World {
    let world = World::new();
    std::fs::create_dir_all(world.path("logs")).unwrap();
    for name in LOGS {
        std::fs::write(world.path(name), format!("{name}\n")).unwrap();
    }
    std::fs::write(world.path("logs/keep.txt"), "keep\n").unwrap();
    world
}

fn pick(keys: &[&str]) -> Answer {
    Answer::Accept(json!({"items": keys}))
}

fn structured(result: &rmcp::model::CallToolResult) -> &Value {
    result
        .structured_content
        .as_ref()
        .unwrap_or_else(|| panic!("no structuredContent: {}", text(result)))
}

/// Each picked item's key and outcome, from `structuredContent`.
fn outcomes(result: &rmcp::model::CallToolResult) -> Vec<(String, String)> {
    structured(result)["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| {
            (
                i["key"].as_str().unwrap().to_owned(),
                i["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(k, o)| ((*k).to_owned(), (*o).to_owned()))
        .collect()
}

async fn picks_a_subset_and_audits_each_item(era: rmcp::model::ProtocolVersion) {
    let world = logs();
    let log = AuditLog::new(
        SqliteStore::open(world.base.join("audit.db")).unwrap(),
        "batch test",
    );
    let server = world.server_with(
        Guard::ephemeral()
            .unwrap()
            .with_exposure(Exposure::all_tools())
            .with_audit(log.clone()),
    );
    let guard = server.guard_config().clone();
    let human = ScriptedHuman::new(era.clone());
    human.will(pick(&["logs/c.log", "logs/a.log"]));
    let client = connect(server, human.clone()).await;

    let result = call(&client, "delete_files", json!({"pattern": "logs/*.log"})).await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(world.file("logs/a.log"), None);
    assert_eq!(world.file("logs/b.log").as_deref(), Some("logs/b.log\n"));
    assert_eq!(world.file("logs/c.log"), None);
    assert_eq!(world.file("logs/keep.txt").as_deref(), Some("keep\n"));
    assert_eq!(
        outcomes(&result),
        pairs(&[("logs/a.log", "done"), ("logs/c.log", "done")])
    );
    assert_eq!(structured(&result)["offered"], 3);
    assert_eq!(structured(&result)["done"], 2);
    assert!(
        text(&result).starts_with("2 of 2 picked items done, 0 skipped"),
        "{}",
        text(&result)
    );
    assert!(text(&result).contains("1 offered item was not picked and was not touched."));

    let [shown] = &human.shown()[..] else {
        panic!("one question: {:?}", human.shown());
    };
    assert!(
        shown.message.starts_with(
            "3 items match `logs/*.log`. Each picked file is deleted. This cannot be undone."
        ),
        "{}",
        shown.message
    );
    let titles: Vec<Value> = LOGS
        .iter()
        .map(|k| json!({"const": k, "title": format!("{k} ({} bytes)", k.len() + 1)}))
        .collect();
    assert_eq!(
        shown.schema,
        json!({
            "type": "object",
            "properties": {"items": {
                "type": "array",
                "title": "Items",
                "description": "Pick any of the 3 items.",
                "items": {"anyOf": titles},
            }},
        })
    );

    guard.audit_settled().await;
    let trace = trace_id(&result).expect("trace id");
    let records = log.by_trace(&trace).await.unwrap();
    let entries: Vec<Value> = records
        .iter()
        .map(|r| serde_json::from_str(&r.entry).unwrap())
        .collect();
    let outcome = |e: &Value| Outcome::parse(e["outcome"].as_str().unwrap());
    let done = Some(Outcome::Item(ItemOutcome::Done));
    let items: Vec<(Option<Outcome>, &str)> = entries
        .iter()
        .filter(|e| matches!(outcome(e), Some(Outcome::Item(_))))
        .map(|e| (outcome(e), e["key"].as_str().unwrap()))
        .collect();
    assert_eq!(items, [(done, "logs/a.log"), (done, "logs/c.log")]);
    // The confirmation is in the log before any item's effect.
    let order: Vec<Option<Outcome>> = entries
        .iter()
        .map(outcome)
        .filter(|o| *o != Some(Outcome::Asked))
        .collect();
    let accepted = Some(Outcome::Accepted);
    let executed = Some(Outcome::Executed);
    assert_eq!(order, [accepted, done, done, executed]);
    let call_record = entries.last().unwrap();
    assert_eq!(outcome(call_record), executed);
    assert_eq!(call_record["tool"], "delete_files");
    assert_eq!(call_record["target"], "`logs/*.log`");
    assert_eq!(
        call_record["answer"],
        json!({"items": ["logs/a.log", "logs/c.log"]})
    );
    assert_eq!(
        call_record["items"],
        json!({"offered": 3, "picked": 2, "done": 2, "skipped": 0, "failed": 0})
    );
    let story = story(records.iter().map(|r| r.entry.as_str()));
    assert!(story.contains("delete_files item_done"), "{story}");
    assert!(story.contains("    key: logs/c.log\n"), "{story}");
    assert!(story.contains("delete_files executed"), "{story}");
}

async fn a_file_swapped_while_the_human_looks_is_skipped(era: rmcp::model::ProtocolVersion) {
    let world = logs();
    let swapped = world.path("logs/b.log");
    let human = ScriptedHuman::new(era.clone());
    human.will(pick(&LOGS));
    // Another file under the same name, with the same size: only its identity differs.
    let observer = Observer::new(human).while_asked(move || {
        std::fs::remove_file(&swapped).unwrap();
        std::fs::write(&swapped, "logs/B.log\n").unwrap();
    });
    let client = connect(world.server(), observer).await;

    let result = call(&client, "delete_files", json!({"pattern": "logs/*.log"})).await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(
        outcomes(&result),
        pairs(&[
            ("logs/a.log", "done"),
            ("logs/c.log", "done"),
            ("logs/b.log", "skipped"),
        ])
    );
    assert_eq!(world.file("logs/a.log"), None);
    assert_eq!(world.file("logs/c.log"), None);
    assert_eq!(world.file("logs/b.log").as_deref(), Some("logs/B.log\n"));
    assert!(
        text(&result).contains("- skipped: logs/b.log (11 bytes) — changed after the user picked it, so it was left alone."),
        "{}",
        text(&result)
    );
}

async fn more_items_than_the_cap_asks_nobody(era: rmcp::model::ProtocolVersion) {
    let world = World::new();
    std::fs::create_dir_all(world.path("many")).unwrap();
    for i in 0..21 {
        std::fs::write(world.path(&format!("many/{i:02}.tmp")), "x").unwrap();
    }
    let human = ScriptedHuman::new(era.clone());
    let client = connect(world.server(), human.clone()).await;

    let result = call(&client, "delete_files", json!({"pattern": "many/*.tmp"})).await;
    assert_natural(&result, Outcome::TooMany);
    assert_eq!(
        text(&result),
        "21 items match `many/*.tmp`, more than the 20 one question may offer; nothing was changed and the user was not asked. Narrow the rule so that at most 20 items match, then call the tool again."
    );
    assert!(human.shown().is_empty(), "nobody was asked");
    assert_eq!(std::fs::read_dir(world.path("many")).unwrap().count(), 21);

    // Twenty is within the cap: asked.
    std::fs::remove_file(world.path("many/20.tmp")).unwrap();
    human.will(Answer::Decline);
    let result = call(&client, "delete_files", json!({"pattern": "many/*.tmp"})).await;
    assert_natural(&result, Outcome::Declined);
    assert_eq!(human.shown().len(), 1);
}

async fn nothing_matched_or_nothing_picked_changes_nothing(era: rmcp::model::ProtocolVersion) {
    let world = logs();
    let human = ScriptedHuman::new(era.clone());
    let client = connect(world.server(), human.clone()).await;

    let result = call(&client, "delete_files", json!({"pattern": "logs/*.gz"})).await;
    assert_natural(&result, Outcome::NothingMatched);
    assert_eq!(
        text(&result),
        "Nothing matches `logs/*.gz`; nothing was changed."
    );
    assert!(human.shown().is_empty());

    for empty in [json!({"items": []}), json!({})] {
        human.will(Answer::Accept(empty));
        let result = call(&client, "delete_files", json!({"pattern": "logs/*.log"})).await;
        assert_natural(&result, Outcome::NothingPicked);
        assert_eq!(
            text(&result),
            "The user picked none of the 3 offered items; nothing was changed."
        );
    }
    for name in LOGS {
        assert!(world.file(name).is_some(), "{name} is kept");
    }
}

async fn a_pick_that_was_not_offered_is_refused(era: rmcp::model::ProtocolVersion) {
    let world = logs();
    let human = ScriptedHuman::new(era.clone());
    let client = connect(world.server(), human.clone()).await;
    for (answer, reason) in [
        (
            json!({"items": ["logs/a.log", "logs/keep.txt"]}),
            "`items` names \"logs/keep.txt\", which was not offered",
        ),
        (
            json!({"items": ["logs/a.log", "logs/a.log"]}),
            "`items` names \"logs/a.log\" twice",
        ),
        (
            json!({"items": ["logs/a.log"], "confirm": true}),
            "the answer has a field `confirm` the question did not ask for",
        ),
    ] {
        human.will(Answer::Accept(answer));
        let result = call(&client, "delete_files", json!({"pattern": "logs/*.log"})).await;
        assert_refused(
            &result,
            rmcp_guard::Code::InvalidConfirmation,
            Outcome::InvalidAnswer,
        );
        assert_eq!(
            text(&result),
            format!(
                "[INVALID_CONFIRMATION] Nothing was changed: {reason}. Call the tool again to be asked afresh."
            )
        );
    }
    for name in LOGS.iter().chain(&["logs/keep.txt"]) {
        assert!(world.file(name).is_some(), "{name} is kept");
    }
}

both_eras!(
    picks_a_subset_and_audits_each_item,
    a_file_swapped_while_the_human_looks_is_skipped,
    more_items_than_the_cap_asks_nobody,
    nothing_matched_or_nothing_picked_changes_nothing,
    a_pick_that_was_not_offered_is_refused,
);

/// The first MRTR round of `delete_files`: its sealed state.
async fn first_round(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ScriptedHuman>,
    pattern: &str,
) -> String {
    let response = call_once(client, params("delete_files", json!({"pattern": pattern}))).await;
    let CallToolResponse::InputRequired(required) = response else {
        panic!("expected InputRequired, got {response:?}");
    };
    let requests = required.input_requests.expect("input requests");
    assert!(matches!(
        requests.get(INPUT_KEY),
        Some(InputRequest::Elicitation(_))
    ));
    required.request_state.expect("requestState")
}

async fn retry(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ScriptedHuman>,
    pattern: &str,
    state: &str,
    picks: &[&str],
) -> rmcp::model::CallToolResult {
    let answer = json!({"action": "accept", "content": {"items": picks}});
    let params = params("delete_files", json!({"pattern": pattern}))
        .with_request_state(state)
        .with_input_responses(InputResponses::from([(INPUT_KEY.to_owned(), answer)]));
    complete(call_once(client, params).await)
}

fn exists(world: &World, name: &str) -> bool {
    Path::new(&world.path(name)).is_file()
}

#[tokio::test]
async fn an_mrtr_retry_is_judged_against_the_sealed_offer() {
    let world = logs();
    let client = connect(world.server(), ScriptedHuman::new(MRTR)).await;

    // A file that starts to match after the question was asked was never offered.
    let state = first_round(&client, "logs/*.log").await;
    std::fs::write(world.path("logs/d.log"), "new\n").unwrap();
    let widened = retry(&client, "logs/*.log", &state, &["logs/a.log", "logs/d.log"]).await;
    assert_refused(
        &widened,
        rmcp_guard::Code::InvalidConfirmation,
        Outcome::InvalidAnswer,
    );
    assert!(text(&widened).contains("\"logs/d.log\", which was not offered"));
    assert!(exists(&world, "logs/a.log") && exists(&world, "logs/d.log"));

    // Now 22 files match, above the cap; the sealed offer of four still decides the answer.
    let state = first_round(&client, "logs/*.log").await;
    for i in 0..18 {
        std::fs::write(world.path(&format!("logs/x{i:02}.log")), "x").unwrap();
    }
    let done = retry(&client, "logs/*.log", &state, &["logs/d.log"]).await;
    assert_natural(&done, Outcome::Executed);
    assert_eq!(outcomes(&done), pairs(&[("logs/d.log", "done")]));
    assert!(!exists(&world, "logs/d.log") && exists(&world, "logs/a.log"));
    assert_eq!(structured(&done)["offered"], 4);

    // The state is bound to the pattern: another pattern cannot reuse it.
    let state = first_round(&client, "logs/a.log").await;
    let moved = retry(&client, "logs/*.log", &state, &["logs/a.log"]).await;
    assert_refused(&moved, rmcp_guard::Code::InvalidState, Outcome::BadState);
    // And it is used once.
    let once = retry(&client, "logs/a.log", &state, &[]).await;
    assert_natural(&once, Outcome::NothingPicked);
    let again = retry(&client, "logs/a.log", &state, &["logs/a.log"]).await;
    assert_refused(&again, rmcp_guard::Code::InvalidState, Outcome::Replayed);
    assert!(exists(&world, "logs/a.log"));
}

#[tokio::test]
async fn a_pick_of_a_file_gone_before_the_effect_is_skipped_not_failed() {
    let world = logs();
    let human = ScriptedHuman::new(PUSH);
    human.will(pick(&["logs/a.log", "logs/b.log"]));
    let gone = world.path("logs/b.log");
    let observer = Observer::new(human).while_asked(move || std::fs::remove_file(&gone).unwrap());
    let client = connect(world.server(), observer).await;

    let result = call(&client, "delete_files", json!({"pattern": "logs/*.log"})).await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(
        outcomes(&result),
        pairs(&[("logs/a.log", "done"), ("logs/b.log", "skipped")])
    );
    assert!(
        text(&result).contains(
            "- skipped: logs/b.log (11 bytes) — no longer among the items `logs/*.log` selects"
        ),
        "{}",
        text(&result)
    );
}

#[tokio::test]
async fn patterns_that_leave_the_root_are_refused_before_anyone_is_asked() {
    let world = logs();
    let human = ScriptedHuman::new(PUSH);
    let client = connect(world.server(), human.clone()).await;
    for pattern in ["../*", "/etc/*", "logs/**/*.log"] {
        let result = call(&client, "delete_files", json!({"pattern": pattern})).await;
        assert_refused(
            &result,
            rmcp_guard::Code::InvalidInput,
            Outcome::PreviewFailed,
        );
        assert!(
            !text(&result).contains(&*world.base.to_string_lossy()),
            "{}",
            text(&result)
        );
    }
    assert!(human.shown().is_empty());
    assert!(world.outside.is_file());
}

#[tokio::test]
async fn nothing_is_deleted_unless_the_confirmation_is_in_the_log_first() {
    for era in [PUSH, MRTR] {
        let world = logs();
        let path = world.base.join("audit.db");
        let log = AuditLog::new(SqliteStore::open(&path).unwrap(), "batch test");
        let server = world.server_with(
            Guard::ephemeral()
                .unwrap()
                .with_exposure(Exposure::all_tools())
                .with_audit(log),
        );
        let human = ScriptedHuman::new(era.clone());
        human.will(pick(&LOGS));
        let client = connect(server, human).await;
        // The disk is full: every insert into the log fails.
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(
                "CREATE TRIGGER full_disk BEFORE INSERT ON guard_audit_log
                 BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;",
            )
            .unwrap();

        let result = call(&client, "delete_files", json!({"pattern": "logs/*.log"})).await;
        assert_refused(&result, rmcp_guard::Code::Unavailable, Outcome::AuditFailed);
        for name in LOGS {
            assert!(world.file(name).is_some(), "{era:?}: {name} is kept");
        }
    }
}

/// A batch tool of its own: a fixed list of keys, a cap of two.
mod own {
    use std::sync::{Arc, Mutex};

    use rmcp::{handler::server::wrapper::Parameters, tool, tool_handler};
    use rmcp_guard::tool_router;
    use rmcp_guard::{
        Exposure, Guard, Guarded, ToolArgs, ToolError,
        batch::{Batch, Item, Picked, Report},
        destructive, exposed,
    };
    use schemars::JsonSchema;
    use serde::Deserialize;

    #[derive(Clone)]
    pub struct Keys {
        guard: Arc<Guard>,
        pub touched: Arc<Mutex<Vec<String>>>,
    }

    impl Keys {
        pub fn new() -> Self {
            let guard = Guard::ephemeral()
                .unwrap()
                .with_exposure(Exposure::all_tools());
            Self {
                guard: Arc::new(guard),
                touched: Arc::default(),
            }
        }

        async fn preview(&self, args: &KeysArgs) -> Result<Batch, ToolError> {
            let mut batch = Batch::new(format!("`{}`", args.keys), "Each picked key is removed.");
            for key in args.keys.split(',') {
                batch = batch.item(Item::new(key, format!("key {key}")));
            }
            Ok(batch)
        }
    }

    impl Guarded for Keys {
        fn guard(&self) -> &Guard {
            &self.guard
        }
    }

    #[derive(Deserialize, JsonSchema, ToolArgs)]
    pub struct KeysArgs {
        /// Comma-separated keys.
        keys: String,
    }

    #[tool_router]
    impl Keys {
        /// Remove picked keys.
        #[destructive(batch, max_items = 2, preview = Self::preview)]
        #[tool]
        async fn remove_keys(
            &self,
            Parameters(_args): Parameters<KeysArgs>,
            picked: Picked,
        ) -> Report {
            let touched = &self.touched;
            picked
                .act(|item| async move {
                    touched.lock().unwrap().push(item.key().to_owned());
                    Ok(format!("removed {}", item.key()))
                })
                .await
        }
    }

    #[tool_handler(router = exposed(self, Self::tool_router))]
    impl rmcp::ServerHandler for Keys {}
}

#[tokio::test]
async fn the_tools_own_cap_holds_and_duplicate_keys_are_never_offered() {
    let server = own::Keys::new();
    let touched = server.touched.clone();
    let human = ScriptedHuman::new(PUSH);
    let client = connect(server, human.clone()).await;

    let over = call(&client, "remove_keys", json!({"keys": "a,b,c"})).await;
    assert_natural(&over, Outcome::TooMany);
    assert!(
        text(&over).starts_with("3 items match `a,b,c`, more than the 2 one question may offer")
    );

    let twice = call(&client, "remove_keys", json!({"keys": "a,a"})).await;
    assert_refused(
        &twice,
        rmcp_guard::Code::InvalidState,
        Outcome::Misconfigured,
    );
    assert!(
        text(&twice).contains("offered one item twice"),
        "{}",
        text(&twice)
    );
    assert!(human.shown().is_empty(), "nobody was asked");

    human.will(pick(&["b"]));
    let done = call(&client, "remove_keys", json!({"keys": "a,b"})).await;
    assert_natural(&done, Outcome::Executed);
    assert_eq!(
        *touched.lock().unwrap(),
        ["b"],
        "the unpicked key is never handed to the handler"
    );
}
