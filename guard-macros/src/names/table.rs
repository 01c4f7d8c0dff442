//! The table of refused names: which class each term belongs to and where in a name it
//! must sit. How a name is read into words and matched against the table is in the parent
//! module.

/// Why guard refuses a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// The model would be vouching for the human's consent (`confirmed`, `force`, `yes`):
    /// a value the model fills in proves nothing. Refused in tool arguments.
    Consent,
    /// The model would be choosing who is acting (`user_id`, `tenant`, `owner`): identity
    /// comes from trusted context. Refused in tool arguments.
    Identity,
    /// The human would be typing a secret into the client (`password`, `api_key`, `ssn`):
    /// the MCP spec forbids form-mode elicitation for sensitive data. Refused in forms.
    Secret,
}

/// Where a term must sit among a name's words.
#[derive(Clone, Copy, Debug)]
pub enum Place {
    /// The whole name is the term: `owner`, but not `order_owner_hint`.
    Whole,
    /// The term leads or ends the name: `confirm_delete`, `user_confirmed`.
    Edge,
    /// The term ends the name: `human_approval`, but not `approval_level`.
    Last,
    /// The term's words appear together anywhere: `target_user_id`, `UserIDs`.
    Anywhere,
    /// Anywhere, and also as the end of a longer word: `dbPassword`, `githubtoken`.
    Ending,
    /// The term's words directly followed by one of these: `skip_prompt`, `noPrompt`,
    /// `two_factor_code`.
    Before(&'static [&'static str]),
}

/// One row of the table: a class, where its terms sit, and the terms, written in snake case.
pub struct Row {
    pub class: Class,
    pub place: Place,
    pub terms: &'static [&'static str],
}

/// Words that, placed before [`STOPPED_CHECKS`], switch a safety check off.
const SWITCH_OFF: &[&str] = &[
    "skip", "no", "not", "non", "bypass", "without", "suppress", "disable", "ignore", "override",
    "dont",
];
/// Checks a model must not be able to switch off.
const STOPPED_CHECKS: &[&str] = &[
    "prompt",
    "confirm",
    "confirmation",
    "approval",
    "check",
    "safety",
    "safeguard",
    "guard",
    "review",
    "verify",
    "verification",
    "interactive",
    "ask",
    "elicitation",
    "permission",
    "warning",
    "human",
];

/// The words that make a preceding word a secret code: `sms_code`, `login_codes`.
const CODE: &[&str] = &["code"];
/// The words that make a preceding word a secret key: `gpg_key`, `privkey`.
const KEY: &[&str] = &["key"];
/// The words that make a preceding word a card number: `cc_number`, `card_no`.
const NUMBER: &[&str] = &["number", "num", "no"];

/// Every name guard refuses. README.md's "Names guard refuses" section documents it.
///
/// Three borderline names are refused on purpose: `username_hint` (a username is an identity
/// whatever follows it), `force_field` (`force` leading a name is the classic switch that
/// skips a confirmation) and `password_hint` (a hint narrows the password down, and people
/// type the password itself into it).
pub const TABLE: &[Row] = &[
    // Consent: the model claiming the human said yes.
    Row {
        class: Class::Consent,
        place: Place::Edge,
        terms: &[
            "confirm",
            "confirmed",
            "approve",
            "approved",
            "consent",
            "consented",
            "authorize",
            "authorized",
            "authorise",
            "authorised",
            "acknowledge",
            "acknowledged",
            "agree",
            "agreed",
            "accepted",
            "force",
            "forced",
            "yes",
        ],
    },
    Row {
        class: Class::Consent,
        place: Place::Last,
        terms: &[
            "confirmation",
            "approval",
            "authorization",
            "authorisation",
            "acknowledgement",
            "acknowledgment",
        ],
    },
    Row {
        class: Class::Consent,
        place: Place::Anywhere,
        terms: &[
            "assume_yes",
            "auto_approve",
            "auto_confirm",
            "auto_accept",
            "pre_approved",
            "pre_confirmed",
            "pre_authorized",
            "yolo",
        ],
    },
    Row {
        class: Class::Consent,
        place: Place::Before(STOPPED_CHECKS),
        terms: SWITCH_OFF,
    },
    // Identity: the model choosing who is acting.
    Row {
        class: Class::Identity,
        place: Place::Whole,
        terms: &[
            "user",
            "uid",
            "owner",
            "org",
            "organization",
            "organisation",
            "actor",
            "principal",
            "caller",
            "requester",
            "role",
            "scope",
            "permission",
            "is_admin",
            "admin",
            "as_admin",
            "sudo",
            "email",
            "email_address",
            "login",
            "identity",
            "sub",
            "whoami",
        ],
    },
    Row {
        class: Class::Identity,
        place: Place::Anywhere,
        terms: &[
            "tenant",
            "account_id",
            "org_id",
            "organization_id",
            "organisation_id",
            "owner_id",
            "actor_id",
            "caller_id",
            "requester_id",
            "principal_id",
            "subject_id",
            "user_name",
            "user_email",
            "caller_email",
            "owner_email",
            "requested_by",
            "on_behalf_of",
            "as_user",
            "run_as",
            "acting_as",
            "impersonate",
        ],
    },
    Row {
        class: Class::Identity,
        place: Place::Ending,
        terms: &["user_id", "tenant_id"],
    },
    // Secrets: what a human must never type into a form-mode elicitation.
    Row {
        class: Class::Secret,
        place: Place::Anywhere,
        terms: &[
            "pw",
            "pwd",
            "pat",
            "jwt",
            "pin",
            "passkey",
            "otp",
            "totp",
            "hotp",
            "one_time_password",
            "cvv",
            "cvc",
            "ssn",
            "social_security_number",
            "credit_card",
            "seed_phrase",
            "recovery_phrase",
            "mnemonic",
            "bearer",
        ],
    },
    // A code the human was sent or shown to prove who they are: `sms_code`, `twoFactorCode`.
    Row {
        class: Class::Secret,
        place: Place::Before(CODE),
        terms: &[
            "one_time",
            "mfa",
            // `2fa`: digits are dropped, so `2fa_code` reads `fa_code`.
            "fa",
            "tfa",
            "two_factor",
            "second_factor",
            "verification",
            "security",
            "recovery",
            "backup",
            "oauth",
            "auth",
            "authorization",
            "sms",
            "login",
            "magic",
        ],
    },
    // A key that unlocks something by itself: `gpg_key`, `PRIV_KEY`, `licenseKey`.
    Row {
        class: Class::Secret,
        place: Place::Before(KEY),
        terms: &[
            "priv",
            "access",
            "signing",
            "session",
            "encryption",
            "decryption",
            "master",
            "ssh",
            "gpg",
            "pgp",
            "license",
            "licence",
        ],
    },
    // The number on a payment card: `cc_number`, `cardNo`.
    Row {
        class: Class::Secret,
        place: Place::Before(NUMBER),
        terms: &["card", "cc"],
    },
    // A cookie that carries a session: `session_cookie`, `authCookie`, `cookie`.
    Row {
        class: Class::Secret,
        place: Place::Last,
        terms: &["cookie"],
    },
    Row {
        class: Class::Secret,
        place: Place::Ending,
        terms: &[
            "password",
            "passwd",
            "passphrase",
            "passcode",
            "secret",
            "token",
            "credential",
            "api_key",
            "private_key",
        ],
    },
];
