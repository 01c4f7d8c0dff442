//! The thread that owns a connection: rusqlite blocks, so every statement is sent there and
//! the async runtime's workers never wait on the disk.

use std::{sync::mpsc, time::Duration};

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::errors::store_error;
use crate::store::sql::StoreError;

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// The thread that owns the connection, and the queue of work sent to it. Jobs run in the
/// order they were sent; the thread ends when the last handle to the store is gone.
#[derive(Clone)]
pub(super) struct Worker {
    jobs: mpsc::Sender<Job>,
}

impl Worker {
    pub(super) fn start(mut connection: Connection, name: &str) -> Result<Self, StoreError> {
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
    pub(super) fn request<T, J>(
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
    pub(super) fn send(
        &self,
        job: impl FnOnce(&mut Connection) + Send + 'static,
    ) -> Result<(), StoreError> {
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
