//! The report a test prints and asserts on, in the seed's format: the tool's claims, one
//! block per case, and a verdict; and how requests and answers are written in it.

use std::fmt;

use rmcp::model::{ProtocolVersion, Tool};
use serde_json::Value;

use rmcp_guard::canonical::canonical_json;

/// The claims a tool makes in `tools/list`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Claims {
    /// `readOnlyHint`, if set.
    pub read_only: Option<bool>,
    /// `destructiveHint`, if set.
    pub destructive: Option<bool>,
    /// `idempotentHint`, if set.
    pub idempotent: Option<bool>,
    /// What the tool declares it may disclose (`_meta.guard.discloses` and its caps), if
    /// anything.
    pub discloses: Option<Declared>,
}

impl Claims {
    /// The claims as `tools/list` published the tool: its annotations (unset where it said
    /// nothing) and its declared disclosure.
    pub(super) fn from(tool: &Tool) -> Self {
        let discloses = Declared::from_meta(tool.meta.as_ref());
        tool.annotations.as_ref().map_or_else(
            || Self {
                discloses: discloses.clone(),
                ..Self::default()
            },
            |a| Self {
                read_only: a.read_only_hint,
                destructive: a.destructive_hint,
                idempotent: a.idempotent_hint,
                discloses: discloses.clone(),
            },
        )
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
        )?;
        if let Some(declared) = &self.discloses {
            write!(f, ", discloses: {}", declared.class)?;
        }
        Ok(())
    }
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
    /// Not a contradiction, but worth a look (identical read-only calls that answered
    /// differently): reported with the evidence; the report still passes.
    Warning,
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
    /// What the fixture's observers read (their labels): the only state the kit judges.
    pub observed: Vec<String>,
}

impl Report {
    /// No case contradicts the tool's claims and every case ran.
    pub fn passed(&self) -> bool {
        self.claims.is_some()
            && self.cases.iter().all(|c| {
                matches!(
                    c.verdict,
                    Verdict::Consistent | Verdict::Reported | Verdict::Warning
                )
            })
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
        writeln!(
            f,
            "observed: {}; not observed: every other file, directory and database, the network, the server's memory and anything the tool calls",
            if self.observed.is_empty() {
                "nothing".to_owned()
            } else {
                self.observed.join(", ")
            }
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

/// The request as a report shows it: canonical where it has a canonical form, as sent where
/// it does not (the server is then the one to refuse it).
pub(super) fn canonical_text(args: &Value) -> String {
    canonical_json(args).unwrap_or_else(|_| args.to_string())
}

/// A case that could not run: reported as such, never as consistent.
pub(super) fn error_case(case: &str, request: &str, error: String) -> CaseReport {
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

/// What a tool declares it may disclose, as `tools/list` published it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Declared {
    /// `_meta.guard.discloses`: `sensitive`, `credentials`, `bulk` or `capability`.
    pub class: String,
    /// `_meta.guard.max_items`, if capped.
    pub max_items: Option<u64>,
    /// `_meta.guard.max_bytes`, if capped.
    pub max_bytes: Option<u64>,
}

impl Declared {
    /// The declaration in a tool's `_meta`, if it makes one.
    pub(super) fn from_meta(meta: Option<&rmcp::model::MetaObject>) -> Option<Self> {
        let guard = meta?.0.get("guard")?;
        Some(Self {
            class: guard.get("discloses")?.as_str()?.to_owned(),
            max_items: guard.get("max_items").and_then(Value::as_u64),
            max_bytes: guard.get("max_bytes").and_then(Value::as_u64),
        })
    }
}

/// The claim the kit holds the tool to: read-only outranks idempotent, and a tool that
/// claims neither is reported on, not judged.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Claim {
    ReadOnly,
    Idempotent,
    None,
}

impl Claim {
    pub(super) fn of(claims: &Claims) -> Self {
        if claims.read_only == Some(true) {
            Claim::ReadOnly
        } else if claims.idempotent == Some(true) {
            Claim::Idempotent
        } else {
            Claim::None
        }
    }
}
