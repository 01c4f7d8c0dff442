//! Single use of MRTR request states across replicas: the nonce of each answered state is
//! kept in the operation store until the state would have expired anyway. Expired nonces
//! are purged in a transaction of their own (`store::purge`), so a redeem holds nothing but
//! the row it inserts.

use std::time::Duration;

use crate::store::{
    OperationStore, StoreError, now_ms,
    purge::{self, Expiring},
};

/// Records `nonce` as used for `valid_for`; false if it already was.
pub(crate) async fn redeem(
    store: &dyn OperationStore,
    nonce: &str,
    valid_for: Duration,
) -> Result<bool, StoreError> {
    let now = now_ms();
    let until = now.saturating_add(i64::try_from(valid_for.as_millis()).unwrap_or(i64::MAX));
    purge::expired_or_log(store, Expiring::RedeemedStates, now).await;
    let mut tx = store.begin().await?;
    match tx
        .execute(
            "INSERT INTO guard_redeemed_states (nonce, expires_at) VALUES ($1, $2)",
            &[nonce.into(), until.into()],
        )
        .await
    {
        Ok(_) => {}
        Err(e) if e.is_unique() => return Ok(false),
        Err(e) => return Err(e),
    }
    tx.commit().await?;
    Ok(true)
}
