//! The safe-ops server as a library, so tests and benchmarks can run it in process.

pub mod db;
#[cfg(feature = "demo")]
pub mod demo;
pub mod logging;
pub mod sandbox;
pub mod server;

pub use server::SafeOps;
