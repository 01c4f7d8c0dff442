//! The safe-ops server as a library, so tests and benchmarks can run it in process.

pub mod db;
pub mod demo;
pub mod sandbox;
pub mod server;

pub use server::SafeOps;
