//! safe-ops' approval page, where `deploy_production` is approved. It listens on loopback.
//! The requester is the local user; the approvers are the people named with `--approver`
//! (or `SAFE_OPS_APPROVERS`), in the requester's tenant.
//!
//! Each approver's one-time link must reach that person and nobody else: whoever holds a
//! link approves as its approver. The requester's client reads safe-ops' stderr (over stdio
//! it started the process), so links are never logged. They go out through a channel the
//! operator names: a signed webhook to a receiver on this host (`--approver-webhook`, the
//! secret in `SAFE_OPS_WEBHOOK_SECRET`), or files in a directory only the approvers' side
//! reads (`--approver-drop`). Without either, `deploy_production` refuses.

use std::{net::SocketAddr, path::PathBuf};

use rmcp_guard::{
    EnvIdentity, Identity,
    approval::{ApprovalPage, FileDropNotifier, Notifier, WebhookNotifier},
};

/// The approvers a production deploy needs besides its requester.
pub const REQUIRED: usize = 2;

/// The environment variable holding the webhook's signing secret (never a command-line
/// argument, which every local user can read in the process list).
pub const WEBHOOK_SECRET_ENV: &str = "SAFE_OPS_WEBHOOK_SECRET";

/// The local user (see [`crate::identity::local_user`]).
pub fn local_identity() -> Result<Identity, String> {
    Ok(crate::identity::local_user()?.identity().clone())
}

/// Where approver links go, as the operator configured it.
pub enum Channel {
    /// A signed POST to a receiver on this host.
    Webhook { url: String, secret: Vec<u8> },
    /// Files in a directory.
    Drop(PathBuf),
}

impl Channel {
    /// The channel named on the command line, if any; the webhook's secret comes from
    /// [`WEBHOOK_SECRET_ENV`].
    pub fn configured(
        webhook: Option<&str>,
        drop: Option<&PathBuf>,
    ) -> Result<Option<Self>, String> {
        match (webhook, drop) {
            (Some(_), Some(_)) => Err(
                "--approver-webhook and --approver-drop both name a channel for approver links; choose one".into(),
            ),
            (Some(url), None) => {
                let secret = std::env::var(WEBHOOK_SECRET_ENV).map_err(|_| {
                    format!(
                        "--approver-webhook {url} needs {WEBHOOK_SECRET_ENV}: the secret (32+ random bytes) the receiver verifies signatures with"
                    )
                })?;
                Ok(Some(Self::Webhook {
                    url: url.to_owned(),
                    secret: secret.into_bytes(),
                }))
            }
            (None, Some(dir)) => Ok(Some(Self::Drop(dir.clone()))),
            (None, None) => Ok(None),
        }
    }

    /// The notifier that sends links this way.
    pub fn notifier(self) -> Result<Box<dyn Notifier>, String> {
        Ok(match self {
            Self::Webhook { url, secret } => {
                Box::new(WebhookNotifier::new(&url, secret).map_err(|e| e.to_string())?)
            }
            Self::Drop(dir) => Box::new(FileDropNotifier::new(dir)?),
        })
    }
}

/// Starts the page on `bind` (loopback only) for `requester`, with `approvers` in the
/// requester's tenant, their links sent through `notifier` (none: two-person approvals
/// refuse).
pub async fn start(
    bind: SocketAddr,
    requester: Identity,
    approvers: &[String],
    notifier: Option<Box<dyn Notifier>>,
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
    if let Some(notifier) = notifier {
        builder = builder.notify(notifier);
    }
    builder.bind(bind).start().await.map_err(|e| e.to_string())
}

/// The approvers named on the command line or in `SAFE_OPS_APPROVERS`, comma-separated,
/// without the requester (who can never approve their own request, in any spelling). Two
/// spellings of one approver are left for the page to refuse at start.
pub fn approvers(named: &[String], requester: &Identity) -> Vec<String> {
    let me = requester.person().ok();
    named
        .iter()
        .flat_map(|n| n.split(','))
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .filter(|name| {
            let person = Identity::new(requester.tenant.clone(), *name, Vec::<String>::new())
                .person()
                .ok();
            !matches!((&me, &person), (Some(me), Some(p)) if me.resembles(p))
        })
        .map(str::to_owned)
        .collect()
}
