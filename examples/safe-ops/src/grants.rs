//! `safe-ops grants`: the operator's view of the grants people opened on `delete_file`, in
//! the audit log's store where the server keeps them: each that still covers calls, whose
//! it is, what it covers and what is left; `--revoke ID` ends one at once, for every
//! process sharing the store, with a `grant_revoked` record naming the operator.

use std::{path::Path, sync::Arc};

use rmcp_guard::{
    audit::AuditLog,
    grant::{Grants, Revoked, Revoker},
    ops::{SqliteStore, now_ms},
};

/// Lists the grants that cover calls now, or revokes `revoke` as `operator`; the text to print.
pub async fn run(
    audit_db: &Path,
    origin: &str,
    revoke: Option<&str>,
    operator: &str,
) -> Result<String, String> {
    if !audit_db.exists() {
        return Err(format!(
            "there is no audit log at {}, so no grants: give the server's file with --audit-db",
            audit_db.display()
        ));
    }
    let store = Arc::new(
        SqliteStore::open(audit_db)
            .map_err(|e| format!("cannot open the audit log {}: {e}", audit_db.display()))?,
    );
    let grants = Grants::new(store.clone(), AuditLog::shared(store, origin));
    let now = now_ms();
    match revoke {
        Some(id) => {
            let trace = format!("grants-cli-{now}");
            match grants
                .revoke(id, Revoker::Operator(operator), now, &trace)
                .await
                .map_err(|e| format!("cannot revoke {id}: {e}"))?
            {
                Revoked::Now(grant) => Ok(format!(
                    "revoked {}: it covers no call from now on ({} of {} calls used)",
                    grant.grant_id, grant.used, grant.calls
                )),
                Revoked::Already(grant) => Ok(format!(
                    "{} was already revoked; nothing changed",
                    grant.grant_id
                )),
                Revoked::NotFound => {
                    Err(format!("no grant {id}: list them with `safe-ops grants`"))
                }
            }
        }
        None => {
            let active = grants
                .active(now)
                .await
                .map_err(|e| format!("cannot read the grants: {e}"))?;
            if active.is_empty() {
                return Ok("no grant covers calls now: every call asks".to_owned());
            }
            let mut out = format!("{} grants cover calls now:", active.len());
            for (tenant, user, grant) in active {
                out.push_str(&format!(
                    "\n{}  {user} ({tenant})  {}",
                    grant.grant_id,
                    grant.describe()
                ));
            }
            out.push_str("\nrevoke one with `safe-ops grants --revoke ID`");
            Ok(out)
        }
    }
}
