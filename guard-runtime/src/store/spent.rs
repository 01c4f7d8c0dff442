//! MRTR request states already answered (`guard_redeemed_states`). A state is spent by
//! inserting its nonce once, in whichever transaction the answer's record commits with; an
//! insert that finds the nonce changes nothing, and that is how a replay is told apart.
//!
//! A spent state is a ledger row ([`LEDGER`]): final as inserted (neither its nonce nor its
//! expiry ever changes) and kept until it expires by the database's clock, so no role, the
//! tables' owner included, makes a spent state spendable again before it would have expired
//! anyway.

use super::sql::Statement;
use crate::store::ledger::{Kept, Ledger, Refusal, Status};

/// The rules of `guard_redeemed_states`.
pub(crate) const LEDGER: Ledger = Ledger {
    table: "guard_redeemed_states",
    row: "request state",
    key: &["nonce"],
    owner: &[],
    status: Status::Final {
        ended: "spent",
        hint: "A spent request state stays spent until it expires.",
    },
    opens: None,
    fixed: &[],
    fixed_words: "",
    rules: &[],
    kept: Kept::UntilExpired {
        column: "expires_at",
        words: "it expires",
    },
    refusal: Refusal::Privilege,
};

/// One request state to spend: its nonce, kept until the state would have expired anyway.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Spend {
    /// First, so spends order by nonce.
    nonce: String,
    /// Milliseconds since the epoch.
    until: i64,
}

impl Spend {
    pub(crate) fn new(nonce: &str, until: i64) -> Self {
        Self {
            nonce: nonce.to_owned(),
            until,
        }
    }

    /// The insert that spends the state: it changes one row, or none if it was spent.
    pub(crate) fn statement(&self) -> Statement {
        Statement::execute(
            "INSERT INTO guard_redeemed_states (nonce, expires_at) VALUES ($1, $2)
             ON CONFLICT DO NOTHING",
            vec![self.nonce.as_str().into(), self.until.into()],
        )
    }
}
