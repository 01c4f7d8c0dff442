//! The four tools. The model can prepare and confirm a cancellation request and open a
//! support ticket (once per request_id); it cannot change prices, addresses or payment
//! state, run SQL, or say who it is acting for.

use std::sync::Arc;

use rmcp::{
    ServerHandler,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{ServerCapabilities, ServerConfig},
    tool, tool_handler,
};
use rmcp_guard::tool_router;
use rmcp_guard::{
    Code, Exposure, Guard, Guarded, ToolArgs, ToolError, exposed, idempotent, operations,
    ops::{Approved, Intent, Keyed, Locked, Prepare, Recheck},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::orders::{self, NewRequest};

/// The order-cancel MCP server. Who is calling comes from the guard's identity provider.
#[derive(Clone)]
pub struct OrderCancel {
    guard: Arc<Guard>,
}

/// The allowlist that ships with the example: its four tools, and `withdraw` for when its
/// confirms are deferred.
pub const DEFAULT_ALLOWLIST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/allowlist.toml");

impl OrderCancel {
    /// A server whose guard has operations configured (`Guard::with_operations`). A guard
    /// that states no exposure gets the shipped allowlist, [`DEFAULT_ALLOWLIST`].
    pub fn new(guard: Guard) -> Self {
        let guard = match guard.exposure() {
            Some(_) => guard,
            None => guard.with_exposure(Exposure::allowlist(DEFAULT_ALLOWLIST)),
        };
        Self {
            guard: Arc::new(guard),
        }
    }
}

impl OrderCancel {
    /// The confirm tool, which a deployment may defer
    /// ([`Operations::defer_confirm`](rmcp_guard::ops::Operations::defer_confirm)).
    pub const CONFIRM_TOOL: &'static str = "confirm_order_cancel";

    /// Runs the deferred confirms that are due every `every`, in the background, until the
    /// returned runner is dropped: each one once, across restarts and server processes
    /// sharing the store. `None` without an operation store.
    pub fn run_deferred(&self, every: std::time::Duration) -> Option<rmcp_guard::defer::Runner> {
        rmcp_guard::run_deferred(self.clone(), Self::tool_router, every)
    }

    /// The server's router, which registers the run of every deferred confirm: what a
    /// runner pass in a test takes
    /// (`rmcp_guard_test::testing::run_due_deferred(&server, OrderCancel::routes)`).
    pub fn routes() -> ToolRouter<Self> {
        Self::tool_router()
    }
}

impl Guarded for OrderCancel {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[derive(Debug, Deserialize, JsonSchema, ToolArgs)]
pub struct PrepareCancelArgs {
    /// The order number the customer sees, e.g. "A10001" (6 to 32 letters, digits, - or _).
    #[schemars(length(min = 6, max = 32), regex(pattern = r"^[A-Za-z0-9_-]+$"))]
    pub order_no: String,
    /// Why the customer wants to cancel, in their words (2 to 200 characters).
    #[schemars(length(min = 2, max = 200))]
    pub reason: String,
}

impl PrepareCancelArgs {
    /// The schema's rules, enforced: the model's arguments are not trusted to follow it.
    fn checked(self) -> Result<Self, ToolError> {
        let order_no = self.order_no.trim().to_owned();
        let reason = self.reason.trim().to_owned();
        let mut problems = Vec::new();
        if !(6..=32).contains(&order_no.chars().count())
            || !order_no
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            problems.push("order_no must be 6 to 32 letters, digits, - or _");
        }
        if !(2..=200).contains(&reason.chars().count()) {
            problems.push("reason must be 2 to 200 characters");
        }
        if problems.is_empty() {
            Ok(Self { order_no, reason })
        } else {
            Err(ToolError::invalid_input(format!(
                "{}; nothing was prepared. Fix the arguments and call again.",
                problems.join("; ")
            )))
        }
    }
}

/// What a prepare freezes and a confirm acts on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelPayload {
    pub order_id: i64,
    pub order_no: String,
    pub reason: String,
}

/// What a confirm returns (and a repeated confirm returns again).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelSubmitted {
    pub request_id: i64,
    pub order_no: String,
    pub request_status: String,
    pub message: String,
}

/// The arguments of `open_ticket`.
#[derive(Debug, Serialize, Deserialize, JsonSchema, ToolArgs)]
pub struct OpenTicketArgs {
    /// A new UUID for each ticket you mean to open. When a call fails or times out, call
    /// again with the same request_id and arguments: you get the ticket it opened, never a
    /// second one.
    pub request_id: String,
    /// The order the ticket is about, e.g. "A10001".
    #[schemars(length(min = 6, max = 32), regex(pattern = r"^[A-Za-z0-9_-]+$"))]
    pub order_no: String,
    /// What the customer needs, in one line (2 to 200 characters).
    #[schemars(length(min = 2, max = 200))]
    pub subject: String,
}

/// What `open_ticket` returns (and returns again for a retry with the same request_id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TicketOpened {
    pub ticket_id: i64,
    pub order_no: String,
    pub subject: String,
}

#[operations]
#[tool_router]
impl OrderCancel {
    #[idempotent(key = request_id, ttl = "24h")]
    #[tool(
        description = "Open a support ticket about an order. Send a new UUID as request_id for each ticket; if the call fails or times out, retry with the same request_id and arguments to get the ticket it opened instead of a second one."
    )]
    async fn open_ticket(
        &self,
        keyed: &mut Keyed,
        Parameters(args): Parameters<OpenTicketArgs>,
    ) -> Result<TicketOpened, ToolError> {
        let subject = args.subject.trim();
        if !(2..=200).contains(&subject.chars().count()) {
            return Err(ToolError::invalid_input(
                "subject must be 2 to 200 characters; no ticket was opened. Fix it and call again with a new request_id.",
            ));
        }
        let caller = keyed.caller().clone();
        let order = orders::find(keyed.tx(), &caller.tenant, &args.order_no)
            .await?
            .ok_or_else(|| orders::not_found(&args.order_no))?;
        let ticket_id = orders::open_ticket(
            keyed.tx(),
            &caller.tenant,
            order.order_id,
            &caller.user,
            subject,
        )
        .await?;
        Ok(TicketOpened {
            ticket_id,
            order_no: order.order_no,
            subject: subject.to_owned(),
        })
    }

    #[prepare(
        op = "order_cancel",
        ttl = "10m",
        scope = "order.cancel.request",
        rate = "5/min"
    )]
    #[tool(
        description = "Check an order and prepare a request to cancel it. This cancels nothing and files nothing: it returns a preview and an operation_id. Show the preview to the user; only if they agree, call confirm_order_cancel."
    )]
    async fn prepare_order_cancel(
        &self,
        prepare: &mut Prepare,
        Parameters(args): Parameters<PrepareCancelArgs>,
    ) -> Result<Intent<CancelPayload>, ToolError> {
        let args = args.checked()?;
        let tenant = prepare.caller().tenant.clone();
        let found = orders::find(prepare.tx(), &tenant, &args.order_no)
            .await?
            .ok_or_else(|| orders::not_found(&args.order_no))?;
        // Hold the order against a confirm of it, then read it again: a confirm that was
        // filing a request for it has committed by now, and its request is seen below.
        prepare.lock_target(&found.order_id.to_string()).await?;
        let order = orders::find(prepare.tx(), &tenant, &args.order_no)
            .await?
            .ok_or_else(|| orders::not_found(&args.order_no))?;
        if !orders::cancellable(&order.status) {
            return Err(orders::not_cancellable(&order));
        }
        if let Some(request_id) = orders::pending_request(prepare.tx(), order.order_id).await? {
            return Err(ToolError::new(
                Code::InvalidState,
                format!(
                    "Order {} already has a pending cancellation request ({request_id}); nothing was prepared.",
                    order.order_no
                ),
            ));
        }
        let preview = json!({
            "order_no": order.order_no,
            "order_status": order.status,
            "total": order.total(),
            "reason": args.reason,
            "effect": "files a cancellation request for this order; the order is not closed or deleted",
        });
        Ok(Intent::new(
            order.order_id.to_string(),
            CancelPayload {
                order_id: order.order_id,
                order_no: order.order_no.clone(),
                reason: args.reason,
            },
        )
        .preview(preview)
        .summary(format!("order_no={}", order.order_no)))
    }

    #[confirm(op = "order_cancel", recheck = Self::still_cancellable)]
    #[tool(
        description = "File the cancellation request that prepare_order_cancel prepared. Call it only after the user explicitly agreed to that preview, with its operation_id. Retrying with the same operation_id is safe: it returns the same request."
    )]
    async fn confirm_order_cancel(
        &self,
        approved: &mut Approved<CancelPayload>,
    ) -> Result<CancelSubmitted, ToolError> {
        let payload = approved.payload().clone();
        let caller = approved.caller().clone();
        let operation_id = approved.operation_id().to_owned();
        let request_id = orders::file_request(
            approved.tx(),
            &NewRequest {
                tenant: &caller.tenant,
                order_id: payload.order_id,
                requested_by: &caller.user,
                reason: &payload.reason,
                operation_id: &operation_id,
            },
        )
        .await?;
        Ok(CancelSubmitted {
            request_id,
            order_no: payload.order_no,
            request_status: "PENDING".into(),
            message:
                "The cancellation request is filed; the order itself is not closed or deleted yet."
                    .into(),
        })
    }
}

impl OrderCancel {
    /// The order may have shipped since the user saw the preview.
    async fn still_cancellable(
        &self,
        locked: &mut Locked<CancelPayload>,
    ) -> Result<Recheck, ToolError> {
        let tenant = locked.caller().tenant.clone();
        let order_id = locked.payload().order_id;
        let order_no = locked.payload().order_no.clone();
        Ok(
            match orders::status_locked(locked.tx(), &tenant, order_id).await? {
                Some(status) if orders::cancellable(&status) => Recheck::Unchanged,
                Some(status) => Recheck::Changed(format!("Order {order_no} is now {status}")),
                None => Recheck::Changed(format!("Order {order_no} no longer exists")),
            },
        )
    }
}

#[tool_handler(router = exposed(self, Self::tool_router))]
impl ServerHandler for OrderCancel {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            rmcp::model::Implementation::new("order-cancel", env!("CARGO_PKG_VERSION")),
        )
    }
}
