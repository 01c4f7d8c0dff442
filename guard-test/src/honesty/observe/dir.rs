//! Observing a directory tree: every entry's type, size, content digest and permissions, and
//! its modification time for the comparisons within one fixture.

use std::{
    path::{Path, PathBuf},
    time::{SystemTime, UNIX_EPOCH},
};

use sha2::{Digest, Sha256};

use super::{Observe, Snapshot, plural, short};

/// A directory tree: every entry by path relative to the root (`/`-separated). Files are
/// described by size and sha256 of their bytes, symlinks by their target (never followed),
/// directories as such. On Unix the permission bits are part of the description. The
/// root's own name is not part of any key, so trees in different temporary directories
/// compare equal when their contents are. Its [`times`](Observe::times) are every entry's
/// modification time, compared within one fixture only.
pub struct DirObserver {
    root: PathBuf,
    name: String,
    skip: Vec<String>,
}

impl DirObserver {
    /// Reports label the tree `dir`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            name: "dir".to_owned(),
            skip: Vec::new(),
        }
    }

    /// Labels the tree `name` (`sandbox`, `uploads`), to tell several trees apart.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Leaves out these relative paths (and everything under them): files another observer
    /// reads better, such as an SQLite database and its `-wal` and `-shm` companions. The
    /// directory a skipped path sits in keeps no modification time either: that path coming
    /// and going (companions made and removed by every connection, the observer's own
    /// included) moves it.
    pub fn skipping<I, P>(mut self, paths: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<String>,
    {
        self.skip.extend(paths.into_iter().map(Into::into));
        self
    }

    /// Visits every entry that is not skipped, a directory before what it holds; `false`
    /// when the root does not exist.
    fn walk(&self, visit: &mut Visit<'_>) -> Result<bool, String> {
        match std::fs::symlink_metadata(&self.root) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(format!("{}: {e}", self.root.display())),
            Ok(_) => {}
        }
        walk(&self.root, &self.root, &self.skip, visit).map_err(|e| e.to_string())?;
        Ok(true)
    }

    /// Whether `key` is the directory a skipped path sits in.
    fn holds_skipped(&self, key: &str) -> bool {
        self.skip
            .iter()
            .any(|s| s.rsplit_once('/').map_or(".", |(parent, _)| parent) == key)
    }
}

impl Observe for DirObserver {
    fn label(&self) -> String {
        self.name.clone()
    }

    fn snapshot(&self) -> Result<Snapshot, String> {
        let mut snap = Snapshot::default();
        let found = self.walk(&mut |key, path, meta| {
            snap.insert(key, describe(path, meta)?);
            Ok(())
        })?;
        if !found {
            snap.insert(".", "missing");
        }
        Ok(snap)
    }

    /// Every entry's modification time (a symlink's own), in UTC to the nanosecond as far as
    /// the filesystem keeps it, except the directory a skipped path sits in; access times
    /// are left out, as reading moves them.
    fn times(&self) -> Result<Snapshot, String> {
        let mut snap = Snapshot::default();
        self.walk(&mut |key, _, meta| {
            if !(meta.is_dir() && self.holds_skipped(&key)) {
                let at = modified(&key, meta)?;
                snap.insert(key, at);
            }
            Ok(())
        })?;
        Ok(snap)
    }
}

/// What [`DirObserver`] does with each entry: its key, path and metadata (of the entry
/// itself, never a symlink's target).
type Visit<'a> = dyn FnMut(String, &Path, &std::fs::Metadata) -> std::io::Result<()> + 'a;

fn walk(root: &Path, path: &Path, skip: &[String], visit: &mut Visit<'_>) -> std::io::Result<()> {
    let rel = path
        .strip_prefix(root)
        .map(|p| {
            p.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/")
        })
        .unwrap_or_default();
    if skip
        .iter()
        .any(|s| rel == *s || rel.starts_with(&format!("{s}/")))
    {
        return Ok(());
    }
    let key = if rel.is_empty() { ".".to_owned() } else { rel };
    let meta = std::fs::symlink_metadata(path)?;
    visit(key, path, &meta)?;
    if meta.is_dir() {
        let mut entries = std::fs::read_dir(path)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<Vec<_>, _>>()?;
        entries.sort();
        for entry in entries {
            walk(root, &entry, skip, visit)?;
        }
    }
    Ok(())
}

/// An entry's type, and a file's size and digest, with its permissions.
fn describe(path: &Path, meta: &std::fs::Metadata) -> std::io::Result<String> {
    let mode = mode(meta);
    let kind = meta.file_type();
    Ok(if kind.is_symlink() {
        format!("symlink → {}", std::fs::read_link(path)?.display())
    } else if kind.is_dir() {
        format!("dir{mode}")
    } else if kind.is_file() {
        let bytes = std::fs::read(path)?;
        format!(
            "{}, sha256 {}{mode}",
            plural(bytes.len(), "byte", "bytes"),
            short(&Sha256::digest(&bytes))
        )
    } else {
        format!("special file{mode}")
    })
}

/// An entry's modification time, as [`utc`] writes it.
fn modified(key: &str, meta: &std::fs::Metadata) -> std::io::Result<String> {
    meta.modified().map(utc).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!(
                "{key}: cannot read its modification time ({e}), which the kit compares for readOnlyHint: run the kit where the filesystem reports one"
            ),
        )
    })
}

/// RFC 3339 in UTC with nine fractional digits; a time RFC 3339 cannot write (before 1970
/// or past year 262143) as the platform prints it.
fn utc(at: SystemTime) -> String {
    at.duration_since(UNIX_EPOCH)
        .ok()
        .and_then(|d| {
            chrono::DateTime::from_timestamp(i64::try_from(d.as_secs()).ok()?, d.subsec_nanos())
        })
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true))
        .unwrap_or_else(|| format!("{at:?}"))
}

#[cfg(unix)]
fn mode(meta: &std::fs::Metadata) -> String {
    use std::os::unix::fs::PermissionsExt;
    format!(", mode {:o}", meta.permissions().mode() & 0o7777)
}

#[cfg(not(unix))]
fn mode(meta: &std::fs::Metadata) -> String {
    if meta.permissions().readonly() {
        ", read-only".to_owned()
    } else {
        String::new()
    }
}
