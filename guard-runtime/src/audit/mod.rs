//! One tamper-evident audit log for every outcome of every guarded call.
//!
//! Each outcome is an [`Event`]: an outcome code, the tool, the trace id and structured
//! fields (identity where known, target, the preview the human saw, digests of the
//! arguments and the result, the answer with redacted fields). [`AuditLog::append`] writes
//! it as the next entry of an append-only log in the operation store, inside the caller's
//! transaction when there is one, so effect, status and record commit together. The
//! `guard::audit` tracing events mirror the log and carry no answers. On PostgreSQL a guarded
//! call's entry is queued with its effect and sequenced after, in batches, so concurrent
//! calls never wait for the log's head ([`AuditLog::sequence`], [`Pending`]).
//!
//! The log is a Merkle tree hashed as RFC 9162 does ([`merkle`]), and each entry also names
//! the hash of the one before it. A signed [`checkpoint`] (tree size and root, Ed25519, as
//! a C2SP signed note) can be kept outside the database; [`verify()`] then names the first
//! record that was modified, deleted, inserted, reordered or truncated since. Inclusion and
//! consistency proofs show a record is in a checkpointed log and that a newer checkpoint
//! extends an older one. The `guard-audit` command is the offline viewer and verifier.
//!
//! Checkpoints leave the operator's reach through witnesses ([`Witness`], C2SP tlog-witness):
//! each cosigns ([`WitnessSigner`]) only a checkpoint that extends the last one it cosigned.
//! An [`Anchor`] (feature `witness`) has the server's checkpoints witnessed as the log grows;
//! a [`Policy`] (C2SP tlog-policy) says which keys and how many cosignatures a verifier
//! trusts; a [`Receipt`] (C2SP tlog-proof) proves one record is in the log, offline.
//!
//! The log records what guard saw. It does not make an annotation, a preview or a handler
//! honest, and records written after the last witnessed checkpoint are only as safe as the
//! database until the next one.

#[cfg(all(feature = "witness", any(feature = "sqlite", feature = "postgres")))]
mod anchor;
pub mod checkpoint;
mod cosignature;
mod event;
mod key_file;
#[cfg(all(feature = "witness", any(feature = "sqlite", feature = "postgres")))]
mod local_witness;
pub mod merkle;
mod note;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod pipeline;
mod policy;
mod proof;
mod receipt;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sequencer;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod store;
mod story;
pub mod verify;
mod witness;
#[cfg(feature = "witness")]
mod witness_client;
#[cfg(feature = "witness")]
mod witness_server;

#[cfg(all(feature = "witness", any(feature = "sqlite", feature = "postgres")))]
#[cfg_attr(
    docsrs,
    doc(cfg(all(feature = "witness", any(feature = "sqlite", feature = "postgres"))))
)]
pub use anchor::{Anchor, Anchored, WitnessStatus};
pub use checkpoint::{Checkpoint, CheckpointError, CheckpointSigner, CheckpointVerifier};
pub use cosignature::{WitnessSigner, WitnessVerifier};
pub use event::{Event, Place, place, split_line};
#[cfg(all(feature = "witness", any(feature = "sqlite", feature = "postgres")))]
#[cfg_attr(
    docsrs,
    doc(cfg(all(feature = "witness", any(feature = "sqlite", feature = "postgres"))))
)]
pub use local_witness::LocalWitness;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use pipeline::Pipeline;
pub use policy::{Policy, PolicyError, PolicyWitness, Witnessed};
pub use proof::{ConsistencyProof, InclusionProof, ProofError};
pub use receipt::{Receipt, ReceiptError};
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use sequencer::create_queue;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use store::{AuditLog, Pending, Record, VerifyError, export};
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use store::{COSIGNATURES_TABLE, Check, LEGACY_TABLE, migrate_legacy};
pub use story::story;
pub use verify::{
    Fault, FaultKind, Item, Verified, verify, verify_against, verify_export, verify_export_against,
};
pub use witness::{AddCheckpoint, Refusal, Witness};
#[cfg(feature = "witness")]
#[cfg_attr(docsrs, doc(cfg(feature = "witness")))]
pub use witness_client::fetch_checkpoint;
#[cfg(feature = "witness")]
#[cfg_attr(docsrs, doc(cfg(feature = "witness")))]
pub use witness_server::serve_witness;

/// The SHA-256 a record keeps of `value`'s canonical JSON (arguments, results), in hex; of
/// its plain JSON text where it has no canonical form (an integer beyond ±2^53).
pub fn digest(value: &serde_json::Value) -> String {
    let text = crate::canonical::canonical_json(value).unwrap_or_else(|_| value.to_string());
    crate::canonical::sha256_hex(text.as_bytes())
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
use std::sync::Arc;

/// Where guard records what the exposure refuses and what guarded calls did, besides the
/// tracing mirror.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) type Recorder = Option<Arc<Pipeline>>;
/// Without a store there is no audit log: only the tracing mirror.
#[cfg(not(any(feature = "sqlite", feature = "postgres")))]
pub(crate) type Recorder = Option<std::convert::Infallible>;

/// Which log a recorder writes to, as a router cache key.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn recorder_key(log: &Arc<Pipeline>) -> usize {
    Arc::as_ptr(log) as *const () as usize
}
#[cfg(not(any(feature = "sqlite", feature = "postgres")))]
pub(crate) fn recorder_key(never: &std::convert::Infallible) -> usize {
    match *never {}
}
