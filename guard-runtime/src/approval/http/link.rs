//! One link's page: `GET /approval/{link}` shows the approval as it stands and what the link
//! may still do; `POST` decides through it or, where approvers sign in, signs in as the
//! link's person. The inbox shows the same page for an approver's own link.

use std::{fmt::Write, sync::Arc};

use axum::{
    Form,
    extract::{Path, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::Response,
};

use super::{
    Posted,
    html::{esc, not_understood, page, refused, shell, utc},
    same_origin, signed_in,
};
use crate::{
    approval::{
        Shared,
        refusal::Refusal,
        state::{Role, Status},
        view::View,
    },
    person::Person,
};

pub(super) async fn show(
    State(shared): State<Arc<Shared>>,
    Path(link): Path<String>,
    headers: HeaderMap,
) -> Response {
    match shared.desk.view(&link, true).await {
        Ok(Some(view)) => {
            let signed_in = signed_in(&shared, &headers);
            page(StatusCode::OK, &render(&view, None, signed_in.as_ref()))
        }
        Ok(None) => refused(&Refusal::UnknownLink),
        Err(refusal) => refused(&refusal),
    }
}

pub(super) async fn decide(
    State(shared): State<Arc<Shared>>,
    Path(link): Path<String>,
    headers: HeaderMap,
    Form(posted): Form<Posted>,
) -> Response {
    if !same_origin(&shared.origin, &headers) {
        tracing::warn!(target: "guard::audit", outcome = "approval_cross_site", "a decision was posted from another site and refused");
        return refused(&Refusal::BadCsrf);
    }
    if posted.decision == "sign_in" && shared.sign_in.is_some() {
        return sign_in(&shared, &link, &posted.csrf, posted.token.as_deref()).await;
    }
    let (Some(decision), csrf) = posted.decision() else {
        return not_understood();
    };
    let signed_in = signed_in(&shared, &headers);
    let taken = shared
        .desk
        .decide(&link, &csrf, decision, signed_in.as_ref())
        .await;
    let view = shared.desk.view(&link, false).await.ok().flatten();
    after_decision(taken, view, signed_in.as_ref())
}

/// The page after a decision was posted: where the approval stands, and why the decision
/// was refused if it was.
pub(super) fn after_decision(
    taken: Result<Status, Refusal>,
    view: Option<View>,
    signed_in: Option<&Person>,
) -> Response {
    match (taken, view) {
        (Ok(_), Some(view)) => page(StatusCode::OK, &render(&view, None, signed_in)),
        (Err(refusal), Some(view)) if refusal != Refusal::BadCsrf => page(
            StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::FORBIDDEN),
            &render(&view, Some(refusal.message()), signed_in),
        ),
        (Err(refusal), _) => refused(&refusal),
        (Ok(_), None) => refused(&Refusal::UnknownLink),
    }
}

/// Verifies the pasted token, and starts a session if it names the link's person.
async fn sign_in(shared: &Shared, link: &str, csrf: &str, token: Option<&str>) -> Response {
    let Some(sessions) = &shared.sign_in else {
        return refused(&Refusal::UnknownLink);
    };
    let view = match shared.desk.view(link, false).await {
        Ok(Some(view)) => view,
        Ok(None) => return refused(&Refusal::UnknownLink),
        Err(refusal) => return refused(&refusal),
    };
    let link_for = match shared.desk.person_of(link, csrf).await {
        Ok(person) => person,
        Err(refusal) => return refused(&refusal),
    };
    let signed = match sessions.sign_in(token.unwrap_or_default()) {
        Ok(signed) => signed,
        Err(problem) => {
            let problem = format!("Not signed in: {problem}");
            return page(
                StatusCode::UNAUTHORIZED,
                &render(&view, Some(problem), None),
            );
        }
    };
    let (person, cookie) = signed;
    if let Err(refusal) = shared.desk.may_sign_in(link, &link_for, &person).await {
        tracing::warn!(target: "guard::audit", outcome = "approval_sign_in_refused", signed_in = person.user(), link_for = link_for.user(), "someone signed in through a link that is not theirs");
        return page(
            StatusCode::FORBIDDEN,
            &render(&view, Some(refusal.message()), Some(&person)),
        );
    }
    let mut response = page(StatusCode::OK, &render(&view, None, Some(&person)));
    if let Ok(cookie) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

/// The page behind one link. `refusal` is why the last post was not taken; `signed_in` the
/// person at the browser, where approvers sign in.
pub(super) fn render(view: &View, refusal: Option<String>, signed_in: Option<&Person>) -> String {
    let mut b = String::new();
    let _ = write!(b, "<h1>Approve <code>{}</code>?</h1>", esc(&view.tool));
    if let Some(message) = &view.message {
        let _ = write!(b, "<p class=\"message\">{}</p>", esc(message));
    }
    let _ = write!(
        b,
        "<section class=\"effect\"><h2>What will happen</h2><p id=\"summary\">{}</p><dl><dt>Target</dt><dd id=\"target\">{}</dd><dt>Requested by</dt><dd id=\"requester\">{} ({})</dd><dt>Expires</dt><dd id=\"expires\">{}</dd></dl></section>",
        esc(&view.summary),
        esc(&view.target),
        esc(view.requester.user()),
        esc(view.requester.tenant()),
        utc(view.expires_at),
    );
    let _ = write!(
        b,
        "<section class=\"approvals\"><h2>Approvals: {} of {}</h2><ul id=\"approvals\">",
        view.given.len(),
        view.required
    );
    if view.given.is_empty() {
        b.push_str("<li class=\"none\">none yet</li>");
    }
    for given in &view.given {
        let _ = write!(
            b,
            "<li>{} <span class=\"at\">at {}</span></li>",
            esc(given.who.user()),
            utc(given.at)
        );
    }
    b.push_str("</ul></section>");
    let you = match &view.role {
        Role::Requester => format!(
            "You are {}, who asked for this.",
            esc(view.requester.user())
        ),
        Role::Approver(who) => format!("You are approving as {}.", esc(who.user())),
    };
    let _ = write!(b, "<p id=\"you\">{you}</p>");
    let status = match &view.status {
        Status::Pending => None,
        Status::Approved => Some((
            "approved",
            "Approved: the action goes ahead as described above.".to_owned(),
        )),
        Status::Rejected { by } => Some((
            "rejected",
            format!("Rejected by {}: nothing will be changed.", esc(by)),
        )),
        Status::Expired => Some(("expired", "Expired: nothing will be changed.".to_owned())),
        Status::Withdrawn => Some((
            "withdrawn",
            "Withdrawn by the client: nothing will be changed.".to_owned(),
        )),
    };
    if let Some((class, text)) = status {
        let _ = write!(b, "<p id=\"status\" class=\"status {class}\">{text}</p>");
    } else {
        b.push_str("<p id=\"status\" class=\"status pending\">Waiting for approval.</p>");
    }
    if let Some(refusal) = refusal {
        let _ = write!(
            b,
            "<p id=\"refusal\" class=\"refused\">{}</p>",
            esc(&refusal)
        );
    }
    let open = view.can_approve() || view.can_reject();
    if open && view.sign_in {
        let theirs = signed_in.is_some_and(|person| person.is(view.person()));
        match signed_in {
            Some(person) if theirs => {
                let _ = write!(
                    b,
                    "<p id=\"signed-in\">Signed in as {}.</p>",
                    esc(person.user())
                );
            }
            Some(person) => {
                let _ = write!(
                    b,
                    "<p id=\"signed-in\" class=\"refused\">You are signed in as {}; this link is for {}, and only they can decide through it.</p>",
                    esc(person.user()),
                    esc(view.person().user())
                );
            }
            None => {}
        }
        if !theirs {
            let _ = write!(
                b,
                "<form method=\"post\" id=\"sign-in\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><label for=\"token\">Sign in as {} to decide: your access token</label><input id=\"token\" name=\"token\" type=\"password\" autocomplete=\"off\"><button id=\"sign-in-button\" name=\"decision\" value=\"sign_in\">Sign in</button></form>",
                esc(&view.csrf),
                esc(view.person().user())
            );
            return shell(&format!("Approve {}", view.tool), &b);
        }
    }
    if open {
        b.push_str("<form method=\"post\" id=\"decide\">");
        let _ = write!(
            b,
            "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
            esc(&view.csrf)
        );
        if view.can_approve() {
            if let Some(expected) = &view.expected {
                let _ = write!(
                    b,
                    "<label for=\"typed\">To approve, type <code>{}</code> exactly</label><input id=\"typed\" name=\"typed\" autocomplete=\"off\" spellcheck=\"false\">",
                    esc(expected)
                );
            }
            if let Some(label) = &view.secret {
                let _ = write!(
                    b,
                    "<label for=\"secret\">{} (goes to the tool only, never to the assistant or a log)</label><input id=\"secret\" name=\"secret\" type=\"password\" autocomplete=\"off\">",
                    esc(label)
                );
            }
            b.push_str(
                "<button id=\"approve\" name=\"decision\" value=\"approve\">Approve</button>",
            );
        }
        let reject = if matches!(view.role, Role::Requester) && view.required > 1 {
            "Withdraw the request"
        } else {
            "Reject"
        };
        let _ = write!(
            b,
            "<button id=\"reject\" name=\"decision\" value=\"reject\" class=\"reject\">{reject}</button></form>"
        );
    } else if view.used && view.status == Status::Pending {
        b.push_str("<p id=\"done\">Your decision is recorded. This page shows where the approval stands when reloaded.</p>");
    }
    shell(&format!("Approve {}", view.tool), &b)
}
