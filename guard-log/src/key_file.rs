//! Signer keys in files of their own: the log's key, which signs its checkpoints, and a
//! witness's, which cosigns them. Whoever reads such a file can sign in its name, so a file
//! other users can read is refused, never used; a key made here is owner-only from the
//! moment it exists.

use std::path::Path;

use super::{CheckpointError, CheckpointSigner, WitnessSigner};
use crate::files::install_private;

impl CheckpointSigner {
    /// The log key in `path`: the `PRIVATE+KEY+` line `guard-audit keygen NAME --for log`
    /// prints first. Refused when other users can read the file.
    pub fn from_file(path: &Path) -> Result<Self, String> {
        read_key(path, "log", Self::parse)
    }

    /// The log key in `path`, made under `name` on first use (the directory 0700, the file
    /// 0600) and read back ever after.
    pub fn from_file_or_generate(path: &Path, name: &str) -> Result<Self, String> {
        let fresh = Self::generate(name).map_err(|e| e.to_string())?;
        install_private(path, &fresh.to_text())?;
        Self::from_file(path)
    }
}

impl WitnessSigner {
    /// The witness key in `path`: the `PRIVATE+KEY+` line `guard-audit keygen NAME --for
    /// witness` prints first. Refused when other users can read the file.
    pub fn from_file(path: &Path) -> Result<Self, String> {
        read_key(path, "witness", Self::parse)
    }

    /// The witness key in `path`, made under `name` on first use (the directory 0700, the
    /// file 0600) and read back ever after.
    pub fn from_file_or_generate(path: &Path, name: &str) -> Result<Self, String> {
        let fresh = Self::generate(name).map_err(|e| e.to_string())?;
        install_private(path, &fresh.to_text())?;
        Self::from_file(path)
    }
}

/// The `kind` (log or witness) key in `path`, read by `parse`.
fn read_key<T>(
    path: &Path,
    kind: &str,
    parse: fn(&str) -> Result<T, CheckpointError>,
) -> Result<T, String> {
    parse(&read_private(path, &format!("{kind} key"))?).map_err(|e| {
        format!(
            "{}: {e}; it must hold the PRIVATE+KEY+ line that `guard-audit keygen NAME --for {kind}` prints first",
            path.display()
        )
    })
}

/// The text of the key file `path`, unless other users can read it.
fn read_private(path: &Path, what: &str) -> Result<String, String> {
    let cannot = |e: std::io::Error| format!("cannot read the {what} {}: {e}", path.display());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .map_err(cannot)?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            return Err(format!(
                "the {what} {} is readable by other users (mode {:o}): whoever reads it can sign in its name; run `chmod 600 {}`",
                path.display(),
                mode & 0o777,
                path.display()
            ));
        }
    }
    std::fs::read_to_string(path).map_err(cannot)
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_key_is_made_owner_only_once_and_read_back_after() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys").join("log.key");
        let made = CheckpointSigner::from_file_or_generate(&path, "made").unwrap();
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        let again = CheckpointSigner::from_file_or_generate(&path, "other").unwrap();
        assert_eq!(again.verifier(), made.verifier(), "the first key is kept");

        let witness = dir.path().join("keys").join("witness.key");
        let w = WitnessSigner::from_file_or_generate(&witness, "w.example/1").unwrap();
        assert_eq!(
            WitnessSigner::from_file(&witness).unwrap().verifier(),
            w.verifier()
        );
    }

    #[test]
    fn a_key_other_users_can_read_or_of_the_wrong_kind_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.key");
        CheckpointSigner::from_file_or_generate(&path, "log").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let error = CheckpointSigner::from_file(&path).unwrap_err();
        assert!(
            error.contains("readable by other users") && error.contains("chmod 600"),
            "{error}"
        );

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let error = WitnessSigner::from_file(&path).unwrap_err();
        assert!(error.contains("--for witness"), "{error}");
        let missing = CheckpointSigner::from_file(&dir.path().join("none")).unwrap_err();
        assert!(missing.contains("cannot read the log key"), "{missing}");
    }
}
