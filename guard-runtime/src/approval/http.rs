//! The approval page over HTTP: `GET /approval/{link}` shows it, `POST /approval/{link}`
//! decides (or, where approvers sign in, signs in). Where approvers sign in,
//! `/approval/inbox` lists what waits for the signed-in person and decides through their
//! own links, and lists the grants they hold, each revocable there. Nothing is decided by a GET; a POST must
//! come from the page's own origin and carry the link's CSRF token. Every answer, axum's
//! own included, passes through [`super::shield`]: requests for another `Host` are refused,
//! and every answer forbids framing, caching, and any script or asset from elsewhere. The
//! referrer (which holds the link) never leaves the page's origin. It is not suppressed
//! altogether: with `no-referrer` a browser sends `Origin: null` on the page's own POST,
//! and the origin check could not tell it from another site's.

use std::{fmt::Write, sync::Arc};

use axum::{
    Form, Router,
    extract::{Path, RawQuery, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    middleware,
    response::{IntoResponse, Response},
    routing::get,
};
use serde::Deserialize;

use super::{
    Shared,
    desk::{Decision, LinkKey},
    refusal::Refusal,
    shield,
    state::{Role, Status},
    view::View,
};
use crate::{
    grant::{Grant, Revoked},
    person::Person,
};

const STYLE: &str = include_str!("page.css");

pub(super) fn router(shared: Arc<Shared>) -> Router {
    let default_port = if shared.base.scheme() == "https" {
        443
    } else {
        80
    };
    let admit = (shared.hosts.clone(), default_port);
    Router::new()
        .route("/approval/inbox", get(inbox).post(inbox_post))
        .route("/approval/{link}", get(show).post(decide))
        .route("/approval-assets/page.css", get(style))
        .fallback(not_found)
        .with_state(shared)
        .layer(middleware::from_fn_with_state(admit, shield::admit))
        .layer(middleware::map_response(shield::armour))
}

#[derive(Deserialize)]
struct Posted {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    decision: String,
    #[serde(default)]
    typed: Option<String>,
    #[serde(default)]
    secret: Option<String>,
    #[serde(default)]
    token: Option<String>,
}

impl Posted {
    /// The decision a page's form posted (`None` for anything else), and its CSRF token.
    fn decision(self) -> (Option<Decision>, String) {
        let decision = match self.decision.as_str() {
            "approve" => Some(Decision::Approve {
                typed: self.typed,
                secret: self.secret,
            }),
            "reject" => Some(Decision::Reject),
            _ => None,
        };
        (decision, self.csrf)
    }
}

async fn show(
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

async fn decide(
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
fn after_decision(
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

/// `GET /approval/inbox`: what waits for the signed-in approver; with `?approval=ID`, the page
/// of their own link on that approval. Only where approvers sign in: the person comes from
/// the identity provider, never from a link.
async fn inbox(
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
async fn inbox_post(
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

fn not_understood() -> Response {
    page(
        StatusCode::BAD_REQUEST,
        &shell(
            "Not understood",
            "<p class=\"refused\">The page sent no decision. Open your approval link and press Approve or Reject.</p>",
        ),
    )
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

/// The person at the browser, where approvers sign in.
fn signed_in(shared: &Shared, headers: &HeaderMap) -> Option<Person> {
    shared.sign_in.as_ref()?.signed_in(headers)
}

async fn style() -> Response {
    let mut response = (StatusCode::OK, STYLE).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/css; charset=utf-8"),
    );
    response
}

async fn not_found() -> Response {
    refused(&Refusal::UnknownLink)
}

/// A browser names the page's origin in `Origin` on every POST; a request from another
/// site names its own, or says `Sec-Fetch-Site: cross-site`.
fn same_origin(origin: &str, headers: &HeaderMap) -> bool {
    let site_ok = match headers.get("sec-fetch-site").map(HeaderValue::to_str) {
        None => true,
        Some(Ok(site)) => site == "same-origin",
        Some(Err(_)) => false,
    };
    let origin_ok = match headers.get(header::ORIGIN).map(HeaderValue::to_str) {
        None => true,
        Some(Ok(sent)) => sent == origin,
        Some(Err(_)) => false,
    };
    site_ok && origin_ok
}

fn refused(refusal: &Refusal) -> Response {
    let body = format!("<p class=\"refused\">{}</p>", esc(&refusal.message()));
    page(
        StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::FORBIDDEN),
        &shell("Approval refused", &body),
    )
}

fn page(status: StatusCode, html: &str) -> Response {
    let mut response = (status, html.to_owned()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}

fn shell(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>{}</title><link rel=\"stylesheet\" href=\"../approval-assets/page.css\"></head><body><main>{body}</main></body></html>\n",
        esc(title)
    )
}

/// The page behind one link. `refusal` is why the last post was not taken; `signed_in` the
/// person at the browser, where approvers sign in.
fn render(view: &View, refusal: Option<String>, signed_in: Option<&Person>) -> String {
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

fn utc(at: std::time::SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at)
        .format("%Y-%m-%d %H:%M:%S UTC")
        .to_string()
}

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
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
