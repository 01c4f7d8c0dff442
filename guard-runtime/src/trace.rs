//! Trace ids: unique per call without a system call per call.

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
