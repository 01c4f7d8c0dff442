// Only guard's pipeline opens an undo window, after a reversible tool's effect ran for the
// person who called it: code cannot plant one for anyone, any tool and any data with a
// deadline of its choosing, which the published `undo` would then run, nor undo one at a
// time of its own.
use std::time::Duration;

use rmcp_guard::{Guard, person::Person};
use serde_json::json;

async fn plant(guard: &Guard) {
    let windows = guard.undo_windows().expect("a store");
    let alice = Person::new("acme", "alice").expect("a person");
    let ten_years = Duration::from_secs(10 * 365 * 24 * 3600);
    let _ = windows
        .open(
            &alice,
            "delete_file",
            "/etc/passwd",
            &json!({"trashed": "/etc/passwd"}),
            ten_years,
            0,
            "t",
        )
        .await;
    let _ = windows
        .undo(&alice, "her-window", 0, "t", |_window| async move {
            Ok(json!({}))
        })
        .await;
}

fn main() {
    let _ = plant;
}
