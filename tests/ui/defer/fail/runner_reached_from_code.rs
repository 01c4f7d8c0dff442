// Code reaches no runner of deferred calls: it cannot list and claim them with a time of its
// own, nor withdraw someone else's. Only the pipeline does, on the database's clock.
use rmcp_guard::{Guard, defer::Ending, person::Person};

async fn run_everything_now(guard: &Guard) {
    let calls = guard.deferred_calls().expect("a store");
    let _ = calls
        .run_due(i64::MAX, |_due| async move {
            Ending::Failed {
                reason: String::new(),
            }
        })
        .await;
    let alice = Person::new("acme", "alice").expect("a person");
    let _ = calls.withdraw(&alice, "her-call", "t").await;
}

fn main() {
    let _ = run_everything_now;
}
