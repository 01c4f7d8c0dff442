//! Which tools exist at all: an allowlist file that fails closed, and read-only mode.
//!
//! A tool that is not enabled is removed from the router, so `tools/list` omits it and
//! `tools/call` answers exactly as rmcp does for a name it never had (-32602).

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::{Duration, SystemTime},
};

use rmcp::{Peer, RoleServer, handler::server::router::tool::ToolRouter};
use serde::Deserialize;

/// Path of the allowlist file (TOML or JSON: `tools = ["a", "b"]`).
pub const ALLOWLIST_ENV: &str = "GUARD_ALLOWLIST";
/// `1` removes every tool that is not `#[read_only]`.
pub const READ_ONLY_ENV: &str = "GUARD_READ_ONLY";

/// The allowlist and read-only switch of one server.
pub struct Exposure {
    path: Option<PathBuf>,
    read_only: bool,
    state: Mutex<State>,
}

/// The listed names, or why no tool is enabled.
type Loaded = Result<BTreeSet<String>, String>;
/// What the file looked like when read: modification time and length.
type Stamp = Option<(SystemTime, u64)>;

struct State {
    loaded: Loaded,
    stamp: Stamp,
    /// The last problem logged, so a broken file is reported once, not on every request.
    reported: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AllowlistFile {
    tools: Vec<String>,
}

impl Exposure {
    /// Tools listed in the file at `path` (read now; see [`Exposure::reload`]).
    pub fn allowlist(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let (loaded, stamp) = read(&path);
        Self {
            path: Some(path),
            read_only: false,
            state: Mutex::new(State {
                loaded,
                stamp,
                reported: None,
            }),
        }
    }

    /// The allowlist named by [`ALLOWLIST_ENV`] (none set: no tool is enabled) and the
    /// read-only switch from [`READ_ONLY_ENV`].
    pub fn from_env() -> Self {
        let exposure = match std::env::var_os(ALLOWLIST_ENV) {
            Some(path) => Self::allowlist(PathBuf::from(path)),
            None => Self::closed(format!(
                "no allowlist file is configured; set {ALLOWLIST_ENV} to a file listing the tools to enable"
            )),
        };
        exposure.read_only(read_only_from_env())
    }

    /// No tool enabled, for `reason`.
    fn closed(reason: String) -> Self {
        Self {
            path: None,
            read_only: false,
            state: Mutex::new(State {
                loaded: Err(reason),
                stamp: None,
                reported: None,
            }),
        }
    }

    /// Read-only mode: only `#[read_only]` tools stay enabled.
    pub fn read_only(mut self, on: bool) -> Self {
        self.read_only = on;
        self
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Keeps only the enabled routes of `router`. Unknown names in the file disable every
    /// tool, so a typo cannot leave the list half applied.
    pub fn apply<S: Send + Sync + 'static>(&self, mut router: ToolRouter<S>) -> ToolRouter<S> {
        let tools = router.list_all();
        let known: BTreeSet<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let listed = match &state.loaded {
            Ok(listed) => {
                let unknown: Vec<&str> = listed
                    .iter()
                    .map(String::as_str)
                    .filter(|n| !known.contains(n))
                    .collect();
                if unknown.is_empty() {
                    Ok(listed.clone())
                } else {
                    Err(format!(
                        "{} names tools this server does not have: {}; fix the file (known tools: {})",
                        self.describe_path(),
                        unknown.join(", "),
                        known.iter().copied().collect::<Vec<_>>().join(", ")
                    ))
                }
            }
            Err(reason) => Err(reason.clone()),
        };
        let listed = match listed {
            Ok(listed) => {
                state.reported = None;
                listed
            }
            Err(reason) => {
                if state.reported.as_ref() != Some(&reason) {
                    tracing::error!("no tool is enabled: {reason}");
                    state.reported = Some(reason);
                }
                BTreeSet::new()
            }
        };
        drop(state);
        for tool in tools {
            let read_only_tool = tool
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false);
            if !listed.contains(tool.name.as_ref()) || (self.read_only && !read_only_tool) {
                router.remove_route(&tool.name);
            }
        }
        router
    }

    /// Re-reads the file if it changed (or if `force`); true when the listed tools changed.
    pub fn reload(&self, force: bool) -> bool {
        let Some(path) = &self.path else {
            return false;
        };
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if !force && stamp(path) == state.stamp {
            return false;
        }
        let (loaded, stamp) = read(path);
        let changed = loaded != state.loaded;
        if changed {
            match &loaded {
                Ok(tools) => tracing::info!(
                    "reloaded {}: {} tool(s) listed",
                    path.display(),
                    tools.len()
                ),
                Err(reason) => tracing::error!("no tool is enabled: {reason}"),
            }
            state.reported = loaded.as_ref().err().cloned();
        }
        state.loaded = loaded;
        state.stamp = stamp;
        changed
    }

    /// Watches the allowlist: reloads when the file changes or the process gets SIGHUP,
    /// and tells `peer` (`notifications/tools/list_changed`) when the tools changed.
    /// With a peer the task ends when the peer goes away; without one it runs for the
    /// life of the process (HTTP serves many sessions, each asks `tools/list` anew).
    pub fn watch(self: &Arc<Self>, peer: Option<Peer<RoleServer>>, poll: Duration) {
        let exposure = Arc::clone(self);
        tokio::spawn(async move {
            let mut hangup = hangup_signal();
            loop {
                let forced = tokio::select! {
                    _ = tokio::time::sleep(poll) => false,
                    Some(()) = recv(&mut hangup) => true,
                };
                let changed = exposure.reload(forced);
                let Some(peer) = &peer else { continue };
                if peer.is_transport_closed()
                    || (changed && peer.notify_tool_list_changed().await.is_err())
                {
                    break;
                }
            }
        });
    }

    fn describe_path(&self) -> String {
        self.path
            .as_ref()
            .map(|p| format!("the allowlist {}", p.display()))
            .unwrap_or_else(|| "the allowlist".into())
    }
}

#[cfg(unix)]
type Hangup = Option<tokio::signal::unix::Signal>;
#[cfg(not(unix))]
type Hangup = Option<()>;

#[cfg(unix)]
fn hangup_signal() -> Hangup {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok()
}

#[cfg(not(unix))]
fn hangup_signal() -> Hangup {
    None
}

#[cfg(unix)]
async fn recv(hangup: &mut Hangup) -> Option<()> {
    match hangup {
        Some(signal) => signal.recv().await,
        None => std::future::pending().await,
    }
}

#[cfg(not(unix))]
async fn recv(_: &mut Hangup) -> Option<()> {
    std::future::pending().await
}

fn stamp(path: &Path) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// Reads and checks an allowlist file. Any problem means no tool is enabled.
fn read(path: &Path) -> (Loaded, Stamp) {
    let stamp = stamp(path);
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            return (
                Err(format!(
                    "cannot read the allowlist {}: {e}; create it with `tools = [\"...\"]`",
                    path.display()
                )),
                stamp,
            );
        }
    };
    let parsed: Result<AllowlistFile, String> = match path.extension().and_then(|e| e.to_str()) {
        Some("toml") => toml::from_str(&text).map_err(|e| e.to_string()),
        Some("json") => serde_json::from_str(&text).map_err(|e| e.to_string()),
        _ => Err("the file must end in .toml or .json".into()),
    };
    let file = match parsed {
        Ok(file) => file,
        Err(e) => {
            return (
                Err(format!(
                    "the allowlist {} is not valid: {e}; it must hold exactly `tools = [\"name\", ...]`",
                    path.display()
                )),
                stamp,
            );
        }
    };
    let mut tools = BTreeSet::new();
    for name in file.tools {
        if !tools.insert(name.clone()) {
            return (
                Err(format!(
                    "the allowlist {} lists `{name}` twice; list each tool once",
                    path.display()
                )),
                stamp,
            );
        }
    }
    (Ok(tools), stamp)
}

/// [`READ_ONLY_ENV`]: `1/true/yes/on` or `0/false/no/off`; anything else is read as on
/// (the safe reading), and logged.
pub fn read_only_from_env() -> bool {
    let Ok(value) = std::env::var(READ_ONLY_ENV) else {
        return false;
    };
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => true,
        "" | "0" | "false" | "no" | "off" => false,
        _ => {
            tracing::error!(
                "{READ_ONLY_ENV}={value:?} is not understood, so read-only mode is ON (the safe reading); set it to 1 or 0"
            );
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn reads_toml_and_json() {
        let dir = tempfile::tempdir().unwrap();
        let toml = write(dir.path(), "a.toml", "tools = [\"a\", \"b\"]\n");
        let json = write(dir.path(), "a.json", "{\"tools\": [\"a\"]}");
        assert_eq!(read(&toml).0.unwrap().len(), 2);
        assert_eq!(read(&json).0.unwrap().len(), 1);
    }

    #[test]
    fn every_broken_file_enables_nothing_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            (
                write(dir.path(), "syntax.toml", "tools = [\"a\""),
                "is not valid",
            ),
            (
                write(dir.path(), "extra.toml", "tools = []\nmore = 1\n"),
                "is not valid",
            ),
            (
                write(dir.path(), "dup.json", "{\"tools\": [\"a\", \"a\"]}"),
                "twice",
            ),
            (
                write(dir.path(), "list.yaml", "tools: [a]"),
                ".toml or .json",
            ),
            (dir.path().join("missing.toml"), "cannot read"),
        ];
        for (path, needle) in cases {
            let reason = read(&path).0.unwrap_err();
            assert!(reason.contains(needle), "{}: {reason}", path.display());
        }
    }
}
