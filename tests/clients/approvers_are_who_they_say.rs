//! The second person out of the requester's reach, with a real rmcp client, the page over
//! HTTP and in headless Chromium: people counted as people (two spellings, case, width,
//! invisible characters and look-alikes are one person or refused), approvers signed in by
//! the identity provider so a link alone decides nothing, links delivered by signed webhook
//! with retries on the record, a page that answers only its own `Host` with its protective
//! headers on every answer, and every approval event in the audit log under canonical names.

use crate::support::approval as bench;

use std::{
    net::SocketAddr,
    time::{Duration, SystemTime},
};

use bench::*;
use rmcp_guard::{
    BearerIdentity, EnvIdentity,
    approval::{ApprovalPage, ApprovalPageError, WebhookNotifier, webhook},
    audit::AuditLog,
    identity::Identity,
    ops::SqliteStore,
    outcome::{ApprovalEvent, Outcome},
};
use safe_ops::{receiver::Receiver, visit};
use serde_json::{Value, json};

const SECRET: &[u8] = b"the webhook secret, 32 bytes or more";
const JWT_SECRET: &[u8] = b"the identity provider's HS256 key, test only";
const ISSUER: &str = "https://idp.test";
const AUDIENCE: &str = "approval-page";

fn log_in(dir: &tempfile::TempDir) -> AuditLog {
    AuditLog::new(
        SqliteStore::open(dir.path().join("audit.db")).unwrap(),
        "approval test",
    )
}

/// Every record written so far, as JSON.
async fn records(h: &Harness, log: &AuditLog) -> Vec<Value> {
    h.guard.audit_settled().await;
    // Deliveries and page events are queued from their own tasks: let them land.
    tokio::time::sleep(Duration::from_millis(200)).await;
    h.guard.audit_settled().await;
    log.records()
        .await
        .unwrap()
        .iter()
        .filter_map(|r| r.json())
        .collect()
}

fn of(records: &[Value], outcome: Outcome) -> Vec<&Value> {
    records
        .iter()
        .filter(|r| r["outcome"].as_str().and_then(Outcome::parse) == Some(outcome))
        .collect()
}

/// Loads `url`, then posts `fields` with the page's CSRF token from its origin.
async fn post_on(url: &str, fields: &[(&str, &str)]) -> visit::Page {
    let csrf = visit::get(url).await.unwrap().field("csrf").unwrap();
    let mut posted = vec![("csrf", csrf.as_str())];
    posted.extend_from_slice(fields);
    visit::post(url, &posted).await.unwrap()
}

#[tokio::test]
async fn the_page_refuses_to_start_with_one_person_listed_twice_or_a_hidden_or_mixed_name() {
    let fullwidth = "\u{FF43}\u{FF41}\u{FF52}\u{FF4F}\u{FF4C}";
    for (listed, says) in [
        (
            ["carol", "Carol"],
            "names the same person as approver \"carol\"",
        ),
        (["carol", fullwidth], "names the same person"),
        (["car\u{F3}l", "caro\u{301}l"], "names the same person"),
        (["carol", "carol\u{200B}"], "U+200B"),
        (["carol", "car\u{202E}ol"], "U+202E"),
        (["bob", "\u{441}\u{430}rol"], "mixes Cyrillic and Latin"),
        (["bob", "b\u{43E}b"], "mixes"),
    ] {
        let mut builder = ApprovalPage::builder(EnvIdentity::new(Identity::new(
            "acme",
            "dave",
            Vec::<String>::new(),
        )));
        for user in listed {
            builder = builder.approver(Identity::new("acme", user, Vec::<String>::new()));
        }
        let error = builder.start().await.unwrap_err();
        assert!(
            matches!(error, ApprovalPageError::Approver { .. }) && error.to_string().contains(says),
            "{listed:?}: {error}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spellings_of_one_person_count_once_and_the_log_names_people_canonically() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(&dir);
    let mut h = Setup {
        requester: Identity::new("Acme", "Alice", ["deploy"]),
        approvers: vec![
            Identity::new("acme", "ALICE", Vec::<String>::new()),
            Identity::new("ACME", "Bob", Vec::<String>::new()),
            Identity::new("acme", "\u{FF43}arol", Vec::<String>::new()),
        ],
        audit: Some(log.clone()),
        ..Setup::new(PUSH)
    }
    .start()
    .await;
    let call = h.call("deploy", "production");
    let (url, _, _) = h.requester_url().await;
    let (bob, carol) = (h.link("Bob"), h.link("\u{FF43}arol"));
    let page = visit::get(&url).await.unwrap().text();
    assert!(page.contains("alice (acme)"), "{page}");

    let page = visit::approve(&bob, "production").await.unwrap().text();
    assert!(
        page.contains("Approvals: 1 of 2") && page.contains("bob at"),
        "{page}"
    );
    // The requester's own link, tampered into an approval: refused.
    let page = post_on(&url, &[("decision", "approve"), ("typed", "production")]).await;
    assert_eq!(page.status, 403, "{}", page.text());
    assert!(page.text().contains("You asked for this action"));
    let page = post_on(
        &carol,
        &[
            ("decision", "approve"),
            ("typed", "production"),
            ("secret", TOKEN),
        ],
    )
    .await
    .text();
    assert!(
        page.contains("Approved: the action goes ahead as described above."),
        "{page}"
    );
    let result = call.await.unwrap();
    assert_eq!(outcome(&result), Some(Outcome::Executed), "{result:?}");
    assert_eq!(h.deployed(), [("production".to_owned(), TOKEN.len())]);

    let records = records(&h, &log).await;
    let opened = of(&records, Outcome::Approval(ApprovalEvent::Opened));
    assert_eq!(opened.len(), 1, "{records:#?}");
    let opened = opened[0];
    let approval_id = opened["approval_id"].as_str().unwrap();
    let trace_id = opened["trace_id"].as_str().unwrap();
    assert_eq!(opened["approvers"], json!(["bob", "carol"]), "never ALICE");
    for record in records.iter().filter(|r| r["trace_id"] == trace_id) {
        assert_eq!(
            (&record["tenant"], &record["user"]),
            (&json!("acme"), &json!("alice")),
            "every record of the call names the requester canonically: {record}"
        );
    }
    let by = |outcome: Outcome| -> Vec<String> {
        let mut who: Vec<String> = of(&records, outcome)
            .iter()
            .map(|r| r["approver"].as_str().unwrap_or_default().to_owned())
            .collect();
        who.sort();
        who
    };
    assert_eq!(
        by(Outcome::Approval(ApprovalEvent::LinkDelivered)),
        ["bob", "carol"]
    );
    assert_eq!(
        by(Outcome::Approval(ApprovalEvent::Given)),
        ["bob", "carol"]
    );
    assert_eq!(by(Outcome::Approval(ApprovalEvent::Refused)), ["alice"]);
    assert_eq!(
        of(&records, Outcome::Approval(ApprovalEvent::Refused))[0]["reason"],
        "requester_cannot_approve"
    );
    assert!(by(Outcome::Approval(ApprovalEvent::Viewed)).contains(&"alice".to_owned()));
    let approved = of(&records, Outcome::Approval(ApprovalEvent::Approved));
    assert_eq!(approved[0]["approvers"], json!(["bob", "carol"]));
    for outcome in [Outcome::Asked, Outcome::Executed] {
        let record = of(&records, outcome)[0];
        assert_eq!(record["approval_id"], approval_id, "{record}");
        assert_eq!(record["target"], "production", "{record}");
    }
    assert_eq!(
        of(&records, Outcome::Executed)[0]["approvers"],
        json!(["bob", "carol"])
    );
    for record in &records {
        let text = record.to_string();
        assert!(!text.contains(TOKEN), "the secret is never logged: {text}");
        for link in [&url, &bob, &carol] {
            let token = link.rsplit('/').next().unwrap();
            assert!(!text.contains(token), "no link token is logged: {text}");
        }
    }
}

fn token(user: &str) -> String {
    token_in("acme", user)
}

fn token_in(tenant: &str, user: &str) -> String {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    jsonwebtoken::encode(
        &jsonwebtoken::Header::default(),
        &json!({"sub": user, "tenant": tenant, "iss": ISSUER, "aud": AUDIENCE, "exp": now + 600}),
        &jsonwebtoken::EncodingKey::from_secret(JWT_SECRET).unwrap(),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_sign_in_a_link_alone_decides_nothing_and_the_requester_approves_through_no_session() {
    let mut h = Setup {
        sign_in: Some(BearerIdentity::hs256(JWT_SECRET, ISSUER, AUDIENCE).unwrap()),
        ..Setup::new(PUSH)
    }
    .start()
    .await;
    let call = h.call("deploy", "production");
    h.requester_url().await;
    let (bob, carol) = (h.link("bob"), h.link("carol"));
    let browser = Browser::start().await;

    let page = browser.open(&bob).await;
    assert!(page.contains("Sign in as bob to decide"), "{page}");
    assert!(!browser.has("#approve").await, "no decision before sign-in");
    let csrf = browser.value("input[name=csrf]").await;
    let page = browser
        .post_from_page(
            &bob,
            &[
                ("csrf", csrf.as_str()),
                ("decision", "approve"),
                ("typed", "production"),
            ],
        )
        .await;
    assert!(page.contains("approvers must sign in first"), "{page}");

    // The requester holds bob's link (she read it somewhere): signed in as herself, she
    // gets no session for it; signed in as someone else, neither.
    let page = browser.sign_in(&bob, &token("Alice")).await;
    assert!(
        page.contains("You asked for this action, so you cannot approve it"),
        "{page}"
    );
    assert!(!browser.has("#approve").await);
    let page = browser.sign_in(&bob, &token("carol")).await;
    assert!(page.contains("this link is for bob"), "{page}");
    let page = browser.sign_in(&bob, "not-a-token").await;
    assert!(page.contains("Not signed in:"), "{page}");
    assert!(h.deployed().is_empty());

    let page = browser.sign_in(&bob, &token("Bob")).await;
    assert!(page.contains("Signed in as bob."), "{page}");
    let page = browser.approve(&bob, "production", None).await;
    assert!(page.contains("Approvals: 1 of 2"), "{page}");

    // Bob's session on carol's link decides nothing for her.
    let page = browser.open(&carol).await;
    assert!(
        page.contains("You are signed in as bob; this link is for carol"),
        "{page}"
    );
    assert!(!browser.has("#approve").await);
    let page = browser.sign_in(&carol, &token("carol")).await;
    assert!(page.contains("Signed in as carol."), "{page}");
    let page = browser.approve(&carol, "production", Some(TOKEN)).await;
    assert!(
        page.contains("Approved: the action goes ahead as described above."),
        "{page}"
    );
    let result = call.await.unwrap();
    assert_eq!(outcome(&result), Some(Outcome::Executed), "{result:?}");
    assert_eq!(h.deployed().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_shows_each_approver_what_waits_for_them_and_only_that() {
    let mut h = Setup {
        sign_in: Some(BearerIdentity::hs256(JWT_SECRET, ISSUER, AUDIENCE).unwrap()),
        ..Setup::new(PUSH)
    }
    .start()
    .await;
    const UNKNOWN: &str = "This approval link is not valid";
    let inbox = format!("{}approval/inbox", h.base);
    let call = h.call("deploy", "production");
    h.requester_url().await;
    let browser = Browser::start().await;

    let page = browser.open(&inbox).await;
    assert!(page.contains("Sign in to see what waits for you"), "{page}");
    assert!(
        !browser.has("#inbox").await,
        "nothing is listed before sign-in"
    );
    let page = browser.sign_in(&inbox, "not-a-token").await;
    assert!(page.contains("Not signed in:"), "{page}");

    let page = browser.sign_in(&inbox, &token("Bob")).await;
    assert!(page.contains("Signed in as bob (acme)."), "{page}");
    assert!(
        page.contains("deploy on production")
            && page.contains("Requested by alice (acme).")
            && page.contains("Approvals: 0 of 2."),
        "{page}"
    );
    let item = browser
        .client
        .find(fantoccini::Locator::Css("#inbox a"))
        .await
        .unwrap()
        .prop("href")
        .await
        .unwrap()
        .unwrap();
    // Another site posts to the inbox: neither a sign-in (which would plant its session)
    // nor a decision with bob's own credentials is taken.
    let base = url::Url::parse(&h.base).unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{}", base.port().unwrap())
        .parse()
        .unwrap();
    let query = url::Url::parse(&item).unwrap().query().unwrap().to_owned();
    let bob = token("bob");
    for (what, target, credentials, form) in [
        (
            "a cross-site sign-in",
            "/approval/inbox".to_owned(),
            String::new(),
            format!("decision=sign_in&token={bob}"),
        ),
        (
            "a cross-site decision",
            format!("/approval/inbox?{query}"),
            format!("Authorization: Bearer {bob}\r\n"),
            "decision=approve&typed=production&csrf=x".to_owned(),
        ),
    ] {
        let request = format!(
            "POST {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{credentials}Origin: http://evil.example\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{form}",
            form.len()
        );
        let (status, head, _) = raw(addr, request.as_bytes()).await;
        assert_eq!(status, 403, "{what}: {head}");
        assert!(!head.contains("set-cookie"), "{what}: {head}");
        assert_armoured(what, &head);
    }
    // A decision from the inbox needs the page's CSRF token, as through a link.
    let page = browser
        .post_from_page(
            &item,
            &[
                ("csrf", "forged"),
                ("decision", "approve"),
                ("typed", "production"),
            ],
        )
        .await;
    assert!(
        page.contains("did not come from the approval page itself"),
        "{page}"
    );
    let page = browser.approve(&item, "production", None).await;
    assert!(page.contains("Approvals: 1 of 2"), "{page}");
    let page = browser.open(&inbox).await;
    assert!(page.contains("Nothing is waiting for you."), "{page}");

    // The requester, and someone the approval does not list, see nothing and cannot open
    // the approval by its id: it is unknown to them, as an id that does not exist.
    for (user, who) in [("Alice", "alice"), ("dave", "dave")] {
        let page = browser.sign_in(&inbox, &token(user)).await;
        assert!(
            page.contains(&format!("Signed in as {who} (acme)."))
                && page.contains("Nothing is waiting for you."),
            "{user}: {page}"
        );
        let page = browser.open(&item).await;
        assert!(page.contains(UNKNOWN), "{user}: {page}");
        assert!(!browser.has("#approve").await, "{user}");
        let page = browser
            .post_from_page(&item, &[("decision", "approve"), ("typed", "production")])
            .await;
        assert!(page.contains(UNKNOWN), "{user}: {page}");
    }
    // Carol of another tenant is not the carol the approval lists.
    let page = browser
        .sign_in(&inbox, &token_in("other-tenant", "carol"))
        .await;
    assert!(
        page.contains("Signed in as carol (other-tenant).")
            && page.contains("Nothing is waiting for you."),
        "{page}"
    );
    let page = browser.open(&item).await;
    assert!(page.contains(UNKNOWN), "{page}");
    let page = browser
        .open(&format!("{inbox}?approval=no-such-approval"))
        .await;
    assert!(page.contains(UNKNOWN), "{page}");
    assert!(h.deployed().is_empty());

    let page = browser.sign_in(&inbox, &token("carol")).await;
    assert!(page.contains("Approvals: 1 of 2."), "{page}");
    let page = browser.approve(&item, "production", Some(TOKEN)).await;
    assert!(
        page.contains("Approved: the action goes ahead as described above."),
        "{page}"
    );
    let result = call.await.unwrap();
    assert_eq!(outcome(&result), Some(Outcome::Executed), "{result:?}");
    assert_eq!(h.deployed(), vec![("production".to_owned(), TOKEN.len())]);
    let page = browser.open(&inbox).await;
    assert!(page.contains("Nothing is waiting for you."), "{page}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_sign_in_there_is_no_inbox() {
    let h = Setup::new(PUSH).start().await;
    let page = visit::get(&format!("{}approval/inbox", h.base))
        .await
        .unwrap();
    assert_eq!(page.status, 404);
    assert!(page.text().contains("sign_in_approvers"), "{}", page.text());
}

/// One raw HTTP/1.1 exchange with the page: status, lowercase header lines, body.
async fn raw(addr: SocketAddr, request: &[u8]) -> (u16, String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    // A server may answer (413) and close before reading a large body to the end.
    let _ = stream.write_all(request).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut out)).await;
    let out = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head.to_ascii_lowercase(), body.to_owned())
}

fn assert_armoured(what: &str, head: &str) {
    for header in [
        "content-security-policy: default-src 'none'; style-src 'self'",
        "frame-ancestors 'none'",
        "x-frame-options: deny",
        "x-content-type-options: nosniff",
        "referrer-policy: same-origin",
        "cache-control: no-store",
    ] {
        assert!(head.contains(header), "{what}: no {header} in {head}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_answers_only_its_own_host_and_armours_every_answer() {
    let mut h = harness(true, Duration::from_secs(120)).await;
    let call = h.call("deploy", "production");
    let (url, _, _) = h.requester_url().await;
    let parsed = url::Url::parse(&url).unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{}", parsed.port().unwrap())
        .parse()
        .unwrap();
    let path = parsed.path().to_owned();
    let port = addr.port();
    let get =
        |host: &str| format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");

    for (what, request) in [
        ("a rebinding name", get("evil.example")),
        (
            "a rebinding name with the port",
            get(&format!("evil.example:{port}")),
        ),
        ("the right address on another port", get("127.0.0.1:1")),
        (
            "an absolute target naming another host",
            format!(
                "GET http://evil.example{path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
            ),
        ),
        (
            "two Host headers",
            format!(
                "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nHost: evil.example\r\nConnection: close\r\n\r\n"
            ),
        ),
        ("no Host at all", format!("GET {path} HTTP/1.0\r\n\r\n")),
    ] {
        let (status, head, body) = raw(addr, request.as_bytes()).await;
        assert!(status == 421 || status == 400, "{what}: {status} {head}");
        assert!(
            !body.contains("csrf") && !body.contains("Approve"),
            "{what} gets neither the page nor its CSRF token: {body}"
        );
        if status == 421 {
            assert_armoured(what, &head);
        }
    }
    for host in [format!("127.0.0.1:{port}"), format!("localhost:{port}")] {
        let (status, head, body) = raw(addr, get(&host).as_bytes()).await;
        assert_eq!(status, 200, "{host}: {head}");
        assert!(body.contains("name=\"csrf\""), "{host}");
        assert_armoured(&host, &head);
    }

    let host = format!("Host: 127.0.0.1:{port}\r\nConnection: close");
    let form = "csrf=x&decision=approve";
    let big = "a".repeat(3 * 1024 * 1024);
    for (expected, what, request) in [
        (
            404,
            "an unknown path",
            format!("GET /nope HTTP/1.1\r\n{host}\r\n\r\n"),
        ),
        (
            405,
            "another method",
            format!("PUT {path} HTTP/1.1\r\n{host}\r\nContent-Length: 0\r\n\r\n"),
        ),
        (
            415,
            "another media type",
            format!(
                "POST {path} HTTP/1.1\r\n{host}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"
            ),
        ),
        (
            413,
            "a body past the limit",
            format!(
                "POST {path} HTTP/1.1\r\n{host}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{big}",
                big.len()
            ),
        ),
        (
            414,
            "a long target",
            format!("GET /{} HTTP/1.1\r\n{host}\r\n\r\n", "a".repeat(3000)),
        ),
        (
            403,
            "a cross-site post",
            format!(
                "POST {path} HTTP/1.1\r\n{host}\r\nOrigin: http://evil.example\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{form}",
                form.len()
            ),
        ),
    ] {
        let (status, head, _) = raw(addr, request.as_bytes()).await;
        assert_eq!(status, expected, "{what}: {head}");
        assert_armoured(what, &head);
    }
    assert!(h.deployed().is_empty());
    visit::reject(&h.link("bob")).await.unwrap();
    assert_eq!(outcome(&call.await.unwrap()), Some(Outcome::Rejected));
}

/// Posts `body` to the receiver with `signature` as the signature header.
async fn post_to(receiver: &Receiver, signature: Option<&str>, body: &str) -> u16 {
    let url = url::Url::parse(&receiver.url()).unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{}", url.port().unwrap())
        .parse()
        .unwrap();
    let signature = signature
        .map(|s| format!("{}: {s}\r\n", webhook::SIGNATURE_HEADER))
        .unwrap_or_default();
    let request = format!(
        "POST {} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n{signature}Content-Length: {}\r\n\r\n{body}",
        url.path(),
        body.len()
    );
    raw(addr, request.as_bytes()).await.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_go_out_by_signed_webhook_and_a_failed_delivery_is_retried_and_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(&dir);
    let receiver = Receiver::start(SECRET.to_vec()).await.unwrap();
    receiver.unavailable_for(1);
    let mut h = Setup {
        notifier: Some(Box::new(
            WebhookNotifier::new(&receiver.url(), SECRET).unwrap(),
        )),
        audit: Some(log.clone()),
        ..Setup::new(MRTR)
    }
    .start()
    .await;
    let call = h.call("deploy", "production");
    h.requester_url().await;
    let wait = Duration::from_secs(15);
    let bob = receiver.link_for("bob", wait).await.expect("bob's link");
    let carol = receiver
        .link_for("carol", wait)
        .await
        .expect("carol's link");
    assert_eq!(bob.approval_id, carol.approval_id);
    assert_eq!(
        bob.body["requester"],
        json!({"tenant": "acme", "user": "alice"})
    );
    assert_eq!(bob.body["target"], "production");
    assert_eq!(receiver.refused(), 0, "guard's own signatures verify");

    // The receiver refuses anything not signed under the shared secret, now.
    let body = bob.body.to_string();
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let forged = webhook::sign(b"another secret of at least 32 bytes", now, body.as_bytes());
    let stale = webhook::sign(SECRET, now - 3600, body.as_bytes());
    let altered = webhook::sign(SECRET, now, body.replace("bob", "mallory").as_bytes());
    for (what, signature) in [
        ("no signature", None),
        ("another secret", Some(forged.as_str())),
        ("an hour old", Some(stale.as_str())),
        ("another body's", Some(altered.as_str())),
        ("garbage", Some("t=1,v1=zz")),
    ] {
        assert_eq!(post_to(&receiver, signature, &body).await, 401, "{what}");
    }
    assert_eq!(receiver.refused(), 5);
    let good = webhook::sign(SECRET, now, body.as_bytes());
    assert_eq!(post_to(&receiver, Some(&good), &body).await, 204);

    visit::reject(&bob.url).await.unwrap();
    assert_eq!(outcome(&call.await.unwrap()), Some(Outcome::Rejected));
    let records = records(&h, &log).await;
    let failed = of(
        &records,
        Outcome::Approval(ApprovalEvent::LinkDeliveryFailed),
    );
    assert_eq!(failed.len(), 1, "{records:#?}");
    assert_eq!(failed[0]["attempt"], 1);
    assert_eq!(failed[0]["retrying"], true);
    assert!(
        failed[0]["error"].as_str().unwrap().contains("503"),
        "{}",
        failed[0]
    );
    let delivered = of(&records, Outcome::Approval(ApprovalEvent::LinkDelivered));
    let mut attempts: Vec<i64> = delivered
        .iter()
        .map(|r| r["attempt"].as_i64().unwrap())
        .collect();
    attempts.sort();
    assert_eq!(attempts, [1, 2], "one link went through the second time");
    assert_eq!(
        delivered[0]["channel"],
        format!("webhook {}", receiver.url()),
        "the record names the channel, never the link"
    );
    assert!(!records.iter().any(|r| r.to_string().contains(&bob.url)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_receiver_is_recorded_as_undelivered_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(&dir);
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut h = Setup {
        timeout: Duration::from_secs(3),
        notifier: Some(Box::new(
            WebhookNotifier::new(&format!("http://{closed}/hook"), SECRET).unwrap(),
        )),
        audit: Some(log.clone()),
        ..Setup::new(PUSH)
    }
    .start()
    .await;
    let call = h.call("deploy", "production");
    h.requester_url().await;
    assert_eq!(outcome(&call.await.unwrap()), Some(Outcome::Expired));
    assert!(h.deployed().is_empty());
    tokio::time::sleep(Duration::from_secs(1)).await;
    let records = records(&h, &log).await;
    let mut given_up: Vec<&str> = of(&records, Outcome::Approval(ApprovalEvent::LinkUndelivered))
        .iter()
        .map(|r| r["approver"].as_str().unwrap())
        .collect();
    given_up.sort();
    assert_eq!(given_up, ["bob", "carol"], "{records:#?}");
    assert!(
        of(
            &records,
            Outcome::Approval(ApprovalEvent::LinkDeliveryFailed)
        )
        .len()
            >= 2
    );
    assert_eq!(
        of(&records, Outcome::Approval(ApprovalEvent::Expired)).len(),
        1
    );
}
