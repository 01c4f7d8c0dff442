//! Approver links dropped as files, for a deployment on one host: each link is written as
//! the webhook's JSON ([`super::webhook`]) into a directory the approvers' side reads (a
//! mail or chat relay, or the approvers themselves), and the requester's client never sees.
//!
//! The file appears whole or not at all (written beside it, synced, then renamed into
//! place), readable and writable by the server's user only (mode 0600), and is never
//! overwritten: its name is `<approver>-<approval id>.json`. The approver is the canonical
//! person ([`crate::person`]) with every byte but ASCII letters, digits, `.`, `_` and `-`
//! percent-encoded, so each person has a name of their own (`jörg` and `jürg` are
//! `j%C3%B6rg` and `j%C3%BCrg`); a long name keeps its first part and a digest of the whole.
//! Each delivery writes its own partial file and removes only that one, so two deliveries
//! never undo each other. The directory must exist, be a real directory (not a symlink),
//! and not be writable by other users, who could otherwise replace a link.

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
            file_name(&link.approver.user),
            link.approval_id
        );
        let path = self.dir.join(&name);
        // Unique to this delivery: a failed delivery removes its own partial file and never
        // one another delivery is writing.
        let partial = self
            .dir
            .join(format!(".{}.partial", uuid::Uuid::new_v4().simple()));
        let body = super::webhook::body(link).to_string();
        // A hard link fails when the name exists, so a link file is never replaced.
        let placed =
            write_new(&partial, body.as_bytes()).and_then(|()| std::fs::hard_link(&partial, &path));
        let _ = std::fs::remove_file(&partial);
        placed.map_err(|e| format!("cannot write {}: {e}", path.display()))?;
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

/// Longest encoded name kept whole; a longer one keeps this much and a digest of the whole,
/// which leaves the file name well inside the 255 bytes file systems allow.
const NAME_KEPT: usize = 96;

/// The approver's canonical name, one file name per person: ASCII letters, digits, `.`
/// (not leading), `_` and `-` as they are and every other byte as `%XX`, so no two people
/// share a name and none leaves the directory.
fn file_name(user: &str) -> String {
    let canonical = crate::person::canonical(user).unwrap_or_else(|_| user.to_owned());
    let mut encoded = String::new();
    for (i, byte) in canonical.bytes().enumerate() {
        let kept =
            byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-') || (byte == b'.' && i > 0);
        if kept {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    if encoded.len() <= NAME_KEPT {
        return encoded;
    }
    use sha2::Digest;
    let digest = sha2::Sha256::digest(canonical.as_bytes());
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("{}~{hex}", &encoded[..NAME_KEPT])
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
        assert_eq!(file_name("bob"), "bob");
        assert_eq!(file_name("../etc/passwd"), "%2E.%2Fetc%2Fpasswd");
        assert_eq!(file_name(".hidden"), "%2Ehidden");
        assert_eq!(file_name("j\u{f6}rg"), "j%C3%B6rg");
    }

    #[test]
    fn each_person_has_a_file_name_of_their_own() {
        let people = [
            "j\u{f6}rg",
            "j\u{fc}rg",
            "j_rg",
            "j%C3%B6rg",
            "\u{738b}\u{4f1f}",
            "\u{674e}\u{5a1c}",
            "a b",
            "a_b",
        ];
        let names: std::collections::BTreeSet<_> = people.iter().map(|p| file_name(p)).collect();
        assert_eq!(names.len(), people.len(), "{names:?}");
        // One person, two spellings: one name.
        assert_eq!(file_name("Jo\u{301}rg"), file_name("j\u{f3}rg"));
        let long_a = "\u{738b}".repeat(200) + "a";
        let long_b = "\u{738b}".repeat(200) + "b";
        assert_ne!(file_name(&long_a), file_name(&long_b));
        assert!(file_name(&long_a).len() < 140);
    }

    #[tokio::test]
    async fn look_alike_names_each_get_their_link_and_none_is_removed() {
        use crate::approval::Notifier;
        let dir = tempfile::tempdir().unwrap();
        let notifier = FileDropNotifier::new(dir.path()).unwrap();
        let people = [
            "j\u{f6}rg",
            "j\u{fc}rg",
            "\u{738b}\u{4f1f}",
            "\u{674e}\u{5a1c}",
        ];
        let links: Vec<_> = people.iter().map(|p| link(p)).collect();
        let (a, b, c, d) = tokio::join!(
            notifier.deliver(&links[0]),
            notifier.deliver(&links[1]),
            notifier.deliver(&links[2]),
            notifier.deliver(&links[3]),
        );
        for result in [a, b, c, d] {
            result.unwrap();
        }
        let mut files: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        files.sort();
        assert_eq!(
            files.len(),
            people.len(),
            "one file per approver, no partial left: {files:?}"
        );
        // A second delivery of one link is refused and leaves the first file as it was.
        let before = std::fs::read(
            dir.path()
                .join(format!("j%C3%B6rg-{}.json", links[0].approval_id)),
        )
        .unwrap();
        assert!(notifier.deliver(&links[0]).await.is_err());
        let after = std::fs::read(
            dir.path()
                .join(format!("j%C3%B6rg-{}.json", links[0].approval_id)),
        )
        .unwrap();
        assert_eq!(before, after);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), people.len());
    }

    fn link(approver: &str) -> ApproverLink {
        ApproverLink {
            approver: crate::identity::Identity::new("acme", approver, ["approve"]),
            url: url::Url::parse("http://127.0.0.1:1/approval/x").unwrap(),
            tool: "deploy_production",
            target: "web".into(),
            summary: "Deploy web".into(),
            requester: crate::person::Person::new("acme", "alice").unwrap(),
            approval_id: "ap-1".into(),
            expires_at: std::time::SystemTime::now(),
        }
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
