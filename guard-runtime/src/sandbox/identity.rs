//! What tells one file from another (device, inode, size, times, links), an [`Entry`]
//! that carries it from the lookup, and the [`Pin`] the re-check before an effect compares.

use std::{fmt, str::FromStr};

use rustix::fs::{self, FileType};
use sha2::{Digest, Sha256};

use super::{error::SandboxError, path::RelativePath};

/// A regular file inside the root, as it was when it was resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub(super) path: RelativePath,
    pub(super) identity: Identity,
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
/// [`Sandbox::remove`](super::Sandbox::remove) needs to act on exactly the file the human confirmed.
///
/// Written as `reports/old.log [file 0123…]` (32 hex digits).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pin {
    pub(super) path: RelativePath,
    pub(super) digest: [u8; 16],
}

/// The identity of `stat` if it describes a regular file; otherwise says what it is.
pub(super) fn regular_file(path: &RelativePath, stat: &fs::Stat) -> Result<Identity, SandboxError> {
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

    pub(super) fn digest(&self) -> [u8; 16] {
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

    /// The pin [`Sandbox::remove`](super::Sandbox::remove) takes: this path and this identity.
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

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::sandbox::{
        ErrorKind,
        world::{World, set_mtime},
    };

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
