//! Whose a ledger row is: the canonical tenant and user stored with it. Anyone else's row
//! is answered exactly like one that does not exist, so every reader checks the owner the
//! same way.

use crate::{
    person::Person,
    store::{Row, StoreError},
};

/// A row's owner, as stored (`tenant`, `user_id`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Owner {
    pub tenant: String,
    pub user: String,
}

impl Owner {
    /// The owner columns of `row`.
    pub(crate) fn from_row(row: &Row) -> Result<Self, StoreError> {
        Ok(Self {
            tenant: row.text("tenant")?.to_owned(),
            user: row.text("user_id")?.to_owned(),
        })
    }

    /// Whether `person` is this owner.
    pub(crate) fn is(&self, person: &Person) -> bool {
        self.tenant == person.tenant() && self.user == person.user()
    }
}
