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
//! the hash of the one before it. A signed [`Checkpoint`] (tree size and root, Ed25519, as
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
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod append;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod checkpoints;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod head;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod legacy;
#[cfg(all(feature = "witness", any(feature = "sqlite", feature = "postgres")))]
mod local_witness;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod log;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod pipeline;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod records;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sequencer;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod verification;

#[cfg(all(feature = "witness", any(feature = "sqlite", feature = "postgres")))]
#[cfg_attr(
    docsrs,
    doc(cfg(all(feature = "witness", any(feature = "sqlite", feature = "postgres"))))
)]
pub use anchor::Anchor;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use append::Check;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use checkpoints::COSIGNATURES_TABLE;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use legacy::{LEGACY_TABLE, migrate_legacy};
#[cfg(all(feature = "witness", any(feature = "sqlite", feature = "postgres")))]
#[cfg_attr(
    docsrs,
    doc(cfg(all(feature = "witness", any(feature = "sqlite", feature = "postgres"))))
)]
pub use local_witness::LocalWitness;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use log::AuditLog;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use pipeline::Pipeline;
/// The log's format, from `rmcp-guard-log`: entries, the Merkle tree, checkpoints,
/// cosignatures, witnesses, policies, proofs, receipts and their verification.
pub use rmcp_guard_log::{
    AddCheckpoint, Checkpoint, CheckpointError, CheckpointSigner, CheckpointVerifier,
    ConsistencyProof, Event, Fault, FaultKind, InclusionProof, Item, Pending, Place, Policy,
    PolicyError, PolicyWitness, ProofError, Receipt, ReceiptError, Record, Refusal, Verified,
    Witness, WitnessSigner, WitnessVerifier, Witnessed, digest, export, merkle, place, split_line,
    story, verify, verify_against, verify_export, verify_export_against,
};
/// The witness protocol over HTTP, from `rmcp-guard-log` (its feature `witness-http`).
#[cfg(feature = "witness")]
#[cfg_attr(docsrs, doc(cfg(feature = "witness")))]
pub use rmcp_guard_log::{Anchored, Cosigners, WitnessStatus, fetch_checkpoint, serve_witness};
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use sequencer::create_queue;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use verification::VerifyError;

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
