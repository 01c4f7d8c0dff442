use std::sync::Arc;

use super::{recording::Recording, *};
use crate::{outcome::Outcome, store::SqliteStore};

/// A pipeline on a fresh SQLite log whose transactions are recorded, and a runtime to
/// drive it from. The writer keeps its own runtime on its own thread, on real time, so
/// no test clock reaches its gathering: a test that must not be raced by a slow machine
/// sets the gathering to an hour ([`HOUR`]).
fn counted(dir: &tempfile::TempDir) -> (Pipeline, Recording, tokio::runtime::Runtime) {
    counted_gathering(dir, GATHER)
}

fn counted_gathering(
    dir: &tempfile::TempDir,
    gathering: Duration,
) -> (Pipeline, Recording, tokio::runtime::Runtime) {
    let store = SqliteStore::open(dir.path().join("log.db")).expect("store");
    let counting = Recording::new(Arc::new(store));
    let pipeline = Pipeline::new(AuditLog::new(counting.clone(), "test")).gathering(gathering);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    (pipeline, counting, runtime)
}

/// A gathering no test outlives: a write that waited for it would not end in the test.
const HOUR: Duration = Duration::from_secs(3600);

/// Far longer than any write here takes, far shorter than [`HOUR`]: what tells a write
/// that ended the gathering from one that waited it out.
const BOUND: Duration = Duration::from_secs(120);

fn event(n: u32) -> Event {
    Event::new("delete_file", Outcome::Declined, format!("trace-{n}"))
}

/// The trace ids of the log's records, in sequence order.
fn traces(pipeline: &Pipeline, runtime: &tokio::runtime::Runtime) -> Vec<String> {
    let records = runtime.block_on(pipeline.log().records()).expect("records");
    records
        .iter()
        .filter_map(|r| r.json())
        .filter_map(|j| j["trace_id"].as_str().map(str::to_owned))
        .collect()
}

/// The spent states' nonces, ordered by `order`.
async fn nonces(store: &Arc<dyn crate::store::OperationStore>, order: &str) -> Vec<String> {
    let mut tx = store.begin().await.expect("begin");
    let sql = format!("SELECT nonce FROM guard_redeemed_states ORDER BY {order}");
    let rows = tx.query(&sql, &[]).await.expect("rows");
    tx.rollback().await.expect("rollback");
    rows.iter()
        .map(|r| r.text("nonce").expect("nonce").to_owned())
        .collect()
}

/// The transactions that committed.
fn commits(counting: &Recording) -> usize {
    counting
        .take()
        .iter()
        .filter(|sent| sent.iter().any(|sql| sql == "COMMIT"))
        .count()
}

#[test]
fn an_outcome_nobody_waits_for_shares_the_next_confirmations_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (pipeline, counting, runtime) = counted_gathering(&dir, HOUR);
    runtime.block_on(async {
        pipeline.send(event(1));
        // The writer takes the outcome and gathers for an hour; the confirmation, which
        // someone waits for, comes meanwhile and ends the gathering.
        tokio::task::yield_now().await;
        pipeline.written(event(2)).await.expect("written");
    });
    assert_eq!(commits(&counting), 1, "one commit for both records");
    let traces = traces(&pipeline, &runtime);
    assert_eq!(
        traces,
        ["trace-1", "trace-2"],
        "in the order they were sent"
    );
}

#[test]
fn a_spend_takes_the_gathered_outcomes_along_and_is_told_a_replay() {
    let dir = tempfile::tempdir().unwrap();
    let (pipeline, counting, runtime) = counted_gathering(&dir, HOUR);
    let until = now_ms() + 60_000;
    let (first, again, twice) = runtime.block_on(async {
        pipeline.send(event(1));
        tokio::task::yield_now().await;
        let first = pipeline.spent(Spend::new("nonce-1", until)).await;
        let again = pipeline.spent(Spend::new("nonce-1", until)).await;
        // Two spends of one state in one group: the second finds the first's row.
        let twice = tokio::join!(
            pipeline.spent(Spend::new("nonce-2", until)),
            pipeline.spent(Spend::new("nonce-2", until))
        );
        (first, again, twice)
    });
    assert_eq!(first, Ok(true), "a fresh state is spent");
    assert_eq!(again, Ok(false), "a spent state is a replay");
    assert_eq!(
        twice,
        (Ok(true), Ok(false)),
        "one of two racing spends wins"
    );
    let writes: Vec<String> = counting
        .take()
        .into_iter()
        .map(|sent| sent.join(" "))
        .filter(|sql| sql.contains("INSERT INTO guard_audit_log"))
        .collect();
    assert_eq!(
        writes.len(),
        1,
        "one transaction wrote the outcome: {writes:?}"
    );
    assert!(
        writes[0].contains("INSERT INTO guard_redeemed_states") && writes[0].contains("COMMIT"),
        "the outcome rode with the first spend's commit: {writes:?}"
    );
    let records = runtime.block_on(pipeline.log().records()).expect("records");
    assert_eq!(records.len(), 1, "the outcome was written with the spend");
}

#[test]
fn a_confirmation_spending_a_spent_state_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let (pipeline, _counting, runtime) = counted(&dir);
    let until = now_ms() + 60_000;
    let accepted = |n| Event::new("delete_file", Outcome::Accepted, format!("trace-{n}"));
    let (first, replay, raced) = runtime.block_on(async {
        let first = pipeline
            .written_spending(accepted(1), Spend::new("nonce-1", until))
            .await;
        let replay = pipeline
            .written_spending(accepted(2), Spend::new("nonce-1", until))
            .await;
        let raced = tokio::join!(
            pipeline.written_spending(accepted(3), Spend::new("nonce-3", until)),
            pipeline.written_spending(accepted(4), Spend::new("nonce-3", until))
        );
        (first, replay, raced)
    });
    assert_eq!(first, Ok(true));
    assert_eq!(replay, Ok(false), "the replay is told");
    assert_eq!(
        raced,
        (Ok(true), Ok(false)),
        "one of two racing accepts wins"
    );
    let traces = traces(&pipeline, &runtime);
    assert_eq!(
        traces,
        ["trace-1", "trace-3"],
        "a confirmation whose spend found the state spent is not in the log"
    );
}

/// A group spends in the nonces' order (so two groups never wait on each other's rows
/// in opposite orders) and still tells each spend, and writes each event, as its own.
#[test]
fn a_group_spends_in_nonce_order_and_answers_each_spend() {
    let dir = tempfile::tempdir().unwrap();
    let (pipeline, _counting, runtime) = counted(&dir);
    let until = now_ms() + 60_000;
    let accepted = |n| Event::new("delete_file", Outcome::Accepted, format!("trace-{n}"));
    let log = pipeline.log().clone();
    let (before, group) = runtime.block_on(async {
        let before = pipeline.spent(Spend::new("a", until)).await;
        let group = log
            .write_group(
                &[],
                &[
                    (Spend::new("c", until), Some(accepted(1))),
                    (Spend::new("a", until), Some(accepted(2))),
                    (Spend::new("b", until), None),
                ],
            )
            .await;
        (before, group)
    });
    assert_eq!(before, Ok(true));
    assert_eq!(
        group.expect("group"),
        [true, false, true],
        "in the order given"
    );
    assert_eq!(
        traces(&pipeline, &runtime),
        ["trace-1"],
        "only the fresh spend's event"
    );
    let inserted = runtime.block_on(nonces(log.store(), "rowid"));
    assert_eq!(inserted, ["a", "b", "c"], "inserted in the nonces' order");
}

#[test]
fn spent_states_that_expired_are_purged_beside_later_spends() {
    let dir = tempfile::tempdir().unwrap();
    let (pipeline, _counting, runtime) = counted(&dir);
    let store = pipeline.log().store().clone();
    let left = runtime.block_on(async {
        let expired = now_ms() - 1;
        assert_eq!(pipeline.spent(Spend::new("old", expired)).await, Ok(true));
        tokio::time::sleep(PURGE_EVERY).await;
        let live = now_ms() + 60_000;
        assert_eq!(pipeline.spent(Spend::new("new", live)).await, Ok(true));
        for _ in 0..1_000 {
            if nonces(&store, "nonce").await == ["new"] {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        nonces(&store, "nonce").await
    });
    assert_eq!(
        left,
        ["new"],
        "the expired state's row went, the live one stayed"
    );
}

#[test]
fn a_waited_for_record_is_written_without_gathering() {
    let dir = tempfile::tempdir().unwrap();
    // Gathering for an hour: a write that waited for company would outlast the bound.
    let (pipeline, counting, runtime) = counted_gathering(&dir, HOUR);
    runtime.block_on(async {
        let written = tokio::time::timeout(BOUND, pipeline.written(event(1))).await;
        assert!(
            written.is_ok_and(|w| w.is_ok()),
            "a record someone waits for is written at once, not after the gathering"
        );
        pipeline.send(event(2));
        let settled = tokio::time::timeout(BOUND, pipeline.settled()).await;
        assert!(settled.is_ok(), "settled ends the gathering");
    });
    assert_eq!(commits(&counting), 2);
    assert_eq!(traces(&pipeline, &runtime), ["trace-1", "trace-2"]);
}

/// A guard dropped on a current-thread runtime (a stdio server's) blocks the only
/// thread that runtime has: its records are written all the same, by the writer's own.
#[test]
fn a_blocking_settle_on_a_current_thread_runtime_writes_what_was_queued() {
    let dir = tempfile::tempdir().unwrap();
    let (pipeline, _counting, runtime) = counted(&dir);
    let settled = runtime.block_on(async {
        pipeline.send(event(1));
        pipeline.settled_blocking(Duration::from_secs(10))
    });
    assert!(settled, "settled in time");
    assert_eq!(traces(&pipeline, &runtime), ["trace-1"]);
}

#[test]
fn an_outcome_alone_is_written_after_the_gathering() {
    let dir = tempfile::tempdir().unwrap();
    let (pipeline, counting, runtime) = counted(&dir);
    let written = runtime.block_on(async {
        pipeline.send(event(1));
        // Never `settled`, which would end the gathering: the timer must.
        for _ in 0..10_000 {
            tokio::time::sleep(GATHER).await;
            if !pipeline.log().records().await.expect("records").is_empty() {
                return true;
            }
        }
        false
    });
    assert!(
        written,
        "an outcome nobody waits for is written all the same"
    );
    assert_eq!(commits(&counting), 1);
}
