//! The production deploy on the approval page: approvers' links by signed webhook, two
//! approvals through them, and on 2026-07-28 a restart between the two.

use std::{
    future::Future,
    net::SocketAddr,
    path::Path,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use rmcp::{
    ClientHandler, ErrorData, RoleClient, ServiceExt,
    model::{
        CallToolRequestParams, ClientCapabilities, ClientConfig, CustomNotification,
        ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
        FormElicitationCapability, Implementation, ProtocolVersion, UrlElicitationCapability,
    },
    service::{
        ClientLifecycleMode, ClientServiceExt, NotificationContext, RequestContext, RunningService,
    },
};
use rmcp_guard::{Guard, Identity, approval::WebhookNotifier, ops::SqliteStore};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{World, indent, operations, print_changes};
use crate::{receiver::Receiver, server::SafeOps, visit};

/// The production deploy: the client is sent to the approval page, the requester reads it
/// there, each approver's link arrives by signed webhook at a receiver on this host (never
/// where the requester's client could read it), two other people approve through their own
/// links, and the deploy runs once. On 2026-07-28 safe-ops restarts between the two
/// approvals: the approval and its links live in the store, so the second approver uses the
/// link delivered before the restart, and the requester's next call runs the deploy.
pub(super) async fn production(
    root: &Path,
    db_path: &Path,
    store: &SqliteStore,
    protocol: &ProtocolVersion,
) -> Result<(), String> {
    let secret = random_secret()?;
    let receiver = Receiver::start(secret.clone()).await?;
    let approvers = ["bob".to_owned(), "carol".to_owned()];
    let restarts = !protocol.has_initialize();
    // What GUARD_HMAC_KEY is to a deployment: the server after the restart has it too.
    let key = random_secret()?;
    let start = |bind: SocketAddr| {
        let notifier = WebhookNotifier::new(&receiver.url(), secret.clone());
        let (key, approvers) = (key.clone(), approvers.clone());
        async move {
            let notifier = notifier.map_err(|e| e.to_string())?;
            let requester = Identity::new("demo", "alice", Vec::<String>::new());
            let page =
                crate::approval::start(bind, requester, &approvers, Some(Box::new(notifier)))
                    .await?;
            let addr = page.local_addr();
            let guard = Guard::with_key(key)
                .map_err(|e| e.to_string())?
                .with_operations(operations(store))
                // Rounds end soon, so the stopped server lets go of its page at once.
                .approval_round_wait(Duration::from_secs(1))
                .with_approval_page(page);
            Ok::<_, String>((SafeOps::open(root, db_path, guard)?, addr))
        }
    };
    let (server, page_addr) = start(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let guard = server.guard_config().clone();
    let (urls, mut sent_to) = mpsc::unbounded_channel();
    let visitor = PageClient {
        protocol: protocol.clone(),
        urls,
        completed: Arc::default(),
        parks: restarts,
        asked: Arc::default(),
    };
    let client = connect_to(server, visitor.clone(), protocol).await?;
    let before = World::read(root, db_path)?;
    let args = json!({"service": "billing"});
    let Value::Object(arguments) = args.clone() else {
        return Err("scene arguments must be an object".into());
    };
    let request = CallToolRequestParams::new("deploy_production").with_arguments(arguments);
    let first_call = request.clone();
    let call = tokio::spawn(async move {
        let result = client.call_tool(first_call).await;
        let _ = client.cancel().await;
        result
    });
    let (message, url) = tokio::time::timeout(Duration::from_secs(30), sent_to.recv())
        .await
        .map_err(|_| "the client was never sent to the approval page".to_owned())?
        .ok_or("the client closed before it was sent to the approval page")?;

    println!("── deploy_production · two people approve on the approval page");
    println!("   model calls   deploy_production({args})");
    println!("   human sees    {}", indent(&message));
    println!("                 [Open {url}]");
    println!("   human answers accept (opens the page)");
    let seen = visit::get(&url).await?;
    println!("   page shows    {}", indent(&seen.text()));
    let mut delivered = Vec::new();
    for who in &approvers {
        let link = receiver
            .link_for(who, Duration::from_secs(10))
            .await
            .ok_or_else(|| format!("no link reached {who}"))?;
        delivered.push((who, link));
    }
    println!(
        "   links         {} signed POSTs to the receiver at {}: {} verified, {} refused;",
        delivered.len(),
        receiver.url(),
        receiver.links().len(),
        receiver.refused()
    );
    println!("                 the requester's client saw none of them");
    let before_restart = if restarts { 1 } else { delivered.len() };
    for (who, link) in &delivered[..before_restart] {
        approve(who, &link.url, "").await?;
    }
    let (result, guard, visitor) = if restarts {
        // The requester is away (their client waits on the next question, asked once the
        // round after bob's approval ended); then the process goes, with their call. What
        // it knew of the approval is in the store.
        tokio::time::timeout(Duration::from_secs(30), sent_to.recv())
            .await
            .map_err(|_| "the requester's call never came back for another round".to_owned())?;
        call.abort();
        drop(guard);
        let (server, _) = restart(page_addr, start).await?;
        println!(
            "   restart       safe-ops stops with the approval pending (1 of 2) and starts again on the same"
        );
        println!(
            "                 store and key; its page answers on the same address ({page_addr})"
        );
        let guard = server.guard_config().clone();
        for (who, link) in &delivered[before_restart..] {
            approve(who, &link.url, ", delivered before the restart").await?;
        }
        let (urls, _sent_to) = mpsc::unbounded_channel();
        let visitor = PageClient {
            protocol: protocol.clone(),
            urls,
            completed: Arc::default(),
            parks: false,
            asked: Arc::default(),
        };
        let client = connect_to(server, visitor.clone(), protocol).await?;
        println!("   model calls   deploy_production({args}) again, on the restarted server");
        let result = client.call_tool(request).await;
        let _ = client.cancel().await;
        (result, guard, visitor)
    } else {
        let result = call
            .await
            .map_err(|e| format!("the deploy_production call did not finish: {e}"))?;
        (result, guard, visitor)
    };
    let result = result.map_err(|e| format!("deploy_production call failed: {e}"))?;
    guard.audit_settled().await;
    let after = World::read(root, db_path)?;
    let text: Vec<String> = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    let flag = if result.is_error == Some(true) {
        "isError "
    } else {
        ""
    };
    let completed = visitor
        .completed
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .len();
    if completed > 0 {
        println!("   client gets   notifications/elicitation/complete");
    }
    println!("   model sees    {flag}{}", text.join(" "));
    print_changes(&before, &after);
    Ok(())
}

/// `who` approves through the link delivered to them; the page's verdict lines.
async fn approve(who: &str, link: &str, note: &str) -> Result<(), String> {
    println!(
        "   {who:<13} opens the link delivered to {who}{note}, types billing, presses Approve"
    );
    let after = visit::approve(link, "billing").await?;
    let text = after.text();
    let shown: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.starts_with("Approvals:")
                || l.starts_with("Waiting for")
                || l.starts_with("Approved:")
                || l.starts_with("Not approved")
        })
        .collect();
    println!("   page shows    {}", shown.join(" · "));
    Ok(())
}

/// Starts the server again with its page on `addr`, once the stopped one let go of it.
async fn restart<F, Fut>(addr: SocketAddr, start: F) -> Result<(SafeOps, SocketAddr), String>
where
    F: Fn(SocketAddr) -> Fut,
    Fut: Future<Output = Result<(SafeOps, SocketAddr), String>>,
{
    let mut tries = 0;
    loop {
        match start(addr).await {
            Ok(started) => return Ok(started),
            Err(error) if tries == 100 => {
                return Err(format!(
                    "the restarted approval page cannot listen on {addr} again: {error}"
                ));
            }
            Err(_) => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// A fresh random secret (64 hex characters), as an operator would put in
/// `SAFE_OPS_WEBHOOK_SECRET` or `GUARD_HMAC_KEY`.
fn random_secret() -> Result<Vec<u8>, String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .map_err(|e| format!("cannot read the system random source: {e}"))?;
    Ok(bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
        .into_bytes())
}

/// A client that declares URL elicitation and sends the human to every page it is given.
#[derive(Clone)]
struct PageClient {
    protocol: ProtocolVersion,
    urls: mpsc::UnboundedSender<(String, String)>,
    completed: Arc<Mutex<Vec<String>>>,
    /// Whether the requester stops answering after the first question: a process that
    /// goes away then has no request of theirs in flight.
    parks: bool,
    asked: Arc<AtomicUsize>,
}

impl ClientHandler for PageClient {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        match request {
            ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                let _ = self.urls.send((message, url));
                let earlier = self.asked.fetch_add(1, Ordering::SeqCst);
                if self.parks && earlier > 0 {
                    // The requester is away: this question waits until the process goes.
                    std::future::pending::<()>().await;
                }
                Ok(ElicitResult::new(ElicitationAction::Accept))
            }
            _ => Ok(ElicitResult::new(ElicitationAction::Decline)),
        }
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        if notification.method == "notifications/elicitation/complete" {
            self.completed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(notification.method);
        }
    }

    fn get_info(&self) -> ClientConfig {
        let mut elicitation = ElicitationCapability::new();
        elicitation.form = Some(FormElicitationCapability::new());
        elicitation.url = Some(UrlElicitationCapability::new());
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(elicitation);
        ClientConfig::new(capabilities, Implementation::new("safe-ops-demo", "0.1.0"))
            .with_protocol_version(self.protocol.clone())
    }
}

/// Serves `server` in process and connects `client` to it in `protocol`'s era.
async fn connect_to<C: ClientHandler>(
    server: SafeOps,
    client: C,
    protocol: &ProtocolVersion,
) -> Result<RunningService<RoleClient, C>, String> {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let lifecycle = if protocol.has_initialize() {
        ClientLifecycleMode::Initialize
    } else {
        ClientLifecycleMode::Discover {
            preferred_versions: vec![protocol.clone()],
        }
    };
    client
        .serve_with_lifecycle(client_io, lifecycle)
        .await
        .map_err(|e| format!("client failed to connect: {e}"))
}
