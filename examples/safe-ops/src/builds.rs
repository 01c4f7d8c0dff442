//! Build logs: `builds/<job>.log` in the sandbox, as a CI runner leaves them. A build log is
//! read-only data that can still leak: a job that printed its environment or a signed URL put
//! credentials in it. `read_build_log` shows one only after the user saw which job, how much
//! of it and that it may hold secrets.

use rmcp_guard::{Boundary, ToolError, sandbox::Lookup};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::sandbox::Sandbox;

/// What a grant opened on one log covers: the others too, each call still within the
/// tool's caps.
const GRANT_SCOPE: &str = "any build log in builds/";

/// The largest log read at all (1 MiB): a bigger one is refused rather than read in part.
const READ_LIMIT: u64 = 1 << 20;

#[derive(Debug, Deserialize, JsonSchema, rmcp_guard::ToolArgs)]
pub struct ReadBuildLogArgs {
    /// The build job's number (its log is `builds/<job>.log`).
    pub job: u32,
    /// Show only the last this many lines; the whole log if left out.
    #[serde(default)]
    pub tail: Option<u32>,
}

/// The log of `job`, if there is one: its pin (path and identity) and the lines the call
/// shows.
pub fn lines(
    sandbox: &Sandbox,
    args: &ReadBuildLogArgs,
) -> Result<Option<(String, Vec<String>)>, ToolError> {
    let (lookup, bytes, more) = sandbox.read(&format!("builds/{}.log", args.job), READ_LIMIT)?;
    let Lookup::File(entry) = lookup else {
        return Ok(None);
    };
    if more {
        return Err(ToolError::invalid_input(format!(
            "The log of build job {} is larger than {READ_LIMIT} bytes and is not read here; ask the operator for it.",
            args.job
        )));
    }
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<String> = text.lines().map(str::to_owned).collect();
    let from = match args.tail {
        Some(n) => all.len().saturating_sub(n as usize),
        None => 0,
    };
    Ok(Some((entry.pin().to_string(), all[from..].to_vec())))
}

/// The data boundary of a `read_build_log` call: which job, how much of its log, how many
/// lines; the log's identity as state, so a log rewritten after the user saw the question is
/// refused as changed.
pub fn boundary(sandbox: &Sandbox, args: &ReadBuildLogArgs) -> Result<Boundary, ToolError> {
    let Some((pin, shown)) = lines(sandbox, args)? else {
        return Ok(Boundary::nothing(format!(
            "There is no build job {} (no log for it); nothing was shown.",
            args.job
        )));
    };
    let scope = match args.tail {
        Some(1) => "the last line of the build log".to_owned(),
        Some(n) => format!("the last {n} lines of the build log"),
        None => "the full build log".to_owned(),
    };
    Ok(Boundary::new(format!("build job {}", args.job), scope)
        .items(shown.len() as u64, ("log line", "log lines"))
        .grant_scope(GRANT_SCOPE)
        .with_state(pin))
}
