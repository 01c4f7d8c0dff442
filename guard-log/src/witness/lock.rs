//! The locks a running witness holds, so that a second witness cannot serve the same state
//! under another spelling of its path: two witnesses on one state, with one key, would each
//! cosign their own tree, a fork under the witness's name.
//!
//! The locks follow the file, not the words that named it. One is on `<state>.lock` beside
//! the state's canonical path (symlinks and `..` resolved), which is never replaced; the
//! other is on the state file's own inode, which a hard link shares, taken again on each new
//! state before it replaces the old one (see [`Locks::lock_next`]).

use std::{
    fs::File,
    path::{Path, PathBuf},
};

use rustix::fs::{FlockOperation, flock};

/// The locks of one running witness, released when it is dropped.
#[derive(Debug)]
pub(super) struct Locks {
    _name: File,
    state: Option<File>,
}

impl Locks {
    /// Takes both locks of the state at `canonical` (its canonical path), or says which
    /// witness holds them. `shown` is the path as the operator gave it.
    pub(super) fn take(canonical: &Path, shown: &Path) -> Result<Self, String> {
        let name = lock_path(canonical);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&name)
            .map_err(|e| {
                format!(
                    "cannot open the witness state's lock {}: {e}; run the witness as a user that may write beside its state",
                    name.display()
                )
            })?;
        exclusive(&file).map_err(|()| {
            format!(
                "another witness{} is running on the state {}: stop it first, or give this witness a state of its own",
                holder(&file),
                canonical.display()
            )
        })?;
        let state = match File::open(canonical) {
            Ok(state) => {
                exclusive(&state).map_err(|()| {
                    format!(
                        "{} is the state file of another running witness{}, reached under another name (a hard link): stop that witness first, or give this one a state of its own",
                        shown.display(),
                        holder(&state)
                    )
                })?;
                Some(state)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(format!("cannot open {}: {e}", shown.display())),
        };
        Ok(Self { _name: file, state })
    }

    /// A locked handle on `next`, the state file about to replace the current one: taken
    /// before it is in place, so the state at the path is never unlocked.
    pub(super) fn lock_next(&self, next: &File) -> Result<File, String> {
        let next = next.try_clone().map_err(|e| e.to_string())?;
        exclusive(&next).map_err(|()| {
            "another process locked the new state file before it was in place".to_owned()
        })?;
        Ok(next)
    }

    /// Holds `locked` (from [`lock_next`](Self::lock_next)), now the state file, and lets
    /// the replaced one go.
    pub(super) fn replaced(&mut self, locked: File) {
        self.state = Some(locked);
    }
}

/// `<state>.lock`: the name lock of the state at `canonical`.
fn lock_path(canonical: &Path) -> PathBuf {
    let mut name = canonical.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

fn exclusive(file: &File) -> Result<(), ()> {
    flock(file, FlockOperation::NonBlockingLockExclusive).map_err(|_| ())
}

/// ` (process N)` for the process holding `file` locked, where the system says (Linux's
/// `/proc/locks`); else nothing.
fn holder(file: &File) -> String {
    pid_holding(file)
        .map(|pid| format!(" (process {pid})"))
        .unwrap_or_default()
}

#[cfg(target_os = "linux")]
fn pid_holding(file: &File) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata().ok()?;
    let inode = format!(
        "{:02x}:{:02x}:{}",
        rustix::fs::major(meta.dev()),
        rustix::fs::minor(meta.dev()),
        meta.ino()
    );
    // `1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF`; waiters' lines carry `->` first.
    std::fs::read_to_string("/proc/locks")
        .ok()?
        .lines()
        .find_map(
            |line| match line.split_whitespace().collect::<Vec<_>>()[..] {
                [_, "FLOCK", _, "WRITE", pid, at, ..] if at == inode => Some(pid.to_owned()),
                _ => None,
            },
        )
}

#[cfg(not(target_os = "linux"))]
fn pid_holding(_: &File) -> Option<String> {
    None
}
