//! The approval page on protocol 2025-11-25, driven in headless Chromium together with a real
//! rmcp client that receives the URL-mode elicitation and `notifications/elicitation/complete`.
//! Each test counts the deploys the handler really ran.

use crate::support::approval as bench;

use std::{net::SocketAddr, time::Duration};

use bench::*;
use rmcp_guard::outcome::Outcome;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_other_people_approve_then_the_deploy_runs_once_with_the_secret() {
    let mut h = harness(true, Duration::from_secs(120)).await;
    let call = h.call("deploy", "production");
    let (url, elicitation_id, message) = h.requester_url().await;
    assert!(url.starts_with(&h.base), "{url} is on the page {}", h.base);
    assert!(
        message.contains("Deploy release 2.4.1 to production."),
        "{message}"
    );
    assert!(message.contains("2 people other than you"), "{message}");
    // The requester is never an approver, and another tenant's user gets no link.
    h.link("bob");
    h.link("carol");
    let mut users: Vec<String> = h
        .links
        .lock()
        .unwrap()
        .iter()
        .map(|l| l.approver.user.clone())
        .collect();
    users.sort();
    assert_eq!(users, ["bob", "carol"]);

    let browser = Browser::start().await;
    let page = browser.open(&url).await;
    assert!(page.contains("Approve deploy?"), "{page}");
    assert!(
        page.contains("Deploy release 2.4.1 to production."),
        "{page}"
    );
    assert!(
        page.contains("Requested by\nalice (acme)") || page.contains("alice (acme)"),
        "{page}"
    );
    assert!(page.contains("Expires"), "{page}");
    assert!(page.contains("Approvals: 0 of 2"), "{page}");
    assert!(
        !browser.has("#approve").await,
        "the requester's page offers no approval"
    );

    let page = browser.approve(&h.link("bob"), "production", None).await;
    assert!(page.contains("Approvals: 1 of 2"), "{page}");
    assert!(page.contains("bob at"), "{page}");
    assert!(h.deployed().is_empty(), "one approval runs nothing");
    // The requester's page shows who approved so far.
    let page = browser.open(&url).await;
    assert!(
        page.contains("Approvals: 1 of 2") && page.contains("bob at"),
        "{page}"
    );
    browser.open(&h.link("carol")).await;
    assert!(
        browser.has("#secret").await,
        "the completing approval asks for the secret"
    );
    browser.screenshot("approval-pending.png").await;

    let page = browser
        .approve(&h.link("carol"), "production", Some(TOKEN))
        .await;
    assert!(
        page.contains("Approved: the action goes ahead as described above."),
        "{page}"
    );
    assert!(page.contains("Approvals: 2 of 2"), "{page}");
    browser.screenshot("approval-approved.png").await;

    let result = call.await.unwrap();
    assert_eq!(outcome(&result), Some(Outcome::Executed), "{result:?}");
    assert_eq!(h.deployed(), [("production".to_owned(), TOKEN.len())]);
    let shown = text(&result);
    assert!(
        shown.contains("Deployed release 2.4.1 to production"),
        "{shown}"
    );
    assert!(
        !shown.contains(TOKEN),
        "the secret never reaches the model: {shown}"
    );
    assert!(shown.contains("[redacted]"), "{shown}");
    assert!(!format!("{result:?}").contains(TOKEN));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(*h.completed.lock().unwrap(), [elicitation_id]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_approval_by_the_same_person_and_a_replayed_link_are_refused() {
    let mut h = harness(true, Duration::from_secs(120)).await;
    let call = h.call("deploy", "production");
    let (url, _, _) = h.requester_url().await;
    let browser = Browser::start().await;
    let bob = h.link("bob");
    browser.open(&bob).await;
    let csrf = browser.value("input[name=csrf]").await;
    // A typed name that is not the target, or hides an invisible character, counts for nothing.
    for typed in ["Production", "produc\u{200b}tion", "staging"] {
        let page = browser.approve(&bob, typed, None).await;
        assert!(page.contains("Not approved: the typed name"), "{page}");
        assert!(page.contains("Approvals: 0 of 2"), "{page}");
    }
    let page = browser.approve(&bob, "production", None).await;
    assert!(page.contains("Approvals: 1 of 2"), "{page}");
    assert!(
        !browser.has("#approve").await,
        "a used link offers no second approval"
    );
    let fields = [
        ("csrf", csrf.as_str()),
        ("decision", "approve"),
        ("typed", "production"),
        ("secret", TOKEN),
    ];
    let page = browser.post_from_page(&bob, &fields).await;
    assert!(page.contains("already used"), "{page}");
    assert!(page.contains("Approvals: 1 of 2"), "{page}");
    // The requester, tampering with her own page, cannot add the second approval.
    browser.open(&url).await;
    let own = browser.value("input[name=csrf]").await;
    let fields = [
        ("csrf", own.as_str()),
        ("decision", "approve"),
        ("typed", "production"),
        ("secret", TOKEN),
    ];
    let page = browser.post_from_page(&url, &fields).await;
    assert!(
        page.contains("You asked for this action, so you cannot approve it"),
        "{page}"
    );
    assert!(page.contains("Approvals: 1 of 2"), "{page}");
    assert!(h.deployed().is_empty());
    // The requester may withdraw.
    browser.open(&url).await;
    browser.click("#reject").await;
    let result = call.await.unwrap();
    assert_eq!(outcome(&result), Some(Outcome::Rejected), "{result:?}");
    assert!(
        text(&result).contains("alice rejected deploy"),
        "{}",
        text(&result)
    );
    assert!(h.deployed().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejection_ends_the_call_and_the_links_decide_nothing_more() {
    let mut h = harness(true, Duration::from_secs(120)).await;
    let call = h.call("deploy", "production");
    h.requester_url().await;
    bob_approves_then_carol_rejects(&h).await;
    assert_rejected_by_carol(&h, &call.await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_approval_then_the_deadline_runs_nothing() {
    let mut h = harness(true, Duration::from_secs(3)).await;
    // The browser starts before the 3 s deadline does, so a slow start cannot outlast it.
    let browser = Browser::start().await;
    let call = h.call("deploy", "production");
    h.requester_url().await;
    let carol = h.link("carol");
    browser.approve(&h.link("bob"), "production", None).await;
    let result = call.await.unwrap();
    assert_eq!(outcome(&result), Some(Outcome::Expired), "{result:?}");
    assert!(
        h.deployed().is_empty(),
        "nothing runs without two approvals"
    );
    let page = browser.open(&carol).await;
    assert!(page.contains("Expired: nothing will be changed."), "{page}");
    assert!(!browser.has("#approve").await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_links_decisions_by_get_and_cross_site_posts_are_refused() {
    let mut h = harness(true, Duration::from_secs(120)).await;
    let call = h.call("deploy", "production");
    h.requester_url().await;
    let browser = Browser::start().await;
    let bob = h.link("bob");

    // A forged link: the right shape, never issued.
    let forged = format!("{}approval/{}", h.base, "ab".repeat(32));
    let page = browser.open(&forged).await;
    assert!(page.contains("This approval link is not valid"), "{page}");

    // A decision by GET: the query is ignored, nothing is decided.
    browser.open(&bob).await;
    let csrf = browser.value("input[name=csrf]").await;
    let page = browser
        .open(&format!(
            "{bob}?csrf={csrf}&decision=approve&typed=production"
        ))
        .await;
    assert!(page.contains("Approvals: 0 of 2"), "{page}");

    // The page refuses to be framed and loads nothing from elsewhere.
    let headers = raw_get(&bob).await;
    for expected in [
        "x-frame-options: DENY",
        "content-security-policy: default-src 'none'; style-src 'self'",
        "referrer-policy: same-origin",
        "cache-control: no-store",
    ] {
        assert!(
            headers.contains(expected),
            "missing {expected} in {headers}"
        );
    }

    // A cross-site POST carrying even the right CSRF token: refused by its origin.
    let attacker = attacker_site(&bob, &csrf).await;
    browser
        .client
        .goto(&format!("http://{attacker}/"))
        .await
        .unwrap();
    let page = browser
        .wait_for("did not come from the approval page")
        .await;
    assert!(
        page.contains("did not come from the approval page"),
        "{page}"
    );
    let page = browser.open(&bob).await;
    assert!(page.contains("Approvals: 0 of 2"), "{page}");
    assert!(browser.has("#approve").await, "the link is still unused");

    // A forged CSRF token from the page's own origin: refused.
    let page = browser
        .post_from_page(
            &bob,
            &[
                ("csrf", "0000"),
                ("decision", "approve"),
                ("typed", "production"),
            ],
        )
        .await;
    assert!(
        page.contains("did not come from the approval page"),
        "{page}"
    );
    assert!(h.deployed().is_empty());

    browser.open(&bob).await;
    browser.click("#reject").await;
    assert_eq!(outcome(&call.await.unwrap()), Some(Outcome::Rejected));
    assert!(h.deployed().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_one_approval_the_requester_approves_a_checkbox_tool_alone() {
    let mut h = harness(true, Duration::from_secs(120)).await;
    let call = h.call("restart", "web");
    let (url, elicitation_id, _) = h.requester_url().await;
    assert!(
        h.links.lock().unwrap().is_empty(),
        "one approval needs no other approver"
    );
    let browser = Browser::start().await;
    browser.open(&url).await;
    assert!(
        !browser.has("#typed").await,
        "a checkbox tool asks for no typed name"
    );
    let page = browser.click("#approve").await;
    assert!(
        page.contains("Approved: the action goes ahead as described above."),
        "{page}"
    );
    let result = call.await.unwrap();
    assert_eq!(outcome(&result), Some(Outcome::Executed), "{result:?}");
    assert_eq!(h.deployed(), [("restart web".to_owned(), 0)]);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(*h.completed.lock().unwrap(), [elicitation_id]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_url_elicitation_gets_the_natural_fail_closed_answer() {
    let h = harness(false, Duration::from_secs(120)).await;
    let result = h.call("deploy", "production").await.unwrap();
    assert_eq!(
        outcome(&result),
        Some(Outcome::UnsupportedClient),
        "{result:?}"
    );
    assert!(!result.is_error.unwrap_or(false));
    assert!(
        text(&result).contains("did not declare URL elicitation"),
        "{}",
        text(&result)
    );
    assert!(h.links.lock().unwrap().is_empty(), "no approval was opened");
    assert!(h.deployed().is_empty());
}

/// The response head of a plain GET, lowercased names.
async fn raw_get(url: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let url = url::Url::parse(url).unwrap();
    let addr: SocketAddr = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap())
        .parse()
        .unwrap();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(
            format!(
                "GET {} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n",
                url.path()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).await.unwrap();
    out.split("\r\n\r\n").next().unwrap_or_default().to_owned()
}

/// Another origin (another port) serving a page that posts an approval to `target` as soon
/// as it loads.
async fn attacker_site(target: &str, csrf: &str) -> SocketAddr {
    let html = format!(
        "<!doctype html><form id=f method=post action=\"{target}\"><input name=csrf value=\"{csrf}\"><input name=decision value=approve><input name=typed value=production></form><script>document.getElementById('f').submit()</script>"
    );
    let app = axum::Router::new().route(
        "/",
        axum::routing::get(move || {
            let html = html.clone();
            async move { axum::response::Html(html) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}
