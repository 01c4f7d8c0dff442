//! The log's side of `c2sp.org/tlog-witness`: `add-checkpoint` with the consistency proof
//! from the size the witness last cosigned, and the witness's latest checkpoint of a log
//! (`GET <prefix>/<sha256(origin)>/checkpoint`).
//!
//! Plain HTTP/1.1: what makes a cosignature trustworthy is the witness's key, which the
//! client checks on every line it keeps, not the transport (put a TLS proxy in front of a
//! witness to reach it across networks). Every exchange is bounded by [`TIMEOUT`] and a
//! body limit, so a witness that hangs costs one slow checkpoint, never a stuck log.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;

use crate::{
    merkle::{self, Hash},
    policy::PolicyWitness,
    witness::AddCheckpoint,
};

/// How long one exchange with a witness may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The largest answer read from a witness.
const MAX_BODY: usize = 64 * 1024;

/// Sends `note` (of the tree over `leaves`) to `witness`, which last cosigned `known` records
/// of this log as far as the client knows. Returns its cosignature lines, each checked
/// against its key.
pub(crate) async fn submit(
    witness: &PolicyWitness,
    url: &str,
    note: &str,
    leaves: &[Hash],
    known: u64,
) -> Result<Vec<String>, String> {
    let size = leaves.len() as u64;
    let mut old = known;
    // A stale size costs one 409, which names the right one.
    for _ in 0..2 {
        if old > size {
            return Err(format!(
                "it cosigned {old} records of this log, more than the {size} the log holds now: the log was truncated or rolled back since"
            ));
        }
        let request = AddCheckpoint {
            old,
            proof: merkle::consistency_proof(old as usize, leaves).unwrap_or_default(),
            checkpoint: note.to_owned(),
        };
        let (status, body) = exchange(
            "POST",
            &format!("{}/add-checkpoint", url.trim_end_matches('/')),
            Some(request.encode()),
        )
        .await?;
        match status {
            200 => {
                let lines: Vec<String> = body
                    .split_inclusive('\n')
                    .filter(|line| {
                        witness
                            .key
                            .cosigned_at(&format!("{note}{line}"))
                            .is_ok_and(|t| t.is_some())
                    })
                    .map(str::to_owned)
                    .collect();
                if lines.is_empty() {
                    return Err(format!(
                        "it answered without a cosignature by its key {}: check the witness key in the policy",
                        witness.key.name()
                    ));
                }
                return Ok(lines);
            }
            409 => {
                old = body
                    .trim()
                    .parse()
                    .map_err(|_| format!("it answered 409 without its size: {}", body.trim()))?;
            }
            _ => {
                return Err(format!(
                    "it refused the checkpoint of {size} records ({status}): {}",
                    body.trim()
                ));
            }
        }
    }
    Err("it changed its size twice during one submission".into())
}

/// The latest checkpoint `url`'s witness cosigned for the log `origin`, if it has one.
pub async fn fetch_checkpoint(url: &str, origin: &str) -> Result<Option<String>, String> {
    let hash = crate::canonical::sha256_hex(origin.as_bytes());
    let (status, body) = exchange(
        "GET",
        &format!("{}/{hash}/checkpoint", url.trim_end_matches('/')),
        None,
    )
    .await?;
    match status {
        200 => Ok(Some(body)),
        404 => Ok(None),
        _ => Err(format!(
            "the witness at {url} answered {status}: {}",
            body.trim()
        )),
    }
}

/// One request and its answer (status and body), within [`TIMEOUT`].
async fn exchange(method: &str, url: &str, body: Option<String>) -> Result<(u16, String), String> {
    tokio::time::timeout(TIMEOUT, exchange_unbounded(method, url, body))
        .await
        .map_err(|_| format!("{url} did not answer within {} s", TIMEOUT.as_secs()))?
}

async fn exchange_unbounded(
    method: &str,
    url: &str,
    body: Option<String>,
) -> Result<(u16, String), String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("{url} is not a URL: {e}"))?;
    if parsed.scheme() != "http" {
        return Err(format!(
            "{url}: witnesses are reached over http:// (their cosignatures are checked against their keys; put a TLS proxy in front of one to cross networks)"
        ));
    }
    let host = parsed
        .host_str()
        .ok_or_else(|| format!("{url} names no host"))?;
    let port = parsed.port_or_known_default().unwrap_or(80);
    let stream = tokio::net::TcpStream::connect((host.trim_matches(['[', ']']), port))
        .await
        .map_err(|e| format!("cannot reach {url}: {e}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("cannot talk HTTP to {url}: {e}"))?;
    let driver = tokio::spawn(connection);
    let mut path = parsed.path().to_owned();
    if let Some(query) = parsed.query() {
        path = format!("{path}?{query}");
    }
    let request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header(hyper::header::HOST, format!("{host}:{port}"))
        .header(hyper::header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .map_err(|e| format!("cannot build the request to {url}: {e}"))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("{url} failed: {e}"))?;
    let status = response.status().as_u16();
    let bytes = Limited::new(response.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|e| format!("{url} sent an unreadable or oversized answer: {e}"))?
        .to_bytes();
    driver.abort();
    let text = String::from_utf8(bytes.to_vec())
        .map_err(|_| format!("{url} answered with bytes that are not UTF-8"))?;
    Ok((status, text))
}
