//! The directory `delete_file` may touch, and the path rules that keep it inside.

use std::path::{Component, Path, PathBuf};

/// A canonical root directory. Every path the model names is resolved against it.
#[derive(Debug, Clone)]
pub struct Sandbox {
    root: PathBuf,
}

/// Where a requested path leads.
#[derive(Debug, PartialEq, Eq)]
pub enum Resolved {
    /// An existing regular file inside the root.
    File(PathBuf),
    /// Nothing at that path (inside the root).
    Missing(PathBuf),
}

impl Sandbox {
    /// Creates `root` if needed and pins its canonical form.
    pub fn new(root: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(root)?;
        Ok(Self {
            root: root.canonicalize()?,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves `requested`, refusing anything that leaves the root: `..`, absolute paths
    /// elsewhere, and symlinks that point out.
    pub fn resolve(&self, requested: &str) -> Result<Resolved, String> {
        let path = Path::new(requested);
        if requested.trim().is_empty() {
            return Err("the path is empty; name a file inside the sandbox".into());
        }
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(format!(
                "`{requested}` contains `..`; name the file by its path inside the sandbox root {}",
                self.root.display()
            ));
        }
        let joined = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.root.join(path)
        };
        if !joined.starts_with(&self.root) {
            return Err(format!(
                "`{requested}` is outside the sandbox root {}; only files inside it can be deleted",
                self.root.display()
            ));
        }
        match std::fs::symlink_metadata(&joined) {
            Err(_) => Ok(Resolved::Missing(joined)),
            Ok(_) => {
                let real = joined
                    .canonicalize()
                    .map_err(|e| format!("cannot resolve `{requested}`: {e}"))?;
                if !real.starts_with(&self.root) {
                    return Err(format!(
                        "`{requested}` is a symlink that leads outside the sandbox root {}; it will not be followed",
                        self.root.display()
                    ));
                }
                if !real.is_file() {
                    return Err(format!(
                        "`{requested}` is not a regular file; only files can be deleted"
                    ));
                }
                Ok(Resolved::File(real))
            }
        }
    }
}
