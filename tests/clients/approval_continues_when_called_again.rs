//! A call approved on the page never holds a request open for long on protocol 2026-07-28,
//! and calling the tool again continues the same approval: each round waits a short,
//! bounded while, the last one ends as `approval_pending`, and the requester's next call
//! with the same arguments takes the pending (or approved, not yet used) approval up, on a
//! restarted server, on another replica, and on the push era too. Driven with real rmcp
//! clients; every test counts the deploys the handler really ran and the approvals the
//! store holds.

use crate::support::approval as bench;

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use bench::*;
use rmcp::model::{CallToolResponse, DEFAULT_MRTR_MAX_ROUNDS};
use rmcp_guard::{
    approval::WAITING_ROUNDS,
    ops::{OperationStore, SqliteStore},
    outcome::Outcome,
};
use safe_ops::visit;

/// How long a round waits in these tests (guard's default is twelve seconds).
const ROUND: Duration = Duration::from_secs(1);

/// A generous margin over a round's bound: an upper bound on how long a request stays open,
/// not a benchmark.
const SLACK: Duration = Duration::from_secs(5);

const KEY: &[u8] = b"one key shared by every replica and by the server after a restart";

/// A bench on `protocol` keeping approvals in `store`, with the shared key and short rounds.
fn on(store: &Arc<dyn OperationStore>, protocol: rmcp::model::ProtocolVersion) -> Setup {
    Setup {
        key: Some(KEY.to_vec()),
        store: Some(store.clone()),
        round_wait: Some(ROUND),
        ..Setup::new(protocol)
    }
}

/// How many approvals the store holds.
async fn approvals(store: &dyn OperationStore) -> i64 {
    let mut tx = store.begin().await.unwrap();
    let n = tx
        .query_opt("SELECT count(*) AS n FROM guard_approvals", &[])
        .await
        .unwrap()
        .unwrap()
        .int("n")
        .unwrap();
    tx.rollback().await.unwrap();
    n
}

/// Retries from `first` on, one request at a time, until a final result; every request
/// stays open at most a round plus the margin, and every further round names the same URL.
/// The result and how many requests the call took (the first round included).
async fn rounds_until_final(
    h: &Harness,
    tool: &str,
    first: &Asked,
) -> (rmcp::model::CallToolResult, usize) {
    let mut state = first.state.clone();
    let mut requests = 1;
    loop {
        let started = Instant::now();
        let response = h.retry_once(tool, "production", &state, "accept").await;
        requests += 1;
        let open = started.elapsed();
        assert!(
            open < ROUND + SLACK,
            "request {requests} stayed open {open:?}"
        );
        match asked(response) {
            Ok(again) => {
                assert_eq!(again.url, first.url, "every round names the same link");
                assert_eq!(again.id, first.id);
                assert_ne!(again.state, state, "each round seals a fresh state");
                state = again.state;
            }
            Err(result) => return (*result, requests),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_rounds_end_as_approval_pending_and_calling_again_continues_the_same_approval() {
    let (store, _dir) = sqlite();
    let mut h = on(&store, MRTR).start().await;
    let started = Instant::now();
    let first = asked(h.fresh("deploy", "production").await).unwrap();
    assert!(started.elapsed() < SLACK, "the first round does not wait");
    let (last, requests) = rounds_until_final(&h, "deploy", &first).await;
    assert_eq!(outcome(&last), Some(Outcome::ApprovalPending), "{last:?}");
    assert!(!last.is_error.unwrap_or(false), "an outcome, not an error");
    assert_eq!(requests, usize::from(WAITING_ROUNDS) + 1);
    assert!(
        requests < DEFAULT_MRTR_MAX_ROUNDS,
        "{requests} requests: rmcp's client stops after {DEFAULT_MRTR_MAX_ROUNDS}"
    );
    let said = text(&last);
    for needle in [
        "Nothing ran yet",
        "0 of 2 approvals so far",
        "stays open until 20",
        "call the tool again with the same arguments",
    ] {
        assert!(said.contains(needle), "{needle:?} in {said}");
    }
    assert!(h.deployed().is_empty());

    // Bob approves; the requester calls again through rmcp's own helper, which drives the
    // rounds: the same approval continues, and no request waits long.
    let page = visit::approve(&h.link("bob"), "production").await.unwrap();
    assert!(page.text().contains("Approvals: 1 of 2"), "{}", page.text());
    let again = h.call("deploy", "production");
    let (url, id, _) = h.requester_url().await;
    assert_eq!(
        (url.as_str(), id.as_str()),
        (first.url.as_str(), first.id.as_str())
    );
    // Carol approves slower than a round lasts.
    tokio::time::sleep(ROUND * 3).await;
    assert!(
        !again.is_finished(),
        "still waiting, over several short rounds"
    );
    carol_completes(&h.link("carol")).await;
    let result = again.await.unwrap();
    assert_eq!(outcome(&result), Some(Outcome::Executed), "{result:?}");
    assert_eq!(h.deployed(), [("production".to_owned(), TOKEN.len())]);
    assert_eq!(approvals(store.as_ref()).await, 1, "one approval, taken up");
    assert_eq!(
        h.links.lock().unwrap().len(),
        2,
        "the approvers got their links once"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        h.completed.lock().unwrap().is_empty(),
        "2026-07-28 has no notifications/elicitation/complete"
    );

    // Used once: calling again now opens a new approval, and runs nothing on the old one.
    let fresh = asked(h.fresh("deploy", "production").await).unwrap();
    assert_ne!(fresh.url, first.url);
    assert_eq!(h.deployed().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_same_person_with_the_same_arguments_takes_an_approval_up() {
    let (store, _dir) = sqlite();
    let h = on(&store, MRTR).start().await;
    let first = asked(h.fresh("restart", "web").await).unwrap();

    // Other spellings of alice are alice.
    for spelling in ["ALICE", "\u{FF41}lice"] {
        h.as_user(spelling);
        let again = asked(h.fresh("restart", "web").await).unwrap();
        assert_eq!(again.url, first.url, "{spelling:?} is the requester");
    }
    // A name with an invisible character is refused, and takes nothing up.
    h.as_user("al\u{200b}ice");
    let refused = asked(h.fresh("restart", "web").await).unwrap_err();
    assert_eq!(
        outcome(&refused),
        Some(Outcome::PermissionDenied),
        "{refused:?}"
    );
    // Another person, or other arguments: an approval of their own.
    h.as_user("dave");
    let dave = asked(h.fresh("restart", "web").await).unwrap();
    assert_ne!(dave.url, first.url);
    h.as_user("alice");
    let staging = asked(h.fresh("restart", "staging").await).unwrap();
    assert_ne!(staging.url, first.url);
    assert_eq!(approvals(store.as_ref()).await, 3);

    // Dave's approval is approved; alice's call of the same tool does not run on it.
    visit::approve(&dave.url, "").await.unwrap();
    let mine = asked(h.fresh("restart", "web").await).unwrap();
    assert_eq!(mine.url, first.url);
    assert!(h.deployed().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_effect_withdraws_the_approval_and_asks_anew() {
    let (store, _dir) = sqlite();
    let h = on(&store, MRTR).start().await;
    let first = asked(h.fresh("restart", "web").await).unwrap();
    let csrf = visit::get(&first.url).await.unwrap().field("csrf").unwrap();
    h.set_release("2.5.0");
    let anew = asked(h.fresh("restart", "web").await).unwrap();
    assert_ne!(anew.url, first.url, "the approvers saw another effect");
    assert!(anew.message.contains("2.5.0"), "{}", anew.message);
    let page = visit::get(&first.url).await.unwrap().text();
    assert!(page.contains("Withdrawn"), "{page}");
    let refused = visit::post(
        &first.url,
        &[("csrf", &csrf), ("decision", "approve"), ("typed", "")],
    )
    .await
    .unwrap();
    assert_eq!(refused.status, 409, "{}", refused.text());
    // The old round's retry runs nothing either.
    let old = h
        .retry("restart", "web", &first.state, "accept")
        .await
        .unwrap();
    assert!(outcome(&old) != Some(Outcome::Executed), "{old:?}");
    assert!(h.deployed().is_empty());

    visit::approve(&anew.url, "").await.unwrap();
    let result = h
        .retry("restart", "web", &anew.state, "accept")
        .await
        .unwrap();
    assert_eq!(outcome(&result), Some(Outcome::Executed), "{result:?}");
    assert_eq!(h.deployed(), [("restart web".to_owned(), 0)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approved_while_nobody_waited_runs_once_for_concurrent_calls_and_a_late_retry() {
    let (store, _dir) = sqlite();
    let h = on(&store, MRTR).start().await;
    let first = asked(h.fresh("restart", "web").await).unwrap();
    let page = visit::approve(&first.url, "").await.unwrap();
    assert!(page.text().contains("Approved"), "{}", page.text());
    assert!(h.deployed().is_empty(), "nobody waited: nothing ran yet");

    let (one, two) = tokio::join!(h.fresh("restart", "web"), h.fresh("restart", "web"));
    let mut executed = 0;
    for response in [one, two] {
        match response {
            CallToolResponse::Complete(result) => match outcome(&result) {
                Some(Outcome::Executed) => executed += 1,
                Some(Outcome::ApprovalUsed) => {
                    assert!(!result.is_error.unwrap_or(false), "{result:?}");
                    assert!(text(&result).contains("already used"), "{}", text(&result));
                }
                other => panic!("unexpected {other:?}: {result:?}"),
            },
            // The other call came after the use: it asks for a new approval.
            other => assert_ne!(asked(other).unwrap().url, first.url),
        }
    }
    assert_eq!(executed, 1);
    // The first round's retry, late: the approval is used.
    let late = h
        .retry("restart", "web", &first.state, "accept")
        .await
        .unwrap();
    assert_eq!(outcome(&late), Some(Outcome::ApprovalUsed), "{late:?}");
    assert_eq!(
        h.deployed(),
        [("restart web".to_owned(), 0)],
        "exactly once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_calling_again_takes_the_approval_up() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("guard.db");
    let process = || -> Arc<dyn OperationStore> { Arc::new(SqliteStore::open(&path).unwrap()) };
    // Pending across the restart: the new process sends alice to the same link.
    let before = on(&process(), MRTR).start().await;
    let first = asked(before.fresh("restart", "web").await).unwrap();
    drop(before);
    let store = process();
    let after = on(&store, MRTR).start().await;
    let again = asked(after.fresh("restart", "web").await).unwrap();
    assert_eq!(again.token(), first.token(), "the same link, derived again");
    assert!(again.url.starts_with(&after.base), "{}", again.url);
    visit::approve(&again.url, "").await.unwrap();
    let result = after
        .retry("restart", "web", &again.state, "accept")
        .await
        .unwrap();
    assert_eq!(outcome(&result), Some(Outcome::Executed), "{result:?}");

    // Approved while nobody waited, then the server restarts: the next call runs it, once.
    let first = asked(after.fresh("restart", "db").await).unwrap();
    visit::approve(&first.url, "").await.unwrap();
    drop(after);
    let restarted = on(&process(), MRTR).start().await;
    let ran = asked(restarted.fresh("restart", "db").await).unwrap_err();
    assert_eq!(outcome(&ran), Some(Outcome::Executed), "{ran:?}");
    assert_eq!(restarted.deployed(), [("restart db".to_owned(), 0)]);
    assert_eq!(approvals(store.as_ref()).await, 2);
}

/// Without a key the replicas share, a restarted server cannot send the requester back to
/// the link: it withdraws the old approval (so nobody approves what nobody will take up)
/// and opens a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_shared_key_calling_again_opens_a_new_approval() {
    let (store, _dir) = sqlite();
    let before = on(&store, MRTR).start().await;
    let first = asked(before.fresh("restart", "web").await).unwrap();
    let other_key = Setup {
        key: Some(b"another key, not shared with the first server!!".to_vec()),
        ..on(&store, MRTR)
    };
    let after = other_key.start().await;
    let anew = asked(after.fresh("restart", "web").await).unwrap();
    assert_ne!(anew.token(), first.token());
    let page = visit::get(&first.url).await.unwrap().text();
    assert!(page.contains("Withdrawn"), "{page}");
    assert_eq!(approvals(store.as_ref()).await, 2);
}

/// Two replicas on one PostgreSQL store with one key: alice's call opens the approval on
/// one, her next call lands on the other and continues it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_two_replicas_calling_again_on_the_other_takes_the_approval_up() {
    let Some(url) = guard_tests::pg_url("the approval take-up replicas test") else {
        return;
    };
    let (store, admin, schema) = fresh_pg(&url, "guard_take_up").await;
    let (one, two) = (
        on(&store, MRTR).start().await,
        on(&store, MRTR).start().await,
    );

    let first = asked(one.fresh("restart", "web").await).unwrap();
    let again = asked(two.fresh("restart", "web").await).unwrap();
    assert_eq!(again.token(), first.token());
    assert!(again.url.starts_with(&two.base), "{}", again.url);
    visit::approve(&first.url, "").await.unwrap();
    let result = two
        .retry("restart", "web", &again.state, "accept")
        .await
        .unwrap();
    assert_eq!(outcome(&result), Some(Outcome::Executed), "{result:?}");
    // The first replica's retry is late: the approval is used.
    let late = one
        .retry("restart", "web", &first.state, "accept")
        .await
        .unwrap();
    assert_eq!(outcome(&late), Some(Outcome::ApprovalUsed), "{late:?}");
    assert_eq!(two.deployed(), [("restart web".to_owned(), 0)]);
    assert!(one.deployed().is_empty());
    assert_eq!(approvals(store.as_ref()).await, 1);
    drop_pg(admin, &schema).await;
}

/// On 2025-11-25 a server that stops while a call waits (a crash: nothing withdraws the
/// approval) leaves it pending; the restarted server's page serves it, and the requester's
/// next call takes it up instead of opening another, and still gets
/// `notifications/elicitation/complete`.
#[test]
fn on_the_push_era_a_call_after_a_restart_takes_the_approval_up() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("guard.db");
    let crashed = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let first = crashed.block_on(async {
        let store: Arc<dyn OperationStore> = Arc::new(SqliteStore::open(&path).unwrap());
        let mut h = on(&store, PUSH).start().await;
        let call = h.call("restart", "web");
        let (url, _, _) = h.requester_url().await;
        // The process keeps running until it is killed.
        std::mem::forget(call);
        std::mem::forget(h);
        url
    });
    crashed.shutdown_background();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store: Arc<dyn OperationStore> = Arc::new(SqliteStore::open(&path).unwrap());
        let mut h = on(&store, PUSH).start().await;
        let call = h.call("restart", "web");
        let (url, id, _) = h.requester_url().await;
        assert_eq!(
            url.rsplit('/').next(),
            first.rsplit('/').next(),
            "the same link"
        );
        let page = visit::approve(&url, "").await.unwrap();
        assert!(page.text().contains("Approved"), "{}", page.text());
        let result = call.await.unwrap();
        assert_eq!(outcome(&result), Some(Outcome::Executed), "{result:?}");
        assert_eq!(h.deployed(), [("restart web".to_owned(), 0)]);
        assert_eq!(approvals(store.as_ref()).await, 1);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(
            *h.completed.lock().unwrap(),
            [id],
            "push keeps the completion"
        );
    });
}
