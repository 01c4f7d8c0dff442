//! Offline verification: the entries, in the order they were read, against a checkpoint.
//! It names the first bad record and how it is bad.
//!
//! Each entry carries its own leaf hash, its sequence number and the leaf hash of the entry
//! before it, and the checkpoint's root covers every leaf up to its size. So:
//! - a changed byte breaks the entry's own hash: **modified**;
//! - a missing sequence number with nothing after it: **deleted**;
//! - a record that is not in the chain (a copy, or one made up): **inserted**;
//! - a real record in the wrong place: **reordered**;
//! - fewer records than the checkpoint covers: **truncated**;
//! - a record edited with its hash recomputed: **modified** too, found where the record
//!   after it (which the log carries on from, or the checkpoint signed) remembers another
//!   hash for it;
//! - records that chain but do not hash to the checkpoint's root (history rewritten from
//!   some point, every hash recomputed): **rewritten**, named from the first record no
//!   older checkpoint of the log vouches for. Only the signature's holder can make a
//!   checkpoint for such a log.
//!
//! Records after the checkpoint's size are checked as a chain; anchor a newer checkpoint
//! to cover them.

use std::collections::HashMap;

use super::{
    checkpoint::Checkpoint,
    event::{Place, entry_hash, line_head, place, place_after_brace},
    merkle::{Hash, leaf_hash_parts, root},
};

/// How a record is bad.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// Its bytes no longer match its hash, or it is not a well-formed record.
    Modified,
    /// One or more records are missing before it.
    Deleted,
    /// It is not part of the chain: a copy of another record, or one made up.
    Inserted,
    /// It is a real record in the wrong place.
    Reordered,
    /// The log ends before the checkpoint's size.
    Truncated,
    /// The records chain, but not to the checkpoint's root.
    Rewritten,
}

impl FaultKind {
    /// The kind's lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::Modified => "modified",
            FaultKind::Deleted => "deleted",
            FaultKind::Inserted => "inserted",
            FaultKind::Reordered => "reordered",
            FaultKind::Truncated => "truncated",
            FaultKind::Rewritten => "rewritten",
        }
    }
}

/// The first bad record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// How it is bad.
    pub kind: FaultKind,
    /// Its position in what was read, from 0 (a line of an export, a row of the store),
    /// or the position where the missing records should be.
    pub position: usize,
    /// The sequence number the log needed there: the record that is bad or missing.
    pub seq: u64,
    /// What was found, in words.
    pub detail: String,
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "record {} (position {}) {}: {}",
            self.seq,
            self.position + 1,
            self.kind.as_str(),
            self.detail
        )
    }
}

impl std::error::Error for Fault {}

/// A verified log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Records read, all in one chain.
    pub records: u64,
    /// The Merkle root over all of them.
    pub root: Hash,
    /// How many of them the checkpoint covered (0 without a checkpoint).
    pub checkpointed: u64,
}

impl std::fmt::Display for Verified {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} records form one chain", self.records)?;
        if self.checkpointed > 0 {
            write!(
                f,
                "; the first {} match the signed checkpoint",
                self.checkpointed
            )?;
        }
        Ok(())
    }
}

/// One record as read: the hash it claims and its entry bytes.
#[derive(Debug, Clone, Copy)]
pub struct Item<'a> {
    /// The leaf hash stored with the entry, if it could be read.
    pub hash: Option<Hash>,
    /// The entry's bytes.
    pub entry: &'a [u8],
}

/// Checks `items` (in the order read) as one chain from sequence 0, and against
/// `checkpoint` if given.
pub fn verify(items: &[Item<'_>], checkpoint: Option<&Checkpoint>) -> Result<Verified, Fault> {
    verify_against(items, checkpoint, &[])
}

/// [`verify`], with `older` checkpoints of the same log (checked by the caller): a rewrite
/// the checkpoint finds is then named from the first record none of them vouches for.
pub fn verify_against(
    items: &[Item<'_>],
    checkpoint: Option<&Checkpoint>,
    older: &[Checkpoint],
) -> Result<Verified, Fault> {
    let parsed: Vec<Option<(Hash, Place)>> = items
        .iter()
        .map(|item| {
            let hash = item.hash?;
            let at = place(item.entry)?;
            (entry_hash(item.entry) == hash).then_some((hash, at))
        })
        .collect();
    check(&parsed, checkpoint, older)
}

/// The chain and checkpoint checks over records already read: each one's claimed hash and
/// place, or `None` where its bytes did not match its hash (or did not read).
fn check(
    parsed: &[Option<(Hash, Place)>],
    checkpoint: Option<&Checkpoint>,
    older: &[Checkpoint],
) -> Result<Verified, Fault> {
    let mut accepted: Vec<Hash> = Vec::with_capacity(parsed.len());
    let mut positions: Vec<usize> = Vec::with_capacity(parsed.len());
    let mut last = [0u8; 32];
    let mut later: Option<Lookahead> = None;
    for (i, found) in parsed.iter().enumerate() {
        let expected = accepted.len() as u64;
        let fault = |kind, seq, detail: String| Fault {
            kind,
            position: i,
            seq,
            detail,
        };
        let Some((hash, at)) = *found else {
            return Err(fault(
                FaultKind::Modified,
                expected,
                "its bytes do not match its hash (or it is not a well-formed record)".into(),
            ));
        };
        if at.seq == expected && at.prev == last {
            accepted.push(hash);
            positions.push(i);
            last = hash;
            continue;
        }
        let later = later.get_or_insert_with(|| Lookahead::new(parsed));
        let chains_after = |seq: u64, hash: &Hash| {
            if seq == 0 {
                *hash == [0u8; 32]
            } else {
                later.hash_of_seq(seq - 1).any(|h| h == *hash)
            }
        };
        if at.seq == expected {
            if let Some(edited) = recomputed_before(parsed, i, &accepted, at.prev, checkpoint) {
                return Err(Fault {
                    kind: FaultKind::Modified,
                    position: positions[edited],
                    seq: edited as u64,
                    detail: format!(
                        "its hash was recomputed after an edit: record {expected}, which the log \
                         carries on from, remembers another hash for it"
                    ),
                });
            }
            return Err(fault(
                FaultKind::Inserted,
                expected,
                "it claims the right place but does not chain to the record before it".into(),
            ));
        }
        if at.seq < expected {
            let seq = at.seq as usize;
            if accepted[seq] == hash {
                return Err(fault(
                    FaultKind::Inserted,
                    at.seq,
                    format!("it is a copy of record {}", at.seq),
                ));
            }
            let prev_ok = if seq == 0 {
                at.prev == [0u8; 32]
            } else {
                at.prev == accepted[seq - 1]
            };
            let next_chains = parsed
                .get(i + 1)
                .and_then(|n| *n)
                .is_some_and(|(_, next)| next.prev == hash);
            // With nothing after it, the checkpoint tells which of the two it signed.
            let signed = checkpoint.is_some_and(|cp| {
                cp.size == at.seq + 1 && {
                    let mut leaves = accepted[..seq].to_vec();
                    leaves.push(hash);
                    root(&leaves) == cp.root
                }
            });
            if prev_ok && (next_chains || signed) {
                return Err(Fault {
                    kind: FaultKind::Inserted,
                    position: positions[seq],
                    seq: at.seq,
                    detail: format!(
                        "it took the place of record {} which follows it and carries the chain on",
                        at.seq
                    ),
                });
            }
            return Err(fault(
                FaultKind::Inserted,
                at.seq,
                format!("sequence number {} was already used", at.seq),
            ));
        }
        // at.seq > expected: something is missing here.
        if later.positions_of_hash(&hash).any(|p| p > i) {
            return Err(fault(
                FaultKind::Inserted,
                at.seq,
                format!("it is a copy of record {} found later", at.seq),
            ));
        }
        if later.hash_of_seq(at.seq).any(|h| h != hash) {
            return Err(fault(
                FaultKind::Inserted,
                at.seq,
                format!("another record with sequence number {} exists", at.seq),
            ));
        }
        return Err(match later.position_of_seq(expected).filter(|&p| p > i) {
            Some(moved) if chains_after(at.seq, &at.prev) => fault(
                FaultKind::Reordered,
                at.seq,
                format!(
                    "record {} is here, but record {expected} belongs here (found at position {})",
                    at.seq,
                    moved + 1
                ),
            ),
            Some(_) => fault(
                FaultKind::Inserted,
                at.seq,
                "it does not chain to any record of the log".into(),
            ),
            None => Fault {
                kind: FaultKind::Deleted,
                position: i,
                seq: expected,
                detail: if at.seq == expected + 1 {
                    format!("record {expected} is missing before record {}", at.seq)
                } else {
                    format!(
                        "records {expected} to {} are missing before record {}",
                        at.seq - 1,
                        at.seq
                    )
                },
            },
        });
    }
    let records = accepted.len() as u64;
    let mut checkpointed = 0;
    if let Some(cp) = checkpoint {
        if records < cp.size {
            return Err(Fault {
                kind: FaultKind::Truncated,
                position: parsed.len(),
                seq: records,
                detail: format!(
                    "the log ends after {records} records but the checkpoint covers {}",
                    cp.size
                ),
            });
        }
        let size = usize::try_from(cp.size).unwrap_or(usize::MAX);
        let signed = root(&accepted[..size]);
        if signed != cp.root {
            let from = vouched(&accepted, older, cp);
            return Err(Fault {
                kind: FaultKind::Rewritten,
                position: positions.get(from).copied().unwrap_or(0),
                seq: from as u64,
                detail: if from == 0 {
                    format!(
                        "the first {} records chain but do not hash to the checkpoint's root: \
                         history from record 0 on was rewritten and every hash recomputed (no \
                         older checkpoint of this log vouches for any of it; give older ones to \
                         narrow the rewrite down)",
                        cp.size
                    )
                } else {
                    format!(
                        "the first {from} records still hash to an older checkpoint, but the \
                         first {} do not hash to the checkpoint's root: a record from {from} on \
                         was rewritten and every hash after it recomputed; record {from} is the \
                         first no checkpoint vouches for",
                        cp.size
                    )
                },
            });
        }
        checkpointed = cp.size;
        if size == accepted.len() {
            return Ok(Verified {
                records,
                root: signed,
                checkpointed,
            });
        }
    }
    Ok(Verified {
        records,
        root: root(&accepted),
        checkpointed,
    })
}

/// Whether the break before position `i` (whose record claims the right place but names
/// `remembered` as the hash before it) is the accepted record before it, edited with its
/// hash recomputed, rather than a record made up: the record at `i` is genuine when the log
/// carries on from it, or when the checkpoint's root holds with `remembered` in the place
/// of the edited record's hash. Answers the edited record's sequence number.
fn recomputed_before(
    parsed: &[Option<(Hash, Place)>],
    i: usize,
    accepted: &[Hash],
    remembered: Hash,
    checkpoint: Option<&Checkpoint>,
) -> Option<usize> {
    let edited = accepted.len().checked_sub(1)?;
    let (hash, at) = parsed[i]?;
    let carried_on = parsed
        .get(i + 1)
        .copied()
        .flatten()
        .is_some_and(|(_, next)| next.seq == at.seq + 1 && next.prev == hash);
    let signed = || {
        let cp = checkpoint?;
        let size = usize::try_from(cp.size).ok()?;
        let mut leaves = accepted[..edited].to_vec();
        leaves.push(remembered);
        for found in parsed.get(i..)? {
            if leaves.len() >= size {
                break;
            }
            leaves.push(found.as_ref()?.0);
        }
        (leaves.len() == size && size > edited).then(|| root(&leaves) == cp.root)
    };
    (carried_on || signed() == Some(true)).then_some(edited)
}

/// How many of the first records of `accepted` some checkpoint of `older` (of the log
/// `head` names) still vouches for: the largest one whose root they hash to. The first
/// rewritten record is at or after it.
fn vouched(accepted: &[Hash], older: &[Checkpoint], head: &Checkpoint) -> usize {
    older
        .iter()
        .filter(|cp| cp.origin == head.origin && cp.size < head.size)
        .filter_map(|cp| {
            let size = usize::try_from(cp.size).ok()?;
            (size <= accepted.len() && root(&accepted[..size]) == cp.root).then_some(size)
        })
        .max()
        .unwrap_or(0)
}

/// Indexes of every parsed record, built only once something is out of place.
struct Lookahead {
    by_seq: HashMap<u64, Vec<(usize, Hash)>>,
    by_hash: HashMap<Hash, Vec<usize>>,
}

impl Lookahead {
    fn new(parsed: &[Option<(Hash, Place)>]) -> Self {
        let mut by_seq: HashMap<u64, Vec<(usize, Hash)>> = HashMap::new();
        let mut by_hash: HashMap<Hash, Vec<usize>> = HashMap::new();
        for (i, found) in parsed.iter().enumerate() {
            if let Some((hash, at)) = found {
                by_seq.entry(at.seq).or_default().push((i, *hash));
                by_hash.entry(*hash).or_default().push(i);
            }
        }
        Self { by_seq, by_hash }
    }

    fn hash_of_seq(&self, seq: u64) -> impl Iterator<Item = Hash> + '_ {
        self.by_seq.get(&seq).into_iter().flatten().map(|(_, h)| *h)
    }

    fn position_of_seq(&self, seq: u64) -> Option<usize> {
        self.by_seq
            .get(&seq)
            .and_then(|v| v.first())
            .map(|(p, _)| *p)
    }

    fn positions_of_hash(&self, hash: &Hash) -> impl Iterator<Item = usize> + '_ {
        self.by_hash.get(hash).into_iter().flatten().copied()
    }
}

/// Verifies exported lines (JSON Lines as `guard-audit export` writes them). Each entry is
/// read in place: its bytes are the line's from the comma after the hash, that comma read
/// as the entry's opening brace, so nothing is copied.
pub fn verify_export(text: &[u8], checkpoint: Option<&Checkpoint>) -> Result<Verified, Fault> {
    verify_export_against(text, checkpoint, &[])
}

/// [`verify_export`], with `older` checkpoints of the same log (see [`verify_against`]).
pub fn verify_export_against(
    text: &[u8],
    checkpoint: Option<&Checkpoint>,
    older: &[Checkpoint],
) -> Result<Verified, Fault> {
    let body = text.strip_suffix(b"\n").unwrap_or(text);
    let mut parsed: Vec<Option<(Hash, Place)>> = Vec::new();
    if !body.is_empty() {
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', body).chain([body.len()]) {
            let line = &body[start..end];
            parsed.push(line_head(line).and_then(|(hash, comma)| {
                let rest = &line[comma + 1..];
                let at = place_after_brace(rest)?;
                (leaf_hash_parts(b"{", rest) == hash).then_some((hash, at))
            }));
            start = end + 1;
        }
    }
    check(&parsed, checkpoint, older)
}
