//! Which checkpoints to trust: a `c2sp.org/tlog-policy` file. It lists the log keys, the
//! witness keys (with the witness's submission URL where the log should send its
//! checkpoints), groups of witnesses with thresholds, and the quorum a checkpoint's
//! cosignatures must meet.
//!
//! ```text
//! # the log's key, then two witnesses of which one must cosign
//! log ops-audit+1a2b3c4d+AU...
//! witness w1 witness.example/w1+5e6f7a8b+BK... http://127.0.0.1:7380
//! witness w2 witness.example/w2+9c0d1e2f+BM...
//! group both-sites any w1 w2
//! quorum both-sites
//! ```
//!
//! `quorum none` trusts the log's signature alone. A checkpoint meets the policy when a
//! listed log signed it, no signature by a listed key fails, and its valid cosignatures meet
//! the quorum.

use super::{
    checkpoint::{Checkpoint, CheckpointError, CheckpointVerifier},
    cosignature::WitnessVerifier,
    note::{self, KnownKey},
};

/// A trust policy for checkpoints.
#[derive(Debug, Clone)]
pub struct Policy {
    logs: Vec<CheckpointVerifier>,
    witnesses: Vec<PolicyWitness>,
    groups: Vec<Group>,
    quorum: Option<Member>,
}

/// A witness the policy names.
#[derive(Debug, Clone)]
pub struct PolicyWitness {
    /// Its name in the policy.
    pub name: String,
    /// Its cosignature key.
    pub key: WitnessVerifier,
    /// Its submission URL, if the policy gives one.
    pub url: Option<String>,
}

#[derive(Debug, Clone)]
struct Group {
    name: String,
    threshold: usize,
    members: Vec<Member>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Member {
    Witness(usize),
    Group(usize),
}

/// Why a policy file was refused, or a checkpoint does not meet it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// A line of the policy file is wrong.
    #[error("policy line {line}: {what} (the format is c2sp.org/tlog-policy)")]
    Line {
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        what: String,
    },
    /// The file as a whole is wrong.
    #[error("policy: {0} (the format is c2sp.org/tlog-policy)")]
    File(String),
    /// The checkpoint is not signed as the policy requires.
    #[error("{0}")]
    Checkpoint(#[from] CheckpointError),
    /// The checkpoint's cosignatures do not meet the quorum.
    #[error(
        "the checkpoint of {size} records is cosigned by {found} but the policy's quorum needs more; submit it to the policy's witnesses (the server does as it writes checkpoints) or use a checkpoint they cosigned"
    )]
    Quorum {
        /// The checkpoint's size.
        size: u64,
        /// The witnesses whose cosignatures held, in words.
        found: String,
    },
}

/// A checkpoint that meets a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Witnessed {
    /// The tree head.
    pub checkpoint: Checkpoint,
    /// The policy names of the witnesses whose cosignatures held.
    pub cosigned_by: Vec<String>,
}

impl Policy {
    /// A policy that trusts `log`'s signature alone (`quorum none`).
    pub fn log_only(log: CheckpointVerifier) -> Self {
        Self {
            logs: vec![log],
            witnesses: Vec::new(),
            groups: Vec::new(),
            quorum: None,
        }
    }

    /// Reads a policy file.
    pub fn parse(text: &str) -> Result<Self, PolicyError> {
        let mut policy = Self {
            logs: Vec::new(),
            witnesses: Vec::new(),
            groups: Vec::new(),
            quorum: None,
        };
        let mut quorum_seen = false;
        for (i, line) in text.split('\n').enumerate() {
            let bad = |what: &str| PolicyError::Line {
                line: i + 1,
                what: what.to_owned(),
            };
            if let Some(c) = line
                .chars()
                .find(|&c| c != '\t' && (c.is_ascii_control() || c == '\u{7f}'))
            {
                return Err(bad(&format!(
                    "it holds the control character U+{:04X}; only tab and newline are allowed",
                    c as u32
                )));
            }
            let words: Vec<&str> = line.split([' ', '\t']).filter(|w| !w.is_empty()).collect();
            match words.as_slice() {
                [] => {}
                [first, ..] if first.starts_with('#') => {}
                ["log", key, rest @ ..] if rest.len() <= 1 => {
                    let key = CheckpointVerifier::parse(key)
                        .map_err(|e| bad(&format!("the log key: {e}")))?;
                    if policy.logs.iter().any(|k| k.public() == key.public()) {
                        return Err(bad("this log key is listed twice"));
                    }
                    policy.logs.push(key);
                }
                ["witness", name, key, rest @ ..] if rest.len() <= 1 => {
                    policy.fresh_name(name).map_err(|e| bad(&e))?;
                    let key = WitnessVerifier::parse(key)
                        .map_err(|e| bad(&format!("the witness key: {e}")))?;
                    if policy
                        .witnesses
                        .iter()
                        .any(|w| w.key.public() == key.public())
                    {
                        return Err(bad("this witness key is listed twice"));
                    }
                    policy.witnesses.push(PolicyWitness {
                        name: (*name).to_owned(),
                        key,
                        url: rest.first().map(|u| (*u).to_owned()),
                    });
                }
                ["group", name, threshold, members @ ..] if !members.is_empty() => {
                    policy.fresh_name(name).map_err(|e| bad(&e))?;
                    let mut resolved = Vec::with_capacity(members.len());
                    for member in members {
                        let found = policy.member(member).ok_or_else(|| {
                            bad(&format!(
                                "`{member}` is not a witness or group defined above this line"
                            ))
                        })?;
                        if resolved.contains(&found) {
                            return Err(bad(&format!("`{member}` is listed twice")));
                        }
                        resolved.push(found);
                    }
                    let n = resolved.len();
                    let threshold = match *threshold {
                        "all" => n,
                        "any" => 1,
                        k => k
                            .parse::<usize>()
                            .ok()
                            .filter(|k| (1..=n).contains(k) && k.to_string() == *threshold)
                            .ok_or_else(|| {
                                bad(&format!(
                                    "the threshold must be all, any or a number from 1 to {n}"
                                ))
                            })?,
                    };
                    policy.groups.push(Group {
                        name: (*name).to_owned(),
                        threshold,
                        members: resolved,
                    });
                }
                ["quorum", name] => {
                    if quorum_seen {
                        return Err(bad("a policy has exactly one quorum line"));
                    }
                    quorum_seen = true;
                    if *name != "none" {
                        policy.quorum = Some(policy.member(name).ok_or_else(|| {
                            bad(&format!(
                                "`{name}` is not a witness or group defined above this line"
                            ))
                        })?);
                    }
                }
                _ => {
                    return Err(bad(
                        "expected `log VKEY [URL]`, `witness NAME VKEY [URL]`, `group NAME all|any|K MEMBER...` or `quorum NAME|none`",
                    ));
                }
            }
        }
        if !quorum_seen {
            return Err(PolicyError::File(
                "no quorum line; add `quorum none` to trust the log's signature alone".into(),
            ));
        }
        if policy.logs.is_empty() {
            return Err(PolicyError::File(
                "no log line; add `log VKEY` with the log's verifier key".into(),
            ));
        }
        Ok(policy)
    }

    fn fresh_name(&self, name: &str) -> Result<(), String> {
        if name == "none" || self.member(name).is_some() {
            return Err(format!("the name `{name}` is taken"));
        }
        Ok(())
    }

    fn member(&self, name: &str) -> Option<Member> {
        self.witnesses
            .iter()
            .position(|w| w.name == name)
            .map(Member::Witness)
            .or_else(|| {
                self.groups
                    .iter()
                    .position(|g| g.name == name)
                    .map(Member::Group)
            })
    }

    /// The witnesses the policy names.
    pub fn witnesses(&self) -> &[PolicyWitness] {
        &self.witnesses
    }

    /// The log keys the policy trusts.
    pub fn logs(&self) -> &[CheckpointVerifier] {
        &self.logs
    }

    /// Whether the quorum needs any cosignature.
    pub fn needs_witnesses(&self) -> bool {
        self.quorum.is_some()
    }

    /// The checkpoint in `note`, if it meets the policy.
    pub fn open(&self, note: &str) -> Result<Witnessed, PolicyError> {
        let (witnessed, quorum) = self.check(note)?;
        if !quorum {
            return Err(PolicyError::Quorum {
                size: witnessed.checkpoint.size,
                found: if witnessed.cosigned_by.is_empty() {
                    "no witness of the policy".into()
                } else {
                    witnessed.cosigned_by.join(", ")
                },
            });
        }
        Ok(witnessed)
    }

    /// The checkpoint in `note` if a listed log signed it (and no listed key's signature
    /// fails), and whether its cosignatures meet the quorum. A log-signed checkpoint short
    /// of the quorum still proves the log once had its records.
    pub fn check(&self, note: &str) -> Result<(Witnessed, bool), PolicyError> {
        let parsed = note::parse(note)?;
        let mut known: Vec<&dyn KnownKey> = Vec::new();
        known.extend(self.logs.iter().map(|k| k as &dyn KnownKey));
        known.extend(self.witnesses.iter().map(|w| &w.key as &dyn KnownKey));
        let signed = parsed.verify(&known)?;
        let (by_log, by_witness) = signed.split_at(self.logs.len());
        if !by_log.contains(&true) {
            let names: Vec<&str> = self.logs.iter().map(|k| k.name()).collect();
            return Err(CheckpointError::BadSignature(names.join(" or ")).into());
        }
        let checkpoint = Checkpoint::parse_body(parsed.text)?;
        let cosigned_by = self
            .witnesses
            .iter()
            .zip(by_witness)
            .filter(|(_, signed)| **signed)
            .map(|(w, _)| w.name.clone())
            .collect();
        let quorum = self.quorum.is_none_or(|q| self.holds(q, by_witness));
        Ok((
            Witnessed {
                checkpoint,
                cosigned_by,
            },
            quorum,
        ))
    }

    fn holds(&self, member: Member, cosigned: &[bool]) -> bool {
        match member {
            Member::Witness(i) => cosigned[i],
            Member::Group(g) => {
                let group = &self.groups[g];
                group
                    .members
                    .iter()
                    .filter(|m| self.holds(**m, cosigned))
                    .count()
                    >= group.threshold
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use base64::{Engine, engine::general_purpose::STANDARD as B64};

    use super::*;
    use crate::{checkpoint::CheckpointSigner, cosignature::WitnessSigner};

    struct Setup {
        log: CheckpointSigner,
        witnesses: Vec<WitnessSigner>,
    }

    fn setup() -> Setup {
        Setup {
            log: CheckpointSigner::generate("log.example").unwrap(),
            witnesses: (1..=3)
                .map(|i| WitnessSigner::generate(&format!("w.example/{i}")).unwrap())
                .collect(),
        }
    }

    impl Setup {
        fn policy(&self, tail: &str) -> Result<Policy, PolicyError> {
            let mut text = format!("# test\nlog {}\n", self.log.verifier().to_text());
            for (i, w) in self.witnesses.iter().enumerate() {
                text.push_str(&format!(
                    "witness\tw{} {} http://127.0.0.1:{}\n",
                    i + 1,
                    w.verifier().to_text(),
                    7000 + i
                ));
            }
            Policy::parse(&(text + tail))
        }

        fn cosigned(&self, by: &[usize]) -> String {
            let note = self.log.sign("log.example", 4, &[2; 32]);
            let text = note.rsplit_once("\n\n").unwrap().0.to_owned() + "\n";
            let mut out = note;
            for &i in by {
                out.push_str(&self.witnesses[i].cosign(&text, 1_700_000_000 + i as u64));
            }
            out
        }
    }

    #[test]
    fn quorums_of_witnesses_and_groups_are_counted() {
        let s = setup();
        let none = s.policy("quorum none\n").unwrap();
        assert_eq!(none.open(&s.cosigned(&[])).unwrap().checkpoint.size, 4);
        let one = s.policy("quorum w2\n").unwrap();
        assert!(one.open(&s.cosigned(&[0, 2])).is_err());
        assert_eq!(
            one.open(&s.cosigned(&[1])).unwrap().cosigned_by,
            ["w2".to_owned()]
        );
        let two = s
            .policy("group g 2 w1 w2 w3\ngroup top all g w1\nquorum top\n")
            .unwrap();
        assert!(two.open(&s.cosigned(&[1, 2])).is_err(), "w1 is needed too");
        assert!(two.open(&s.cosigned(&[0])).is_err(), "two of the group");
        assert!(two.open(&s.cosigned(&[0, 2])).is_ok());
        assert_eq!(
            two.witnesses()[0].url.as_deref(),
            Some("http://127.0.0.1:7000")
        );
        // A broken cosignature by a listed witness refuses the note.
        let good = s.cosigned(&[0, 2]);
        let last = good.lines().last().unwrap();
        let (head, blob) = last.rsplit_once(' ').unwrap();
        let mut bytes = B64.decode(blob).unwrap();
        bytes[20] ^= 1;
        let broken = good.replace(last, &format!("{head} {}", B64.encode(bytes)));
        assert!(matches!(
            two.open(&broken),
            Err(PolicyError::Checkpoint(CheckpointError::BadSignature(_)))
        ));
        // Another log's key does not sign for this one.
        let other = setup();
        assert!(none.open(&other.cosigned(&[])).is_err());
    }

    #[test]
    fn malformed_policies_are_refused_with_their_line() {
        let s = setup();
        for (tail, line) in [
            ("quorum w9\n", 6),
            ("group g 4 w1 w2 w3\nquorum g\n", 6),
            ("group g 0 w1\nquorum g\n", 6),
            ("group g any w1 w1\nquorum g\n", 6),
            ("group w1 any w2\nquorum w1\n", 6),
            ("quorum none\nquorum none\n", 7),
            ("quorum none\r\n", 6),
            ("frobnicate\nquorum none\n", 6),
            ("group none any w1\nquorum none\n", 6),
        ] {
            match s.policy(tail) {
                Err(PolicyError::Line { line: l, .. }) => assert_eq!(l, line, "{tail:?}"),
                other => panic!("{tail:?}: {other:?}"),
            }
        }
        assert!(matches!(s.policy(""), Err(PolicyError::File(_))));
        let twice = format!(
            "witness again {}\nquorum none\n",
            s.witnesses[0].verifier().to_text()
        );
        assert!(s.policy(&twice).is_err());
        assert!(matches!(
            Policy::parse("quorum none\n"),
            Err(PolicyError::File(_))
        ));
    }
}
