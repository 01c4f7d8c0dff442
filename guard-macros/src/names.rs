//! Field names that must not appear where guard checks them: secrets in forms, consent and
//! identity in model-visible arguments.

fn words(name: &str) -> Vec<String> {
    name.trim_start_matches("r#")
        .split('_')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

const SECRET_WORDS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "secret",
    "token",
    "credential",
    "credentials",
    "apikey",
    "otp",
    "cvv",
    "cvc",
    "pin",
];
const SECRET_PAIRS: &[&str] = &[
    "api_key",
    "private_key",
    "access_key",
    "secret_key",
    "signing_key",
    "session_key",
    "card_number",
];

/// True when a form field name says it holds a secret.
pub fn is_secret(name: &str) -> bool {
    let words = words(name);
    words.iter().any(|w| SECRET_WORDS.contains(&w.as_str()))
        || words
            .windows(2)
            .any(|pair| SECRET_PAIRS.contains(&pair.join("_").as_str()))
}

/// Flags that lead a name (`confirm_delete`, `approved_by_user`).
const CONSENT_LEADS: &[&str] = &[
    "confirm",
    "confirmed",
    "approve",
    "approved",
    "consent",
    "consented",
    "authorized",
    "authorised",
    "acknowledged",
    "agreed",
];
/// Flags that end a name (`user_confirmed`, `is_approved`, `human_confirmation`).
const CONSENT_TAILS: &[&str] = &[
    "confirm",
    "confirmed",
    "confirmation",
    "approve",
    "approved",
    "approval",
    "consent",
    "consented",
    "authorized",
    "authorised",
    "acknowledged",
    "agreed",
];

/// True when an argument name says the model is vouching for the human's consent.
pub fn is_consent_flag(name: &str) -> bool {
    let words = words(name);
    words
        .first()
        .is_some_and(|w| CONSENT_LEADS.contains(&w.as_str()))
        || words
            .last()
            .is_some_and(|w| CONSENT_TAILS.contains(&w.as_str()))
}

const IDENTITY_NAMES: &[&str] = &[
    "tenant",
    "tenant_id",
    "user",
    "user_id",
    "username",
    "user_name",
    "account_id",
    "org",
    "org_id",
    "organization_id",
    "owner_id",
    "actor",
    "actor_id",
    "principal",
    "caller",
    "caller_id",
    "requester",
    "requester_id",
    "requested_by",
    "on_behalf_of",
    "as_user",
    "impersonate",
    "role",
    "roles",
    "scope",
    "scopes",
    "permissions",
    "is_admin",
    "subject",
];

/// True when an argument name claims who the caller is.
pub fn is_identity(name: &str) -> bool {
    let joined = words(name).join("_");
    IDENTITY_NAMES.contains(&joined.as_str())
        || joined.ends_with("_user_id")
        || joined.ends_with("_tenant_id")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_found_by_word() {
        for name in [
            "password",
            "db_password",
            "api_key",
            "github_token",
            "private_key",
            "client_secret",
        ] {
            assert!(is_secret(name), "{name}");
        }
        for name in [
            "reason",
            "approver",
            "typed_name",
            "tokenizer_name",
            "spinner",
        ] {
            assert!(!is_secret(name), "{name}");
        }
    }

    #[test]
    fn consent_flags_are_first_or_last_word() {
        for name in [
            "confirm",
            "confirmed",
            "user_confirmed",
            "is_approved",
            "confirm_delete",
        ] {
            assert!(is_consent_flag(name), "{name}");
        }
        for name in ["approval_level", "path", "table", "confirmation_message_id"] {
            assert!(!is_consent_flag(name), "{name}");
        }
    }

    #[test]
    fn identity_fields_are_found() {
        for name in ["tenant_id", "user_id", "userId", "owner_user_id", "actor"] {
            let snake = name.replace("Id", "_id");
            assert!(is_identity(&snake), "{name}");
        }
        for name in ["order_no", "service", "user_agent_hint"] {
            assert!(!is_identity(name), "{name}");
        }
    }
}
