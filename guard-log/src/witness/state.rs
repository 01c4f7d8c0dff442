//! The witness's state file: per origin, the last checkpoint it cosigned, as JSON. It is
//! found by its canonical path, so a symlink to it or another spelling of its path is the
//! same state, and replaced atomically: a crash leaves the old state or the new one.

use std::{
    collections::BTreeMap,
    fs::File,
    io::Write,
    path::{Path, PathBuf},
};

/// Per origin, the last checkpoint cosigned: its note, with the log's signature and the
/// witness's cosignature.
pub(super) type State = BTreeMap<String, String>;

/// The canonical path of the state named `path`: the file itself with every symlink and
/// `..` resolved, or, when it does not exist yet, its canonical directory and its name.
pub(super) fn canonical(path: &Path) -> Result<PathBuf, String> {
    if let Ok(found) = std::fs::canonicalize(path) {
        return Ok(found);
    }
    let name = path.file_name().ok_or_else(|| {
        format!(
            "the witness state {} names no file: give a file path",
            path.display()
        )
    })?;
    let dir = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) => dir,
        None => Path::new("."),
    };
    let dir = std::fs::canonicalize(dir).map_err(|e| {
        format!(
            "cannot find the directory of the witness state {}: {e}; create it first",
            path.display()
        )
    })?;
    Ok(dir.join(name))
}

/// Reads the state at `path`; a missing file is an empty state, a file that does not read
/// is an error, never a fresh start, which would let the witness cosign a rolled-back log.
pub(super) fn load(path: &Path, shown: &Path) -> Result<State, String> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            format!(
                "the witness state {} is not readable ({e}); restore it from a backup: starting afresh would let this witness cosign a rolled-back log",
                shown.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(State::new()),
        Err(e) => Err(format!("cannot read {}: {e}", shown.display())),
    }
}

/// Replaces the state file at `path` (canonical) with `state`: written beside it, synced,
/// handed to `ready` (which locks it), renamed over it, and the directory synced.
pub(super) fn save<R>(
    path: &Path,
    state: &State,
    ready: impl FnOnce(&File) -> Result<R, String>,
) -> Result<R, String> {
    let text = serde_json::to_string_pretty(state).map_err(|e| e.to_string())?;
    let dir = path.parent().unwrap_or(Path::new("/"));
    let temp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    let placed = File::create(&temp)
        .and_then(|mut file| {
            file.write_all(text.as_bytes())?;
            file.sync_all()?;
            Ok(file)
        })
        .map_err(|e| e.to_string())
        .and_then(|file| ready(&file))
        .and_then(|r| std::fs::rename(&temp, path).map(|()| r).map_err(|e| e.to_string()));
    let r = placed.map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        format!("cannot save the witness state {}: {e}", path.display())
    })?;
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(r)
}
