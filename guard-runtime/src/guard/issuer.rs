//! Who issued a request state, named inside its seal: the operation store whose spends
//! decide whether it was used, or, without one, the guard whose memory holds them. A state
//! is answered only where it was issued, so one state is never spent in two places that
//! cannot see each other's spends (two stores, two processes, a process before and after a
//! restart).

use serde::{Deserialize, Serialize};

use super::Guard;

/// Where a request state's spend is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Issuer {
    /// An operation store, by the id made with its schema: every replica sharing it, before
    /// and after any restart, sees the same spends.
    #[cfg_attr(
        not(any(feature = "sqlite", feature = "postgres")),
        allow(dead_code, reason = "only a guard with operations has a store")
    )]
    Store(String),
    /// A guard without a store, by its boot epoch (random, made when the guard is built):
    /// its spends live in this process's memory and end with it.
    Process(String),
}

impl Guard {
    /// The issuer of this guard's request states: its operation store (read once and kept)
    /// when it has one, else itself.
    pub(crate) async fn issuer(&self) -> Result<Issuer, String> {
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        if let Some(operations) = self.operations() {
            return operations
                .store_identity()
                .await
                .map(|id| Issuer::Store(id.to_owned()))
                .map_err(|e| e.to_string());
        }
        Ok(Issuer::Process(self.epoch.clone()))
    }
}
