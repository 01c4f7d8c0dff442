//! Backups with SQLite's online backup API: page by page, consistent even while the source
//! is open elsewhere. The same API restores, copying the backup over the live file.

use std::{path::Path, time::Duration};

use rusqlite::{Connection, OpenFlags, backup::Backup};

/// Pages copied per step of the backup API.
const PAGES_PER_STEP: std::os::raw::c_int = 64;

/// Copies the database at `db` into a new file at `to` (replaced if it exists).
pub fn take(db: &Path, to: &Path) -> rusqlite::Result<()> {
    let src = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut dst = Connection::open(to)?;
    copy(&src, &mut dst)
}

/// Copies the backup at `from` over the database at `db`: every table comes back as it
/// was when the backup was taken, and anything created since is gone.
pub fn restore(from: &Path, db: &Path) -> rusqlite::Result<()> {
    let src = Connection::open_with_flags(from, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut dst = Connection::open(db)?;
    copy(&src, &mut dst)
}

fn copy(src: &Connection, dst: &mut Connection) -> rusqlite::Result<()> {
    Backup::new(src, dst)?.run_to_completion(PAGES_PER_STEP, Duration::ZERO, None)
}
