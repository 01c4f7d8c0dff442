//! A tool approved on the page tells the human the terms of reversing its effect, composed by
//! guard from the declaration, exactly as a form does: in the URL elicitation's message the
//! client shows, and on the page the person approves on (read in headless Chromium). A final
//! effect says it cannot be undone; an undoable one names `undo` and its deadline, and the
//! approved call's answer names the window, which `undo` then closes; a deferred one says when
//! it runs and that `withdraw` stops it, and the approved call is only scheduled. Without a
//! store nothing can keep a window, so the same undoable tool says it is final. Both eras.

use crate::support::approval as bench;

use std::time::Duration;

use bench::*;
use rmcp::model::{CallToolRequestParams, CallToolResult, ProtocolVersion};
use rmcp_guard::outcome::Outcome;
use serde_json::json;

const FINAL: &str = "This cannot be undone.";
const UNDO: &str = "You can undo this until ";
const UNDO_END: &str = " with undo; after that it is final.";
const DEFER: &str = "This does not happen now: it runs at ";
const DEFER_END: &str =
    "and until then it can be withdrawn with withdraw, and then nothing happens.";

/// A page bench on `era` keeping its windows and deferred calls in a SQLite store.
async fn with_store(era: ProtocolVersion) -> (Harness, tempfile::TempDir) {
    let (store, dir) = sqlite();
    let h = Setup {
        store: Some(store),
        ..Setup::new(era)
    }
    .start()
    .await;
    (h, dir)
}

/// Calls `tool` on `environment`, checks that the message the client got and the page the
/// requester opens both say `says` and not `never`, approves there, and returns the result.
async fn approved_on_the_page(
    h: &mut Harness,
    tool: &str,
    environment: &str,
    says: &[&str],
    never: &str,
) -> CallToolResult {
    let call = h.call(tool, environment);
    let (url, _, message) = h.requester_url().await;
    let browser = Browser::start().await;
    let page = browser.open(&url).await;
    for (shown, what) in [(&message, "the client's message"), (&page, "the page")] {
        for needle in says {
            assert!(shown.contains(needle), "{what} lacks {needle:?}: {shown}");
        }
        assert!(!shown.contains(never), "{what} says {never:?}: {shown}");
    }
    let page = browser.click("#approve").await;
    assert!(
        page.contains("Approved: the action goes ahead as described above."),
        "{page}"
    );
    call.await.unwrap()
}

/// `_meta.guard.operationId` of a result.
fn operation_id(result: &CallToolResult) -> String {
    let meta = serde_json::to_value(&result.meta).unwrap();
    meta["guard"]["operationId"]
        .as_str()
        .unwrap_or_else(|| panic!("the result names no operation: {meta}"))
        .to_owned()
}

async fn a_final_effect_says_so(era: ProtocolVersion) {
    let (mut h, _dir) = with_store(era).await;
    let result = approved_on_the_page(&mut h, "restart", "web", &[FINAL], UNDO).await;
    assert_eq!(outcome(&result), Some(Outcome::Executed), "{result:?}");
    assert_eq!(h.deployed(), [("restart web".to_owned(), 0)]);
}

async fn an_undoable_effect_names_undo_and_its_deadline(era: ProtocolVersion) {
    let (mut h, _dir) = with_store(era).await;
    let result = approved_on_the_page(&mut h, "retire", "web", &[UNDO, UNDO_END], FINAL).await;
    assert_eq!(outcome(&result), Some(Outcome::Executed), "{result:?}");
    let id = operation_id(&result);
    assert!(
        text(&result).contains(&format!(
            "To undo this, call undo with operation_id {id} before "
        )),
        "{}",
        text(&result)
    );
    assert_eq!(h.deployed(), [("retire web".to_owned(), 0)]);

    // The window the page's terms promised is really open, for the requester.
    let undone = h
        .client
        .call_tool(
            CallToolRequestParams::new("undo")
                .with_arguments(json!({"operation_id": id}).as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    assert_eq!(outcome(&undone), Some(Outcome::Undone), "{undone:?}");
    assert_eq!(
        h.deployed(),
        [("retire web".to_owned(), 0), ("unretire web".to_owned(), 0)]
    );
}

async fn a_deferred_effect_says_when_and_how_to_withdraw(era: ProtocolVersion) {
    let (mut h, _dir) = with_store(era).await;
    let result =
        approved_on_the_page(&mut h, "migrate", "web", &[DEFER, DEFER_END, FINAL], UNDO).await;
    assert_eq!(outcome(&result), Some(Outcome::Scheduled), "{result:?}");
    assert!(
        text(&result).starts_with("Scheduled for ") && text(&result).contains("call withdraw"),
        "{}",
        text(&result)
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        h.deployed().is_empty(),
        "a deferred effect waits: {:?}",
        h.deployed()
    );
}

async fn without_a_store_an_undoable_effect_is_final(era: ProtocolVersion) {
    let mut h = Setup::new(era).start().await;
    let result = approved_on_the_page(&mut h, "retire", "db", &[FINAL], UNDO).await;
    assert_eq!(outcome(&result), Some(Outcome::Executed), "{result:?}");
    assert!(!text(&result).contains("call undo"), "{}", text(&result));
    assert_eq!(h.deployed(), [("retire db".to_owned(), 0)]);
}

both_eras!(
    threaded:
    a_final_effect_says_so,
    an_undoable_effect_names_undo_and_its_deadline,
    a_deferred_effect_says_when_and_how_to_withdraw,
    without_a_store_an_undoable_effect_is_final,
);
