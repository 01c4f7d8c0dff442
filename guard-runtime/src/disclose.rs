//! Disclosure, the second dimension of a call: what a tool that changes nothing may still
//! expose. A `#[read_only(discloses = "...")]` tool states its data boundary in a
//! [`Boundary`] (the target, the scope, the account, how many items), returns its result
//! as [`Disclosed`] (with the count it shows), and is bounded by the caps it declares, per
//! call and per session ([`Tally`]).

mod tally;

use rmcp::{handler::server::tool::IntoCallToolResult, model::MetaObject};
use serde_json::json;

#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use tally::PERIOD_MS;
pub(crate) use tally::Standing;
pub use tally::{PERIOD, Session, Shown, Tally};

/// What a disclosing tool may expose beyond the system it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Records about people or money: personal data, invoices, bank details.
    Sensitive,
    /// Secrets the data may hold by accident: passwords, tokens, keys, signed URLs.
    Credentials,
    /// Many records at once: an export, a search that pages through everything.
    Bulk,
    /// A bearer capability: a link or token that lets its holder read without asking.
    Capability,
}

impl Class {
    /// The class as `discloses = "..."`, `_meta.guard.discloses` and the audit log spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Sensitive => "sensitive",
            Class::Credentials => "credentials",
            Class::Bulk => "bulk",
            Class::Capability => "capability",
        }
    }

    /// What the class means, in the words the human and the tool's description read.
    pub fn sentence(self) -> &'static str {
        match self {
            Class::Sensitive => "It may contain sensitive records (personal or financial data).",
            Class::Credentials => {
                "It may contain secrets printed by accident (passwords, tokens, keys, signed links)."
            }
            Class::Bulk => "It is a bulk read: every item shown can be copied out of the system.",
            Class::Capability => {
                "It creates a link or token that lets whoever holds it read the data without asking anyone again."
            }
        }
    }
}

/// What "per session" means, where a tool's description states a session cap.
const SESSION: &str = " A session is one client connection; where the protocol has none \
     (2026-07-28, stateless HTTP) it is the caller's 24 hours from their first call, on \
     every connection and server of this service.";

/// A disclosing tool's declaration, fixed at compile time by `#[read_only(discloses = ...)]`.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// What the tool may expose.
    pub class: Class,
    /// The most items one call may show.
    pub max_items: Option<u64>,
    /// The most bytes of serialized result one call may show.
    pub max_bytes: Option<u64>,
    /// The most items all calls of this tool may show in one session.
    pub session_max_items: Option<u64>,
    /// The most bytes all calls of this tool may show in one session.
    pub session_max_bytes: Option<u64>,
}

impl Spec {
    /// The tool's `_meta`: `{"guard": {"discloses": class, "max_items": ..., ...}}`, the
    /// caps it declares only.
    pub fn meta(&self) -> MetaObject {
        let mut guard = serde_json::Map::new();
        guard.insert("discloses".into(), json!(self.class.as_str()));
        for (key, cap) in self.caps() {
            guard.insert(key.into(), json!(cap));
        }
        let mut meta = serde_json::Map::new();
        meta.insert("guard".into(), serde_json::Value::Object(guard));
        MetaObject(meta)
    }

    /// The sentence the tool's description ends with, so a client that shows descriptions
    /// shows the disclosure too.
    pub fn description(&self) -> String {
        let mut caps = Vec::new();
        if let Some(n) = self.max_items {
            caps.push(format!("at most {n} items per call"));
        }
        if let Some(n) = self.max_bytes {
            caps.push(format!("at most {n} bytes per call"));
        }
        if let Some(n) = self.session_max_items {
            caps.push(format!("at most {n} items per session"));
        }
        if let Some(n) = self.session_max_bytes {
            caps.push(format!("at most {n} bytes per session"));
        }
        let session = if self.session_max_items.is_some() || self.session_max_bytes.is_some() {
            SESSION
        } else {
            ""
        };
        let caps = if caps.is_empty() {
            String::new()
        } else {
            format!(" It shows {}.{session}", caps.join(", "))
        };
        format!(
            "Discloses {}: {} The user is asked before each call, with the data boundary stated.{caps}",
            self.class.as_str(),
            self.class.sentence()
        )
    }

    /// The scope a grant covers: the author's `words`, the class, the account read as (as the
    /// question states it: `", read as reporting"`, or nothing) and the per-call caps, as the
    /// human reads them in the offer.
    pub(crate) fn grant_scope(&self, words: &str, read_as: &str, noun: &Noun) -> String {
        let items = self.max_items.map(|n| format!("{n} {}", noun.of(n)));
        let bytes = self.max_bytes.map(|n| format!("{n} bytes"));
        let caps: Vec<String> = [items, bytes].into_iter().flatten().collect();
        let caps = match caps.as_slice() {
            [] => String::new(),
            caps => format!("; at most {} a call", caps.join(" and ")),
        };
        format!("{words} (discloses {}{read_as}{caps})", self.class.as_str())
    }

    fn caps(&self) -> impl Iterator<Item = (&'static str, u64)> {
        [
            ("max_items", self.max_items),
            ("max_bytes", self.max_bytes),
            ("session_max_items", self.session_max_items),
            ("session_max_bytes", self.session_max_bytes),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
    }
}

/// What a disclosing call's items are, as a count reads them: `"rows"` (the same word for
/// any count) or `("log line", "log lines")` (one, then many), so the human reads "1 log
/// line" and "412 log lines".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Noun {
    one: String,
    many: String,
}

impl Noun {
    /// The word for `count` items.
    pub fn of(&self, count: u64) -> &str {
        if count == 1 { &self.one } else { &self.many }
    }
}

impl From<&str> for Noun {
    fn from(word: &str) -> Self {
        Noun::from(word.to_owned())
    }
}

impl From<String> for Noun {
    fn from(word: String) -> Self {
        Noun {
            one: word.clone(),
            many: word,
        }
    }
}

impl From<(&str, &str)> for Noun {
    fn from((one, many): (&str, &str)) -> Self {
        Noun {
            one: one.to_owned(),
            many: many.to_owned(),
        }
    }
}

/// The data boundary of one disclosing call, in plain words: what a reviewer can judge
/// ("the full build log of job 42 in project web, 412 lines") rather than a tool's name.
/// The boundary function returns it; guard composes the question from it, checks its count
/// against the caps before asking, and computes it again before the handler runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Boundary {
    pub(crate) inner: Inner,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Inner {
    Nothing(String),
    Shown {
        target: String,
        scope: String,
        account: Option<String>,
        items: u64,
        noun: Noun,
        state: String,
        /// The scope a grant opened on this call covers, in the author's words.
        grant_scope: Option<String>,
    },
}

impl Boundary {
    /// `scope` of `target` will be shown: `Boundary::new("build job 42 of project web",
    /// "the full build log")`. State how many items with [`Boundary::items`].
    pub fn new(target: impl Into<String>, scope: impl Into<String>) -> Self {
        Boundary {
            inner: Inner::Shown {
                target: target.into(),
                scope: scope.into(),
                account: None,
                items: 1,
                noun: ("item", "items").into(),
                state: String::new(),
                grant_scope: None,
            },
        }
    }

    /// Nothing to show (no such job): the text goes back to the model and nobody is asked.
    pub fn nothing(text: impl Into<String>) -> Self {
        Boundary {
            inner: Inner::Nothing(text.into()),
        }
    }

    /// Read as (or on behalf of) this account.
    pub fn account(mut self, name: impl Into<String>) -> Self {
        if let Inner::Shown { account, .. } = &mut self.inner {
            *account = Some(name.into());
        }
        self
    }

    /// How many items the call shows, and what they are: `.items(412, ("log line", "log
    /// lines"))`, or one word for any count (`.items(3, "rows")`). Checked against the caps
    /// before the human is asked, and against the handler's count after.
    pub fn items(mut self, count: u64, what: impl Into<Noun>) -> Self {
        if let Inner::Shown { items, noun, .. } = &mut self.inner {
            *items = count;
            *noun = what.into();
        }
        self
    }

    /// The scope of calls this one belongs to, in plain words the human reads (`build logs
    /// in builds/`). A tool that declares `grant = ...` offers the human to let later calls
    /// whose boundary states the same scope show their data without asking; guard adds the
    /// class, the [account](Boundary::account) and the per-call caps to it, so a grant never
    /// covers a class, an account or a cap the human did not see. A boundary without one is
    /// never covered by a grant, and offers none.
    pub fn grant_scope(mut self, words: impl Into<String>) -> Self {
        if let Inner::Shown { grant_scope, .. } = &mut self.inner {
            *grant_scope = Some(words.into()).filter(|w: &String| !w.trim().is_empty());
        }
        self
    }

    /// State the human does not read that must not change before the data is shown (a
    /// modification time, a row version).
    pub fn with_state(mut self, value: impl Into<String>) -> Self {
        if let Inner::Shown { state, .. } = &mut self.inner {
            *state = value.into();
        }
        self
    }
}

/// A disclosing handler's result and how many items it shows: `Disclosed::new(lines, text)`.
/// guard checks the count against the caps and the boundary the human approved, and counts
/// the bytes of the serialized result itself.
#[derive(Debug)]
pub struct Disclosed<R> {
    pub(crate) items: u64,
    pub(crate) result: R,
}

impl<R> Disclosed<R> {
    /// `result`, which shows `items` items.
    pub fn new(items: u64, result: R) -> Self {
        Disclosed { items, result }
    }
}

/// What a disclosing handler may return: [`Disclosed<R>`], or `Result<Disclosed<R>, E>` with
/// an error rmcp can send. Implemented here only, for those two.
#[diagnostic::on_unimplemented(
    message = "a disclosing tool returns `Disclosed<_>` (or `Result<Disclosed<_>, _>`), not `{Self}`",
    label = "guard cannot tell how many items this shows",
    note = "wrap the result with its count: `Ok(rmcp_guard::Disclosed::new(items, result))`; guard checks the count against the caps and the boundary the user approved, and counts the bytes itself"
)]
pub trait IntoDisclosed: sealed::Sealed {
    /// The count the handler reported (none for an error) and rmcp's response.
    fn into_disclosed(
        self,
    ) -> (
        Option<u64>,
        Result<rmcp::model::CallToolResponse, rmcp::ErrorData>,
    );
}

mod sealed {
    pub trait Sealed {}
    impl<R> Sealed for super::Disclosed<R> {}
    impl<R, E> Sealed for Result<super::Disclosed<R>, E> {}
}

impl<R: IntoCallToolResult> IntoDisclosed for Disclosed<R> {
    fn into_disclosed(
        self,
    ) -> (
        Option<u64>,
        Result<rmcp::model::CallToolResponse, rmcp::ErrorData>,
    ) {
        (Some(self.items), self.result.into_call_tool_result())
    }
}

impl<R: IntoCallToolResult, E: IntoCallToolResult> IntoDisclosed for Result<Disclosed<R>, E> {
    fn into_disclosed(
        self,
    ) -> (
        Option<u64>,
        Result<rmcp::model::CallToolResponse, rmcp::ErrorData>,
    ) {
        match self {
            Ok(shown) => shown.into_disclosed(),
            // An error as rmcp sends one (`isError`, or a protocol error), whatever `E` is:
            // a `String` is no success text.
            Err(error) => (
                None,
                Err::<rmcp::model::CallToolResult, E>(error).into_call_tool_result(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: Spec = Spec {
        class: Class::Bulk,
        max_items: Some(10),
        max_bytes: None,
        session_max_items: Some(15),
        session_max_bytes: None,
    };

    #[test]
    fn a_count_reads_its_noun_in_the_singular_or_the_plural() {
        let lines = Noun::from(("log line", "log lines"));
        assert_eq!(
            [lines.of(0), lines.of(1), lines.of(2)],
            ["log lines", "log line", "log lines"]
        );
        let rows = Noun::from("rows");
        assert_eq!([rows.of(1), rows.of(3)], ["rows", "rows"]);
        assert_eq!(
            SPEC.grant_scope("every export", "", &Noun::from(("row", "rows"))),
            "every export (discloses bulk; at most 10 rows a call)"
        );
    }
}
