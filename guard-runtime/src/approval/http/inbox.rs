//! The inbox, where approvers sign in: `/approval/inbox` lists what waits for the signed-in
//! person and the grants they hold, opens the page of their own link on an approval, and
//! takes their decision through that link (or the revocation of a grant of theirs). The
//! person comes from the identity provider, never from a link.

use std::{fmt::Write, sync::Arc};

use axum::{
    Form,
    extract::{RawQuery, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::Response,
};

use super::{
    Posted,
    html::{esc, not_understood, page, refused, shell, utc},
    link::{after_decision, render},
    same_origin, signed_in,
};
use crate::{
    approval::{Shared, desk::LinkKey, refusal::Refusal, view::View},
    grant::{Grant, Revoked},
    person::Person,
};

/// `GET /approval/inbox`: what waits for the signed-in approver; with `?approval=ID`, the page
/// of their own link on that approval. Only where approvers sign in: the person comes from
/// the identity provider, never from a link.
pub(super) async fn inbox(
    State(shared): State<Arc<Shared>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    if shared.sign_in.is_none() {
        return no_inbox();
    }
    let Some(person) = signed_in(&shared, &headers) else {
        return page(StatusCode::UNAUTHORIZED, &inbox_sign_in(None));
    };
    match approval_asked(query.as_deref()) {
        None => list(&shared, &person).await,
        Some(id) => match theirs(&shared, &id, &person).await {
            Ok(key) => match shared.desk.view_key(&key, true).await {
                Ok(Some(view)) => page(StatusCode::OK, &render(&view, None, Some(&person))),
                Ok(None) => refused(&Refusal::UnknownLink),
                Err(refusal) => refused(&refusal),
            },
            Err(refusal) => refused(&refusal),
        },
    }
}

/// `POST /approval/inbox`: signs in (`decision=sign_in`), or decides on `?approval=ID` through
/// the signed-in person's own link, under the same rules and CSRF token as the link's page.
pub(super) async fn inbox_post(
    State(shared): State<Arc<Shared>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    Form(posted): Form<Posted>,
) -> Response {
    let Some(sessions) = &shared.sign_in else {
        return no_inbox();
    };
    if !same_origin(&shared.origin, &headers) {
        tracing::warn!(target: "guard::audit", outcome = "approval_cross_site", "an inbox form was posted from another site and refused");
        return refused(&Refusal::BadCsrf);
    }
    if posted.decision == "sign_in" {
        return match sessions.sign_in(posted.token.as_deref().unwrap_or_default()) {
            Ok((person, cookie)) => {
                let mut response = list(&shared, &person).await;
                if let Ok(cookie) = HeaderValue::from_str(&cookie) {
                    response.headers_mut().insert(header::SET_COOKIE, cookie);
                }
                response
            }
            Err(problem) => page(
                StatusCode::UNAUTHORIZED,
                &inbox_sign_in(Some(&format!("Not signed in: {problem}"))),
            ),
        };
    }
    let Some(person) = signed_in(&shared, &headers) else {
        return page(
            StatusCode::UNAUTHORIZED,
            &inbox_sign_in(Some(&Refusal::SignInRequired.message())),
        );
    };
    if posted.decision == "revoke_grant" {
        return revoke(&shared, &person, query.as_deref()).await;
    }
    let Some(id) = approval_asked(query.as_deref()) else {
        return refused(&Refusal::UnknownLink);
    };
    let key = match theirs(&shared, &id, &person).await {
        Ok(key) => key,
        Err(refusal) => return refused(&refusal),
    };
    let (Some(decision), csrf) = posted.decision() else {
        return not_understood();
    };
    let taken = shared
        .desk
        .decide_key(&key, &csrf, decision, Some(&person))
        .await;
    let view = shared.desk.view_key(&key, false).await.ok().flatten();
    after_decision(taken, view, Some(&person))
}

/// The approval id an inbox request names (`?approval=ID`).
fn approval_asked(query: Option<&str>) -> Option<String> {
    named(query, "approval")
}

/// The value of `name` in a request's query.
fn named(query: Option<&str>, name: &str) -> Option<String> {
    url::form_urlencoded::parse(query?.as_bytes())
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.into_owned())
}

/// `POST /approval/inbox?grant=ID` with `decision=revoke_grant`: the signed-in person
/// revokes their own grant (anyone else's is not found), and sees their inbox again.
async fn revoke(shared: &Shared, person: &Person, query: Option<&str>) -> Response {
    let Some(id) = named(query, "grant") else {
        return not_understood();
    };
    let said = match shared.desk.revoke_grant(person, &id).await {
        Ok(Revoked::Now(grant)) => format!(
            "Grant {} is revoked: it covers no call from now on. It had covered {} of {} calls.",
            grant.grant_id, grant.used, grant.calls
        ),
        Ok(Revoked::Already(grant)) => {
            format!(
                "Grant {} was already revoked; nothing changed.",
                grant.grant_id
            )
        }
        Ok(Revoked::NotFound) => "You hold no grant with that id; nothing changed.".to_owned(),
        Err(refusal) => return refused(&refusal),
    };
    listed(shared, person, Some(&said)).await
}

/// `person`'s own link on approval `id`; an approval they hold no link on is unknown to them.
async fn theirs(shared: &Shared, id: &str, person: &Person) -> Result<LinkKey, Refusal> {
    shared
        .desk
        .link_of(id, person)
        .await?
        .ok_or(Refusal::UnknownLink)
}

async fn list(shared: &Shared, person: &Person) -> Response {
    listed(shared, person, None).await
}

/// The inbox of `person`: what waits for them and the grants they hold, under `said`.
async fn listed(shared: &Shared, person: &Person, said: Option<&str>) -> Response {
    let waiting = match shared.desk.inbox(person).await {
        Ok(waiting) => waiting,
        Err(refusal) => return refused(&refusal),
    };
    match shared.desk.grants_of(person).await {
        Ok(grants) => page(
            StatusCode::OK,
            &render_inbox(person, &waiting, &grants, said),
        ),
        Err(refusal) => refused(&refusal),
    }
}

fn no_inbox() -> Response {
    page(
        StatusCode::NOT_FOUND,
        &shell(
            "No inbox",
            "<p class=\"refused\">This approval page has no inbox: each approver decides through the link delivered to them. The operator can give approvers an inbox by having them sign in (ApprovalPageBuilder::sign_in_approvers).</p>",
        ),
    )
}

/// The inbox's sign-in page; `problem` says why the last attempt failed.
fn inbox_sign_in(problem: Option<&str>) -> String {
    let mut b = String::from("<h1>Approvals waiting for you</h1>");
    if let Some(problem) = problem {
        let _ = write!(
            b,
            "<p id=\"refusal\" class=\"refused\">{}</p>",
            esc(problem)
        );
    }
    sign_in_form(&mut b, "Sign in to see what waits for you");
    shell("Approvals waiting for you", &b)
}

/// A form that signs in with a pasted access token (and replaces any session).
fn sign_in_form(b: &mut String, label: &str) {
    let _ = write!(
        b,
        "<form method=\"post\" action=\"inbox\" id=\"sign-in\"><label for=\"token\">{}: your access token</label><input id=\"token\" name=\"token\" type=\"password\" autocomplete=\"off\"><button id=\"sign-in-button\" name=\"decision\" value=\"sign_in\">Sign in</button></form>",
        esc(label)
    );
}

/// The inbox: every request waiting for `person`, each opening their own link's page, then
/// the grants they hold, each that still covers calls with its revoke button.
fn render_inbox(
    person: &Person,
    waiting: &[(String, View)],
    grants: &[Grant],
    said: Option<&str>,
) -> String {
    let mut b = String::from("<h1>Approvals waiting for you</h1>");
    let _ = write!(
        b,
        "<p id=\"signed-in\">Signed in as {} ({}).</p>",
        esc(person.user()),
        esc(person.tenant())
    );
    if let Some(said) = said {
        let _ = write!(b, "<p id=\"said\">{}</p>", esc(said));
    }
    if waiting.is_empty() {
        b.push_str("<p id=\"empty\">Nothing is waiting for you.</p>");
    } else {
        b.push_str("<ul id=\"inbox\">");
    }
    for (id, view) in waiting {
        let query: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("approval", id)
            .finish();
        let _ = write!(
            b,
            "<li class=\"waiting\"><a href=\"?{}\"><code>{}</code> on {}</a>: {} <span class=\"requester\">Requested by {} ({}).</span> <span class=\"count\">Approvals: {} of {}.</span> <span class=\"expires\">Expires {}.</span></li>",
            esc(&query),
            esc(&view.tool),
            esc(&view.target),
            esc(&view.summary),
            esc(view.requester.user()),
            esc(view.requester.tenant()),
            view.given.len(),
            view.required,
            utc(view.expires_at),
        );
    }
    if !waiting.is_empty() {
        b.push_str("</ul>");
    }
    render_grants(&mut b, grants);
    sign_in_form(&mut b, "Not you? Sign in as yourself");
    shell("Approvals waiting for you", &b)
}

/// The grants section of the inbox: what each covers, what is left, and a revoke button
/// for each that still covers calls.
fn render_grants(b: &mut String, grants: &[Grant]) {
    b.push_str("<h2>Your grants</h2>");
    if grants.is_empty() {
        b.push_str("<p id=\"no-grants\">You hold no grants: every call asks you.</p>");
        return;
    }
    let now = crate::store::now_ms();
    b.push_str("<ul id=\"grants\">");
    for grant in grants {
        let state = match &grant.revoked {
            Some((_, by)) => format!("Revoked by {by}."),
            None if grant.active_at(now) => "Covers calls now.".to_owned(),
            None => "Ended.".to_owned(),
        };
        let _ = write!(
            b,
            "<li class=\"grant\" id=\"grant-{id}\">Up to {calls} calls of <code>{tool}</code> on {scope}, until {until}: {used} used, {left} left. <span class=\"state\">{state}</span>",
            id = esc(&grant.grant_id),
            calls = grant.calls,
            tool = esc(&grant.tool),
            scope = esc(&grant.scope),
            until = esc(&crate::rfc3339::minute(grant.expires_at)),
            used = grant.used,
            left = grant.left(),
            state = esc(&state),
        );
        if grant.active_at(now) {
            let query: String = url::form_urlencoded::Serializer::new(String::new())
                .append_pair("grant", &grant.grant_id)
                .finish();
            let _ = write!(
                b,
                " <form method=\"post\" action=\"inbox?{}\"><button class=\"revoke\" name=\"decision\" value=\"revoke_grant\">Revoke</button></form>",
                esc(&query)
            );
        }
        b.push_str("</li>");
    }
    b.push_str("</ul>");
}

#[cfg(test)]
mod tests {
    use super::render_inbox;
    use crate::{grant::Grant, person::Person};

    #[test]
    fn the_inbox_lists_grants_and_offers_to_revoke_only_those_that_still_cover_calls() {
        let far = crate::store::now_ms() + 600_000;
        let active = Grant {
            grant_id: "g-1".into(),
            tool: "delete_file".into(),
            scope: "files directly in folder <reports>/".into(),
            calls: 20,
            used: 3,
            created_at: 0,
            expires_at: far,
            revoked: None,
        };
        let revoked = Grant {
            grant_id: "g-2".into(),
            revoked: Some((1, "acme/alice".into())),
            ..active.clone()
        };
        let alice = Person::new("acme", "alice").unwrap();
        let page = render_inbox(
            &alice,
            &[],
            &[active, revoked],
            Some("Grant g-0 is revoked"),
        );
        assert!(
            page.contains("<p id=\"said\">Grant g-0 is revoked</p>"),
            "{page}"
        );
        assert!(page.contains("id=\"grant-g-1\""), "{page}");
        assert!(page.contains("3 used, 17 left"), "{page}");
        assert!(
            page.contains("&lt;reports&gt;"),
            "scopes are escaped: {page}"
        );
        assert!(page.contains("action=\"inbox?grant=g-1\""), "{page}");
        assert!(!page.contains("action=\"inbox?grant=g-2\""), "{page}");
        assert!(page.contains("Revoked by acme/alice."), "{page}");
        let none = render_inbox(&alice, &[], &[], None);
        assert!(none.contains("You hold no grants"), "{none}");
    }
}
