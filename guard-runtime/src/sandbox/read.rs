//! Reading a file beneath the root: opened relative to its directory's handle with
//! `O_NOFOLLOW`, checked to be a regular file on the open descriptor, and read from that
//! descriptor, so what is read is the file the identity names.

use std::io::Read;

use rustix::{
    fs::{self, FileType, Mode, OFlags},
    io::Errno,
};

use super::{
    error::SandboxError,
    identity::{Entry, regular_file},
    path::RelativePath,
    root::{Lookup, Sandbox},
};

impl Sandbox {
    /// What `requested` names now and, for a regular file, its first `limit` bytes (and
    /// whether there were more). The same paths as [`Sandbox::resolve`] are refused: other
    /// absolute paths, `..`, symlinks at any component, and anything but a regular file.
    pub fn read(
        &self,
        requested: &str,
        limit: u64,
    ) -> Result<(Lookup, Vec<u8>, bool), SandboxError> {
        let path = RelativePath::parse_in(requested, &self.names)?;
        let Some(parent) = self.open_parent(&path)? else {
            return Ok((Lookup::Missing(path), Vec::new(), false));
        };
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let file = match fs::openat(&parent, path.leaf(), flags, Mode::empty()) {
            Ok(file) => file,
            Err(Errno::NOENT) => return Ok((Lookup::Missing(path), Vec::new(), false)),
            Err(Errno::LOOP) => {
                return Err(SandboxError::refused(format!(
                    "`{path}` is a symbolic link, and symlinks are not followed inside the sandbox."
                )));
            }
            Err(errno) => return Err(SandboxError::failed(&path, "open", errno)),
        };
        let stat =
            fs::fstat(&file).map_err(|errno| SandboxError::failed(&path, "look up", errno))?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(SandboxError::refused(format!(
                "`{path}` is not a regular file; only regular files can be read."
            )));
        }
        let identity = regular_file(&path, &stat)?;
        let mut bytes = Vec::new();
        let mut file = std::fs::File::from(file).take(limit.saturating_add(1));
        file.read_to_end(&mut bytes).map_err(|e| {
            SandboxError::failed(&path, "read", Errno::from_io_error(&e).unwrap_or(Errno::IO))
        })?;
        let more = bytes.len() as u64 > limit;
        bytes.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        Ok((Lookup::File(Entry { path, identity }), bytes, more))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;
    use crate::sandbox::{ErrorKind, world::World};

    #[test]
    fn reads_a_file_with_its_identity_and_stops_at_the_limit() {
        let world = World::new();
        let (lookup, bytes, more) = world.sandbox.read("dir/victim", 100).expect("read");
        assert!(matches!(lookup, Lookup::File(e) if e.path().to_string() == "dir/victim"));
        assert_eq!(bytes, b"inside\n");
        assert!(!more);
        let (_, bytes, more) = world.sandbox.read("dir/victim", 3).expect("read");
        assert_eq!(bytes, b"ins");
        assert!(more);
        let (lookup, _, _) = world.sandbox.read("dir/nope", 3).expect("missing");
        assert!(matches!(lookup, Lookup::Missing(_)));
    }

    #[test]
    fn a_symlink_or_a_path_outside_is_never_read() {
        let world = World::new();
        symlink(world.outside.join("victim"), world.root.join("out")).expect("link out");
        symlink(&world.outside, world.root.join("outdir")).expect("link dir");
        for path in ["out", "outdir/victim", "../outside/victim", "dir"] {
            let error = world.sandbox.read(path, 100).expect_err(path);
            assert_eq!(error.kind(), ErrorKind::Refused, "{path}: {error}");
            assert!(!error.message().contains("outside\n"), "{path}: {error}");
        }
    }
}
