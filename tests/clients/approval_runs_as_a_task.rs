//! On protocol 2026-07-28, a client that declares the MCP Tasks extension, calling a tool of
//! a server that serves guard's tasks, gets its page approval as a task: `input_required`
//! with the approval link while people decide, then `completed` with the tool's natural
//! result, the effect run once by the first `tasks/get` after the decision. The task is the
//! approval's rows in the store: it survives a restart and any replica serves it. Driven with
//! a real rmcp client on SQLite and PostgreSQL; every test counts the effects the handler
//! really ran.

use crate::support::approval as bench;

use std::{sync::Arc, time::Duration};

use bench::*;
use rmcp::{
    ServiceError,
    model::{
        CallToolResponse, CallToolResult, CancelTaskParams, ElicitRequestParams, GetTaskParams,
        GetTaskResult, InputRequest, TaskPayload, TaskStatus, UpdateTaskParams,
    },
};
use rmcp_guard::{
    audit::AuditLog,
    identity::Identity,
    ops::{OperationStore, SqliteStore},
    outcome::{ApprovalEvent, Outcome},
};
use rmcp_guard_test::testing::INPUT_KEY;
use safe_ops::visit;
use serde_json::{Value, json};

const KEY: &[u8] = b"one key shared by every replica and by the server after a restart";

/// A bench whose server serves guard's tasks and whose client declares them, on 2026-07-28,
/// keeping approvals in `store` under the shared key.
fn tasks_on(store: &Arc<dyn OperationStore>) -> Setup {
    Setup {
        key: Some(KEY.to_vec()),
        store: Some(store.clone()),
        round_wait: Some(Duration::from_secs(1)),
        server_tasks: true,
        client_tasks: true,
        ..Setup::new(MRTR)
    }
}

/// The task a call answered with.
fn task_of(response: CallToolResponse) -> rmcp::model::Task {
    match response {
        CallToolResponse::Task(created) => created.task,
        other => panic!("expected a task, got {other:?}"),
    }
}

async fn get(h: &Harness, id: &str) -> Result<GetTaskResult, ServiceError> {
    h.client.get_task(GetTaskParams::new(id)).await
}

/// The URL-mode elicitation a pending task asks for: (url, elicitation id, message).
fn link_of(task: &GetTaskResult) -> (String, String, String) {
    let TaskPayload::InputRequired { input_requests } = &task.task.payload else {
        panic!("expected input_required, got {task:?}");
    };
    assert_eq!(input_requests.len(), 1, "one input request");
    let Some(InputRequest::Elicitation(request)) = input_requests.get(INPUT_KEY) else {
        panic!("guard's input request is an elicitation under {INPUT_KEY}");
    };
    let ElicitRequestParams::UrlElicitationParams {
        url,
        elicitation_id,
        message,
        ..
    } = &request.params
    else {
        panic!("a URL-mode elicitation");
    };
    (url.clone(), elicitation_id.clone(), message.clone())
}

/// Starts `tool` on `environment` as a task; its id, its link and the link's CSRF token.
async fn opened(h: &Harness, tool: &str, environment: &str) -> (String, String, String) {
    let task = task_of(h.fresh(tool, environment).await);
    let (url, _, _) = link_of(&get(h, &task.task_id).await.unwrap());
    let csrf = visit::get(&url).await.unwrap().field("csrf").unwrap();
    (task.task_id, url, csrf)
}

async fn cancel(h: &Harness, id: &str) -> Result<(), ServiceError> {
    h.client.cancel_task(CancelTaskParams::new(id)).await
}

/// Polls task `id` until it reaches a terminal status.
async fn until_done(h: &Harness, id: &str) -> GetTaskResult {
    for _ in 0..300 {
        let task = get(h, id).await.expect("tasks/get");
        if task.task.status().is_terminal() {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("task {id} never ended");
}

/// The natural result a completed task carries.
fn completed(task: &GetTaskResult) -> CallToolResult {
    let TaskPayload::Completed { result } = &task.task.payload else {
        panic!("expected completed, got {task:?}");
    };
    serde_json::from_value(Value::Object(result.clone())).expect("a CallToolResult")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_waits_for_the_approvers_and_completes_with_the_natural_result() {
    let (store, _dir) = sqlite();
    let h = tasks_on(&store).start().await;
    let task = task_of(h.fresh("deploy", "production").await);
    assert_eq!(task.status, TaskStatus::InputRequired);
    assert_eq!(task.task_id.len(), 64, "the approval's id");
    assert!(task.ttl_ms.is_some() && task.poll_interval_ms.is_some());

    let pending = get(&h, &task.task_id).await.unwrap();
    let (url, id, message) = link_of(&pending);
    assert!(url.starts_with(&h.base), "{url}");
    assert_eq!(id, task.task_id);
    assert!(
        message.contains("2 people other than you must approve"),
        "{message}"
    );
    let said = pending.task.task.status_message.clone().unwrap();
    assert!(said.contains("0 of 2 approvals so far"), "{said}");
    // The requester's link is the page of this very approval.
    let page = visit::get(&url).await.unwrap().text();
    assert!(page.contains("Approvals: 0 of 2"), "{page}");

    visit::approve(&h.link("bob"), "production").await.unwrap();
    let half = get(&h, &task.task_id).await.unwrap();
    assert_eq!(link_of(&half).0, url, "the same link while pending");
    let said = half.task.task.status_message.clone().unwrap();
    assert!(said.contains("1 of 2"), "{said}");
    assert!(h.deployed().is_empty(), "nothing runs before the approvals");

    carol_completes(&h.link("carol")).await;
    let done = until_done(&h, &task.task_id).await;
    assert_eq!(done.task.status(), TaskStatus::Completed);
    let result = completed(&done);
    assert_eq!(outcome(&result), Some(Outcome::Executed), "{result:?}");
    assert!(text(&result).contains("Deployed release 2.4.1 to production"));
    assert_eq!(h.deployed(), [("production".to_owned(), TOKEN.len())]);

    // Polled again: the same result, and nothing runs again.
    let again = get(&h, &task.task_id).await.unwrap();
    assert_eq!(completed(&again), result);
    assert_eq!(h.deployed().len(), 1);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        h.completed.lock().unwrap().is_empty(),
        "2026-07-28 has no notifications/elicitation/complete"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_task_withdraws_its_approval_and_nothing_runs_after() {
    let (store, _dir) = sqlite();
    let audit_dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(
        SqliteStore::open(audit_dir.path().join("audit.db")).unwrap(),
        "task test",
    );
    // Approvals live in the store of the guard's log.
    let h = Setup {
        audit: Some(log.clone()),
        store: None,
        ..tasks_on(&store)
    }
    .start()
    .await;

    // Pending: cancelled, withdrawn, and a decision after it is refused.
    let (task, url, csrf) = opened(&h, "restart", "web").await;
    cancel(&h, &task).await.unwrap();
    let cancelled = get(&h, &task).await.unwrap();
    assert_eq!(cancelled.task.status(), TaskStatus::Cancelled);
    let said = cancelled.task.task.status_message.clone().unwrap();
    assert!(said.contains("nothing ran"), "{said}");
    let page = visit::get(&url).await.unwrap().text();
    assert!(page.contains("Withdrawn"), "{page}");
    let late = visit::post(&url, &[("csrf", &csrf), ("decision", "approve")])
        .await
        .unwrap();
    assert_eq!(late.status, 409, "{}", late.text());

    // Approved while nobody polled, then cancelled: it never runs, through the task or
    // through a later call of the requester.
    let approved = task_of(h.fresh("restart", "db").await);
    let (url, _, _) = link_of(&get(&h, &approved.task_id).await.unwrap());
    visit::approve(&url, "").await.unwrap();
    cancel(&h, &approved.task_id).await.unwrap();
    let after = get(&h, &approved.task_id).await.unwrap();
    assert_eq!(after.task.status(), TaskStatus::Cancelled, "{after:?}");
    let anew = task_of(h.fresh("restart", "db").await);
    assert_ne!(
        anew.task_id, approved.task_id,
        "the cancelled approval is not taken up"
    );
    assert!(h.deployed().is_empty(), "nothing ran");

    // Recorded like every withdrawal, with what ended it.
    h.guard.audit_settled().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    h.guard.audit_settled().await;
    let records: Vec<Value> = log
        .records()
        .await
        .unwrap()
        .iter()
        .filter_map(|r| r.json())
        .collect();
    let withdrawn: Vec<&Value> = records
        .iter()
        .filter(|r| {
            r["outcome"].as_str().and_then(Outcome::parse)
                == Some(Outcome::Approval(ApprovalEvent::Withdrawn))
        })
        .collect();
    for id in [&task, &approved.task_id] {
        let record = withdrawn
            .iter()
            .find(|r| r["approval_id"] == json!(id))
            .unwrap_or_else(|| panic!("no withdrawal of {id} in {withdrawn:?}"));
        assert_eq!(record["reason"], "tasks/cancel", "{record}");
        assert_eq!(record["user"], "alice", "{record}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declining_through_tasks_update_withdraws_and_accepting_changes_nothing() {
    let (store, _dir) = sqlite();
    let h = tasks_on(&store).start().await;
    let task = task_of(h.fresh("restart", "web").await);
    let answer = |action: &str| {
        UpdateTaskParams::new(
            task.task_id.clone(),
            [(INPUT_KEY.to_owned(), json!({"action": action}))].into(),
        )
    };
    h.client.update_task(answer("accept")).await.unwrap();
    let pending = get(&h, &task.task_id).await.unwrap();
    assert_eq!(pending.task.status(), TaskStatus::InputRequired);
    h.client.update_task(answer("decline")).await.unwrap();
    let declined = get(&h, &task.task_id).await.unwrap();
    assert_eq!(declined.task.status(), TaskStatus::Cancelled);
    assert!(h.deployed().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_task_completes_as_expired_and_runs_nothing() {
    let (store, _dir) = sqlite();
    let h = Setup {
        timeout: Duration::from_secs(2),
        ..tasks_on(&store)
    }
    .start()
    .await;
    let (task, url, csrf) = opened(&h, "restart", "web").await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let done = until_done(&h, &task).await;
    let result = completed(&done);
    assert_eq!(outcome(&result), Some(Outcome::Expired), "{result:?}");
    assert!(
        !result.is_error.unwrap_or(false),
        "an outcome, not an error"
    );
    assert!(text(&result).contains("expired"), "{}", text(&result));
    let late = visit::post(&url, &[("csrf", &csrf), ("decision", "approve")])
        .await
        .unwrap();
    assert_eq!(late.status, 410, "{}", late.text());
    assert_eq!(completed(&until_done(&h, &task).await), result);
    assert!(h.deployed().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_opened_before_a_restart_completes_on_the_restarted_server() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("guard.db");
    let process = || -> Arc<dyn OperationStore> { Arc::new(SqliteStore::open(&path).unwrap()) };
    let before = tasks_on(&process()).start().await;
    let task = task_of(before.fresh("restart", "web").await);
    let (first, _, _) = link_of(&get(&before, &task.task_id).await.unwrap());
    drop(before);

    let after = tasks_on(&process()).start().await;
    let pending = get(&after, &task.task_id).await.unwrap();
    let (url, _, _) = link_of(&pending);
    assert!(url.starts_with(&after.base), "{url}");
    assert_eq!(
        url.rsplit('/').next(),
        first.rsplit('/').next(),
        "the same link"
    );
    visit::approve(&url, "").await.unwrap();
    let result = completed(&until_done(&after, &task.task_id).await);
    assert_eq!(outcome(&result), Some(Outcome::Executed), "{result:?}");
    assert_eq!(after.deployed(), [("restart web".to_owned(), 0)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_opened_on_one_replica_is_polled_and_run_on_the_other() {
    let Some(url) = guard_tests::pg_url("the approval task replicas test") else {
        return;
    };
    let (store, admin, schema) = fresh_pg(&url, "guard_task").await;
    let (one, two) = (
        tasks_on(&store).start().await,
        tasks_on(&store).start().await,
    );
    let task = task_of(one.fresh("restart", "web").await);
    let (link, _, _) = link_of(&get(&two, &task.task_id).await.unwrap());
    assert!(link.starts_with(&two.base), "{link}");
    visit::approve(&link, "").await.unwrap();
    let result = completed(&until_done(&two, &task.task_id).await);
    assert_eq!(outcome(&result), Some(Outcome::Executed), "{result:?}");
    // The first replica answers the same ending, and runs nothing.
    assert_eq!(completed(&until_done(&one, &task.task_id).await), result);
    assert_eq!(two.deployed(), [("restart web".to_owned(), 0)]);
    assert!(one.deployed().is_empty());
    drop_pg(admin, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_requester_sees_or_cancels_a_task() {
    let (store, _dir) = sqlite();
    let h = tasks_on(&store).start().await;
    let task = task_of(h.fresh("restart", "web").await);
    let never = "0".repeat(64);
    let unknown = get(&h, &never).await.unwrap_err().to_string();
    assert!(unknown.contains("No such task"), "{unknown}");
    let strangers = [
        person("dave"),
        Identity::new("other-tenant", "alice", ["deploy"]),
        Identity::new("acme", "al\u{200b}ice", ["deploy"]),
    ];
    for stranger in strangers {
        h.as_identity(stranger.clone());
        let seen = get(&h, &task.task_id).await.unwrap_err().to_string();
        assert_eq!(seen, unknown, "{stranger:?} polling");
        let cancelled = cancel(&h, &task.task_id).await.unwrap_err().to_string();
        assert_eq!(cancelled, unknown, "{stranger:?} cancelling");
        let updated = h
            .client
            .update_task(UpdateTaskParams::new(
                task.task_id.clone(),
                [(INPUT_KEY.to_owned(), json!({"action": "decline"}))].into(),
            ))
            .await
            .unwrap_err()
            .to_string();
        assert_eq!(updated, unknown, "{stranger:?} declining");
    }
    // Other spellings of alice are alice; the task is untouched.
    h.as_identity(Identity::new("ACME", "\u{FF41}lice", ["deploy"]));
    let mine = get(&h, &task.task_id).await.unwrap();
    assert_eq!(mine.task.status(), TaskStatus::InputRequired);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polls_and_a_later_call_racing_for_an_approved_task_run_the_effect_once() {
    let (store, _dir) = sqlite();
    let h = tasks_on(&store).start().await;
    // A client on the same server that does not declare tasks: its calls take MRTR rounds.
    let rounds = connect_rounds(&h).await;
    for attempt in 0..3 {
        let environment = format!("web-{attempt}");
        let task = task_of(h.fresh("restart", &environment).await);
        let (url, _, _) = link_of(&get(&h, &task.task_id).await.unwrap());
        visit::approve(&url, "").await.unwrap();
        let later = rmcp::model::CallToolRequestParams::new("restart")
            .with_arguments(arguments(&environment));
        let (one, two, call) = tokio::join!(
            get(&h, &task.task_id),
            get(&h, &task.task_id),
            rounds.call_tool_once(later),
        );
        for polled in [one, two] {
            let status = polled.unwrap().task.status();
            assert!(
                matches!(status, TaskStatus::Working | TaskStatus::Completed),
                "{status:?}"
            );
        }
        let call = call.unwrap();
        let ended = completed(&until_done(&h, &task.task_id).await);
        let outcomes = [outcome(&ended), asked(call).err().and_then(|r| outcome(&r))];
        let ran = outcomes
            .iter()
            .filter(|o| **o == Some(Outcome::Executed))
            .count();
        assert_eq!(ran, 1, "{outcomes:?}");
        let deployed = h.deployed();
        assert_eq!(
            deployed
                .iter()
                .filter(|(what, _)| *what == format!("restart {environment}"))
                .count(),
            1,
            "exactly once: {deployed:?}"
        );
    }
}

/// A second client of the same server that does not declare the Tasks extension.
async fn connect_rounds(h: &Harness) -> rmcp::service::RunningService<rmcp::RoleClient, UrlClient> {
    let (client, _urls) = url_client(MRTR, true);
    h.connect_another(client).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_both_sides_taking_part_a_call_gets_mrtr_rounds() {
    let (store, _dir) = sqlite();
    // The client declares tasks, the server does not serve them.
    let h = Setup {
        server_tasks: false,
        ..tasks_on(&store)
    }
    .start()
    .await;
    let first = asked(h.fresh("restart", "web").await).expect("an MRTR round");
    assert!(first.url.starts_with(&h.base));
    let refused = get(&h, &first.id).await.unwrap_err().to_string();
    assert!(
        refused.to_lowercase().contains("method not found") || refused.contains("-32601"),
        "{refused}"
    );

    // The server serves tasks, the client does not declare them.
    let h = Setup {
        client_tasks: false,
        ..tasks_on(&store)
    }
    .start()
    .await;
    let first = asked(h.fresh("restart", "db").await).expect("an MRTR round");
    visit::approve(&first.url, "").await.unwrap();
    let result = h
        .retry("restart", "db", &first.state, "accept")
        .await
        .unwrap();
    assert_eq!(outcome(&result), Some(Outcome::Executed), "{result:?}");

    // 2025-11-25 keeps push elicitation, tasks declared or not.
    let (store, _dir) = sqlite();
    let mut h = Setup {
        protocol: PUSH,
        ..tasks_on(&store)
    }
    .start()
    .await;
    let call = h.call("restart", "web");
    let (url, _, _) = h.requester_url().await;
    visit::approve(&url, "").await.unwrap();
    let result = call.await.unwrap();
    assert_eq!(outcome(&result), Some(Outcome::Executed), "{result:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_task_whose_target_changed_ends_as_state_changed_and_runs_nothing() {
    let (store, _dir) = sqlite();
    let h = tasks_on(&store).start().await;
    let task = task_of(h.fresh("restart", "web").await);
    let (url, _, _) = link_of(&get(&h, &task.task_id).await.unwrap());
    visit::approve(&url, "").await.unwrap();
    // What a restart would ship changed after the approver saw it.
    h.set_release("2.5.0");
    let result = completed(&until_done(&h, &task.task_id).await);
    assert_eq!(outcome(&result), Some(Outcome::StateChanged), "{result:?}");
    assert!(h.deployed().is_empty(), "nothing ran");
}

/// An approval an MRTR call opened, taken up by the same requester's call from a client with
/// tasks, approved, then cancelled as a task: the MRTR call's own retry runs nothing on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mrtr_retry_after_its_approval_was_cancelled_as_a_task_runs_nothing() {
    let (store, _dir) = sqlite();
    let h = tasks_on(&store).start().await;
    let rounds = connect_rounds(&h).await;
    let first = asked(
        rounds
            .call_tool_once(
                rmcp::model::CallToolRequestParams::new("restart").with_arguments(arguments("web")),
            )
            .await
            .unwrap(),
    )
    .unwrap();
    let task = task_of(h.fresh("restart", "web").await);
    assert_eq!(task.task_id, first.id, "the same approval, now a task");
    visit::approve(&first.url, "").await.unwrap();
    cancel(&h, &task.task_id).await.unwrap();
    let retry = rounds
        .call_tool_once(retry_params("restart", "web", &first.state, "accept"))
        .await
        .unwrap();
    let result = asked(retry).unwrap_err();
    assert_ne!(outcome(&result), Some(Outcome::Executed), "{result:?}");
    assert!(!text(&result).is_empty());
    assert_eq!(
        get(&h, &task.task_id).await.unwrap().task.status(),
        TaskStatus::Cancelled
    );
    assert!(h.deployed().is_empty(), "nothing ran");
}
