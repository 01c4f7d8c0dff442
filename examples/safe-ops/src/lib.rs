//! The safe-ops server as a library, so tests and benchmarks can run it in process.

#[cfg(feature = "approval")]
pub mod approval;
pub mod builds;
pub mod db;
#[cfg(feature = "demo")]
pub mod demo;
pub mod downloads;
pub mod grants;
pub mod identity;
pub mod log_writer;
pub mod logging;
#[cfg(feature = "demo")]
pub mod receiver;
pub mod sandbox;
pub mod server;
#[cfg(feature = "demo")]
pub mod visit;
#[cfg(feature = "demo")]
pub mod witnessed;

pub use server::SafeOps;

/// Creates `dir` and any missing parents as this user's alone (0700): the folders of the
/// database, the audit log and the stores, which hold names, paths, reasons and answers.
/// A folder that exists keeps its mode.
pub fn private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    let mut create = std::fs::DirBuilder::new();
    create.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut create, 0o700);
    create.create(dir)
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_new_data_folder_is_the_users_alone_and_an_old_one_keeps_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("share/safe-ops");
        super::private_dir(&data).unwrap();
        for folder in [dir.path().join("share"), data.clone()] {
            let mode = std::fs::metadata(&folder).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", folder.display());
        }
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o750)).unwrap();
        super::private_dir(&data).unwrap();
        let mode = std::fs::metadata(&data).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o750);
    }
}
