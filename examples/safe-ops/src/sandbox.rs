//! The directory `delete_file` and `delete_files` may touch. The root is opened once as a
//! directory handle ([`rmcp_guard::sandbox::Sandbox`]); every lookup, every glob and the
//! delete itself go through that handle, never through a path string walked again from the
//! root.

use std::path::{Path, PathBuf};

use rmcp_guard::sandbox::{Entry, Lookup, Pin, SandboxError, Trashed};

/// The sandbox root: its handle for the tools, its location for the operator's log only.
#[derive(Debug, Clone)]
pub struct Sandbox {
    root: PathBuf,
    files: rmcp_guard::sandbox::Sandbox,
}

impl Sandbox {
    /// Creates `root` if needed and opens it.
    pub fn new(root: &Path) -> std::io::Result<Self> {
        let files = rmcp_guard::sandbox::Sandbox::create(root)?;
        Ok(Self {
            root: root.canonicalize()?,
            files,
        })
    }

    /// Opens `root`, which must exist: read-only mode creates nothing.
    pub fn existing(root: &Path) -> std::io::Result<Self> {
        let files = rmcp_guard::sandbox::Sandbox::open(root)?;
        Ok(Self {
            root: root.canonicalize()?,
            files,
        })
    }

    /// Where the root was when the server started, for the operator's log. Never put it in
    /// text the model sees: tools name files relative to the root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// What `requested` (relative to the root, or absolute beneath it) names now; refuses
    /// other absolute paths, `..`, symlinks at any component and anything that is not a
    /// regular file.
    pub fn resolve(&self, requested: &str) -> Result<Lookup, SandboxError> {
        self.files.resolve(requested)
    }

    /// The regular files `pattern` (a glob relative to the root) matches, never through a
    /// symlink.
    pub fn find(&self, pattern: &str) -> Result<Vec<Entry>, SandboxError> {
        self.files.find(pattern)
    }

    /// What `requested` names now and, for a regular file, its first `limit` bytes (and
    /// whether there were more), read through the handle of its directory.
    pub fn read(
        &self,
        requested: &str,
        limit: u64,
    ) -> Result<(Lookup, Vec<u8>, bool), SandboxError> {
        self.files.read(requested, limit)
    }

    /// Deletes the pinned file if it is still that file, relative to its parent directory.
    pub fn remove(&self, pin: &Pin) -> Result<Entry, SandboxError> {
        self.files.remove(pin)
    }

    /// Moves the pinned file into the sandbox's trash if it is still that file; no tool
    /// reaches the trash by a path or a glob.
    pub fn trash(&self, pin: &Pin) -> Result<Trashed, SandboxError> {
        self.files.trash(pin)
    }

    /// Moves a trashed file back, never over a file that took its name since.
    pub fn restore(&self, trashed: &Trashed) -> Result<Entry, SandboxError> {
        self.files.restore(trashed)
    }

    /// Deletes a trashed file for good.
    pub fn purge(&self, trashed: &Trashed) -> Result<(), SandboxError> {
        self.files.purge(trashed)
    }
}
