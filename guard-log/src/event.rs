//! One audit event and its canonical bytes.
//!
//! An entry is canonical JSON that starts with its place in the log, so the verifier reads
//! the place without parsing the rest:
//!
//! ```text
//! {"seq":41,"prev":"<64 hex: leaf hash of entry 40>","at":…,"outcome":"…",…}
//! ```
//!
//! After `seq` and `prev` the keys are sorted at every depth. The leaf hash covers every
//! byte, so the same event always has the same bytes and any change to them shows. An
//! exported line puts the entry's own leaf hash in front (`{"hash":"…","seq":41,…}`).

use serde_json::{Map, Value};

use super::merkle::{Hash, leaf_hash};
use crate::canonical::{canonical_json, hex};

/// What happened in one guarded call: an outcome code, the tool, the trace id, and
/// structured fields. Extensible by design: a new kind of outcome is a new code string and
/// the fields it needs, with no change to the log or the verifier.
///
/// Keep raw arguments, tokens and free text out of the fields: record digests
/// ([`Event::digest`]) and redacted answers instead.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    tool: String,
    outcome: String,
    trace_id: String,
    fields: Map<String, Value>,
    /// When it happened, if not when it is appended (ms since the epoch).
    at: Option<i64>,
}

impl Event {
    /// An event for `tool` ending with `outcome` (a stable code such as `executed`,
    /// `declined` or `PERMISSION_DENIED`) under `trace_id`.
    pub fn new(
        tool: impl Into<String>,
        outcome: impl Into<String>,
        trace_id: impl Into<String>,
    ) -> Self {
        Self {
            tool: tool.into(),
            outcome: outcome.into(),
            trace_id: trace_id.into(),
            fields: Map::new(),
            at: None,
        }
    }

    /// Adds a structured field. `null` values are left out; a later value for the same
    /// name replaces the earlier one. The names `seq`, `prev`, `at`, `tool`, `outcome` and
    /// `trace_id` belong to the log and are refused here (the field is dropped).
    pub fn field(mut self, name: &str, value: impl Into<Value>) -> Self {
        let value = value.into();
        if RESERVED.contains(&name) {
            tracing::error!(name, "an audit field may not use a reserved name; dropped");
        } else if !value.is_null() {
            self.fields.insert(name.to_owned(), value);
        }
        self
    }

    /// Who called, when known: `tenant` and `user` from the identity provider.
    pub fn identity(self, tenant: &str, user: &str) -> Self {
        self.field("tenant", tenant).field("user", user)
    }

    /// Adds `name` as the SHA-256 of `value`'s canonical JSON: proves what was sent without
    /// keeping it.
    pub fn digest(self, name: &str, value: &Value) -> Self {
        let digest = digest(value);
        self.field(name, digest)
    }

    /// Records the event as having happened at `ms` (since the Unix epoch) rather than
    /// when it is appended: for records carried over from elsewhere.
    pub fn at(mut self, ms: i64) -> Self {
        self.at = Some(ms);
        self
    }

    /// When it happened, if set with [`Event::at`].
    pub fn time(&self) -> Option<i64> {
        self.at
    }

    /// The tool called.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The outcome code.
    pub fn outcome(&self) -> &str {
        &self.outcome
    }

    /// The call's trace id.
    pub fn trace_id(&self) -> &str {
        &self.trace_id
    }

    /// A structured field, if set.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.fields.get(name)
    }

    /// Mirrors the event to the `guard::audit` tracing target: the outcome and who and
    /// what it concerned, never an answer, a preview or a digest. A server mirrors every
    /// event it records, so its own logs show each outcome as it happens.
    pub fn mirror(&self) {
        let text = |name| self.get(name).and_then(Value::as_str).unwrap_or("");
        tracing::info!(
            target: "guard::audit",
            tool = self.tool.as_str(),
            outcome = self.outcome.as_str(),
            trace_id = %self.trace_id,
            code = text("code"),
            tenant = text("tenant"),
            user = text("user"),
            operation_id = text("operation_id"),
            target_id = text("target"),
        );
    }

    /// The entry's canonical bytes at `seq`, after the entry whose leaf hash is `prev`,
    /// recorded at `at` (ms since the epoch).
    pub fn entry(&self, seq: u64, prev: &Hash, at: i64) -> String {
        placed(seq, prev, &self.body(at))
    }

    /// The entry's canonical bytes without its place: what an entry waiting for its
    /// sequence number keeps ([`placed`] puts it at its place).
    pub fn body(&self, at: i64) -> String {
        let mut rest = self.fields.clone();
        rest.insert("at".into(), at.into());
        rest.insert("tool".into(), self.tool.clone().into());
        rest.insert("outcome".into(), self.outcome.clone().into());
        rest.insert("trace_id".into(), self.trace_id.clone().into());
        let rest = Value::Object(rest);
        // A number with no canonical form stays as written: a record is never dropped for it.
        canonical_json(&rest).unwrap_or_else(|_| rest.to_string())
    }
}

const RESERVED: [&str; 6] = ["seq", "prev", "at", "tool", "outcome", "trace_id"];

/// An entry's place, read from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// Its sequence number, from 0.
    pub seq: u64,
    /// The leaf hash of the entry before it (zeros for the first).
    pub prev: Hash,
}

/// The entry of `body` ([`Event::body`]) as entry `seq`, after the entry whose leaf hash is
/// `prev`.
pub fn placed(seq: u64, prev: &Hash, body: &str) -> String {
    format!(
        "{{\"seq\":{seq},\"prev\":\"{}\",{}",
        hex(prev),
        body.get(1..).unwrap_or_default()
    )
}

/// Reads `{"seq":N,"prev":"<hex>",` at the start of `entry`. Strict: one spelling only
/// (no sign, no leading zero, lowercase hex), so a place has exactly one encoding.
pub fn place(entry: &[u8]) -> Option<Place> {
    place_after_brace(entry.strip_prefix(b"{")?)
}

/// [`place`] of an entry whose opening brace is elsewhere: `rest` starts after it.
pub(crate) fn place_after_brace(rest: &[u8]) -> Option<Place> {
    let rest = rest.strip_prefix(b"\"seq\":")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 19 || (digits > 1 && rest[0] == b'0') {
        return None;
    }
    let seq = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    let rest = rest[digits..].strip_prefix(b",\"prev\":\"")?;
    let prev = parse_hex(rest.get(..64)?)?;
    rest[64..].strip_prefix(b"\",")?;
    Some(Place { seq, prev })
}

/// 64 lowercase hex digits as a hash; anything else (uppercase included) is refused.
pub fn parse_hex(text: &[u8]) -> Option<Hash> {
    let text: &[u8; 64] = text.try_into().ok()?;
    let mut out = [0u8; 32];
    let mut bad = 0u8;
    for i in 0..32 {
        let (high, low) = (
            NIBBLE[text[2 * i] as usize],
            NIBBLE[text[2 * i + 1] as usize],
        );
        bad |= high | low;
        out[i] = (high << 4) | (low & 0x0f);
    }
    (bad & 0x10 == 0).then_some(out)
}

/// Each byte's value as a lowercase hex digit, or `0x10` where it is not one: a table, so a
/// verifier reading millions of hashes branches once per hash, not per digit. (`parse_hex`
/// indexes the digits directly: iterating them in pairs made whole verifications ~20% slower.)
const NIBBLE: [u8; 256] = {
    let mut table = [0x10u8; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};

/// The prefix of an exported line before the entry's own hash.
const LINE_HEAD: &[u8] = b"{\"hash\":\"";

/// Splits an exported line into the hash it claims and the entry's bytes. The hash is
/// checked by the caller.
pub fn split_line(line: &[u8]) -> Option<(Hash, Vec<u8>)> {
    let (hash, brace) = line_head(line)?;
    let mut entry = line[brace..].to_vec();
    entry[0] = b'{';
    Some((hash, entry))
}

/// Reads an exported line's head: the hash it claims, and the index of the comma after it,
/// where the entry's bytes begin once that comma is read as the entry's opening brace.
pub(crate) fn line_head(line: &[u8]) -> Option<(Hash, usize)> {
    let rest = line.strip_prefix(LINE_HEAD)?;
    let hash = parse_hex(rest.get(..64)?)?;
    rest[64..].strip_prefix(b"\",")?;
    Some((hash, LINE_HEAD.len() + 64 + 1))
}

/// The SHA-256 a record keeps of `value`'s canonical JSON (arguments, results), in hex; of
/// its plain JSON text where it has no canonical form (an integer beyond ±2^53).
pub fn digest(value: &Value) -> String {
    let text = canonical_json(value).unwrap_or_else(|_| value.to_string());
    crate::canonical::sha256_hex(text.as_bytes())
}

/// The leaf hash an entry must carry.
pub fn entry_hash(entry: &[u8]) -> Hash {
    leaf_hash(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_starts_with_its_place_and_sorts_the_rest() {
        let event = Event::new("delete_file", "executed", "t-1")
            .field("target", "a.txt")
            .identity("acme", "alice")
            .field("empty", Value::Null);
        let entry = event.entry(7, &[0xab; 32], 1000);
        assert!(entry.starts_with(&format!(
            "{{\"seq\":7,\"prev\":\"{}\",\"at\":1000,",
            "ab".repeat(32)
        )));
        assert!(!entry.contains("empty"));
        assert_eq!(
            place(entry.as_bytes()),
            Some(Place {
                seq: 7,
                prev: [0xab; 32]
            })
        );
        let value: Value = serde_json::from_str(&entry).unwrap();
        assert_eq!(value["tenant"], "acme");
        let hash = entry_hash(entry.as_bytes());
        let line = format!("{{\"hash\":\"{}\",{}", hex(&hash), &entry[1..]);
        let _: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            split_line(line.as_bytes()),
            Some((hash, entry.into_bytes()))
        );
    }

    #[test]
    fn a_place_or_hash_has_one_spelling() {
        let zeros = "0".repeat(64);
        assert!(place(format!("{{\"seq\":01,\"prev\":\"{zeros}\",").as_bytes()).is_none());
        assert!(place(format!("{{\"seq\":-1,\"prev\":\"{zeros}\",").as_bytes()).is_none());
        let upper = "A".repeat(64);
        assert!(place(format!("{{\"seq\":1,\"prev\":\"{upper}\",").as_bytes()).is_none());
        assert!(parse_hex("a".repeat(64).as_bytes()).is_some());
    }

    #[test]
    fn hex_reads_every_hash_and_refuses_every_other_byte_anywhere() {
        let hash: Hash = std::array::from_fn(|i| (i * 37 + 11) as u8);
        let text: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(parse_hex(text.as_bytes()), Some(hash));
        assert_eq!(parse_hex(&[b'f'; 64]), Some([0xff; 32]));
        for position in 0..64 {
            for byte in (0..=255u8).filter(|b| !b"0123456789abcdef".contains(b)) {
                let mut bad = text.clone().into_bytes();
                bad[position] = byte;
                assert_eq!(parse_hex(&bad), None, "byte {byte:#04x} at {position}");
            }
        }
        assert_eq!(parse_hex(&text.as_bytes()[..63]), None);
        assert_eq!(parse_hex(format!("{text}0").as_bytes()), None);
    }

    #[test]
    fn reserved_names_cannot_be_overwritten_by_fields() {
        let event = Event::new("t", "executed", "x").field("outcome", "declined");
        assert_eq!(event.outcome(), "executed");
        assert!(event.get("outcome").is_none());
    }
}
