//! Observers: each reads one kind of state a tool can change and turns it into a
//! [`Snapshot`], a sorted map that compares equal exactly when nothing observable changed.
//!
//! The trait and the readings of several observers at once are here; the snapshot and its
//! differences are in `snapshot`, and each observer guard ships is in a file of its own:
//! `sqlite` (a database file), `dir` (a directory tree), `outbox` (guard's outbox) and
//! `closure` (any state a closure reads).

mod closure;
mod dir;
mod outbox;
mod snapshot;
#[cfg(feature = "sqlite")]
mod sqlite;

pub use closure::FnObserver;
pub use dir::DirObserver;
pub use outbox::OutboxObserver;
pub use snapshot::{Change, Snapshot};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteObserver;

/// A source of observable state: implement it for anything the kit cannot see on its own
/// (a file outside the fixture, an in-memory counter, a remote API's records, a cache).
///
/// The kit calls it from the test's thread between calls (never while a call is running,
/// except after a dropped connection, where it reads until two readings agree). Readings of
/// fresh fixtures are compared with each other, so describe state, not identity: no
/// timestamps, temporary paths or random ids in keys or values unless they are the effect.
/// A time that differs between fixtures but must not move within one belongs in
/// [`times`](Self::times).
pub trait Observe: Send + Sync {
    /// Names the observed thing in reports (`sqlite ops.db`, `dir files`, `outbox`).
    fn label(&self) -> String;
    /// Reads the state now. An error is reported, never treated as "unchanged".
    fn snapshot(&self) -> Result<Snapshot, String>;
    /// The state item by item (a row, a file, a message), for judging
    /// `destructiveHint: false`: an item that was there before and is gone was deleted, one
    /// whose description changed was overwritten, a new one is an addition. Defaults to
    /// [`snapshot`](Self::snapshot), which is right when its keys are already items; an
    /// observer that summarises many items under one key (a row count) should list them here,
    /// or every addition reads as an overwrite of the summary.
    fn items(&self) -> Result<Snapshot, String> {
        self.snapshot()
    }
    /// Volatile metadata under the keys of [`snapshot`](Self::snapshot), such as
    /// modification times: compared only before and after calls on the same fixture, never
    /// across fixtures, and only against `readOnlyHint`, so that a call that touches a thing
    /// without changing it (sets a file's time, writes the same bytes again) is seen.
    /// Defaults to nothing.
    fn times(&self) -> Result<Snapshot, String> {
        Ok(Snapshot::default())
    }
}

/// Reads every observer's items ([`Observe::items`]) and merges them under their labels.
pub fn items_all(observers: &[Box<dyn Observe>]) -> Result<Snapshot, String> {
    read_all(observers, |o| o.items())
}

/// Reads every observer and merges the results under their labels.
pub fn snapshot_all(observers: &[Box<dyn Observe>]) -> Result<Snapshot, String> {
    read_all(observers, |o| o.snapshot())
}

/// Reads every observer's times ([`Observe::times`]) and merges them under their labels.
pub(super) fn times_all(observers: &[Box<dyn Observe>]) -> Result<Snapshot, String> {
    read_all(observers, |o| o.times())
}

/// One reading of every observer, merged under their labels; an error names its observer.
fn read_all(
    observers: &[Box<dyn Observe>],
    read: impl Fn(&dyn Observe) -> Result<Snapshot, String>,
) -> Result<Snapshot, String> {
    let mut all = Snapshot::default();
    for observer in observers {
        let label = observer.label();
        let part = read(observer.as_ref()).map_err(|e| format!("{label}: cannot observe: {e}"))?;
        all.merge(&label, part);
    }
    Ok(all)
}

/// A digest's first 8 bytes in hex: enough to tell two readings apart in a report.
fn short(digest: &[u8]) -> String {
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// `n` and its noun, `one` or `many`.
fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
