//! `guard-audit witness`: a C2SP tlog-witness over HTTP, as its own process with its own key
//! and state file. `POST /add-checkpoint` cosigns a checkpoint that extends the last one it
//! cosigned for that log; `GET /<sha256(origin)>/checkpoint` serves that last one.
//! `witness init --state FILE` makes a new witness's state: the witness never starts on a
//! missing state, which would make it forget what it cosigned.

use std::{path::Path, sync::Arc};

use rmcp_guard_log::{CheckpointVerifier, Witness, WitnessSigner, serve_witness};

use crate::{Args, Outcome, read};

/// The address a witness listens on unless `--listen` says otherwise: loopback only.
const LISTEN: &str = "127.0.0.1:7380";

/// Reads the logs file: one `VKEY ORIGIN` per line (the origin is the rest of the line, as
/// the log's checkpoints carry it); `#` starts a comment.
pub(crate) fn logs(text: &str) -> Result<Vec<(String, CheckpointVerifier)>, String> {
    let mut logs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, origin) = line.split_once([' ', '\t']).ok_or_else(|| {
            format!("logs line {}: expected `VKEY ORIGIN` (the log's verifier key, then the origin its checkpoints carry)", i + 1)
        })?;
        let key =
            CheckpointVerifier::parse(key).map_err(|e| format!("logs line {}: {e}", i + 1))?;
        logs.push((origin.trim().to_owned(), key));
    }
    if logs.is_empty() {
        return Err("the logs file lists no log: add a line `VKEY ORIGIN` for each log this witness follows".into());
    }
    Ok(logs)
}

/// `witness init`: a new state, refused where one exists.
fn init(args: &Args<'_>) -> Result<Outcome, String> {
    let state = args.need("state")?;
    Witness::init(Path::new(state))?;
    Ok(Outcome::Good(format!(
        "made the state of a new witness at {state}, with its record {state}.cosigned; keep both where the log's operator cannot write or roll them back, and start the witness with guard-audit witness --key FILE --logs FILE --state {state}\n"
    )))
}

pub(crate) async fn serve(args: &Args<'_>) -> Result<Outcome, String> {
    match args.words[..] {
        [] => {}
        ["init"] => return init(args),
        _ => {
            return Err(
                "witness takes no word but `init` (witness init --state FILE makes a new witness's state)"
                    .into(),
            );
        }
    }
    let signer = WitnessSigner::parse(&read(args.need("key")?, "witness key")?).map_err(|e| {
        format!("--key: {e}; make one with `guard-audit keygen NAME --for witness`")
    })?;
    let logs = logs(&read(args.need("logs")?, "logs file")?)?;
    let witness = Arc::new(Witness::open(signer, logs, Path::new(args.need("state")?))?);
    let listen = args.get("listen").unwrap_or(LISTEN);
    let listener = tokio::net::TcpListener::bind(listen).await.map_err(|e| {
        format!("cannot listen on {listen}: {e}; give another --listen ADDRESS:PORT")
    })?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    // The first line a supervisor (or a test) reads: where to submit.
    println!("witness listening on http://{address}");
    serve_witness(witness, listener, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await;
    Ok(Outcome::Good(String::new()))
}
