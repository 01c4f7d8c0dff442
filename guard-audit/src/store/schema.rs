//! What `guard-audit` refuses to read, without changing anything: a database without
//! guard's log, one at another schema version than the release it ships with, and one
//! holding a table a migration would fold in. It never migrates, so what it reports is what
//! the store holds.

use super::db::Db;

/// The schema version of guard's tables that this build reads: the server of the same
/// release writes it (its last schema step). The tests open stores that server made, at
/// its version, and edit the version either way to see them refused.
const VERSION: i64 = 18;

/// The audit table from before the log, which the server's migration folds into it and
/// drops.
const LEGACY_TABLE: &str = "guard_audit";

/// Refuses a store this build may not read as it stands.
pub(super) async fn check(db: &Db) -> Result<(), String> {
    let catalog = if db.is_postgres() {
        "SELECT tablename AS name FROM pg_catalog.pg_tables WHERE schemaname = current_schema()"
    } else {
        "SELECT name FROM sqlite_master WHERE type = 'table'"
    };
    let tables: Vec<String> = db
        .read(catalog, &[])
        .await?
        .iter()
        .map(|row| row.text("name").map(str::to_owned))
        .collect::<Result<_, _>>()?;
    let has = |name: &str| tables.iter().any(|t| t == name);
    if !has("guard_audit_log") {
        return Err(
            "this database holds no guard audit log (no guard_audit_log table): it is not a \
             guard operation store; give the store the server writes (its SQLite file or \
             PostgreSQL database and schema)"
                .into(),
        );
    }
    let found = match has("guard_schema_version") {
        true => match db
            .read("SELECT version FROM guard_schema_version WHERE id = 1", &[])
            .await?
            .first()
        {
            Some(row) => row.int("version")?,
            None => 0,
        },
        false => 0,
    };
    if !(0..=VERSION).contains(&found) {
        return Err(format!(
            "guard's tables are at schema version {found}, newer than this build knows \
             (version {VERSION}); run the guard release that wrote them, or a newer one"
        ));
    }
    if found < VERSION {
        return Err(format!(
            "guard's tables are at schema version {found}, older than this build's \
             (version {VERSION}); this tool never migrates a store: verify it with the guard \
             release that wrote it, or let this release's server open it (which brings it \
             forward) and verify then"
        ));
    }
    if has(LEGACY_TABLE) {
        return Err(format!(
            "the store holds `{LEGACY_TABLE}`, a table guard's migration folds into the audit log, \
             at schema version {VERSION}, after that migration ran: it was created since, \
             outside guard; its rows are not in the verified log. Inspect it by hand (this \
             tool never migrates or drops it)"
        ));
    }
    Ok(())
}
