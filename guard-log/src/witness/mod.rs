//! A witness (`c2sp.org/tlog-witness`): an independent party with its own key that
//! cosigns a log's checkpoint only if it extends the last checkpoint it cosigned for that
//! log, shown by a consistency proof. Once a witness cosigned a tree of N records, nobody,
//! not the database's owner nor the log's signer, can get it to cosign a tree that drops or
//! changes any of them; a verifier that asks for its cosignature sees a rollback or a fork.
//!
//! This is the witness's logic: the `add-checkpoint` request and its answers, and the state
//! (the last cosigned checkpoint per origin) kept in one file, replaced atomically before
//! an answer is given. `guard-audit witness` serves it over HTTP; the log's side is
//! [`Anchor`](super::Anchor).

#[cfg(unix)]
mod lock;
mod state;

use std::{
    path::{Path, PathBuf},
    sync::Mutex,
};

use state::State;

use super::{
    checkpoint::{Checkpoint, CheckpointVerifier},
    cosignature::WitnessSigner,
    merkle::{self, Hash},
    note::{self, KnownKey},
};

/// The most consistency proof lines a request may carry.
const MAX_PROOF: usize = 63;

/// An `add-checkpoint` request: the size the client believes the witness last cosigned, a
/// consistency proof from it, and the checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddCheckpoint {
    /// The size of the checkpoint the witness last cosigned for this log (0 at first).
    pub old: u64,
    /// The consistency proof from `old` to the checkpoint's size.
    pub proof: Vec<Hash>,
    /// The signed checkpoint note.
    pub checkpoint: String,
}

impl AddCheckpoint {
    /// The request body.
    pub fn encode(&self) -> String {
        format!(
            "old {}\n{}\n{}",
            self.old,
            merkle::hash_lines(&self.proof),
            self.checkpoint
        )
    }

    /// Reads a request body.
    pub fn parse(body: &str) -> Result<Self, Refusal> {
        let bad = |what: &str| Refusal::new(400, what);
        let (head, checkpoint) = body
            .split_once("\n\n")
            .ok_or_else(|| bad("no empty line before the checkpoint"))?;
        let mut lines = head.split('\n');
        let old = lines
            .next()
            .and_then(|l| l.strip_prefix("old "))
            .and_then(|n| n.parse::<u64>().ok().filter(|v| v.to_string() == n))
            .ok_or_else(|| bad("the first line must be `old SIZE`"))?;
        let proof = lines
            .map(|line| {
                merkle::parse_hash_line(line)
                    .ok_or_else(|| bad("a proof line is not a base64 SHA-256 hash"))
            })
            .collect::<Result<Vec<Hash>, _>>()?;
        if proof.len() > MAX_PROOF {
            return Err(bad("more than 63 proof lines"));
        }
        Ok(Self {
            old,
            proof,
            checkpoint: checkpoint.to_owned(),
        })
    }
}

/// A witness's answer other than a cosignature: the HTTP status the protocol assigns and
/// what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// 400, 403, 404, 409 or 422 (500 when the state could not be saved).
    pub status: u16,
    /// The body: the witness's size for a 409, else what was wrong.
    pub body: String,
}

impl Refusal {
    fn new(status: u16, what: &str) -> Self {
        Self {
            status,
            body: format!("{what}\n"),
        }
    }
}

/// A witness: its key, the logs it follows and its state file.
pub struct Witness {
    signer: WitnessSigner,
    logs: Vec<(String, CheckpointVerifier)>,
    /// The state file's canonical path.
    path: PathBuf,
    kept: Mutex<Kept>,
}

/// What the witness keeps, and, while it lives, the locks on it: a second process on the
/// same state could cosign a fork of what this one cosigned.
struct Kept {
    state: State,
    #[cfg(unix)]
    locks: lock::Locks,
}

impl Witness {
    /// Creates the state of a new witness, which has cosigned nothing, at `path` and its
    /// record beside it (`<state>.cosigned`); refused when either exists. [`open`](Self::open)
    /// never starts from nothing, so this is the one way a witness's memory begins.
    pub fn init(path: &Path) -> Result<(), String> {
        let canonical = state::canonical(path)?;
        #[cfg(unix)]
        let _locks = lock::Locks::take(&canonical, path)?;
        state::init(&canonical, path)
    }

    /// A witness with key `signer`, following the logs of `logs` (origin and key), keeping
    /// its state in the file `path`, made by [`init`](Self::init). A state missing,
    /// unreadable, without its record or older than it is an error, never a fresh start,
    /// which would let it cosign a rollback. The state is locked while the witness lives,
    /// whatever path names it.
    pub fn open(
        signer: WitnessSigner,
        logs: Vec<(String, CheckpointVerifier)>,
        path: &Path,
    ) -> Result<Self, String> {
        let canonical = state::canonical(path)?;
        #[cfg(unix)]
        let locks = lock::Locks::take(&canonical, path)?;
        let state = state::load(&canonical, path)?;
        let key = signer.verifier();
        for (origin, note) in &state {
            let ours = key.cosigned_at(note).ok().flatten().is_some();
            let head = note::parse(note)
                .ok()
                .and_then(|n| Checkpoint::parse_body(n.text).ok());
            if !ours || head.is_none_or(|h| &h.origin != origin) {
                return Err(format!(
                    "the witness state {} holds a checkpoint of `{origin}` this witness key did not cosign: it was edited, or belongs to another key",
                    path.display()
                ));
            }
        }
        Ok(Self {
            signer,
            logs,
            path: canonical,
            kept: Mutex::new(Kept {
                state,
                #[cfg(unix)]
                locks,
            }),
        })
    }

    /// The last checkpoint cosigned for the log whose origin hashes (SHA-256, lowercase hex)
    /// to `origin_hash`, with the log's signature and this witness's cosignature.
    pub fn latest(&self, origin_hash: &str) -> Option<String> {
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.state
            .iter()
            .find(|(origin, _)| crate::canonical::sha256_hex(origin.as_bytes()) == origin_hash)
            .map(|(_, note)| note.clone())
    }

    /// Answers an `add-checkpoint` request made at `now` (seconds since the epoch): the
    /// cosignature line, or the refusal the protocol prescribes.
    pub fn add_checkpoint(&self, body: &str, now: u64) -> Result<String, Refusal> {
        let request = AddCheckpoint::parse(body)?;
        let parsed = note::parse(&request.checkpoint)
            .map_err(|e| Refusal::new(400, &format!("the checkpoint: {e}")))?;
        let head = Checkpoint::parse_body(parsed.text)
            .map_err(|e| Refusal::new(400, &format!("the checkpoint: {e}")))?;
        let keys: Vec<&CheckpointVerifier> = self
            .logs
            .iter()
            .filter(|(origin, _)| *origin == head.origin)
            .map(|(_, key)| key)
            .collect();
        if keys.is_empty() {
            return Err(Refusal::new(
                404,
                &format!("this witness does not follow the log `{}`", head.origin),
            ));
        }
        let known: Vec<&dyn KnownKey> = keys.iter().map(|k| *k as &dyn KnownKey).collect();
        let signed = parsed
            .verify(&known)
            .map_err(|e| Refusal::new(403, &e.to_string()))?;
        if !signed.contains(&true) {
            return Err(Refusal::new(
                403,
                "the checkpoint is not signed by the log's key",
            ));
        }
        if request.old > head.size {
            return Err(Refusal::new(
                400,
                "the old size is larger than the checkpoint",
            ));
        }
        if head.size == 0 && head.root != merkle::root(&[]) {
            return Err(Refusal::new(422, "an empty tree has the empty root"));
        }
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let last = match kept.state.get(&head.origin) {
            Some(note) => Some(
                note::parse(note)
                    .and_then(|n| Checkpoint::parse_body(n.text))
                    .map_err(|_| Refusal::new(500, "the witness state is damaged"))?,
            ),
            None => None,
        };
        let last_size = last.as_ref().map_or(0, |c| c.size);
        if request.old != last_size {
            return Err(Refusal {
                status: 409,
                body: format!("{last_size}\n"),
            });
        }
        let consistent = match &last {
            None => request.proof.is_empty(),
            Some(last) => merkle::verify_consistency(
                last.size,
                head.size,
                &last.root,
                &head.root,
                &request.proof,
            ),
        };
        if !consistent {
            return Err(Refusal::new(
                422,
                &format!(
                    "the checkpoint of {} records does not extend the one of {last_size} this witness cosigned: the log was rewritten or forked",
                    head.size
                ),
            ));
        }
        let line = self.signer.cosign(parsed.text, now);
        let mut note = parsed.text.to_owned();
        note.push('\n');
        for signature in &parsed.signatures {
            if keys
                .iter()
                .any(|k| k.name() == signature.name && k.id() == signature.id)
            {
                note.push_str(signature.raw);
            }
        }
        note.push_str(&line);
        let mut next = kept.state.clone();
        next.insert(head.origin.clone(), note);
        kept.save(&self.path, next)
            .map_err(|e| Refusal::new(500, &e))?;
        Ok(line)
    }
}

impl std::fmt::Debug for Witness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Witness")
            .field("key", &self.signer)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Kept {
    /// Replaces the state file with `next` (its new file locked before it is in place),
    /// then the state in memory, then the record of what was cosigned.
    fn save(&mut self, path: &Path, next: State) -> Result<(), String> {
        #[cfg(unix)]
        {
            let locked = state::save(path, &next, |file| self.locks.lock_next(file))?;
            self.locks.replaced(locked);
        }
        #[cfg(not(unix))]
        state::save(path, &next, |_| Ok(()))?;
        self.state = next;
        state::save_record(path, &self.state)
    }
}

#[cfg(test)]
mod tests {
    use base64::{Engine, engine::general_purpose::STANDARD as B64};

    use super::*;
    use crate::{checkpoint::CheckpointSigner, merkle::leaf_hash};

    fn leaves(n: usize, salt: &str) -> Vec<Hash> {
        (0..n)
            .map(|i| leaf_hash(format!("{salt}{i}").as_bytes()))
            .collect()
    }

    struct Log {
        signer: CheckpointSigner,
        origin: &'static str,
    }

    impl Log {
        fn request(&self, old: usize, all: &[Hash]) -> String {
            AddCheckpoint {
                old: old as u64,
                proof: merkle::consistency_proof(old, all).unwrap(),
                checkpoint: self
                    .signer
                    .sign(self.origin, all.len() as u64, &merkle::root(all)),
            }
            .encode()
        }
    }

    /// The witness whose state is `state.json` in `dir`, made there on first use.
    fn witness(dir: &Path, log: &Log, signer: WitnessSigner) -> Witness {
        let path = dir.join("state.json");
        if !path.exists() {
            Witness::init(&path).unwrap();
        }
        Witness::open(
            signer,
            vec![(log.origin.to_owned(), log.signer.verifier())],
            &path,
        )
        .unwrap()
    }

    #[test]
    fn a_witness_cosigns_extensions_only_and_remembers_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let log = Log {
            signer: CheckpointSigner::generate("log").unwrap(),
            origin: "example log",
        };
        let key = WitnessSigner::generate("w.example/1").unwrap();
        let key_text = key.to_text();
        let public = key.verifier();
        let w = witness(dir.path(), &log, key);
        let all = leaves(10, "a");

        let line = w.add_checkpoint(&log.request(0, &all[..4]), 100).unwrap();
        let note = format!(
            "{}{line}",
            log.signer.sign(log.origin, 4, &merkle::root(&all[..4]))
        );
        assert_eq!(public.cosigned_at(&note).unwrap(), Some(100));
        // The client's idea of the old size is stale: 409 with the witness's size.
        let stale = w
            .add_checkpoint(&log.request(0, &all[..6]), 101)
            .unwrap_err();
        assert_eq!((stale.status, stale.body.as_str()), (409, "4\n"));
        assert!(w.add_checkpoint(&log.request(4, &all[..6]), 102).is_ok());

        // A restarted witness remembers size 6.
        drop(w);
        let w = witness(dir.path(), &log, WitnessSigner::parse(&key_text).unwrap());
        assert_eq!(
            w.add_checkpoint(&log.request(0, &all), 103)
                .unwrap_err()
                .status,
            409
        );
        // A fork: the same size with another root.
        let fork = leaves(6, "b");
        let forked = AddCheckpoint {
            old: 6,
            proof: Vec::new(),
            checkpoint: log.signer.sign(log.origin, 6, &merkle::root(&fork)),
        };
        assert_eq!(
            w.add_checkpoint(&forked.encode(), 104).unwrap_err().status,
            422
        );
        // A rewrite: a longer tree whose first 6 records are not the cosigned ones.
        let mut rewritten = all.clone();
        rewritten[2] = leaf_hash(b"rewritten");
        assert_eq!(
            w.add_checkpoint(&log.request(6, &rewritten), 105)
                .unwrap_err()
                .status,
            422
        );
        // A rollback to an older genuine checkpoint.
        let back = AddCheckpoint {
            old: 6,
            proof: Vec::new(),
            checkpoint: log.signer.sign(log.origin, 4, &merkle::root(&all[..4])),
        };
        assert_eq!(
            w.add_checkpoint(&back.encode(), 106).unwrap_err().status,
            400
        );
        assert!(w.add_checkpoint(&log.request(6, &all), 107).is_ok());
        let latest = w
            .latest(&crate::canonical::sha256_hex(log.origin.as_bytes()))
            .unwrap();
        assert!(latest.starts_with("example log\n10\n"), "{latest}");
        assert_eq!(public.cosigned_at(&latest).unwrap(), Some(107));
        assert_eq!(log.signer.verifier().open(&latest).unwrap().size, 10);
    }

    #[test]
    fn unknown_logs_bad_signatures_and_bad_bodies_get_their_statuses() {
        let dir = tempfile::tempdir().unwrap();
        let log = Log {
            signer: CheckpointSigner::generate("log").unwrap(),
            origin: "example log",
        };
        let key = WitnessSigner::generate("w").unwrap().to_text();
        let w = witness(dir.path(), &log, WitnessSigner::parse(&key).unwrap());
        let all = leaves(3, "a");
        let other = Log {
            signer: CheckpointSigner::generate("log").unwrap(),
            origin: "example log",
        };
        assert_eq!(
            w.add_checkpoint(&other.request(0, &all), 1)
                .unwrap_err()
                .status,
            403
        );
        let unknown = Log {
            signer: CheckpointSigner::generate("log").unwrap(),
            origin: "another log",
        };
        assert_eq!(
            w.add_checkpoint(&unknown.request(0, &all), 1)
                .unwrap_err()
                .status,
            404
        );
        let good = log.request(0, &all);
        for bad in [
            good.replace("old 0", "old 00"),
            good.replace("old 0", "old 4"),
            good.replacen("\n\n", "\n", 1),
            good.replace("old 0\n", "old 0\nnot base64\n"),
        ] {
            let status = w.add_checkpoint(&bad, 1).unwrap_err().status;
            assert!(matches!(status, 400 | 403), "{bad:?}: {status}");
        }
        let with_proof = good.replace("old 0\n", &format!("old 0\n{}\n", B64.encode([0u8; 32])));
        assert_eq!(w.add_checkpoint(&with_proof, 1).unwrap_err().status, 422);
        // A second witness on the same state is refused while the first runs.
        assert!(w.add_checkpoint(&good, 1).is_ok());
        let second = Witness::open(
            WitnessSigner::parse(&key).unwrap(),
            vec![(log.origin.to_owned(), log.signer.verifier())],
            &dir.path().join("state.json"),
        );
        assert!(second.unwrap_err().contains("another witness"));
        drop(w);
        // An edited state file stops the witness from starting.
        let path = dir.path().join("state.json");
        let edited = std::fs::read_to_string(&path)
            .unwrap()
            .replace("\\n3\\n", "\\n2\\n");
        std::fs::write(&path, edited).unwrap();
        assert!(
            Witness::open(
                WitnessSigner::parse(&key).unwrap(),
                vec![(log.origin.to_owned(), log.signer.verifier())],
                &path
            )
            .is_err()
        );
    }
}
