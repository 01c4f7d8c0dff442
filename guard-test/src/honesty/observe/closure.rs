//! An observer from a closure, for state guard cannot read on its own.

use super::{Observe, Snapshot};

/// An observer from a label and a closure: a counter, a remote system's records, a file the
/// fixture does not own.
///
/// ```
/// use std::sync::{Arc, atomic::{AtomicU64, Ordering}};
/// use rmcp_guard_test::honesty::{FnObserver, Snapshot};
/// let hits = Arc::new(AtomicU64::new(0));
/// let seen = hits.clone();
/// let observer = FnObserver::new("hit counter", move || {
///     let mut snapshot = Snapshot::default();
///     snapshot.insert("hits", seen.load(Ordering::SeqCst).to_string());
///     Ok(snapshot)
/// });
/// # let _ = observer;
/// ```
pub struct FnObserver {
    label: String,
    read: ReadFn,
}

type ReadFn = Box<dyn Fn() -> Result<Snapshot, String> + Send + Sync>;

impl FnObserver {
    /// An observer called `label` that reads state with `read`.
    pub fn new(
        label: impl Into<String>,
        read: impl Fn() -> Result<Snapshot, String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            label: label.into(),
            read: Box::new(read),
        }
    }
}

impl Observe for FnObserver {
    fn label(&self) -> String {
        self.label.clone()
    }

    fn snapshot(&self) -> Result<Snapshot, String> {
        (self.read)()
    }
}
