//! `guard-audit`: verify, prove, export and read guard's audit log, offline.
//!
//! The log is read from the operation store (`--db FILE` for SQLite, `--pg URL` for
//! PostgreSQL) or from an export (`--file FILE`, JSON Lines as `export` writes them).
//! Checkpoints are the signed notes `checkpoint` prints; `--key` is the verifier key
//! `keygen` printed (the text, or a file holding it). Stores are opened read-only and never
//! migrated; `checkpoint`, which stores the note it signs, is the one command that writes.

mod anchoring;
mod export_proof;
mod receipt;
mod source;
mod store;
mod witness;

use std::{path::Path, process::ExitCode};

use rmcp_guard_log::{
    Checkpoint, CheckpointSigner, CheckpointVerifier, ConsistencyProof, InclusionProof, Verified,
    WitnessSigner, export,
    merkle::{self, Hash},
    story, verify_export,
};

use source::Source;
use store::{Log, VerifyError};

const USAGE: &str = "\
guard-audit: verify and read guard's tamper-evident audit log

USAGE:
  guard-audit keygen NAME [--for log|witness]
  guard-audit checkpoint STORE --signer FILE [--origin ORIGIN] [--policy FILE]
  guard-audit verify SOURCE [--policy FILE | --key KEY] [--checkpoint FILE]... [--origin ORIGIN]
                     [--require-witness] [--inclusion TRACE_ID]
  guard-audit prove SOURCE --trace TRACE_ID --checkpoint FILE --key KEY
  guard-audit prove SOURCE --from OLD_CHECKPOINT --to NEW_CHECKPOINT --key KEY [--out FILE]
  guard-audit receipt STORE TRACE_ID (--policy FILE | --key KEY) [--seq N] [--out FILE]
                      [--origin ORIGIN]
  guard-audit verify-proof --proof FILE --origin ORIGIN (--policy FILE | --key KEY)
                           [--trace TRACE_ID]
  guard-audit verify-proof --from OLD --to NEW --consistency FILE (--policy FILE | --key KEY)
  guard-audit witness init --state FILE
  guard-audit witness --key FILE --logs FILE --state FILE [--listen ADDRESS:PORT]
  guard-audit export STORE [--since TIME] [--trace TRACE_ID] [--proofs FILE (--policy FILE | --key KEY)]
  guard-audit verify --file EXPORT --proofs FILE (--policy FILE | --key KEY)
  guard-audit show STORE TRACE_ID   (exit 1, under an UNVERIFIED warning, if the log does not verify)

SOURCE is a STORE or --file EXPORT.JSONL; STORE is --db FILE (SQLite) or --pg URL.
Every command opens a STORE read-only (SQLite immutable=1 or mode=ro, PostgreSQL READ ONLY
transactions) except checkpoint, the one command that writes: it stores the note it signs
(and its cosignatures). None creates tables or migrates: a database without guard's log, at
another schema version than this build's, or holding a table a migration would fold in is
refused (exit 2) and left as it is.
KEY is a verifier key (NAME+ID+BASE64) or a file holding one. A policy is a C2SP
tlog-policy file: the log's key, the witnesses' keys and URLs, and the quorum.
With --policy or --key, verify fails unless the log holds every checkpoint its key signed
(given, stored, or served by the policy's witnesses for the log's stored origin or
--origin) and ends at one meeting the policy.
A witness that cannot be reached is a warning, unless --require-witness (for audits) makes
it an error (exit 2).
Without either, only the chain is checked, and only of a log with no checkpoint at hand: a
store holding a signed checkpoint needs --key or --policy to check it (exit 2 without).
Every verify of a store reports the entries still pending (committed, not yet sequenced).
TIME is RFC 3339 (2026-01-31T12:00:00Z) or milliseconds since the Unix epoch.";

fn main() -> ExitCode {
    let args = match text_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("guard-audit: {message}");
            return ExitCode::from(2);
        }
    };
    if args.iter().any(|a| a == "--version" || a == "-V") {
        println!("guard-audit {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    if args.is_empty() || args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("guard-audit: cannot start: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(&args)) {
        Ok(Outcome::Good(text)) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Ok(Outcome::Bad(text)) => {
            print!("{text}");
            ExitCode::FAILURE
        }
        Err(message) => {
            eprintln!("guard-audit: {message}");
            ExitCode::from(2)
        }
    }
}

/// The arguments, each as text: one that is not UTF-8 (a path's raw bytes) is named by its
/// place and the option it follows, never a panic.
fn text_args() -> Result<Vec<String>, String> {
    let mut args = Vec::new();
    for arg in std::env::args_os().skip(1) {
        match arg.into_string() {
            Ok(text) => args.push(text),
            Err(raw) => {
                let after = args
                    .last()
                    .filter(|a: &&String| a.starts_with("--"))
                    .map(|a| format!(" (the value of {a})"))
                    .unwrap_or_default();
                return Err(format!(
                    "argument {} `{}`{after} is not UTF-8 text; guard-audit takes paths, keys and names as UTF-8: rename the file, or give a path to it without those bytes (a symlink)",
                    args.len() + 1,
                    raw.to_string_lossy()
                ));
            }
        }
    }
    Ok(args)
}

/// A command's printed answer: good (exit 0) or a finding (exit 1).
enum Outcome {
    Good(String),
    Bad(String),
}

impl Outcome {
    /// The same answer with `more` printed after it.
    fn then(self, more: &str) -> Self {
        match self {
            Self::Good(text) => Self::Good(text + more),
            Self::Bad(text) => Self::Bad(text + more),
        }
    }
}

/// The options that take no value: present or not.
const FLAGS: &[&str] = &["require-witness"];

/// Parsed options: `--name value` pairs, flags and bare words.
struct Args<'a> {
    words: Vec<&'a str>,
    options: Vec<(&'a str, &'a str)>,
}

impl<'a> Args<'a> {
    fn parse(args: &'a [String], known: &[&str]) -> Result<Self, String> {
        let mut words = Vec::new();
        let mut options = Vec::new();
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            if let Some(name) = arg.strip_prefix("--") {
                if !known.contains(&name) {
                    return Err(format!(
                        "unknown option --{name}; this command takes {}. See guard-audit --help",
                        known
                            .iter()
                            .map(|k| format!("--{k}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                if FLAGS.contains(&name) {
                    options.push((name, ""));
                    continue;
                }
                let value = it
                    .next()
                    .ok_or_else(|| format!("--{name} needs a value. See guard-audit --help"))?;
                options.push((name, value.as_str()));
            } else {
                words.push(arg.as_str());
            }
        }
        Ok(Self { words, options })
    }

    fn get(&self, name: &str) -> Option<&'a str> {
        self.options
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }

    /// Whether the flag `name` was given.
    fn has(&self, name: &str) -> bool {
        self.options.iter().any(|(n, _)| *n == name)
    }

    /// Every value of a repeatable option, in order.
    fn all(&self, name: &str) -> Vec<&'a str> {
        self.options
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, v)| *v)
            .collect()
    }

    fn need(&self, name: &str) -> Result<&'a str, String> {
        self.get(name)
            .ok_or_else(|| format!("--{name} is required here. See guard-audit --help"))
    }
}

async fn run(args: &[String]) -> Result<Outcome, String> {
    let (command, rest) = args.split_first().ok_or("no command")?;
    match command.as_str() {
        "keygen" => keygen(&Args::parse(rest, &["for"])?),
        "checkpoint" => {
            anchoring::checkpoint(&Args::parse(
                rest,
                &["db", "pg", "signer", "origin", "policy"],
            )?)
            .await
        }
        "verify" => {
            verify(&Args::parse(
                rest,
                &[
                    "db",
                    "pg",
                    "file",
                    "checkpoint",
                    "key",
                    "policy",
                    "origin",
                    "proofs",
                    "inclusion",
                    "require-witness",
                ],
            )?)
            .await
        }
        "receipt" => {
            receipt::receipt(&Args::parse(
                rest,
                &[
                    "db",
                    "pg",
                    "policy",
                    "key",
                    "checkpoint",
                    "seq",
                    "out",
                    "origin",
                ],
            )?)
            .await
        }
        "verify-proof" => receipt::verify_proof(&Args::parse(
            rest,
            &[
                "proof",
                "policy",
                "key",
                "origin",
                "trace",
                "consistency",
                "from",
                "to",
            ],
        )?),
        "witness" => witness::serve(&Args::parse(rest, &["key", "logs", "state", "listen"])?).await,
        "prove" => {
            prove(&Args::parse(
                rest,
                &[
                    "db",
                    "pg",
                    "file",
                    "trace",
                    "checkpoint",
                    "key",
                    "from",
                    "to",
                    "out",
                ],
            )?)
            .await
        }
        "export" => {
            export_cmd(&Args::parse(
                rest,
                &[
                    "db",
                    "pg",
                    "since",
                    "trace",
                    "proofs",
                    "policy",
                    "key",
                    "checkpoint",
                ],
            )?)
            .await
        }
        "show" => show(&Args::parse(rest, &["db", "pg"])?).await,
        other => Err(format!(
            "unknown command `{other}`; use keygen, checkpoint, verify, prove, receipt, verify-proof, witness, export or show"
        )),
    }
}

fn keygen(args: &Args<'_>) -> Result<Outcome, String> {
    let [name] = args.words[..] else {
        return Err("keygen takes one NAME (no spaces, no +)".into());
    };
    let (secret, public) = match args.get("for").unwrap_or("log") {
        "log" => {
            let signer = CheckpointSigner::generate(name).map_err(|e| e.to_string())?;
            (signer.to_text(), signer.verifier().to_text())
        }
        "witness" => {
            let signer = WitnessSigner::generate(name).map_err(|e| e.to_string())?;
            (signer.to_text(), signer.verifier().to_text())
        }
        other => return Err(format!("--for {other}: give log or witness")),
    };
    Ok(Outcome::Good(format!("{secret}\n{public}\n")))
}

/// The store named by `--db` or `--pg`, opened read-only: every command but `checkpoint`
/// only reads, and none migrates (see [`open_store`]).
async fn store(args: &Args<'_>) -> Result<Log, String> {
    open_store(args, false).await
}

/// The store named by `--db` or `--pg`. A reader's SQLite file is opened `immutable=1` or
/// `mode=ro`, its PostgreSQL transactions `READ ONLY`; `write` (for `checkpoint`, which
/// stores the note it signs) opens it read-write. Either way nothing is created or
/// migrated, and a database without guard's log, at another schema version, or holding a
/// table a migration would fold in is refused as it is. A reader leaves entries waiting for
/// their sequence number where they are (it reports them as pending); `checkpoint`, which
/// writes, sequences them before it signs.
async fn open_store(args: &Args<'_>, write: bool) -> Result<Log, String> {
    match (args.get("db"), args.get("pg")) {
        (Some(path), None) => {
            if !Path::new(path).is_file() {
                return Err(format!(
                    "{path} does not exist: give the SQLite file the server's operation store uses"
                ));
            }
            Log::sqlite(Path::new(path), write)
                .await
                .map_err(|e| format!("refused to read {e}"))
        }
        (None, Some(url)) => Log::postgres(url, write).await,
        (Some(_), Some(_)) => Err("give --db or --pg, not both".into()),
        (None, None) => Err("say where the log is: --db FILE or --pg URL".into()),
    }
}

/// What a reader says of the entries committed but not yet sequenced: they are not
/// missing, and no checkpoint covers them yet.
async fn pending_note(log: &Log, trace: Option<&str>) -> Result<String, String> {
    let pending = match trace {
        Some(trace) => log.pending_of(trace).await,
        None => log.pending().await,
    }?;
    let mut note = String::new();
    if pending.is_empty() {
        return Ok(note);
    }
    note.push_str(&format!(
        "pending: {} entr{} committed and not yet sequenced (a server's sequencer places them within a second of their commit while one runs; no checkpoint covers them yet)\n",
        pending.len(),
        if pending.len() == 1 { "y" } else { "ies" }
    ));
    if trace.is_some() {
        for entry in &pending {
            note.push_str(&format!(
                "  pending  {}  {}  {}\n",
                chrono::DateTime::from_timestamp_millis(entry.at)
                    .map_or_else(|| entry.at.to_string(), |t| t.to_rfc3339()),
                entry.tool,
                entry.outcome
            ));
        }
    }
    Ok(note)
}

fn read(path: &str, what: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read the {what} {path}: {e}"))
}

fn verifier(args: &Args<'_>) -> Result<CheckpointVerifier, String> {
    let key = args.need("key")?;
    let text = if Path::new(key).is_file() {
        read(key, "key file")?
    } else {
        key.to_owned()
    };
    CheckpointVerifier::parse(&text).map_err(|e| e.to_string())
}

fn open_checkpoint(path: &str, verifier: &CheckpointVerifier) -> Result<Checkpoint, String> {
    verifier
        .open(&read(path, "checkpoint")?)
        .map_err(|e| format!("{path}: {e}"))
}

/// The checkpoint to verify against: `--checkpoint`, else the latest stored one.
async fn chosen_checkpoint(
    args: &Args<'_>,
    log: Option<&Log>,
) -> Result<Option<(Checkpoint, String)>, String> {
    if let Some(path) = args.get("checkpoint") {
        let cp = open_checkpoint(path, &verifier(args)?)?;
        return Ok(Some((cp, path.to_owned())));
    }
    let Some(log) = log else {
        return Ok(None);
    };
    let Some(text) = log.latest_checkpoint().await? else {
        return Ok(None);
    };
    let key = verifier(args).map_err(|e| {
        format!("{e}; the database holds a checkpoint, and its signature must be checked")
    })?;
    let cp = key
        .open(&text)
        .map_err(|e| format!("the latest checkpoint stored in the database: {e}"))?;
    Ok(Some((cp, "the latest checkpoint in the database".into())))
}

async fn verify(args: &Args<'_>) -> Result<Outcome, String> {
    if let Some(trace) = args.get("inclusion") {
        return inclusion(args, trace).await;
    }
    if let Some(policy) = anchoring::policy(args)? {
        if let Some(proofs) = args.get("proofs") {
            return export_proof::verify(args, &policy, proofs);
        }
        return anchoring::verify(args, &policy).await;
    }
    let (verified, cp, source) = verified_source(args).await?;
    let pending = match source.log() {
        Some(log) => pending_note(log, None).await?,
        None => String::new(),
    };
    let verified = match verified {
        Ok(v) => v,
        Err(text) => return Ok(Outcome::Bad(text).then(&pending)),
    };
    let from = match &cp {
        Some((cp, from)) => format!(" (checkpoint: {from}, tree size {})", cp.size),
        None => "; no checkpoint was given or stored, so only the chain was checked (sign one with guard-audit checkpoint)".into(),
    };
    Ok(Outcome::Good(format!("OK: {verified}{from}\n")).then(&pending))
}

/// Verifies the source, which it returns with the checkpoint it was verified against; `Err`
/// in the first result is the finding to print.
async fn verified_source(
    args: &Args<'_>,
) -> Result<
    (
        Result<Verified, String>,
        Option<(Checkpoint, String)>,
        Source,
    ),
    String,
> {
    let source = Source::open(args).await?;
    let cp = chosen_checkpoint(args, source.log()).await?;
    let result = match &source {
        Source::Export(bytes) => verify_export(bytes, cp.as_ref().map(|(c, _)| c))
            .map_err(|fault| format!("FAILED: {fault}\n")),
        Source::Store(log) => match log.verify(cp.as_ref().map(|(c, _)| c)).await {
            Ok(v) => Ok(v),
            Err(VerifyError::Fault(fault)) => Err(format!("FAILED: {fault}\n")),
            Err(VerifyError::Store(e)) => return Err(e),
        },
    };
    Ok((result, cp, source))
}

async fn inclusion(args: &Args<'_>, trace: &str) -> Result<Outcome, String> {
    let key = verifier(args)?;
    let cp = open_checkpoint(args.need("checkpoint")?, &key)?;
    let (verified, _, source) = verified_source(args).await?;
    if let Err(finding) = verified {
        return Ok(Outcome::Bad(finding));
    }
    let all = source.entries().await?;
    let leaves: Vec<Hash> = all.iter().map(|(h, _)| *h).collect();
    let needle = format!("\"trace_id\":\"{}\"", trace.replace('"', ""));
    let mut out = String::new();
    for (seq, (_, entry)) in all.iter().enumerate() {
        if !entry.contains(&needle) || seq as u64 >= cp.size {
            continue;
        }
        let proof = InclusionProof::new(&leaves, seq as u64, cp.size).map_err(|e| e.to_string())?;
        if !proof.verify(&cp) {
            return Ok(Outcome::Bad(format!(
                "FAILED: record {seq} of trace {trace} is not under the checkpoint's root\n"
            )));
        }
        out.push_str(&format!(
            "record {seq} (trace {trace}) is in the checkpointed log of {} records\n  leaf hash {}\n  root      {}\naudit path ({} hashes):\n",
            cp.size,
            hex(&proof.leaf),
            hex(&cp.root),
            proof.path.len()
        ));
        for hash in &proof.path {
            out.push_str(&format!("  {}\n", hex(hash)));
        }
    }
    if out.is_empty() {
        return Ok(Outcome::Bad(format!(
            "FAILED: no record of trace {trace} among the {} records the checkpoint covers\n",
            cp.size
        )));
    }
    Ok(Outcome::Good(out))
}

async fn prove(args: &Args<'_>) -> Result<Outcome, String> {
    if let Some(trace) = args.get("trace") {
        return inclusion(args, trace).await;
    }
    let key = verifier(args)?;
    let old = open_checkpoint(args.need("from")?, &key)?;
    let new = open_checkpoint(args.need("to")?, &key)?;
    let leaves: Vec<Hash> = Source::open(args)
        .await?
        .entries()
        .await?
        .into_iter()
        .map(|(h, _)| h)
        .collect();
    let proof = ConsistencyProof::new(&leaves, old.size, new.size).map_err(|e| e.to_string())?;
    if let Some(path) = args.get("out") {
        std::fs::write(path, merkle::hash_lines(&proof.path))
            .map_err(|e| format!("cannot write {path}: {e}"))?;
    }
    if proof.verify(&old, &new) {
        Ok(Outcome::Good(format!(
            "the checkpoint of {} records extends the one of {}: nothing before record {} changed ({} hashes in the proof)\n",
            new.size,
            old.size,
            old.size,
            proof.path.len()
        )))
    } else {
        Ok(Outcome::Bad(format!(
            "FAILED: the checkpoint of {} records does not extend the one of {}: the log was rewritten between them, or they are of different logs\n",
            new.size, old.size
        )))
    }
}

fn parse_time(text: &str) -> Result<i64, String> {
    if let Ok(ms) = text.parse::<i64>() {
        return Ok(ms);
    }
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.timestamp_millis())
        .map_err(|_| {
            format!("--since {text}: give an RFC 3339 time (2026-01-31T12:00:00Z) or milliseconds")
        })
}

async fn export_cmd(args: &Args<'_>) -> Result<Outcome, String> {
    let log = store(args).await?;
    let mut records = match args.get("since") {
        Some(since) => log.since(parse_time(since)?).await,
        None => log.records().await,
    }?;
    if let Some(trace) = args.get("trace") {
        let of_trace = log.by_trace(trace).await?;
        records.retain(|r| of_trace.iter().any(|t| t.seq == r.seq));
    }
    if let Some(path) = args.get("proofs") {
        export_proof::write(args, &log, &records, path).await?;
    }
    Ok(Outcome::Good(export(&records)))
}

async fn show(args: &Args<'_>) -> Result<Outcome, String> {
    let [trace] = args.words[..] else {
        return Err("show takes one TRACE_ID".into());
    };
    let log = store(args).await?;
    // The queue before the log: an entry a server's sequencer moves between the two reads is
    // then read twice (placed, and noted as pending), never missed.
    let pending = pending_note(&log, Some(trace)).await?;
    let records = log.by_trace(trace).await?;
    if records.is_empty() && !pending.is_empty() {
        return Ok(Outcome::Good(pending));
    }
    if records.is_empty() {
        return Ok(Outcome::Bad(format!("no record of trace {trace}\n")));
    }
    let told = story(records.iter().map(|r| r.entry.as_str())) + &pending;
    // A story is only as good as the log it is read from: one that does not verify is
    // still shown (it is evidence), under a warning, and the exit code is 1.
    match log.verify(None).await {
        Ok(_) => Ok(Outcome::Good(told)),
        Err(VerifyError::Fault(fault)) => {
            let ours = records
                .iter()
                .any(|r| r.seq == fault.seq || r.seq as usize == fault.position);
            Ok(Outcome::Bad(format!(
                "!! UNVERIFIED: the log does not verify ({fault}){}; what follows may not be \
                 what happened. Run guard-audit verify with the log's key or policy.\n{told}",
                if ours {
                    ", at a record of this call"
                } else {
                    ""
                }
            )))
        }
        Err(VerifyError::Store(e)) => Err(e),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
