//! Canonical JSON as RFC 8785 (the JSON Canonicalization Scheme) defines it, so equal
//! arguments always hash and seal the same and any JCS implementation can check guard's
//! digests; and the lowercase hex guard writes digests in.

use serde_json::{Number, Value};

/// A value RFC 8785 cannot encode without changing it.
///
/// JCS writes every number as an IEEE-754 double. An integer a double cannot hold exactly
/// (beyond ±2^53, say 9007199254740993) would come out rounded, so two different values
/// would share one canonical form and one digest; guard refuses them instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the number {0} has no exact canonical form: canonical JSON (RFC 8785) holds numbers as \
     IEEE-754 doubles, which cannot represent it; send integers beyond ±9007199254740992 as \
     strings"
)]
pub struct NotCanonical(String);

/// `value` in RFC 8785 form: object members sorted by their names' UTF-16 code units, no
/// whitespace, numbers as ECMAScript writes doubles, strings with the minimal escapes.
pub fn canonical_json(value: &Value) -> Result<String, NotCanonical> {
    let mut out = String::new();
    write(value, &mut out)?;
    Ok(out)
}

fn write(value: &Value, out: &mut String) -> Result<(), NotCanonical> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(n, out)?,
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out)?;
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, (name, member)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(name, out);
                out.push(':');
                write(member, out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

fn write_number(n: &Number, out: &mut String) -> Result<(), NotCanonical> {
    let exact = |wide: i128, double: f64| double as i128 == wide;
    let double = if let Some(i) = n.as_i64() {
        let double = i as f64;
        if !exact(i128::from(i), double) {
            return Err(NotCanonical(n.to_string()));
        }
        double
    } else if let Some(u) = n.as_u64() {
        let double = u as f64;
        if !exact(i128::from(u), double) {
            return Err(NotCanonical(n.to_string()));
        }
        double
    } else {
        n.as_f64().ok_or_else(|| NotCanonical(n.to_string()))?
    };
    if double == 0.0 {
        // ECMAScript writes negative zero as "0".
        out.push('0');
    } else {
        out.push_str(ryu_js::Buffer::new().format_finite(double));
    }
    Ok(())
}

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if c < ' ' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `bytes` as lowercase hex: one allocation, not one per byte (a digest is hexed on every
/// guarded call).
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex(&sha2::Sha256::digest(bytes))
}

/// A payload as guard stores it: its canonical JSON and that text's SHA-256.
pub fn canonical_payload(payload: &Value) -> Result<(String, String), NotCanonical> {
    let canonical = canonical_json(payload)?;
    let hash = sha256_hex(canonical.as_bytes());
    Ok((canonical, hash))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn hex_writes_every_byte_as_two_lowercase_digits() {
        let every: Vec<u8> = (0..=255).collect();
        let expected: String = every.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex(&every), expected);
        assert_eq!(hex(&[]), "");
    }

    fn canonical(text: &str) -> String {
        canonical_json(&serde_json::from_str(text).unwrap()).unwrap()
    }

    /// RFC 8785 section 3.2.2 and 3.2.3.
    #[test]
    fn the_rfc_example() {
        let input = r#"{
          "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
          "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
          "literals": [null, true, false]
        }"#;
        assert_eq!(
            canonical(input),
            r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
        );
    }

    /// RFC 8785 section 3.2.3: names sort by UTF-16 code units, so an astral character
    /// (a surrogate pair) sorts before U+FB33 although its code point is higher.
    #[test]
    fn names_sort_by_utf16_code_units() {
        let input = r#"{
          "\u20ac": "Euro Sign",
          "\r": "Carriage Return",
          "\ufb33": "Hebrew Letter Dalet With Dagesh",
          "1": "One",
          "\ud83d\ude00": "Emoji: Grinning Face",
          "\u0080": "Control",
          "\u00f6": "Latin Small Letter O With Diaeresis"
        }"#;
        let names: Vec<String> =
            serde_json::from_str::<serde_json::Map<String, Value>>(&canonical(input))
                .unwrap()
                .keys()
                .cloned()
                .collect();
        assert_eq!(
            names,
            [
                "\r",
                "1",
                "\u{80}",
                "\u{f6}",
                "\u{20ac}",
                "\u{1f600}",
                "\u{fb33}"
            ]
        );
    }

    /// RFC 8785 appendix B: IEEE-754 doubles and their canonical text.
    #[test]
    fn the_rfc_number_vectors() {
        let vectors: &[(u64, &str)] = &[
            (0x0000000000000000, "0"),
            (0x8000000000000000, "0"),
            (0x0000000000000001, "5e-324"),
            (0x8000000000000001, "-5e-324"),
            (0x7fefffffffffffff, "1.7976931348623157e+308"),
            (0xffefffffffffffff, "-1.7976931348623157e+308"),
            (0x4340000000000000, "9007199254740992"),
            (0xc340000000000000, "-9007199254740992"),
            (0x4430000000000000, "295147905179352830000"),
            (0x44b52d02c7e14af5, "9.999999999999997e+22"),
            (0x44b52d02c7e14af6, "1e+23"),
            (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
            (0x444b1ae4d6e2ef4e, "999999999999999700000"),
            (0x444b1ae4d6e2ef4f, "999999999999999900000"),
            (0x444b1ae4d6e2ef50, "1e+21"),
            (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
            (0x3eb0c6f7a0b5ed8d, "0.000001"),
            (0x41b3de4355555553, "333333333.3333332"),
            (0x41b3de4355555554, "333333333.33333325"),
            (0x41b3de4355555555, "333333333.3333333"),
            (0x41b3de4355555556, "333333333.3333334"),
            (0x41b3de4355555557, "333333333.33333343"),
            (0xbecbf647612f3696, "-0.0000033333333333333333"),
            (0x43143ff3c1cb0959, "1424953923781206.2"),
        ];
        for &(bits, expected) in vectors {
            let value = Value::from(f64::from_bits(bits));
            assert_eq!(canonical_json(&value).unwrap(), expected, "{bits:#018x}");
        }
    }

    #[test]
    fn integers_a_double_holds_exactly_are_accepted() {
        for (value, text) in [
            (json!(0), "0"),
            (json!(-17), "-17"),
            (json!(9007199254740992_u64), "9007199254740992"),
            (json!(-9007199254740992_i64), "-9007199254740992"),
            // A double's shortest digits, as ECMAScript writes 2^60.
            (json!(1_u64 << 60), "1152921504606847000"),
            (json!(1.0), "1"),
        ] {
            assert_eq!(canonical_json(&value).unwrap(), text);
        }
    }

    /// Rounding would give two different payloads one digest: refused, never rounded.
    #[test]
    fn integers_a_double_would_round_are_refused() {
        for value in [
            json!(9007199254740993_u64),
            json!(-9007199254740993_i64),
            json!(i64::MAX),
            json!(u64::MAX),
            json!({"nested": [1, 18014398509481985_u64]}),
        ] {
            let error = canonical_json(&value).unwrap_err();
            assert!(error.to_string().contains("as strings"), "{error}");
        }
    }

    #[test]
    fn controls_use_the_short_escapes_or_lowercase_hex() {
        let value = json!("\u{0}\u{1f}\u{7f}\u{2028}\u{8}\u{c}/é");
        assert_eq!(
            canonical_json(&value).unwrap(),
            "\"\\u0000\\u001f\u{7f}\u{2028}\\b\\f/é\""
        );
    }

    /// The same members in any order give the same text.
    #[test]
    fn member_order_does_not_matter() {
        assert_eq!(
            canonical(r#"{"b":1,"a":{"y":[true,null],"x":"s"}}"#),
            canonical(r#"{"a":{"x":"s","y":[true,null]},"b":1}"#)
        );
    }
}
