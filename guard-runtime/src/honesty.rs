//! The annotation-honesty kit: runs a tool of a real rmcp server through five cases, each on
//! a fresh fixture, observes the state the tool can touch before and after, and checks
//! `readOnlyHint` and `idempotentHint` against what really changed.
//!
//! 1. one call with a valid input;
//! 2. a byte-identical repeat right after it;
//! 3. nonexistent and invalid inputs;
//! 4. the client's connection breaks after the server received the call, then a new client
//!    retries the same call;
//! 5. two identical calls at once from two clients.
//!
//! A `readOnlyHint: true` tool fails if any case changed any observed state. An
//! `idempotentHint: true` tool fails if the repeat changed anything, or if the retry or the
//! two concurrent calls left a state different from one call. Tools that claim neither are
//! reported, not judged. Annotations are hints; this kit is how a server proves its hints.
//!
//! ```no_run
//! # async fn run(db: std::path::PathBuf, server: impl rmcp::ServerHandler + Clone + Send + Sync + 'static) {
//! use guard_runtime::honesty::{Fixture, Kit, Probe, SqliteObserver};
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
pub use observe::{Change, DirObserver, Observe, OutboxObserver, Snapshot, snapshot_all};
pub use proxy::{Gate, Link, Reaction};

use crate::{
    canonical_json,
    testing::{Answer, ScriptedHuman},
};

/// A fresh server and what observes its world. `keep` holds whatever must live as long as
/// the fixture (temporary directories).
pub struct Fixture<S> {
    pub server: S,
    pub observers: Vec<Box<dyn Observe>>,
    keep: Vec<Box<dyn Any + Send>>,
}

impl<S> Fixture<S> {
    pub fn new(server: S) -> Self {
        Self {
            server,
            observers: Vec::new(),
            keep: Vec::new(),
        }
    }

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
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
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
    pub case: String,
    pub request: String,
    pub first_call: String,
    pub second_call: String,
    /// The observed changes (and, for cases compared with one call, the differences).
    pub remote_records: Vec<String>,
    pub result: String,
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
    pub tool: String,
    pub protocol: ProtocolVersion,
    /// `None` if the tool is not in `tools/list`.
    pub claims: Option<Claims>,
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

/// The kit: `factory` makes a fresh fixture for every case.
pub struct Kit<F> {
    factory: F,
    protocol: ProtocolVersion,
    patience: Duration,
}

type Client = RunningService<RoleClient, ScriptedHuman>;
type CallOutcome = Result<CallToolResult, ServiceError>;

impl<F, Fut, S> Kit<F>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Fixture<S>>,
    S: ServerHandler + Clone + Send + Sync + 'static,
{
    /// Clients speak protocol 2025-11-25 (push elicitation) unless [`Kit::protocol`] says
    /// otherwise.
    pub fn new(factory: F) -> Self {
        Self {
            factory,
            protocol: ProtocolVersion::V_2025_11_25,
            patience: Duration::from_secs(60),
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

    /// Runs the five cases against `probe`'s tool.
    pub async fn check(&self, probe: &Probe) -> Report {
        let mut report = Report {
            tool: probe.tool.clone(),
            protocol: self.protocol.clone(),
            claims: None,
            cases: Vec::new(),
        };
        let request = canonical_json(&probe.args);

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
                Some((claim, case.after))
            }
            Err(e) => {
                report
                    .cases
                    .push(error_case("one call with a valid input", &request, e));
                None
            }
        };
        let Some((claim, one_call)) = one_call else {
            return report;
        };

        // 2. A byte-identical repeat on the same fixture.
        report.cases.push(match self.repeat(probe).await {
            Ok(r) => {
                let total = r.before.describe_diff(&r.after);
                let by_repeat = r.middle.describe_diff(&r.after);
                let mut records = total.clone();
                records.push(format!(
                    "changed by the repeat alone: {}",
                    listing(&by_repeat)
                ));
                let (result, verdict) = judge_read_only(claim, &total, || match claim {
                    Claim::Idempotent if by_repeat.is_empty() => (
                        "consistent with idempotentHint: the identical repeat changed nothing"
                            .into(),
                        Verdict::Consistent,
                    ),
                    Claim::Idempotent => (
                        format!(
                            "NOT idempotent: idempotentHint is true but the identical repeat changed {}",
                            keys(&r.middle, &r.after)
                        ),
                        Verdict::Contradicts,
                    ),
                    _ if by_repeat.is_empty() => (
                        "the repeat changed nothing (no idempotency claimed)".into(),
                        Verdict::Reported,
                    ),
                    _ => (
                        format!(
                            "not idempotent: the repeat changed {} (none claimed)",
                            keys(&r.middle, &r.after)
                        ),
                        Verdict::Reported,
                    ),
                });
                CaseReport {
                    case: "byte-identical repeat right after the first call".into(),
                    request: request.clone(),
                    first_call: summarize(&r.first),
                    second_call: summarize(&r.second),
                    remote_records: records,
                    result,
                    verdict,
                }
            }
            Err(e) => error_case("byte-identical repeat", &request, e),
        });

        // 3. Nonexistent and invalid inputs.
        match self.invalid(probe).await {
            Ok(results) => {
                let n = results.len();
                for (i, (args, outcome, before, after)) in results.into_iter().enumerate() {
                    let changes = before.describe_diff(&after);
                    let (result, verdict) = judge_read_only(claim, &changes, || {
                        if changes.is_empty() {
                            ("nothing observable changed".into(), Verdict::Reported)
                        } else {
                            (
                                format!(
                                    "a nonexistent or invalid input changed {}",
                                    keys(&before, &after)
                                ),
                                Verdict::Reported,
                            )
                        }
                    });
                    report.cases.push(CaseReport {
                        case: format!("nonexistent or invalid input {} of {n}", i + 1),
                        request: canonical_json(&args),
                        first_call: summarize(&outcome),
                        second_call: "none".into(),
                        remote_records: changes,
                        result,
                        verdict,
                    });
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
                        judge_one_effect(claim, &one_call, &r.after, "the retry after a dropped connection")
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

        // 5. Two identical calls at once.
        report.cases.push(match self.concurrent(probe).await {
            Ok(r) => {
                let total = r.before.describe_diff(&r.after);
                let mut records = total.clone();
                let versus = one_call.describe_diff(&r.after);
                records.push(format!("compared with one call: {}", same_or(&versus)));
                let (result, verdict) = judge_read_only(claim, &total, || {
                    judge_one_effect(claim, &one_call, &r.after, "two identical calls at once")
                });
                CaseReport {
                    case: "two identical calls at once from two clients".into(),
                    request: request.clone(),
                    first_call: summarize(&r.first),
                    second_call: summarize(&r.second),
                    remote_records: records,
                    result,
                    verdict,
                }
            }
            Err(e) => error_case("two identical calls at once", &request, e),
        });

        report
    }

    fn human(&self, probe: &Probe, args: &Value) -> ScriptedHuman {
        let human = ScriptedHuman::new(self.protocol.clone());
        if let Some(answer) = &probe.human {
            human.will(answer(args));
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

    /// One call on its own connection.
    async fn call(&self, server: S, probe: &Probe, args: &Value) -> Result<CallOutcome, String> {
        let (client, link) = self
            .connect(server, self.human(probe, args), None, false)
            .await?;
        let outcome = client.call_tool(params(&probe.tool, args)?).await;
        self.hang_up(client, link).await;
        Ok(outcome)
    }

    async fn once(&self, probe: &Probe) -> Result<(Option<Claims>, Once), String> {
        let fixture = (self.factory)().await;
        let before = fixture.snapshot()?;
        let (client, link) = self
            .connect(
                fixture.server.clone(),
                self.human(probe, &probe.args),
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
                    outcome: Err(ServiceError::UnexpectedResponse),
                },
            ));
        };
        let claims = Claims::from(tool.annotations.as_ref());
        let outcome = client.call_tool(params(&probe.tool, &probe.args)?).await;
        self.hang_up(client, link).await;
        let after = fixture.snapshot()?;
        Ok((
            Some(claims),
            Once {
                before,
                after,
                outcome,
            },
        ))
    }

    async fn repeat(&self, probe: &Probe) -> Result<Twice, String> {
        let fixture = (self.factory)().await;
        let before = fixture.snapshot()?;
        let first = self
            .call(fixture.server.clone(), probe, &probe.args)
            .await?;
        let middle = fixture.snapshot()?;
        let second = self
            .call(fixture.server.clone(), probe, &probe.args)
            .await?;
        let after = fixture.snapshot()?;
        Ok(Twice {
            before,
            middle,
            after,
            first,
            second,
        })
    }

    async fn invalid(
        &self,
        probe: &Probe,
    ) -> Result<Vec<(Value, CallOutcome, Snapshot, Snapshot)>, String> {
        let fixture = (self.factory)().await;
        let mut out = Vec::new();
        for args in &probe.invalid {
            let before = fixture.snapshot()?;
            let outcome = self.call(fixture.server.clone(), probe, args).await?;
            let after = fixture.snapshot()?;
            out.push((args.clone(), outcome, before, after));
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
        let second = self
            .call(fixture.server.clone(), probe, &probe.args)
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

    async fn concurrent(&self, probe: &Probe) -> Result<Twice, String> {
        let fixture = (self.factory)().await;
        let before = fixture.snapshot()?;
        let gate = Gate::new(2);
        let (a, link_a) = self
            .connect(
                fixture.server.clone(),
                self.human(probe, &probe.args),
                Some(gate.clone()),
                false,
            )
            .await?;
        let (b, link_b) = self
            .connect(
                fixture.server.clone(),
                self.human(probe, &probe.args),
                Some(gate.clone()),
                false,
            )
            .await?;
        let (first, second) = tokio::join!(call_on(&a, &gate, probe), call_on(&b, &gate, probe));
        self.hang_up(a, link_a).await;
        self.hang_up(b, link_b).await;
        let after = fixture.snapshot()?;
        Ok(Twice {
            before,
            middle: Snapshot::default(),
            after,
            first,
            second,
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
    outcome: CallOutcome,
}

struct Twice {
    before: Snapshot,
    middle: Snapshot,
    after: Snapshot,
    first: CallOutcome,
    second: CallOutcome,
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

fn params(tool: &str, args: &Value) -> Result<CallToolRequestParams, String> {
    let Value::Object(arguments) = args else {
        return Err(format!("tool arguments must be a JSON object, got {args}"));
    };
    Ok(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments.clone()))
}

const MAX_TEXT: usize = 200;

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
