//! Removing a pinned file: only while the entry at its path is still the file the human
//! confirmed, and relative to the directory handle that was just opened.

use rustix::{
    fs::{self, AtFlags},
    io::Errno,
};

use std::os::fd::OwnedFd;

use super::{
    error::SandboxError,
    identity::{Entry, Identity, Pin, regular_file},
    path::RelativePath,
    root::Sandbox,
};

impl Sandbox {
    /// Removes the pinned file if the entry at its path is still the file that was resolved:
    /// the parent is opened beneath the root without following symlinks, the entry is
    /// `fstatat`ed without following symlinks, its identity compared, and the name unlinked
    /// relative to that parent. Returns the entry as it was just before removal.
    pub fn remove(&self, pin: &Pin) -> Result<Entry, SandboxError> {
        let (parent, identity) = self.pinned(pin)?;
        let path = &pin.path;
        match fs::unlinkat(&parent, path.leaf(), AtFlags::empty()) {
            Ok(()) => Ok(Entry {
                path: path.clone(),
                identity,
            }),
            Err(Errno::NOENT) => Err(gone(path)),
            Err(errno) => Err(SandboxError::failed(path, "delete", errno)),
        }
    }

    /// The parent directory of the pinned file, opened beneath the root, and the file's
    /// identity, if the entry at its path is still the file that was resolved.
    pub(super) fn pinned(&self, pin: &Pin) -> Result<(OwnedFd, Identity), SandboxError> {
        let path = &pin.path;
        let Some(parent) = self.open_parent(path)? else {
            return Err(gone(path));
        };
        let stat = match fs::statat(&parent, path.leaf(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(Errno::NOENT) => return Err(gone(path)),
            Err(errno) => return Err(SandboxError::failed(path, "look up", errno)),
        };
        // A file whose last name another remover is unlinking right now has no links left.
        if stat.st_nlink == 0 {
            return Err(gone(path));
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
                return Err(gone(path));
            }
            return Err(SandboxError::changed(format!(
                "`{path}` was replaced or modified after the user confirmed; nothing was \
                 deleted. Call the tool again to show the user the file as it is now."
            )));
        }
        Ok((parent, identity))
    }
}

/// The pinned file is no longer there.
pub(super) fn gone(path: &RelativePath) -> SandboxError {
    SandboxError::changed(format!(
        "`{path}` is gone since the user confirmed; nothing was deleted. Call the tool \
         again if another file should be deleted."
    ))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use crate::sandbox::{
        ErrorKind,
        world::{World, rewrite_keeping_size_and_mtime, set_mtime},
    };

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
}
