//! A disclosing tool approved on guard's page (`#[read_only(discloses = ..., approve =
//! "url", approvers = 2)]`), on both eras: the client's message and the page state the data
//! boundary and never the data; the requester cannot approve; one approval shows nothing;
//! the second shows the data once; a rejection or a client that cannot open the page shows
//! nothing and says so. The page is driven as a person's browser would, over plain HTTP (its
//! form, its CSRF token), and the bench counts every time the handler really read the data.

use crate::support::approval as bench;

use bench::*;
use rmcp::model::ProtocolVersion;
use rmcp_guard::outcome::Outcome;

const BOUNDARY: &str = "Show the agent the variables of environment web: 2 variables.";
const CLASS: &str = "It may contain secrets printed by accident";

/// `who` decides `decision` (`approve` or `reject`) on the page at `link`, with the page's
/// own form; the page's text afterwards.
async fn decides(link: &str, decision: &str) -> String {
    let page = safe_ops::visit::get(link).await.unwrap();
    let csrf = page
        .field("csrf")
        .expect("the approver's page has its form");
    safe_ops::visit::post(link, &[("csrf", &csrf), ("decision", decision)])
        .await
        .unwrap()
        .text()
}

async fn two_others_approve_then_the_data_is_shown_once(era: ProtocolVersion) {
    let mut h = Setup::new(era).start().await;
    let call = h.call("show_env", "web");
    let (url, _, message) = h.requester_url().await;
    for (shown, what) in [
        (message, "the client's message"),
        (safe_ops::visit::get(&url).await.unwrap().text(), "the page"),
    ] {
        assert!(shown.contains(BOUNDARY), "{what}: {shown}");
        assert!(shown.contains(CLASS), "{what}: {shown}");
        assert!(!shown.contains(TOKEN), "{what} shows the data: {shown}");
    }
    let own = safe_ops::visit::get(&url).await.unwrap();
    assert!(
        !own.html.contains("id=\"approve\""),
        "the requester's page offers no approval"
    );

    let page = decides(&h.link("bob"), "approve").await;
    assert!(page.contains("Approvals: 1 of 2"), "{page}");
    assert!(h.deployed().is_empty(), "one approval shows nothing");
    let page = decides(&h.link("carol"), "approve").await;
    assert!(page.contains("Approved"), "{page}");

    let result = call.await.unwrap();
    assert_eq!(outcome(&result), Some(Outcome::Executed), "{result:?}");
    assert!(text(&result).contains(TOKEN), "{}", text(&result));
    assert_eq!(h.deployed(), [("show_env web".to_owned(), 0)]);
}

async fn a_rejection_shows_nothing(era: ProtocolVersion) {
    let mut h = Setup::new(era).start().await;
    let call = h.call("show_env", "web");
    h.requester_url().await;
    decides(&h.link("bob"), "approve").await;
    let page = decides(&h.link("carol"), "reject").await;
    assert!(page.contains("Rejected by carol"), "{page}");
    let result = call.await.unwrap();
    assert_eq!(outcome(&result), Some(Outcome::Rejected), "{result:?}");
    assert_eq!(
        text(&result),
        "carol rejected show_env on the approval page; nothing was shown."
    );
    assert!(h.deployed().is_empty(), "nothing was read");
}

async fn a_client_that_cannot_open_the_page_is_shown_nothing(era: ProtocolVersion) {
    let h = Setup {
        url_mode: false,
        ..Setup::new(era)
    }
    .start()
    .await;
    let result = h.call("show_env", "web").await.unwrap();
    assert_eq!(outcome(&result), Some(Outcome::UnsupportedClient));
    assert!(
        text(&result).starts_with("Nothing was shown: show_env must be approved on a web page"),
        "{}",
        text(&result)
    );
    assert!(h.deployed().is_empty());
}

both_eras!(
    threaded:
    two_others_approve_then_the_data_is_shown_once,
    a_rejection_shows_nothing,
    a_client_that_cannot_open_the_page_is_shown_nothing,
);
