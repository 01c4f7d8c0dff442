//! A trash inside the root, for effects that can be undone: [`Sandbox::trash`] moves a
//! pinned file into it (one `renameat2` with `RENAME_NOREPLACE`, relative to the directory
//! handles just opened, after the same identity check as [`Sandbox::remove`]),
//! [`Sandbox::restore`] moves it back under its old name only if that name is free, and
//! [`Sandbox::purge`] deletes it for good. Renames keep the inode, so a restored file has
//! the same bytes, mode and owner.
//!
//! What tells that the copy in the trash was left alone is its change time (`ctime`),
//! recorded right after the move: any write, truncation, `chmod`, link or `utime` moves it,
//! and an unprivileged process cannot set it back, so a rewrite that keeps the size and
//! sets the modification time back is still seen. No digest of the content is kept: it
//! would cost a full read of every deleted file on delete and again on restore, and it
//! would only add a check against a privileged process, which can rewrite the operation
//! store as well.
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
    identity::{Entry, Pin, regular_file},
    path::{RelativePath, TRASH},
    root::Sandbox,
};

/// A file moved into the trash: where it was, its name in the trash, and what tells it
/// apart (device and inode, size, modification time, and its change time once it was in the
/// trash). What an undo of the move needs, as JSON.
///
/// A `Trashed` written before the change time was recorded (no `changed`) still reads, and
/// still restores on the identity it kept (device, inode, size, modification time): such a
/// window was opened with that promise and closes within its undo period.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trashed {
    path: String,
    name: String,
    device: u64,
    inode: u64,
    size: u64,
    modified: (i64, u64),
    #[serde(default)]
    changed: Option<(i64, u64)>,
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
            Ok(()) => {}
            Err(Errno::NOENT) => return Err(super::remove::gone(path)),
            Err(Errno::XDEV) => {
                return Err(SandboxError::refused(format!(
                    "`{path}` is on another filesystem than the sandbox's trash, so it cannot be moved there to stay undoable; nothing was deleted."
                )));
            }
            Err(errno) => return Err(SandboxError::failed(path, "move to the trash", errno)),
        }
        // The rename moved the change time; what it is now is what a restore compares.
        let moved = fs::statat(&trash, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|errno| SandboxError::failed(path, "read the trashed copy of", errno))?;
        let moved = regular_file(path, &moved)?;
        if (moved.device(), moved.inode()) != (identity.device(), identity.inode()) {
            return Err(SandboxError::changed(format!(
                "the trashed copy of `{path}` was replaced in the trash right after the move; it is left there for the operator."
            )));
        }
        Ok(Trashed {
            path: path.to_string(),
            name,
            device: identity.device(),
            inode: identity.inode(),
            size: identity.size(),
            modified: identity.modified(),
            changed: Some(moved.changed()),
        })
    }

    /// Moves a trashed file back to its path, if the directory is still there and nothing
    /// took the name since: a new file under it is never overwritten (`Changed`).
    pub fn restore(&self, trashed: &Trashed) -> Result<Entry, SandboxError> {
        let path = RelativePath::parse(&trashed.path)?;
        let trash = self.trash_dir(&path, false)?;
        match self.in_trash(&trash, trashed, &path)? {
            InTrash::Same => {}
            // A restore whose process died after its rename, before its window closed, left
            // the file back under its name: that file, and nothing else, is restored.
            InTrash::Gone => match self.back_in_place(trashed) {
                Some(entry) => return Ok(entry),
                None => {
                    return Err(SandboxError::lost(format!(
                        "the trashed copy of `{path}` is no longer in the trash; nothing was restored."
                    )));
                }
            },
            InTrash::Changed => {
                return Err(SandboxError::lost(format!(
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

    /// The file under the trashed file's old name, if it is the trashed file itself (same
    /// device, inode, size and modification time; a change time no earlier than the one
    /// recorded in the trash, as the rename back moves it).
    fn back_in_place(&self, trashed: &Trashed) -> Option<Entry> {
        let super::root::Lookup::File(entry) = self.resolve(&trashed.path).ok()? else {
            return None;
        };
        let now = entry.identity();
        let same = (now.device(), now.inode(), now.size(), now.modified())
            == (
                trashed.device,
                trashed.inode,
                trashed.size,
                trashed.modified,
            )
            && trashed
                .changed
                .is_none_or(|changed| now.changed() >= changed);
        same.then_some(entry)
    }

    /// Deletes a trashed file for good; one already gone is purged, and one changed in the
    /// trash is not this window's to delete: it is left for the operator (logged), and the
    /// window's purge is done.
    pub fn purge(&self, trashed: &Trashed) -> Result<(), SandboxError> {
        let path = RelativePath::parse(&trashed.path)?;
        let trash = match self.trash_dir(&path, false) {
            Ok(trash) => trash,
            // No trash at all: nothing left to purge.
            Err(e) if e.kind() == super::ErrorKind::Lost => return Ok(()),
            Err(e) => return Err(e),
        };
        match self.in_trash(&trash, trashed, &path)? {
            InTrash::Same => {}
            InTrash::Gone => return Ok(()),
            InTrash::Changed => {
                tracing::warn!(%path, name = %trashed.name, "the trashed copy was changed in the trash, so the purge leaves it for the operator");
                return Ok(());
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
            Err(Errno::NOENT) => Err(SandboxError::lost(format!(
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
            && (stat.st_mtime as i64, stat.st_mtime_nsec as u64) == trashed.modified
            && trashed
                .changed
                .is_none_or(|changed| (stat.st_ctime as i64, stat.st_ctime_nsec as u64) == changed);
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

#[cfg(test)]
mod tests {
    use crate::sandbox::{
        ErrorKind, Lookup, Trashed,
        path::TRASH,
        world::{World, rewrite_keeping_size_and_mtime},
    };

    /// Trashes `dir/victim`; its trashed copy's location.
    fn trash_victim(world: &World) -> (Trashed, std::path::PathBuf) {
        let trashed = world
            .sandbox
            .trash(&world.entry("dir/victim").pin())
            .expect("trashed");
        let copy = world.root.join(TRASH).join(&trashed.name);
        (trashed, copy)
    }

    #[test]
    fn a_copy_rewritten_in_the_trash_keeping_size_and_mtime_is_not_restored() {
        let world = World::new();
        let (trashed, copy) = trash_victim(&world);
        rewrite_keeping_size_and_mtime(&copy, "INSIDE\n");
        let error = world.sandbox.restore(&trashed).expect_err("changed");
        assert!(
            error.message().contains("was changed in the trash"),
            "{error}"
        );
        assert!(!world.root.join("dir/victim").exists(), "nothing restored");
        assert_eq!(error.kind(), ErrorKind::Lost);
        world
            .sandbox
            .purge(&trashed)
            .expect("the window's purge is done");
        assert_eq!(
            std::fs::read_to_string(&copy).ok().as_deref(),
            Some("INSIDE\n")
        );
    }

    #[test]
    fn a_window_recorded_without_the_change_time_still_restores() {
        let world = World::new();
        let (trashed, _) = trash_victim(&world);
        let mut old = serde_json::to_value(&trashed).expect("json");
        old.as_object_mut().expect("object").remove("changed");
        let old: Trashed = serde_json::from_value(old).expect("an old window still reads");
        assert_eq!(old.changed, None);
        let restored = world.sandbox.restore(&old).expect("restored");
        assert_eq!(restored.path().to_string(), "dir/victim");
        assert_eq!(
            std::fs::read_to_string(world.root.join("dir/victim"))
                .ok()
                .as_deref(),
            Some("inside\n")
        );
    }

    #[test]
    fn a_file_already_back_under_its_name_counts_as_restored() {
        let world = World::new();
        let (trashed, copy) = trash_victim(&world);
        // What a restore leaves when its process dies after the rename, before its commit.
        std::fs::rename(&copy, world.root.join("dir/victim")).expect("moved back");
        let restored = world.sandbox.restore(&trashed).expect("already restored");
        assert_eq!(restored.path().to_string(), "dir/victim");
        assert!(matches!(
            world.sandbox.resolve("dir/victim"),
            Ok(Lookup::File(_))
        ));
    }

    #[test]
    fn another_file_under_the_name_is_not_taken_for_the_restored_one() {
        let world = World::new();
        let (trashed, copy) = trash_victim(&world);
        std::fs::remove_file(&copy).expect("the copy goes");
        std::fs::write(world.root.join("dir/victim"), "inside\n").expect("a new file");
        let error = world.sandbox.restore(&trashed).expect_err("gone");
        assert_eq!(error.kind(), ErrorKind::Lost);
        assert!(
            error.message().contains("no longer in the trash"),
            "{error}"
        );
    }
}
