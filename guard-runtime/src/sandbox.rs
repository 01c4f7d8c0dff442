//! A directory a tool may change, opened once and acted on only through that handle.
//!
//! A path string is walked again on every `std::fs` call, so a check on a path and an effect
//! on the same path can land on two different files: a local process that swaps a directory
//! for a symlink between the two gets the effect applied outside the root. [`Sandbox`] closes
//! that gap. It holds the root as an open directory; every lookup goes beneath it with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` (a component-by-component `openat` with
//! `O_NOFOLLOW` where `openat2` is missing), and the effect is an `unlinkat` relative to the
//! parent directory that was just opened, after an `fstatat` of the entry (without following
//! symlinks) found the very file the human was shown.
//!
//! The API keeps the two halves together: [`Sandbox::resolve`] returns an [`Entry`] with the
//! file's [`Identity`] (device, inode, size, modification and change times, link count), and
//! [`Sandbox::remove`] takes the [`Pin`] of such an entry and removes the file only while it
//! is still that identity. A pin's text is a preview's target, so it travels through the
//! confirmation unchanged and any swap between question and effect changes the fingerprint.
//!
//! Messages name paths relative to the root only; the root's own location never appears.
//!
//! ```no_run
//! use rmcp_guard::sandbox::{Lookup, Sandbox};
//!
//! let files = Sandbox::create("/srv/files")?;
//! if let Lookup::File(entry) = files.resolve("reports/old.log")? {
//!     // Show `entry` to the human, carry `entry.pin()` as the preview's target, then:
//!     files.remove(&entry.pin())?;
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::{
    fmt,
    os::fd::{AsFd, OwnedFd},
    path::Path,
    str::FromStr,
    sync::Arc,
};

use rustix::{
    fs::{self, AtFlags, FileType, Mode, OFlags},
    io::Errno,
};
use sha2::{Digest, Sha256};

use crate::error::{ToolError, codes};

mod find;

/// A root directory, held open. Cloning shares the handle.
#[derive(Debug, Clone)]
pub struct Sandbox {
    root: Arc<OwnedFd>,
}

/// A path inside the root: plain names joined by `/`, with no `..`, no absolute start and no
/// invisible characters. `.` and empty components are dropped, so `./a//b` is `a/b`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RelativePath {
    parts: Vec<String>,
}

/// What a path inside the root names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// A regular file, with the identity it has now.
    File(Entry),
    /// Nothing by that name (or a directory on the way does not exist).
    Missing(RelativePath),
}

/// A regular file inside the root, as it was when it was resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    path: RelativePath,
    identity: Identity,
}

/// What tells one file apart from another that merely looks the same: a swapped inode, a
/// rewrite that keeps size and modification time (the change time still moves), another
/// hard link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Identity {
    device: u64,
    inode: u64,
    size: u64,
    modified: (i64, u64),
    changed: (i64, u64),
    links: u64,
}

/// A file's path and a digest of its identity, as text that can be a preview's target: what
/// [`Sandbox::remove`] needs to act on exactly the file the human confirmed.
///
/// Written as `reports/old.log [file 0123…]` (32 hex digits).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pin {
    path: RelativePath,
    digest: [u8; 16],
}

/// Why the sandbox refused or failed. The message names paths relative to the root only.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SandboxError {
    kind: ErrorKind,
    message: String,
}

/// The kind of a [`SandboxError`], for mapping to the model's error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The path is not acceptable (absolute, `..`, a symlink, not a regular file, …).
    Refused,
    /// The file is no longer the one that was resolved.
    Changed,
    /// The operating system refused the operation (permissions, I/O).
    Failed,
}

impl SandboxError {
    fn refused(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::Refused,
            message: message.into(),
        }
    }

    fn changed(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::Changed,
            message: message.into(),
        }
    }

    fn failed(path: &RelativePath, action: &str, errno: Errno) -> Self {
        Self {
            kind: ErrorKind::Failed,
            message: format!("could not {action} `{path}`: {errno}"),
        }
    }

    /// What kind of refusal or failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// What happened, with the path relative to the root.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// `Refused` is bad input (`INVALID_INPUT`), `Changed` is `STATE_CHANGED`; an operating
/// system failure is logged and the model gets a trace id.
impl From<SandboxError> for ToolError {
    fn from(error: SandboxError) -> Self {
        match error.kind {
            ErrorKind::Refused => ToolError::invalid_input(error.message),
            ErrorKind::Changed => ToolError::new(codes::STATE_CHANGED, error.message),
            ErrorKind::Failed => ToolError::internal(error.message),
        }
    }
}

impl Sandbox {
    /// Opens the existing directory `root`. Only this call sees the root's location; from
    /// here on the sandbox acts through the handle, so renaming or replacing the root path
    /// later does not redirect it.
    pub fn open(root: impl AsRef<Path>) -> std::io::Result<Self> {
        let root = fs::open(
            root.as_ref(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Self {
            root: Arc::new(root),
        })
    }

    /// Creates `root` (and its parents) if needed, then opens it.
    pub fn create(root: impl AsRef<Path>) -> std::io::Result<Self> {
        std::fs::create_dir_all(root.as_ref())?;
        Self::open(root)
    }

    /// What `requested` (relative to the root) names now. Refuses absolute paths, `..`,
    /// symlinks at any component, and anything that is not a regular file.
    pub fn resolve(&self, requested: &str) -> Result<Lookup, SandboxError> {
        let path = RelativePath::parse(requested)?;
        let Some(parent) = self.open_parent(&path)? else {
            return Ok(Lookup::Missing(path));
        };
        match fs::statat(&parent, path.leaf(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => {
                let identity = regular_file(&path, &stat)?;
                Ok(Lookup::File(Entry { path, identity }))
            }
            Err(Errno::NOENT) => Ok(Lookup::Missing(path)),
            Err(errno) => Err(SandboxError::failed(&path, "look up", errno)),
        }
    }

    /// Removes the pinned file if the entry at its path is still the file that was resolved:
    /// the parent is opened beneath the root without following symlinks, the entry is
    /// `fstatat`ed without following symlinks, its identity compared, and the name unlinked
    /// relative to that parent. Returns the entry as it was just before removal.
    pub fn remove(&self, pin: &Pin) -> Result<Entry, SandboxError> {
        let path = &pin.path;
        let gone = || {
            SandboxError::changed(format!(
                "`{path}` is gone since the user confirmed; nothing was deleted. Call the tool \
                 again if another file should be deleted."
            ))
        };
        let Some(parent) = self.open_parent(path)? else {
            return Err(gone());
        };
        let stat = match fs::statat(&parent, path.leaf(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(Errno::NOENT) => return Err(gone()),
            Err(errno) => return Err(SandboxError::failed(path, "look up", errno)),
        };
        // A file whose last name another remover is unlinking right now has no links left.
        if stat.st_nlink == 0 {
            return Err(gone());
        }
        let identity = regular_file(path, &stat).map_err(|refused| {
            SandboxError::changed(format!(
                "{refused} It was a regular file when the user confirmed; nothing was deleted."
            ))
        })?;
        if identity.digest() != pin.digest {
            // Another remover's unlink in flight changes the change time just before the name
            // goes: look once more, so that case reads as gone rather than as modified.
            let again = fs::statat(&parent, path.leaf(), AtFlags::SYMLINK_NOFOLLOW);
            if matches!(again, Err(Errno::NOENT) | Ok(fs::Stat { st_nlink: 0, .. })) {
                return Err(gone());
            }
            return Err(SandboxError::changed(format!(
                "`{path}` was replaced or modified after the user confirmed; nothing was \
                 deleted. Call the tool again to show the user the file as it is now."
            )));
        }
        match fs::unlinkat(&parent, path.leaf(), AtFlags::empty()) {
            Ok(()) => Ok(Entry {
                path: path.clone(),
                identity,
            }),
            Err(Errno::NOENT) => Err(gone()),
            Err(errno) => Err(SandboxError::failed(path, "delete", errno)),
        }
    }

    /// The directory that holds `path`'s last component, opened beneath the root with no
    /// symlink at any step; `None` if a directory on the way does not exist.
    fn open_parent(&self, path: &RelativePath) -> Result<Option<OwnedFd>, SandboxError> {
        let dirs = path.dirs();
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            use rustix::fs::ResolveFlags;
            let joined = if dirs.is_empty() {
                ".".to_owned()
            } else {
                dirs.join("/")
            };
            let opened = fs::openat2(
                self.root.as_fd(),
                joined.as_str(),
                dir_flags(),
                Mode::empty(),
                ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
            );
            if let Ok(dir) = opened {
                return Ok(Some(dir));
            }
            // No openat2 (an old kernel, a seccomp filter), a symlink or a non-directory on
            // the way, or a concurrent rename (EAGAIN): the walk below opens one plain name
            // at a time and says which component is wrong.
        }
        self.walk(path, dirs)
    }

    /// Opens `dirs` one plain name at a time, each relative to the previous directory and
    /// with `O_NOFOLLOW`, so no step can leave the root or follow a link.
    fn walk(&self, path: &RelativePath, dirs: &[String]) -> Result<Option<OwnedFd>, SandboxError> {
        let mut dir = fs::openat(self.root.as_fd(), ".", dir_flags(), Mode::empty())
            .map_err(|errno| SandboxError::failed(path, "open the directory of", errno))?;
        for (depth, name) in dirs.iter().enumerate() {
            let so_far = dirs[..=depth].join("/");
            match fs::openat(&dir, name.as_str(), dir_flags(), Mode::empty()) {
                Ok(next) => {
                    let is_dir = fs::fstat(&next)
                        .map(|s| FileType::from_raw_mode(s.st_mode) == FileType::Directory)
                        .unwrap_or(false);
                    if !is_dir {
                        return Err(not_a_directory(path, &so_far, "is not a directory"));
                    }
                    dir = next;
                }
                Err(Errno::NOENT) => return Ok(None),
                Err(errno @ (Errno::LOOP | Errno::NOTDIR)) => {
                    let what = match fs::statat(&dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(s) if FileType::from_raw_mode(s.st_mode) == FileType::Symlink => {
                            "is a symbolic link, and symlinks are not followed inside the sandbox"
                        }
                        Ok(s) if FileType::from_raw_mode(s.st_mode) != FileType::Directory => {
                            "is not a directory"
                        }
                        Err(Errno::NOENT) => return Ok(None),
                        // A directory again: it was swapped while it was being opened.
                        Ok(_) => {
                            return Err(SandboxError::refused(format!(
                                "`{so_far}` (on the way to `{path}`) was replaced while it was \
                                 being opened; nothing was done. Try again once it stops \
                                 changing."
                            )));
                        }
                        Err(_) => {
                            return Err(SandboxError::failed(path, "open the directory of", errno));
                        }
                    };
                    return Err(not_a_directory(path, &so_far, what));
                }
                Err(errno) => {
                    return Err(SandboxError::failed(path, "open the directory of", errno));
                }
            }
        }
        Ok(Some(dir))
    }
}

/// Directories are opened only to be used as the base of `*at` calls: `O_PATH` where there
/// is one, so opening never blocks and never needs read permission.
fn dir_flags() -> OFlags {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let access = OFlags::PATH;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let access = OFlags::RDONLY;
    access | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

fn not_a_directory(path: &RelativePath, component: &str, what: &str) -> SandboxError {
    SandboxError::refused(format!(
        "`{component}` (on the way to `{path}`) {what}; name the file by its real path inside \
         the sandbox root."
    ))
}

/// The identity of `stat` if it describes a regular file; otherwise says what it is.
fn regular_file(path: &RelativePath, stat: &fs::Stat) -> Result<Identity, SandboxError> {
    let what = match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => return Ok(Identity::of(stat)),
        FileType::Symlink => "a symbolic link, and symlinks are not followed inside the sandbox",
        FileType::Directory => "a directory",
        FileType::Fifo => "a named pipe (FIFO)",
        FileType::Socket => "a socket",
        FileType::CharacterDevice | FileType::BlockDevice => "a device",
        _ => "not a regular file",
    };
    Err(SandboxError::refused(format!(
        "`{path}` is {what}; only regular files can be deleted."
    )))
}

impl Identity {
    // `Stat`'s field types differ between targets; every one fits in these.
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    fn of(stat: &fs::Stat) -> Self {
        Self {
            device: stat.st_dev as u64,
            inode: stat.st_ino as u64,
            size: stat.st_size as u64,
            modified: (stat.st_mtime as i64, stat.st_mtime_nsec as u64),
            changed: (stat.st_ctime as i64, stat.st_ctime_nsec as u64),
            links: stat.st_nlink as u64,
        }
    }

    /// The device number.
    pub fn device(&self) -> u64 {
        self.device
    }

    /// The inode number.
    pub fn inode(&self) -> u64 {
        self.inode
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Modification time: seconds and nanoseconds since the Unix epoch.
    pub fn modified(&self) -> (i64, u64) {
        self.modified
    }

    /// Status change time (`ctime`), which moves on every write, rename, link or chmod and
    /// cannot be set back by an unprivileged process.
    pub fn changed(&self) -> (i64, u64) {
        self.changed
    }

    /// How many names (hard links) the file has.
    pub fn links(&self) -> u64 {
        self.links
    }

    fn digest(&self) -> [u8; 16] {
        let mut hash = Sha256::new();
        hash.update(b"guard.sandbox.identity.v1");
        for n in [self.device, self.inode, self.size, self.modified.1] {
            hash.update(n.to_be_bytes());
        }
        hash.update(self.modified.0.to_be_bytes());
        hash.update(self.changed.0.to_be_bytes());
        hash.update(self.changed.1.to_be_bytes());
        hash.update(self.links.to_be_bytes());
        let mut digest = [0; 16];
        digest.copy_from_slice(&hash.finalize()[..16]);
        digest
    }
}

impl Entry {
    /// The path relative to the root.
    pub fn path(&self) -> &RelativePath {
        &self.path
    }

    /// The file's identity when it was resolved.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.identity.size
    }

    /// How many other names (hard links) the same data has: deleting this name keeps it.
    pub fn other_names(&self) -> u64 {
        self.identity.links.saturating_sub(1)
    }

    /// The pin [`Sandbox::remove`] takes: this path and this identity.
    pub fn pin(&self) -> Pin {
        Pin {
            path: self.path.clone(),
            digest: self.identity.digest(),
        }
    }
}

impl Pin {
    /// The path relative to the root.
    pub fn path(&self) -> &RelativePath {
        &self.path
    }
}

/// The longest name and path the kernel accepts (`NAME_MAX`, `PATH_MAX` less the NUL).
const NAME_MAX: usize = 255;
const PATH_MAX: usize = 4095;

const PIN_OPEN: &str = " [file ";

impl fmt::Display for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{PIN_OPEN}{}]",
            self.path,
            crate::canonical::hex(&self.digest)
        )
    }
}

impl FromStr for Pin {
    type Err = SandboxError;

    /// Reads a pin written by its `Display`; the path is checked like any requested path.
    fn from_str(text: &str) -> Result<Self, SandboxError> {
        let malformed = || {
            SandboxError::refused(
                "the confirmed target is not a file pin (`path [file <32 hex digits>]`); call \
                 the tool again to resolve the file afresh.",
            )
        };
        let (path, rest) = text.rsplit_once(PIN_OPEN).ok_or_else(malformed)?;
        let hex = rest.strip_suffix(']').ok_or_else(malformed)?;
        if hex.len() != 32 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(malformed());
        }
        let mut digest = [0; 16];
        for (i, byte) in digest.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| malformed())?;
        }
        Ok(Pin {
            path: RelativePath::parse(path)?,
            digest,
        })
    }
}

impl RelativePath {
    /// Checks and normalises a path the caller gave. The messages quote the caller's own
    /// text only when it is printable and relative.
    pub fn parse(requested: &str) -> Result<Self, SandboxError> {
        if requested.trim().is_empty() {
            return Err(SandboxError::refused(
                "the path is empty; name a file inside the sandbox, relative to its root (for \
                 example `reports/old.log`).",
            ));
        }
        if let Some((index, c)) = requested.char_indices().find(|&(_, c)| hidden(c)) {
            let at = requested[..index].chars().count() + 1;
            let what = if c == '\0' {
                "a NUL character".to_owned()
            } else {
                format!("an invisible or control character (U+{:04X})", c as u32)
            };
            return Err(SandboxError::refused(format!(
                "the path contains {what} at character {at}; name the file with visible \
                 characters only."
            )));
        }
        if requested.starts_with('/') {
            return Err(SandboxError::refused(
                "absolute paths are not accepted; name the file relative to the sandbox root \
                 (for example `reports/old.log`).",
            ));
        }
        let mut parts = Vec::new();
        for part in requested.split('/') {
            match part {
                "" | "." => {}
                long if long.len() > NAME_MAX => {
                    return Err(SandboxError::refused(format!(
                        "a name in the path is {} bytes long; file names are at most {NAME_MAX} \
                         bytes.",
                        long.len()
                    )));
                }
                ".." => {
                    return Err(SandboxError::refused(format!(
                        "`{requested}` contains `..`; name the file by its path inside the \
                         sandbox root, without `..`."
                    )));
                }
                name => parts.push(name.to_owned()),
            }
        }
        if parts.is_empty() {
            return Err(SandboxError::refused(format!(
                "`{requested}` names the sandbox root itself, not a file in it."
            )));
        }
        let path = Self { parts };
        if path.to_string().len() > PATH_MAX {
            return Err(SandboxError::refused(format!(
                "the path is longer than {PATH_MAX} bytes; name a file with a shorter path."
            )));
        }
        Ok(path)
    }

    fn dirs(&self) -> &[String] {
        &self.parts[..self.parts.len() - 1]
    }

    fn leaf(&self) -> &str {
        &self.parts[self.parts.len() - 1]
    }
}

impl fmt::Display for RelativePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.parts.join("/"))
    }
}

/// Characters a human cannot see in a path, or cannot tell from a plain one: controls
/// (NUL included), format characters (zero-width, bidirectional overrides, BOM, tags) and
/// spaces other than U+0020.
fn hidden(c: char) -> bool {
    c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{115F}'
                | '\u{1160}'
                | '\u{17B4}'
                | '\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{FFF9}'..='\u{FFFB}'
                | '\u{1D173}'..='\u{1D17A}'
                | '\u{E0000}'..='\u{E0FFF}'
        )
}

#[cfg(test)]
mod tests {
    use std::{
        os::unix::fs::symlink,
        path::PathBuf,
        time::{Duration, SystemTime},
    };

    use super::*;

    /// A temp directory with `root/` (the sandbox) and `outside/` next to it.
    struct World {
        _dir: tempfile::TempDir,
        base: PathBuf,
        root: PathBuf,
        outside: PathBuf,
        sandbox: Sandbox,
    }

    impl World {
        fn new() -> Self {
            let dir = tempfile::tempdir().expect("temp dir");
            let base = dir.path().canonicalize().expect("canonical temp dir");
            let root = base.join("root");
            let outside = base.join("outside");
            std::fs::create_dir_all(root.join("dir")).expect("root/dir");
            std::fs::create_dir_all(&outside).expect("outside");
            std::fs::write(root.join("dir/victim"), "inside\n").expect("inside victim");
            std::fs::write(root.join("top.txt"), "top\n").expect("top");
            std::fs::write(outside.join("victim"), "outside\n").expect("outside victim");
            let sandbox = Sandbox::open(&root).expect("sandbox opens");
            Self {
                _dir: dir,
                base,
                root,
                outside,
                sandbox,
            }
        }

        fn entry(&self, path: &str) -> Entry {
            match self.sandbox.resolve(path) {
                Ok(Lookup::File(entry)) => entry,
                other => panic!("{path}: expected a file, got {other:?}"),
            }
        }

        /// Asserts a refusal whose message names `needle` and no absolute location.
        #[track_caller]
        fn refused(&self, path: &str, needle: &str) -> SandboxError {
            let error = match self.sandbox.resolve(path) {
                Err(error) => error,
                Ok(other) => panic!("{path:?}: expected a refusal, got {other:?}"),
            };
            assert_eq!(error.kind(), ErrorKind::Refused, "{path:?}: {error}");
            assert!(error.message().contains(needle), "{path:?}: {error}");
            self.no_location(error.message());
            error
        }

        #[track_caller]
        fn no_location(&self, text: &str) {
            for location in [&self.base, &self.root, &self.outside] {
                assert!(
                    !text.contains(&*location.to_string_lossy()),
                    "{text:?} names {}",
                    location.display()
                );
            }
        }

        fn outside_intact(&self) {
            assert_eq!(
                std::fs::read_to_string(self.outside.join("victim"))
                    .ok()
                    .as_deref(),
                Some("outside\n"),
                "the file outside the root is untouched"
            );
        }
    }

    /// Rewrites `path` with `bytes` of the same length and sets its modification time back.
    fn rewrite_keeping_size_and_mtime(path: &Path, bytes: &str) {
        let before = std::fs::metadata(path).expect("metadata");
        assert_eq!(before.len(), bytes.len() as u64, "same size");
        std::fs::write(path, bytes).expect("rewrite");
        set_mtime(path, before.modified().expect("mtime"));
    }

    fn set_mtime(path: &Path, time: SystemTime) {
        std::fs::File::options()
            .write(true)
            .open(path)
            .and_then(|f| f.set_modified(time))
            .expect("set mtime");
    }

    #[test]
    fn resolves_a_file_to_its_identity_under_a_normalised_path() {
        let world = World::new();
        let entry = world.entry("./dir//victim");
        assert_eq!(entry.path().to_string(), "dir/victim");
        assert_eq!(entry.size(), "inside\n".len() as u64);
        assert_eq!(entry.other_names(), 0);
        let meta = std::fs::symlink_metadata(world.root.join("dir/victim")).expect("metadata");
        use std::os::unix::fs::MetadataExt;
        assert_eq!(entry.identity().inode(), meta.ino());
        assert_eq!(entry.identity().device(), meta.dev());
        assert_eq!(entry.identity().links(), 1);
        assert_eq!(
            entry.identity().changed(),
            (meta.ctime(), meta.ctime_nsec() as u64)
        );
        assert_eq!(world.entry("top.txt").path().to_string(), "top.txt");
    }

    #[test]
    fn a_missing_file_or_directory_is_missing() {
        let world = World::new();
        for path in ["nope.txt", "dir/nope", "no/such/dir/file"] {
            match world.sandbox.resolve(path) {
                Ok(Lookup::Missing(p)) => assert_eq!(p.to_string(), path),
                other => panic!("{path}: {other:?}"),
            }
        }
    }

    #[test]
    fn bad_spellings_are_refused_without_naming_the_root() {
        let world = World::new();
        world.refused("", "empty");
        world.refused("  ", "empty");
        world.refused(".", "root itself");
        world.refused("./", "root itself");
        world.refused("..", "`..`");
        world.refused("../outside/victim", "`..`");
        world.refused("dir/../../outside/victim", "`..`");
        world.refused("dir/..", "`..`");
        let absolute = world.outside.join("victim").display().to_string();
        world.refused(&absolute, "absolute");
        let inside_absolute = world.root.join("top.txt").display().to_string();
        world.refused(&inside_absolute, "absolute");
        world.refused("//top.txt", "absolute");
        world.refused("top.txt\0", "NUL character at character 8");
        world.refused("dir/victim\0/../../x", "NUL");
        world.refused("top\u{200B}.txt", "U+200B");
        world.refused("\u{202E}txt.pot", "U+202E");
        world.refused("top.txt\u{FEFF}", "U+FEFF");
        world.refused("top\u{00A0}txt", "U+00A0");
        world.refused("top\ntxt", "U+000A");
        world.refused("top\u{E0041}.txt", "U+E0041");
        world.refused(&"a".repeat(256), "at most 255");
        world.refused(&["d"; 2100].join("/"), "longer than 4095");
        world.outside_intact();
    }

    #[test]
    fn a_symlink_at_the_leaf_is_refused_wherever_it_points() {
        let world = World::new();
        symlink(world.outside.join("victim"), world.root.join("out")).expect("link out");
        symlink("top.txt", world.root.join("in")).expect("link in");
        symlink("dangling", world.root.join("dangling-link")).expect("dangling link");
        for link in ["out", "in", "dangling-link"] {
            world.refused(link, "symbolic link");
            assert!(std::fs::symlink_metadata(world.root.join(link)).is_ok());
        }
        world.outside_intact();
    }

    #[test]
    fn a_symlink_on_the_way_is_refused_and_named() {
        let world = World::new();
        symlink(&world.outside, world.root.join("escape")).expect("link to outside dir");
        symlink("dir", world.root.join("alias")).expect("link to inside dir");
        std::fs::create_dir(world.root.join("sub")).expect("sub");
        symlink(&world.outside, world.root.join("sub/deeper")).expect("nested link");
        let error = world.refused("escape/victim", "symbolic link");
        assert!(
            error
                .message()
                .starts_with("`escape` (on the way to `escape/victim`)")
        );
        world.refused("alias/victim", "`alias`");
        world.refused("sub/deeper/victim", "`sub/deeper`");
        world.outside_intact();
    }

    #[test]
    fn the_walk_alone_refuses_the_same_way() {
        let world = World::new();
        symlink(&world.outside, world.root.join("escape")).expect("link");
        let path = RelativePath::parse("escape/victim").expect("parses");
        let error = world.sandbox.walk(&path, path.dirs()).expect_err("refused");
        assert!(error.message().contains("symbolic link"), "{error}");
        let path = RelativePath::parse("dir/victim").expect("parses");
        let dir = world.sandbox.walk(&path, path.dirs()).expect("opens");
        assert!(dir.is_some());
        let path = RelativePath::parse("nope/victim").expect("parses");
        assert!(
            world
                .sandbox
                .walk(&path, path.dirs())
                .expect("no error")
                .is_none()
        );
        let path = RelativePath::parse("top.txt/victim").expect("parses");
        let error = world.sandbox.walk(&path, path.dirs()).expect_err("refused");
        assert!(error.message().contains("is not a directory"), "{error}");
    }

    #[test]
    fn fifos_directories_and_files_on_the_way_are_refused_without_blocking() {
        let world = World::new();
        fs::mkfifoat(
            fs::CWD,
            world.root.join("pipe").as_path(),
            Mode::from_raw_mode(0o600),
        )
        .expect("fifo");
        world.refused("pipe", "named pipe (FIFO)");
        world.refused(
            "pipe/x",
            "`pipe` (on the way to `pipe/x`) is not a directory",
        );
        world.refused("dir", "is a directory");
        world.refused(
            "top.txt/x",
            "`top.txt` (on the way to `top.txt/x`) is not a directory",
        );
        assert!(world.root.join("pipe").exists(), "the FIFO is left alone");
    }

    #[test]
    fn remove_deletes_the_resolved_file_only() {
        let world = World::new();
        let entry = world.entry("dir/victim");
        let removed = world.sandbox.remove(&entry.pin()).expect("removed");
        assert_eq!(removed, entry);
        assert!(!world.root.join("dir/victim").exists());
        assert!(world.root.join("top.txt").exists());
        world.outside_intact();
        let error = world.sandbox.remove(&entry.pin()).expect_err("gone");
        assert_eq!(error.kind(), ErrorKind::Changed);
        assert!(error.message().contains("is gone"), "{error}");
    }

    #[test]
    fn a_rewrite_keeping_size_and_mtime_is_a_change() {
        let world = World::new();
        let path = world.root.join("dir/victim");
        let entry = world.entry("dir/victim");
        rewrite_keeping_size_and_mtime(&path, "INSIDE\n");
        assert_eq!(world.entry("dir/victim").size(), entry.size());
        let error = world.sandbox.remove(&entry.pin()).expect_err("changed");
        assert_eq!(error.kind(), ErrorKind::Changed);
        assert!(error.message().contains("replaced or modified"), "{error}");
        world.no_location(error.message());
        assert_eq!(
            std::fs::read_to_string(&path).ok().as_deref(),
            Some("INSIDE\n")
        );
    }

    #[test]
    fn an_inode_swap_keeping_size_and_mtime_is_a_change() {
        let world = World::new();
        let path = world.root.join("dir/victim");
        let entry = world.entry("dir/victim");
        let mtime = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .expect("mtime");
        let twin = world.root.join("dir/twin");
        std::fs::write(&twin, "INSIDE\n").expect("twin");
        set_mtime(&twin, mtime);
        std::fs::rename(&twin, &path).expect("swap in the twin");
        let error = world.sandbox.remove(&entry.pin()).expect_err("changed");
        assert_eq!(error.kind(), ErrorKind::Changed);
        assert_eq!(
            std::fs::read_to_string(&path).ok().as_deref(),
            Some("INSIDE\n")
        );
    }

    #[test]
    fn a_leaf_turned_symlink_or_directory_is_a_change() {
        let world = World::new();
        let entry = world.entry("dir/victim");
        let path = world.root.join("dir/victim");
        std::fs::remove_file(&path).expect("remove");
        symlink(world.outside.join("victim"), &path).expect("link out");
        let error = world.sandbox.remove(&entry.pin()).expect_err("changed");
        assert_eq!(error.kind(), ErrorKind::Changed);
        assert!(error.message().contains("symbolic link"), "{error}");
        world.outside_intact();
        std::fs::remove_file(&path).expect("remove link");
        std::fs::create_dir(&path).expect("dir");
        let error = world.sandbox.remove(&entry.pin()).expect_err("changed");
        assert!(error.message().contains("a directory"), "{error}");
    }

    #[test]
    fn a_parent_turned_symlink_is_refused() {
        let world = World::new();
        let entry = world.entry("dir/victim");
        std::fs::rename(world.root.join("dir"), world.base.join("moved")).expect("move dir out");
        symlink(&world.outside, world.root.join("dir")).expect("dir is now a link out");
        let error = world.sandbox.remove(&entry.pin()).expect_err("refused");
        assert_eq!(error.kind(), ErrorKind::Refused, "{error}");
        world.outside_intact();
        assert!(world.base.join("moved/victim").exists());
    }

    #[test]
    fn hard_links_are_counted() {
        let world = World::new();
        std::fs::hard_link(world.root.join("top.txt"), world.root.join("dir/again")).expect("link");
        std::fs::hard_link(world.root.join("top.txt"), world.base.join("third")).expect("link");
        let entry = world.entry("top.txt");
        assert_eq!(entry.other_names(), 2);
        assert_eq!(entry.identity().links(), 3);
        world
            .sandbox
            .remove(&entry.pin())
            .expect("removed this name");
        assert_eq!(
            std::fs::read_to_string(world.root.join("dir/again"))
                .ok()
                .as_deref(),
            Some("top\n"),
            "the data stays under its other names"
        );
    }

    #[test]
    fn the_handle_outlives_a_renamed_root() {
        let world = World::new();
        let entry = world.entry("top.txt");
        let moved = world.base.join("moved-root");
        std::fs::rename(&world.root, &moved).expect("rename root");
        std::fs::create_dir_all(&world.root).expect("a new dir at the old path");
        std::fs::write(world.root.join("top.txt"), "top\n").expect("decoy");
        world.sandbox.remove(&entry.pin()).expect("removed");
        assert!(
            !moved.join("top.txt").exists(),
            "the opened root's file is gone"
        );
        assert!(
            world.root.join("top.txt").exists(),
            "the path's new file is not touched"
        );
    }

    #[test]
    fn pins_round_trip_and_malformed_pins_are_refused() {
        let world = World::new();
        std::fs::write(world.root.join("odd [file x]"), "odd\n").expect("odd name");
        for path in ["dir/victim", "odd [file x]"] {
            let pin = world.entry(path).pin();
            let text = pin.to_string();
            assert!(text.starts_with(&format!("{path} [file ")), "{text}");
            assert_eq!(text.parse::<Pin>().expect("parses"), pin);
        }
        let good = world.entry("top.txt").pin().to_string();
        let hex = &good[good.len() - 33..good.len() - 1];
        for bad in [
            "top.txt".to_owned(),
            format!("top.txt [file {}]", &hex[1..]),
            format!("top.txt [file {}]", hex.to_uppercase()),
            format!("top.txt [file {hex}"),
            format!("../x [file {hex}]"),
            format!("/etc/passwd [file {hex}]"),
        ] {
            let error = bad.parse::<Pin>().expect_err("malformed");
            assert_eq!(error.kind(), ErrorKind::Refused, "{bad}");
        }
        let wrong = format!("top.txt [file {}]", "0".repeat(32));
        let error = world
            .sandbox
            .remove(&wrong.parse().expect("well formed"))
            .expect_err("wrong identity");
        assert_eq!(error.kind(), ErrorKind::Changed);
        assert!(world.root.join("top.txt").exists());
    }

    #[test]
    fn errors_map_to_stable_codes() {
        let refused: ToolError = SandboxError::refused("x").into();
        assert_eq!(refused.code(), codes::INVALID_INPUT);
        let changed: ToolError = SandboxError::changed("x").into();
        assert_eq!(changed.code(), codes::STATE_CHANGED);
        let path = RelativePath::parse("a").expect("parses");
        let failed: ToolError = SandboxError::failed(&path, "delete", Errno::ACCESS).into();
        assert_eq!(failed.code(), codes::INTERNAL);
        assert!(
            !failed.message().contains("`a`"),
            "the detail goes to the log"
        );
    }

    #[test]
    fn two_removers_of_one_pin_delete_once() {
        let world = World::new();
        for round in 0..100 {
            std::fs::write(world.root.join("dir/victim"), "inside\n").expect("refill");
            let pin = world.entry("dir/victim").pin();
            let outcomes: Vec<_> = std::thread::scope(|scope| {
                let removers: Vec<_> = (0..2)
                    .map(|_| scope.spawn(|| world.sandbox.remove(&pin)))
                    .collect();
                removers
                    .into_iter()
                    .map(|r| r.join().expect("remover"))
                    .collect()
            });
            let removed = outcomes.iter().filter(|o| o.is_ok()).count();
            assert_eq!(removed, 1, "round {round}: {outcomes:?}");
            for outcome in &outcomes {
                if let Err(error) = outcome {
                    assert_eq!(error.kind(), ErrorKind::Changed, "round {round}: {error}");
                    assert!(error.message().contains("is gone"), "{error}");
                }
            }
        }
    }

    #[test]
    fn the_times_in_the_identity_move_with_a_touch() {
        let world = World::new();
        let path = world.root.join("top.txt");
        let before = world.entry("top.txt");
        set_mtime(&path, SystemTime::UNIX_EPOCH + Duration::from_secs(1));
        let after = world.entry("top.txt");
        assert_ne!(before.identity().modified(), after.identity().modified());
        assert_ne!(before.pin(), after.pin());
    }
}
