//! A filtered export (`--since`, `--trace`) holds some records of the log, not a chain from
//! record 0, so the chain cannot vouch for it. `export --proofs FILE` writes beside it an
//! inclusion proof for each exported record under one anchored checkpoint, in the spirit of
//! C2SP tlog-proof:
//!
//! ```text
//! guard-audit/export-proof@v1
//! index 17
//! <base64 hash>
//! ...
//! index 18
//! ...
//!
//! <checkpoint note, its signatures and cosignatures>
//! ```
//!
//! `verify --file EXPORT --proofs FILE` then checks every line of the export against it.

use rmcp_guard_log::{
    Policy, Record,
    merkle::{self, Hash, leaf_hash},
    place, split_line,
};

use crate::{
    Args, Outcome,
    anchoring::{cosigned, policy, seen},
    read,
    store::Log,
};

const HEADER: &str = "guard-audit/export-proof@v1";

/// Writes the proofs of `records` (the export) to `path`.
pub(crate) async fn write(
    args: &Args<'_>,
    log: &Log,
    records: &[Record],
    path: &str,
) -> Result<(), String> {
    let policy = policy(args)?.ok_or(
        "--proofs needs --policy FILE or --key KEY: the proofs lead to a checkpoint that meets it",
    )?;
    let seen = seen(args, &policy, Some(log)).await?;
    let anchor = seen.iter().rev().find(|s| s.quorum).ok_or(
        "no checkpoint of this log meets the policy: checkpoint it first (guard-audit checkpoint --policy)",
    )?;
    let size = anchor.witnessed.checkpoint.size;
    if let Some(late) = records.iter().find(|r| r.seq >= size) {
        return Err(format!(
            "record {} comes after the last anchored checkpoint ({size} records): checkpoint the log first, or export records before it",
            late.seq
        ));
    }
    let leaves = log.leaves().await?;
    let tree = leaves
        .get(..usize::try_from(size).unwrap_or(usize::MAX))
        .ok_or("the log is shorter than its checkpoint: run guard-audit verify")?;
    if merkle::root(tree) != anchor.witnessed.checkpoint.root {
        return Err("the log does not match its checkpoint: run guard-audit verify".into());
    }
    let mut out = format!("{HEADER}\n");
    for record in records {
        let path = merkle::inclusion_proof(record.seq as usize, tree).unwrap_or_default();
        out.push_str(&format!(
            "index {}\n{}",
            record.seq,
            merkle::hash_lines(&path)
        ));
    }
    out.push('\n');
    out.push_str(&anchor.note);
    std::fs::write(path, out).map_err(|e| format!("cannot write the proofs {path}: {e}"))
}

/// One exported record's place and inclusion proof.
type Proof = (u64, Vec<Hash>);

/// The proofs file: each record's index and path, and the checkpoint.
fn parse(text: &str) -> Option<(Vec<Proof>, &str)> {
    let (head, checkpoint) = text.split_once("\n\n")?;
    let mut lines = head.split('\n');
    (lines.next()? == HEADER).then_some(())?;
    let mut proofs: Vec<Proof> = Vec::new();
    for line in lines {
        if let Some(index) = line.strip_prefix("index ") {
            let index = index
                .parse::<u64>()
                .ok()
                .filter(|i| i.to_string() == index)?;
            proofs.push((index, Vec::new()));
        } else {
            proofs.last_mut()?.1.push(merkle::parse_hash_line(line)?);
        }
    }
    Some((proofs, checkpoint))
}

/// `verify --file EXPORT --proofs FILE`.
pub(crate) fn verify(args: &Args<'_>, policy: &Policy, path: &str) -> Result<Outcome, String> {
    let export_path = args.need("file")?;
    let export = read(export_path, "export")?;
    let text = read(path, "export proofs")?;
    let Some((proofs, checkpoint)) = parse(&text) else {
        return Ok(Outcome::Bad(format!(
            "FAILED: {path} is not an export's proofs (write them with guard-audit export --proofs)\n"
        )));
    };
    let witnessed = match policy.open(checkpoint) {
        Ok(witnessed) => witnessed,
        Err(e) => return Ok(Outcome::Bad(format!("FAILED: {path}: {e}\n"))),
    };
    let head = &witnessed.checkpoint;
    let lines: Vec<&str> = export.lines().collect();
    if lines.len() != proofs.len() {
        return Ok(Outcome::Bad(format!(
            "FAILED: the export has {} records but {path} proves {}: records were added or removed\n",
            lines.len(),
            proofs.len()
        )));
    }
    for (n, (line, (index, path))) in lines.iter().zip(&proofs).enumerate() {
        let held = split_line(line.as_bytes()).is_some_and(|(hash, entry)| {
            leaf_hash(&entry) == hash
                && place(&entry).is_some_and(|p| p.seq == *index)
                && merkle::verify_inclusion(*index, head.size, &hash, path, &head.root)
        });
        if !held {
            return Ok(Outcome::Bad(format!(
                "FAILED: line {} of the export (record {index}) is not the record the checkpoint holds at that place: it was modified, moved or made up\n",
                n + 1
            )));
        }
    }
    Ok(Outcome::Good(format!(
        "OK: the {} records of the export are in the log `{}` of {} records{}\n",
        lines.len(),
        head.origin,
        head.size,
        cosigned(&witnessed)
    )))
}
