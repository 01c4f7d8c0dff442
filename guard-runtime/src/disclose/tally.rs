//! The per-session budget of a disclosing tool, and what a session is: a client connection
//! where the protocol has one, else the caller's budget period ([`PERIOD`]). This is the
//! budget kept in the `Guard`'s memory; with an operation store, periods are kept in the
//! store instead (the `budget` module), so replicas share them.

use std::{
    sync::{Arc, Mutex, Weak},
    time::Duration,
};

use rmcp::model::InitializeRequestParams;

use super::Spec;

/// How long a budget period lasts: where there is no connection to end a session (2026-07-28
/// on every transport, stateless HTTP), a session is one person's use of one tool for this
/// long from the first call that showed anything.
pub const PERIOD: Duration = Duration::from_secs(24 * 60 * 60);

/// [`PERIOD`] in milliseconds, the unit every stored time is in.
pub(crate) const PERIOD_MS: i64 = PERIOD.as_millis() as i64;

/// Which session a call belongs to. A call on a client connection this process holds (a
/// stdio process, an HTTP session with its `Mcp-Session-Id`, both of 2025-11-25) belongs to
/// that connection, and its budget ends with it. A call that belongs to no connection
/// (2026-07-28, where rmcp builds a service per HTTP request; stateless HTTP) belongs to its
/// caller's budget period: every call of that person, on any connection or replica, counts
/// against one budget for [`PERIOD`].
#[derive(Clone)]
pub struct Session(Kind);

#[derive(Clone)]
enum Kind {
    /// The connection's initialize parameters, alive as long as it is.
    Connection(Weak<InitializeRequestParams>),
    /// The caller, canonical (`Person`'s tenant and user), or empty for a caller guard cannot
    /// identify: those share one budget.
    Period { tenant: String, user: String },
}

impl Session {
    /// The session of the connection that initialized with `info`.
    pub(crate) fn connection(info: &Arc<InitializeRequestParams>) -> Self {
        Session(Kind::Connection(Arc::downgrade(info)))
    }

    /// The budget period of the caller `tenant`/`user` (canonical; both empty for a caller
    /// nobody identified).
    pub(crate) fn period(tenant: &str, user: &str) -> Self {
        Session(Kind::Period {
            tenant: tenant.to_owned(),
            user: user.to_owned(),
        })
    }

    /// The caller whose budget period this is; `None` for a connection's session.
    pub(crate) fn caller(&self) -> Option<(&str, &str)> {
        match &self.0 {
            Kind::Period { tenant, user } => Some((tenant, user)),
            Kind::Connection(_) => None,
        }
    }

    fn same(&self, other: &Session) -> bool {
        match (&self.0, &other.0) {
            (Kind::Connection(a), Kind::Connection(b)) => a.ptr_eq(b),
            (Kind::Period { tenant, user }, Kind::Period { tenant: t, user: u }) => {
                tenant == t && user == u
            }
            _ => false,
        }
    }

    fn ended(&self) -> bool {
        matches!(&self.0, Kind::Connection(w) if w.strong_count() == 0)
    }
}

/// Items and bytes shown so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shown {
    /// Items shown.
    pub items: u64,
    /// Bytes of serialized results shown.
    pub bytes: u64,
}

impl Shown {
    /// `self` and `more` together.
    pub(crate) fn and(self, more: Shown) -> Shown {
        Shown {
            items: self.items.saturating_add(more.items),
            bytes: self.bytes.saturating_add(more.bytes),
        }
    }

    /// Whether `spec`'s session caps hold with this much shown.
    pub(crate) fn within(self, spec: &Spec) -> bool {
        let over = |cap: Option<u64>, n: u64| cap.is_some_and(|cap| n > cap);
        !over(spec.session_max_items, self.items) && !over(spec.session_max_bytes, self.bytes)
    }
}

/// A session's budget as it stands: what was shown in it, and when its period ends (ms since
/// the Unix epoch; none for a connection's session, which ends with the connection).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Standing {
    pub shown: Shown,
    pub ends: Option<i64>,
}

/// What each tool has shown in each session, in memory: the budgets of connections (which
/// end with them, and a restart ends every connection), and, for a `Guard` without an
/// operation store, the callers' budget periods. Every service rmcp builds from one `Guard`
/// (one per request on 2026-07-28) reads the same tally.
#[derive(Default)]
pub struct Tally {
    shown: Mutex<Vec<Budget>>,
}

struct Budget {
    session: Session,
    tool: &'static str,
    standing: Standing,
}

impl Tally {
    /// What `tool` has shown in `session` so far, at `now` (ms since the Unix epoch).
    pub(crate) fn so_far(&self, session: &Session, tool: &'static str, now: i64) -> Standing {
        let shown = self.shown.lock().unwrap_or_else(|p| p.into_inner());
        shown
            .iter()
            .find(|b| b.tool == tool && b.session.same(session) && !b.over(now))
            .map(|b| b.standing)
            .unwrap_or_default()
    }

    /// Adds `more` to what `tool` has shown in `session` if the session's caps still hold
    /// after it, in one step (two calls racing cannot both pass on the same room); else
    /// the budget as it was, unchanged. A period that ended by `now` starts again with it.
    pub(crate) fn take(
        &self,
        session: &Session,
        tool: &'static str,
        spec: &Spec,
        more: Shown,
        now: i64,
    ) -> Result<Standing, Standing> {
        let mut shown = self.shown.lock().unwrap_or_else(|p| p.into_inner());
        shown.retain(|b| !b.session.ended() && !b.over(now));
        let at = match shown
            .iter()
            .position(|b| b.tool == tool && b.session.same(session))
        {
            Some(at) => at,
            None => {
                let ends = session.caller().map(|_| now.saturating_add(PERIOD_MS));
                shown.push(Budget {
                    session: session.clone(),
                    tool,
                    standing: Standing {
                        shown: Shown::default(),
                        ends,
                    },
                });
                shown.len() - 1
            }
        };
        let before = shown[at].standing;
        let after = before.shown.and(more);
        if !after.within(spec) {
            if before.shown == Shown::default() {
                shown.swap_remove(at);
            }
            return Err(before);
        }
        shown[at].standing.shown = after;
        Ok(shown[at].standing)
    }
}

impl Budget {
    /// Whether its period ended by `now`.
    fn over(&self, now: i64) -> bool {
        self.standing.ends.is_some_and(|ends| ends <= now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disclose::Class;

    const SPEC: Spec = Spec {
        class: Class::Bulk,
        max_items: Some(10),
        max_bytes: None,
        session_max_items: Some(15),
        session_max_bytes: None,
    };

    fn session() -> (Arc<InitializeRequestParams>, Session) {
        let info = Arc::new(InitializeRequestParams::default());
        let session = Session::connection(&info);
        (info, session)
    }

    fn items(items: u64) -> Shown {
        Shown { items, bytes: 0 }
    }

    #[test]
    fn a_session_is_capped_and_another_is_not() {
        let tally = Tally::default();
        let (_a_info, a) = session();
        let (_b_info, b) = session();
        let ten = Shown {
            items: 10,
            bytes: 5,
        };
        assert_eq!(tally.take(&a, "t", &SPEC, ten, 0).unwrap().shown.items, 10);
        assert_eq!(
            tally.take(&a, "t", &SPEC, ten, 0),
            Err(Standing {
                shown: Shown {
                    items: 10,
                    bytes: 5
                },
                ends: None
            })
        );
        assert_eq!(tally.so_far(&a, "t", 0).shown.items, 10);
        assert!(tally.take(&b, "t", &SPEC, ten, 0).is_ok());
        assert!(tally.take(&a, "other", &SPEC, ten, 0).is_ok());
    }

    #[test]
    fn an_ended_session_is_forgotten() {
        let tally = Tally::default();
        let (info, a) = session();
        tally.take(&a, "t", &SPEC, items(10), 0).unwrap();
        drop(info);
        let (_b_info, b) = session();
        tally.take(&b, "t", &SPEC, items(1), 0).unwrap();
        assert_eq!(tally.shown.lock().unwrap().len(), 1);
    }

    #[test]
    fn a_callers_period_is_one_budget_until_it_ends() {
        let tally = Tally::default();
        let alice = Session::period("acme", "alice");
        let again = Session::period("acme", "alice");
        let bob = Session::period("acme", "bob");
        let start = 1_000;
        let taken = tally.take(&alice, "t", &SPEC, items(10), start).unwrap();
        assert_eq!(taken.ends, Some(start + PERIOD_MS));
        // The same person on another request (another service, another connection).
        let refused = tally
            .take(&again, "t", &SPEC, items(6), start + 1)
            .unwrap_err();
        assert_eq!(refused.shown.items, 10);
        assert!(tally.take(&again, "t", &SPEC, items(5), start + 2).is_ok());
        assert!(tally.take(&bob, "t", &SPEC, items(15), start).is_ok());
        let last = start + PERIOD_MS - 1;
        assert!(tally.take(&alice, "t", &SPEC, items(1), last).is_err());
        // The period ends: the budget starts again, and the old one is forgotten.
        let next = start + PERIOD_MS;
        assert_eq!(tally.so_far(&alice, "t", next).shown, Shown::default());
        let taken = tally.take(&alice, "t", &SPEC, items(15), next).unwrap();
        assert_eq!(taken.ends, Some(next + PERIOD_MS));
        assert_eq!(tally.shown.lock().unwrap().len(), 1, "bob's ended too");
    }

    #[test]
    fn a_refused_first_take_leaves_no_budget_behind() {
        let tally = Tally::default();
        let alice = Session::period("acme", "alice");
        assert!(tally.take(&alice, "t", &SPEC, items(16), 0).is_err());
        assert!(tally.shown.lock().unwrap().is_empty());
    }
}
