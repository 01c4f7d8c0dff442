//! Per-user directories for an installed server's files, following the XDG base directory
//! specification, so a server started by an MCP client keeps its database and allowlist in
//! one stated place, not in whatever directory the client happened to start it from.
//!
//! - data: `$XDG_DATA_HOME/<app>`, else `$HOME/.local/share/<app>`;
//! - configuration: `$XDG_CONFIG_HOME/<app>`, else `$HOME/.config/<app>`.
//!
//! A relative `XDG_*` value is ignored, as the specification requires.
//!
//! ```
//! use rmcp_guard::user_dirs::{UserDirs, install_default};
//!
//! # let home = std::env::temp_dir().join(format!("rmcp-guard-doc-home-{}", std::process::id()));
//! let dirs = UserDirs::from_lookup("notes", |name| match name {
//!     "HOME" => Some(home.clone().into_os_string()),
//!     _ => None,
//! })?;
//! assert_eq!(dirs.config(), home.join(".config/notes"));
//!
//! // The shipped allowlist is copied on first start and never overwritten after.
//! let allowlist = dirs.config().join("allowlist.toml");
//! assert!(install_default(&allowlist, "tools = [\"list_notes\"]\n")?);
//! assert!(!install_default(&allowlist, "tools = []\n")?);
//! assert_eq!(std::fs::read_to_string(&allowlist)?, "tools = [\"list_notes\"]\n");
//! # std::fs::remove_dir_all(&home)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
};

pub use rmcp_guard_log::files::{install_default, install_private};

/// The data and configuration directories of one application, for the current user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserDirs {
    data: PathBuf,
    config: PathBuf,
}

impl UserDirs {
    /// The directories of `app` from the process environment.
    pub fn new(app: &str) -> Result<Self, String> {
        Self::from_lookup(app, |name| std::env::var_os(name))
    }

    /// Like [`UserDirs::new`], reading variables through `lookup`.
    pub fn from_lookup(
        app: &str,
        lookup: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Self, String> {
        let absolute = |name: &str| {
            lookup(name)
                .map(PathBuf::from)
                .filter(|path| path.is_absolute())
        };
        let home = absolute("HOME");
        let base = |xdg: &str, under_home: &str| {
            absolute(xdg)
                .or_else(|| home.as_ref().map(|home| home.join(under_home)))
                .ok_or_else(|| {
                    format!(
                        "cannot tell where {app} keeps its files: neither {xdg} nor HOME is set to an absolute path; set one of them, or name the files with the command-line options"
                    )
                })
        };
        Ok(Self {
            data: base("XDG_DATA_HOME", ".local/share")?.join(app),
            config: base("XDG_CONFIG_HOME", ".config")?.join(app),
        })
    }

    /// Where the application keeps its data (databases, sandboxes).
    pub fn data(&self) -> &Path {
        &self.data
    }

    /// Where the application keeps its configuration (the allowlist).
    pub fn config(&self) -> &Path {
        &self.config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs(vars: &[(&str, &str)]) -> Result<UserDirs, String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        UserDirs::from_lookup("app", move |name| {
            vars.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| OsString::from(v))
        })
    }

    #[test]
    fn xdg_variables_come_before_home() {
        let d = dirs(&[
            ("HOME", "/home/a"),
            ("XDG_DATA_HOME", "/d"),
            ("XDG_CONFIG_HOME", "/c"),
        ])
        .unwrap();
        assert_eq!(d.data(), Path::new("/d/app"));
        assert_eq!(d.config(), Path::new("/c/app"));
        let d = dirs(&[("HOME", "/home/a")]).unwrap();
        assert_eq!(d.data(), Path::new("/home/a/.local/share/app"));
        assert_eq!(d.config(), Path::new("/home/a/.config/app"));
    }

    #[test]
    fn relative_values_are_ignored_and_nothing_usable_is_an_error() {
        let d = dirs(&[
            ("HOME", "/home/a"),
            ("XDG_DATA_HOME", "rel"),
            ("XDG_CONFIG_HOME", ""),
        ])
        .unwrap();
        assert_eq!(d.data(), Path::new("/home/a/.local/share/app"));
        assert_eq!(d.config(), Path::new("/home/a/.config/app"));
        let err = dirs(&[("HOME", "relative/home")]).unwrap_err();
        assert!(
            err.contains("XDG_DATA_HOME") && err.contains("HOME"),
            "{err}"
        );
        assert!(dirs(&[]).is_err());
        // Configuration alone is not enough for data.
        assert!(dirs(&[("XDG_CONFIG_HOME", "/c")]).is_err());
    }

    #[test]
    fn a_default_is_installed_once_and_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/app/allowlist.toml");
        assert!(install_default(&path, "tools = [\"a\"]\n").unwrap());
        std::fs::write(&path, "tools = []\n").unwrap();
        assert!(!install_default(&path, "tools = [\"a\"]\n").unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "tools = []\n");
    }

    #[test]
    fn racing_installers_leave_one_whole_file_and_no_temporaries() {
        let contents = format!("tools = [{}]\n", vec!["\"a\""; 200_000].join(", "));
        for _ in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("allowlist.toml");
            let wrote: usize = std::thread::scope(|scope| {
                // A server starting meanwhile reads the list as soon as it exists: never a
                // part of it.
                let reader = scope.spawn(|| {
                    loop {
                        if let Ok(seen) = std::fs::read_to_string(&path) {
                            return seen.len();
                        }
                    }
                });
                let installers: Vec<_> = (0..4)
                    .map(|_| scope.spawn(|| install_default(&path, &contents).unwrap()))
                    .collect();
                let wrote = installers
                    .into_iter()
                    .map(|i| usize::from(i.join().unwrap()))
                    .sum();
                assert_eq!(
                    reader.join().unwrap(),
                    contents.len(),
                    "a reader saw a part"
                );
                wrote
            });
            assert_eq!(wrote, 1);
            assert_eq!(std::fs::read_to_string(&path).unwrap(), contents);
            let names: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(names, [std::ffi::OsString::from("allowlist.toml")]);
        }
    }

    #[test]
    fn a_directory_in_the_way_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "").unwrap();
        let err = install_default(&blocker.join("allowlist.toml"), "x").unwrap_err();
        assert!(err.contains(&blocker.display().to_string()), "{err}");
    }
}
