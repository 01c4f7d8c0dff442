//! safe-ops' approval page, where `deploy_production` is approved. It listens on loopback.
//! The requester is the local user; the approvers are the people named with `--approver`
//! (or `SAFE_OPS_APPROVERS`), in the requester's tenant. Each approver's one-time link is
//! written to the log for the operator to hand to that person, and to nobody else: whoever
//! holds a link approves as its approver.

use std::net::SocketAddr;

use rmcp_guard::{
    EnvIdentity, Identity,
    approval::{ApprovalPage, ApproverLink},
};

/// The approvers a production deploy needs besides its requester.
pub const REQUIRED: usize = 2;

/// The local user, as `GUARD_TENANT` and `GUARD_USER` name them; by default tenant `local`
/// and the login name (`USER`), so a plain stdio session needs no setup.
pub fn local_identity() -> Result<Identity, String> {
    let login = std::env::var("USER").unwrap_or_else(|_| "operator".to_owned());
    let identity = EnvIdentity::from_lookup(|name| match name {
        EnvIdentity::TENANT_ENV => Some(std::env::var(name).unwrap_or_else(|_| "local".to_owned())),
        EnvIdentity::USER_ENV => Some(std::env::var(name).unwrap_or_else(|_| login.clone())),
        _ => Some(std::env::var(name).unwrap_or_default()),
    })?;
    Ok(identity.identity().clone())
}

/// Starts the page on `bind` (loopback only) for `requester`, with `approvers` in the
/// requester's tenant, handing each approver's link to `deliver`.
pub async fn start(
    bind: SocketAddr,
    requester: Identity,
    approvers: &[String],
    deliver: impl Fn(ApproverLink) + Send + Sync + 'static,
) -> Result<ApprovalPage, String> {
    if !bind.ip().is_loopback() {
        return Err(format!(
            "--approval-addr {bind}: safe-ops serves its approval page on loopback only (127.0.0.1 or [::1])"
        ));
    }
    let tenant = requester.tenant.clone();
    let mut builder = ApprovalPage::builder(EnvIdentity::new(requester));
    for approver in approvers {
        builder = builder.approver(Identity::new(
            tenant.clone(),
            approver.clone(),
            Vec::<String>::new(),
        ));
    }
    builder
        .deliver_links(deliver)
        .bind(bind)
        .start()
        .await
        .map_err(|e| e.to_string())
}

/// Writes an approver's link to the log: the operator hands it to that person.
pub fn log_link(link: ApproverLink) {
    tracing::info!(
        target: "safe_ops",
        approver = %link.approver.user,
        tool = link.tool,
        target_resource = %link.target,
        "approval link for {}: {} (hand it to {} only: it approves as them)",
        link.approver.user,
        link.url,
        link.approver.user
    );
}

/// The approvers named on the command line or in `SAFE_OPS_APPROVERS`, comma-separated,
/// without the requester (who can never approve their own request) and without repeats.
pub fn approvers(named: &[String], requester: &Identity) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in named.iter().flat_map(|n| n.split(',')) {
        let name = name.trim();
        if !name.is_empty() && name != requester.user && !out.iter().any(|n| n == name) {
            out.push(name.to_owned());
        }
    }
    out
}
