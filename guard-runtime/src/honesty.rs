//! The annotation-honesty kit: runs a tool of a real rmcp server through six cases, each on
//! a fresh fixture, observes the state the tool can touch before and after, and checks
//! `readOnlyHint`, `idempotentHint` and `destructiveHint` against what really changed.
//!
//! 1. one call with a valid input;
//! 2. byte-identical repeats right after it ([`Kit::repeats`], default
//!    [`DEFAULT_REPEATS`]): the odd repeats on the first call's session (so the JSON-RPC
//!    request id moves on), the even ones each on a new session whose call carries another
//!    request id than a fresh session's first call, so a tool that deduplicates on the
//!    request id, on the session, or writes on every n-th call (n ≤ repeats + 1) is seen;
//! 3. nonexistent and invalid inputs, each also repeated [`Kit::repeats`] times;
//! 4. the client's connection breaks after the server received the call, then a new client
//!    retries the same call;
//! 5. [`Kit::in_flight`] identical calls released together from as many clients, in up to
//!    [`Kit::races`] runs on fresh fixtures for an idempotent claim; the report names the run
//!    in which a race first showed;
//! 6. what the valid calls of cases 1 and 2 deleted or overwrote, against `destructiveHint`.
//!
//! A `readOnlyHint: true` tool fails if any case changed any observed state. An
//! `idempotentHint: true` tool fails if any repeat of a valid or a failed call changed
//! anything, or if the retry or any concurrent run left a state different from one call. A
//! `destructiveHint: false` (or read-only) tool fails if a valid call deleted or overwrote an
//! observed item ([`Observe::items`]: a row, a file, a message); adding items is not
//! destructive. Claims a tool does not make are reported, not judged. Annotations are
//! hints; this kit is how a server proves its hints.
//!
//! # What the kit sees, and what it cannot
//!
//! It sees **only what the fixture's observers read**, at the moments between calls:
//!
//! - [`SqliteObserver`]: every table's rows and schema, indexes, views, triggers,
//!   `sqlite_sequence` and `user_version` of one SQLite file (minus columns it was told to
//!   ignore). It does not see other pragmas (`journal_mode`, `page_size`, …), the file's
//!   modification time or size, its `-wal` and `-shm` files, or another database;
//! - [`DirObserver`]: every entry under one directory, with type, size, content digest and
//!   permissions; not modification or access times, not anything outside the root, not
//!   what a symlink points at beyond its text;
//! - [`OutboxObserver`]: the messages sent through guard's outbox; not a message sent any
//!   other way;
//! - [`FnObserver`] or your own [`Observe`]: whatever you read.
//!
//! Everything else is **invisible** and passes unseen: a file elsewhere on disk, in-memory
//! state of the server (caches, counters, a `static`), an HTTP call to a remote API, a
//! message on a queue, a process spawned, a log line, time-dependent behaviour between
//! readings, and any state of another fixture. A tool that writes there lies undetected
//! unless you observe it. The kit also judges only the calls it makes: the inputs you give
//! in the [`Probe`], the number of repeats and runs you configure; a write on the
//! hundredth call, or a race rarer than the runs can show, is not seen.
//!
//! # Observing state of your own
//!
//! Implement [`Observe`] (a label and a [`Snapshot`] of key → description; optionally
//! [`Observe::items`] item by item for the `destructiveHint` judgement) or wrap a closure in
//! [`FnObserver`], and add it with [`Fixture::observe`]. For a remote system, read its
//! records (or a recording fake's) in `snapshot`; for a counter, report its value; for a file
//! outside the fixture, its digest. Readings of fresh fixtures are compared with each other,
//! so describe state, never a timestamp or a temporary path.
//!
//! ```no_run
//! # async fn run(db: std::path::PathBuf, server: impl rmcp::ServerHandler + Clone + Send + Sync + 'static) {
//! use rmcp_guard::honesty::{Fixture, Kit, Probe, SqliteObserver};
//! let kit = Kit::new(move || {
//!     let (db, server) = (db.clone(), server.clone());
//!     async move { Fixture::new(server).observe(SqliteObserver::new(db)) }
//! });
//! let report = kit.check(&Probe::new("list_tables", serde_json::json!({}))).await;
//! println!("{report}");
//! assert!(report.passed());
//! # }
//! ```

mod observe;
mod proxy;

use std::{any::Any, fmt, future::Future, sync::Arc, time::Duration};

use rmcp::{
    RoleClient, ServerHandler,
    model::{CallToolRequestParams, CallToolResult, ProtocolVersion, ToolAnnotations},
    service::{RunningService, ServiceError},
};
use serde_json::Value;

#[cfg(feature = "sqlite")]
pub use observe::SqliteObserver;
pub use observe::{
    Change, DirObserver, FnObserver, Observe, OutboxObserver, Snapshot, items_all, snapshot_all,
};
pub use proxy::{Gate, Link, Reaction};

use crate::{
    canonical::canonical_json,
    testing::{Answer, ScriptedHuman},
};

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

    /// Adds an observer of the state the tool may change.
    pub fn observe(mut self, observer: impl Observe + 'static) -> Self {
        self.observers.push(Box::new(observer));
        self
    }

    /// Keeps `value` (a temporary directory, say) alive until the case is over.
    pub fn keep(mut self, value: impl Any + Send) -> Self {
        self.keep.push(Box::new(value));
        self
    }

    fn snapshot(&self) -> Result<Snapshot, String> {
        if self.observers.is_empty() {
            return Err("the fixture has no observers: nothing could be checked".into());
        }
        snapshot_all(&self.observers)
    }

    fn items(&self) -> Result<Snapshot, String> {
        items_all(&self.observers)
    }
}

type HumanFor = Arc<dyn Fn(&Value) -> Answer + Send + Sync>;

/// The tool under test and the inputs to use.
#[derive(Clone)]
pub struct Probe {
    tool: String,
    args: Value,
    invalid: Vec<Value>,
    human: Option<HumanFor>,
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

/// The claims a tool makes in `tools/list`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Claims {
    /// `readOnlyHint`, if set.
    pub read_only: Option<bool>,
    /// `destructiveHint`, if set.
    pub destructive: Option<bool>,
    /// `idempotentHint`, if set.
    pub idempotent: Option<bool>,
}

impl Claims {
    fn from(annotations: Option<&ToolAnnotations>) -> Self {
        annotations.map_or_else(Self::default, |a| Self {
            read_only: a.read_only_hint,
            destructive: a.destructive_hint,
            idempotent: a.idempotent_hint,
        })
    }

    /// The claim the kit holds the tool to.
    fn claim(&self) -> Claim {
        if self.read_only == Some(true) {
            Claim::ReadOnly
        } else if self.idempotent == Some(true) {
            Claim::Idempotent
        } else {
            Claim::None
        }
    }
}

impl fmt::Display for Claims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hint = |v: Option<bool>| v.map_or("unset".to_owned(), |b| b.to_string());
        write!(
            f,
            "readOnlyHint: {}, destructiveHint: {}, idempotentHint: {}",
            hint(self.read_only),
            hint(self.destructive),
            hint(self.idempotent)
        )
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Claim {
    ReadOnly,
    Idempotent,
    None,
}

/// How one case came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// What was observed agrees with the tool's claim.
    Consistent,
    /// What was observed contradicts the tool's claim.
    Contradicts,
    /// The tool claims nothing this case could check: reported, not judged.
    Reported,
    /// The case could not be run.
    Error,
}

/// One case, in the seed's format.
#[derive(Debug, Clone)]
pub struct CaseReport {
    /// Which case ran.
    pub case: String,
    /// The calls made.
    pub request: String,
    /// What the first call answered.
    pub first_call: String,
    /// What the later calls answered.
    pub second_call: String,
    /// The observed changes (and, for cases compared with one call, the differences).
    pub remote_records: Vec<String>,
    /// The judgement in words.
    pub result: String,
    /// The judgement.
    pub verdict: Verdict,
}

impl fmt::Display for CaseReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let records = if self.remote_records.is_empty() {
            "none (nothing observed changed)".to_owned()
        } else {
            serde_json::to_string(&self.remote_records).unwrap_or_default()
        };
        writeln!(f, "case: {}", self.case)?;
        writeln!(f, "request: {}", self.request)?;
        writeln!(f, "first call: {}", self.first_call)?;
        writeln!(f, "second call: {}", self.second_call)?;
        writeln!(f, "remote records: {records}")?;
        writeln!(f, "result: {}", self.result)
    }
}

/// Everything the kit found about one tool.
#[derive(Debug, Clone)]
pub struct Report {
    /// The tool checked.
    pub tool: String,
    /// The protocol version the calls used.
    pub protocol: ProtocolVersion,
    /// `None` if the tool is not in `tools/list`.
    pub claims: Option<Claims>,
    /// One report per case.
    pub cases: Vec<CaseReport>,
}

impl Report {
    /// No case contradicts the tool's claims and every case ran.
    pub fn passed(&self) -> bool {
        self.claims.is_some()
            && self
                .cases
                .iter()
                .all(|c| matches!(c.verdict, Verdict::Consistent | Verdict::Reported))
    }

    /// The result lines of the cases that contradict a claim or could not run.
    pub fn failures(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .cases
            .iter()
            .filter(|c| matches!(c.verdict, Verdict::Contradicts | Verdict::Error))
            .map(|c| format!("{}: {}", c.case, c.result))
            .collect();
        if self.claims.is_none() {
            out.insert(0, format!("{} is not in tools/list", self.tool));
        }
        out
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let claims = self
            .claims
            .as_ref()
            .map_or("not listed".to_owned(), ToString::to_string);
        writeln!(
            f,
            "tool: {} ({claims}) on protocol {}",
            self.tool, self.protocol
        )?;
        for case in &self.cases {
            writeln!(f)?;
            write!(f, "{case}")?;
        }
        writeln!(f)?;
        let failures = self.failures();
        if failures.is_empty() {
            writeln!(f, "verdict: PASS ({} cases)", self.cases.len())
        } else {
            writeln!(
                f,
                "verdict: FAIL ({} of {} cases)",
                failures.len(),
                self.cases.len()
            )
        }
    }
}

/// The kit: `factory` makes a fresh fixture for every case (and for every run of the
/// concurrent case).
pub struct Kit<F> {
    factory: F,
    protocol: ProtocolVersion,
    patience: Duration,
    repeats: usize,
    races: usize,
    in_flight: usize,
}

type Client = RunningService<RoleClient, ScriptedHuman>;
type CallOutcome = Result<CallToolResult, ServiceError>;

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
        };
        let request = canonical_text(&probe.args);

        // 1. Once, which also reads the tool's annotations.
        let one_call = match self.once(probe).await {
            Ok((claims, case)) => {
                report.claims = claims.clone();
                let Some(claims) = claims else {
                    return report;
                };
                let claim = claims.claim();
                let changes = case.before.describe_diff(&case.after);
                let (result, verdict) = judge_read_only(claim, &changes, || match claim {
                    Claim::Idempotent => (
                        "a first call may change state; idempotentHint is about what follows it"
                            .to_owned(),
                        Verdict::Consistent,
                    ),
                    _ => no_claim(&changes),
                });
                report.cases.push(CaseReport {
                    case: "one call with a valid input".into(),
                    request: request.clone(),
                    first_call: summarize(&case.outcome),
                    second_call: "none".into(),
                    remote_records: changes,
                    result,
                    verdict,
                });
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
        let claim = claims.claim();
        let one_call = once.after.clone();

        // 2. Byte-identical repeats on the same fixture, on the same and on new sessions.
        let repeats = match self.fresh_series(probe).await {
            Ok(series) => {
                report
                    .cases
                    .push(self.judge_repeats(claim, &request, &series));
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
                        .push(self.judge_invalid(claim, &args, &series, i + 1, n));
                }
            }
            Err(e) => report
                .cases
                .push(error_case("nonexistent or invalid inputs", &request, e)),
        }

        // 4. The client drops after the server received the call, then retries.
        report.cases.push(match self.dropped_then_retry(probe).await {
            Ok(r) => {
                let total = r.before.describe_diff(&r.after);
                let mut records = vec![format!(
                    "after the dropped call: {}",
                    listing(&r.before.describe_diff(&r.middle))
                )];
                records.push(format!(
                    "after the retry: {}",
                    listing(&r.middle.describe_diff(&r.after))
                ));
                let versus = one_call.describe_diff(&r.after);
                records.push(format!("compared with one call: {}", same_or(&versus)));
                let dropped_changed = r.before != r.middle;
                let (result, verdict) = if claim == Claim::ReadOnly && dropped_changed {
                    (
                        format!(
                            "NOT read-only: readOnlyHint is true but the dropped call changed {}",
                            keys(&r.before, &r.middle)
                        ),
                        Verdict::Contradicts,
                    )
                } else {
                    judge_read_only(claim, &total, || {
                        judge_one_effect(
                            claim,
                            &one_call,
                            &r.after,
                            "the retry after a dropped connection",
                        )
                    })
                };
                CaseReport {
                    case: "retry after the client dropped the connection".into(),
                    request: request.clone(),
                    first_call: r.first,
                    second_call: summarize(&r.second),
                    remote_records: records,
                    result,
                    verdict,
                }
            }
            Err(e) => error_case("retry after the client dropped", &request, e),
        });

        // 5. Identical calls at once, in as many runs as it takes to see a race.
        report
            .cases
            .push(self.concurrent(claim, probe, &request, &one_call).await);

        // 6. destructiveHint against what the valid calls deleted or overwrote.
        report.cases.push(judge_destructive(
            &claims,
            &request,
            &once,
            repeats.as_ref(),
        ));

        report
    }

    fn judge_repeats(&self, claim: Claim, request: &str, series: &Series) -> CaseReport {
        let middle = &series.calls[0].after;
        let last = series.last();
        let total = series.before.describe_diff(last);
        let by_repeats = middle.describe_diff(last);
        let mut records = total.clone();
        let mut previous = middle;
        let mut first_change = None;
        for (i, call) in series.calls.iter().enumerate().skip(1) {
            let changed = previous.describe_diff(&call.after);
            if !changed.is_empty() && first_change.is_none() {
                first_change = Some((i, call, previous));
            }
            records.push(format!(
                "repeat {i} of {} ({}): {}",
                self.repeats,
                call.how,
                listing(&changed)
            ));
            previous = &call.after;
        }
        let (result, verdict) = judge_read_only(claim, &total, || match (claim, first_change) {
            (Claim::Idempotent, None) => (
                format!(
                    "consistent with idempotentHint: {} identical repeats, on the same session and on new ones, changed nothing",
                    self.repeats
                ),
                Verdict::Consistent,
            ),
            (Claim::Idempotent, Some((i, call, before))) => (
                format!(
                    "NOT idempotent: idempotentHint is true but repeat {i} of {} ({}) changed {}",
                    self.repeats,
                    call.how,
                    keys(before, &call.after)
                ),
                Verdict::Contradicts,
            ),
            _ if by_repeats.is_empty() => (
                "the repeats changed nothing (no idempotency claimed)".into(),
                Verdict::Reported,
            ),
            _ => (
                format!(
                    "not idempotent: the repeats changed {} (none claimed)",
                    keys(middle, last)
                ),
                Verdict::Reported,
            ),
        });
        CaseReport {
            case: format!(
                "byte-identical repeats right after the first call ({})",
                self.repeats
            ),
            request: request.to_owned(),
            first_call: summarize(&series.calls[0].outcome),
            second_call: series.repeat_summaries(),
            remote_records: records,
            result,
            verdict,
        }
    }

    fn judge_invalid(
        &self,
        claim: Claim,
        args: &Value,
        series: &Series,
        i: usize,
        n: usize,
    ) -> CaseReport {
        let first = &series.calls[0];
        let last = series.last();
        let changes = series.before.describe_diff(last);
        let by_repeats = first.after.describe_diff(last);
        let mut records = changes.clone();
        if !by_repeats.is_empty() {
            records.push(format!(
                "changed by the {} repeats: {}",
                self.repeats,
                listing(&by_repeats)
            ));
        }
        let (result, verdict) = judge_read_only(claim, &changes, || {
            if claim == Claim::Idempotent && !by_repeats.is_empty() {
                (
                    format!(
                        "NOT idempotent: idempotentHint is true but repeating this failed call changed {}",
                        keys(&first.after, last)
                    ),
                    Verdict::Contradicts,
                )
            } else if changes.is_empty() {
                (
                    format!(
                        "nothing observable changed in 1 call and {} repeats",
                        self.repeats
                    ),
                    if claim == Claim::Idempotent {
                        Verdict::Consistent
                    } else {
                        Verdict::Reported
                    },
                )
            } else {
                (
                    format!(
                        "a nonexistent or invalid input changed {}",
                        keys(&series.before, last)
                    ),
                    if claim == Claim::Idempotent {
                        Verdict::Consistent
                    } else {
                        Verdict::Reported
                    },
                )
            }
        });
        CaseReport {
            case: format!("nonexistent or invalid input {i} of {n}"),
            request: canonical_text(args),
            first_call: summarize(&first.outcome),
            second_call: series.repeat_summaries(),
            remote_records: records,
            result,
            verdict,
        }
    }

    /// `n` answers to the questions of `n` calls of `args`.
    fn human(&self, probe: &Probe, args: &Value, n: usize) -> ScriptedHuman {
        let human = ScriptedHuman::new(self.protocol.clone());
        if let Some(answer) = &probe.human {
            for _ in 0..n {
                human.will(answer(args));
            }
        }
        human
    }

    async fn connect(
        &self,
        server: S,
        human: ScriptedHuman,
        gate: Option<Arc<Gate>>,
        cut_after_call: bool,
    ) -> Result<(Client, Link), String> {
        let (io, link) = Link::open(server, gate, cut_after_call);
        let client = tokio::time::timeout(self.patience, human.connect(io))
            .await
            .map_err(|_| "the client could not finish connecting".to_owned())?
            .map_err(|e| format!("the client could not connect: {e}"))?;
        Ok((client, link))
    }

    /// Closes the client and waits (bounded) for the server to finish.
    async fn hang_up(&self, client: Client, link: Link) {
        let _ = client.cancel().await;
        let _ = tokio::time::timeout(self.patience, link.server).await;
    }

    /// One call on a session of its own, after `shift` other requests on that session, so
    /// its JSON-RPC request id differs from that of a call on a fresh session.
    async fn call(
        &self,
        server: S,
        probe: &Probe,
        args: &Value,
        shift: usize,
    ) -> Result<CallOutcome, String> {
        let (client, link) = self
            .connect(server, self.human(probe, args, 1), None, false)
            .await?;
        for _ in 0..shift {
            if let Err(e) = client.list_all_tools().await {
                self.hang_up(client, link).await;
                return Err(format!("tools/list failed: {e}"));
            }
        }
        let outcome = client.call_tool(params(&probe.tool, args)?).await;
        self.hang_up(client, link).await;
        Ok(outcome)
    }

    async fn once(&self, probe: &Probe) -> Result<(Option<Claims>, Once), String> {
        let fixture = (self.factory)().await;
        let before = fixture.snapshot()?;
        let before_items = fixture.items()?;
        let (client, link) = self
            .connect(
                fixture.server.clone(),
                self.human(probe, &probe.args, 1),
                None,
                false,
            )
            .await?;
        let tools = client
            .list_all_tools()
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        let Some(tool) = tools.iter().find(|t| t.name == probe.tool) else {
            self.hang_up(client, link).await;
            return Ok((
                None,
                Once {
                    before: before.clone(),
                    after: before,
                    before_items: before_items.clone(),
                    after_items: before_items,
                    outcome: Err(ServiceError::UnexpectedResponse),
                },
            ));
        };
        let claims = Claims::from(tool.annotations.as_ref());
        let outcome = client.call_tool(params(&probe.tool, &probe.args)?).await;
        self.hang_up(client, link).await;
        let after = fixture.snapshot()?;
        let after_items = fixture.items()?;
        Ok((
            Some(claims),
            Once {
                before,
                after,
                before_items,
                after_items,
                outcome,
            },
        ))
    }

    async fn fresh_series(&self, probe: &Probe) -> Result<Series, String> {
        let fixture = (self.factory)().await;
        self.series(&fixture, probe, &probe.args).await
    }

    /// One call of `args` on a session of its own, then [`Kit::repeats`] more: the odd
    /// repeats on that same session (each with the next request id), the even ones each on
    /// a new session, after as many other requests as the repeat's number (so their call's
    /// request id differs too). A snapshot after every call.
    async fn series(
        &self,
        fixture: &Fixture<S>,
        probe: &Probe,
        args: &Value,
    ) -> Result<Series, String> {
        let before = fixture.snapshot()?;
        let before_items = fixture.items()?;
        let on_first_session = 1 + self.repeats.div_ceil(2);
        let (session, link) = self
            .connect(
                fixture.server.clone(),
                self.human(probe, args, on_first_session),
                None,
                false,
            )
            .await?;
        let mut calls = Vec::new();
        let ran = async {
            let outcome = session.call_tool(params(&probe.tool, args)?).await;
            calls.push(SeriesCall {
                how: "a new session".into(),
                outcome,
                after: fixture.snapshot()?,
            });
            for i in 1..=self.repeats {
                let (how, outcome) = if i % 2 == 1 {
                    let outcome = session.call_tool(params(&probe.tool, args)?).await;
                    (
                        "the first call's session, the next request id".to_owned(),
                        outcome,
                    )
                } else {
                    let outcome = self.call(fixture.server.clone(), probe, args, i).await?;
                    (
                        format!("a new session, the request id shifted by {i}"),
                        outcome,
                    )
                };
                calls.push(SeriesCall {
                    how,
                    outcome,
                    after: fixture.snapshot()?,
                });
            }
            Ok::<_, String>(())
        }
        .await;
        self.hang_up(session, link).await;
        ran?;
        Ok(Series {
            before,
            before_items,
            after_items: fixture.items()?,
            calls,
        })
    }

    async fn invalid(&self, probe: &Probe) -> Result<Vec<(Value, Series)>, String> {
        let fixture = (self.factory)().await;
        let mut out = Vec::new();
        for args in &probe.invalid {
            let series = self.series(&fixture, probe, args).await?;
            out.push((args.clone(), series));
        }
        Ok(out)
    }

    async fn dropped_then_retry(&self, probe: &Probe) -> Result<Retry, String> {
        let fixture = (self.factory)().await;
        let before = fixture.snapshot()?;
        // Nobody will answer this client: it is gone before any question could reach it.
        let gone = ScriptedHuman::new(self.protocol.clone());
        gone.will(Answer::Ignore);
        let (client, mut link) = self
            .connect(fixture.server.clone(), gone, None, true)
            .await?;
        let call_params = params(&probe.tool, &probe.args)?;
        let call = tokio::spawn(async move {
            let _ = client.call_tool(call_params).await;
        });
        let received = tokio::time::timeout(self.patience, link.call_received())
            .await
            .unwrap_or(false);
        if !received {
            call.abort();
            return Err("the call never reached the server".into());
        }
        let reaction = tokio::time::timeout(self.patience, link.server_reacted())
            .await
            .ok()
            .flatten();
        // The client goes away for good; then the server's input ends.
        call.abort();
        let _ = call.await;
        link.close_server();
        let finished = tokio::time::timeout(self.patience, link.server)
            .await
            .is_ok();
        let middle = self.settle(&fixture).await?;
        let first = format!(
            "the connection broke after the server received the request; {}{}",
            match &reaction {
                Some(Reaction::Answered(answer)) =>
                    format!("the server's answer was lost: {}", summarize_wire(answer)),
                Some(Reaction::Asked) => "the server was asking the human, who was gone".to_owned(),
                None => "the server did not react in time".to_owned(),
            },
            if finished {
                ""
            } else {
                " (the server had not finished when the wait ended)"
            }
        );
        // The retry is a new session whose call carries another request id.
        let second = self
            .call(fixture.server.clone(), probe, &probe.args, 1)
            .await?;
        let after = fixture.snapshot()?;
        Ok(Retry {
            before,
            middle,
            after,
            first,
            second,
        })
    }

    /// Case 5: [`Kit::in_flight`] identical calls released together, each from its own
    /// client, on a fresh fixture; for an idempotent claim up to [`Kit::races`] runs,
    /// stopping at the first that leaves a state different from one call.
    async fn concurrent(
        &self,
        claim: Claim,
        probe: &Probe,
        request: &str,
        one_call: &Snapshot,
    ) -> CaseReport {
        let n = self.in_flight;
        let runs = if claim == Claim::Idempotent {
            self.races
        } else {
            1
        };
        let name = format!(
            "identical calls at once: {n} clients, up to {}",
            if runs == 1 {
                "1 run".to_owned()
            } else {
                format!("{runs} runs")
            }
        );
        let mut last = None;
        for run in 1..=runs {
            let burst = match self.burst(probe).await {
                Ok(burst) => burst,
                Err(e) => return error_case(&name, request, format!("run {run}: {e}")),
            };
            let raced = &burst.after != one_call;
            last = Some((run, burst));
            if raced {
                break;
            }
        }
        let Some((run, burst)) = last else {
            return error_case(&name, request, "no run".into());
        };
        let total = burst.before.describe_diff(&burst.after);
        let mut records = total.clone();
        let versus = one_call.describe_diff(&burst.after);
        records.push(format!(
            "run {run} of {runs}, compared with one call: {}",
            same_or(&versus)
        ));
        let what = format!("run {run} of {runs} ({n} identical calls at once)");
        let (result, verdict) = judge_read_only(claim, &total, || {
            match judge_one_effect(claim, one_call, &burst.after, &what) {
                (_, Verdict::Contradicts) => (
                    format!(
                        "NOT idempotent: idempotentHint is true but {what} left a state different from one call ({}); the race showed in run {run}",
                        keys(one_call, &burst.after)
                    ),
                    Verdict::Contradicts,
                ),
                (_, Verdict::Consistent) => (
                    format!(
                        "consistent with idempotentHint: {runs} runs of {n} identical calls at once each left the same state as one call"
                    ),
                    Verdict::Consistent,
                ),
                other => other,
            }
        });
        let mut outcomes = burst.outcomes.iter().map(summarize);
        CaseReport {
            case: name,
            request: request.to_owned(),
            first_call: outcomes.next().unwrap_or_default(),
            second_call: outcomes.collect::<Vec<_>>().join(" | "),
            remote_records: records,
            result,
            verdict,
        }
    }

    async fn burst(&self, probe: &Probe) -> Result<Burst, String> {
        let fixture = (self.factory)().await;
        let before = fixture.snapshot()?;
        let gate = Gate::new(self.in_flight);
        let mut sessions = Vec::new();
        for _ in 0..self.in_flight {
            let (client, link) = self
                .connect(
                    fixture.server.clone(),
                    self.human(probe, &probe.args, 1),
                    Some(gate.clone()),
                    false,
                )
                .await?;
            sessions.push((Arc::new(client), link));
        }
        let mut calls = tokio::task::JoinSet::new();
        for (i, (client, _)) in sessions.iter().enumerate() {
            let (client, gate, probe) = (client.clone(), gate.clone(), probe.clone());
            calls.spawn(async move { (i, call_on(&client, &gate, &probe).await) });
        }
        let mut outcomes: Vec<Option<CallOutcome>> = (0..self.in_flight).map(|_| None).collect();
        while let Some(done) = calls.join_next().await {
            if let Ok((i, outcome)) = done {
                outcomes[i] = Some(outcome);
            }
        }
        for (client, link) in sessions {
            match Arc::into_inner(client) {
                Some(client) => self.hang_up(client, link).await,
                None => link.server.abort(),
            }
        }
        let after = fixture.snapshot()?;
        Ok(Burst {
            before,
            after,
            outcomes: outcomes
                .into_iter()
                .map(|o| o.unwrap_or(Err(ServiceError::UnexpectedResponse)))
                .collect(),
        })
    }

    /// Reads the fixture until two readings a little apart agree (bounded): after a
    /// dropped connection nothing tells the kit when the last effect landed.
    async fn settle(&self, fixture: &Fixture<S>) -> Result<Snapshot, String> {
        let mut last = fixture.snapshot()?;
        let mut stable = 0;
        let deadline = tokio::time::Instant::now() + self.patience;
        while stable < 3 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let now = fixture.snapshot()?;
            if now == last {
                stable += 1;
            } else {
                stable = 0;
                last = now;
            }
        }
        Ok(last)
    }
}

struct Once {
    before: Snapshot,
    after: Snapshot,
    before_items: Snapshot,
    after_items: Snapshot,
    outcome: CallOutcome,
}

/// One call of a series and the state after it.
struct SeriesCall {
    how: String,
    outcome: CallOutcome,
    after: Snapshot,
}

/// A first call and its repeats.
struct Series {
    before: Snapshot,
    before_items: Snapshot,
    after_items: Snapshot,
    /// The first call, then the repeats; never empty.
    calls: Vec<SeriesCall>,
}

impl Series {
    fn last(&self) -> &Snapshot {
        &self.calls[self.calls.len() - 1].after
    }

    fn repeat_summaries(&self) -> String {
        self.calls
            .iter()
            .enumerate()
            .skip(1)
            .map(|(i, c)| format!("repeat {i}: {}", summarize(&c.outcome)))
            .collect::<Vec<_>>()
            .join(" | ")
    }
}

struct Burst {
    before: Snapshot,
    after: Snapshot,
    outcomes: Vec<CallOutcome>,
}

struct Retry {
    before: Snapshot,
    middle: Snapshot,
    after: Snapshot,
    first: String,
    second: CallOutcome,
}

async fn call_on(client: &Client, gate: &Gate, probe: &Probe) -> CallOutcome {
    let outcome = match params(&probe.tool, &probe.args) {
        Ok(params) => client.call_tool(params).await,
        Err(_) => Err(ServiceError::UnexpectedResponse),
    };
    gate.leave();
    outcome
}

/// Items that were there before and are gone or described differently after.
fn lost(before: &Snapshot, after: &Snapshot) -> Vec<Change> {
    before
        .diff(after)
        .into_iter()
        .filter(|c| c.before.is_some())
        .collect()
}

/// Case 6: `destructiveHint` against the items the valid calls deleted or overwrote (the
/// first call on its fixture, and the first call with its repeats on theirs).
fn judge_destructive(
    claims: &Claims,
    request: &str,
    once: &Once,
    repeats: Option<&Series>,
) -> CaseReport {
    let mut gone = lost(&once.before_items, &once.after_items);
    if let Some(series) = repeats {
        for change in lost(&series.before_items, &series.after_items) {
            if !gone.iter().any(|c| c.key == change.key) {
                gone.push(change);
            }
        }
    }
    let describe = |c: &Change| match c.after {
        None => format!("deleted {}", c.key),
        Some(_) => format!("overwrote {}", c.key),
    };
    let records: Vec<String> = if gone.is_empty() {
        vec!["no observed item was deleted or overwritten".to_owned()]
    } else {
        gone.iter().map(|c| c.to_string()).collect()
    };
    let what = gone.iter().map(describe).collect::<Vec<_>>().join(", ");
    let claims_harmless = claims.destructive == Some(false) || claims.read_only == Some(true);
    let hint = match (claims.read_only, claims.destructive) {
        (Some(true), _) => "readOnlyHint is true",
        (_, Some(false)) => "destructiveHint is false",
        (_, Some(true)) => "destructiveHint is true",
        _ => "destructiveHint is unset (which MCP reads as true)",
    };
    let (result, verdict) = match (claims_harmless, gone.is_empty()) {
        (true, true) => (
            format!(
                "consistent with {hint}: the valid calls deleted and overwrote nothing observed"
            ),
            Verdict::Consistent,
        ),
        (true, false) => (
            format!("DESTRUCTIVE: {hint} but the valid calls {what}"),
            Verdict::Contradicts,
        ),
        (false, true) => (
            format!(
                "{hint}; the valid calls deleted and overwrote nothing observed (nothing to disprove)"
            ),
            Verdict::Reported,
        ),
        (false, false) => (
            format!("{hint}, as the valid calls {what}"),
            Verdict::Reported,
        ),
    };
    CaseReport {
        case: "destructiveHint against what the valid calls deleted or overwrote".into(),
        request: request.to_owned(),
        first_call: summarize(&once.outcome),
        second_call: repeats.map_or("none".into(), Series::repeat_summaries),
        remote_records: records,
        result,
        verdict,
    }
}

fn params(tool: &str, args: &Value) -> Result<CallToolRequestParams, String> {
    let Value::Object(arguments) = args else {
        return Err(format!("tool arguments must be a JSON object, got {args}"));
    };
    Ok(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments.clone()))
}

const MAX_TEXT: usize = 200;

/// The request as a report shows it: canonical where it has a canonical form, as sent where
/// it does not (the server is then the one to refuse it).
fn canonical_text(args: &Value) -> String {
    canonical_json(args).unwrap_or_else(|_| args.to_string())
}

fn clip(text: &str) -> String {
    let mut out: String = text.chars().take(MAX_TEXT).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    serde_json::to_string(&out).unwrap_or(out)
}

/// `ok "text"`, `isError "text"` or the protocol error.
fn summarize(outcome: &CallOutcome) -> String {
    match outcome {
        Ok(result) => {
            let text = result
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
                .collect::<Vec<_>>()
                .join("\n");
            if result.is_error == Some(true) {
                format!("isError {}", clip(&text))
            } else {
                format!("ok {}", clip(&text))
            }
        }
        Err(e) => format!("protocol error: {e}"),
    }
}

/// A response as it crossed the wire, for answers the client never saw.
fn summarize_wire(answer: &Value) -> String {
    if let Some(content) = answer.get("content").and_then(Value::as_array) {
        let text = content
            .iter()
            .filter_map(|c| c.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n");
        let error = answer.get("isError").and_then(Value::as_bool) == Some(true);
        format!("{} {}", if error { "isError" } else { "ok" }, clip(&text))
    } else if answer.get("resultType").and_then(Value::as_str) == Some("input_required") {
        "input required (a question for the human)".to_owned()
    } else if let Some(message) = answer.get("message").and_then(Value::as_str) {
        format!("JSON-RPC error {}", clip(message))
    } else {
        clip(&answer.to_string())
    }
}

fn listing(changes: &[String]) -> String {
    if changes.is_empty() {
        "nothing changed".to_owned()
    } else {
        changes.join("; ")
    }
}

fn same_or(differences: &[String]) -> String {
    if differences.is_empty() {
        "the same state".to_owned()
    } else {
        format!("differs: {}", differences.join("; "))
    }
}

/// The changed keys, for result lines (`sqlite ops.db table access`).
fn keys(before: &Snapshot, after: &Snapshot) -> String {
    before
        .diff(after)
        .into_iter()
        .map(|c| c.key)
        .collect::<Vec<_>>()
        .join(", ")
}

fn changed_keys(changes: &[String]) -> String {
    changes
        .iter()
        .map(|c| c.split(':').next().unwrap_or(c))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A read-only claim fails on any change; other claims are judged by `otherwise`.
fn judge_read_only(
    claim: Claim,
    changes: &[String],
    otherwise: impl FnOnce() -> (String, Verdict),
) -> (String, Verdict) {
    match claim {
        Claim::ReadOnly if changes.is_empty() => (
            "consistent with readOnlyHint: nothing observable changed".into(),
            Verdict::Consistent,
        ),
        Claim::ReadOnly => (
            format!(
                "NOT read-only: readOnlyHint is true but the call changed {}",
                changed_keys(changes)
            ),
            Verdict::Contradicts,
        ),
        _ => otherwise(),
    }
}

/// Idempotency under retry and concurrency: the state must equal the state one call leaves.
fn judge_one_effect(
    claim: Claim,
    one_call: &Snapshot,
    after: &Snapshot,
    what: &str,
) -> (String, Verdict) {
    let same = one_call == after;
    match claim {
        Claim::Idempotent if same => (
            format!("consistent with idempotentHint: {what} left the same state as one call"),
            Verdict::Consistent,
        ),
        Claim::Idempotent => (
            format!(
                "NOT idempotent: idempotentHint is true but {what} left a state different from one call ({})",
                keys(one_call, after)
            ),
            Verdict::Contradicts,
        ),
        _ if same => (
            format!("{what} left the same state as one call (no idempotency claimed)"),
            Verdict::Reported,
        ),
        _ => (
            format!(
                "{what} left a state different from one call ({}); no idempotency claimed",
                keys(one_call, after)
            ),
            Verdict::Reported,
        ),
    }
}

fn no_claim(changes: &[String]) -> (String, Verdict) {
    if changes.is_empty() {
        (
            "nothing observable changed (no readOnlyHint or idempotentHint claimed)".into(),
            Verdict::Reported,
        )
    } else {
        (
            format!(
                "changed {} (no readOnlyHint or idempotentHint claimed: reported, not judged)",
                changed_keys(changes)
            ),
            Verdict::Reported,
        )
    }
}

fn error_case(case: &str, request: &str, error: String) -> CaseReport {
    CaseReport {
        case: case.to_owned(),
        request: request.to_owned(),
        first_call: "not run".into(),
        second_call: "not run".into(),
        remote_records: Vec::new(),
        result: format!("could not run: {error}"),
        verdict: Verdict::Error,
    }
}
