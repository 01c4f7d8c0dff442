//! Waiting from synchronous code (a `Drop`) for work that runs on the async runtime: the
//! audit writer's last commit when a server stops, a background task's end when its handle
//! goes.

use std::{
    pin::Pin,
    sync::{Mutex, mpsc},
    task::{Context, Poll},
    time::Duration,
};

use tokio::runtime::{Handle, RuntimeFlavor};

/// How long dropping a [`Background`] waits for its task to be gone.
const GONE_WITHIN: Duration = Duration::from_secs(5);

/// Where the work being waited for runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Runs {
    /// On the runtime of the thread that waits: a current-thread runtime cannot wait.
    Here,
    /// On a thread of its own.
    Elsewhere,
}

/// Blocks until `done` is signalled or disconnected, or `limit` passed; whether it ended in
/// time. On a multi-threaded runtime the thread first hands its worker role to another
/// (`block_in_place`), so the runtime's tasks keep running. On a current-thread runtime,
/// waiting for a task of that runtime would stop that very task: it returns `false` at once.
pub(crate) fn wait(done: &mpsc::Receiver<()>, limit: Duration, runs: Runs) -> bool {
    let wait = || {
        !matches!(
            done.recv_timeout(limit),
            Err(mpsc::RecvTimeoutError::Timeout)
        )
    };
    match Handle::try_current() {
        Err(_) => wait(),
        Ok(runtime) if runtime.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(wait)
        }
        Ok(_) if runs == Runs::Elsewhere => wait(),
        Ok(_) => false,
    }
}

/// A task that runs until this is dropped, and is gone when the drop returns (within
/// [`GONE_WITHIN`], on a multi-threaded runtime): what it held, a server and its guard, is
/// dropped with it while the runtime still runs, not later at the runtime's shutdown, where
/// the guard could no longer write its last audit records.
#[derive(Debug)]
pub(crate) struct Background {
    task: tokio::task::JoinHandle<()>,
    gone: Mutex<mpsc::Receiver<()>>,
}

impl Background {
    /// Spawns `work` on the current runtime.
    pub(crate) fn spawn(work: impl Future<Output = ()> + Send + 'static) -> Self {
        let (alive, gone) = mpsc::channel();
        let task = tokio::spawn(Tracked {
            work: Box::pin(work),
            _alive: alive,
        });
        Self {
            task,
            gone: Mutex::new(gone),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.task.abort();
        let gone = self.gone.get_mut().unwrap_or_else(|p| p.into_inner());
        wait(gone, GONE_WITHIN, Runs::Here);
    }
}

/// A future that signals, by dropping its sender after it, that what it held is dropped.
struct Tracked {
    // Fields drop in order: the work (and all it holds) first.
    work: Pin<Box<dyn Future<Output = ()> + Send>>,
    _alive: mpsc::Sender<()>,
}

impl Future for Tracked {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.work.as_mut().poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_worker_waits_for_a_task_that_needs_a_worker() {
        let (signal, done) = mpsc::channel();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            drop(signal);
        });
        assert!(
            wait(&done, Duration::from_secs(10), Runs::Here),
            "the task ran meanwhile"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_current_thread_runtime_is_not_stopped() {
        let (_signal, done) = mpsc::channel::<()>();
        let started = std::time::Instant::now();
        assert!(!wait(&done, Duration::from_secs(10), Runs::Here));
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "returned at once"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn what_a_background_task_held_is_dropped_when_its_handle_is() {
        let held = std::sync::Arc::new(());
        let inside = std::sync::Arc::clone(&held);
        let task = Background::spawn(async move {
            let _inside = inside;
            std::future::pending::<()>().await;
        });
        tokio::task::yield_now().await;
        drop(task);
        assert_eq!(
            std::sync::Arc::strong_count(&held),
            1,
            "the task's copy is gone"
        );
    }

    #[test]
    fn outside_a_runtime_the_limit_holds() {
        let (_signal, done) = mpsc::channel::<()>();
        assert!(!wait(&done, Duration::from_millis(10), Runs::Elsewhere));
    }
}
