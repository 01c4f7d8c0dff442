//! Opening a store's file: created (or brought up to date) and put in WAL mode, or opened
//! as it is, when it must already be guard's, without writing a byte to a file it refuses.

use std::{path::Path, sync::Arc, time::Duration};

use rusqlite::{Connection, ErrorCode, OpenFlags};
use tokio::sync::Mutex;

use super::{BUSY_TIMEOUT, SqliteStore, errors::store_error, reader::Reader, worker::Worker};
use crate::store::{
    OperationStore,
    migrate::{self, Step},
    sql::StoreError,
};

impl SqliteStore {
    /// Opens (or creates) the store at `path`, in WAL mode, and brings it to the last of
    /// `steps` (`SqliteStore::open` passes guard's schema). A new file is its owner's alone
    /// (mode 0600), and so are the `-wal` and `-shm` files SQLite makes beside it, which take
    /// the database file's mode: the store holds people's names, paths, reasons and answers.
    pub(crate) fn open_with(path: &Path, steps: &[Step]) -> Result<Self, StoreError> {
        create_owner_only(path)?;
        let connection = Connection::open(path).map_err(store_error)?;
        connection.busy_timeout(BUSY_TIMEOUT).map_err(store_error)?;
        let mode = switch_to_wal(&connection)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Other(format!(
                "{} cannot use WAL (journal mode is {mode}); put the store on a local disk",
                path.display()
            )));
        }
        connection
            .execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
            .map_err(store_error)?;
        let store = Self {
            worker: Worker::start(connection, "guard-sqlite")?,
            turn: Arc::new(Mutex::new(())),
            begin: "BEGIN IMMEDIATE",
            reader: Reader::of(path).map(Arc::new),
        };
        // One `BEGIN IMMEDIATE` transaction: two processes opening one old file migrate it
        // once. The pages the migration read or wrote are handed back to the system: an
        // idle server needs none of them (a fresh file's are every table of the schema).
        wait(async {
            let mut tx = store.begin().await?;
            migrate::run(&mut tx, steps).await?;
            tx.commit().await?;
            store
                .worker
                .request(|connection| connection.release_memory())?
                .await
        })
        .map_err(|e| {
            StoreError::Other(format!(
                "cannot bring guard's tables in {} to schema version {}: {e}",
                path.display(),
                migrate::version(steps)
            ))
        })?;
        Ok(store)
    }
}

/// Creates `path` empty with mode 0600 when nothing is there yet; an existing file keeps
/// its mode, which is its owner's choice.
fn create_owner_only(path: &Path) -> Result<(), StoreError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(StoreError::Other(format!(
            "cannot create the store {} ({e}); create its directory, writable by the server's user, or name another file",
            path.display()
        ))),
    }
}

/// How [`SqliteStore::open_existing_with`] opens a store that must already be guard's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Read-only (`mode=ro`, or `immutable=1` when no write-ahead log is beside the file):
    /// nothing is written to the file or beside it.
    Read,
    /// Read and write, but never created and never migrated.
    Write,
}

impl SqliteStore {
    /// Opens the existing store at `path` without creating or migrating anything, after
    /// [`migrate::check`] accepted it (guard's log at the last of `steps`, no table of
    /// `retired` left); a refused store is left exactly as it was.
    pub(crate) fn open_existing_with(
        path: &Path,
        access: Access,
        steps: &[Step],
        retired: &[&str],
    ) -> Result<Self, StoreError> {
        if access == Access::Write {
            // Refused by a reader first: a refusal must leave the file as it was, and a
            // writable open of a WAL file rewrites what is beside it even when it writes
            // nothing.
            drop(Self::open_existing_with(
                path,
                Access::Read,
                steps,
                retired,
            )?);
        }
        let shown = path.display();
        let absolute = std::fs::canonicalize(path).map_err(|e| {
            StoreError::Other(format!(
                "cannot open {shown}: {e}; give the SQLite file of an existing guard store"
            ))
        })?;
        let flags = match access {
            Access::Read => OpenFlags::SQLITE_OPEN_READ_ONLY,
            Access::Write => OpenFlags::SQLITE_OPEN_READ_WRITE,
        } | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection =
            Connection::open_with_flags(uri(&absolute, access), flags).map_err(store_error)?;
        connection.busy_timeout(BUSY_TIMEOUT).map_err(store_error)?;
        let store = Self {
            worker: Worker::start(connection, "guard-sqlite")?,
            turn: Arc::new(Mutex::new(())),
            begin: match access {
                Access::Read => "BEGIN",
                Access::Write => "BEGIN IMMEDIATE",
            },
            reader: match access {
                Access::Read => None,
                Access::Write => Reader::of(&absolute).map(Arc::new),
            },
        };
        wait(async {
            let mut tx = store.begin().await?;
            migrate::check(&mut tx, steps, retired).await?;
            tx.rollback().await
        })
        .map_err(|e| StoreError::Other(format!("{shown}: {e}")))?;
        if access == Access::Write {
            let mode = wait(store.pragma("journal_mode"))?;
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(StoreError::Other(format!(
                    "{shown} is not in WAL mode (journal mode is {mode}), as guard's server \
                     leaves its store; open it with the server once"
                )));
            }
        }
        Ok(store)
    }

    /// The value of `PRAGMA name` (a read).
    async fn pragma(&self, name: &str) -> Result<String, StoreError> {
        let sql = format!("PRAGMA {name}");
        self.worker
            .request(move |connection| connection.query_row(&sql, [], |row| row.get(0)))?
            .await
    }
}

/// The URI that opens `path` with `access`. A reader opens the file `immutable=1` when no
/// write-ahead log is beside it (no server has it open, or one closed it cleanly): SQLite
/// then takes no lock and creates no `-wal` or `-shm` file. With a log beside it, a writer
/// may be live, so the reader opens `mode=ro` and reads through the log.
fn uri(path: &Path, access: Access) -> String {
    let mut text = String::from("file:");
    for byte in path.as_os_str().as_encoded_bytes() {
        match byte {
            b'%' | b'?' | b'#' => text.push_str(&format!("%{byte:02X}")),
            b if b.is_ascii() => text.push(char::from(*b)),
            b => text.push_str(&format!("%{b:02X}")),
        }
    }
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let live = std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0);
    text.push_str(match access {
        Access::Read if !live => "?immutable=1",
        Access::Read => "?mode=ro",
        Access::Write => "?mode=rw",
    });
    text
}

/// Puts the file in WAL mode and answers the mode it is in. Two processes switching a new
/// file at once both hold a read lock and want the write lock; SQLite answers one of them
/// `SQLITE_BUSY` at once instead of waiting (waiting would deadlock), so that one tries again
/// after the other has switched, for at most [`BUSY_TIMEOUT`].
fn switch_to_wal(connection: &Connection) -> Result<String, StoreError> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)) {
            Err(error) if is_busy(&error) && std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            mode => return mode.map_err(store_error),
        }
    }
}

fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Waits for `future` on this thread. `open` is not async; the store's own thread does the
/// work, so parking here until it answers cannot deadlock. The future runs outside tokio's
/// cooperative budget: opened from inside a task, the schema's many channel round trips
/// would spend that task's budget, and a spent budget answers "not yet" and wakes at once,
/// for ever, as nothing here ever yields back to tokio to refill it.
fn wait<T>(future: impl Future<Output = T>) -> T {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Arc::new(Unpark(std::thread::current())).into();
    let mut context = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(tokio::task::unconstrained(future));
    loop {
        if let std::task::Poll::Ready(value) = future.as_mut().poll(&mut context) {
            return value;
        }
        std::thread::park();
    }
}
