//! `receipt` writes a record's proof of inclusion as a C2SP tlog-proof; `verify-proof`
//! checks one offline, or a consistency proof between two checkpoints.

use rmcp_guard_log::{
    Checkpoint, ConsistencyProof, Policy, Receipt, ReceiptError,
    merkle::{self, Hash},
};

use crate::{
    Args, Outcome,
    anchoring::{cosigned, policy, seen},
    read, store,
};

fn needs_policy(args: &Args<'_>) -> Result<Policy, String> {
    policy(args)?.ok_or_else(|| {
        "give --policy FILE (the keys and witnesses to trust) or --key KEY (the log's key alone)"
            .to_owned()
    })
}

pub(crate) async fn receipt(args: &Args<'_>) -> Result<Outcome, String> {
    let [trace] = args.words[..] else {
        return Err("receipt takes one TRACE_ID".into());
    };
    let policy = needs_policy(args)?;
    let log = store(args).await?;
    let records = log.by_trace(trace).await?;
    let record = match args.get("seq") {
        Some(seq) => records.iter().find(|r| r.seq.to_string() == seq),
        None => records.last(),
    };
    let Some(record) = record else {
        if args.get("seq").is_none() && !log.pending_of(trace).await?.is_empty() {
            return Ok(Outcome::Bad(format!(
                "the record of trace {trace} is pending: committed, not yet sequenced, so no checkpoint can cover it yet; a server's sequencer places it within a second of its commit while one runs: ask again then\n"
            )));
        }
        return Ok(Outcome::Bad(format!(
            "no record of trace {trace}{}\n",
            args.get("seq")
                .map(|s| format!(" at sequence number {s}"))
                .unwrap_or_default()
        )));
    };
    let origin = match args.get("origin") {
        Some(origin) => origin.to_owned(),
        None => log.stored_origin().await?.ok_or(
            "this log has no checkpoint stored, so its name is not known: give --origin with the log's name (its checkpoints' first line)",
        )?,
    };
    let seen = seen(args, &policy, Some(&log)).await?;
    let Some(anchor) = seen
        .iter()
        .rev()
        .find(|s| s.quorum && s.witnessed.checkpoint.size > record.seq)
    else {
        return Ok(Outcome::Bad(format!(
            "FAILED: record {} of trace {trace} is not under a checkpoint that meets the policy yet; checkpoint the log (`guard-audit checkpoint --policy`, or wait for the server's Anchor) and ask again\n",
            record.seq
        )));
    };
    let leaves = log.leaves().await?;
    let size = usize::try_from(anchor.witnessed.checkpoint.size).unwrap_or(usize::MAX);
    let receipt = leaves
        .get(..size)
        .and_then(|tree| Receipt::new(record.entry.as_bytes(), record.seq, tree, &anchor.note));
    match receipt.map(|r| (r.verify(&policy, &origin), r)) {
        Some((Ok(_), receipt)) => {
            let text = receipt.encode();
            match args.get("out") {
                Some(path) => {
                    std::fs::write(path, &text)
                        .map_err(|e| format!("cannot write the receipt {path}: {e}"))?;
                    Ok(Outcome::Good(format!(
                        "wrote the receipt of record {} (trace {trace}) under the checkpoint of {size} records to {path}\n",
                        record.seq
                    )))
                }
                None => Ok(Outcome::Good(text)),
            }
        }
        Some((Err(other @ ReceiptError::OtherLog { .. }), _)) => {
            Ok(Outcome::Bad(format!("FAILED: {other}\n")))
        }
        _ => Ok(Outcome::Bad(format!(
            "FAILED: the database's record {} does not lead to the root of {}: run guard-audit verify to find what changed\n",
            record.seq, anchor.from
        ))),
    }
}

pub(crate) fn verify_proof(args: &Args<'_>) -> Result<Outcome, String> {
    let policy = needs_policy(args)?;
    if let Some(path) = args.get("consistency") {
        return consistency(args, &policy, path);
    }
    let path = args.need("proof")?;
    let origin = args.get("origin").ok_or(
        "--origin is required: give the name of the log the receipt must come from (its checkpoints' first line, as guard-audit verify prints it); one key may sign several logs, and a receipt proves a record only of the log it names",
    )?;
    let text = read(path, "receipt")?;
    let receipt = match Receipt::parse(&text) {
        Ok(receipt) => receipt,
        Err(e) => return Ok(Outcome::Bad(format!("FAILED: {path}: {e}\n"))),
    };
    let witnessed = match receipt.verify(&policy, origin) {
        Ok(witnessed) => witnessed,
        Err(e) => return Ok(Outcome::Bad(format!("FAILED: {path}: {e}\n"))),
    };
    let entry: serde_json::Value = serde_json::from_slice(&receipt.entry).unwrap_or_default();
    let field = |name: &str| entry.get(name).and_then(|v| v.as_str()).unwrap_or("?");
    if let Some(want) = args.get("trace")
        && field("trace_id") != want
    {
        return Ok(Outcome::Bad(format!(
            "FAILED: the receipt is for trace {}, not {want}\n",
            field("trace_id")
        )));
    }
    Ok(Outcome::Good(format!(
        "OK: record {} ({} {}, trace {}) is in the log `{}` of {} records{}\n",
        receipt.index,
        field("tool"),
        field("outcome"),
        field("trace_id"),
        witnessed.checkpoint.origin,
        witnessed.checkpoint.size,
        cosigned(&witnessed)
    )))
}

/// `--from OLD --to NEW --consistency FILE`: the proof (base64 hashes, one a line, as
/// `prove --from --to --out` writes it) that NEW extends OLD.
fn consistency(args: &Args<'_>, policy: &Policy, path: &str) -> Result<Outcome, String> {
    let open = |option: &str| -> Result<Checkpoint, String> {
        let file = args.need(option)?;
        policy
            .check(&read(file, "checkpoint")?)
            .map(|(w, _)| w.checkpoint)
            .map_err(|e| format!("{file}: {e}"))
    };
    let (old, new) = (open("from")?, open("to")?);
    let hashes: Option<Vec<Hash>> = read(path, "consistency proof")?
        .lines()
        .map(merkle::parse_hash_line)
        .collect();
    let Some(hashes) = hashes else {
        return Ok(Outcome::Bad(format!(
            "FAILED: {path} is not a consistency proof: every line must be one base64 SHA-256 hash\n"
        )));
    };
    let proof = ConsistencyProof {
        first: old.size,
        second: new.size,
        path: hashes,
    };
    if proof.verify(&old, &new) {
        Ok(Outcome::Good(format!(
            "OK: the checkpoint of {} records extends the one of {}: nothing before record {} changed\n",
            new.size, old.size, old.size
        )))
    } else {
        Ok(Outcome::Bad(format!(
            "FAILED: {path} does not prove that the checkpoint of {} records extends the one of {}: the log was rewritten between them, or the proof was altered\n",
            new.size, old.size
        )))
    }
}
