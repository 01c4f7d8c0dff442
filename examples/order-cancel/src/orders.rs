//! The orders business: what may be cancelled, and the cancellation request a confirm files.
//! Every statement runs inside guard's transaction, on SQLite or PostgreSQL alike.

use rmcp_guard::{
    Code, ToolError,
    ops::{Dialect, Tx, now_ms},
};

/// The order's tenant has no order with this number (or it is deleted).
pub const ORDER_NOT_FOUND: Code = Code::own("ORDER_NOT_FOUND");

/// Statuses from which a customer may ask to cancel.
const CANCELLABLE: [&str; 2] = ["PENDING", "PAID"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    pub order_id: i64,
    pub order_no: String,
    pub status: String,
    pub total_cents: i64,
}

impl Order {
    pub fn total(&self) -> String {
        format!("{}.{:02}", self.total_cents / 100, self.total_cents % 100)
    }
}

pub fn cancellable(status: &str) -> bool {
    CANCELLABLE.contains(&status)
}

/// The tenant's live order `order_no`.
pub async fn find(tx: &mut Tx, tenant: &str, order_no: &str) -> Result<Option<Order>, ToolError> {
    let row = tx
        .query_opt(
            "SELECT order_id, order_no, status, total_cents FROM orders
             WHERE tenant = $1 AND order_no = $2 AND is_deleted = 0",
            &[tenant.into(), order_no.into()],
        )
        .await?;
    let Some(row) = row else { return Ok(None) };
    Ok(Some(Order {
        order_id: row.int("order_id")?,
        order_no: row.text("order_no")?.to_owned(),
        status: row.text("status")?.to_owned(),
        total_cents: row.int("total_cents")?,
    }))
}

/// The order's pending cancellation request, if one was already filed.
pub async fn pending_request(tx: &mut Tx, order_id: i64) -> Result<Option<i64>, ToolError> {
    let row = tx
        .query_opt(
            "SELECT request_id FROM order_cancel_requests
             WHERE order_id = $1 AND status = 'PENDING'",
            &[order_id.into()],
        )
        .await?;
    Ok(row.map(|r| r.int("request_id")).transpose()?)
}

/// The order's status now, holding it until the transaction ends so it cannot ship
/// underneath the confirm. On PostgreSQL the server's role may not lock `orders` itself, so
/// it calls `order_cancel_lock`, which the schema owner grants it; on SQLite the confirm's
/// `BEGIN IMMEDIATE` already holds the database.
pub async fn status_locked(
    tx: &mut Tx,
    tenant: &str,
    order_id: i64,
) -> Result<Option<String>, ToolError> {
    let sql = match tx.dialect() {
        Dialect::Postgres => "SELECT order_cancel_lock($1, $2) AS status",
        Dialect::Sqlite => {
            "SELECT status FROM orders WHERE tenant = $1 AND order_id = $2 AND is_deleted = 0"
        }
    };
    let row = tx.query_opt(sql, &[tenant.into(), order_id.into()]).await?;
    Ok(row
        .map(|r| r.opt_text("status").map(|s| s.map(str::to_owned)))
        .transpose()?
        .flatten())
}

/// Files the cancellation request; its `source_operation_id` is unique, so one operation can
/// never file two.
pub async fn file_request(tx: &mut Tx, request: &NewRequest<'_>) -> Result<i64, ToolError> {
    let row = tx
        .query_opt(
            "INSERT INTO order_cancel_requests
                (tenant, order_id, requested_by, reason, status, source_operation_id, created_at)
             VALUES ($1, $2, $3, $4, 'PENDING', $5, $6)
             RETURNING request_id",
            &[
                request.tenant.into(),
                request.order_id.into(),
                request.requested_by.into(),
                request.reason.into(),
                request.operation_id.into(),
                now_ms().into(),
            ],
        )
        .await?
        .ok_or_else(|| ToolError::internal("INSERT … RETURNING returned no row"))?;
    Ok(row.int("request_id")?)
}

/// Opens a support ticket about an order. Nothing here stops a second one: a retry is
/// kept from filing twice by the tool's idempotency key, not by this table.
pub async fn open_ticket(
    tx: &mut Tx,
    tenant: &str,
    order_id: i64,
    opened_by: &str,
    subject: &str,
) -> Result<i64, ToolError> {
    let row = tx
        .query_opt(
            "INSERT INTO support_tickets (tenant, order_id, opened_by, subject, created_at)
             VALUES ($1, $2, $3, $4, $5)
             RETURNING ticket_id",
            &[
                tenant.into(),
                order_id.into(),
                opened_by.into(),
                subject.into(),
                now_ms().into(),
            ],
        )
        .await?
        .ok_or_else(|| ToolError::internal("INSERT … RETURNING returned no row"))?;
    Ok(row.int("ticket_id")?)
}

pub struct NewRequest<'a> {
    pub tenant: &'a str,
    pub order_id: i64,
    pub requested_by: &'a str,
    pub reason: &'a str,
    pub operation_id: &'a str,
}

pub fn not_found(order_no: &str) -> ToolError {
    ToolError::new(
        ORDER_NOT_FOUND,
        format!(
            "There is no order {order_no} that you can access; nothing was prepared. Check the order number with the customer."
        ),
    )
}

pub fn not_cancellable(order: &Order) -> ToolError {
    ToolError::new(
        Code::InvalidState,
        format!(
            "Order {} is {}; only PENDING or PAID orders can be cancelled, so nothing was prepared.",
            order.order_no, order.status
        ),
    )
}
