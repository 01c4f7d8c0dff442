//! A trash inside the root, for effects that can be undone: [`Sandbox::trash`] moves a
//! pinned file into it (one `renameat2` with `RENAME_NOREPLACE`, relative to the directory
//! handles just opened, after the same identity check as [`Sandbox::remove`]),
//! [`Sandbox::restore`] moves it back under its old name only if that name is free, and
//! [`Sandbox::purge`] deletes it for good. Renames keep the inode, so a restored file has
//! the same bytes, mode and owner.
//!
//! The trash is the root's directory [`TRASH`]. Paths and globs never reach it: a path whose
//! first component is that name is refused, and globs do not match it, so no tool that
//! takes a path can read, delete or overwrite what waits there.

use std::os::fd::{AsFd, OwnedFd};

use rustix::{
    fs::{self, AtFlags, FileType, Mode, OFlags, RenameFlags},
    io::Errno,
};
use serde::{Deserialize, Serialize};

use super::{
    error::SandboxError,
    identity::{Entry, Pin},
    path::{RelativePath, TRASH},
    root::Sandbox,
};

/// A file moved into the trash: where it was, its name in the trash, and what tells it
/// apart (device and inode, size and modification time; a rename changes its change time
/// only). What an undo of the move needs, as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trashed {
    path: String,
    name: String,
    device: u64,
    inode: u64,
    size: u64,
    modified: (i64, u64),
}

impl Trashed {
    /// The path the file had (relative to the root), and gets back on restore.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Its size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }
}

impl Sandbox {
    /// Moves the pinned file into the trash if the entry at its path is still the file
    /// that was resolved. Returns what [`restore`](Self::restore) and
    /// [`purge`](Self::purge) take.
    pub fn trash(&self, pin: &Pin) -> Result<Trashed, SandboxError> {
        let (parent, identity) = self.pinned(pin)?;
        let path = &pin.path;
        let trash = self.trash_dir(path, true)?;
        let mut random = [0u8; 16];
        getrandom::fill(&mut random).map_err(|e| {
            SandboxError::refused(format!(
                "no random name for the trash ({e}); nothing was deleted."
            ))
        })?;
        let name = crate::canonical::hex(&random);
        match fs::renameat_with(
            &parent,
            path.leaf(),
            &trash,
            name.as_str(),
            RenameFlags::NOREPLACE,
        ) {
            Ok(()) => Ok(Trashed {
                path: path.to_string(),
                name,
                device: identity.device(),
                inode: identity.inode(),
                size: identity.size(),
                modified: identity.modified(),
            }),
            Err(Errno::NOENT) => Err(super::remove::gone(path)),
            Err(Errno::XDEV) => Err(SandboxError::refused(format!(
                "`{path}` is on another filesystem than the sandbox's trash, so it cannot be moved there to stay undoable; nothing was deleted."
            ))),
            Err(errno) => Err(SandboxError::failed(path, "move to the trash", errno)),
        }
    }

    /// Moves a trashed file back to its path, if the directory is still there and nothing
    /// took the name since: a new file under it is never overwritten (`Changed`).
    pub fn restore(&self, trashed: &Trashed) -> Result<Entry, SandboxError> {
        let path = RelativePath::parse(&trashed.path)?;
        let trash = self.trash_dir(&path, false)?;
        match self.in_trash(&trash, trashed, &path)? {
            InTrash::Same => {}
            InTrash::Gone => {
                return Err(SandboxError::changed(format!(
                    "the trashed copy of `{path}` is no longer in the trash; nothing was restored."
                )));
            }
            InTrash::Changed => {
                return Err(SandboxError::changed(format!(
                    "the trashed copy of `{path}` was changed in the trash; nothing was restored."
                )));
            }
        }
        let Some(parent) = self.open_parent(&path)? else {
            return Err(SandboxError::changed(format!(
                "the directory of `{path}` is gone since the file was deleted; nothing was restored. Create the directory again, then undo."
            )));
        };
        match fs::renameat_with(
            &trash,
            trashed.name.as_str(),
            &parent,
            path.leaf(),
            RenameFlags::NOREPLACE,
        ) {
            Ok(()) => {}
            Err(Errno::EXIST) => {
                return Err(SandboxError::changed(format!(
                    "`{path}` exists again since the file was deleted, so restoring it would overwrite the new file; nothing was restored. Move the new file away, then undo."
                )));
            }
            Err(errno) => return Err(SandboxError::failed(&path, "restore", errno)),
        }
        match self.resolve(&trashed.path)? {
            super::root::Lookup::File(entry) => Ok(entry),
            super::root::Lookup::Missing(path) => Err(SandboxError::changed(format!(
                "`{path}` was moved away right after it was restored."
            ))),
        }
    }

    /// Deletes a trashed file for good; one already gone is purged.
    pub fn purge(&self, trashed: &Trashed) -> Result<(), SandboxError> {
        let path = RelativePath::parse(&trashed.path)?;
        let trash = match self.trash_dir(&path, false) {
            Ok(trash) => trash,
            // No trash at all: nothing left to purge.
            Err(e) if e.kind() == super::ErrorKind::Changed => return Ok(()),
            Err(e) => return Err(e),
        };
        match self.in_trash(&trash, trashed, &path)? {
            InTrash::Same => {}
            InTrash::Gone => return Ok(()),
            // Not the file that was trashed: not this window's to delete.
            InTrash::Changed => {
                return Err(SandboxError::refused(format!(
                    "the trashed copy of `{path}` was changed in the trash; it is left for the operator."
                )));
            }
        }
        match fs::unlinkat(&trash, trashed.name.as_str(), AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(errno) => Err(SandboxError::failed(
                &path,
                "purge the trashed copy of",
                errno,
            )),
        }
    }

    /// The trash directory, opened beneath the root without following a symlink; created
    /// (owner-only) if `create`.
    fn trash_dir(&self, path: &RelativePath, create: bool) -> Result<OwnedFd, SandboxError> {
        if create {
            match fs::mkdirat(self.root.as_fd(), TRASH, Mode::RWXU) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(errno) => return Err(SandboxError::failed(path, "make the trash for", errno)),
            }
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        match fs::openat(self.root.as_fd(), TRASH, flags, Mode::empty()) {
            Ok(dir) => Ok(dir),
            Err(Errno::NOENT) => Err(SandboxError::changed(format!(
                "the trashed copy of `{path}` is no longer in the trash; nothing was restored."
            ))),
            Err(Errno::LOOP | Errno::NOTDIR) => Err(SandboxError::refused(format!(
                "the sandbox's trash `{TRASH}` is not a plain directory (a symlink or a file took its name); nothing was moved. The operator must remove it."
            ))),
            Err(errno) => Err(SandboxError::failed(path, "open the trash for", errno)),
        }
    }

    /// Whether the trashed file is still the one that was moved there.
    fn in_trash(
        &self,
        trash: &OwnedFd,
        trashed: &Trashed,
        path: &RelativePath,
    ) -> Result<InTrash, SandboxError> {
        let stat = match fs::statat(trash, trashed.name.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(Errno::NOENT) => return Ok(InTrash::Gone),
            Err(errno) => {
                return Err(SandboxError::failed(
                    path,
                    "look up the trashed copy of",
                    errno,
                ));
            }
        };
        #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
        let same = FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile
            && stat.st_dev as u64 == trashed.device
            && stat.st_ino as u64 == trashed.inode
            && stat.st_size as u64 == trashed.size
            && (stat.st_mtime as i64, stat.st_mtime_nsec as u64) == trashed.modified;
        Ok(if same {
            InTrash::Same
        } else {
            InTrash::Changed
        })
    }
}

/// What is in the trash under a trashed file's name.
enum InTrash {
    /// The file that was moved there.
    Same,
    /// Nothing.
    Gone,
    /// Something else, or the file changed.
    Changed,
}
