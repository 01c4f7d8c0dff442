//! guard's audit log format, apart from the server that writes it: what an entry is, how
//! the log is hashed, signed, witnessed and proven, and how an auditor verifies it. No MCP,
//! no SQL: a verifier, a witness or a monitor depends on this crate alone, as Tessera keeps
//! the log apart from the personalities that write it.
//!
//! - An entry ([`Event`]) is canonical JSON ([`canonical`], RFC 8785) that starts with its
//!   place (`seq`, `prev`), so any byte changed shows.
//! - The log is a Merkle tree hashed as RFC 9162 does ([`merkle`]); a [`Checkpoint`] is its
//!   size and root in a C2SP signed note (Ed25519, [`CheckpointSigner`]).
//! - Witnesses ([`Witness`], C2SP tlog-witness) cosign ([`WitnessSigner`]) only a checkpoint
//!   that extends the last one they cosigned; a [`Policy`] (C2SP tlog-policy) says which keys
//!   and how many cosignatures a verifier trusts.
//! - [`InclusionProof`] and [`ConsistencyProof`] show a record is in a checkpointed log and
//!   that a newer checkpoint extends an older one; a [`Receipt`] (C2SP tlog-proof) proves one
//!   record offline.
//! - With the feature `witness-http`, a witness serves over HTTP ([`serve_witness`]) and a
//!   log has its checkpoints cosigned by a policy's witnesses ([`Cosigners`]) or reads a
//!   witness's latest ([`fetch_checkpoint`]).
//! - [`verify()`] names the first record that was modified, deleted, inserted, reordered or
//!   truncated, [`verify_rows`] a stored row whose columns disagree with its entry too;
//!   [`story`] tells one call's entries for a human.
//!
//! The runtime (`rmcp-guard`) writes this format into its operation store and re-exports
//! these items under `rmcp_guard::audit`; `guard-audit` reads it.

#![deny(missing_docs)]

pub mod canonical;
mod checkpoint;
mod cosignature;
mod event;
pub mod files;
#[cfg(feature = "witness-http")]
mod http;
mod key_file;
pub mod merkle;
mod note;
mod policy;
mod proof;
mod receipt;
mod stored;
mod story;
pub mod verify;
mod witness;

pub use checkpoint::{
    Checkpoint, CheckpointError, CheckpointSigner, CheckpointVerifier, checkpoint_origin,
};
pub use cosignature::{WitnessSigner, WitnessVerifier};
pub use event::{Event, Place, digest, entry_hash, parse_hex, place, placed, split_line};
#[cfg(feature = "witness-http")]
pub use http::{Anchored, Cosigners, Round, WitnessStatus, fetch_checkpoint, serve_witness};
pub use policy::{Policy, PolicyError, PolicyWitness, Witnessed};
pub use proof::{ConsistencyProof, InclusionProof, ProofError};
pub use receipt::{Receipt, ReceiptError};
pub use stored::{Pending, Record, Row, export, verify_rows};
pub use story::story;
pub use verify::{
    Fault, FaultKind, Item, Verified, verify, verify_against, verify_export, verify_export_against,
};
pub use witness::{AddCheckpoint, Refusal, Witness};
