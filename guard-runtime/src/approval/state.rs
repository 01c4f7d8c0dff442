//! What every part of the approval page says of an approval: where it stands, who a link
//! speaks for, and an approval given. The store's rows ([`super::ledger`]) hold them, the
//! decisions ([`super::decisions`]) count them, and the desk changes them; in a file of their
//! own, below all three, naming them never makes those import each other.

use std::time::SystemTime;

use crate::person::Person;

/// Where an approval stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Waiting for approvals.
    Pending,
    /// Every required approval arrived.
    Approved,
    /// Someone rejected it on the page (an approver, or the requester withdrawing).
    Rejected { by: String },
    /// The deadline passed first.
    Expired,
    /// The client declined or cancelled, or the call ended.
    Withdrawn,
}

/// One approval given on the page.
#[derive(Debug, Clone)]
pub struct Given {
    pub who: Person,
    pub at: SystemTime,
}

/// Who a link speaks for.
#[derive(Debug, Clone)]
pub enum Role {
    /// The human at the client that asked: approves alone when one approval is required,
    /// else can only withdraw the request.
    Requester,
    /// A named approver other than the requester.
    Approver(Person),
}
