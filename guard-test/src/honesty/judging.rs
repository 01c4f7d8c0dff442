//! Deciding from what a case observed whether the tool's claim holds: a read-only claim
//! fails on any change (a modification time on one fixture included), an idempotent one on
//! any change a repeat, a retry or a race adds to one call, and a harmless one on any item
//! a valid call deleted or overwrote.

use serde_json::Value;

use super::{
    disclosed::visible,
    observe::{Change, Snapshot},
    observed::{CallOutcome, Once, Races, Retry, Series, summarize},
    reporting::{CaseReport, Claim, Claims, Verdict, canonical_text, error_case},
};

/// Case 1: a first call may change state unless the tool claims to be read-only.
pub(super) fn judge_once(claim: Claim, request: &str, once: &Once) -> CaseReport {
    let changes = with_times(
        claim,
        once.before.describe_diff(&once.after),
        &once.before_times,
        &once.after_times,
    );
    let (result, verdict) = judge_read_only(claim, &changes, || match claim {
        Claim::Idempotent => (
            "a first call may change state; idempotentHint is about what follows it".to_owned(),
            Verdict::Consistent,
        ),
        _ => no_claim(&changes),
    });
    CaseReport {
        case: "one call with a valid input".into(),
        request: request.to_owned(),
        first_call: summarize(&once.outcome),
        second_call: "none".into(),
        remote_records: changes,
        result,
        verdict,
    }
}

/// Case 2: for an idempotent claim, no repeat may change anything; the first repeat that
/// did is named.
pub(super) fn judge_repeats(
    claim: Claim,
    repeats: usize,
    request: &str,
    series: &Series,
) -> CaseReport {
    let middle = &series.calls[0].after;
    let last = series.last();
    let total = with_times(
        claim,
        series.before.describe_diff(last),
        &series.before_times,
        &series.after_times,
    );
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
            repeats,
            call.how,
            listing(&changed)
        ));
        previous = &call.after;
    }
    let (result, verdict) = judge_read_only(claim, &total, || match (claim, first_change) {
        (Claim::Idempotent, None) => (
            format!(
                "consistent with idempotentHint: {} identical repeats, on the same session and on new ones, changed nothing",
                repeats
            ),
            Verdict::Consistent,
        ),
        (Claim::Idempotent, Some((i, call, before))) => (
            format!(
                "NOT idempotent: idempotentHint is true but repeat {i} of {} ({}) changed {}",
                repeats,
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
            repeats
        ),
        request: request.to_owned(),
        first_call: summarize(&series.calls[0].outcome),
        second_call: series.repeat_summaries(),
        remote_records: records,
        result,
        verdict,
    }
}

/// Case 3: an idempotent tool's failed call may change state once, but repeating it may
/// not.
pub(super) fn judge_invalid(
    claim: Claim,
    repeats: usize,
    args: &Value,
    series: &Series,
    i: usize,
    n: usize,
) -> CaseReport {
    let first = &series.calls[0];
    let last = series.last();
    let changes = with_times(
        claim,
        series.before.describe_diff(last),
        &series.before_times,
        &series.after_times,
    );
    let by_repeats = first.after.describe_diff(last);
    let mut records = changes.clone();
    if !by_repeats.is_empty() {
        records.push(format!(
            "changed by the {} repeats: {}",
            repeats,
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
                    repeats
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

/// Case 4: neither the dropped call nor the retry may change a read-only tool's state, and
/// for an idempotent claim both together must leave the state one call leaves.
pub(super) fn judge_retry(
    claim: Claim,
    request: &str,
    one_call: &Snapshot,
    retry: &Retry,
) -> CaseReport {
    let r = retry;
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
                one_call,
                &r.after,
                "the retry after a dropped connection",
            )
        })
    };
    CaseReport {
        case: "retry after the client dropped the connection".into(),
        request: request.to_owned(),
        first_call: r.first.clone(),
        second_call: summarize(&r.second),
        remote_records: records,
        result,
        verdict,
    }
}

/// Case 5: for an idempotent claim, every run of identical calls at once must leave the
/// state one call leaves; the report names the run in which a race first showed.
pub(super) fn judge_races(
    claim: Claim,
    request: &str,
    one_call: &Snapshot,
    races: &Races,
) -> CaseReport {
    let (n, runs) = (races.in_flight, races.runs);
    let name = format!(
        "identical calls at once: {n} clients, up to {}",
        if runs == 1 {
            "1 run".to_owned()
        } else {
            format!("{runs} runs")
        }
    );
    let (run, burst) = match &races.last {
        Ok((run, burst)) => (*run, burst),
        Err(e) => return error_case(&name, request, e.clone()),
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
pub(super) fn judge_destructive(
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

/// What calls on one fixture changed and, for a read-only claim, every modification time
/// they moved on something there before and after: touching is writing. Other claims are
/// not judged on times, since writing the same bytes again moves them too.
fn with_times(
    claim: Claim,
    mut changes: Vec<String>,
    before: &Snapshot,
    after: &Snapshot,
) -> Vec<String> {
    if claim == Claim::ReadOnly {
        changes.extend(before.diff(after).into_iter().filter_map(|c| {
            let (was, now) = (c.before?, c.after?);
            Some(format!("the modification time of {}: {was} → {now}", c.key))
        }));
    }
    changes
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

/// Case 8: a read-only tool's identical valid calls on one fixture (case 2's first call and
/// its repeats) should answer alike, as a client sees an answer (error or not, text and
/// structured content). Answers that differ are a warning with the first two that differ:
/// the tool reads state the kit does not observe (a clock, a counter, the network), or
/// changes it.
pub(super) fn judge_answers(claim: Claim, request: &str, answers: &[&CallOutcome]) -> CaseReport {
    if answers.len() < 2 {
        return CaseReport {
            case: "the same call answers alike".into(),
            request: request.to_owned(),
            first_call: answers.first().map_or("none".into(), |a| summarize(a)),
            second_call: "none".into(),
            remote_records: Vec::new(),
            result: "fewer than two answers on one fixture to compare (the repeats did not run)"
                .into(),
            verdict: Verdict::Reported,
        };
    }
    let seen: Vec<Option<(bool, String)>> = answers
        .iter()
        .map(|a| {
            a.as_ref()
                .ok()
                .map(|r| (r.is_error == Some(true), visible(r)))
        })
        .collect();
    let differs = seen
        .iter()
        .enumerate()
        .skip(1)
        .find(|(_, answer)| **answer != seen[0])
        .map(|(i, _)| i);
    let (result, verdict) = match (claim, differs) {
        (Claim::ReadOnly, None) => (
            format!(
                "consistent: {} identical calls answered alike",
                answers.len()
            ),
            Verdict::Consistent,
        ),
        (Claim::ReadOnly, Some(i)) => (
            format!(
                "WARNING: identical calls of a read-only tool answered differently: answer 1 was {} and answer {} was {}; the tool reads or changes state the kit does not observe",
                summarize(answers[0]),
                i + 1,
                summarize(answers[i])
            ),
            Verdict::Warning,
        ),
        (_, None) => (
            "identical calls answered alike (not read-only: not judged)".into(),
            Verdict::Reported,
        ),
        (_, Some(i)) => (
            format!(
                "identical calls answered differently from answer {} on (not read-only: not judged)",
                i + 1
            ),
            Verdict::Reported,
        ),
    };
    CaseReport {
        case: "the same call answers alike".into(),
        request: request.to_owned(),
        first_call: answers.first().map_or("none".into(), |a| summarize(a)),
        second_call: format!("{} answers compared", answers.len()),
        remote_records: Vec::new(),
        result,
        verdict,
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{CallToolResult, ContentBlock};

    use super::{Claim, judge_once};
    use crate::honesty::{Snapshot, Verdict, observed::Once};

    fn snapshot(entries: &[(&str, &str)]) -> Snapshot {
        let mut snapshot = Snapshot::default();
        for (key, value) in entries {
            snapshot.insert(*key, *value);
        }
        snapshot
    }

    /// One call that left every description as it was, moved `notes plan.txt`'s time and
    /// created `notes new.txt` (whose addition the content would show).
    fn touched() -> Once {
        let content = snapshot(&[("notes plan.txt", "5 bytes")]);
        Once {
            before: content.clone(),
            after: content.clone(),
            before_items: content.clone(),
            after_items: content,
            before_times: snapshot(&[("notes plan.txt", "2025-01-01T00:00:00.000000000Z")]),
            after_times: snapshot(&[
                ("notes plan.txt", "2001-09-09T01:46:40.000000000Z"),
                ("notes new.txt", "2025-01-01T00:00:01.000000000Z"),
            ]),
            outcome: Ok(CallToolResult::success(vec![ContentBlock::text("draft")])),
            observed: vec!["notes".into()],
        }
    }

    #[test]
    fn a_moved_modification_time_contradicts_read_only_and_nothing_else() {
        let read_only = judge_once(Claim::ReadOnly, "{}", &touched());
        assert_eq!(read_only.verdict, Verdict::Contradicts, "{read_only}");
        assert_eq!(
            read_only.result,
            "NOT read-only: readOnlyHint is true but the call changed the modification time of notes plan.txt"
        );
        assert_eq!(
            read_only.remote_records,
            [
                "the modification time of notes plan.txt: 2025-01-01T00:00:00.000000000Z → 2001-09-09T01:46:40.000000000Z"
            ]
        );
        for claim in [Claim::Idempotent, Claim::None] {
            let report = judge_once(claim, "{}", &touched());
            assert_ne!(report.verdict, Verdict::Contradicts, "{report}");
            assert!(report.remote_records.is_empty(), "{report}");
        }
    }
}
