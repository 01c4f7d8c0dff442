//! Observers: each reads one kind of state a tool can change and turns it into a
//! [`Snapshot`], a sorted map that compares equal exactly when nothing observable changed.

use std::{
    collections::BTreeMap,
    fmt,
    path::{Path, PathBuf},
    sync::Arc,
    time::{SystemTime, UNIX_EPOCH},
};

use sha2::{Digest, Sha256};

use crate::{canonical::canonical_json, guard::Guard, outbox::Outbound};

/// What one observer (or several, merged) saw: key → description. Two snapshots are equal
/// exactly when every key and every description is equal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot(pub BTreeMap<String, String>);

/// One difference between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// What changed.
    pub key: String,
    /// `None`: the key did not exist before.
    pub before: Option<String>,
    /// `None`: the key is gone.
    pub after: Option<String>,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.before, &self.after) {
            (None, Some(after)) => write!(f, "{}: added ({after})", self.key),
            (Some(before), None) => write!(f, "{}: removed (was {before})", self.key),
            (Some(before), Some(after)) => write!(f, "{}: {before} → {after}", self.key),
            (None, None) => write!(f, "{}: unchanged", self.key),
        }
    }
}

impl Snapshot {
    /// Records `key` as `value`.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.0.insert(key.into(), value.into());
    }

    /// Adds every entry of `other` under `prefix` (`"{prefix} {key}"`).
    pub fn merge(&mut self, prefix: &str, other: Snapshot) {
        for (key, value) in other.0 {
            self.0.insert(format!("{prefix} {key}"), value);
        }
    }

    /// Every key whose description differs between `self` (before) and `after`.
    pub fn diff(&self, after: &Snapshot) -> Vec<Change> {
        let mut changes = Vec::new();
        for (key, before) in &self.0 {
            match after.0.get(key) {
                None => changes.push(Change {
                    key: key.clone(),
                    before: Some(before.clone()),
                    after: None,
                }),
                Some(now) if now != before => changes.push(Change {
                    key: key.clone(),
                    before: Some(before.clone()),
                    after: Some(now.clone()),
                }),
                Some(_) => {}
            }
        }
        for (key, now) in &after.0 {
            if !self.0.contains_key(key) {
                changes.push(Change {
                    key: key.clone(),
                    before: None,
                    after: Some(now.clone()),
                });
            }
        }
        changes.sort_by(|a, b| a.key.cmp(&b.key));
        changes
    }

    /// The differences as one line each; empty when nothing changed.
    pub fn describe_diff(&self, after: &Snapshot) -> Vec<String> {
        self.diff(after).iter().map(ToString::to_string).collect()
    }
}

/// A source of observable state: implement it for anything the kit cannot see on its own
/// (a file outside the fixture, an in-memory counter, a remote API's records, a cache).
///
/// The kit calls it from the test's thread between calls (never while a call is running,
/// except after a dropped connection, where it reads until two readings agree). Readings of
/// fresh fixtures are compared with each other, so describe state, not identity: no
/// timestamps, temporary paths or random ids in keys or values unless they are the effect.
/// A time that differs between fixtures but must not move within one belongs in
/// [`times`](Self::times).
pub trait Observe: Send + Sync {
    /// Names the observed thing in reports (`sqlite ops.db`, `dir files`, `outbox`).
    fn label(&self) -> String;
    /// Reads the state now. An error is reported, never treated as "unchanged".
    fn snapshot(&self) -> Result<Snapshot, String>;
    /// The state item by item (a row, a file, a message), for judging
    /// `destructiveHint: false`: an item that was there before and is gone was deleted, one
    /// whose description changed was overwritten, a new one is an addition. Defaults to
    /// [`snapshot`](Self::snapshot), which is right when its keys are already items; an
    /// observer that summarises many items under one key (a row count) should list them here,
    /// or every addition reads as an overwrite of the summary.
    fn items(&self) -> Result<Snapshot, String> {
        self.snapshot()
    }
    /// Volatile metadata under the keys of [`snapshot`](Self::snapshot), such as
    /// modification times: compared only before and after calls on the same fixture, never
    /// across fixtures, and only against `readOnlyHint`, so that a call that touches a thing
    /// without changing it (sets a file's time, writes the same bytes again) is seen.
    /// Defaults to nothing.
    fn times(&self) -> Result<Snapshot, String> {
        Ok(Snapshot::default())
    }
}

/// An observer from a label and a closure: a counter, a remote system's records, a file the
/// fixture does not own.
///
/// ```
/// use std::sync::{Arc, atomic::{AtomicU64, Ordering}};
/// use rmcp_guard::honesty::{FnObserver, Snapshot};
/// let hits = Arc::new(AtomicU64::new(0));
/// let seen = hits.clone();
/// let observer = FnObserver::new("hit counter", move || {
///     let mut snapshot = Snapshot::default();
///     snapshot.insert("hits", seen.load(Ordering::SeqCst).to_string());
///     Ok(snapshot)
/// });
/// # let _ = observer;
/// ```
pub struct FnObserver {
    label: String,
    read: ReadFn,
}

type ReadFn = Box<dyn Fn() -> Result<Snapshot, String> + Send + Sync>;

impl FnObserver {
    /// An observer called `label` that reads state with `read`.
    pub fn new(
        label: impl Into<String>,
        read: impl Fn() -> Result<Snapshot, String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            label: label.into(),
            read: Box::new(read),
        }
    }
}

impl Observe for FnObserver {
    fn label(&self) -> String {
        self.label.clone()
    }

    fn snapshot(&self) -> Result<Snapshot, String> {
        (self.read)()
    }
}

/// Reads every observer's items ([`Observe::items`]) and merges them under their labels.
pub fn items_all(observers: &[Box<dyn Observe>]) -> Result<Snapshot, String> {
    read_all(observers, |o| o.items())
}

/// Reads every observer and merges the results under their labels.
pub fn snapshot_all(observers: &[Box<dyn Observe>]) -> Result<Snapshot, String> {
    read_all(observers, |o| o.snapshot())
}

/// Reads every observer's times ([`Observe::times`]) and merges them under their labels.
pub(super) fn times_all(observers: &[Box<dyn Observe>]) -> Result<Snapshot, String> {
    read_all(observers, |o| o.times())
}

/// One reading of every observer, merged under their labels; an error names its observer.
fn read_all(
    observers: &[Box<dyn Observe>],
    read: impl Fn(&dyn Observe) -> Result<Snapshot, String>,
) -> Result<Snapshot, String> {
    let mut all = Snapshot::default();
    for observer in observers {
        let label = observer.label();
        let part = read(observer.as_ref()).map_err(|e| format!("{label}: cannot observe: {e}"))?;
        all.merge(&label, part);
    }
    Ok(all)
}

fn short(digest: &[u8]) -> String {
    crate::canonical::hex(&digest[..8])
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

// ── SQLite ────────────────────────────────────────────────────────────────────────────────

/// Every table of an SQLite database (including `sqlite_sequence`, which betrays an insert
/// even when the row was deleted again), every index, view and trigger, and the header's
/// `user_version` and `application_id`.
/// A table's description is its row count and a sha256 over its schema SQL and all its rows
/// in rowid order (tables without rowid: rows sorted by their encoding).
#[cfg(feature = "sqlite")]
pub struct SqliteObserver {
    path: PathBuf,
    name: Option<String>,
    ignored: Vec<(String, String)>,
}

#[cfg(feature = "sqlite")]
impl SqliteObserver {
    /// Reports label the database `sqlite <file name>`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            name: None,
            ignored: Vec::new(),
        }
    }

    /// Leaves `table.column` out of the digest: a value the fixture cannot hold still (a
    /// `DEFAULT CURRENT_TIMESTAMP`), so that states of fresh fixtures compare by what
    /// matters. The column still counts for the row count; the description says it is
    /// ignored, so nobody reads the digest as covering it.
    pub fn ignore_column(mut self, table: impl Into<String>, column: impl Into<String>) -> Self {
        self.ignored.push((table.into(), column.into()));
        self
    }

    /// Labels the database `sqlite <name>` instead. Labels must be the same on every
    /// fresh fixture: the kit compares states across fixtures.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    fn read(&self) -> rusqlite::Result<Snapshot> {
        use rusqlite::{Connection, OpenFlags};
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        let mut snap = Snapshot::default();
        // The header fields a tool can set without touching a table.
        for pragma in ["user_version", "application_id"] {
            let value: i64 = conn.query_row(&format!("PRAGMA {pragma}"), [], |r| r.get(0))?;
            snap.insert(format!("pragma {pragma}"), value.to_string());
        }
        let objects: Vec<(String, String, Option<String>)> = conn
            .prepare("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?;
        for (kind, name, sql) in objects {
            let sql = sql.unwrap_or_default();
            if kind == "table" {
                let ignored: Vec<&str> = self
                    .ignored
                    .iter()
                    .filter(|(t, _)| *t == name)
                    .map(|(_, c)| c.as_str())
                    .collect();
                let (rows, digest) = table_digest(&conn, &name, &sql, &ignored)?;
                let note = if ignored.is_empty() {
                    String::new()
                } else {
                    format!(" (ignoring {})", ignored.join(", "))
                };
                snap.insert(
                    format!("table {name}"),
                    format!(
                        "{}, sha256 {}{note}",
                        plural(rows, "row", "rows"),
                        short(&digest)
                    ),
                );
            } else {
                snap.insert(
                    format!("{kind} {name}"),
                    format!("sql sha256 {}", short(&Sha256::digest(sql.as_bytes()))),
                );
            }
        }
        Ok(snap)
    }
}

#[cfg(feature = "sqlite")]
impl Observe for SqliteObserver {
    fn label(&self) -> String {
        let name = self.name.clone().unwrap_or_else(|| {
            self.path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| self.path.display().to_string())
        });
        format!("sqlite {name}")
    }

    fn snapshot(&self) -> Result<Snapshot, String> {
        if !self.path.exists() {
            let mut snap = Snapshot::default();
            snap.insert("file", "missing");
            return Ok(snap);
        }
        self.read().map_err(|e| e.to_string())
    }

    /// Every schema object by name and every row by table and rowid (rows of a `WITHOUT
    /// ROWID` table by their content), without the ignored columns. `sqlite_sequence` is left
    /// out: its counters only grow, and an insert is not an overwrite.
    fn items(&self) -> Result<Snapshot, String> {
        if !self.path.exists() {
            let mut snap = Snapshot::default();
            snap.insert("file", "missing");
            return Ok(snap);
        }
        self.read_items().map_err(|e| e.to_string())
    }
}

#[cfg(feature = "sqlite")]
impl SqliteObserver {
    fn read_items(&self) -> rusqlite::Result<Snapshot> {
        use rusqlite::{Connection, OpenFlags};
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        let mut snap = Snapshot::default();
        let objects: Vec<(String, String, Option<String>)> = conn
            .prepare("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?;
        for (kind, name, sql) in objects {
            let sql = sql.unwrap_or_default();
            snap.insert(
                format!("{kind} {name}"),
                format!("sql sha256 {}", short(&Sha256::digest(sql.as_bytes()))),
            );
            if kind != "table" || name == "sqlite_sequence" {
                continue;
            }
            let ignored: Vec<&str> = self
                .ignored
                .iter()
                .filter(|(t, _)| *t == name)
                .map(|(_, c)| c.as_str())
                .collect();
            let quoted = format!("\"{}\"", name.replace('"', "\"\""));
            let without_rowid = sql.to_ascii_uppercase().contains("WITHOUT ROWID");
            let query = if without_rowid {
                format!("SELECT NULL, * FROM {quoted}")
            } else {
                format!("SELECT rowid, * FROM {quoted}")
            };
            let mut stmt = conn.prepare(&query)?;
            let columns: Vec<usize> = stmt
                .column_names()
                .enumerate()
                .skip(1)
                .filter(|(_, n)| !ignored.contains(n))
                .map(|(i, _)| i)
                .collect();
            let mut cursor = stmt.query([])?;
            while let Some(row) = cursor.next()? {
                let mut encoded = Vec::new();
                for &i in &columns {
                    encode_value(&mut encoded, row.get_ref(i)?);
                }
                let digest = short(&Sha256::digest(&encoded));
                if without_rowid {
                    snap.insert(format!("table {name} row {digest}"), "present");
                } else {
                    let rowid: i64 = row.get(0)?;
                    snap.insert(
                        format!("table {name} rowid {rowid}"),
                        format!("sha256 {digest}"),
                    );
                }
            }
        }
        Ok(snap)
    }
}

#[cfg(feature = "sqlite")]
fn table_digest(
    conn: &rusqlite::Connection,
    name: &str,
    sql: &str,
    ignored: &[&str],
) -> rusqlite::Result<(usize, [u8; 32])> {
    let quoted = format!("\"{}\"", name.replace('"', "\"\""));
    let without_rowid = sql.to_ascii_uppercase().contains("WITHOUT ROWID");
    let query = if without_rowid {
        format!("SELECT * FROM {quoted}")
    } else {
        format!("SELECT * FROM {quoted} ORDER BY rowid")
    };
    let mut stmt = conn.prepare(&query)?;
    let columns: Vec<usize> = stmt
        .column_names()
        .enumerate()
        .filter(|(_, n)| !ignored.contains(n))
        .map(|(i, _)| i)
        .collect();
    let mut rows: Vec<Vec<u8>> = Vec::new();
    let mut cursor = stmt.query([])?;
    while let Some(row) = cursor.next()? {
        let mut encoded = Vec::new();
        for &i in &columns {
            encode_value(&mut encoded, row.get_ref(i)?);
        }
        rows.push(encoded);
    }
    if without_rowid {
        rows.sort();
    }
    let mut hasher = Sha256::new();
    hasher.update((sql.len() as u64).to_le_bytes());
    hasher.update(sql.as_bytes());
    for row in &rows {
        hasher.update((row.len() as u64).to_le_bytes());
        hasher.update(row);
    }
    Ok((rows.len(), hasher.finalize().into()))
}

/// A type tag and a length prefix per value, so `('ab','c')` and `('a','bc')` differ.
#[cfg(feature = "sqlite")]
fn encode_value(out: &mut Vec<u8>, value: rusqlite::types::ValueRef<'_>) {
    use rusqlite::types::ValueRef;
    match value {
        ValueRef::Null => out.push(b'N'),
        ValueRef::Integer(i) => {
            out.push(b'I');
            out.extend_from_slice(&i.to_le_bytes());
        }
        ValueRef::Real(f) => {
            out.push(b'R');
            out.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        ValueRef::Text(bytes) | ValueRef::Blob(bytes) => {
            out.push(if matches!(value, ValueRef::Text(_)) {
                b'T'
            } else {
                b'B'
            });
            out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            out.extend_from_slice(bytes);
        }
    }
}

// ── Directory tree ────────────────────────────────────────────────────────────────────────

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

// ── Outbox ────────────────────────────────────────────────────────────────────────────────

type Sent = Arc<dyn Fn() -> Vec<Outbound> + Send + Sync>;

/// The messages tools sent through a guard's [`crate::Outbox`]: the total and, per channel,
/// the count and a sha256 over the canonical JSON of the bodies in sending order.
pub struct OutboxObserver {
    sent: Sent,
}

impl OutboxObserver {
    /// Observes the outbox of `guard`.
    pub fn new(guard: Arc<Guard>) -> Self {
        Self::from_fn(move || guard.outbox().sent())
    }

    /// Observes whatever `sent` returns (another outbox, a capture endpoint, ...).
    pub fn from_fn(sent: impl Fn() -> Vec<Outbound> + Send + Sync + 'static) -> Self {
        Self {
            sent: Arc::new(sent),
        }
    }
}

impl Observe for OutboxObserver {
    fn label(&self) -> String {
        "outbox".to_owned()
    }

    fn snapshot(&self) -> Result<Snapshot, String> {
        let sent = (self.sent)();
        let mut snap = Snapshot::default();
        snap.insert("total", plural(sent.len(), "message", "messages"));
        let mut channels: BTreeMap<&str, (usize, Sha256)> = BTreeMap::new();
        for message in &sent {
            let (count, hasher) = channels
                .entry(message.channel.as_str())
                .or_insert_with(|| (0, Sha256::new()));
            *count += 1;
            let body = canonical_json(&message.body).map_err(|e| e.to_string())?;
            hasher.update((body.len() as u64).to_le_bytes());
            hasher.update(body.as_bytes());
        }
        for (channel, (count, hasher)) in channels {
            snap.insert(
                format!("channel {channel}"),
                format!(
                    "{}, sha256 {}",
                    plural(count, "message", "messages"),
                    short(&hasher.finalize())
                ),
            );
        }
        Ok(snap)
    }

    /// Every message by its place in sending order: a message sent is an addition, never
    /// an overwrite.
    fn items(&self) -> Result<Snapshot, String> {
        let mut snap = Snapshot::default();
        for (i, message) in (self.sent)().iter().enumerate() {
            let body = canonical_json(&message.body).map_err(|e| e.to_string())?;
            snap.insert(
                format!("message {i}"),
                format!(
                    "channel {}, sha256 {}",
                    message.channel,
                    short(&Sha256::digest(body.as_bytes()))
                ),
            );
        }
        Ok(snap)
    }
}
