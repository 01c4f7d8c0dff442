//! One option as written (`key = value` or a bare `key`) and the readers of its value:
//! strings, flags, counts, durations, rates and the crate path. Which options an attribute
//! takes is declared in `crate::options`.

use syn::{
    Expr, Ident, Lit, Token,
    parse::{Parse, ParseStream},
};

use crate::ctxt::Ctxt;

/// One option: `key = value` or a bare `key`.
pub struct Opt {
    pub key: Ident,
    pub value: Option<Expr>,
}

impl Parse for Opt {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let key: Ident = input.call(syn::ext::IdentExt::parse_any)?;
        let value = if input.peek(Token![=]) {
            input.parse::<Token![=]>()?;
            Some(input.parse()?)
        } else {
            None
        };
        Ok(Opt { key, value })
    }
}

/// The option's value as a whole-number literal, if it is one; the caller says what fits.
pub fn int_value(opt: &Opt) -> Option<u64> {
    match &opt.value {
        Some(Expr::Lit(syn::ExprLit {
            lit: Lit::Int(n), ..
        })) => n.base10_parse::<u64>().ok(),
        _ => None,
    }
}

/// A count: a whole number from 1 to `max`, and where it was written. Anything else is
/// reported where it was written (or at the key, if no value was) with `error`, which says
/// what the option takes and why.
pub fn count_value(
    cx: &Ctxt,
    opt: &Opt,
    max: u64,
    error: impl FnOnce() -> String,
) -> Option<(u64, proc_macro2::Span)> {
    match int_value(opt) {
        Some(n) if (1..=max).contains(&n) => Some((n, syn::spanned::Spanned::span(&opt.value))),
        _ => {
            let at = opt
                .value
                .as_ref()
                .map_or(&opt.key as &dyn quote::ToTokens, |v| {
                    v as &dyn quote::ToTokens
                });
            cx.error_spanned_by(at, error());
            None
        }
    }
}

pub fn string_value(cx: &Ctxt, opt: &Opt) -> Option<String> {
    match &opt.value {
        Some(Expr::Lit(lit)) => match &lit.lit {
            Lit::Str(s) => Some(s.value()),
            other => {
                cx.error_spanned_by(other, format!("`{}` takes a string literal", opt.key));
                None
            }
        },
        Some(other) => {
            cx.error_spanned_by(other, format!("`{}` takes a string literal", opt.key));
            None
        }
        None => {
            cx.error_spanned_by(
                &opt.key,
                format!("`{}` needs a value: `{} = \"...\"`", opt.key, opt.key),
            );
            None
        }
    }
}

/// `unknown_arguments = "refuse" | "ignore"`: whether arguments the tool does not take are
/// dropped (`true`) rather than refused.
pub fn ignores_unknown(cx: &Ctxt, opt: &Opt) -> bool {
    match string_value(cx, opt).as_deref() {
        Some("ignore") => true,
        Some("refuse") | None => false,
        Some(other) => {
            cx.error_spanned_by(&opt.value, format!("unknown `unknown_arguments = \"{other}\"`; write \"refuse\" (the default: a name the tool does not take ends the call with INVALID_INPUT) or \"ignore\" (such names are dropped, as serde does)"));
            false
        }
    }
}

/// A string option the human reads: refused when it shows nothing (empty, spaces, or only
/// invisible characters such as U+200B, U+FEFF or U+2060), since a client would render a
/// question with no words above it.
pub fn shown_text_value(cx: &Ctxt, opt: &Opt, example: &str) -> Option<String> {
    let text = string_value(cx, opt)?;
    if shows_nothing(&text) {
        cx.error_spanned_by(
            &opt.value,
            format!(
                "`{key}` shows the human nothing: it is empty or holds only spaces or invisible characters, so the question would reach them with no words. Write what they are asked, e.g. `{key} = \"{example}\"`",
                key = opt.key
            ),
        );
        return None;
    }
    Some(text)
}

/// True when no character of `text` is drawn: White_Space, control and format characters
/// (U+200B, U+FEFF, U+2060, ...), separators, combining marks with nothing to combine with,
/// and the Hangul and Braille fillers that render blank.
pub fn shows_nothing(text: &str) -> bool {
    use unicode_general_category::{GeneralCategory as G, get_general_category};
    text.chars().all(|c| {
        c.is_whitespace()
            || matches!(
                get_general_category(c),
                G::Control
                    | G::Format
                    | G::SpaceSeparator
                    | G::LineSeparator
                    | G::ParagraphSeparator
                    | G::NonspacingMark
                    | G::SpacingMark
                    | G::EnclosingMark
            )
            || matches!(
                c,
                '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' | '\u{2800}'
            )
    })
}

pub fn expr_value<'o>(cx: &Ctxt, opt: &'o Opt, shape: &str) -> Option<&'o Expr> {
    if opt.value.is_none() {
        cx.error_spanned_by(
            &opt.key,
            format!("`{}` needs a value: `{} = {shape}`", opt.key, opt.key),
        );
    }
    opt.value.as_ref()
}

/// A bare flag, or `flag = true|false`.
pub fn flag_value(cx: &Ctxt, opt: &Opt) -> bool {
    match &opt.value {
        None => true,
        Some(Expr::Lit(syn::ExprLit {
            lit: Lit::Bool(b), ..
        })) => b.value,
        Some(other) => {
            cx.error_spanned_by(
                other,
                format!(
                    "`{}` is a flag: write `{}` or `{} = false`",
                    opt.key, opt.key, opt.key
                ),
            );
            false
        }
    }
}

// ---------------------------------------------------------------------------------------
// Durations and rates: `timeout`, `ttl` and `rate` all read them here, so one spelling
// works everywhere.
//
// A duration is a positive whole number, optionally one ASCII space, and a lowercase unit:
// "90s", "10m", "10min", "10 min", "1h", "1d". A rate is calls, `/`, and a period, where the
// period is a duration or a bare unit meaning one of it: "5/min", "5/10m", "100/1d".
// Nothing else is read: no fractions, signs, other spaces or letters in other scripts.
// ---------------------------------------------------------------------------------------

/// Every unit spelling, with its length in seconds.
const UNITS: &[(&[&str], u64)] = &[
    (&["s", "sec", "secs", "second", "seconds"], 1),
    (&["m", "min", "mins", "minute", "minutes"], 60),
    (&["h", "hr", "hrs", "hour", "hours"], 3600),
    (&["d", "day", "days"], 86_400),
];

/// The accepted units, as every duration error lists them.
fn units_help() -> String {
    UNITS
        .iter()
        .map(|(names, _)| names.join("/"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn unit_secs(unit: &str) -> Option<u64> {
    UNITS
        .iter()
        .find(|(names, _)| names.contains(&unit))
        .map(|(_, secs)| *secs)
}

/// Why a duration did not read.
#[derive(Debug, PartialEq, Eq)]
pub enum DurationError {
    /// It does not start with a whole number (empty, a sign, a fraction, a leading space).
    NoNumber,
    /// A number without a unit.
    NoUnit,
    /// A unit that is not one of [`UNITS`].
    UnknownUnit(String),
    Zero,
    /// More seconds than fit in 64 bits.
    TooLarge,
}

/// `"90s"`, `"10min"`, `"1 h"`, `"1d"` as seconds.
pub fn parse_duration(s: &str) -> Result<u64, DurationError> {
    let digits_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, rest) = s.split_at(digits_end);
    if digits.is_empty() {
        return Err(DurationError::NoNumber);
    }
    let unit = rest.strip_prefix(' ').unwrap_or(rest);
    if unit.is_empty() {
        return Err(DurationError::NoUnit);
    }
    let per = unit_secs(unit).ok_or_else(|| DurationError::UnknownUnit(unit.to_owned()))?;
    // Only ASCII digits are left, so a parse failure can only be overflow.
    let n: u64 = digits.parse().map_err(|_| DurationError::TooLarge)?;
    if n == 0 {
        return Err(DurationError::Zero);
    }
    n.checked_mul(per).ok_or(DurationError::TooLarge)
}

/// The longest a duration option may be, and why.
pub struct Limit {
    pub max_secs: u64,
    /// The maximum as the user would write it.
    pub max: &'static str,
    pub why: &'static str,
}

/// `timeout` in `#[destructive]`: how long the human has to answer.
pub const TIMEOUT: Limit = Limit {
    max_secs: 3600,
    max: "1h",
    why: "a question left open longer is a forgotten one, and the call holds its request open meanwhile; for approvals that take longer, split the tool into `#[prepare]` and `#[confirm]`",
};

/// `ttl` in `#[prepare]`: how long an intent waits for its confirm.
pub const TTL: Limit = Limit {
    max_secs: 7 * 86_400,
    max: "7d",
    why: "an intent that old no longer shows what the user agreed to; let it expire and prepare again",
};

/// `ttl` in `#[idempotent(key = ...)]`: how long a key answers with its stored result.
pub const KEY_TTL: Limit = Limit {
    max_secs: 30 * 86_400,
    max: "30d",
    why: "the store keeps every key's result that long; a client retries within hours, not months",
};

/// `undo_within` in `#[destructive]`: how long the owner can undo the effect.
pub const UNDO_WITHIN: Limit = Limit {
    max_secs: 7 * 86_400,
    max: "7d",
    why: "the undo data (a trashed file, a renamed table) is kept until the window closes, and an undo offered for longer is forgotten rather than used; keep backups for what must be recoverable longer",
};

/// `defer` in `#[destructive]`: how long a confirmed effect waits before it runs.
pub const DEFER: Limit = Limit {
    max_secs: 86_400,
    max: "1d",
    why: "a call that waits longer is forgotten rather than watched, and what the human confirmed drifts from what would run; for work that is approved now and done much later, use `#[prepare]` and `#[confirm]`",
};

/// `grant` in `#[destructive]`: how long a grant the human opens lasts.
pub const GRANT: Limit = Limit {
    max_secs: 8 * 3600,
    max: "8h",
    why: "a grant is the human's \"yes\" to calls they will not see, and one that outlives the work it was given for is forgotten rather than watched; let the human open another when the work goes on",
};

/// `defer` in `#[confirm]`: how long a confirmed two-phase effect waits before it runs.
pub const CONFIRM_DEFER: Limit = Limit {
    max_secs: 86_400,
    max: "1d",
    why: "a confirmed operation that waits longer is forgotten rather than watched, and the target drifts from what the user confirmed; let the user confirm closer to when it should happen",
};

/// The period of `rate` in `#[prepare]`.
pub const RATE_PERIOD: Limit = Limit {
    max_secs: 7 * 86_400,
    max: "7d",
    why: "the store keeps every call of the window to count it; count per day or per week at most",
};

/// Reads `s` as the `what` option's duration within `limit`, or says what is wrong and what
/// to write instead.
pub fn read_duration(what: &str, s: &str, limit: &Limit) -> Result<u64, String> {
    let shown = s.escape_debug();
    let write = format!(
        "write a positive whole number and a unit, e.g. \"90s\", \"10min\", \"1h\", \"1d\" (units: {})",
        units_help()
    );
    let secs = parse_duration(s).map_err(|e| match e {
        DurationError::NoNumber => {
            format!("cannot read {what} `{shown}`: it does not start with a whole number; {write}")
        }
        DurationError::NoUnit => {
            format!("cannot read {what} `{shown}`: the number has no unit; {write}")
        }
        DurationError::UnknownUnit(unit) => format!(
            "cannot read {what} `{shown}`: `{}` is not a unit; {write}",
            unit.escape_debug()
        ),
        DurationError::Zero => format!("{what} `{shown}` is zero; {write}"),
        DurationError::TooLarge => format!(
            "{what} `{shown}` is too large to count in seconds; the maximum is {}",
            limit.max
        ),
    })?;
    if secs > limit.max_secs {
        return Err(format!(
            "{what} `{shown}` is longer than the {} maximum: {}",
            limit.max, limit.why
        ));
    }
    Ok(secs)
}

/// Reads `s` as a `rate`: `(calls, period in seconds)`.
pub fn read_rate(s: &str) -> Result<(u32, u64), String> {
    let shown = s.escape_debug();
    let write = format!(
        "write calls per period, e.g. \"5/min\", \"5/10m\", \"100/1d\"; the period is a duration or a bare unit (units: {})",
        units_help()
    );
    let Some((calls, period)) = s.split_once('/') else {
        return Err(format!(
            "cannot read rate `{shown}`: it has no `/`; {write}"
        ));
    };
    if calls.is_empty() || !calls.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "cannot read rate `{shown}`: `{}` is not a whole number of calls; {write}",
            calls.escape_debug()
        ));
    }
    let calls: u32 = match calls.parse::<u64>() {
        Ok(0) => return Err(format!("rate `{shown}` allows zero calls; {write}")),
        Ok(n) => u32::try_from(n).ok(),
        Err(_) => None,
    }
    .ok_or_else(|| format!("rate `{shown}` allows more calls than fit in 32 bits; {write}"))?;
    // A period starting with a letter is a bare unit, one of it: "min" is "1min".
    let secs = if period.starts_with(|c: char| c.is_ascii_digit()) {
        read_duration("rate period", period, &RATE_PERIOD)
            .map_err(|e| format!("rate `{shown}`: {e}"))?
    } else {
        unit_secs(period).ok_or_else(|| {
            format!(
                "cannot read rate `{shown}`: `{}` is not a unit; {write}",
                period.escape_debug()
            )
        })?
    };
    Ok((calls, secs))
}

/// The string value of `opt` as a duration within `limit`, reported at the value if not.
pub fn duration_value(cx: &Ctxt, opt: &Opt, limit: &Limit) -> Option<u64> {
    let s = string_value(cx, opt)?;
    read_duration(&opt.key.to_string(), &s, limit)
        .map_err(|message| cx.error_spanned_by(&opt.value, message))
        .ok()
}

/// The string value of `opt` as a rate, reported at the value if it does not read.
pub fn rate_value(cx: &Ctxt, opt: &Opt) -> Option<(u32, u64)> {
    let s = string_value(cx, opt)?;
    read_rate(&s)
        .map_err(|message| cx.error_spanned_by(&opt.value, message))
        .ok()
}

/// `crate = "path"`: where rmcp_guard is when the crate reaches it under another path.
pub fn crate_path(cx: &Ctxt, opt: &Opt) -> Option<syn::Path> {
    let text = string_value(cx, opt)?;
    match syn::parse_str::<syn::Path>(&text) {
        Ok(path) => Some(path),
        Err(_) => {
            cx.error_spanned_by(
                &opt.value,
                format!("`crate = \"{text}\"` is not a path; write the path rmcp_guard is reachable under, e.g. `crate = \"my_crate::guard\"`"),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_of_spaces_or_invisible_characters_shows_nothing() {
        for blank in [
            "",
            "   ",
            "\t\n",
            "\u{00A0}\u{3000}",
            "\u{200B}",
            "\u{FEFF}",
            "\u{2060}",
            " \u{200B}\u{200D} ",
            "\u{3164}",
        ] {
            assert!(shows_nothing(blank), "{blank:?}");
        }
        for shown in ["Delete?", " ok ", "\u{200B}x", "\u{00E9}", "\u{1F5D1}"] {
            assert!(!shows_nothing(shown), "{shown:?}");
        }
    }

    #[test]
    fn every_unit_spelling_reads_with_and_without_a_space() {
        for (spelling, secs) in [
            ("90s", 90),
            ("90sec", 90),
            ("90secs", 90),
            ("1second", 1),
            ("90seconds", 90),
            ("10m", 600),
            ("10min", 600),
            ("10mins", 600),
            ("1minute", 60),
            ("10minutes", 600),
            ("1h", 3600),
            ("2hr", 7200),
            ("2hrs", 7200),
            ("1hour", 3600),
            ("2hours", 7200),
            ("1d", 86_400),
            ("1day", 86_400),
            ("3days", 259_200),
            ("007m", 420),
        ] {
            assert_eq!(parse_duration(spelling), Ok(secs), "{spelling}");
            let unit_at = spelling.find(|c: char| c.is_ascii_alphabetic()).unwrap();
            let spaced = format!("{} {}", &spelling[..unit_at], &spelling[unit_at..]);
            assert_eq!(parse_duration(&spaced), Ok(secs), "{spaced}");
        }
    }

    #[test]
    fn zero_is_refused_in_every_unit() {
        for zero in ["0s", "0m", "0 min", "00h", "0d"] {
            assert_eq!(parse_duration(zero), Err(DurationError::Zero), "{zero}");
        }
    }

    #[test]
    fn overflow_is_refused_not_wrapped() {
        assert_eq!(
            parse_duration("18446744073709551615s"),
            Ok(u64::MAX),
            "the largest count of seconds still reads"
        );
        for huge in [
            "18446744073709551616s",
            "99999999999999999999999d",
            "307445734561825861m",
            "213503982334602d",
        ] {
            assert_eq!(parse_duration(huge), Err(DurationError::TooLarge), "{huge}");
        }
    }

    #[test]
    fn other_spellings_are_refused() {
        use DurationError::*;
        for (bad, why) in [
            ("", NoNumber),
            ("m", NoNumber),
            (" 10m", NoNumber),
            ("-5m", NoNumber),
            ("+5m", NoNumber),
            (".5h", NoNumber),
            ("\u{0661}0m", NoNumber),
            ("10", NoUnit),
            ("10 ", NoUnit),
            ("10  m", UnknownUnit(" m".into())),
            ("10\tm", UnknownUnit("\tm".into())),
            ("10\u{a0}m", UnknownUnit("\u{a0}m".into())),
            ("10\u{200b}m", UnknownUnit("\u{200b}m".into())),
            ("10m\u{200b}", UnknownUnit("m\u{200b}".into())),
            ("10m ", UnknownUnit("m ".into())),
            ("10M", UnknownUnit("M".into())),
            ("10Min", UnknownUnit("Min".into())),
            ("10\u{ff4d}", UnknownUnit("\u{ff4d}".into())),
            ("1.5h", UnknownUnit(".5h".into())),
            ("1h30m", UnknownUnit("h30m".into())),
            ("10 minuts", UnknownUnit("minuts".into())),
            ("2w", UnknownUnit("w".into())),
            ("1ms", UnknownUnit("ms".into())),
        ] {
            assert_eq!(parse_duration(bad), Err(why), "{bad:?}");
        }
    }

    #[test]
    fn errors_list_the_units_and_show_invisible_characters() {
        let message = read_duration("timeout", "10\u{200b}m", &TIMEOUT).unwrap_err();
        assert!(message.contains(r"`10\u{200b}m`"), "{message}");
        assert!(message.contains(r"`\u{200b}m` is not a unit"), "{message}");
        assert!(
            message.contains(
                "units: s/sec/secs/second/seconds, m/min/mins/minute/minutes, h/hr/hrs/hour/hours, d/day/days"
            ),
            "{message}"
        );
        for bad in ["0s", "10", "ten minutes", "10 fortnights"] {
            let message = read_duration("ttl", bad, &TTL).unwrap_err();
            assert!(message.contains("ttl `"), "{message}");
            assert!(message.contains("units: s/sec"), "{message}");
        }
    }

    #[test]
    fn timeout_is_at_most_an_hour() {
        assert_eq!(read_duration("timeout", "1h", &TIMEOUT), Ok(3600));
        assert_eq!(read_duration("timeout", "60min", &TIMEOUT), Ok(3600));
        assert_eq!(read_duration("timeout", "3600s", &TIMEOUT), Ok(3600));
        for over in ["3601s", "61m", "2h", "1d"] {
            let message = read_duration("timeout", over, &TIMEOUT).unwrap_err();
            assert!(
                message.starts_with(&format!("timeout `{over}` is longer than the 1h maximum")),
                "{message}"
            );
            assert!(message.contains("#[prepare]"), "{message}");
        }
        let message = read_duration("timeout", "99999999999999999999h", &TIMEOUT).unwrap_err();
        assert!(message.contains("too large"), "{message}");
        assert!(message.contains("the maximum is 1h"), "{message}");
    }

    #[test]
    fn ttl_is_at_most_seven_days() {
        assert_eq!(read_duration("ttl", "7d", &TTL), Ok(604_800));
        assert_eq!(read_duration("ttl", "168h", &TTL), Ok(604_800));
        for over in ["8d", "169h", "604801s"] {
            let message = read_duration("ttl", over, &TTL).unwrap_err();
            assert!(
                message.starts_with(&format!("ttl `{over}` is longer than the 7d maximum")),
                "{message}"
            );
        }
    }

    #[test]
    fn rates_read_a_bare_unit_or_a_duration_as_the_period() {
        for (rate, expected) in [
            ("5/min", (5, 60)),
            ("5/m", (5, 60)),
            ("5/10m", (5, 600)),
            ("5/10 min", (5, 600)),
            ("30/h", (30, 3600)),
            ("30/hour", (30, 3600)),
            ("2/s", (2, 1)),
            ("100/day", (100, 86_400)),
            ("100/1d", (100, 86_400)),
            ("1/7d", (1, 604_800)),
            ("4294967295/s", (u32::MAX, 1)),
        ] {
            assert_eq!(read_rate(rate), Ok(expected), "{rate}");
        }
    }

    #[test]
    fn bad_rates_say_what_is_wrong() {
        for (bad, says) in [
            ("5 per minute", "has no `/`"),
            ("0/min", "allows zero calls"),
            ("00/min", "allows zero calls"),
            ("4294967296/s", "more calls than fit in 32 bits"),
            ("-5/min", "`-5` is not a whole number of calls"),
            ("+5/min", "`+5` is not a whole number of calls"),
            (" 5/min", "` 5` is not a whole number of calls"),
            ("five/min", "`five` is not a whole number of calls"),
            ("5/0m", "is zero"),
            ("5/fortnight", "`fortnight` is not a unit"),
            ("5/ min", "` min` is not a unit"),
            ("5/", "`` is not a unit"),
            ("5/2min/2", "`min/2` is not a unit"),
            ("", "has no `/`"),
            ("/min", "`` is not a whole number of calls"),
            ("5/8d", "longer than the 7d maximum"),
            ("5/99999999999999999999d", "too large"),
            ("5/\u{200b}min", r"`\u{200b}min`"),
        ] {
            let message = read_rate(bad).unwrap_err();
            assert!(message.contains(says), "{bad:?}: {message}");
            assert!(
                message.contains("units: s/sec") || message.contains("maximum"),
                "{bad:?}: {message}"
            );
        }
    }
}
