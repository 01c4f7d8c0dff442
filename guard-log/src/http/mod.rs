//! The witness protocol over HTTP/1.1 (`c2sp.org/tlog-witness`, feature `witness-http`): a
//! witness's server, the log's client, and the round that has a checkpoint cosigned by a
//! policy's witnesses.

mod client;
mod cosigners;
mod server;

pub use client::fetch_checkpoint;
pub use cosigners::{Anchored, Cosigners, Round, WitnessStatus};
pub use server::serve_witness;
