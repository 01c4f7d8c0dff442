//! What the sandbox's unit tests share: a world with a file outside the root to escape to,
//! and ways to change a file behind the sandbox's back.

use std::{
    path::{Path, PathBuf},
    time::SystemTime,
};

use super::{Entry, ErrorKind, Lookup, Sandbox, SandboxError};

/// A temp directory with `root/` (the sandbox) and `outside/` next to it.
pub(super) struct World {
    _dir: tempfile::TempDir,
    pub(super) base: PathBuf,
    pub(super) root: PathBuf,
    pub(super) outside: PathBuf,
    pub(super) sandbox: Sandbox,
}

impl World {
    pub(super) fn new() -> Self {
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

    pub(super) fn entry(&self, path: &str) -> Entry {
        match self.sandbox.resolve(path) {
            Ok(Lookup::File(entry)) => entry,
            other => panic!("{path}: expected a file, got {other:?}"),
        }
    }

    /// Asserts a refusal whose message names `needle` and no absolute location.
    #[track_caller]
    pub(super) fn refused(&self, path: &str, needle: &str) -> SandboxError {
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
    pub(super) fn no_location(&self, text: &str) {
        for location in [&self.base, &self.root, &self.outside] {
            assert!(
                !text.contains(&*location.to_string_lossy()),
                "{text:?} names {}",
                location.display()
            );
        }
    }

    pub(super) fn outside_intact(&self) {
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
pub(super) fn rewrite_keeping_size_and_mtime(path: &Path, bytes: &str) {
    let before = std::fs::metadata(path).expect("metadata");
    assert_eq!(before.len(), bytes.len() as u64, "same size");
    std::fs::write(path, bytes).expect("rewrite");
    set_mtime(path, before.modified().expect("mtime"));
}

pub(super) fn set_mtime(path: &Path, time: SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(time))
        .expect("set mtime");
}
