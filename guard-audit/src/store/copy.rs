//! A copied SQLite store: its file and its write-ahead log (`-wal`) without the log's index
//! (`-shm`). SQLite opening it, even read-only, makes the index beside it; guard-audit leaves
//! what is beside a store as it was, so it reads such a store from a private copy of the two
//! files, entries of the write-ahead log included.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
};

/// `path` with `suffix` after its name.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name: OsString = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// A private copy of the store at `path` (in a directory only this user reads, removed when
/// dropped) and the copy's path, when a write-ahead log with entries is beside it and no
/// index; `None` when the store can be read where it is.
pub(super) fn private(path: &Path) -> Result<Option<(tempfile::TempDir, PathBuf)>, String> {
    let wal = beside(path, "-wal");
    let live = std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0);
    if !live || beside(path, "-shm").symlink_metadata().is_ok() {
        return Ok(None);
    }
    let failed = |e: std::io::Error| {
        format!(
            "{} has a write-ahead log and no -shm index beside it, and a private copy to read it from could not be made: {e}; free space in the temporary directory (TMPDIR), or copy the store with its -shm",
            path.display()
        )
    };
    let dir = tempfile::Builder::new()
        .prefix("guard-audit-")
        .tempdir()
        .map_err(failed)?;
    let copy = dir.path().join("audit.db");
    std::fs::copy(path, &copy).map_err(failed)?;
    std::fs::copy(&wal, beside(&copy, "-wal")).map_err(failed)?;
    Ok(Some((dir, copy)))
}
