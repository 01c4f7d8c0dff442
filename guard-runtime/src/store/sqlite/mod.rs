//! The embedded operation store: one SQLite file in WAL mode. A transaction starts with
//! `BEGIN IMMEDIATE` (sent with its first statement), which takes the database's write lock
//! before anything is read, so two confirms of one operation (in this process or another)
//! run one after the other, never interleaved.
//!
//! rusqlite blocks, so the connection lives on a thread of its own and every statement is
//! sent there: the async runtime's workers never wait on the disk. SQLite admits one writer
//! at a time; writers of this process queue for their turn in order instead of sleeping in
//! SQLite's busy handler, and wait on another process's lock for at most [`BUSY_TIMEOUT`].

use std::{
    path::{Path, PathBuf},
    sync::{Arc, mpsc},
    time::Duration,
};

use rusqlite::{Connection, ErrorCode, OpenFlags, types::ValueRef};
use tokio::sync::{Mutex, OwnedMutexGuard, oneshot};

use super::{
    OperationStore,
    migrate::{self, Step},
    sql::{
        BoxFuture, Dialect, Done, Kind, Row, SqlValue, Statement, StoreError, Then, Tx, TxBackend,
        numbered_for_sqlite,
    },
};

/// How long a transaction waits for another process's write lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The SQLite operation store. One connection per process, on its own thread: SQLite runs one
/// writer at a time anyway, and a single connection keeps its statement cache warm.
#[derive(Clone)]
pub struct SqliteStore {
    worker: Worker,
    /// The in-process writers' queue: held by a transaction from `BEGIN` to its end.
    turn: Arc<Mutex<()>>,
    /// What starts a transaction: `BEGIN IMMEDIATE` (the write lock first), or `BEGIN` on
    /// a read-only store, which takes no write lock.
    begin: &'static str,
    /// Where [`OperationStore::peek`] reads on a store that writes; `None` on a read-only
    /// store, whose transactions take no write lock anyway.
    reader: Option<Arc<Reader>>,
}

/// A read-only connection of the store's file on a thread of its own, opened on the first
/// peek: a read in WAL mode sees the last commit without waiting for the writer, whose
/// thread may be busy flushing one.
struct Reader {
    path: PathBuf,
    worker: std::sync::OnceLock<Option<Worker>>,
}

impl Reader {
    fn of(path: &Path) -> Option<Self> {
        Some(Self {
            path: std::fs::canonicalize(path).ok()?,
            worker: std::sync::OnceLock::new(),
        })
    }

    /// The reader's thread, started on the first peek; `None` (logged once) if the file
    /// cannot be opened again, and peeks read in a transaction instead.
    fn worker(&self) -> Option<&Worker> {
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

impl SqliteStore {
    /// Opens (or creates) the store at `path`, in WAL mode, and brings it to the last of
    /// `steps` (`SqliteStore::open` passes guard's schema).
    pub(crate) fn open_with(path: &Path, steps: &[Step]) -> Result<Self, StoreError> {
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
/// work, so parking here until it answers cannot deadlock.
fn wait<T>(future: impl Future<Output = T>) -> T {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Arc::new(Unpark(std::thread::current())).into();
    let mut context = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(value) = future.as_mut().poll(&mut context) {
            return value;
        }
        std::thread::park();
    }
}

impl OperationStore for SqliteStore {
    /// Takes this process's turn; `BEGIN IMMEDIATE` goes to the connection with the
    /// transaction's first statement, so it costs no trip of its own.
    fn begin(&self) -> BoxFuture<'_, Result<Tx, StoreError>> {
        Box::pin(async move {
            let turn = self.turn.clone().lock_owned().await;
            Ok(Tx::new(Box::new(SqliteTx {
                worker: self.worker.clone(),
                _turn: turn,
                begun: false,
                begin: self.begin,
            })))
        })
    }

    /// On the reader's connection, without a transaction or the writers' turn.
    fn peek<'a>(
        &'a self,
        sql: &'a str,
        params: &'a [SqlValue],
    ) -> BoxFuture<'a, Result<Vec<Row>, StoreError>> {
        let Some(worker) = self.reader.as_deref().and_then(Reader::worker) else {
            return Box::pin(super::read_alone(self, sql, params));
        };
        let (sql, params) = owned(sql, params);
        let answer =
            worker.request(move |connection| Ok(run(connection, &sql, params, true)?.rows));
        Box::pin(async move { answer?.await })
    }
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// The thread that owns the connection, and the queue of work sent to it. Jobs run in the
/// order they were sent; the thread ends when the last handle to the store is gone.
#[derive(Clone)]
struct Worker {
    jobs: mpsc::Sender<Job>,
}

impl Worker {
    fn start(mut connection: Connection, name: &str) -> Result<Self, StoreError> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                while let Some(job) = next(&inbox, !connection.is_autocommit()) {
                    job(&mut connection);
                }
            })
            .map_err(|e| StoreError::Other(format!("cannot start the SQLite thread: {e}")))?;
        Ok(Self { jobs })
    }

    /// Sends `job` to the connection's thread now; its answer arrives without blocking.
    fn request<T, J>(
        &self,
        job: J,
    ) -> Result<impl Future<Output = Result<T, StoreError>> + use<T, J>, StoreError>
    where
        T: Send + 'static,
        J: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        self.send(move |connection| {
            let _ = reply.send(job(connection).map_err(store_error));
        })?;
        Ok(async move { answer.await.map_err(|_| stopped())? })
    }

    /// Queues `job` without waiting for it.
    fn send(&self, job: impl FnOnce(&mut Connection) + Send + 'static) -> Result<(), StoreError> {
        self.jobs.send(Box::new(job)).map_err(|_| stopped())
    }
}

/// How long the thread waits awake for a transaction's next statement before it sleeps.
const STAY_AWAKE: Duration = Duration::from_micros(50);

/// The next job, or `None` once every sender is gone. Inside a transaction the next
/// statement usually follows within microseconds, so the thread checks for it awake for
/// [`STAY_AWAKE`] first: being woken from sleep costs more than that on a busy machine.
fn next(inbox: &mpsc::Receiver<Job>, in_transaction: bool) -> Option<Job> {
    if in_transaction {
        let awake = std::time::Instant::now();
        while awake.elapsed() < STAY_AWAKE {
            match inbox.try_recv() {
                Ok(job) => return Some(job),
                Err(mpsc::TryRecvError::Disconnected) => return None,
                Err(mpsc::TryRecvError::Empty) => std::thread::yield_now(),
            }
        }
    }
    inbox.recv().ok()
}

fn stopped() -> StoreError {
    StoreError::Other(
        "the SQLite store's thread has stopped (a statement panicked); restart the server".into(),
    )
}

struct SqliteTx {
    worker: Worker,
    /// Released after `Drop` has queued the rollback, so the next writer's `BEGIN` runs
    /// after it.
    _turn: OwnedMutexGuard<()>,
    /// Whether `BEGIN IMMEDIATE` was queued (with the first statement) and the transaction
    /// not yet ended.
    begun: bool,
    /// The store's `BEGIN` statement.
    begin: &'static str,
}

impl SqliteTx {
    /// Sends `job` to the connection, after `BEGIN IMMEDIATE` if this is the transaction's
    /// first.
    fn job<'a, T: Send + 'static>(
        &'a mut self,
        job: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> BoxFuture<'a, Result<T, StoreError>> {
        let begin = (!std::mem::replace(&mut self.begun, true)).then_some(self.begin);
        let answer = self.worker.request(move |connection| {
            if let Some(begin) = begin {
                connection.execute_batch(begin)?;
            }
            job(connection)
        });
        Box::pin(async move { answer?.await })
    }

    /// Ends the transaction: `finish` runs on the connection and answers whether to commit.
    /// Sent now, so it is queued ahead of the next writer's `BEGIN` even if the returned
    /// future is never polled.
    fn end(
        mut self: Box<Self>,
        finish: impl FnOnce(&mut Connection) -> Result<bool, StoreError> + Send + 'static,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        let begin = (!self.begun).then_some(self.begin);
        let answer = self.worker.request(move |connection| {
            let ended = begin
                .map_or(Ok(()), |begin| {
                    connection.execute_batch(begin).map_err(store_error)
                })
                .and_then(|()| finish(connection))
                .and_then(|commit| {
                    let end = if commit { "COMMIT" } else { "ROLLBACK" };
                    connection.execute_batch(end).map_err(store_error)
                });
            if !connection.is_autocommit() {
                // A failed statement or COMMIT leaves the transaction open; end it so the
                // connection is usable.
                let _ = connection.execute_batch("ROLLBACK");
            }
            Ok(ended)
        });
        self.begun = answer.is_err();
        Box::pin(async move {
            let result = answer?.await.and_then(|ended| ended);
            drop(self);
            result
        })
    }
}

/// Runs `sql` (written with `$1`, `$2`, …) on `connection`: its rows if `wants_rows`, else
/// the rows it changed.
fn run(
    connection: &mut Connection,
    sql: &str,
    params: impl IntoIterator<Item = rusqlite::types::Value>,
    wants_rows: bool,
) -> rusqlite::Result<Done> {
    let mut prepared = connection.prepare_cached(&numbered_for_sqlite(sql))?;
    let params = rusqlite::params_from_iter(params);
    if wants_rows {
        let rows = rows(&mut prepared, params)?;
        Ok(Done {
            changed: rows.len() as u64,
            rows,
        })
    } else {
        let changed = prepared.execute(params)? as u64;
        Ok(Done {
            rows: Vec::new(),
            changed,
        })
    }
}

/// Runs one statement of a pipeline.
fn run_statement(connection: &mut Connection, statement: &Statement) -> rusqlite::Result<Done> {
    let params = statement.params().iter().map(to_sqlite);
    run(connection, statement.sql(), params, statement.wants_rows())
}

/// Runs `statements` in order, stopping at the first that fails.
fn run_all(connection: &mut Connection, statements: &[Statement]) -> Result<Vec<Done>, StoreError> {
    statements
        .iter()
        .map(|s| run_statement(connection, s).map_err(store_error))
        .collect()
}

fn rows(
    statement: &mut rusqlite::Statement<'_>,
    params: impl rusqlite::Params,
) -> rusqlite::Result<Vec<Row>> {
    let columns: Arc<[String]> = statement.column_names().map(str::to_owned).collect();
    let width = columns.len();
    let mut rows = statement.query(params)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let values = (0..width)
            .map(|i| row.get_ref(i).map(from_sqlite))
            .collect::<rusqlite::Result<Vec<_>>>()?;
        out.push(Row::new(columns.clone(), values));
    }
    Ok(out)
}

impl TxBackend for SqliteTx {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn execute<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [SqlValue],
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        let (sql, params) = owned(sql, params);
        self.job(move |connection| Ok(run(connection, &sql, params, false)?.changed))
    }

    fn query<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [SqlValue],
    ) -> BoxFuture<'a, Result<Vec<Row>, StoreError>> {
        let (sql, params) = owned(sql, params);
        self.job(move |connection| Ok(run(connection, &sql, params, true)?.rows))
    }

    /// One trip to the connection's thread for all of them.
    fn pipeline<'a>(
        &'a mut self,
        statements: &'a [Statement],
    ) -> BoxFuture<'a, Result<Vec<Done>, StoreError>> {
        let statements = statements.to_vec();
        self.job(move |connection| {
            statements
                .iter()
                .map(|s| run_statement(connection, s))
                .collect()
        })
    }

    /// One trip for the statements and the commit.
    fn commit_after(
        self: Box<Self>,
        statements: Vec<Statement>,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        self.end(move |connection| {
            run_all(connection, &statements)?;
            Ok(true)
        })
    }

    /// One trip: `then` runs on the connection's thread, between the statements.
    fn commit_then(
        self: Box<Self>,
        statements: Vec<Statement>,
        then: Then,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        self.end(move |connection| {
            let more = then(run_all(connection, &statements)?)?;
            run_all(connection, &more)?;
            Ok(true)
        })
    }

    fn batch<'a>(&'a mut self, sql: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        let sql = sql.to_owned();
        self.job(move |connection| connection.execute_batch(&sql))
    }

    fn commit(self: Box<Self>) -> BoxFuture<'static, Result<(), StoreError>> {
        if !self.begun {
            // Nothing was read or written: there is nothing to commit.
            return Box::pin(async { Ok(()) });
        }
        self.end(|_| Ok(true))
    }

    fn rollback(self: Box<Self>) -> BoxFuture<'static, Result<(), StoreError>> {
        if !self.begun {
            return Box::pin(async { Ok(()) });
        }
        self.end(|_| Ok(false))
    }
}

impl Drop for SqliteTx {
    /// A transaction dropped unfinished (an error path, a cancelled call) rolls back.
    fn drop(&mut self) {
        if self.begun {
            let queued = self.worker.send(|connection| {
                if connection.is_autocommit() {
                    // Its `BEGIN` failed: there is nothing to roll back.
                    return;
                }
                if let Err(error) = connection.execute_batch("ROLLBACK") {
                    tracing::error!(%error, "could not roll back an abandoned SQLite transaction");
                }
            });
            if let Err(error) = queued {
                tracing::error!(%error, "could not roll back an abandoned SQLite transaction");
            }
        }
    }
}

/// A statement's text and values, owned, to send to the connection's thread.
fn owned(sql: &str, params: &[SqlValue]) -> (String, Vec<rusqlite::types::Value>) {
    (sql.to_owned(), params.iter().map(to_sqlite).collect())
}

fn to_sqlite(value: &SqlValue) -> rusqlite::types::Value {
    use rusqlite::types::Value;
    match value {
        SqlValue::Null => Value::Null,
        SqlValue::Int(v) => Value::Integer(*v),
        SqlValue::Real(v) => Value::Real(*v),
        SqlValue::Text(v) => Value::Text(v.clone()),
    }
}

fn from_sqlite(value: ValueRef<'_>) -> SqlValue {
    match value {
        ValueRef::Null => SqlValue::Null,
        ValueRef::Integer(v) => SqlValue::Int(v),
        ValueRef::Real(v) => SqlValue::Real(v),
        ValueRef::Text(v) | ValueRef::Blob(v) => {
            SqlValue::Text(String::from_utf8_lossy(v).into_owned())
        }
    }
}

/// What a SQLite error means: the one reading of SQLite's errors, for the store and for
/// the tools' handles. Result codes first; the text only where SQLite reports a refused
/// write without one (a `query_only` connection, an `ATTACH` past the limit of zero).
pub(crate) fn kind(error: &rusqlite::Error) -> Kind {
    if let rusqlite::Error::SqliteFailure(e, _) = error {
        match e.code {
            ErrorCode::ConstraintViolation
                if matches!(
                    e.extended_code,
                    rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                        | rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
                ) =>
            {
                return Kind::Unique;
            }
            ErrorCode::ConstraintViolation => return Kind::Constraint,
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => return Kind::Busy,
            ErrorCode::ReadOnly => return Kind::ReadOnly,
            _ if e.extended_code == rusqlite::ffi::SQLITE_READONLY => return Kind::ReadOnly,
            _ => {}
        }
    }
    let text = error.to_string();
    if text.contains("readonly") || text.contains("too many attached databases") {
        Kind::ReadOnly
    } else {
        Kind::Other
    }
}

fn store_error(error: rusqlite::Error) -> StoreError {
    kind(&error).store_error(error.to_string())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rusqlite::Connection;

    use super::{Kind, kind};

    fn error_of(connection: &Connection, sql: &str) -> rusqlite::Error {
        connection.execute_batch(sql).unwrap_err()
    }

    #[test]
    fn constraint_errors_are_read_by_code_whatever_the_table_is_called() {
        let connection = Connection::open_in_memory().unwrap();
        connection
            .execute_batch(
                "CREATE TABLE readonly_items (id INTEGER PRIMARY KEY, n INTEGER NOT NULL);
                 INSERT INTO readonly_items VALUES (1, 1);",
            )
            .unwrap();
        let duplicate = error_of(&connection, "INSERT INTO readonly_items VALUES (1, 2)");
        assert_eq!(kind(&duplicate), Kind::Unique, "{duplicate}");
        let missing = error_of(&connection, "INSERT INTO readonly_items VALUES (2, NULL)");
        assert_eq!(kind(&missing), Kind::Constraint, "{missing}");
        // What a tool's handle shows the model: not a refused write.
        let shown = crate::error::ToolError::from(duplicate);
        assert_eq!(shown.code(), crate::error::codes::INTERNAL);
    }

    #[test]
    fn a_refused_write_is_read_only() {
        let connection = Connection::open_in_memory().unwrap();
        connection
            .execute_batch("CREATE TABLE t (n INTEGER)")
            .unwrap();
        connection.pragma_update(None, "query_only", true).unwrap();
        let refused = error_of(&connection, "INSERT INTO t VALUES (1)");
        assert_eq!(kind(&refused), Kind::ReadOnly, "{refused}");
        let shown = crate::error::ToolError::from(refused);
        assert_eq!(shown.code(), crate::error::codes::READ_ONLY);
        let other = error_of(&connection, "SELECT * FROM no_such_table");
        assert_eq!(kind(&other), Kind::Other, "{other}");
    }

    /// A peek reads the last commit while a writer holds the store's turn mid-transaction:
    /// it neither waits for that writer nor sees what it has not committed.
    #[test]
    fn a_peek_reads_the_last_commit_beside_an_open_writer() {
        use crate::store::{OperationStore, SqlValue};
        let dir = tempfile::tempdir().unwrap();
        let store = super::SqliteStore::open(dir.path().join("guard.db")).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let nonces = |store: &super::SqliteStore| {
            let store = store.clone();
            async move {
                let peeked = store
                    .peek(
                        "SELECT nonce FROM guard_redeemed_states ORDER BY nonce",
                        &[],
                    )
                    .await
                    .expect("peek");
                peeked
                    .iter()
                    .map(|r| r.text("nonce").unwrap().to_owned())
                    .collect::<Vec<_>>()
            }
        };
        let insert = "INSERT INTO guard_redeemed_states (nonce, expires_at) VALUES ($1, 0)";
        runtime.block_on(async {
            let mut tx = store.begin().await.unwrap();
            tx.execute(insert, &[SqlValue::from("committed")])
                .await
                .unwrap();
            tx.commit().await.unwrap();
            let mut open = store.begin().await.unwrap();
            open.execute(insert, &[SqlValue::from("open")])
                .await
                .unwrap();
            // The writer's turn is held: a transaction would wait here for ever.
            let seen = tokio::time::timeout(Duration::from_secs(30), nonces(&store)).await;
            assert_eq!(
                seen.expect("the peek did not wait for the writer"),
                ["committed"],
                "the last commit, not the open write"
            );
            open.commit().await.unwrap();
            assert_eq!(nonces(&store).await, ["committed", "open"]);
        });
    }
}
