//! The approval page on protocol 2026-07-28 (MRTR): the first round opens the approval and
//! answers with a URL-mode input request; a retry waits a short while for the page's
//! decision, and the client never gets `notifications/elicitation/complete`. Driven
//! with a real rmcp client in the 2026-07-28 era, and headless Chromium where a person
//! decides on the page; every test counts the deploys the handler really ran.

use crate::support::approval as bench;

use std::{sync::Arc, time::Duration};

use bench::*;
use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp_guard::ops::{OperationStore, SqliteStore};
use rmcp_guard::outcome::Outcome;
use safe_ops::visit;

/// The first round: the input request must be guard's one URL-mode elicitation. Returns the
/// sealed state, the URL, the elicitation id and the message.
async fn first_round(
    h: &Harness,
    tool: &str,
    environment: &str,
) -> (String, String, String, String) {
    let asked = asked(h.fresh(tool, environment).await)
        .unwrap_or_else(|result| panic!("{tool}: the first round must ask for input: {result:?}"));
    assert!(
        asked.url.starts_with(&h.base),
        "{} is on the page {}",
        asked.url,
        h.base
    );
    (asked.state, asked.url, asked.id, asked.message)
}

/// Approves at `link` with the CSRF token its page carried before: as a person whose page
/// was still open when the approval closed.
async fn approve_with(link: &str, csrf: &str, typed: &str) -> visit::Page {
    visit::post(
        link,
        &[("csrf", csrf), ("decision", "approve"), ("typed", typed)],
    )
    .await
    .unwrap()
}

/// Waits until a spawned retry is in its wait (it has not answered yet).
async fn waiting(retry: &tokio::task::JoinHandle<rmcp::model::CallToolResult>) {
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!retry.is_finished(), "the retry waits for the page");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_other_people_approve_on_the_page_then_the_retry_runs_the_deploy_once() {
    let mut h = Setup::new(MRTR).start().await;
    // rmcp's client drives the rounds: it shows the URL (the handler accepts) and retries.
    let call = h.call("deploy", "production");
    let (url, elicitation_id, message) = h.requester_url().await;
    assert!(url.starts_with(&h.base), "{url}");
    assert!(
        message.contains("Deploy release 2.4.1 to production.")
            && message.contains("2 people other than you"),
        "{message}"
    );
    let users: Vec<String> = h
        .links
        .lock()
        .unwrap()
        .iter()
        .map(|l| l.approver.user.clone())
        .collect();
    assert_eq!(
        users,
        ["bob", "carol"],
        "never the requester, never another tenant"
    );

    let browser = Browser::start().await;
    let page = browser.open(&url).await;
    assert!(page.contains("Approvals: 0 of 2"), "{page}");
    assert!(
        !browser.has("#approve").await,
        "the requester cannot approve"
    );
    let page = browser.approve(&h.link("bob"), "production", None).await;
    assert!(page.contains("Approvals: 1 of 2"), "{page}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(h.deployed().is_empty(), "one approval runs nothing");
    assert!(!call.is_finished(), "the retry still waits");
    let page = browser
        .approve(&h.link("carol"), "production", Some(TOKEN))
        .await;
    assert!(
        page.contains("Approved: the action goes ahead as described above."),
        "{page}"
    );

    let result = call.await.unwrap();
    assert_eq!(outcome(&result), Some(Outcome::Executed), "{result:?}");
    assert_eq!(h.deployed(), [("production".to_owned(), TOKEN.len())]);
    assert!(
        !format!("{result:?}").contains(TOKEN),
        "the secret never reaches the model"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!elicitation_id.is_empty());
    assert!(
        h.completed.lock().unwrap().is_empty(),
        "2026-07-28 has no notifications/elicitation/complete"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_sent_before_anyone_approved_ends_with_the_rejection() {
    let h = Setup::new(MRTR).start().await;
    let (state, _, _, _) = first_round(&h, "deploy", "production").await;
    assert!(h.deployed().is_empty(), "asking runs nothing");
    let retry = h.retry("deploy", "production", &state, "accept");
    waiting(&retry).await;

    bob_approves_then_carol_rejects(&h).await;
    assert_rejected_by_carol(&h, &retry.await.unwrap());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(h.completed.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_retry_is_refused_and_the_first_one_still_decides() {
    let h = Setup::new(MRTR).start().await;
    let (state, _, _, _) = first_round(&h, "deploy", "production").await;
    let first = h.retry("deploy", "production", &state, "accept");
    waiting(&first).await;

    let replay = h
        .retry("deploy", "production", &state, "accept")
        .await
        .unwrap();
    assert_eq!(outcome(&replay), Some(Outcome::Replayed), "{replay:?}");
    assert!(replay.is_error.unwrap_or(false));
    assert!(
        text(&replay).contains("[INVALID_STATE]"),
        "{}",
        text(&replay)
    );
    assert!(
        !first.is_finished(),
        "a replay leaves the waiting retry alone"
    );

    let browser = Browser::start().await;
    browser.approve(&h.link("bob"), "production", None).await;
    browser
        .approve(&h.link("carol"), "production", Some(TOKEN))
        .await;
    let result = first.await.unwrap();
    assert_eq!(outcome(&result), Some(Outcome::Executed), "{result:?}");

    let again = h
        .retry("deploy", "production", &state, "accept")
        .await
        .unwrap();
    assert_eq!(outcome(&again), Some(Outcome::Replayed), "{again:?}");
    assert_eq!(
        h.deployed(),
        [("production".to_owned(), TOKEN.len())],
        "exactly one deploy"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_with_altered_arguments_runs_nothing_and_decline_withdraws_the_approval() {
    let h = Setup::new(MRTR).start().await;
    let (state, _, _, _) = first_round(&h, "deploy", "production").await;
    for altered in ["staging", "Production", "production "] {
        let result = h.retry("deploy", altered, &state, "accept").await.unwrap();
        assert_eq!(
            outcome(&result),
            Some(Outcome::BadState),
            "{altered}: {result:?}"
        );
        assert!(
            text(&result).contains("[INVALID_STATE]"),
            "{}",
            text(&result)
        );
    }
    let bob = h.link("bob");
    let csrf = visit::get(&bob).await.unwrap().field("csrf").unwrap();
    // The genuine state was not used up by the altered ones: its decline still counts.
    let result = h
        .retry("deploy", "production", &state, "decline")
        .await
        .unwrap();
    assert_eq!(outcome(&result), Some(Outcome::Declined), "{result:?}");
    assert!(!result.is_error.unwrap_or(false));
    let page = visit::get(&bob).await.unwrap().text();
    assert!(page.contains("Withdrawn by the client"), "{page}");
    let refused = approve_with(&bob, &csrf, "production").await;
    assert_eq!(refused.status, 409, "{}", refused.text());
    assert!(
        refused.text().contains("already decided"),
        "{}",
        refused.text()
    );
    assert!(h.deployed().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_on_the_retry_withdraws_the_approval() {
    let h = Setup::new(MRTR).start().await;
    let (state, url, _, _) = first_round(&h, "restart", "web").await;
    let csrf = visit::get(&url).await.unwrap().field("csrf").unwrap();
    let result = h.retry("restart", "web", &state, "cancel").await.unwrap();
    assert_eq!(outcome(&result), Some(Outcome::Cancelled), "{result:?}");
    let refused = approve_with(&url, &csrf, "").await;
    assert_eq!(refused.status, 409, "{}", refused.text());
    assert!(h.deployed().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_from_another_person_is_refused_and_leaves_the_requesters_approval() {
    let h = Setup::new(MRTR).start().await;
    let (state, url, _, _) = first_round(&h, "restart", "web").await;
    // Dave, on the same server, sends alice's state with alice's arguments: he would run
    // the restart on her approval.
    h.as_user("dave");
    let result = h.retry("restart", "web", &state, "accept").await.unwrap();
    assert_eq!(
        outcome(&result),
        Some(Outcome::ApprovalMismatch),
        "{result:?}"
    );
    assert!(
        text(&result).contains("[PERMISSION_DENIED]"),
        "{}",
        text(&result)
    );
    assert!(
        text(&result).contains("names an approval opened for another call"),
        "{}",
        text(&result)
    );
    // Checked before the state is used: alice's own retry still works.
    h.as_user("alice");
    let retry = h.retry("restart", "web", &state, "accept");
    waiting(&retry).await;
    let page = visit::approve(&url, "").await.unwrap();
    assert!(
        page.text()
            .contains("Approved: the action goes ahead as described above."),
        "{}",
        page.text()
    );
    let result = retry.await.unwrap();
    assert_eq!(outcome(&result), Some(Outcome::Executed), "{result:?}");
    assert_eq!(h.deployed(), [("restart web".to_owned(), 0)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_approval_then_the_deadline_ends_the_waiting_retry() {
    let h = Setup {
        timeout: Duration::from_secs(3),
        ..Setup::new(MRTR)
    }
    .start()
    .await;
    let (state, _, _, _) = first_round(&h, "deploy", "production").await;
    let retry = h.retry("deploy", "production", &state, "accept");
    let page = visit::approve(&h.link("bob"), "production").await.unwrap();
    assert!(page.text().contains("Approvals: 1 of 2"), "{}", page.text());
    let result = retry.await.unwrap();
    assert_eq!(outcome(&result), Some(Outcome::Expired), "{result:?}");
    assert!(
        h.deployed().is_empty(),
        "nothing runs without two approvals"
    );
}

const KEY: &[u8] = b"one key shared by the process before and after the restart";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_a_restart_runs_only_on_an_approval_the_store_kept() {
    // Used states in memory: the state carries the boot epoch of the process that sealed it.
    let keyed = || Setup {
        key: Some(KEY.to_vec()),
        ..Setup::new(MRTR)
    };
    let before = keyed().start().await;
    let (state, url, _, _) = first_round(&before, "restart", "web").await;
    visit::approve(&url, "").await.unwrap();
    let after = keyed().start().await;
    let result = after
        .retry("restart", "web", &state, "accept")
        .await
        .unwrap();
    assert_eq!(outcome(&result), Some(Outcome::Restarted), "{result:?}");
    assert!(text(&result).contains("[INVALID_STATE]"));

    // With an operation store, used states and approvals outlive the process: an approval
    // opened before the restart is decided on the restarted server's page, through the same
    // link, and the retry from before the restart runs on that decision.
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn OperationStore> =
        Arc::new(SqliteStore::open(dir.path().join("guard.db")).unwrap());
    let stored = || Setup {
        key: Some(KEY.to_vec()),
        store: Some(store.clone()),
        ..Setup::new(MRTR)
    };
    let before = stored().start().await;
    let (state, url, _, _) = first_round(&before, "restart", "web").await;
    let token = url.rsplit('/').next().unwrap().to_owned();
    drop(before);
    let after = stored().start().await;
    let page = visit::approve(&format!("{}approval/{token}", after.base), "")
        .await
        .unwrap();
    assert!(page.text().contains("Approved"), "{}", page.text());
    let result = after
        .retry("restart", "web", &state, "accept")
        .await
        .unwrap();
    assert!(!result.is_error.unwrap_or(false), "{result:?}");
    assert_eq!(after.deployed(), [("restart web".to_owned(), 0)]);
    // The state was used: its replay, on this server or the next, runs nothing.
    let replay = after
        .retry("restart", "web", &state, "accept")
        .await
        .unwrap();
    assert!(replay.is_error.unwrap_or(false), "{replay:?}");
    assert_eq!(after.deployed().len(), 1);
}

/// Two replicas on one PostgreSQL store, sharing the request-state key: the call opens its
/// approval on one, its retry waits on the other, and the human approves on the first one's
/// page. The waiting replica finds the decision in the store and runs the call, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_on_one_postgres_share_an_approval() {
    let Some(url) = guard_tests::pg_url("the approval replicas test") else {
        return;
    };
    let (store, admin, schema) = fresh_pg(&url, "guard_replicas").await;
    let replica = || Setup {
        key: Some(KEY.to_vec()),
        store: Some(store.clone()),
        ..Setup::new(MRTR)
    };
    let (one, two) = (replica().start().await, replica().start().await);

    let (state, url, _, _) = first_round(&one, "restart", "web").await;
    let retry = two.retry("restart", "web", &state, "accept");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!retry.is_finished(), "the retry waits for the decision");
    let page = visit::approve(&url, "").await.unwrap();
    assert!(page.text().contains("Approved"), "{}", page.text());
    let result = retry.await.unwrap();
    assert!(!result.is_error.unwrap_or(false), "{result:?}");
    assert_eq!(two.deployed(), [("restart web".to_owned(), 0)]);
    assert!(
        one.deployed().is_empty(),
        "the call ran once, where it was retried"
    );
    // The page of either replica serves the link, and shows the outcome.
    let token = url.rsplit('/').next().unwrap();
    let shown = visit::get(&format!("{}approval/{token}", two.base))
        .await
        .unwrap()
        .text();
    assert!(shown.contains("Approved"), "{shown}");
    drop_pg(admin, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_url_elicitation_gets_the_natural_fail_closed_answer() {
    let h = Setup {
        url_mode: false,
        ..Setup::new(MRTR)
    }
    .start()
    .await;
    let params = CallToolRequestParams::new("deploy").with_arguments(arguments("production"));
    let CallToolResponse::Complete(result) = h.round(params).await else {
        panic!("no input request for a client that cannot open URLs");
    };
    assert_eq!(
        outcome(&result),
        Some(Outcome::UnsupportedClient),
        "{result:?}"
    );
    assert!(!result.is_error.unwrap_or(false));
    assert!(text(&result).contains("did not declare URL elicitation"));
    assert!(h.links.lock().unwrap().is_empty(), "no approval was opened");
    assert!(h.deployed().is_empty());
}
