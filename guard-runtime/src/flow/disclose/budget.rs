//! Whose budget a disclosing call takes from, and where it is kept. A call on a client
//! connection this process holds (stdio or in process, 2025-11-25) counts in that
//! connection's session, in the `Guard`'s memory. Any other call counts in its caller's budget
//! period ([`crate::disclose::PERIOD`]): on 2026-07-28 rmcp builds a service per HTTP request
//! and there is no session at all, and over HTTP a session id is only a header the client
//! sends (rmcp's stateless mode takes any), so neither names a session a client cannot renew
//! at will. The period is kept in the operation store when the `Guard` has one (every
//! replica and restart sees it), else in the `Guard`'s memory, which every service built
//! from it shares.

use rmcp::model::CallToolResponse;

use super::super::Flow;
use crate::disclose::{Session, Shown, Spec, Standing};
#[cfg(any(feature = "sqlite", feature = "postgres"))]
use crate::{
    error::{Code, ToolError},
    outcome::Outcome,
};

/// What a take that could not be counted answers: nothing is shown.
type Refused = Box<CallToolResponse>;

impl<F> Flow<'_, F> {
    /// The session this call belongs to. A caller whose identity names a person guard cannot
    /// use (an invisible character, mixed scripts) is refused: counting them apart from the
    /// person they spell would give them a budget of their own.
    pub(super) fn session(&self) -> Result<Session, Refused> {
        let request = &self.call.request;
        let over_http = request.extensions.get::<http::request::Parts>().is_some();
        if !over_http && let Some(info) = request.peer.peer_info() {
            return Ok(Session::connection(&info));
        }
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        if let Some(operations) = self.guard.operations() {
            // An identity provider that cannot tell who is calling (no token, the local
            // identity over HTTP) leaves the caller unidentified: every such caller shares
            // one budget.
            if let Ok(identity) = operations.identity.identify(request) {
                return match identity.person() {
                    Ok(person) => Ok(Session::period(person.tenant(), person.user())),
                    Err(e) => Err(self.refuse(
                        Outcome::Refused(Code::PermissionDenied),
                        ToolError::new(
                            Code::PermissionDenied,
                            format!(
                                "Nothing was shown: the caller's name is not usable ({e}), so \
                                 guard cannot count what it shows them. Ask the operator to \
                                 issue the identity under the person's plain name."
                            ),
                        ),
                    )),
                };
            }
        }
        Ok(Session::period("", ""))
    }

    /// What this tool has shown in `session` so far. A store that cannot be read says
    /// nothing was: the take after the handler checks again, and refuses what does not fit.
    pub(super) async fn so_far(&self, session: &Session) -> Standing {
        let now = now_ms();
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        if let (Some(caller), Some(operations)) = (session.caller(), self.guard.operations()) {
            return crate::budget::so_far(&*operations.store, caller, self.spec.name, now)
                .await
                .unwrap_or_else(|e| {
                    tracing::warn!(trace_id = %self.trace_id, tool = self.spec.name, error = %e, "reading a session budget failed; the take after the handler checks it");
                    Standing::default()
                });
        }
        self.guard.disclosed().so_far(session, self.spec.name, now)
    }

    /// Adds `more` to `session`'s budget if its caps hold with it, in one step: `Ok(total)`,
    /// or `Err(before)` when they would not. A store that cannot count it shows nothing. A
    /// tool without session caps is counted in memory only (for the record): there is
    /// nothing a store would have to hold.
    pub(super) async fn take(
        &self,
        session: &Session,
        spec: &Spec,
        more: Shown,
    ) -> Result<Result<Standing, Standing>, Refused> {
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        let capped = spec.session_max_items.is_some() || spec.session_max_bytes.is_some();
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        if let (true, Some(caller), Some(operations)) =
            (capped, session.caller(), self.guard.operations())
        {
            return crate::budget::take(&*operations.store, caller, self.spec.name, spec, more)
                .await
                .map_err(|e| {
                    tracing::error!(trace_id = %self.trace_id, tool = self.spec.name, error = %e, "counting a session budget failed; nothing was shown");
                    self.refuse(
                        Outcome::Refused(Code::Unavailable),
                        ToolError::new(
                            Code::Unavailable,
                            format!(
                                "Nothing was shown: guard could not count this result against \
                                 the session's budget of {}, because its store did not answer. \
                                 Call the tool again in a moment; if it persists, tell the \
                                 operator (trace_id {}).",
                                self.spec.name, self.trace_id
                            ),
                        ),
                    )
                });
        }
        Ok(self
            .guard
            .disclosed()
            .take(session, self.spec.name, spec, more, now_ms()))
    }
}

/// Milliseconds since the Unix epoch, the clock of budgets kept in memory.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
