//! The allowlist and read-only mode, as a server configures them (see `crate::exposure`,
//! the public face of this module and of the router in `crate::entry`).

use std::{
    any::{Any, TypeId},
    collections::BTreeSet,
    io::Read,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::Duration,
};

use rmcp::{Peer, RoleServer, handler::server::router::tool::ToolRouter, model::Tool};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::entry::claims;

/// Path of the allowlist file (TOML or JSON: `tools = ["a", "b"]`).
pub const ALLOWLIST_ENV: &str = "GUARD_ALLOWLIST";
/// `1` removes every tool that is not `#[read_only]`.
pub const READ_ONLY_ENV: &str = "GUARD_READ_ONLY";
/// The largest allowlist file read; a larger one enables no tool.
pub const MAX_ALLOWLIST_BYTES: u64 = 1024 * 1024;

/// The allowlist and read-only switch of one server.
///
/// ```
/// use rmcp::{tool, tool_router};
/// use rmcp_guard::{Exposure, ToolError, read_only};
///
/// struct Ops;
///
/// #[tool_router]
/// impl Ops {
///     /// List the tables.
///     #[read_only]
///     #[tool]
///     async fn list_tables(&self) -> Result<String, ToolError> {
///         Ok(String::new())
///     }
///
///     /// Run any SQL.
///     #[tool]
///     async fn run_sql(&self) -> Result<String, ToolError> {
///         Ok(String::new())
///     }
/// }
///
/// let published = |exposure: &Exposure| -> Vec<String> {
///     let router = exposure.apply(Ops::tool_router());
///     router.list_all().into_iter().map(|tool| tool.name.to_string()).collect()
/// };
/// let file = std::env::temp_dir().join(format!("rmcp-guard-doc-{}.toml", std::process::id()));
/// std::fs::write(&file, r#"tools = ["list_tables"]"#).unwrap();
/// assert_eq!(published(&Exposure::allowlist(&file)), ["list_tables"]);
///
/// // A missing (or broken) file publishes nothing.
/// assert!(published(&Exposure::allowlist(file.with_extension("missing"))).is_empty());
///
/// // Read-only mode keeps only `#[read_only]` tools, even when every tool is chosen.
/// assert_eq!(published(&Exposure::all_tools().read_only(true)), ["list_tables"]);
/// # std::fs::remove_file(&file).unwrap();
/// ```
pub struct Exposure {
    path: Option<PathBuf>,
    /// Every tool, chosen in code ([`Exposure::all_tools`]).
    all: bool,
    read_only: bool,
    state: Mutex<State>,
    /// The filtered routers built so far (see `Exposure::cached`).
    routers: Mutex<Vec<Built>>,
}

/// One filtered router, for one server type and router function, as of one generation.
struct Built {
    /// The server type, the router function's type and the audit log it records refusals in.
    key: (TypeId, TypeId, usize),
    generation: u64,
    exposed: Arc<dyn Any + Send + Sync>,
}

/// Why [`Exposure::from_env`] could not say which tools to publish.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExposureError {
    #[error(
        "no allowlist is configured, so this server would publish no tool: set {ALLOWLIST_ENV} to a file listing the tools to publish (`tools = [\"name\", ...]`), or choose Exposure::all_tools() in code"
    )]
    /// Neither an allowlist file nor [`Exposure::all_tools`] was chosen.
    NotConfigured,
}

/// Its sentence, as [`Display`](std::fmt::Display) says it: `main() -> Result<(), Box<dyn
/// Error>>` prints an error returned at start-up with `Debug`, and should say what to do.
impl std::fmt::Debug for ExposureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// The listed names, or why no tool is enabled.
type Loaded = Result<BTreeSet<String>, String>;
/// What the file held when read: the SHA-256 of its bytes (`None`: it could not be read).
type Stamp = Option<[u8; 32]>;

struct State {
    loaded: Loaded,
    /// Counts the changes of `loaded`: a filtered router built from an older one is stale.
    generation: u64,
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
        let reported = loaded.as_ref().err().cloned();
        if let Some(reason) = &reported {
            no_tool_enabled(reason);
        }
        Self {
            path: Some(path),
            all: false,
            read_only: false,
            state: Mutex::new(State {
                loaded,
                generation: 0,
                stamp,
                reported,
            }),
            routers: Mutex::default(),
        }
    }

    /// The allowlist named by [`ALLOWLIST_ENV`] and the read-only switch from
    /// [`READ_ONLY_ENV`]. With no file named this is an error, for the server to report at
    /// startup: publishing nothing by accident, or everything, is not a configuration.
    pub fn from_env() -> Result<Self, ExposureError> {
        let path = std::env::var_os(ALLOWLIST_ENV)
            .filter(|p| !p.is_empty())
            .ok_or(ExposureError::NotConfigured)?;
        Ok(Self::allowlist(PathBuf::from(path)).read_only(read_only_from_env()))
    }

    /// Every tool the server defines, chosen in code (still subject to read-only mode):
    /// for a server whose every tool is guarded, where an operator's file adds nothing.
    pub fn all_tools() -> Self {
        Self {
            path: None,
            all: true,
            read_only: false,
            state: Mutex::new(State {
                loaded: Ok(BTreeSet::new()),
                generation: 0,
                stamp: None,
                reported: None,
            }),
            routers: Mutex::default(),
        }
    }

    /// Read-only mode: only `#[read_only]` tools stay enabled.
    pub fn read_only(mut self, on: bool) -> Self {
        self.read_only = on;
        self
    }

    /// Whether only `#[read_only]` tools stay enabled.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Whether guard's own tool `name` (`undo`, `withdraw`) is published now: every tool
    /// is, or the allowlist names it, and read-only mode does not hide it (guard's own
    /// tools write).
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn publishes_own(&self, name: &str) -> bool {
        !self.read_only
            && (self.all
                || self
                    .lock_state()
                    .loaded
                    .as_ref()
                    .is_ok_and(|l| l.contains(name)))
    }

    /// The allowlist file, if this exposure reads one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Keeps only the enabled routes of `router`. Unknown names in the file disable every
    /// tool, so a typo cannot leave the list half applied.
    pub fn apply<S: Send + Sync + 'static>(&self, router: ToolRouter<S>) -> ToolRouter<S> {
        self.apply_at(router).0
    }

    /// The router `build` makes for `key` (server type, router function, audit log), made
    /// once and shared until a reload changes the listed tools; `build` gets this exposure
    /// and returns the router with the generation it applied.
    pub(crate) fn cached<T: Any + Send + Sync>(
        &self,
        key: (TypeId, TypeId, usize),
        build: impl FnOnce(&Self) -> (Arc<T>, u64),
    ) -> Arc<T> {
        let generation = self.lock_state().generation;
        let cached = self
            .lock_routers()
            .iter()
            .find(|b| b.key == key && b.generation == generation)
            .map(|b| Arc::clone(&b.exposed));
        if let Some(exposed) = cached.and_then(|any| any.downcast::<T>().ok()) {
            return exposed;
        }
        // Built with no lock held: rmcp validates every route as the router is made.
        let (exposed, generation) = build(self);
        let mut routers = self.lock_routers();
        routers.retain(|b| b.key != key);
        routers.push(Built {
            key,
            generation,
            exposed: Arc::clone(&exposed) as Arc<dyn Any + Send + Sync>,
        });
        exposed
    }

    fn lock_state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_routers(&self) -> std::sync::MutexGuard<'_, Vec<Built>> {
        self.routers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// [`Exposure::apply`], and the generation of the listed tools it applied.
    pub(crate) fn apply_at<S: Send + Sync + 'static>(
        &self,
        router: ToolRouter<S>,
    ) -> (ToolRouter<S>, u64) {
        let tools = router.list_all();
        let known: BTreeSet<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        let mut state = self.lock_state();
        let generation = state.generation;
        let router = match claims::vouched(router) {
            Ok(router) => router,
            Err(reason) => {
                // The code, not the file, is wrong: no reload can fix it, so nothing is served.
                if state.reported.as_ref() != Some(&reason) {
                    no_tool_enabled(&reason);
                    state.reported = Some(reason);
                }
                return (ToolRouter::new(), generation);
            }
        };
        if self.all {
            return (self.keep(router, tools, |_| true), 0);
        }
        let listed = match &state.loaded {
            Ok(listed) => {
                let unknown: Vec<&str> = listed
                    .iter()
                    .map(String::as_str)
                    .filter(|n| !known.contains(n) && !guards_own(n))
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
                    no_tool_enabled(&reason);
                    state.reported = Some(reason);
                }
                BTreeSet::new()
            }
        };
        drop(state);
        (
            self.keep(router, tools, |name| listed.contains(name)),
            generation,
        )
    }

    /// Removes from `router` every tool that `listed` refuses, and in read-only mode every
    /// tool that is not read-only.
    fn keep<S: Send + Sync + 'static>(
        &self,
        mut router: ToolRouter<S>,
        tools: Vec<Tool>,
        listed: impl Fn(&str) -> bool,
    ) -> ToolRouter<S> {
        for tool in tools {
            let read_only_tool = tool
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false);
            if !listed(tool.name.as_ref()) || (self.read_only && !read_only_tool) {
                router.remove_route(&tool.name);
            }
        }
        router
    }

    /// Re-reads the file; true when the listed tools changed. A change is seen by content
    /// (SHA-256), whatever the file's times and size say. The file is read with no lock
    /// held. `force` (SIGHUP) re-applies what was read even when the content is the same.
    pub fn reload(&self, force: bool) -> bool {
        let Some(path) = &self.path else {
            return false;
        };
        let (loaded, stamp) = read(path);
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if !force && stamp.is_some() && stamp == state.stamp {
            return false;
        }
        let changed = loaded != state.loaded;
        if changed {
            state.generation += 1;
            match &loaded {
                Ok(tools) => tracing::info!(
                    "reloaded {}: {} tool(s) listed",
                    path.display(),
                    tools.len()
                ),
                Err(reason) => no_tool_enabled(reason),
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

/// Reads and checks an allowlist file. Any problem means no tool is enabled.
fn read(path: &Path) -> (Loaded, Stamp) {
    let bytes = match read_bounded(path) {
        Ok(bytes) => bytes,
        Err(reason) => return (Err(reason), None),
    };
    let stamp: Stamp = Some(Sha256::digest(&bytes).into());
    let Ok(text) = String::from_utf8(bytes) else {
        return (
            Err(format!(
                "the allowlist {} is not UTF-8 text; write it as `tools = [\"name\", ...]`",
                path.display()
            )),
            stamp,
        );
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

/// The file's bytes, if it is a regular file of at most [`MAX_ALLOWLIST_BYTES`]. Never
/// blocks: the type is checked before opening (following a symlink, as mounted
/// configuration often is one), the file is opened non-blocking, and the type is checked
/// again on the opened descriptor, in case the path was swapped in between.
fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    let cannot = |e: std::io::Error| {
        format!(
            "cannot read the allowlist {}: {e}; create it with `tools = [\"...\"]`",
            path.display()
        )
    };
    let before = std::fs::metadata(path).map_err(cannot)?;
    regular(path, &before)?;
    let mut file = open_nonblocking(path).map_err(cannot)?;
    let opened = file.metadata().map_err(cannot)?;
    regular(path, &opened)?;
    let too_big = || {
        format!(
            "the allowlist {} is larger than {MAX_ALLOWLIST_BYTES} bytes; an allowlist names a few tools",
            path.display()
        )
    };
    if opened.len() > MAX_ALLOWLIST_BYTES {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    (&mut file)
        .take(MAX_ALLOWLIST_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_ALLOWLIST_BYTES {
        return Err(too_big());
    }
    Ok(bytes)
}

/// Anything but a regular file (a FIFO, a device, a socket, a directory) is refused.
fn regular(path: &Path, meta: &std::fs::Metadata) -> Result<(), String> {
    if meta.is_file() {
        return Ok(());
    }
    let ty = meta.file_type();
    let kind = if ty.is_dir() {
        "a directory"
    } else {
        special_kind(&ty)
    };
    Err(format!(
        "the allowlist {} is {kind}, not a regular file; point it at a file holding `tools = [\"...\"]`",
        path.display()
    ))
}

#[cfg(unix)]
fn special_kind(ty: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ty.is_fifo() {
        "a FIFO"
    } else if ty.is_char_device() || ty.is_block_device() {
        "a device"
    } else if ty.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

#[cfg(not(unix))]
fn special_kind(_: &std::fs::FileType) -> &'static str {
    "not a regular file"
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::open(path)
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

/// Says why this server publishes no tool: through `tracing`, and on stderr too when the
/// process installed no subscriber (a server that cannot serve must not fail in silence
/// because its author logs nothing). Each reason is said once, where it is found.
pub(crate) fn no_tool_enabled(reason: &str) {
    tracing::error!("no tool is enabled: {reason}");
    if !tracing::dispatcher::has_been_set() {
        eprintln!("guard: no tool is enabled: {reason}");
    }
}

/// A tool guard adds itself where it can serve it: `undo`, published beside the tools that
/// declare an undo, and `withdraw`, beside the tools that defer their effect, when the
/// guard has a store for their windows and calls. An allowlist may list them for a server
/// that runs without a store too (the tool is then simply not there).
fn guards_own(name: &str) -> bool {
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    return name == crate::undo::TOOL || name == crate::defer::TOOL;
    #[cfg(not(any(feature = "sqlite", feature = "postgres")))]
    {
        let _ = name;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_up_error_prints_its_sentence_with_debug() {
        let error = ExposureError::NotConfigured;
        assert_eq!(format!("{error:?}"), error.to_string());
        assert!(format!("{error:?}").contains(ALLOWLIST_ENV));
    }

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
            (dir.path().to_path_buf(), "a directory"),
            (PathBuf::from("/dev/null"), "a device"),
        ];
        for (path, needle) in cases {
            let reason = read(&path).0.unwrap_err();
            assert!(reason.contains(needle), "{}: {reason}", path.display());
        }
    }

    #[test]
    fn bytes_that_are_not_text_enable_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bytes.toml");
        std::fs::write(&path, b"tools = [\"\xff\"]\n").unwrap();
        let reason = read(&path).0.unwrap_err();
        assert!(reason.contains("not UTF-8"), "{reason}");
    }

    #[test]
    fn the_stamp_is_the_content_hash() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(dir.path(), "a.toml", "tools = [\"ab\"]\n");
        let b = write(dir.path(), "b.toml", "tools = [\"ba\"]\n");
        let again = write(dir.path(), "c.toml", "tools = [\"ab\"]\n");
        assert_ne!(read(&a).1, read(&b).1, "same size, different content");
        assert_eq!(read(&a).1, read(&again).1, "same content, another file");
    }
}
