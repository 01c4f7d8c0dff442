//! How an approval step runs: its tables, the same on both engines, then the triggers of
//! the engine the store is on (each step writes its rules once per engine).

use crate::store::{Dialect, StoreError, Tx};

/// A step's triggers on each engine this build has.
pub(super) struct Engines {
    #[cfg(feature = "sqlite")]
    pub sqlite: &'static str,
    #[cfg(feature = "postgres")]
    pub postgres: &'static str,
}

/// Runs `tables`, then the triggers of the transaction's engine.
pub(super) async fn step(tx: &mut Tx, tables: &str, triggers: Engines) -> Result<(), StoreError> {
    tx.batch(tables).await?;
    match tx.dialect() {
        #[cfg(feature = "sqlite")]
        Dialect::Sqlite => tx.batch(triggers.sqlite).await,
        #[cfg(feature = "postgres")]
        Dialect::Postgres => tx.batch(triggers.postgres).await,
        #[allow(unreachable_patterns)]
        other => {
            let _ = triggers;
            Err(StoreError::Other(format!(
                "guard cannot add the approval tables' triggers on {other:?}: build it with that engine's feature"
            )))
        }
    }
}
