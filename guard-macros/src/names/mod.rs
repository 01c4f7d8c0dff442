//! The names guard refuses, in one table: consent and identity in a guarded tool's
//! model-visible arguments (`#[derive(ToolArgs)]`), secrets in an elicitation form
//! (`#[derive(Form)]`).
//!
//! A name is first split into lowercase words the way people spell identifiers: at `_`, `-`
//! and any other punctuation, at digits (which are dropped), and at case changes (`userID`,
//! `UserId`, `HTTPToken` → `http token`). So `user_id`, `userId`, `UserID`, `user-id`,
//! `USER_ID` are one name. A word that is wholly made of the table's own words is split into
//! them (`userid` → `user id`, `noprompt` → `no prompt`, `accesstoken` → `access token`), and
//! a trailing `s` after a table word is dropped (`user_ids`, `apiKeys`). Ordinary words are
//! never split, because they are not wholly made of table words: `spinner` stays `spinner`
//! (not `pin`), `tokenizer` stays `tokenizer`, `approver` stays `approver`.
//!
//! Each row of [`TABLE`] says where in the name its terms must sit ([`Place`]), so a short
//! term like `pin` or `force` only matches as a whole word, and a distinctive one like
//! `password` also matches at the end of a longer word (`dbpassword`, `githubToken`).

use std::collections::BTreeSet;
use std::sync::OnceLock;

mod table;

pub use table::{Class, Place, TABLE};

/// The words the table is written in; a word made wholly of them is split into them.
fn vocabulary() -> &'static BTreeSet<String> {
    static VOCABULARY: OnceLock<BTreeSet<String>> = OnceLock::new();
    VOCABULARY.get_or_init(|| {
        let mut set = BTreeSet::new();
        for row in TABLE {
            let extra = match row.place {
                Place::Before(next) => next,
                _ => &[],
            };
            for term in row.terms.iter().chain(extra) {
                set.extend(split(term).into_iter().filter(|w| w.len() > 1));
            }
        }
        set
    })
}

/// Splits at punctuation, digits and case changes, and lowercases: `HTTPToken2` → `http`,
/// `token`. An upper-case run keeps a plural `s` (`IDs` → `ids`).
fn split(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut words = Vec::new();
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphabetic() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            continue;
        }
        if let Some(&prev) = i.checked_sub(1).map(|p| &chars[p])
            && prev.is_alphabetic()
        {
            if c.is_uppercase() && prev.is_lowercase() {
                words.push(std::mem::take(&mut current));
            } else if c.is_lowercase()
                && prev.is_uppercase()
                && current.chars().count() >= 2
                && !plural_of_capitals(c, chars.get(i + 1))
            {
                // `HTTPToken`: the last capital starts the next word.
                let last = current.pop().expect("two or more characters");
                words.push(std::mem::take(&mut current));
                current.push(last);
            }
        }
        current.push(c);
    }
    if !current.is_empty() {
        words.push(current);
    }
    words.iter().map(|w| w.to_lowercase()).collect()
}

/// `IDs`, `URLs`: a lone `s` after capitals that ends the word is a plural, not a word start.
fn plural_of_capitals(c: char, next: Option<&char>) -> bool {
    c == 's' && next.is_none_or(|n| !n.is_lowercase())
}

/// A table word, or a table word with a plural `s`, as the table word.
fn table_word(piece: &str) -> Option<&str> {
    let vocabulary = vocabulary();
    if vocabulary.contains(piece) {
        return Some(piece);
    }
    let stem = piece.strip_suffix('s')?;
    vocabulary.contains(stem).then_some(stem)
}

/// `userid` → `user`, `id`: the fewest table words that make up the whole word, or the word
/// itself when no such split exists.
fn segment(word: &str) -> Vec<String> {
    if let Some(w) = table_word(word) {
        return vec![w.to_owned()];
    }
    if !word.is_ascii() {
        return vec![word.to_owned()];
    }
    // best[i]: the fewest pieces covering word[..i], and where the last piece starts.
    let n = word.len();
    let mut best: Vec<Option<(usize, usize)>> = vec![None; n + 1];
    best[0] = Some((0, 0));
    for end in 1..=n {
        for start in 0..end {
            let Some((count, _)) = best[start] else {
                continue;
            };
            if table_word(&word[start..end]).is_some()
                && best[end].is_none_or(|(c, _)| count + 1 < c)
            {
                best[end] = Some((count + 1, start));
            }
        }
    }
    if best[n].is_none() {
        return vec![word.to_owned()];
    }
    let mut pieces = Vec::new();
    let mut end = n;
    while end > 0 {
        let (_, start) = best[end].expect("a segmented prefix");
        pieces.push(
            table_word(&word[start..end])
                .expect("a table word")
                .to_owned(),
        );
        end = start;
    }
    pieces.reverse();
    pieces
}

/// The words guard reads in a name: `userID` → `user`, `id`. A raw identifier's `r#` is not
/// part of the name.
pub fn words(name: &str) -> Vec<String> {
    let name = name.strip_prefix("r#").unwrap_or(name);
    split(name).iter().flat_map(|w| segment(w)).collect()
}

/// The name as guard reads it, in snake case: `userID` → `user_id`.
pub fn spelled(name: &str) -> String {
    words(name).join("_")
}

/// The first character of `name` that is not ASCII, if any. Look-alike letters (a Cyrillic
/// `а` in `pаssword`) and invisible characters would hide a name from the table.
pub fn non_ascii(name: &str) -> Option<char> {
    name.chars().find(|c| !c.is_ascii())
}

fn joined(words: &[String]) -> String {
    words.concat()
}

fn term_matches(words: &[String], term: &str, place: Place) -> bool {
    let term = joined(&split(term));
    let n = words.len();
    let run = |i: usize, j: usize| joined(&words[i..=j]);
    match place {
        Place::Whole => n > 0 && run(0, n - 1) == term,
        Place::Edge => (0..n).any(|j| run(0, j) == term) || (0..n).any(|i| run(i, n - 1) == term),
        Place::Last => (0..n).any(|i| run(i, n - 1) == term),
        Place::Anywhere => (0..n).any(|i| (i..n).any(|j| run(i, j) == term)),
        Place::Ending => (0..n).any(|i| (i..n).any(|j| run(i, j).ends_with(&term))),
        Place::Before(next) => (0..n).any(|i| {
            (i + 1..n).any(|k| run(i, k - 1) == term && next.contains(&words[k].as_str()))
        }),
    }
}

/// The term of `class` that `name` matches, if any.
pub fn find(name: &str, class: Class) -> Option<&'static str> {
    let words = words(name);
    TABLE
        .iter()
        .filter(|row| row.class == class)
        .find_map(|row| {
            row.terms
                .iter()
                .find(|term| term_matches(&words, term, row.place))
                .copied()
        })
}

/// True when a form field name says it holds a secret.
pub fn is_secret(name: &str) -> bool {
    find(name, Class::Secret).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ordinary names that resemble table words and must stay allowed everywhere.
    const NEAR_MISSES: &[&str] = &[
        "reason",
        "approver",
        "approval_level",
        "typed_name",
        "tokenizer_name",
        "spinner",
        "service",
        "order_no",
        "user_agent_hint",
        "userAgent",
        "path",
        "table",
        "forecast",
        "passage",
        "pinned",
        "pinpoint_count",
        "confirmation_message_id",
        "idempotency_key",
        "primary_key",
        "public_key",
        "sort_key",
        "key",
        "page_size",
        "secretary_name",
        "lieutenant",
        "maintenance_window",
        "enforce_quota",
        "workforce",
        "yesterday",
        "eyes",
        "notice",
        "nothing",
        "uuid",
        "order_uid",
        "valid",
        "fluid_level",
        "guid",
        "subject",
        "recipient_email",
        "organization_name",
        "owners_manual_page",
        "ownership",
        "role_model",
        "runtime",
        "unconfirmed_only",
        "description",
        "title",
        "limit",
        "code",
        "pass",
        "word_count",
        "keyboard_layout",
        "ask_price",
        "zip_code",
        "promo_code",
        "country_code",
        "author",
        "notes",
        "keys_per_page",
        "pattern",
        "patch",
        "compat",
        "spatial",
        "output",
        "dispatch",
        "cookie_banner",
        "sms_opt_in",
        "two_factor_enabled",
        "session_timeout",
        "license_type",
        "card_holder",
        "phone_number",
        "order_number",
        "error_code",
        "postcode",
        "keynote",
    ];

    #[test]
    fn words_split_at_case_digits_and_punctuation() {
        let cases: &[(&str, &[&str])] = &[
            ("user_id", &["user", "id"]),
            ("userId", &["user", "id"]),
            ("userID", &["user", "id"]),
            ("UserId", &["user", "id"]),
            ("UserID", &["user", "id"]),
            ("USER_ID", &["user", "id"]),
            ("user-id", &["user", "id"]),
            ("USER-ID", &["user", "id"]),
            ("userid", &["user", "id"]),
            ("USERID", &["user", "id"]),
            ("user id", &["user", "id"]),
            ("user.id", &["user", "id"]),
            ("user2id", &["user", "id"]),
            ("__user__id__", &["user", "id"]),
            ("userIDs", &["user", "id"]),
            ("user_ids", &["user", "id"]),
            ("HTTPToken", &["http", "token"]),
            ("APIKey", &["api", "key"]),
            ("apikeys", &["api", "key"]),
            ("accesstoken", &["access", "token"]),
            ("noprompt", &["no", "prompt"]),
            ("tenantid", &["tenant", "id"]),
            ("r#type", &["type"]),
            ("cvv2", &["cvv"]),
            ("spinner", &["spinner"]),
            ("tokenizer", &["tokenizer"]),
            ("approver", &["approver"]),
            ("password", &["password"]),
            ("privkey", &["priv", "key"]),
            ("PRIV_KEY", &["priv", "key"]),
            ("twoFactorCode", &["two", "factor", "code"]),
            ("pattern", &["pattern"]),
            ("compat", &["compat"]),
        ];
        for (name, expected) in cases {
            assert_eq!(words(name), *expected, "{name}");
        }
        assert_eq!(spelled("userID"), "user_id");
        assert_eq!(spelled("order_no"), "order_no");
    }

    #[test]
    fn every_spelling_of_user_id_is_one_name() {
        for name in [
            "user_id",
            "userId",
            "userID",
            "UserId",
            "UserID",
            "USER_ID",
            "user-id",
            "USER-ID",
            "userid",
            "USERID",
            "user__id",
            "user_ids",
            "userIDs",
            "owner_user_id",
            "targetUserId",
            "myuserid",
            "owneruserid",
        ] {
            assert_eq!(find(name, Class::Identity), Some("user_id"), "{name}");
        }
    }

    #[test]
    fn identity_names_are_refused() {
        for name in [
            "user",
            "users",
            "USER",
            "userid",
            "uid",
            "UID",
            "email",
            "emailAddress",
            "owner",
            "owner_id",
            "ownerId",
            "tenant",
            "tenant_id",
            "tenantid",
            "TenantID",
            "tenant_name",
            "account_id",
            "accountId",
            "org",
            "org_id",
            "organization_id",
            "actor",
            "actor_id",
            "principal",
            "caller",
            "caller_id",
            "requester",
            "requested_by",
            "on_behalf_of",
            "onBehalfOf",
            "as_user",
            "run_as",
            "impersonate",
            "impersonate_user",
            "role",
            "roles",
            "scope",
            "scopes",
            "permissions",
            "is_admin",
            "isAdmin",
            "admin",
            "sudo",
            "username",
            "user_name",
            "userName",
            "username_hint",
            "user_email",
            "login",
            "subject_id",
            "sub",
        ] {
            assert!(find(name, Class::Identity).is_some(), "{name}");
        }
    }

    #[test]
    fn consent_flags_are_refused() {
        for name in [
            "confirm",
            "confirmed",
            "Confirmed",
            "CONFIRMED",
            "user_confirmed",
            "userConfirmed",
            "is_approved",
            "isApproved",
            "confirm_delete",
            "approved",
            "approve",
            "approved_by_user",
            "human_approval",
            "consent",
            "authorized",
            "acknowledged",
            "agreed",
            "force",
            "forced",
            "Force",
            "force_delete",
            "forceDelete",
            "force_field",
            "yes",
            "YES",
            "assume_yes",
            "assumeYes",
            "yes_to_all",
            "skip_prompt",
            "skipPrompt",
            "skip-prompt",
            "skipprompts",
            "no_prompt",
            "noPrompt",
            "noprompt",
            "NO_PROMPT",
            "no_confirm",
            "skip_confirmation",
            "skipConfirmations",
            "bypass_approval",
            "without_review",
            "non_interactive",
            "noninteractive",
            "nonInteractive",
            "dont_ask",
            "do_not_ask",
            "skip_checks",
            "dangerously_skip_permissions",
            "disable_safety",
            "auto_approve",
            "autoconfirm",
            "preapproved",
            "pre_authorized",
            "r#confirmed",
        ] {
            assert!(find(name, Class::Consent).is_some(), "{name}");
        }
    }

    #[test]
    fn secrets_are_refused() {
        for name in [
            "password",
            "Password",
            "db_password",
            "dbPassword",
            "dbpassword",
            "passwd",
            "pwd",
            "passphrase",
            "passcode",
            "passCode",
            "pass_code",
            "passkey",
            "secret",
            "client_secret",
            "clientSecret",
            "secrets",
            "secretKey",
            "secret_key",
            "token",
            "github_token",
            "githubToken",
            "githubtoken",
            "accessToken",
            "access_token",
            "accesstoken",
            "refresh_token",
            "HTTPToken",
            "auth_token",
            "bearer",
            "credential",
            "credentials",
            "api_key",
            "apiKey",
            "githubApiKey",
            "stripeapikey",
            "APIKey",
            "apikey",
            "api-key",
            "API_KEY",
            "api_keys",
            "private_key",
            "privateKey",
            "privatekey",
            "access_key",
            "signing_key",
            "ssh_key",
            "pin",
            "PIN",
            "pin_code",
            "pinCode",
            "otp",
            "totp",
            "TOTP",
            "totp_code",
            "one_time_password",
            "verification_code",
            "mfa_code",
            "cvv",
            "cvv2",
            "cvc",
            "ssn",
            "SSN",
            "social_security_number",
            "credit_card",
            "creditCard",
            "creditcard",
            "credit_card_number",
            "card_number",
            "cardNumber",
            "seed_phrase",
            "seedPhrase",
            "seedphrase",
            "recovery_phrase",
            "mnemonic",
            "jwt",
            "JWT",
            "user_jwt",
            "session_cookie",
            "sessionCookie",
            "SESSION_COOKIE",
            "auth_cookie",
            "cookie",
            "oauth_code",
            "oauthCode",
            "sms_code",
            "smsCode",
            "two_factor_code",
            "twoFactorCode",
            "TwoFactorCode",
            "2fa_code",
            "login_code",
            "loginCodes",
            "one_time_code",
            "privkey",
            "PRIV_KEY",
            "privKey",
            "gpg_key",
            "GPGKey",
            "pgp_key",
            "license_key",
            "licenseKey",
            "ssh_keys",
            "cc_number",
            "ccNumber",
            "cc_num",
            "card_no",
            "pw",
            "PW",
            "db_pw",
            "pat",
            "PAT",
            "github_pat",
            "password_hint",
        ] {
            assert!(is_secret(name), "{name}");
        }
    }

    #[test]
    fn titles_that_ask_for_a_secret_are_refused_and_plain_ones_pass() {
        for text in [
            "Your JWT",
            "The SMS code we sent you",
            "Two-factor code",
            "Paste your session cookie",
            "GPG key",
            "Card number",
            "GitHub PAT",
        ] {
            assert!(is_secret(text), "{text}");
        }
        for text in [
            "A glob pattern matched against the path",
            "The patch to apply",
            "Spatial index output",
            "Postal code",
        ] {
            assert!(!is_secret(text), "{text}");
        }
    }

    #[test]
    fn near_misses_stay_allowed() {
        for name in NEAR_MISSES {
            assert_eq!(find(name, Class::Consent), None, "consent: {name}");
            assert_eq!(find(name, Class::Identity), None, "identity: {name}");
            assert_eq!(find(name, Class::Secret), None, "secret: {name}");
        }
    }

    #[test]
    fn every_table_term_matches_itself_in_every_case_style() {
        for row in TABLE {
            for term in row.terms {
                let styles = [
                    term.to_string(),
                    term.to_uppercase(),
                    term.replace('_', "-"),
                    term.replace('_', ""),
                    camel(term),
                ];
                for name in styles {
                    let probe = match row.place {
                        Place::Before(next) => format!("{name}_{}", next[0]),
                        _ => name,
                    };
                    assert!(find(&probe, row.class).is_some(), "{probe}");
                }
            }
        }
    }

    fn camel(snake: &str) -> String {
        let mut out = String::new();
        let mut upper = false;
        for c in snake.chars() {
            if c == '_' {
                upper = true;
            } else if upper {
                out.extend(c.to_uppercase());
                upper = false;
            } else {
                out.push(c);
            }
        }
        out
    }

    #[test]
    fn non_ascii_is_found() {
        assert_eq!(non_ascii("password"), None);
        assert_eq!(non_ascii("p\u{0430}ssword"), Some('\u{0430}'));
        assert_eq!(non_ascii("user\u{200b}_id"), Some('\u{200b}'));
    }
}
