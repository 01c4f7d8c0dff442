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
//! - records that chain but do not hash to the checkpoint's root (history rewritten from
//!   some point, every hash recomputed): **rewritten**. Only the signature's holder can
//!   make a checkpoint for such a log.
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
    let parsed: Vec<Option<(Hash, Place)>> = items
        .iter()
        .map(|item| {
            let hash = item.hash?;
            let at = place(item.entry)?;
            (entry_hash(item.entry) == hash).then_some((hash, at))
        })
        .collect();
    check(&parsed, checkpoint)
}

/// The chain and checkpoint checks over records already read: each one's claimed hash and
/// place, or `None` where its bytes did not match its hash (or did not read).
fn check(
    parsed: &[Option<(Hash, Place)>],
    checkpoint: Option<&Checkpoint>,
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
            return Err(Fault {
                kind: FaultKind::Rewritten,
                position: 0,
                seq: 0,
                detail: format!(
                    "the first {} records chain but do not hash to the checkpoint's root: history was rewritten and every hash recomputed",
                    cp.size
                ),
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
    check(&parsed, checkpoint)
}
