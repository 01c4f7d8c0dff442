//! Approver links dropped as files, for a deployment on one host: each link is written as
//! the webhook's JSON ([`super::webhook`]) into a directory the approvers' side reads (a
//! mail or chat relay, or the approvers themselves), and the requester's client never sees.
//!
//! The file appears whole or not at all (written beside it, synced, then renamed into
//! place), readable and writable by the server's user only (mode 0600), and is never
//! overwritten: its name is `<approver>-<approval id>.json`, the approver spelled with
//! letters, digits, `.`, `_` and `-` only. The directory must exist, be a real directory
//! (not a symlink), and not be writable by other users, who could otherwise replace a link.

use std::{
    io::Write,
    path::{Path, PathBuf},
};

use super::{ApproverLink, delivery::Delivery};

/// Writes each approver link as a JSON file into a directory.
#[derive(Debug, Clone)]
pub struct FileDropNotifier {
    dir: PathBuf,
}

impl FileDropNotifier {
    /// Drops links into `dir`, which must exist and be writable by this user only.
    pub fn new(dir: impl Into<PathBuf>) -> Result<Self, String> {
        let dir = dir.into();
        let meta = std::fs::symlink_metadata(&dir).map_err(|e| {
            format!(
                "the link drop directory {} cannot be read ({e}); create it, owned by the server's user, mode 0700 or 0750",
                dir.display()
            )
        })?;
        if !meta.is_dir() {
            return Err(format!(
                "the link drop directory {} is not a directory (a symlink is refused too); name a real directory",
                dir.display()
            ));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            if meta.permissions().mode() & 0o022 != 0 {
                return Err(format!(
                    "the link drop directory {} is writable by other users, who could replace a link: chmod go-w it",
                    dir.display()
                ));
            }
        }
        Ok(Self { dir })
    }

    fn write(&self, link: &ApproverLink) -> Result<PathBuf, String> {
        let name = format!(
            "{}-{}.json",
            file_safe(&link.approver.user),
            link.approval_id
        );
        let path = self.dir.join(&name);
        let partial = self.dir.join(format!(".{name}.partial"));
        let body = super::webhook::body(link).to_string();
        write_new(&partial, body.as_bytes())
            .and_then(|()| {
                if path.exists() {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::AlreadyExists,
                        "a link file of that name already exists",
                    ));
                }
                std::fs::rename(&partial, &path)
            })
            .map_err(|e| {
                let _ = std::fs::remove_file(&partial);
                format!("cannot write {}: {e}", path.display())
            })?;
        Ok(path)
    }
}

fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// `user` with every character but ASCII letters, digits, `.`, `_` and `-` as `_`, and no
/// leading dot.
fn file_safe(user: &str) -> String {
    let safe: String = user
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    safe.trim_start_matches('.').to_owned()
}

impl super::Notifier for FileDropNotifier {
    fn channel(&self) -> String {
        format!("file drop {}", self.dir.display())
    }

    fn deliver<'a>(&'a self, link: &'a ApproverLink) -> Delivery<'a> {
        Box::pin(async move {
            let notifier = self.clone();
            let link = link.clone();
            tokio::task::spawn_blocking(move || notifier.write(&link).map(drop))
                .await
                .map_err(|e| format!("the file writer stopped: {e}"))?
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_to_safe_characters() {
        assert_eq!(file_safe("bob"), "bob");
        assert_eq!(file_safe("../etc/passwd"), "_etc_passwd");
        assert_eq!(file_safe(".hidden"), "hidden");
        assert_eq!(file_safe("j\u{f6}rg"), "j_rg");
    }

    #[test]
    fn a_directory_others_may_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = FileDropNotifier::new(dir.path()).unwrap_err();
        assert!(err.contains("writable by other users"), "{err}");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(FileDropNotifier::new(dir.path()).is_ok());
        assert!(FileDropNotifier::new(dir.path().join("missing")).is_err());
    }
}
