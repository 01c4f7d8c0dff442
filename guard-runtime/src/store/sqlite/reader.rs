//! The connection [`OperationStore::peek`](crate::store::OperationStore::peek) reads on,
//! beside the writer's: in WAL mode a read sees the last commit without taking a turn.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use super::{BUSY_TIMEOUT, errors::store_error, worker::Worker};

/// A read-only connection of the store's file on a thread of its own, opened on the first
/// peek: a read in WAL mode sees the last commit without waiting for the writer, whose
/// thread may be busy flushing one.
pub(super) struct Reader {
    path: PathBuf,
    worker: std::sync::OnceLock<Option<Worker>>,
}

impl Reader {
    pub(super) fn of(path: &Path) -> Option<Self> {
        Some(Self {
            path: std::fs::canonicalize(path).ok()?,
            worker: std::sync::OnceLock::new(),
        })
    }

    /// The reader's thread, started on the first peek; `None` (logged once) if the file
    /// cannot be opened again, and peeks read in a transaction instead.
    pub(super) fn worker(&self) -> Option<&Worker> {
        self.worker
            .get_or_init(|| {
                let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
                Connection::open_with_flags(&self.path, flags)
                    .and_then(|c| c.busy_timeout(BUSY_TIMEOUT).map(|()| c))
                    .map_err(store_error)
                    .and_then(|c| Worker::start(c, "guard-sqlite-read"))
                    .inspect_err(|error| {
                        tracing::warn!(path = %self.path.display(), %error, "cannot open a reader of the SQLite store; reads take the writer's turn");
                    })
                    .ok()
            })
            .as_ref()
    }
}
