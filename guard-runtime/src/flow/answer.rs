//! Step 7: the reply judged. Decline and cancel end the call as outcomes; an accept (or a
//! page's approval, or a grant's kept answer) is revalidated on the server in the
//! documented order (`accept.rs`), and a grant the human chose is set apart to open after
//! the re-check. A request state waiting to be spent is spent here if the call ends.

use rmcp::model::ElicitResult;
use serde_json::Value;

use super::{
    Flow, Rules, ToolSpec,
    asked::{Asked, Reply, Unspent},
    caller::Caller,
};
use crate::{form::Form, outcome::Step};

/// The human's accepted and revalidated answer to one tool's question, before the re-check.
/// Only [`Flow::answer`] builds one, and only after a real accept.
pub struct Accepted<F> {
    pub(super) form: F,
    pub(super) caller: Caller,
    pub(super) spec: &'static ToolSpec,
    pub(super) secret: Option<crate::secret::Secret>,
    /// The human chose to open a grant with this answer (its content as they gave it).
    pub(super) grant: Option<Value>,
    /// The request state the confirmation's commit spends, if any.
    pub(super) unspent: Option<Unspent>,
}

impl<F: Form> Flow<'_, F> {
    /// Step 7: the reply's outcome and its revalidation; `rules` are the author's.
    pub async fn answer(
        &self,
        asked: Asked<F>,
        expected: Option<&str>,
        rules: Option<Rules<F>>,
    ) -> Step<Accepted<F>> {
        let Asked { caller, reply, .. } = asked;
        let (form, secret, grant, unspent) = match reply {
            Reply::Page(content, secret) => (
                self.accept(Some(&content), expected, rules)?,
                secret,
                None,
                None,
            ),
            #[cfg(any(feature = "sqlite", feature = "postgres"))]
            Reply::Granted(answer, grant_id) => (
                self.granted_form(&answer, &grant_id, rules)?,
                None,
                None,
                None,
            ),
            Reply::Elicited(answer, unspent) => {
                match self.answer_form(&caller, answer, expected, rules) {
                    Ok((form, grant)) => (form, None, grant, unspent),
                    Err(done) => return Err(self.spend(unspent, done).await),
                }
            }
        };
        Ok(Accepted {
            form,
            caller,
            spec: self.spec,
            secret,
            grant,
            unspent,
        })
    }

    /// The outcome and revalidation of the client's `answer`: the form, and a grant's
    /// answer if the human chose one.
    fn answer_form(
        &self,
        caller: &Caller,
        answer: ElicitResult,
        expected: Option<&str>,
        rules: Option<Rules<F>>,
    ) -> Step<(F, Option<Value>)> {
        let content = self.accepted(answer)?;
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        let (content, grant) = self.grant_choice(caller, content)?;
        #[cfg(not(any(feature = "sqlite", feature = "postgres")))]
        let (grant, _) = (None, caller);
        Ok((self.accept(content.as_ref(), expected, rules)?, grant))
    }
}
