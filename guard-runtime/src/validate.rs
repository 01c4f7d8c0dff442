//! Server-side revalidation of an accepted form: the client's checks are a courtesy, these
//! are the rules. Every problem is reported at once so the human can fix them in one retry.
//!
//! Text is measured in visible characters: `min_length` and `max_length` count the characters
//! that are neither Unicode White_Space, nor invisible (controls, format characters such as
//! zero-width spaces and joiners, the Hangul fillers and the blank Braille pattern), nor
//! combining marks (which belong to the character before them). A required text answer needs
//! at least one visible character, and a text answer that is not empty but has none (only
//! spaces or invisible characters) is refused, so a rollback plan of ten zero-width spaces is
//! no plan.

use serde_json::{Map, Value};
use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;

use crate::{
    form::{EnumValue, FieldKind, FieldSpec, FormSpec, Format},
    person::{is_default_ignorable, is_invisible},
};

/// Checks `content` against `spec`: object shape, unknown and required fields, types, enum
/// membership, lengths, ranges and formats. Returns the object, or every reason it fails.
pub fn validate<'c>(
    spec: &FormSpec,
    content: Option<&'c Value>,
) -> Result<&'c Map<String, Value>, Vec<String>> {
    let Some(Value::Object(object)) = content else {
        return Err(vec![
            "the answer carried no form content (an object with the form's fields)".into(),
        ]);
    };
    let mut problems = Vec::new();
    for key in object.keys() {
        if !spec.fields.iter().any(|f| f.name == key) {
            let names: Vec<_> = spec.fields.iter().map(|f| f.name).collect();
            problems.push(format!(
                "unknown field `{key}` (the form has: {})",
                names.join(", ")
            ));
        }
    }
    for field in spec.fields {
        match object.get(field.name).filter(|v| !v.is_null()) {
            None if field.required() => {
                problems.push(format!("`{}` is required", field.name));
            }
            None => {}
            Some(value) => {
                if let Err(problem) = check_value(field, value) {
                    problems.push(problem);
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(object)
    } else {
        Err(problems)
    }
}

fn check_value(field: &FieldSpec, value: &Value) -> Result<(), String> {
    let name = field.name;
    match &field.kind {
        FieldKind::Boolean => value
            .as_bool()
            .map(drop)
            .ok_or_else(|| format!("`{name}` must be true or false, not {value}")),
        FieldKind::String {
            min_length,
            max_length,
            format,
        } => {
            let text = value
                .as_str()
                .ok_or_else(|| format!("`{name}` must be text, not {value}"))?;
            let length = visible_len(text);
            if length == 0 && (field.required() || !text.is_empty()) {
                return Err(format!(
                    "`{name}` has no visible characters (only spaces or invisible characters \
                     such as zero-width spaces); it needs visible text"
                ));
            }
            if let Some(min) = min_length
                && length < *min as usize
            {
                return Err(format!(
                    "`{name}` must be at least {min} visible characters (got {length})"
                ));
            }
            if let Some(max) = max_length
                && length > *max as usize
            {
                return Err(format!(
                    "`{name}` must be at most {max} visible characters (got {length})"
                ));
            }
            match format {
                Some(format) if !format_matches(*format, text) => Err(format!(
                    "`{name}` must be a valid {} (got {text:?})",
                    format.as_str()
                )),
                _ => Ok(()),
            }
        }
        FieldKind::Integer {
            minimum,
            maximum,
            type_min,
            type_max,
            rust_type,
        } => {
            let n = value
                .as_i64()
                .map(i128::from)
                .or_else(|| value.as_u64().map(i128::from))
                .ok_or_else(|| format!("`{name}` must be a whole number, not {value}"))?;
            if n < *type_min || n > *type_max {
                return Err(format!(
                    "`{name}` must fit {rust_type} ({type_min}..={type_max}), got {n}"
                ));
            }
            check_range(
                name,
                n as f64,
                minimum.map(|m| m as f64),
                maximum.map(|m| m as f64),
            )
        }
        FieldKind::Number { minimum, maximum } => {
            let n = value
                .as_f64()
                .filter(|n| n.is_finite())
                .ok_or_else(|| format!("`{name}` must be a number, not {value}"))?;
            check_range(name, n, *minimum, *maximum)
        }
        FieldKind::Enum { values } | FieldKind::LegacyEnum { values } => {
            if is_member(values, value) {
                Ok(())
            } else {
                Err(format!(
                    "`{name}` must be one of {}, not {value}",
                    allowed(values)
                ))
            }
        }
        FieldKind::MultiEnum { values } => {
            let items = value.as_array().ok_or_else(|| {
                format!(
                    "`{name}` must be a list of choices from {}, not {value}",
                    allowed(values)
                )
            })?;
            if let Some(item) = items.iter().find(|item| !is_member(values, item)) {
                return Err(format!(
                    "`{name}` may hold only {}, not {item}",
                    allowed(values)
                ));
            }
            match items
                .iter()
                .enumerate()
                .find(|(i, item)| items[..*i].contains(item))
            {
                Some((_, twice)) => Err(format!(
                    "`{name}` lists {twice} twice; pick each choice once"
                )),
                None => Ok(()),
            }
        }
    }
}

/// Whether `value` is the wire value of one of `values` (a string, not a look-alike number).
fn is_member(values: &[EnumValue], value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|text| values.iter().any(|v| v.value == text))
}

fn allowed(values: &[EnumValue]) -> String {
    values
        .iter()
        .map(|v| v.value)
        .collect::<Vec<_>>()
        .join(", ")
}

fn check_range(
    name: &str,
    n: f64,
    minimum: Option<f64>,
    maximum: Option<f64>,
) -> Result<(), String> {
    if let Some(min) = minimum
        && n < min
    {
        return Err(format!("`{name}` must be at least {min}, got {n}"));
    }
    if let Some(max) = maximum
        && n > max
    {
        return Err(format!("`{name}` must be at most {max}, got {n}"));
    }
    Ok(())
}

fn format_matches(format: Format, text: &str) -> bool {
    match format {
        Format::Email => is_email(text),
        Format::Uri => url::Url::parse(text).is_ok(),
        Format::Date => crate::rfc3339::is_full_date(text),
        Format::DateTime => crate::rfc3339::is_date_time(text),
    }
}

/// The practical address shape: one `@`, a non-empty local part, a dotted domain, no spaces.
fn is_email(text: &str) -> bool {
    let Some((local, domain)) = text.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.contains('@')
        && !text.chars().any(char::is_whitespace)
        && domain.split('.').count() >= 2
        && domain.split('.').all(|label| !label.is_empty())
}

/// The number of visible characters in `text`, as `min_length` and `max_length` count them:
/// characters that are not invisible (White_Space, format characters such as zero-width
/// spaces) and not combining marks.
pub fn visible_len(text: &str) -> usize {
    text.chars()
        .filter(|&c| !is_invisible(c) && !is_combining_mark(c))
        .count()
}

/// Combining marks (Mn, Mc, Me, including variation selectors): part of the character
/// before them, never a character of their own.
fn is_combining_mark(c: char) -> bool {
    matches!(
        get_general_category(c),
        GeneralCategory::NonspacingMark
            | GeneralCategory::SpacingMark
            | GeneralCategory::EnclosingMark
    )
}

/// How a typed name compares with the target it must equal.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TypedName {
    Matches,
    /// An invisible character (format character, variation selector…) is left inside.
    Invisible,
    Differs,
}

/// Both sides in NFC, White_Space trimmed from the typed text; an invisible character left
/// inside it never matches, whatever the target, so what the human saw is what they typed.
pub(crate) fn compare_typed(typed: &str, expected: &str) -> TypedName {
    let typed: String = typed.nfc().collect();
    let typed = typed.trim();
    let hidden = |c: char| (is_invisible(c) && !c.is_whitespace()) || is_default_ignorable(c);
    if typed.chars().any(hidden) {
        TypedName::Invisible
    } else if typed.chars().eq(expected.nfc()) {
        TypedName::Matches
    } else {
        TypedName::Differs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invisible_and_combining_characters_do_not_count() {
        assert_eq!(visible_len(""), 0);
        assert_eq!(visible_len(" \t\n\u{A0}\u{3000}\u{2028}"), 0);
        assert_eq!(
            visible_len("\u{200B}\u{200C}\u{200D}\u{2060}\u{FEFF}\u{AD}\u{202E}"),
            0
        );
        assert_eq!(visible_len("\u{3164}\u{115F}\u{FFA0}\u{2800}\u{E0041}"), 0);
        assert_eq!(
            visible_len("\u{301}\u{301}\u{FE0F}\u{20DD}"),
            0,
            "lone marks"
        );
        assert_eq!(visible_len("e\u{301}"), 1, "a mark belongs to its base");
        assert_eq!(visible_len("\u{200B}ada\u{200B} "), 3);
        assert_eq!(visible_len("🙂 ok"), 3);
    }

    #[test]
    fn typed_names_compare_in_nfc_after_trimming_white_space() {
        assert_eq!(compare_typed("orders", "orders"), TypedName::Matches);
        assert_eq!(
            compare_typed(" \torders\u{3000}\n", "orders"),
            TypedName::Matches
        );
        assert_eq!(
            compare_typed("cafe\u{301}", "caf\u{E9}"),
            TypedName::Matches
        );
        assert_eq!(
            compare_typed("caf\u{E9}", "cafe\u{301}"),
            TypedName::Matches
        );
        assert_eq!(compare_typed("Orders", "orders"), TypedName::Differs);
        assert_eq!(compare_typed("\u{43e}rders", "orders"), TypedName::Differs);
        assert_eq!(compare_typed("", "orders"), TypedName::Differs);
    }

    #[test]
    fn an_invisible_character_inside_never_matches() {
        for hidden in [
            '\u{200B}', '\u{200D}', '\u{2060}', '\u{FEFF}', '\u{AD}', '\u{202E}', '\u{FE0F}',
            '\u{34F}',
        ] {
            for typed in [
                format!("ord{hidden}ers"),
                format!("{hidden}orders"),
                format!("orders{hidden}"),
            ] {
                assert_eq!(
                    compare_typed(&typed, "orders"),
                    TypedName::Invisible,
                    "{typed:?}"
                );
            }
        }
    }
}
