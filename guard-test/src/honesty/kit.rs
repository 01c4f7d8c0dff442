//! The kit, what it is given (a fixture factory and a probe), and the order of the cases.

use std::{any::Any, future::Future, sync::Arc, time::Duration};

use rmcp::{ServerHandler, model::ProtocolVersion};
use serde_json::Value;

use super::{
    disclosed::judge_disclosure,
    judging::{
        judge_answers, judge_destructive, judge_invalid, judge_once, judge_races, judge_repeats,
        judge_retry,
    },
    observe::{Observe, Snapshot, items_all, snapshot_all, times_all},
    reporting::{Claim, Report, canonical_text, error_case},
};
use crate::testing::Answer;

/// A fresh server and what observes its world. `keep` holds whatever must live as long as
/// the fixture (temporary directories).
pub struct Fixture<S> {
    /// The server under test.
    pub server: S,
    /// What reads the state the server changes.
    pub observers: Vec<Box<dyn Observe>>,
    keep: Vec<Box<dyn Any + Send>>,
}

impl<S> Fixture<S> {
    /// A fixture around `server`, observing nothing yet.
    pub fn new(server: S) -> Self {
        Self {
            server,
            observers: Vec::new(),
            keep: Vec::new(),
        }
    }

    /// Adds an observer of the state the tool may change: here a count the server keeps in
    /// memory, which no file observer sees (the example of the guide's annotations page).
    ///
    /// ```
    /// # use std::sync::{Arc, atomic::{AtomicU64, Ordering}};
    /// use rmcp_guard_test::honesty::{Fixture, FnObserver, Snapshot};
    /// #
    /// # #[derive(Clone, Default)]
    /// # struct Server {
    /// #     calls: Arc<AtomicU64>,
    /// # }
    /// #
    /// # fn fixture(server: Server) -> Fixture<Server> {
    ///
    /// let calls = server.calls.clone();
    /// Fixture::new(server).observe(FnObserver::new("call counter", move || {
    ///     let mut snapshot = Snapshot::default();
    ///     snapshot.insert("calls", calls.load(Ordering::SeqCst).to_string());
    ///     Ok(snapshot)
    /// }))
    /// # }
    /// # let fixture = fixture(Server::default());
    /// # assert_eq!(fixture.observers[0].snapshot().unwrap().0["calls"], "0");
    /// ```
    pub fn observe(mut self, observer: impl Observe + 'static) -> Self {
        self.observers.push(Box::new(observer));
        self
    }

    /// Keeps `value` (a temporary directory, say) alive until the case is over.
    pub fn keep(mut self, value: impl Any + Send) -> Self {
        self.keep.push(Box::new(value));
        self
    }

    pub(super) fn snapshot(&self) -> Result<Snapshot, String> {
        if self.observers.is_empty() {
            return Err("the fixture has no observers: nothing could be checked".into());
        }
        snapshot_all(&self.observers)
    }

    pub(super) fn items(&self) -> Result<Snapshot, String> {
        items_all(&self.observers)
    }

    /// The observers' times ([`Observe::times`]): only ever compared with another reading
    /// of this fixture.
    pub(super) fn times(&self) -> Result<Snapshot, String> {
        times_all(&self.observers)
    }
}

type HumanFor = Arc<dyn Fn(&Value) -> Answer + Send + Sync>;

/// The tool under test and the inputs to use.
#[derive(Clone)]
pub struct Probe {
    pub(super) tool: String,
    pub(super) args: Value,
    pub(super) invalid: Vec<Value>,
    pub(super) human: Option<HumanFor>,
}

impl Probe {
    /// `tool` called with `args` (a JSON object) as the ordinary valid input.
    pub fn new(tool: impl Into<String>, args: Value) -> Self {
        Self {
            tool: tool.into(),
            args,
            invalid: Vec::new(),
            human: None,
        }
    }

    /// Nonexistent targets, already-finished operations and invalid fields (case 3).
    pub fn invalid(mut self, inputs: impl IntoIterator<Item = Value>) -> Self {
        self.invalid.extend(inputs);
        self
    }

    /// What the human answers to every question a call asks. Without it the human cancels.
    pub fn human(self, answer: Answer) -> Self {
        self.human_for(move |_| answer.clone())
    }

    /// The human's answer, per call arguments.
    pub fn human_for(mut self, answer: impl Fn(&Value) -> Answer + Send + Sync + 'static) -> Self {
        self.human = Some(Arc::new(answer));
        self
    }
}

/// The kit: `factory` makes a fresh fixture for every case (and for every run of the
/// concurrent case).
pub struct Kit<F> {
    pub(super) factory: F,
    pub(super) protocol: ProtocolVersion,
    pub(super) patience: Duration,
    pub(super) repeats: usize,
    pub(super) races: usize,
    pub(super) in_flight: usize,
}

/// How many repeats follow a first call unless [`Kit::repeats`] says otherwise.
pub const DEFAULT_REPEATS: usize = 3;
/// How many runs of the concurrent case an idempotent tool gets unless [`Kit::races`] says
/// otherwise.
pub const DEFAULT_RACES: usize = 8;
/// How many identical calls each concurrent run sends at once unless [`Kit::in_flight`]
/// says otherwise.
pub const DEFAULT_IN_FLIGHT: usize = 4;

impl<F, Fut, S> Kit<F>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Fixture<S>>,
    S: ServerHandler + Clone + Send + Sync + 'static,
{
    /// Clients speak protocol 2025-11-25 (push elicitation) unless [`Kit::protocol`] says
    /// otherwise; [`DEFAULT_REPEATS`] repeats, [`DEFAULT_RACES`] concurrent runs of
    /// [`DEFAULT_IN_FLIGHT`] calls.
    pub fn new(factory: F) -> Self {
        Self {
            factory,
            protocol: ProtocolVersion::V_2025_11_25,
            patience: Duration::from_secs(60),
            repeats: DEFAULT_REPEATS,
            races: DEFAULT_RACES,
            in_flight: DEFAULT_IN_FLIGHT,
        }
    }

    /// The protocol era the clients speak (2026-07-28 drives MRTR rounds).
    pub fn protocol(mut self, protocol: ProtocolVersion) -> Self {
        self.protocol = protocol;
        self
    }

    /// The upper bound on every wait (for the server to receive a call, to react, to
    /// finish after the client left). Reaching it is reported, never asserted on timing.
    pub fn patience(mut self, patience: Duration) -> Self {
        self.patience = patience;
        self
    }

    /// How many times the valid input, and each invalid one, is repeated after its first
    /// call (at least 1). The odd repeats reuse the first call's session (the next JSON-RPC
    /// request id); the even ones each open a new session whose call carries another
    /// request id. A tool that writes on every n-th call needs `n - 1` repeats to be seen.
    pub fn repeats(mut self, repeats: usize) -> Self {
        self.repeats = repeats.max(1);
        self
    }

    /// How many runs of the concurrent case an idempotent tool gets, each on a fresh
    /// fixture (at least 1). The case stops at the first run that leaves a state different
    /// from one call and reports which run it was; a race lost one time in four is seen in
    /// 8 runs about nine times in ten.
    pub fn races(mut self, runs: usize) -> Self {
        self.races = runs.max(1);
        self
    }

    /// How many identical calls each concurrent run holds and releases together, each from
    /// a client of its own (at least 2).
    pub fn in_flight(mut self, calls: usize) -> Self {
        self.in_flight = calls.max(2);
        self
    }

    /// Runs the cases against `probe`'s tool.
    pub async fn check(&self, probe: &Probe) -> Report {
        let mut report = Report {
            tool: probe.tool.clone(),
            protocol: self.protocol.clone(),
            claims: None,
            cases: Vec::new(),
            observed: Vec::new(),
        };
        let request = canonical_text(&probe.args);

        // 1. Once, which also reads the tool's annotations.
        let one_call = match self.once(probe).await {
            Ok((claims, case)) => {
                report.claims = claims.clone();
                report.observed = case.observed.clone();
                let Some(claims) = claims else {
                    return report;
                };
                report
                    .cases
                    .push(judge_once(Claim::of(&claims), &request, &case));
                Some((claims, case))
            }
            Err(e) => {
                report
                    .cases
                    .push(error_case("one call with a valid input", &request, e));
                None
            }
        };
        let Some((claims, once)) = one_call else {
            return report;
        };
        let claim = Claim::of(&claims);
        let one_call = once.after.clone();

        // 2. Byte-identical repeats on the same fixture, on the same and on new sessions.
        let repeats = match self.fresh_series(probe).await {
            Ok(series) => {
                report
                    .cases
                    .push(judge_repeats(claim, self.repeats, &request, &series));
                Some(series)
            }
            Err(e) => {
                report
                    .cases
                    .push(error_case("byte-identical repeats", &request, e));
                None
            }
        };

        // 3. Nonexistent and invalid inputs, each repeated.
        match self.invalid(probe).await {
            Ok(results) => {
                let n = results.len();
                for (i, (args, series)) in results.into_iter().enumerate() {
                    report
                        .cases
                        .push(judge_invalid(claim, self.repeats, &args, &series, i + 1, n));
                }
            }
            Err(e) => report
                .cases
                .push(error_case("nonexistent or invalid inputs", &request, e)),
        }

        // 4. The client drops after the server received the call, then retries.
        report
            .cases
            .push(match self.dropped_then_retry(probe).await {
                Ok(retry) => judge_retry(claim, &request, &one_call, &retry),
                Err(e) => error_case("retry after the client dropped", &request, e),
            });

        // 5. Identical calls at once, in as many runs as it takes to see a race.
        let races = self.concurrent(claim, probe, &one_call).await;
        report
            .cases
            .push(judge_races(claim, &request, &one_call, &races));

        // 6. destructiveHint against what the valid calls deleted or overwrote.
        report.cases.push(judge_destructive(
            &claims,
            &request,
            &once,
            repeats.as_ref(),
        ));

        // 7. What the valid calls' answers disclosed, against the declared class and caps.
        let mut answers = vec![&once.outcome];
        if let Some(series) = &repeats {
            answers.extend(series.calls.iter().map(|c| &c.outcome));
        }
        report
            .cases
            .push(judge_disclosure(&claims, &request, &answers));

        // 8. A read-only tool's identical calls on one fixture should answer alike (another
        // fixture may hold other timestamps, so case 1's answer is not compared).
        let same_fixture: Vec<_> = repeats
            .iter()
            .flat_map(|series| series.calls.iter().map(|c| &c.outcome))
            .collect();
        report
            .cases
            .push(judge_answers(claim, &request, &same_fixture));

        report
    }
}
