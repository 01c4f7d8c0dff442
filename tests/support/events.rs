//! Capturing the tracing events of one test. A thread-scoped subscriber
//! (`tracing::subscriber::set_default`) races with the callsites other tests register on
//! their threads at the same moment: tracing can cache "nobody is interested" for a callsite
//! and the test then misses the very event it watches. Instead one process-wide subscriber
//! is installed before anything logs, and it hands each event to the layer the current
//! thread installed, if any (the tests run their tokio runtime on their own thread).

use std::{
    cell::RefCell,
    sync::{Once, OnceLock},
};

use tracing_subscriber::{Layer, Registry, layer::Context, layer::SubscriberExt};

type Boxed = Box<dyn Layer<Registry> + Send + Sync>;

thread_local! {
    static LAYER: RefCell<Option<Boxed>> = const { RefCell::new(None) };
}

/// Routes every event to the current thread's layer.
struct ThisThread;

/// The layer that sees the events of every thread, for tests of servers that log from their
/// own tasks (set once per process by [`capture_every_thread`]).
static EVERY_THREAD: OnceLock<Boxed> = OnceLock::new();

impl Layer<Registry> for ThisThread {
    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, Registry>) {
        if let Some(layer) = EVERY_THREAD.get() {
            layer.on_event(event, ctx.clone());
        }
        LAYER.with(|layer| {
            if let Some(layer) = layer.borrow().as_ref() {
                layer.on_event(event, ctx);
            }
        });
    }
}

/// Installs the process-wide subscriber; every test of a binary that captures events calls
/// it (or [`capture`]) first, so no callsite is registered before it.
pub fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        tracing::subscriber::set_global_default(Registry::default().with(ThisThread))
            .expect("no other subscriber is installed in this test binary");
    });
}

/// Hands the events of every thread to `layer` from now on, for the rest of the process; the
/// first call wins and later ones change nothing.
pub fn capture_every_thread(layer: impl Layer<Registry> + Send + Sync + 'static) {
    install();
    let _ = EVERY_THREAD.set(Box::new(layer));
}

/// Hands this thread's events to `layer` until the returned value is dropped.
#[must_use = "the capture ends when this is dropped"]
pub fn capture(layer: impl Layer<Registry> + Send + Sync + 'static) -> Capture {
    install();
    LAYER.with(|slot| *slot.borrow_mut() = Some(Box::new(layer)));
    Capture(())
}

/// The current thread's capture; dropping it ends the capture.
pub struct Capture(());

impl Drop for Capture {
    fn drop(&mut self) {
        LAYER.with(|slot| slot.borrow_mut().take());
    }
}
