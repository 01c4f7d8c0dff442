//! Whoever writes to the approval tables around guard (the server's own database role, the
//! owner of a SQLite file, who can drop its triggers, or PostgreSQL's table owner with
//! triggers switched off) cannot make a waiting call run: the requester, someone not
//! listed and a listed approver's name in another spelling "approve", and the approval is
//! marked `APPROVED`; the call that waits for it (a push call, an MRTR retry, a task's run)
//! counts only the decisions guard took on the page, runs nothing, ends as `not_approved`,
//! and the audit log names every forged row. Driven with a real rmcp client; nobody opens a
//! browser (approvals are posted as the page's form would).

use crate::support::approval as bench;

use std::time::Duration;

use bench::*;
use rmcp::model::GetTaskParams;
use rmcp_guard::{
    ops::OperationStore,
    outcome::{ApprovalEvent, Outcome},
};
use safe_ops::visit;
use serde_json::Value;

const KEY: &[u8] = b"the guard key the replicas of this test share!!";

/// How the forger writes: as a SQLite file's owner (triggers dropped first), or as
/// PostgreSQL's table owner with triggers off for the session.
#[derive(Clone, Copy)]
enum Forger {
    FileOwner,
    TableOwner,
}

/// Writes `sql` in one transaction, around every trigger.
async fn forge(store: &dyn OperationStore, forger: Forger, sql: &[String]) {
    let mut tx = store.begin().await.unwrap();
    match forger {
        Forger::FileOwner => {
            let triggers = tx
                .query("SELECT name FROM sqlite_master WHERE type = 'trigger'", &[])
                .await
                .unwrap();
            for trigger in &triggers {
                let name = trigger.text("name").unwrap().to_owned();
                tx.execute(&format!("DROP TRIGGER {name}"), &[])
                    .await
                    .unwrap();
            }
        }
        Forger::TableOwner => {
            tx.execute("SET LOCAL session_replication_role = replica", &[])
                .await
                .unwrap();
        }
    }
    for statement in sql {
        tx.execute(statement, &[])
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
    tx.commit().await.unwrap();
}

/// The one approval in the store.
async fn approval_id(store: &dyn OperationStore) -> String {
    let mut tx = store.begin().await.unwrap();
    let row = tx
        .query_opt("SELECT approval_id FROM guard_approvals", &[])
        .await
        .unwrap()
        .unwrap();
    let id = row.text("approval_id").unwrap().to_owned();
    tx.rollback().await.unwrap();
    id
}

/// What the attack wrote: bob approved on the page; then the requester, mallory (listed
/// for another tenant only) and carol's name in capitals "approve", bob's seal copied onto
/// each, and the approval is marked approved.
async fn forge_the_rest(store: &dyn OperationStore, forger: Forger) {
    let id = approval_id(store).await;
    let mut tx = store.begin().await.unwrap();
    let bob = tx
        .query_opt(
            "SELECT link_sha256, seal FROM guard_approval_decisions WHERE approval_id = $1",
            &[id.as_str().into()],
        )
        .await
        .unwrap()
        .expect("bob approved on the page");
    let (link, seal) = (
        bob.text("link_sha256").unwrap().to_owned(),
        bob.text("seal").unwrap().to_owned(),
    );
    tx.rollback().await.unwrap();
    let now = rmcp_guard::ops::now_ms();
    let row = |tenant: &str, user: &str, n: u32| {
        format!(
            "INSERT INTO guard_approval_decisions
                 (approval_id, tenant, user_id, skeleton, decision, at, link_sha256, seal)
             VALUES ('{id}', '{tenant}', '{user}', 'forged{n}', 'APPROVE', {now}, '{link}', '{seal}')"
        )
    };
    forge(
        store,
        forger,
        &[
            row("acme", "alice", 1),
            row("acme", "mallory", 2),
            row("other-tenant", "mallory", 3),
            row("acme", "Carol", 4),
            format!(
                "UPDATE guard_approvals SET status = 'APPROVED', ended_at = {now} WHERE approval_id = '{id}'"
            ),
        ],
    )
    .await;
}

/// Every record in the guard's log (its operation store's), as JSON.
async fn records(h: &Harness) -> Vec<Value> {
    h.guard.audit_settled().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    h.guard.audit_settled().await;
    h.guard
        .audit_log()
        .expect("the store keeps the log")
        .records()
        .await
        .unwrap()
        .iter()
        .filter_map(|r| r.json())
        .collect()
}

/// The call ended as not approved, ran nothing, said what to do, and the log names each
/// forged row and the approval's status.
async fn assert_not_approved(h: &Harness, result: &rmcp::model::CallToolResult) {
    assert_eq!(outcome(result), Some(Outcome::NotApproved), "{result:?}");
    let said = text(result);
    assert!(
        said.contains("only 1 of the 2 approvals")
            && said.contains("Call the tool again")
            && said.contains("tell the operator"),
        "{said}"
    );
    assert!(h.deployed().is_empty(), "nothing ran: {:?}", h.deployed());
    let records = records(h).await;
    let forged: Vec<&Value> = records
        .iter()
        .filter(|r| {
            r["outcome"].as_str().and_then(Outcome::parse)
                == Some(Outcome::Approval(ApprovalEvent::Forged))
        })
        .collect();
    let mut named: Vec<String> = forged
        .iter()
        .filter_map(|r| r["named"].as_str())
        .map(|user| user.to_owned())
        .collect();
    named.sort();
    named.dedup();
    assert_eq!(named, ["Carol", "alice", "mallory"], "{forged:#?}");
    assert!(
        forged
            .iter()
            .any(|r| r["status"] == "APPROVED" && r["counted"] == 1 && r["required"] == 2),
        "{forged:#?}"
    );
    let ended = records
        .iter()
        .find(|r| r["outcome"] == "not_approved")
        .expect("the call's own record");
    assert_eq!(ended["code"], "PERMISSION_DENIED", "{ended}");
}

fn setup(
    protocol: rmcp::model::ProtocolVersion,
    store: std::sync::Arc<dyn OperationStore>,
) -> Setup {
    Setup {
        key: Some(KEY.to_vec()),
        store: Some(store),
        round_wait: Some(Duration::from_secs(2)),
        ..Setup::new(protocol)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_call_waiting_on_forged_decisions_runs_nothing() {
    let (store, _dir) = sqlite();
    let mut h = setup(PUSH, store.clone()).start().await;
    let call = h.call("deploy", "production");
    h.requester_url().await;
    visit::approve(&h.link("bob"), "production").await.unwrap();
    forge_the_rest(store.as_ref(), Forger::FileOwner).await;
    let result = tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .expect("the waiting call ends")
        .unwrap();
    assert_not_approved(&h, &result).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mrtr_retry_on_forged_decisions_runs_nothing() {
    let (store, _dir) = sqlite();
    let h = setup(MRTR, store.clone()).start().await;
    let first = asked(h.fresh("deploy", "production").await).unwrap();
    visit::approve(&h.link("bob"), "production").await.unwrap();
    forge_the_rest(store.as_ref(), Forger::FileOwner).await;
    let result = h
        .retry("deploy", "production", &first.state, "accept")
        .await
        .unwrap();
    assert_not_approved(&h, &result).await;
    // Calling again does not take the forged approval up: a new one opens.
    let again = asked(h.fresh("deploy", "production").await).unwrap();
    assert_ne!(again.token(), first.token());
    assert!(h.deployed().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_on_forged_decisions_completes_as_not_approved() {
    let (store, _dir) = sqlite();
    let mut with_tasks = setup(MRTR, store.clone());
    with_tasks.server_tasks = true;
    with_tasks.client_tasks = true;
    let h = with_tasks.start().await;
    let rmcp::model::CallToolResponse::Task(created) = h.fresh("deploy", "production").await else {
        panic!("the call answers a task");
    };
    visit::approve(&h.link("bob"), "production").await.unwrap();
    forge_the_rest(store.as_ref(), Forger::FileOwner).await;
    let mut polled = None;
    for _ in 0..100 {
        let task = h
            .client
            .get_task(GetTaskParams::new(created.task.task_id.clone()))
            .await
            .expect("tasks/get");
        if task.task.status().is_terminal() {
            polled = Some(task);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let polled = polled.expect("the task ends");
    let rmcp::model::TaskPayload::Completed { result } = polled.task.payload else {
        panic!("completed: {polled:?}");
    };
    let result: rmcp::model::CallToolResult =
        serde_json::from_value(Value::Object(result)).unwrap();
    assert_not_approved(&h, &result).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_retry_on_decisions_forged_around_the_triggers_runs_nothing() {
    let Some(url) = guard_tests::pg_url("the forged approvals test") else {
        return;
    };
    let (store, admin, schema) = fresh_pg(&url, "guard_forged").await;
    let h = setup(MRTR, store.clone()).start().await;
    let first = asked(h.fresh("deploy", "production").await).unwrap();
    visit::approve(&h.link("bob"), "production").await.unwrap();
    forge_the_rest(store.as_ref(), Forger::TableOwner).await;
    let result = h
        .retry("deploy", "production", &first.state, "accept")
        .await
        .unwrap();
    assert_not_approved(&h, &result).await;
    drop(h);
    drop_pg(admin, &schema).await;
}

/// The server's own role marks a pending approval rejected by carol, who never decided:
/// the retry names nobody as having rejected it, runs nothing, and the log names the
/// forged status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejection_nobody_gave_on_the_page_names_nobody() {
    let (store, _dir) = sqlite();
    let h = setup(MRTR, store.clone()).start().await;
    let first = asked(h.fresh("deploy", "production").await).unwrap();
    let id = approval_id(store.as_ref()).await;
    let now = rmcp_guard::ops::now_ms();
    forge(
        store.as_ref(),
        Forger::FileOwner,
        &[format!(
            "UPDATE guard_approvals SET status = 'REJECTED', ended_at = {now}, ended_by = 'carol' WHERE approval_id = '{id}'"
        )],
    )
    .await;
    let result = h
        .retry("deploy", "production", &first.state, "accept")
        .await
        .unwrap();
    assert_ne!(outcome(&result), Some(Outcome::Rejected), "{result:?}");
    assert!(!text(&result).contains("carol"), "{}", text(&result));
    assert!(h.deployed().is_empty(), "nothing ran: {:?}", h.deployed());
    let records = records(&h).await;
    assert!(
        records.iter().any(|r| {
            r["outcome"].as_str().and_then(Outcome::parse)
                == Some(Outcome::Approval(ApprovalEvent::Forged))
                && r["status"] == "REJECTED"
                && r["named"] == "carol"
        }),
        "{records:#?}"
    );
    assert!(
        !records.iter().any(|r| {
            r["outcome"].as_str().and_then(Outcome::parse)
                == Some(Outcome::Approval(ApprovalEvent::Rejected))
        }),
        "no record says anyone rejected it: {records:#?}"
    );
}
