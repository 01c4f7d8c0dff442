//! Bounded grants, on both protocol eras: the question offers "this call only" or a grant
//! stated in plain words; a grant covers later calls of the same tool, by the same person,
//! on the same scope, up to its count and until its expiry, and nothing else: another
//! folder, a subfolder, another person, another tool, a used-up or expired or revoked grant
//! all ask again. It holds across a restart and on another server sharing the store, every
//! use is an audit record naming the grant, and the model's answer says nobody was asked.
//! safe-ops' `delete_file` (a grant over one folder) and the tests' shelf of two tools.

use std::sync::Arc;

use crate::support::{shelf::shelf, *};
use rmcp::model::{CallToolResult, ProtocolVersion};
use rmcp_guard::{
    EnvIdentity,
    grant::{Revoked, Revoker},
    ops::{OperationStore, SqliteStore},
    outcome::Outcome,
    person::Person,
};
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use serde_json::{Value, json};

both_eras!(
    the_question_offers_a_grant_in_plain_words,
    a_grant_covers_later_calls_in_its_folder_and_says_so,
    another_folder_or_a_subfolder_asks_again,
    another_person_is_asked,
    this_call_only_opens_no_grant,
    a_used_up_grant_asks_again,
    another_tool_is_not_covered,
    an_expired_grant_asks_again,
    a_revoked_grant_asks_again_on_every_server,
    a_grant_holds_across_a_restart_and_on_another_server,
    every_use_is_audited_naming_the_grant,
    a_grant_choice_the_question_did_not_offer_is_refused,
    the_same_person_in_another_spelling_is_covered,
    an_answer_given_while_a_grant_opened_elsewhere_is_honoured,
);

fn tick() -> Answer {
    Answer::Accept(json!({"confirm": true}))
}

fn tick_and_grant() -> Answer {
    Answer::Accept(json!({"confirm": true, "guard_grant": "grant"}))
}

/// A sandbox with files in `reports/`, `reports/old/` and `other/`.
fn world() -> World {
    let world = World::new();
    for dir in ["reports/old", "other"] {
        std::fs::create_dir_all(world.path(dir)).unwrap();
    }
    for name in [
        "reports/a.log",
        "reports/b.log",
        "reports/c.log",
        "reports/d.log",
        "reports/old/e.log",
        "other/f.log",
    ] {
        std::fs::write(world.path(name), "x\n").unwrap();
    }
    world
}

/// The world's store opened again, as another process would: opening waits out a write of
/// the first process's (its audit sequencer) rather than block on it, so it is retried.
async fn open_again(world: &World) -> SqliteStore {
    let path = world.base.join("operations.db");
    for _ in 0..100 {
        match SqliteStore::open(&path) {
            Ok(store) => return store,
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
        }
    }
    SqliteStore::open(&path).expect("the store opens again")
}

/// safe-ops on `world`, its grants in the world's store, calls made by `user`.
fn server_for(world: &World, user: &str) -> safe_ops::SafeOps {
    world.server_with(operations_guard(world.operations_store(), user))
}

/// Deletes `path` as `user` on a fresh connection, the human answering with `answers`.
async fn delete(
    world: &World,
    era: &ProtocolVersion,
    user: &str,
    path: &str,
    answers: &[Answer],
) -> (CallToolResult, ScriptedHuman) {
    let human = ScriptedHuman::new(era.clone());
    for answer in answers {
        human.will(answer.clone());
    }
    let client = connect(server_for(world, user), human.clone()).await;
    let result = call(&client, "delete_file", json!({"path": path})).await;
    let _ = client.cancel().await;
    (result, human)
}

/// `_meta.guard.grant` of a result, if a grant touched the call.
fn grant_meta(result: &CallToolResult) -> Option<Value> {
    let meta = serde_json::to_value(&result.meta).expect("meta");
    meta["guard"].get("grant").cloned()
}

/// Opens a grant over `reports/` as alice by deleting `reports/a.log`; its id.
async fn open_reports_grant(world: &World, era: &ProtocolVersion) -> String {
    let (result, _) = delete(world, era, "alice", "reports/a.log", &[tick_and_grant()]).await;
    assert_natural(&result, Outcome::Executed);
    let grant = grant_meta(&result).expect("the answer names the grant it opened");
    assert_eq!(grant["use"], "opened");
    grant["grantId"].as_str().unwrap().to_owned()
}

async fn the_question_offers_a_grant_in_plain_words(era: ProtocolVersion) {
    let world = world();
    let (_, human) = delete(&world, &era, "alice", "reports/a.log", &[tick()]).await;
    let [shown] = &human.shown()[..] else {
        panic!("one question: {:?}", human.shown());
    };
    let choice = &shown.schema["properties"]["guard_grant"];
    assert_eq!(choice["default"], "once", "{choice}");
    assert_eq!(
        choice["oneOf"][0],
        json!({"const": "once", "title": "This call only"})
    );
    assert_eq!(
        choice["oneOf"][1]["title"],
        "This and up to 5 more calls of delete_file on files directly in folder reports/, for 10 minutes, without asking again"
    );
    let required = shown.schema["required"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        !required.contains(&json!("guard_grant")),
        "the grant is never the default"
    );

    // Without an operation store there is nowhere to keep a grant, so none is offered.
    let human = ScriptedHuman::new(era.clone());
    human.will(tick());
    let client = connect(world.server(), human.clone()).await;
    let _ = call(&client, "delete_file", json!({"path": "reports/b.log"})).await;
    let [shown] = &human.shown()[..] else {
        panic!("one question");
    };
    assert!(shown.schema["properties"].get("guard_grant").is_none());
}

async fn a_grant_covers_later_calls_in_its_folder_and_says_so(era: ProtocolVersion) {
    let world = world();
    let id = open_reports_grant(&world, &era).await;
    assert_eq!(world.file("reports/a.log"), None);

    // Other spellings of the same folder are the same scope.
    for path in ["reports/b.log", "./reports//c.log"] {
        let (result, human) = delete(&world, &era, "alice", path, &[]).await;
        assert_natural(&result, Outcome::Executed);
        assert!(human.shown().is_empty(), "nobody was asked for {path}");
        assert!(
            text(&result).contains(&format!("Nobody was asked: grant {id}")),
            "{}",
            text(&result)
        );
        let grant = grant_meta(&result).unwrap();
        assert_eq!(grant["use"], "used");
        assert_eq!(grant["grantId"], id.as_str());
    }
    let (result, _) = delete(&world, &era, "alice", "reports/d.log", &[]).await;
    assert_eq!(grant_meta(&result).unwrap()["callsLeft"], 2);
    for gone in ["reports/b.log", "reports/c.log", "reports/d.log"] {
        assert_eq!(world.file(gone), None, "{gone} deleted under the grant");
    }
}

async fn another_folder_or_a_subfolder_asks_again(era: ProtocolVersion) {
    let world = world();
    open_reports_grant(&world, &era).await;
    for path in ["other/f.log", "reports/old/e.log", "old.log"] {
        let (result, human) = delete(&world, &era, "alice", path, &[Answer::Decline]).await;
        assert_natural(&result, Outcome::Declined);
        assert_eq!(human.shown().len(), 1, "{path} is outside the grant: asked");
        assert!(world.file(path).is_some(), "{path} kept");
        assert_eq!(grant_meta(&result), None);
    }
}

async fn another_person_is_asked(era: ProtocolVersion) {
    let world = world();
    open_reports_grant(&world, &era).await;
    // The same person in another spelling is the same canonical holder; bob is not.
    let (result, human) = delete(&world, &era, "bob", "reports/b.log", &[Answer::Decline]).await;
    assert_natural(&result, Outcome::Declined);
    assert_eq!(human.shown().len(), 1, "bob is asked");
    assert!(world.file("reports/b.log").is_some());
}

async fn the_same_person_in_another_spelling_is_covered(era: ProtocolVersion) {
    let world = world();
    open_reports_grant(&world, &era).await;
    // The holder's name in canonical form, as the two-person rule counts people.
    let (result, human) = delete(&world, &era, "Alice", "reports/b.log", &[]).await;
    assert_natural(&result, Outcome::Executed);
    assert!(human.shown().is_empty(), "Alice is alice: covered");
    // A name with an invisible character is no spelling of alice: it cannot even be the
    // server's identity.
    let hidden = EnvIdentity::from_lookup(|name| match name {
        EnvIdentity::TENANT_ENV => Some("local".to_owned()),
        EnvIdentity::USER_ENV => Some("a\u{200B}lice".to_owned()),
        _ => Some(String::new()),
    });
    assert!(hidden.is_err());
    assert!(world.file("reports/c.log").is_some());
}

async fn this_call_only_opens_no_grant(era: ProtocolVersion) {
    let world = world();
    let once = Answer::Accept(json!({"confirm": true, "guard_grant": "once"}));
    let (result, _) = delete(&world, &era, "alice", "reports/a.log", &[once]).await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(grant_meta(&result), None);
    let (result, human) = delete(&world, &era, "alice", "reports/b.log", &[Answer::Decline]).await;
    assert_natural(&result, Outcome::Declined);
    assert_eq!(human.shown().len(), 1, "asked again");
}

async fn a_grant_choice_the_question_did_not_offer_is_refused(era: ProtocolVersion) {
    let world = world();
    // A value outside the two choices.
    let forever = Answer::Accept(json!({"confirm": true, "guard_grant": "forever"}));
    let (result, _) = delete(&world, &era, "alice", "reports/a.log", &[forever]).await;
    assert_refused(
        &result,
        rmcp_guard::Code::InvalidConfirmation,
        Outcome::InvalidAnswer,
    );
    assert!(world.file("reports/a.log").is_some());
    // A grant where none was offered (no store to keep it in).
    let human = ScriptedHuman::new(era.clone());
    human.will(tick_and_grant());
    let client = connect(world.server(), human).await;
    let result = call(&client, "delete_file", json!({"path": "reports/a.log"})).await;
    assert_refused(
        &result,
        rmcp_guard::Code::InvalidConfirmation,
        Outcome::InvalidAnswer,
    );
    assert!(text(&result).contains("guard_grant"), "{}", text(&result));
    assert!(world.file("reports/a.log").is_some());
}

async fn a_revoked_grant_asks_again_on_every_server(era: ProtocolVersion) {
    let world = world();
    let id = open_reports_grant(&world, &era).await;
    let grants = operations_guard(world.operations_store(), "alice")
        .grants()
        .unwrap();
    let alice = Person::new("local", "alice").unwrap();
    let bob = Person::new("local", "bob").unwrap();
    let now = rmcp_guard::ops::now_ms();
    assert_eq!(
        grants
            .revoke(&id, Revoker::Holder(&bob), now, "t-bob")
            .await
            .unwrap(),
        Revoked::NotFound,
        "another person cannot see it, let alone revoke it"
    );
    let Revoked::Now(revoked) = grants
        .revoke(&id, Revoker::Holder(&alice), now, "t-revoke")
        .await
        .unwrap()
    else {
        panic!("revoked now");
    };
    assert_eq!(revoked.used, 0);
    assert!(matches!(
        grants
            .revoke(&id, Revoker::Holder(&alice), now, "t-again")
            .await
            .unwrap(),
        Revoked::Already(_)
    ));
    // A server that opened its store separately, as another process would.
    let other = open_again(&world).await;
    let human = ScriptedHuman::new(era.clone());
    human.will(Answer::Decline);
    let client = connect(
        world.server_with(operations_guard(other, "alice")),
        human.clone(),
    )
    .await;
    let result = call(&client, "delete_file", json!({"path": "reports/b.log"})).await;
    assert_natural(&result, Outcome::Declined);
    assert_eq!(human.shown().len(), 1, "asked again after the revocation");
}

async fn a_grant_holds_across_a_restart_and_on_another_server(era: ProtocolVersion) {
    let world = world();
    let id = open_reports_grant(&world, &era).await;
    // A fresh store handle and a fresh guard key: nothing of the first process is left.
    let other = open_again(&world).await;
    let client = connect(
        world.server_with(operations_guard(other, "alice")),
        ScriptedHuman::new(era.clone()),
    )
    .await;
    let result = call(&client, "delete_file", json!({"path": "reports/b.log"})).await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(grant_meta(&result).unwrap()["grantId"], id.as_str());
    assert_eq!(world.file("reports/b.log"), None);
}

async fn every_use_is_audited_naming_the_grant(era: ProtocolVersion) {
    let world = world();
    let store = world.operations_store();
    let server = || world.server_with(operations_guard(store.clone(), "alice"));
    let log = server()
        .guard_config()
        .operations()
        .unwrap()
        .audit_log()
        .clone();
    let human = ScriptedHuman::new(era.clone());
    human.will(tick_and_grant());
    let serving = server();
    let guard = serving.guard_config().clone();
    let client = connect(serving, human).await;
    let opened = call(&client, "delete_file", json!({"path": "reports/a.log"})).await;
    let used = call(&client, "delete_file", json!({"path": "reports/b.log"})).await;
    guard.audit_settled().await;
    let id = grant_meta(&opened).unwrap()["grantId"]
        .as_str()
        .unwrap()
        .to_owned();

    let records = |result: &CallToolResult| {
        let trace = trace_id(result).expect("trace id");
        let log = log.clone();
        async move {
            log.by_trace(&trace)
                .await
                .unwrap()
                .into_iter()
                .map(|r| serde_json::from_str::<Value>(&r.entry).unwrap())
                .collect::<Vec<_>>()
        }
    };
    let first = records(&opened).await;
    let open = first
        .iter()
        .find(|r| r["outcome"] == "grant_opened")
        .expect("a grant_opened record");
    assert_eq!(open["grant_id"], id.as_str());
    assert_eq!(open["scope"], "files directly in folder reports/");
    assert_eq!(open["calls"], 5);
    assert_eq!(open["user"], "alice");

    let second = records(&used).await;
    let outcomes: Vec<&str> = second
        .iter()
        .filter_map(|r| r["outcome"].as_str())
        .collect();
    assert!(outcomes.contains(&"grant_used"), "{outcomes:?}");
    assert!(outcomes.contains(&"executed"), "{outcomes:?}");
    for record in second.iter().filter(|r| {
        ["grant_used", "accepted", "executed"].contains(&r["outcome"].as_str().unwrap())
    }) {
        assert_eq!(record["grant_id"], id.as_str(), "{record}");
    }
    let use_record = second
        .iter()
        .find(|r| r["outcome"] == "grant_used")
        .unwrap();
    assert_eq!(use_record["calls_left"], 4);
}

/// Calls `tool` on `title` with `answers`; the result and how many questions were shown.
async fn shelve(
    store: &Arc<dyn OperationStore>,
    era: &ProtocolVersion,
    tool: &str,
    title: &str,
    answers: &[Answer],
) -> (CallToolResult, usize) {
    let human = ScriptedHuman::new(era.clone());
    for answer in answers {
        human.will(answer.clone());
    }
    let client = connect(shelf(store.clone(), "alice"), human.clone()).await;
    let result = call(&client, tool, json!({"title": title})).await;
    let _ = client.cancel().await;
    (result, human.shown().len())
}

fn shelf_store() -> (tempfile::TempDir, Arc<dyn OperationStore>) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("ops.db")).unwrap();
    (dir, Arc::new(store))
}

async fn a_used_up_grant_asks_again(era: ProtocolVersion) {
    let (_dir, store) = shelf_store();
    let (result, asked) = shelve(&store, &era, "remove_book", "a", &[tick_and_grant()]).await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(asked, 1);
    for title in ["b", "c"] {
        let (result, asked) = shelve(&store, &era, "remove_book", title, &[]).await;
        assert_natural(&result, Outcome::Executed);
        assert_eq!(asked, 0, "{title} ran under the grant");
    }
    let (result, asked) = shelve(&store, &era, "remove_book", "d", &[Answer::Decline]).await;
    assert_natural(&result, Outcome::Declined);
    assert_eq!(asked, 1, "the grant covered 2 more calls, not 3");
}

async fn another_tool_is_not_covered(era: ProtocolVersion) {
    let (_dir, store) = shelf_store();
    shelve(&store, &era, "remove_book", "a", &[tick_and_grant()]).await;
    let (result, asked) = shelve(&store, &era, "lend_book", "b", &[Answer::Decline]).await;
    assert_natural(&result, Outcome::Declined);
    assert_eq!(asked, 1, "a grant of remove_book does not cover lend_book");
}

async fn an_expired_grant_asks_again(era: ProtocolVersion) {
    let (_dir, store) = shelf_store();
    shelve(&store, &era, "remove_book", "a", &[tick_and_grant()]).await;
    // The grant lasts 2 s from when it opened; wait past it (not a timing assertion).
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let (result, asked) = shelve(&store, &era, "remove_book", "b", &[Answer::Decline]).await;
    assert_natural(&result, Outcome::Declined);
    assert_eq!(asked, 1, "asked again after the grant expired");
}

/// The operator's view: `safe-ops grants` lists the grants that cover calls, with their
/// holder and what is left, and `--revoke ID` ends one for every server on the store.
#[test]
fn the_operator_lists_and_revokes_grants_from_the_command_line() {
    let world = world();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let id = runtime.block_on(open_reports_grant(&world, &PUSH));
    let grants = |args: &[&str]| {
        let out = std::process::Command::new(crate::support::stdio::safe_ops_bin())
            .arg("--audit-db")
            .arg(world.base.join("operations.db"))
            .arg("grants")
            .args(args)
            .env("USER", "ops")
            .output()
            .expect("safe-ops runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, listed, err) = grants(&[]);
    assert!(ok, "{err}");
    assert!(listed.starts_with("1 grants cover calls now:"), "{listed}");
    assert!(listed.contains(&format!("{id}  alice (local)")), "{listed}");
    assert!(
        listed.contains("on files directly in folder reports/"),
        "{listed}"
    );
    let (ok, said, err) = grants(&["--revoke", &id]);
    assert!(ok, "{err}");
    assert_eq!(
        said.trim(),
        format!("revoked {id}: it covers no call from now on (0 of 5 calls used)")
    );
    let (ok, listed, _) = grants(&[]);
    assert!(ok);
    assert_eq!(listed.trim(), "no grant covers calls now: every call asks");
    let (ok, _, err) = grants(&["--revoke", "g-no-such-grant"]);
    assert!(!ok);
    assert!(err.contains("no grant g-no-such-grant"), "{err}");
    let (result, human) = runtime.block_on(delete(
        &world,
        &PUSH,
        "alice",
        "reports/b.log",
        &[Answer::Decline],
    ));
    assert_natural(&result, Outcome::Declined);
    assert_eq!(
        human.shown().len(),
        1,
        "asked again once the operator revoked it"
    );
    let log = runtime.block_on(async {
        let store = world.operations_store();
        let guard = operations_guard(store, "alice");
        let log = guard.operations().unwrap().audit_log().clone();
        log.records().await.unwrap()
    });
    let revoked: Vec<Value> = log
        .iter()
        .map(|r| serde_json::from_str::<Value>(&r.entry).unwrap())
        .filter(|r| r["outcome"] == "grant_revoked")
        .collect();
    assert_eq!(revoked.len(), 1);
    assert_eq!(revoked[0]["revoked_by"], "operator ops");
    assert_eq!(revoked[0]["user"], "alice");
}

/// The human is looking at this call's question when, elsewhere, a grant over the same
/// folder opens; they decline this call. On 2026-07-28 the decline arrives in a retry of
/// the call: the retry carries the answer to this very call, so the grant does not cover it.
async fn an_answer_given_while_a_grant_opened_elsewhere_is_honoured(era: ProtocolVersion) {
    let world = Arc::new(world());
    let (opener, opener_era) = (world.clone(), era.clone());
    let human = ScriptedHuman::new(era.clone());
    human.will(Answer::Decline);
    let observer = Observer::new(human.clone()).while_asked(move || {
        let (world, era) = (opener.clone(), opener_era.clone());
        // Another client of the same person, on its own runtime, while this form is shown.
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            runtime.block_on(open_reports_grant(&world, &era))
        })
        .join()
        .expect("the grant opens elsewhere");
    });
    let client = connect(server_for(&world, "alice"), observer).await;
    let result = call(&client, "delete_file", json!({"path": "reports/b.log"})).await;
    let _ = client.cancel().await;
    assert_natural(&result, Outcome::Declined);
    assert_eq!(grant_meta(&result), None, "{result:?}");
    assert!(
        world.file("reports/b.log").is_some(),
        "the decline of this call holds"
    );
    assert_eq!(
        world.file("reports/a.log"),
        None,
        "the grant did open elsewhere"
    );
}
