//! Case 7: what the valid calls' answers disclosed, against what the tool declares in
//! `_meta.guard` (`discloses`, `max_items`, `max_bytes`). An answer that holds a credential
//! (a private key, a cloud or chat token, a password assignment) or creates a capability (a
//! signed link, a bearer token) is disclosure of that class; a read-only or disclosing tool
//! that shows one it does not declare, or more bytes or items than it caps, contradicts its
//! declaration. The evidence names the kind and where it was, never the secret itself.

use rmcp::model::CallToolResult;
use serde_json::Value;

use super::{
    observed::{CallOutcome, summarize},
    reporting::{CaseReport, Claims, Verdict},
};

/// Something an answer disclosed, by class, with where it was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Evidence {
    /// `credentials` or `capability`.
    pub class: &'static str,
    /// What it was (`an AWS access key id`, `a signed link`) and where (`at byte 40`).
    pub seen: String,
}

/// Judges case 7 over the answers of the valid calls (the first call and its repeats).
pub(super) fn judge_disclosure(
    claims: &Claims,
    request: &str,
    answers: &[&CallOutcome],
) -> CaseReport {
    let shown: Vec<&CallToolResult> = answers
        .iter()
        .filter_map(|a| a.as_ref().ok())
        .filter(|r| r.is_error != Some(true))
        .collect();
    let mut records = Vec::new();
    let mut problems = Vec::new();
    let declared = claims.discloses.as_ref();
    let declared_class = declared.map(|d| d.class.as_str());
    for (i, result) in shown.iter().enumerate() {
        let text = visible(result);
        for evidence in scan(&text) {
            records.push(format!(
                "answer {}: {} ({})",
                i + 1,
                evidence.seen,
                evidence.class
            ));
            if declared_class != Some(evidence.class) {
                problems.push(format!(
                    "answer {} discloses {} ({}) but the tool declares {}",
                    i + 1,
                    evidence.class,
                    evidence.seen,
                    declared_class.map_or("no disclosure".to_owned(), |c| format!("`{c}`"))
                ));
            }
        }
        if let Some(cap) = declared.and_then(|d| d.max_bytes) {
            let bytes = text.len() as u64;
            if bytes > cap {
                problems.push(format!(
                    "answer {} shows {bytes} bytes, above the declared max_bytes of {cap}",
                    i + 1
                ));
            }
        }
        if let (Some(cap), Some(items)) = (declared.and_then(|d| d.max_items), items(result))
            && items > cap
        {
            problems.push(format!(
                "answer {} shows {items} items, above the declared max_items of {cap}",
                i + 1
            ));
        }
    }
    problems.dedup();
    let judged = claims.read_only == Some(true) || declared.is_some();
    let (result, verdict) = match (problems.first(), judged) {
        (Some(_), true) => (
            format!("DISCLOSES MORE THAN DECLARED: {}", problems.join("; ")),
            Verdict::Contradicts,
        ),
        (Some(_), false) => (
            format!(
                "{} (the tool claims neither readOnlyHint nor a disclosure)",
                problems.join("; ")
            ),
            Verdict::Reported,
        ),
        (None, true) => (
            format!(
                "consistent with {}: no undeclared credential or capability, nothing above a cap, in {} answers",
                declared_class.map_or("readOnlyHint".to_owned(), |c| format!("discloses = `{c}`")),
                shown.len()
            ),
            Verdict::Consistent,
        ),
        (None, false) => (
            "no credential or capability seen (no disclosure claimed)".to_owned(),
            Verdict::Reported,
        ),
    };
    CaseReport {
        case: "what the valid calls disclosed".into(),
        request: request.to_owned(),
        first_call: answers.first().map_or("none".into(), |a| summarize(a)),
        second_call: format!("{} answers scanned", shown.len()),
        remote_records: records,
        result,
        verdict,
    }
}

/// The text a client shows or parses: the text content and the structured content.
pub(super) fn visible(result: &CallToolResult) -> String {
    let mut text: Vec<String> = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    if let Some(structured) = &result.structured_content {
        text.push(structured.to_string());
    }
    text.join("\n")
}

/// How many items a structured answer lists: its length if it is an array, or the length of
/// its one array field.
fn items(result: &CallToolResult) -> Option<u64> {
    match result.structured_content.as_ref()? {
        Value::Array(items) => Some(items.len() as u64),
        Value::Object(fields) => {
            let mut arrays = fields.values().filter_map(Value::as_array);
            match (arrays.next(), arrays.next()) {
                (Some(items), None) => Some(items.len() as u64),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Every credential and capability `text` holds, each once per kind.
pub(super) fn scan(text: &str) -> Vec<Evidence> {
    let mut found: Vec<Evidence> = Vec::new();
    let mut note = |class: &'static str, what: &str, at: usize| {
        if !found.iter().any(|e| e.seen.starts_with(what)) {
            found.push(Evidence {
                class,
                seen: format!("{what} at byte {at}"),
            });
        }
    };
    let lower = text.to_ascii_lowercase();
    if let Some(at) = lower
        .find("-----begin")
        .filter(|&at| lower[at..].contains("private key-----"))
    {
        note("credentials", "a private key", at);
    }
    for (prefix, len, what) in [
        ("AKIA", 16, "an AWS access key id"),
        ("ASIA", 16, "an AWS access key id"),
        ("ghp_", 36, "a GitHub token"),
        ("github_pat_", 40, "a GitHub token"),
        ("glpat-", 20, "a GitLab token"),
        ("xoxb-", 20, "a Slack token"),
        ("xoxp-", 20, "a Slack token"),
        ("sk_live_", 20, "a Stripe secret key"),
    ] {
        if let Some(at) = token_after(text, prefix, len) {
            note("credentials", what, at);
        }
    }
    for name in [
        "password",
        "passwd",
        "secret_access_key",
        "api_key",
        "apikey",
        "client_secret",
    ] {
        if let Some(at) = assignment(&lower, name) {
            note("credentials", "a password or key assignment", at);
        }
    }
    if let Some(at) = signed_link(text) {
        note("capability", "a signed link", at);
    }
    if let Some(at) = jwt(text) {
        note("capability", "a bearer token (JWT)", at);
    }
    found
}

/// Where `prefix` is followed by at least `len` token characters, at a word boundary.
fn token_after(text: &str, prefix: &str, len: usize) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = text[from..].find(prefix) {
        let at = from + found;
        let before_ok = at == 0 || !is_token(text.as_bytes()[at - 1]);
        let run = text[at + prefix.len()..]
            .bytes()
            .take_while(|&b| is_token(b))
            .count();
        if before_ok && run >= len {
            return Some(at);
        }
        from = at + prefix.len();
    }
    None
}

/// Where `name` (lowercase) is assigned a value of at least 6 characters: `name=value`,
/// `name: value`, `"name": "value"`.
fn assignment(lower: &str, name: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = lower[from..].find(name) {
        let at = from + found;
        let rest = lower[at + name.len()..].trim_start_matches(['"', '\'']);
        let rest = rest.trim_start();
        if let Some(value) = rest.strip_prefix(['=', ':']) {
            let value = value.trim_start().trim_start_matches(['"', '\'']);
            let run = value
                .bytes()
                .take_while(|&b| {
                    !b.is_ascii_whitespace() && !matches!(b, b'"' | b'\'' | b',' | b'}')
                })
                .count();
            if run >= 6 {
                return Some(at);
            }
        }
        from = at + name.len();
    }
    None
}

/// Where an `http(s)` URL carries a signature or token in its query.
fn signed_link(text: &str) -> Option<usize> {
    // Azure's SAS links carry `sig` too; their `sv` and `se` alone are a version and an expiry.
    const SIGNED: [&str; 6] = [
        "sig",
        "signature",
        "x-amz-signature",
        "x-goog-signature",
        "token",
        "access_token",
    ];
    let mut from = 0;
    while let Some(found) = text[from..].find("http") {
        let at = from + found;
        let url: String = text[at..]
            .chars()
            .take_while(|c| !c.is_whitespace() && !matches!(c, '"' | '\'' | '<' | '>'))
            .collect();
        if let Ok(parsed) = url::Url::parse(&url)
            && matches!(parsed.scheme(), "http" | "https")
        {
            let names: Vec<String> = parsed
                .query_pairs()
                .filter(|(_, v)| v.len() >= 8)
                .map(|(k, _)| k.to_ascii_lowercase())
                .collect();
            if names.iter().any(|n| SIGNED.contains(&n.as_str())) {
                return Some(at);
            }
        }
        from = at + 4;
    }
    None
}

/// Where a JSON Web Token stands: three base64url parts, the first a JSON header.
fn jwt(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = text[from..].find("eyJ") {
        let at = from + found;
        let token: &str = {
            let end = text[at..]
                .bytes()
                .take_while(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
                .count();
            &text[at..at + end]
        };
        let parts: Vec<&str> = token.split('.').collect();
        if parts.len() == 3 && parts.iter().all(|p| p.len() >= 10) {
            return Some(at);
        }
        from = at + 3;
    }
    None
}

/// A character of a token: letters, digits, `_` and `-`.
fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-')
}

#[cfg(test)]
mod tests {
    use rmcp::model::{CallToolResult, ContentBlock};
    use serde_json::json;

    use super::{judge_disclosure, scan};
    use crate::honesty::reporting::Declared;
    use crate::honesty::{Claims, Verdict};

    fn declaring(max_items: Option<u64>, max_bytes: Option<u64>) -> Claims {
        Claims {
            read_only: Some(true),
            discloses: Some(Declared {
                class: "bulk".into(),
                max_items,
                max_bytes,
            }),
            ..Claims::default()
        }
    }

    #[test]
    fn answers_above_the_declared_caps_contradict_it() {
        let long = Ok(CallToolResult::success(vec![ContentBlock::text(
            "x".repeat(40),
        )]));
        let report = judge_disclosure(&declaring(None, Some(10)), "{}", &[&long]);
        assert_eq!(report.verdict, Verdict::Contradicts, "{report}");
        assert!(
            report.result.contains("above the declared max_bytes of 10"),
            "{report}"
        );

        let mut listed = CallToolResult::success(vec![ContentBlock::text("rows")]);
        listed.structured_content = Some(json!({"rows": [1, 2, 3]}));
        let listed = Ok(listed);
        let report = judge_disclosure(&declaring(Some(2), None), "{}", &[&listed]);
        assert_eq!(report.verdict, Verdict::Contradicts, "{report}");
        assert!(
            report
                .result
                .contains("3 items, above the declared max_items of 2"),
            "{report}"
        );
        let report = judge_disclosure(&declaring(Some(3), Some(1000)), "{}", &[&listed]);
        assert_eq!(report.verdict, Verdict::Consistent, "{report}");
    }

    #[test]
    fn a_tool_that_claims_nothing_is_reported_not_judged() {
        let leak = Ok(CallToolResult::success(vec![ContentBlock::text(
            "key AKIAIOSFODNN7EXAMPLE",
        )]));
        let report = judge_disclosure(&Claims::default(), "{}", &[&leak]);
        assert_eq!(report.verdict, Verdict::Reported, "{report}");
        assert!(report.result.contains("credentials"), "{report}");
    }

    fn classes(text: &str) -> Vec<&'static str> {
        scan(text).into_iter().map(|e| e.class).collect()
    }

    #[test]
    fn credentials_and_capabilities_are_seen() {
        for secret in [
            "env: AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI-K7MDENG-bPxRfiCY",
            "key AKIAIOSFODNN7EXAMPLE in use",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn...",
            "token ghp_0123456789abcdefghijklmnopqrstuvwxyz",
            r#"{"password": "hunter2!"}"#,
        ] {
            assert_eq!(classes(secret), ["credentials"], "{secret}");
        }
        for capability in [
            "download: https://files.example/r.csv?expires=1796300000&sig=4f1c2a9be07d55aa",
            "https://bucket.s3.amazonaws.com/k?X-Amz-Signature=abcdef0123456789&X-Amz-Expires=900",
            "Authorization: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXN0dWZm",
        ] {
            assert_eq!(classes(capability), ["capability"], "{capability}");
        }
    }

    #[test]
    fn ordinary_answers_disclose_nothing() {
        for honest in [
            "rotated log lines",
            "id,total\n1,1999",
            "Deleted old.log. To undo this, call undo with operation_id 6abb0537-bb3b-4f27-971d-bd46bc4120ce",
            "see https://docs.example/guide?page=2&lang=en",
            "the password field is required",
            "password: short",
            "tables: orders (4 rows), customers (3 rows)",
            "AKIA is a prefix",
        ] {
            assert!(scan(honest).is_empty(), "{honest}: {:?}", scan(honest));
        }
    }
}
