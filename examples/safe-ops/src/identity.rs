//! Who is calling a local stdio safe-ops: the one local user, whose undo windows are theirs.

use rmcp_guard::EnvIdentity;

/// The local user, as `GUARD_TENANT` and `GUARD_USER` name them; by default tenant `local`
/// and the login name (`USER`), so a plain stdio session needs no setup.
pub fn local_user() -> Result<EnvIdentity, String> {
    let login = std::env::var("USER").unwrap_or_else(|_| "operator".to_owned());
    EnvIdentity::from_lookup(|name| match name {
        EnvIdentity::TENANT_ENV => Some(std::env::var(name).unwrap_or_else(|_| "local".to_owned())),
        EnvIdentity::USER_ENV => Some(std::env::var(name).unwrap_or_else(|_| login.clone())),
        _ => Some(std::env::var(name).unwrap_or_default()),
    })
}
