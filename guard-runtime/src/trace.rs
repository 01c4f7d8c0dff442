//! Trace ids and request-state nonces: unique per call without a system call per call.

use std::sync::{
    OnceLock,
    atomic::{AtomicU64, Ordering},
};

/// A process-random prefix and a counter: `3f2a9c1e07b4d5e6-42`.
pub fn new_id() -> String {
    static PREFIX: OnceLock<u64> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let prefix = PREFIX.get_or_init(|| uuid::Uuid::new_v4().as_u64_pair().0);
    format!("{prefix:016x}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A request state's nonce: a process-random 128-bit prefix and a counter. It is sealed
/// with the state (so it cannot be chosen by a client) and only needs to be unique: a
/// restarted process draws a new prefix.
pub fn new_nonce() -> String {
    static PREFIX: OnceLock<u128> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let prefix = PREFIX.get_or_init(|| uuid::Uuid::new_v4().as_u128());
    format!("{prefix:032x}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    #[test]
    fn nonces_are_unique_and_share_the_process_prefix() {
        let a = super::new_nonce();
        let b = super::new_nonce();
        assert_ne!(a, b);
        assert_eq!(a.split_once('-').unwrap().0, b.split_once('-').unwrap().0);
        assert_eq!(a.split_once('-').unwrap().0.len(), 32);
    }
}
