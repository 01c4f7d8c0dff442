// A confirm's `Approved` proof only comes from guard's lock-and-recheck driver: the lock and
// re-check steps are not reachable, and `Approved` has no constructor.

use rmcp_guard::ops::{Approved, Locked, Recheck};
use serde::{Deserialize, Serialize};

#[derive(Clone, Serialize, Deserialize)]
struct Cancel {
    order_no: String,
}

fn forge(locked: Locked<Cancel>) -> Approved<Cancel> {
    Approved(locked)
}

async fn skip_the_hook(locked: Locked<Cancel>) {
    let _ = locked.rechecked(Ok(Recheck::Unchanged)).await;
}

fn lock_by_hand() {
    let _ = Locked::<Cancel>::begin;
}

fn main() {
    let _ = (forge, skip_the_hook, lock_by_hand);
}
