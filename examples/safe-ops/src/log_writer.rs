//! Where the log's lines go: a buffer that callers append to and a thread of its own that
//! writes it out in batches. A tool call never waits on stderr (a full pipe, a busy disk),
//! and the thread is woken once per batch, not once per line: on a two-core machine a wake-up
//! per line cost a guarded call more than formatting the line did. No line is dropped: past
//! [`MAX_PENDING`] bytes a caller waits for the thread, and dropping the [`Flusher`] writes
//! out whatever is left.

use std::{
    io::Write,
    sync::{Arc, Condvar, Mutex, MutexGuard},
    thread::JoinHandle,
    time::Duration,
};

/// How long the thread lets a batch gather after its first line before writing it.
const GATHER: Duration = Duration::from_millis(2);

/// Bytes waiting to be written beyond which callers wait for the thread.
const MAX_PENDING: usize = 1 << 20;

/// Hands out writers that append to the shared buffer (a `MakeWriter` for `tracing`).
#[derive(Clone)]
pub struct Batched {
    shared: Arc<Shared>,
}

/// Owns the writing thread; dropping it writes out every pending line and stops it.
#[must_use = "dropping the flusher stops the log's writer thread"]
pub struct Flusher {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// The buffer got its first bytes, or the log is closing.
    filled: Condvar,
    /// The thread took the buffer.
    drained: Condvar,
}

#[derive(Default)]
struct State {
    pending: Vec<u8>,
    closed: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Starts the thread `name`, writing to `out`.
pub fn start(out: impl Write + Send + 'static, name: &str) -> std::io::Result<(Batched, Flusher)> {
    let shared = Arc::new(Shared::default());
    let thread = std::thread::Builder::new().name(name.to_owned()).spawn({
        let shared = shared.clone();
        move || write_batches(&shared, out)
    })?;
    Ok((
        Batched {
            shared: shared.clone(),
        },
        Flusher {
            shared,
            thread: Some(thread),
        },
    ))
}

fn write_batches(shared: &Shared, mut out: impl Write) {
    let mut batch = Vec::new();
    loop {
        let mut state = shared.lock();
        while state.pending.is_empty() && !state.closed {
            state = shared.filled.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        if state.pending.is_empty() {
            return;
        }
        if !state.closed {
            drop(state);
            std::thread::sleep(GATHER);
            state = shared.lock();
        }
        std::mem::swap(&mut batch, &mut state.pending);
        drop(state);
        shared.drained.notify_all();
        // Nowhere left to report a failed write of the log itself.
        let _ = out.write_all(&batch).and_then(|()| out.flush());
        batch.clear();
    }
}

impl Write for &Batched {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let shared = &self.shared;
        let mut state = shared.lock();
        while state.pending.len() >= MAX_PENDING && !state.closed {
            state = shared
                .drained
                .wait(state)
                .unwrap_or_else(|p| p.into_inner());
        }
        let first = state.pending.is_empty();
        state.pending.extend_from_slice(bytes);
        drop(state);
        if first {
            shared.filled.notify_one();
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Batched {
    type Writer = &'a Batched;

    fn make_writer(&'a self) -> Self::Writer {
        self
    }
}

impl Drop for Flusher {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.filled.notify_one();
        self.shared.drained.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink the test can read back, counting the writes it was given.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<(Vec<u8>, usize)>>);

    impl Write for Sink {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            let mut sink = self.0.lock().unwrap();
            sink.0.extend_from_slice(bytes);
            sink.1 += 1;
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_line_of_every_thread_arrives_in_its_order_in_fewer_writes() {
        let sink = Sink::default();
        let (writer, flusher) = start(sink.clone(), "test-log").unwrap();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let writer = writer.clone();
                std::thread::spawn(move || {
                    for n in 0..2000 {
                        // One write per line, as tracing's formatter makes.
                        (&writer)
                            .write_all(format!("{t} {n}\n").as_bytes())
                            .unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        drop(flusher);
        let (bytes, writes) = sink.0.lock().unwrap().clone();
        let text = String::from_utf8(bytes).unwrap();
        let mut next = [0; 4];
        for line in text.lines() {
            let (t, n) = line.split_once(' ').unwrap();
            let t: usize = t.parse().unwrap();
            assert_eq!(
                n.parse::<i32>().unwrap(),
                next[t],
                "thread {t} out of order"
            );
            next[t] += 1;
        }
        assert_eq!(next, [2000; 4], "every line arrived");
        assert!(
            writes < 8000,
            "{writes} writes for 8000 lines: nothing was batched"
        );
    }

    #[test]
    fn a_caller_past_the_limit_waits_and_nothing_is_lost() {
        let sink = Sink::default();
        let (writer, flusher) = start(sink.clone(), "test-log").unwrap();
        let line = vec![b'x'; 4096];
        // Four times the limit, from one caller: it must wait for the thread, not fail.
        for _ in 0..(4 * MAX_PENDING / line.len()) {
            (&writer).write_all(&line).unwrap();
        }
        drop(flusher);
        assert_eq!(sink.0.lock().unwrap().0.len(), 4 * MAX_PENDING);
    }
}
