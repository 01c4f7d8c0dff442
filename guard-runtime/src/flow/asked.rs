//! Steps 5 and 6: the one question, and the human's reply as it came: from guard's
//! approval page, from a grant the human opened earlier (nobody is asked), or from the
//! client (pushed on 2025-11-25, an MRTR round on 2026-07-28), after the capability check.

use std::{marker::PhantomData, time::Duration};

use rmcp::model::ElicitResult;
use serde_json::Value;

use super::{Flow, caller::Caller};
use crate::{form::Form, outcome::Step};

/// The human's reply to one tool's question, not judged yet. Only [`Flow::ask`] builds
/// one, and only [`Flow::answer`] takes it.
pub struct Asked<F> {
    pub(super) caller: Caller,
    pub(super) reply: Reply,
    pub(super) form: PhantomData<fn() -> F>,
}

/// Where the reply came from.
pub(super) enum Reply {
    /// The page's approval, as the answer a form would give, and the secret it took.
    Page(Value, Option<crate::secret::Secret>),
    /// A grant took a use: the answer the human gave when they opened it, and its id.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    Granted(Value, String),
    /// The client's answer, and an accepted 2026-07-28 request state whose spend waits for
    /// the confirmation's commit.
    Elicited(ElicitResult, Option<Unspent>),
}

/// An accepted 2026-07-28 answer's request state, not spent yet: the confirmation's commit
/// spends it (`commit_accepted`), and every other ending spends it before the client hears
/// how the call ended (`spend`). Only the MRTR step makes one.
pub(super) struct Unspent {
    pub(super) nonce: String,
    pub(super) ttl: Duration,
}

impl<F: Form> Flow<'_, F> {
    /// Steps 5 and 6: the form's roles must fit the question, then the page, a grant, or
    /// one elicitation gives the reply. `expected` is the text a type-to-confirm answer
    /// must equal.
    pub async fn ask(&self, caller: Caller, expected: Option<&str>) -> Step<Asked<F>> {
        self.roles_hold(expected)?;
        let reply = if let Some(approval) = self.spec.approval {
            let (content, secret) = self.ask_page(&caller.effect, expected, approval).await?;
            Reply::Page(content, secret)
        } else {
            self.reply(&caller, expected).await?
        };
        Ok(Asked {
            caller,
            reply,
            form: PhantomData,
        })
    }

    /// A grant's kept answer, or the client's.
    async fn reply(&self, caller: &Caller, expected: Option<&str>) -> Step<Reply> {
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        if let Some((answer, grant_id)) = self.granted(caller).await {
            return Ok(Reply::Granted(answer, grant_id));
        }
        if self.is_mrtr() {
            let (answer, unspent) = self.ask_mrtr(caller, expected).await?;
            Ok(Reply::Elicited(answer, unspent))
        } else {
            let answer = self.ask_push(self.question(caller, expected)).await?;
            Ok(Reply::Elicited(answer, None))
        }
    }
}
