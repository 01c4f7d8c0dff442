//! Why a decision posted on the page was not taken: the sentence the page shows, the HTTP
//! status it answers with, and the reason the audit log records.

/// Why a posted decision was not taken. Each says what happened and what to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    UnknownLink,
    BadCsrf,
    LinkUsed,
    Expired,
    AlreadyDecided,
    RequesterCannotApprove,
    AlreadyApprovedBy(String),
    TypedMismatch(String),
    SecretMissing,
    /// Approvers must sign in with the deployment's identity provider, and nobody has.
    SignInRequired,
    /// Someone signed in who is not the person this link is for.
    NotYourLink {
        link_for: String,
    },
    /// The store holding approvals could not be reached; nothing was decided.
    Unavailable,
}

impl Refusal {
    /// The HTTP status the page answers with.
    pub fn status(&self) -> u16 {
        match self {
            Refusal::UnknownLink => 404,
            Refusal::SignInRequired => 401,
            Refusal::BadCsrf | Refusal::RequesterCannotApprove | Refusal::NotYourLink { .. } => 403,
            Refusal::LinkUsed | Refusal::AlreadyDecided | Refusal::AlreadyApprovedBy(_) => 409,
            Refusal::Expired => 410,
            Refusal::TypedMismatch(_) | Refusal::SecretMissing => 422,
            Refusal::Unavailable => 503,
        }
    }

    /// The sentence the page shows.
    pub fn message(&self) -> String {
        match self {
            Refusal::UnknownLink => "This approval link is not valid: it was never issued, or its approval ended long ago. Ask for the action again from the client.".into(),
            Refusal::BadCsrf => "This decision did not come from the approval page itself, so it was not taken. Open your approval link and decide there.".into(),
            Refusal::LinkUsed => "This link was already used to decide. Each link decides once; the page shows where the approval stands.".into(),
            Refusal::Expired => "This approval expired; nothing was changed. Ask for the action again from the client.".into(),
            Refusal::AlreadyDecided => "This approval is already decided; your decision was not needed.".into(),
            Refusal::RequesterCannotApprove => "You asked for this action, so you cannot approve it: two other people must. You can withdraw the request.".into(),
            Refusal::AlreadyApprovedBy(user) => format!("{user} already approved this; a second approval must come from someone else."),
            Refusal::TypedMismatch(reason) => format!("Not approved: {reason}. Type it again."),
            Refusal::SecretMissing => "Not approved: this approval completes the request, and the tool needs the secret asked for below. Enter it and approve again.".into(),
            Refusal::SignInRequired => "Nothing was decided: approvers must sign in first, so that a link alone proves nothing. Sign in below with your access token, then decide.".into(),
            Refusal::NotYourLink { link_for } => format!("Nothing was decided: this link is for {link_for}, and you signed in as someone else. Only {link_for} can decide through it."),
            Refusal::Unavailable => "Nothing was decided: the server cannot reach the database that holds approvals right now. Reload the page in a moment and decide again.".into(),
        }
    }
}

/// A refusal as the log spells it.
pub(super) fn code(refusal: &Refusal) -> &'static str {
    match refusal {
        Refusal::UnknownLink => "unknown_link",
        Refusal::BadCsrf => "bad_csrf",
        Refusal::LinkUsed => "link_used",
        Refusal::Expired => "expired",
        Refusal::AlreadyDecided => "already_decided",
        Refusal::RequesterCannotApprove => "requester_cannot_approve",
        Refusal::AlreadyApprovedBy(_) => "already_approved_by_them",
        Refusal::TypedMismatch(_) => "typed_mismatch",
        Refusal::SecretMissing => "secret_missing",
        Refusal::SignInRequired => "sign_in_required",
        Refusal::NotYourLink { .. } => "not_your_link",
        Refusal::Unavailable => "unavailable",
    }
}
