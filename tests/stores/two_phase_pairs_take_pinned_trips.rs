//! A two-phase pair (order-cancel's prepare and confirm) makes a pinned number of trips to
//! its store, guard's own counted apart from the example's: a change that adds a trip
//! fails here, not only in the bench. A trip is one call into the store's transaction
//! (`rmcp_guard_test::testing::CountingStore`): one job on SQLite's thread, one pipelined round
//! trip on PostgreSQL.

use crate::support::orders::{Engine, SCOPE, World, body, confirm, connect, prepare};
use order_cancel::OrderCancel;
use rmcp_guard::{EnvIdentity, Guard, Identity, ops::Operations};
use rmcp_guard_test::testing::CountingStore;

both_stores!(a_pair_takes_the_pinned_trips);

/// Trips per (prepare, confirm): all of them, and guard's own among them.
struct Pinned {
    prepare: usize,
    prepare_guard: usize,
    confirm: usize,
    confirm_guard: usize,
}

fn pinned(engine: Engine) -> Pinned {
    match engine {
        // Prepare: the rate check; the example's two reads of the order and its pending-request
        // read; the intent with its audit entry and the COMMIT. Confirm: the intent; the
        // example's order check and request; the result with its audit entry and the COMMIT.
        Engine::Sqlite => Pinned {
            prepare: 5,
            prepare_guard: 2,
            confirm: 4,
            confirm_guard: 2,
        },
        // Also the target's lock, in the prepare (the example asks for it between its reads)
        // and in the confirm (sent with the intent's locked read).
        Engine::Postgres => Pinned {
            prepare: 6,
            prepare_guard: 3,
            confirm: 5,
            confirm_guard: 3,
        },
    }
}

/// The one transaction of a call among those `store` recorded: the one touching intents
/// (the audit log's sequencer also runs transactions on PostgreSQL, never on intents).
fn call_trips(store: &CountingStore, what: &str) -> Vec<Vec<String>> {
    let mut calls: Vec<_> = store
        .take()
        .into_iter()
        .filter(|trips| {
            trips
                .iter()
                .flatten()
                .any(|sql| sql.contains("guard_operations"))
        })
        .collect();
    assert_eq!(
        calls.len(),
        1,
        "{what} ran {} transactions on intents: {calls:#?}",
        calls.len()
    );
    calls.remove(0)
}

/// A trip is the example's when every statement in it is: its orders and requests.
fn guards(trips: &[Vec<String>]) -> usize {
    let example = |sql: &String| sql.contains("orders") || sql.contains("order_cancel_");
    trips
        .iter()
        .filter(|trip| !trip.iter().all(example))
        .count()
}

async fn a_pair_takes_the_pinned_trips(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let counting = CountingStore::new(world.store.clone());
    let identity = EnvIdentity::new(Identity::new("tenant_demo", "alice", [SCOPE]));
    let server = OrderCancel::new(
        Guard::ephemeral()
            .expect("guard key")
            .with_operations(Operations::new(counting.clone(), identity)),
    );
    let alice = connect(server).await;
    let pinned = pinned(engine);
    for (order, order_id) in [("A10001", 1001), ("A10002", 1002)] {
        let _ = counting.take();
        let id = prepare(&alice, order).await;
        let prepared = call_trips(&counting, "the prepare");
        let submitted = confirm(&alice, &id).await;
        assert_eq!(body(&submitted)["status"], "SUBMITTED", "{submitted:?}");
        assert_eq!(body(&submitted)["already_processed"], false);
        let confirmed = call_trips(&counting, "the confirm");
        assert_eq!(
            (prepared.len(), guards(&prepared)),
            (pinned.prepare, pinned.prepare_guard),
            "{engine:?}: the prepare's trips (all, guard's): {prepared:#?}"
        );
        assert_eq!(
            (confirmed.len(), guards(&confirmed)),
            (pinned.confirm, pinned.confirm_guard),
            "{engine:?}: the confirm's trips (all, guard's): {confirmed:#?}"
        );
        // Fewer trips, the same outcome: one request, one effect, the intent submitted.
        assert_eq!(world.requests(order_id).await, 1);
        assert_eq!(world.effects(&id).await, 1);
        assert_eq!(world.status(&id).await, "SUBMITTED");
    }
}
