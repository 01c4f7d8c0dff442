//! order-cancel: the seed's two-phase order cancellation, on guard.
//!
//! `prepare_order_cancel(order_no, reason)` checks the order for the caller's tenant and
//! freezes an intent; `confirm_order_cancel(operation_id)` files one cancellation request in
//! the same transaction as the intent's status and the audit record;
//! `get_operation_result(operation_id)` says whether it happened. The order itself is never
//! updated: on PostgreSQL the server's role cannot, and the tests prove it.
//!
//! `open_ticket(request_id, order_no, subject)` files a support ticket in one call, keyed
//! by `request_id`: a retry after a lost answer gets the first ticket back, never a second.

pub mod demo;
pub mod orders;
pub mod schema;
mod server;
pub mod stores;

pub use server::{
    CancelPayload, CancelSubmitted, DEFAULT_ALLOWLIST, OpenTicketArgs, OrderCancel,
    PrepareCancelArgs, TicketOpened,
};
