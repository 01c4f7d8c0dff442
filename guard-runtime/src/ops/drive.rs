//! The one way to an [`Approved`] proof: lock the intent, run the author's re-check hook on
//! it, and only then approve. The lock and gate steps are crate-private, so no code can
//! skip the hook or hand the proof a verdict of its own.

use rmcp::handler::server::wrapper::Parameters;
use serde::de::DeserializeOwned;

use super::{
    Configured,
    call::ConfirmSpec,
    confirm::{Approved, Locked, Recheck},
    intent::OperationRef,
};
use crate::defer::{Due, Ending};
use crate::entry::dispatch::GuardCall;
use crate::store::BoxFuture;
use crate::{error::ToolError, outcome::Step};

/// The author's `recheck` hook, boxed so it can be called with any borrow of the intent.
pub type RecheckHook<S, P> =
    for<'a> fn(&'a S, &'a mut Locked<P>) -> BoxFuture<'a, Result<Recheck, ToolError>>;

/// Steps 1–6 of a confirm: lock and gate the intent, re-check its target through `hook`,
/// and approve it, or end the call with the model's answer. A deferred confirm (its own
/// `defer`, or the deployment's wait) ends here too: the approved operation is stored to
/// run when due, and the answer says when.
pub async fn lock_and_recheck<S, P: DeserializeOwned>(
    guard: &dyn Configured,
    call: &GuardCall,
    spec: &'static ConfirmSpec,
    reference: Parameters<OperationRef>,
    server: &S,
    hook: RecheckHook<S, P>,
) -> Step<Approved<P>> {
    let mut locked = Locked::begin(guard, call, spec, reference).await?;
    let verdict = hook(server, &mut locked).await;
    let approved = locked.rechecked(verdict).await?;
    match super::deferred::wait(guard, spec) {
        Some(after) => Err(Box::new(approved.schedule(after).await)),
        None => Ok(approved),
    }
}

/// The run of a due deferred confirm, in the runner's claim: the intent locked and checked
/// again, its target re-checked through `hook`, and only then the proof; or the run's end.
pub async fn run_and_recheck<S, P: DeserializeOwned>(
    guard: &dyn Configured,
    spec: &'static ConfirmSpec,
    due: Due,
    server: &S,
    hook: RecheckHook<S, P>,
) -> Result<Approved<P>, Ending> {
    let mut locked = super::deferred::run_due_confirm(guard, spec, due).await?;
    let verdict = hook(server, &mut locked).await;
    locked.rechecked_due(verdict).await
}
