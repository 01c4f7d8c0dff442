//! A tool with `defer` does not run when the human confirms: guard stores the call, the
//! question and the answer say when it runs and how to withdraw it, and a runner runs it
//! once when due, with what the human accepted, after re-running the preview. A withdrawal
//! before then is recorded and nothing runs; someone else's withdrawal finds nothing; a
//! second withdrawal answers like the first; one after the run says it ran; a runner racing
//! a withdrawal has one winner, and the answers say which. What is due is the store's clock's
//! to say: no runner, however driven, runs a call before the time the human was told.
//! Real rmcp clients on both eras, the calls kept in SQLite.

use std::path::{Path, PathBuf};

use crate::support::{
    deferred::{Accounts, until},
    *,
};
use rmcp::model::{CallToolResult, ProtocolVersion};
use rmcp_guard::{Code, ops::SqliteStore, outcome::Outcome};
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use serde_json::{Value, json};

both_eras!(
    a_deferred_call_waits_then_runs_once_with_what_was_accepted,
    the_question_and_the_answer_state_the_schedule,
    withdrawn_before_due_never_runs_and_twice_answers_alike,
    another_person_cannot_withdraw_it,
    withdraw_after_the_run_says_it_ran,
    a_target_changed_before_due_is_state_changed_and_nothing_runs,
    a_restart_between_confirm_and_run_runs_it_once,
    a_runner_racing_a_withdrawal_has_one_winner,
    no_runner_runs_a_call_before_its_due_time,
    a_withdrawal_the_allowlist_hides_is_never_promised,
);

/// `withdraw` is published beside the deferred tool, honestly annotated, and filtered by
/// the same exposure: an allowlist that does not list it, or read-only mode, hides it.
#[tokio::test]
async fn withdraw_is_published_with_the_tool_and_filtered_like_it() {
    let dir = tempfile::tempdir().expect("dir");
    let (path, store) = store_at(dir.path()).await;
    let server = Accounts::new(store, "acme", "alice");
    let client = connect(server.clone(), ScriptedHuman::new(PUSH)).await;
    assert_eq!(
        tool_names(&client).await,
        ["close_account", "close_account_soon", "withdraw"]
    );
    let tools = client.list_all_tools().await.expect("tools/list");
    let withdraw = tools
        .iter()
        .find(|t| t.name == "withdraw")
        .expect("withdraw");
    let hints = withdraw.annotations.clone().expect("annotations");
    assert_eq!(
        (
            hints.read_only_hint,
            hints.destructive_hint,
            hints.idempotent_hint,
            hints.open_world_hint
        ),
        (Some(false), Some(false), Some(true), Some(false)),
        "it writes a status, only ever stops an effect, answers a repeat alike, and stays inside"
    );
    let _ = client.cancel().await;

    let listed = dir.path().join("allowlist.toml");
    std::fs::write(
        &listed,
        "tools = [\"close_account\", \"close_account_soon\"]\n",
    )
    .expect("allowlist");
    let only_the_tool = Accounts::exposed_by(
        open(path.clone()).await,
        "acme",
        "alice",
        Accounts::ledger(),
        rmcp_guard::Exposure::allowlist(&listed),
    );
    let client = connect(only_the_tool, ScriptedHuman::new(PUSH)).await;
    assert_eq!(
        tool_names(&client).await,
        ["close_account", "close_account_soon"]
    );
    let error = call_error(&client, "withdraw", json!({"operation_id": "x"})).await;
    assert_eq!(error.code.0, -32602, "{error:?}");
    let _ = client.cancel().await;

    let read_only = Accounts::exposed_by(
        open(path).await,
        "acme",
        "alice",
        Accounts::ledger(),
        rmcp_guard::Exposure::all_tools().read_only(true),
    );
    let client = connect(read_only, ScriptedHuman::new(PUSH)).await;
    assert!(tool_names(&client).await.is_empty(), "both write");
    let _ = client.cancel().await;
}

/// A fresh SQLite store in its own directory.
async fn store_at(dir: &Path) -> (PathBuf, SqliteStore) {
    let path = dir.join("operations.db");
    (path.clone(), open(path).await)
}

/// Another opener of the store at `path` (another process's), opened off the runtime.
async fn open(path: PathBuf) -> SqliteStore {
    tokio::task::spawn_blocking(move || SqliteStore::open(&path))
        .await
        .expect("opener")
        .expect("operation store")
}

/// `close_account_soon` of `account` (due two seconds after the human confirms) as the
/// server's person, the human giving `reason`; the result and what the human was shown.
async fn close(
    server: &Accounts,
    era: &ProtocolVersion,
    account: &str,
    reason: &str,
) -> (CallToolResult, ScriptedHuman) {
    close_with(server, era, "close_account_soon", account, reason).await
}

/// `tool` of `account` as the server's person, the human giving `reason`; the result and
/// what the human was shown.
async fn close_with(
    server: &Accounts,
    era: &ProtocolVersion,
    tool: &str,
    account: &str,
    reason: &str,
) -> (CallToolResult, ScriptedHuman) {
    let human = ScriptedHuman::new(era.clone());
    human.will(Answer::Accept(json!({"reason": reason})));
    let client = connect(server.clone(), human.clone()).await;
    let result = call(&client, tool, json!({"account": account})).await;
    let _ = client.cancel().await;
    (result, human)
}

/// `withdraw` of `id` on `server`.
async fn withdraw(server: &Accounts, era: &ProtocolVersion, id: &str) -> CallToolResult {
    let client = connect(server.clone(), ScriptedHuman::new(era.clone())).await;
    let result = call(&client, "withdraw", json!({"operation_id": id})).await;
    let _ = client.cancel().await;
    result
}

/// The call's id and due time, from guard's tag on the scheduling result. The tag names
/// the second; the due time is within it, so once the clock passed the second's last
/// millisecond a runner finds the call due.
fn scheduled(result: &CallToolResult) -> (String, i64) {
    let meta = serde_json::to_value(&result.meta).expect("meta");
    let id = meta["guard"]["operationId"]
        .as_str()
        .unwrap_or_else(|| panic!("the result names no deferred call: {meta}"))
        .to_owned();
    let due = meta["guard"]["dueAt"].as_str().expect("dueAt");
    (id, ms(due) + 999)
}

/// RFC 3339 as ms since the Unix epoch.
fn ms(text: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|e| panic!("{text} is not an RFC 3339 time: {e}"))
        .timestamp_millis()
}

fn structured(result: &CallToolResult) -> Value {
    result.structured_content.clone().unwrap_or(Value::Null)
}

async fn a_deferred_call_waits_then_runs_once_with_what_was_accepted(era: ProtocolVersion) {
    let dir = tempfile::tempdir().expect("dir");
    let (_, store) = store_at(dir.path()).await;
    let server = Accounts::new(store, "acme", "alice");
    let (result, _) = close(&server, &era, "checking", "moving banks").await;
    assert_natural(&result, Outcome::Scheduled);
    let (_, due) = scheduled(&result);
    assert_eq!(server.balance("checking"), Some(100), "nothing ran yet");
    assert!(server.closings().is_empty());

    assert_eq!(server.run_due().await, 0, "not due yet");
    assert_eq!(server.balance("checking"), Some(100));

    until(due).await;
    assert_eq!(server.run_due().await, 1, "due: it runs");
    assert_eq!(server.balance("checking"), None);
    assert_eq!(
        server.closings(),
        [("checking".to_owned(), "moving banks".to_owned())],
        "with the reason the human gave"
    );
    assert_eq!(server.run_due().await, 0, "once");
    assert_eq!(server.closings().len(), 1);
}

async fn the_question_and_the_answer_state_the_schedule(era: ProtocolVersion) {
    let dir = tempfile::tempdir().expect("dir");
    let (_, store) = store_at(dir.path()).await;
    let server = Accounts::new(store, "acme", "alice");
    let (result, human) = close_with(&server, &era, "close_account", "savings", "fraud").await;
    let shown = human.shown();
    assert_eq!(shown.len(), 1, "{shown:?}");
    let message = &shown[0].message;
    assert!(
        message.contains("Close savings (balance 2500).\n\nThis does not happen now: it runs at "),
        "{message}"
    );
    assert!(
        message.contains(
            " UTC at the earliest, and until then it can be withdrawn with withdraw, and then nothing happens. This cannot be undone."
        ),
        "{message}"
    );
    let (id, due) = scheduled(&result);
    let said = text(&result);
    assert!(said.starts_with("Scheduled for "), "{said}");
    assert!(
        said.contains(&format!(
            ": close_account on savings runs then, not now. To withdraw it, call withdraw with operation_id {id} before "
        )),
        "{said}"
    );
    let body = structured(&result);
    assert_eq!(body["status"], "SCHEDULED");
    assert_eq!(body["operation_id"], id.as_str());
    assert_eq!(ms(body["due_at"].as_str().unwrap()) + 999, due);
    // The question's time is no later than the due time: withdrawing until then works.
    let asked_at = message
        .split("it runs at ")
        .nth(1)
        .and_then(|rest| rest.split(" UTC").next())
        .expect("a time in the question");
    let minute = ms(&format!("{}:00Z", asked_at.replace(' ', "T")));
    assert!(minute <= due, "{asked_at} vs {due}");
    assert!(
        due - minute < 3 * 60_000,
        "about two minutes from the question"
    );
}

async fn withdrawn_before_due_never_runs_and_twice_answers_alike(era: ProtocolVersion) {
    let dir = tempfile::tempdir().expect("dir");
    let (_, store) = store_at(dir.path()).await;
    let server = Accounts::new(store, "acme", "alice");
    let (result, _) = close(&server, &era, "checking", "typo").await;
    let (id, due) = scheduled(&result);
    let first = withdraw(&server, &era, &id).await;
    assert_natural(&first, Outcome::Withdrawn);
    assert_eq!(
        text(&first),
        "Withdrawn: close_account_soon on checking will not run."
    );
    assert_eq!(structured(&first)["status"], "WITHDRAWN");

    until(due).await;
    assert_eq!(server.run_due().await, 0, "nothing to run");
    assert_eq!(server.balance("checking"), Some(100));
    assert!(server.closings().is_empty());

    let again = withdraw(&server, &era, &id).await;
    assert_natural(&again, Outcome::AlreadyWithdrawn);
    assert!(
        text(&again).starts_with("Already withdrawn at "),
        "{}",
        text(&again)
    );
    assert_eq!(structured(&again)["status"], "WITHDRAWN");
    assert_eq!(server.run_due().await, 0);
    assert!(server.closings().is_empty());
}

async fn another_person_cannot_withdraw_it(era: ProtocolVersion) {
    let dir = tempfile::tempdir().expect("dir");
    let (path, store) = store_at(dir.path()).await;
    let server = Accounts::new(store, "acme", "alice");
    let (result, _) = close(&server, &era, "checking", "typo").await;
    let (id, due) = scheduled(&result);
    // Another user of the tenant, and the same user name in another tenant.
    for (tenant, user) in [("acme", "mallory"), ("other", "alice")] {
        let other = server.as_person(open(path.clone()).await, tenant, user);
        let refused = withdraw(&other, &era, &id).await;
        assert_refused(
            &refused,
            Code::OperationNotFound,
            Outcome::Refused(Code::OperationNotFound),
        );
        assert!(
            text(&refused).contains("no deferred call"),
            "{}",
            text(&refused)
        );
        let unknown = withdraw(&other, &era, "no-such-call").await;
        assert_eq!(
            text(&unknown).replace("no-such-call", &id),
            text(&refused),
            "indistinguishable from an unknown id"
        );
    }
    until(due).await;
    assert_eq!(server.run_due().await, 1, "still scheduled: it runs");
    assert_eq!(server.balance("checking"), None);
}

async fn withdraw_after_the_run_says_it_ran(era: ProtocolVersion) {
    let dir = tempfile::tempdir().expect("dir");
    let (_, store) = store_at(dir.path()).await;
    let server = Accounts::new(store, "acme", "alice");
    let (result, _) = close(&server, &era, "checking", "done").await;
    let (id, due) = scheduled(&result);
    until(due).await;
    assert_eq!(server.run_due().await, 1);
    let late = withdraw(&server, &era, &id).await;
    assert_refused(&late, Code::AlreadyRan, Outcome::Refused(Code::AlreadyRan));
    assert!(text(&late).contains("it ran at "), "{}", text(&late));
    let body = structured(&late);
    assert_eq!(body["status"], "RAN");
    assert_eq!(body["result"]["content"][0]["text"], "Closed checking.");
    assert_eq!(
        server.closings().len(),
        1,
        "withdrawing did not run it again"
    );
}

async fn a_target_changed_before_due_is_state_changed_and_nothing_runs(era: ProtocolVersion) {
    let dir = tempfile::tempdir().expect("dir");
    let (_, store) = store_at(dir.path()).await;
    let server = Accounts::new(store, "acme", "alice");
    let (result, _) = close(&server, &era, "savings", "empty").await;
    let (id, due) = scheduled(&result);
    // A deposit after the human saw "balance 2500": not what they agreed to close.
    server
        .balances
        .lock()
        .unwrap()
        .insert("savings".into(), 9000);
    until(due).await;
    assert_eq!(server.run_due().await, 1, "the call ends");
    assert_eq!(server.balance("savings"), Some(9000), "nothing ran");
    assert!(server.closings().is_empty());
    assert_eq!(server.run_due().await, 0, "and is not tried again");
    let late = withdraw(&server, &era, &id).await;
    assert_refused(&late, Code::AlreadyRan, Outcome::Refused(Code::AlreadyRan));
    assert_eq!(structured(&late)["status"], "STATE_CHANGED");
    assert!(
        text(&late).contains("did not run, because savings changed"),
        "{}",
        text(&late)
    );
}

async fn a_restart_between_confirm_and_run_runs_it_once(era: ProtocolVersion) {
    let dir = tempfile::tempdir().expect("dir");
    let (path, store) = store_at(dir.path()).await;
    let server = Accounts::new(store, "acme", "alice");
    let (result, _) = close(&server, &era, "checking", "restart").await;
    let (_, due) = scheduled(&result);
    let balances = server.balances.clone();
    drop(server);
    // A new process: a new guard (another key) on the same file and the same ledger.
    let reopened = open(path).await;
    let restarted = Accounts::on(reopened, "acme", "alice", balances);
    until(due).await;
    assert_eq!(restarted.run_due().await, 1);
    assert_eq!(restarted.balance("checking"), None);
    assert_eq!(
        restarted.closings(),
        [("checking".to_owned(), "restart".to_owned())]
    );
    assert_eq!(restarted.run_due().await, 0, "once");
}

async fn a_runner_racing_a_withdrawal_has_one_winner(era: ProtocolVersion) {
    for round in 0..4 {
        let dir = tempfile::tempdir().expect("dir");
        let (path, store) = store_at(dir.path()).await;
        let server = Accounts::new(store, "acme", "alice");
        let (result, _) = close(&server, &era, "checking", "race").await;
        let (id, due) = scheduled(&result);
        let runner = server.as_person(open(path).await, "acme", "alice");
        until(due).await;
        let (ran, withdrawn) = tokio::join!(
            async {
                if round % 2 == 0 {
                    tokio::task::yield_now().await;
                }
                runner.run_due().await
            },
            withdraw(&server, &era, &id)
        );
        match outcome(&withdrawn) {
            Some(Outcome::Withdrawn) => {
                assert_eq!(ran, 0, "withdrawn first: the runner ran nothing");
                assert_eq!(server.balance("checking"), Some(100));
                assert!(server.closings().is_empty());
            }
            Some(Outcome::Refused(Code::AlreadyRan)) => {
                assert_eq!(ran, 1, "ran first: the withdrawal says so");
                assert_eq!(structured(&withdrawn)["status"], "RAN");
                assert_eq!(server.balance("checking"), None);
                assert_eq!(server.closings().len(), 1);
            }
            other => panic!("{other:?}: {}", text(&withdrawn)),
        }
        assert_eq!(runner.run_due().await, 0);
    }
}

/// A call due in two minutes is run by no runner before then, however it is driven: passes
/// of this process's runner, of another process's on the same file, and a background runner
/// passing every few milliseconds all find nothing due, since the store's clock decides and
/// no caller passes a time. The call is still scheduled afterwards: its owner withdraws it.
async fn no_runner_runs_a_call_before_its_due_time(era: ProtocolVersion) {
    let dir = tempfile::tempdir().expect("dir");
    let (path, store) = store_at(dir.path()).await;
    let server = Accounts::new(store, "acme", "alice");
    let (result, _) = close_with(&server, &era, "close_account", "checking", "early?").await;
    assert_natural(&result, Outcome::Scheduled);
    let (id, _) = scheduled(&result);
    for _ in 0..3 {
        assert_eq!(server.run_due().await, 0, "a pass: not due");
    }
    let other = server.as_person(open(path).await, "acme", "alice");
    assert_eq!(other.run_due().await, 0, "another process's pass: not due");
    let runner = server.run_in_background(std::time::Duration::from_millis(5));
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    drop(runner);
    assert_eq!(server.balance("checking"), Some(100), "nothing ran");
    assert!(server.closings().is_empty());
    let withdrawn = withdraw(&server, &era, &id).await;
    assert_natural(&withdrawn, Outcome::Withdrawn);
}

/// With `withdraw` left out of the allowlist, nobody can call it: the question and the
/// answer say the call cannot be withdrawn, and it still waits for its time.
async fn a_withdrawal_the_allowlist_hides_is_never_promised(era: ProtocolVersion) {
    let dir = tempfile::tempdir().expect("dir");
    let (_, store) = store_at(dir.path()).await;
    let listed = dir.path().join("allowlist.toml");
    std::fs::write(&listed, "tools = [\"close_account\"]\n").expect("allowlist");
    let server = Accounts::exposed_by(
        store,
        "acme",
        "alice",
        Accounts::ledger(),
        rmcp_guard::Exposure::allowlist(&listed),
    );
    let (result, human) = close_with(&server, &era, "close_account", "savings", "fraud").await;
    assert_natural(&result, Outcome::Scheduled);
    let message = &human.shown()[0].message;
    assert!(
        message
            .contains(" UTC at the earliest, and it cannot be withdrawn. This cannot be undone."),
        "{message}"
    );
    assert!(!message.contains("withdrawn with"), "{message}");
    let said = text(&result);
    assert!(
        said.contains(": close_account on savings runs then, not now. It cannot be withdrawn: this server does not publish withdraw."),
        "{said}"
    );
    assert!(!said.contains("call withdraw"), "{said}");
    assert_eq!(server.balance("savings"), Some(2500), "nothing ran yet");
}
