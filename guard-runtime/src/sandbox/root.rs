//! The root held open, and every path reached beneath it one directory handle at a time:
//! `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` where the kernel has it, otherwise
//! a walk of plain names with `O_NOFOLLOW`.

use std::{
    os::fd::{AsFd, OwnedFd},
    path::Path,
    sync::Arc,
};

use rustix::{
    fs::{self, AtFlags, FileType, Mode, OFlags},
    io::Errno,
};

use super::{
    error::SandboxError,
    identity::{Entry, regular_file},
    path::{RelativePath, RootNames},
};

/// A root directory, held open. Cloning shares the handle.
#[derive(Debug, Clone)]
pub struct Sandbox {
    pub(super) root: Arc<OwnedFd>,
    pub(super) names: Arc<RootNames>,
}

/// What a path inside the root names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// A regular file, with the identity it has now.
    File(Entry),
    /// Nothing by that name (or a directory on the way does not exist).
    Missing(RelativePath),
}

impl Sandbox {
    /// Opens the existing directory `root`. Only this call sees the root's location; from
    /// here on the sandbox acts through the handle, so renaming or replacing the root path
    /// later does not redirect it. The root's names (as given and as resolved now) are kept
    /// only to read an absolute path a caller gives as one inside the root.
    pub fn open(root: impl AsRef<Path>) -> std::io::Result<Self> {
        let handle = fs::open(
            root.as_ref(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Self {
            root: Arc::new(handle),
            names: Arc::new(RootNames::of(root.as_ref())),
        })
    }

    /// Creates `root` (and its parents) if needed, then opens it.
    pub fn create(root: impl AsRef<Path>) -> std::io::Result<Self> {
        std::fs::create_dir_all(root.as_ref())?;
        Self::open(root)
    }

    /// What `requested` names now: a path relative to the root, or an absolute one that
    /// begins with the root's name (the entry then carries the path relative to the root).
    /// Refuses any other absolute path without saying where the root is, `..`, symlinks at
    /// any component, and anything that is not a regular file.
    pub fn resolve(&self, requested: &str) -> Result<Lookup, SandboxError> {
        let path = RelativePath::parse_in(requested, &self.names)?;
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

    /// The directory that holds `path`'s last component, opened beneath the root with no
    /// symlink at any step; `None` if a directory on the way does not exist.
    pub(super) fn open_parent(&self, path: &RelativePath) -> Result<Option<OwnedFd>, SandboxError> {
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

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;
    use crate::sandbox::world::World;

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
}
