//! The request states used in this process (when no operation store keeps them): each nonce
//! until its state expires. Expired entries leave in order of expiry, so marking a state
//! costs a logarithm of the entries, not a scan of all of them.

use std::{
    cmp::Reverse,
    collections::{BinaryHeap, HashMap, hash_map::Entry},
    time::{Duration, Instant},
};

#[derive(Default)]
pub(crate) struct UsedStates {
    until: HashMap<String, Instant>,
    /// The same entries, soonest expiry first.
    expiring: BinaryHeap<Reverse<(Instant, String)>>,
}

impl UsedStates {
    /// Marks `nonce` used until `now + valid_for`; false if it already was (a replay).
    pub(crate) fn mark(&mut self, nonce: &str, valid_for: Duration, now: Instant) -> bool {
        self.forget_expired(now);
        match self.until.entry(nonce.to_owned()) {
            Entry::Occupied(_) => false,
            Entry::Vacant(entry) => {
                let until = now + valid_for;
                entry.insert(until);
                self.expiring.push(Reverse((until, nonce.to_owned())));
                true
            }
        }
    }

    fn forget_expired(&mut self, now: Instant) {
        while let Some(Reverse((until, _))) = self.expiring.peek() {
            if *until > now {
                break;
            }
            if let Some(Reverse((until, nonce))) = self.expiring.pop()
                && self.until.get(&nonce) == Some(&until)
            {
                self.until.remove(&nonce);
            }
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.until.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn a_state_is_used_once_until_it_expires() {
        let start = Instant::now();
        let mut used = UsedStates::default();
        assert!(used.mark("a", MINUTE, start));
        assert!(!used.mark("a", MINUTE, start), "a replay");
        assert!(
            !used.mark("a", MINUTE, start + MINUTE - Duration::from_millis(1)),
            "still within its life"
        );
        assert!(used.mark("b", MINUTE, start), "another state");
        // Past its life the state itself is refused as expired; the record may go.
        assert!(used.mark("c", MINUTE, start + MINUTE));
        assert_eq!(used.len(), 1, "only c is left");
    }

    #[test]
    fn a_long_lived_state_outlives_short_ones_marked_after_it() {
        let start = Instant::now();
        let mut used = UsedStates::default();
        assert!(used.mark("long", 10 * MINUTE, start));
        for i in 0..100 {
            assert!(used.mark(&format!("short-{i}"), MINUTE, start));
        }
        let later = start + 2 * MINUTE;
        assert!(used.mark("after", MINUTE, later));
        assert_eq!(used.len(), 2, "the short ones are gone");
        assert!(
            !used.mark("long", 10 * MINUTE, later),
            "the long one is still used"
        );
    }

    #[test]
    fn expired_records_do_not_pile_up() {
        let start = Instant::now();
        let mut used = UsedStates::default();
        for i in 0..10_000u64 {
            let now = start + Duration::from_millis(i);
            assert!(used.mark(&i.to_string(), Duration::from_millis(10), now));
            assert!(used.len() <= 11, "at most the last 10 ms are kept");
        }
    }
}
