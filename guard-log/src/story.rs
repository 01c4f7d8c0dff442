//! A call's whole story, for a human reading the log.

use serde_json::Value;

/// The entries of one call (canonical JSON, in log order) as readable text: one block per
/// entry with its time, place, tool and outcome, then its other fields. A call whose last
/// entry is its confirmation (`accepted`, written before the effect runs) ends with a
/// warning: the effect may have run with no outcome recorded.
pub fn story<'a>(entries: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    let mut last_outcome = String::new();
    for entry in entries {
        let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(entry) else {
            out.push_str("(an entry that is not JSON: run guard-audit verify)\n");
            continue;
        };
        let text = |name: &str| match fields.get(name) {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let at = fields
            .get("at")
            .and_then(Value::as_i64)
            .and_then(chrono::DateTime::from_timestamp_millis)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
            .unwrap_or_default();
        out.push_str(&format!(
            "#{} {at} {} {} (trace {})\n",
            text("seq"),
            text("tool"),
            text("outcome"),
            text("trace_id")
        ));
        last_outcome = text("outcome");
        for (name, value) in &fields {
            if ["seq", "prev", "at", "tool", "outcome", "trace_id"].contains(&name.as_str()) {
                continue;
            }
            let shown = match value {
                Value::String(s) => s.replace('\n', "\n      "),
                other => other.to_string(),
            };
            out.push_str(&format!("    {name}: {shown}\n"));
        }
    }
    if last_outcome == "accepted" {
        out.push_str(
            "!! no outcome was recorded after the confirmation: the effect may have run and \
             the process stopped before recording it (or it is still running). Check the \
             target itself.\n",
        );
    }
    out
}
