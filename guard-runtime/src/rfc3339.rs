//! RFC 3339's `full-date` and `date-time`, exactly as its ABNF writes them (section 5.6):
//! four-digit years, two-digit months, days, hours, minutes and seconds, ASCII digits only,
//! `T` and `Z` in either case, and a leap second only where one can fall. Looser parsers
//! accept `2024-1-5` or `+2024-01-05`, which a form's `date` field must refuse.

use chrono::{NaiveDate, NaiveTime, Timelike};

/// `ms` (since the Unix epoch) as the minute a human reads in a question:
/// `2026-12-03 14:24 UTC`.
pub(crate) fn minute(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_default()
}

/// `ms` (since the Unix epoch) as RFC 3339 in UTC, to the second: `2026-12-03T14:24:00Z`.
/// For the stores' records, so only with a store.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn utc(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_default()
}

/// A length of time as a human reads it in a question: `10 minutes`, `1 hour`, `90 seconds`.
pub(crate) fn span(length: std::time::Duration) -> String {
    let secs = length.as_secs();
    let (n, unit) = match secs {
        s if s >= 3600 && s % 3600 == 0 => (s / 3600, "hour"),
        s if s >= 60 && s % 60 == 0 => (s / 60, "minute"),
        s => (s, "second"),
    };
    if n == 1 {
        format!("1 {unit}")
    } else {
        format!("{n} {unit}s")
    }
}

/// `YYYY-MM-DD`, a real calendar day.
pub(crate) fn is_full_date(text: &str) -> bool {
    full_date(text.as_bytes()).is_some()
}

/// `full-date "T" partial-time time-offset`: `HH:MM:SS[.frac](Z|±HH:MM)`.
pub(crate) fn is_date_time(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() < 20 || !matches!(bytes[10], b'T' | b't') {
        return false;
    }
    let (Some(_), Some((time, leap)), Some(offset_minutes)) = (
        full_date(&bytes[..10]),
        partial_time(&bytes[11..19]),
        fraction_and_offset(&bytes[19..]),
    ) else {
        return false;
    };
    // A leap second is 23:59:60 in UTC: the local time minus its offset.
    !leap || {
        let utc = i64::from(time.num_seconds_from_midnight() / 60) - offset_minutes;
        utc.rem_euclid(24 * 60) == 23 * 60 + 59
    }
}

fn digits(bytes: &[u8]) -> Option<u32> {
    bytes.iter().try_fold(0u32, |n, b| {
        b.is_ascii_digit().then(|| n * 10 + u32::from(b - b'0'))
    })
}

fn full_date(bytes: &[u8]) -> Option<NaiveDate> {
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return None;
    }
    let year = i32::try_from(digits(&bytes[..4])?).ok()?;
    NaiveDate::from_ymd_opt(year, digits(&bytes[5..7])?, digits(&bytes[8..10])?)
}

/// `HH:MM:SS`, with whether the second is a leap second (60, read as 59 here).
fn partial_time(bytes: &[u8]) -> Option<(NaiveTime, bool)> {
    if bytes[2] != b':' || bytes[5] != b':' {
        return None;
    }
    let second = digits(&bytes[6..8])?;
    let leap = second == 60;
    let time = NaiveTime::from_hms_opt(
        digits(&bytes[..2])?,
        digits(&bytes[3..5])?,
        if leap { 59 } else { second },
    )?;
    Some((time, leap))
}

/// `[.1*DIGIT](Z|±HH:MM)`, giving the offset east of UTC in minutes.
fn fraction_and_offset(mut bytes: &[u8]) -> Option<i64> {
    if let Some(rest) = bytes.strip_prefix(b".") {
        let n = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        bytes = &rest[n..];
    }
    match bytes {
        [b'Z' | b'z'] => Some(0),
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let (hours, minutes) = (digits(&[*h1, *h2])?, digits(&[*m1, *m2])?);
            if hours > 23 || minutes > 59 {
                return None;
            }
            let east = i64::from(hours * 60 + minutes);
            Some(if *sign == b'-' { -east } else { east })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_dates() {
        for ok in ["2024-01-05", "2020-02-29", "0000-01-01", "9999-12-31"] {
            assert!(is_full_date(ok), "{ok}");
        }
        for bad in [
            "2024-1-5",
            "+2024-01-05",
            "2024-01-5",
            "24-01-05",
            "02024-01-05",
            "2021-02-29",
            "2024-13-01",
            "2024-00-10",
            "2024-04-31",
            "2024/01/05",
            "2024-01-05 ",
            " 2024-01-05",
            "2024-01-05T00:00:00Z",
            "2024-0١-05",
            "",
        ] {
            assert!(!is_full_date(bad), "{bad:?}");
        }
    }

    #[test]
    fn date_times() {
        for ok in [
            "1985-04-12T23:20:50.52Z",
            "1996-12-19T16:39:57-08:00",
            "1963-06-19t08:30:06.283185z",
            "1990-12-31T23:59:60Z",
            "1990-12-31T15:59:60-08:00",
            "1998-12-31T23:59:60.123+00:00",
            "2024-01-05T00:00:00+23:59",
        ] {
            assert!(is_date_time(ok), "{ok}");
        }
        for bad in [
            "1985-04-12 23:20:50Z",
            "1985-04-12T23:20:50",
            "1985-04-12T23:20Z",
            "1985-04-12T23:20:50.Z",
            "1985-04-12T23:20:50+0800",
            "1985-04-12T23:20:50+08",
            "1985-04-12T24:00:00Z",
            "1985-04-12T23:60:00Z",
            "1998-12-31T23:59:61Z",
            "1998-12-31T23:58:60Z",
            "1998-12-31T22:59:60Z",
            "1990-12-31T15:59:60+08:00",
            "1985-04-12T23:20:50+24:00",
            "1985-04-12T23:20:50+08:60",
            "2024-1-05T00:00:00Z",
            "+2024-01-05T00:00:00Z",
            "2013-350T01:01:01Z",
            "1985-04-12T23:20:5٠Z",
            "1985-04-12T23:20:50ZZ",
        ] {
            assert!(!is_date_time(bad), "{bad:?}");
        }
    }
}
