//! The safe-ops server as a library, so tests and benchmarks can run it in process.

#[cfg(feature = "approval")]
pub mod approval;
pub mod builds;
pub mod db;
#[cfg(feature = "demo")]
pub mod demo;
pub mod downloads;
pub mod grants;
pub mod identity;
pub mod log_writer;
pub mod logging;
#[cfg(feature = "demo")]
pub mod receiver;
pub mod sandbox;
pub mod server;
#[cfg(feature = "demo")]
pub mod visit;
#[cfg(feature = "demo")]
pub mod witnessed;

pub use server::SafeOps;
