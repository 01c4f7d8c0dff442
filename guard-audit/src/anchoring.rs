//! Checkpoints against a trust policy: signing and witnessing one (`checkpoint --policy`),
//! and verifying that the log is anchored (`verify --policy` or `--key`).
//!
//! A log verified against a policy must
//! - contain every checkpoint its key signed that the verifier can see: the ones given with
//!   `--checkpoint`, the ones stored with the log, and the latest one each witness of the
//!   policy serves (so a log truncated or rolled back below what a witness cosigned fails,
//!   whatever the database still holds);
//! - end at a checkpoint that meets the policy's quorum: records after it are not anchored,
//!   and whoever holds the database could change or drop them without trace.

use rmcp_guard_log::{
    CheckpointSigner, Cosigners, Policy, Witnessed, checkpoint_origin, fetch_checkpoint, merkle,
    verify_export_against,
};

use crate::{
    Args, Outcome, open_store, pending_note, read,
    source::Source,
    store::{Log, VerifyError, now_ms},
    verifier,
};

/// A checkpoint the policy's log key signed, where it came from, and whether its
/// cosignatures meet the quorum.
pub(crate) struct Seen {
    pub witnessed: Witnessed,
    pub note: String,
    pub from: String,
    pub quorum: bool,
}

/// The policy of `--policy FILE`, else one trusting the `--key` alone; `None` without both.
pub(crate) fn policy(args: &Args<'_>) -> Result<Option<Policy>, String> {
    if let Some(path) = args.get("policy") {
        return Policy::parse(&read(path, "policy")?)
            .map(Some)
            .map_err(|e| format!("{path}: {e}"));
    }
    if args.get("key").is_some() {
        return Ok(Some(Policy::log_only(verifier(args)?)));
    }
    Ok(None)
}

/// Every checkpoint signed by the policy's log key that can be seen: `--checkpoint` files,
/// those stored with the log, and each witness's latest. A given or stored checkpoint that
/// fails its signature is an error; a witness that cannot be reached is reported on stderr,
/// or, with `--require-witness`, an error: an audit must not pass on the checkpoints the
/// database's holder chose to keep.
pub(crate) async fn seen(
    args: &Args<'_>,
    policy: &Policy,
    log: Option<&Log>,
) -> Result<Vec<Seen>, String> {
    let mut seen = Vec::new();
    let add = |seen: &mut Vec<Seen>, note: String, from: String| -> Result<(), String> {
        let (witnessed, quorum) = policy.check(&note).map_err(|e| format!("{from}: {e}"))?;
        seen.push(Seen {
            witnessed,
            note,
            from,
            quorum,
        });
        Ok(())
    };
    for path in args.all("checkpoint") {
        add(&mut seen, read(path, "checkpoint")?, path.to_owned())?;
    }
    let mut origin = args.get("origin").map(str::to_owned);
    if let Some(log) = log {
        for note in log.checkpoints().await? {
            let size = note.split('\n').nth(1).unwrap_or("?").to_owned();
            add(
                &mut seen,
                note,
                format!("the checkpoint of {size} records stored in the database"),
            )?;
        }
        if origin.is_none() {
            origin = log.stored_origin().await?;
        }
    }
    let origin = origin.or_else(|| seen.first().map(|s| s.witnessed.checkpoint.origin.clone()));
    let required = args.has("require-witness");
    if required && policy.witnesses().is_empty() {
        return Err(
            "--require-witness needs a policy that names witnesses (--policy FILE); with --key alone there is none to ask".into(),
        );
    }
    if required && origin.is_none() {
        return Err(
            "--require-witness: the log's name is not known (no checkpoint is at hand), so no witness can be asked; give --origin".into(),
        );
    }
    if let Some(origin) = origin {
        for witness in policy.witnesses() {
            let Some(url) = &witness.url else {
                if required {
                    return Err(format!(
                        "--require-witness: the policy gives witness {} no URL, so it cannot be asked; add its URL to the policy",
                        witness.name
                    ));
                }
                continue;
            };
            match fetch_checkpoint(url, &origin).await {
                Ok(Some(note)) => add(
                    &mut seen,
                    note,
                    format!("witness {}'s latest checkpoint", witness.name),
                )?,
                Ok(None) => {}
                Err(e) if required => {
                    return Err(format!(
                        "could not ask witness {} for its latest checkpoint ({e}), and --require-witness makes that a failure: without its view a rolled-back log could pass; bring the witness back and verify again",
                        witness.name
                    ));
                }
                Err(e) => eprintln!(
                    "guard-audit: could not ask witness {} for its latest checkpoint ({e}); verifying with the checkpoints at hand (give --require-witness to fail instead)",
                    witness.name
                ),
            }
        }
    }
    seen.sort_by_key(|s| s.witnessed.checkpoint.size);
    Ok(seen)
}

/// `verify --policy` or `--key`: the verdict, then the entries still waiting for their
/// place, which no checkpoint covers yet.
pub(crate) async fn verify(args: &Args<'_>, policy: &Policy) -> Result<Outcome, String> {
    let source = Source::open(args).await?;
    // The queue before the log: an entry sequenced between the two reads is then counted
    // twice (placed, and noted as pending), never missed.
    let pending = match source.log() {
        Some(log) => pending_note(log, None).await?,
        None => String::new(),
    };
    Ok(verdict(args, policy, &source).await?.then(&pending))
}

async fn verdict(args: &Args<'_>, policy: &Policy, source: &Source) -> Result<Outcome, String> {
    let seen = seen(args, policy, source.log()).await?;
    let (Some(largest), Some(anchor)) = (seen.last(), seen.iter().rev().find(|s| s.quorum)) else {
        return Ok(Outcome::Bad(format!(
            "FAILED: no checkpoint {}: the log is not anchored, so whoever holds the database could have rewritten or truncated any of it; sign and witness one with `guard-audit checkpoint --policy`, or give the witness's checkpoint with --checkpoint\n",
            if policy.needs_witnesses() {
                "is cosigned as the policy requires"
            } else {
                "is signed by the key"
            }
        )));
    };
    let head = &largest.witnessed.checkpoint;
    // The smaller checkpoints name a rewrite from the first record none of them vouches for.
    let older: Vec<_> = seen
        .iter()
        .map(|s| s.witnessed.checkpoint.clone())
        .collect();
    let checked = match source {
        Source::Store(log) => match log.verify_against(Some(head), &older).await {
            Ok(verified) => Ok(verified),
            Err(VerifyError::Fault(fault)) => Err(fault.to_string()),
            Err(VerifyError::Store(e)) => return Err(e),
        },
        Source::Export(bytes) => {
            verify_export_against(bytes, Some(head), &older).map_err(|fault| fault.to_string())
        }
    };
    let verified = match checked {
        Ok(verified) => verified,
        Err(fault) => {
            return Ok(Outcome::Bad(format!(
                "FAILED: {fault} (checked against {})\n",
                largest.from
            )));
        }
    };
    let leaves: Vec<merkle::Hash> = source
        .entries()
        .await?
        .into_iter()
        .map(|(h, _)| h)
        .collect();
    for other in &seen {
        let cp = &other.witnessed.checkpoint;
        let size = usize::try_from(cp.size)
            .unwrap_or(usize::MAX)
            .min(leaves.len());
        if cp.origin != head.origin || merkle::root(&leaves[..size]) != cp.root {
            return Ok(Outcome::Bad(format!(
                "FAILED: the log does not extend {} (tree size {}): history before it was rewritten, or it belongs to another log\n",
                other.from, cp.size
            )));
        }
    }
    let covered = anchor.witnessed.checkpoint.size;
    if verified.records > covered {
        return Ok(Outcome::Bad(format!(
            "FAILED: records {covered} to {} come after the last anchored checkpoint ({}, tree size {covered}): whoever holds the database could change or drop them without trace; checkpoint the log again (`guard-audit checkpoint --policy`, or the server's Anchor) and verify then\n",
            verified.records - 1,
            anchor.from
        )));
    }
    Ok(Outcome::Good(format!(
        "OK: {verified} (checkpoint: {}, tree size {covered}{})\n",
        anchor.from,
        cosigned(&anchor.witnessed)
    )))
}

/// `, cosigned by w1, w2` for a checkpoint with cosignatures, else nothing.
pub(crate) fn cosigned(witnessed: &Witnessed) -> String {
    if witnessed.cosigned_by.is_empty() {
        String::new()
    } else {
        format!(", cosigned by {}", witnessed.cosigned_by.join(", "))
    }
}

/// `checkpoint`: signs the log under its stored origin (or `--origin` for its first
/// checkpoint) and, with `--policy`, has the policy's witnesses cosign it.
pub(crate) async fn checkpoint(args: &Args<'_>) -> Result<Outcome, String> {
    let log = open_store(args, true).await?;
    let signer = CheckpointSigner::parse(&read(args.need("signer")?, "signer key")?)
        .map_err(|e| e.to_string())?;
    let stored = log.stored_origin().await?;
    let origin = match (stored, args.get("origin")) {
        (Some(stored), Some(given)) if stored != given => {
            return Err(format!(
                "this log's checkpoints are named `{stored}`, not `{given}`: drop --origin (a log keeps one name, so its checkpoints extend each other)"
            ));
        }
        (Some(stored), _) => checkpoint_origin(&stored),
        (None, Some(given)) => checkpoint_origin(given),
        (None, None) => {
            return Err(
                "this log has no checkpoint yet, so its name is not stored: give --origin with the name the server gives the log (Operations::audit_origin or AuditLog::new; `guard audit log` by default)".into(),
            );
        }
    };
    let Some(path) = args.get("policy") else {
        return log
            .sign_checkpoint(&origin, &signer)
            .await
            .map(|(note, _)| Outcome::Good(note));
    };
    let policy = Policy::parse(&read(path, "policy")?).map_err(|e| format!("{path}: {e}"))?;
    let witnesses = Cosigners::new(&policy, &signer.verifier())?;
    let (note, leaves) = log.sign_checkpoint(&origin, &signer).await?;
    let round = witnesses.submit(&note, &leaves).await;
    log.add_cosignatures(leaves.len() as u64, &round.lines())
        .await?;
    let anchored = witnesses.close(round, now_ms());
    for status in witnesses.status() {
        if let Some(error) = status.error {
            eprintln!(
                "guard-audit: witness {} ({}) did not cosign: {error}",
                status.witness, status.url
            );
        }
    }
    match policy.open(&anchored.note) {
        Ok(_) => Ok(Outcome::Good(anchored.note)),
        Err(e) => Ok(Outcome::Bad(format!("{}FAILED: {e}\n", anchored.note))),
    }
}
