//! Files written whole or not at all, and never over what is there: a shipped default an
//! operator may have edited since, or a signing key, which must be owner-only from the moment
//! it exists.

use std::{io::Write, path::Path};

/// Writes `contents` to `path` if nothing is there yet, creating its directory; true if it
/// wrote. An existing file, whatever it holds, is left alone: the operator's edits win.
///
/// The file appears whole or not at all: the contents are written to a temporary file
/// beside it, which is then linked into place (a link never replaces an existing name), so
/// a server starting at the same moment never reads a half-written list.
pub fn install_default(path: &Path, contents: &str) -> Result<bool, String> {
    install(path, contents, false)
}

/// [`install_default`] for a secret, such as a signing key: a directory it creates is
/// entered by its owner only (0700) and the file is readable by its owner only (0600) from
/// the moment it exists.
pub fn install_private(path: &Path, contents: &str) -> Result<bool, String> {
    install(path, contents, true)
}

fn install(path: &Path, contents: &str, private: bool) -> Result<bool, String> {
    let parent = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => parent,
        None => Path::new("."),
    };
    let mut dirs = std::fs::DirBuilder::new();
    dirs.recursive(true);
    let mut file = std::fs::OpenOptions::new();
    file.write(true).create_new(true);
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        dirs.mode(0o700);
        file.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = private;
    dirs.create(parent)
        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    if path.symlink_metadata().is_ok() {
        return Ok(false);
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let mut random = [0u8; 8];
    getrandom::fill(&mut random).map_err(|e| format!("the system's random source failed: {e}"))?;
    let temp = parent.join(format!(
        ".{}.{}.{}.tmp",
        name.unwrap_or_default(),
        std::process::id(),
        crate::canonical::hex(&random)
    ));
    let written = file
        .open(&temp)
        .and_then(|mut file| {
            file.write_all(contents.as_bytes())?;
            file.sync_all()
        })
        .map_err(|e| format!("cannot write {}: {e}", temp.display()));
    let linked = written.and_then(|()| match std::fs::hard_link(&temp, path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(format!("cannot create {}: {e}", path.display())),
    });
    let _ = std::fs::remove_file(&temp);
    linked
}
