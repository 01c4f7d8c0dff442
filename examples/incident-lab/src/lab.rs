//! The lab's workspace: the shop database, the backup taken before the attack, and the
//! allowlist of the fixed server.

use std::path::{Path, PathBuf};

use rmcp_guard::ops::SqliteStore;

use crate::{backup, layers, shop};

/// The file that marks a directory as the lab's own, so a later run may clear it.
pub const MARKER: &str = ".incident-lab-workspace";

/// Files of one lab run, all inside one directory.
#[derive(Debug, Clone)]
pub struct Lab {
    pub dir: PathBuf,
    /// The live database the servers use.
    pub db: PathBuf,
    /// The copy taken before the attack.
    pub backup: PathBuf,
    /// The allowlist of [`layers::Shop`].
    pub allowlist: PathBuf,
    /// Where [`layers::Shop`] keeps its undo windows and audit log (`guard.db`): opened once,
    /// as one server process holds it.
    pub store: SqliteStore,
}

impl Lab {
    /// Recreates `dir` with a seeded database, a backup of it and the allowlist. A directory
    /// is cleared only if it is empty or an earlier lab run made it (it holds [`MARKER`]);
    /// any other directory is refused and left alone.
    pub fn prepare(dir: &Path) -> Result<Self, String> {
        if dir.exists() {
            let empty = std::fs::read_dir(dir)
                .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
                .next()
                .is_none();
            if !empty && !dir.join(MARKER).is_file() {
                return Err(format!(
                    "{} is not empty and is not an incident-lab workspace (no {MARKER} file), so it is left alone; pass a new or empty directory",
                    dir.display()
                ));
            }
            std::fs::remove_dir_all(dir)
                .map_err(|e| format!("cannot clear {}: {e}", dir.display()))?;
        }
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        std::fs::write(
            dir.join(MARKER),
            "incident-lab workspace: deleted and recreated on every run\n",
        )
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let store_path = dir.join("guard.db");
        let store = SqliteStore::open(&store_path)
            .map_err(|e| format!("cannot open {}: {e}", store_path.display()))?;
        let lab = Self {
            dir: dir.to_path_buf(),
            db: dir.join("shop.db"),
            backup: dir.join("shop-backup.db"),
            allowlist: dir.join("allowlist.toml"),
            store,
        };
        shop::create(&lab.db).map_err(|e| format!("cannot seed {}: {e}", lab.db.display()))?;
        backup::take(&lab.db, &lab.backup)
            .map_err(|e| format!("cannot back up {}: {e}", lab.db.display()))?;
        layers::write_allowlist(&lab.allowlist)
            .map_err(|e| format!("cannot write {}: {e}", lab.allowlist.display()))?;
        Ok(lab)
    }

    /// Puts the backup back over the live database.
    pub fn restore(&self) -> Result<(), String> {
        backup::restore(&self.backup, &self.db)
            .map_err(|e| format!("cannot restore {}: {e}", self.db.display()))
    }

    /// The live database as an outside observer sees it.
    pub fn snapshot(&self) -> Result<shop::Snapshot, String> {
        shop::Snapshot::open(&self.db)
            .map_err(|e| format!("cannot read {}: {e}", self.db.display()))
    }

    /// The orders in the backup: what "intact" means.
    pub fn seeded_orders(&self) -> Result<Vec<shop::Order>, String> {
        shop::Snapshot::open(&self.backup)
            .and_then(|s| s.orders())
            .map_err(|e| format!("cannot read {}: {e}", self.backup.display()))?
            .ok_or_else(|| "the backup has no orders table".to_owned())
    }

    /// The live orders, `None` when the table is gone.
    pub fn orders(&self) -> Result<Option<Vec<shop::Order>>, String> {
        self.snapshot()?
            .orders()
            .map_err(|e| format!("cannot read orders: {e}"))
    }

    /// The live `sqlite_master` table names, without the drop trash.
    pub fn tables(&self) -> Result<Vec<String>, String> {
        self.snapshot()?
            .tables()
            .map_err(|e| format!("cannot read sqlite_master: {e}"))
    }

    /// The live `sqlite_master` table names, the drop trash's included.
    pub fn all_tables(&self) -> Result<Vec<String>, String> {
        self.snapshot()?
            .all_tables()
            .map_err(|e| format!("cannot read sqlite_master: {e}"))
    }

    /// The backup's bytes: the undo scene shows it never needed them.
    pub fn backup_bytes(&self) -> Result<Vec<u8>, String> {
        std::fs::read(&self.backup)
            .map_err(|e| format!("cannot read {}: {e}", self.backup.display()))
    }
}
