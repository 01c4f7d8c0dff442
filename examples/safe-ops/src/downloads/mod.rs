//! Download links: `create_download_link` hands out a bearer capability, a URL that lets
//! whoever holds it download one sandbox file without asking anyone. That is disclosure of
//! its own kind (the link outlives the call, and anyone it is pasted to can use it), so the
//! tool asks first, stating the file, its size, how long the link works and that it needs no
//! one's permission, and makes one link per call, ten per session: over stdio a session is
//! the connection; on 2026-07-28 and over HTTP, where there is none, it is the caller's 24
//! hours, on every connection (guard's `disclose::Session`).
//!
//! A link is signed over the file's path, its expiry and the file's pin (its identity), under
//! a key made from the OS random source when the endpoint starts and kept in memory only: an
//! altered link is refused, and a link stops working when it expires, when the file is
//! replaced or rewritten, and when the process ends. The endpoint (feature `downloads`,
//! `--downloads ADDR`) checks all of that before it reads the file through the sandbox's
//! handle. Without it the tool asks nobody and makes no link that could not be opened.

#[cfg(feature = "downloads")]
mod endpoint;
mod link;

#[cfg(feature = "downloads")]
pub use endpoint::serve;
pub use link::{Links, Refusal};

use link::{MAX_BYTES, date};

use rmcp_guard::{Boundary, Code, ToolError, sandbox::Lookup};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::sandbox::Sandbox;

/// How long a link works unless the call says otherwise, and at most, in minutes.
const DEFAULT_MINUTES: u32 = 15;
const MAX_MINUTES: u32 = 60;

/// What `create_download_link` answers when this server serves no links.
const NOT_SERVED: &str = "No link was made: this safe-ops serves no download links, so a link could not be opened. The operator enables them by starting safe-ops with --downloads 127.0.0.1:0 (or SAFE_OPS_DOWNLOADS), in a build with the `downloads` feature (on by default).";

#[derive(Debug, Deserialize, JsonSchema, rmcp_guard::ToolArgs)]
pub struct CreateDownloadLinkArgs {
    /// Path of the file, relative to the sandbox root (an absolute path beneath the root also
    /// works).
    pub path: String,
    /// How long the link works, in minutes: 1 to 60; 15 if left out.
    #[serde(default)]
    pub minutes: Option<u32>,
}

impl CreateDownloadLinkArgs {
    /// The link's lifetime in minutes, or why the asked one is refused.
    fn minutes(&self) -> Result<u32, ToolError> {
        match self.minutes.unwrap_or(DEFAULT_MINUTES) {
            m @ 1..=MAX_MINUTES => Ok(m),
            m => Err(ToolError::invalid_input(format!(
                "minutes = {m} is not a lifetime a link gets: give 1 to {MAX_MINUTES}, or leave it out for {DEFAULT_MINUTES}"
            ))),
        }
    }
}

/// The data boundary of a `create_download_link` call: the file, its size, how long the link
/// works and that its holder asks nobody; one link; the file's pin as state, so a file
/// replaced after the user saw the question is refused as changed.
pub fn boundary(
    sandbox: &Sandbox,
    links: Option<&Links>,
    args: &CreateDownloadLinkArgs,
) -> Result<Boundary, ToolError> {
    let minutes = args.minutes()?;
    if links.is_none() {
        return Ok(Boundary::nothing(NOT_SERVED));
    }
    let entry = match lookup(sandbox, &args.path)? {
        Lookup::Missing(path) => {
            return Ok(Boundary::nothing(format!(
                "File not found, no link was made: {path}"
            )));
        }
        Lookup::File(entry) if entry.size() > MAX_BYTES => {
            return Ok(Boundary::nothing(format!(
                "No link was made: {} is {} bytes, and links are made for files up to {MAX_BYTES} bytes. Ask the operator for the file.",
                entry.path(),
                entry.size()
            )));
        }
        Lookup::File(entry) => entry,
    };
    Ok(Boundary::new(
        format!("file {}", entry.path()),
        format!(
            "a download link, valid for {minutes} minutes, that lets whoever holds it download, without asking anyone, the {}",
            bytes(entry.size())
        ),
    )
    .items(1, ("link", "links"))
    .with_state(entry.pin().to_string()))
}

/// The link `create_download_link` answers with, to the file as it is now, and what the
/// holder of it can do.
pub fn create(
    sandbox: &Sandbox,
    links: Option<&Links>,
    args: &CreateDownloadLinkArgs,
) -> Result<String, ToolError> {
    let minutes = args.minutes()?;
    let links = links.ok_or_else(|| ToolError::new(Code::Unavailable, NOT_SERVED))?;
    let Lookup::File(entry) = lookup(sandbox, &args.path)? else {
        return Err(ToolError::new(
            Code::StateChanged,
            format!(
                "The file {} is gone since the user approved; no link was made.",
                args.path
            ),
        ));
    };
    let expires = link::now() + u64::from(minutes) * 60;
    Ok(format!(
        "Download link to {} ({}), valid for {minutes} minutes, until {}:\n{}\nWhoever holds it can download the file without asking anyone until then. It stops working if the file changes or safe-ops stops: its signing key lives in this process's memory only.",
        entry.path(),
        bytes(entry.size()),
        date(expires),
        links.link(&entry, expires)
    ))
}

/// What `path` names now, looked up as the endpoint reads it (opened without following a
/// symlink, checked on the descriptor); none of its bytes are kept.
fn lookup(sandbox: &Sandbox, path: &str) -> Result<Lookup, ToolError> {
    Ok(sandbox.read(path, 0)?.0)
}

fn bytes(n: u64) -> String {
    if n == 1 {
        "1 byte".to_owned()
    } else {
        format!("{n} bytes")
    }
}
