use super::*;
use crate::approval::state::{Given, Status};

fn request(required: u8) -> Request {
    Request {
        tool: "deploy",
        message: None,
        target: "production".into(),
        summary: "Deploy v2 to production".into(),
        requester: Person::new("acme", "alice").unwrap(),
        trace_id: "trace".into(),
        expected: None,
        required,
        secret: None,
        valid_for: Duration::from_secs(60),
        bound_to: "deploy production".into(),
        fingerprint: "shown".into(),
    }
}

/// The answer handed over, if any.
fn answer(taken: Taken) -> Option<(Option<String>, Option<crate::secret::Secret>, Vec<Given>)> {
    match taken {
        Taken::Answer(typed, secret, given) => Some((typed, secret, given)),
        Taken::Used | Taken::Missing | Taken::NotApproved { .. } => None,
    }
}

fn people() -> Vec<Person> {
    ["alice", "bob", "carol", "bob"]
        .into_iter()
        .map(|u| Person::new("acme", u).unwrap())
        .chain([Person::new("other", "mallory").unwrap()])
        .collect()
}

/// A store in a directory of its own: the directory goes with the test.
fn store() -> (Arc<dyn OperationStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::SqliteStore::open(dir.path().join("guard.db")).unwrap();
    (Arc::new(store), dir)
}

fn desk_on(store: &Arc<dyn OperationStore>, sign_in: bool) -> Desk {
    let desk = Desk::new(Arc::default(), sign_in, people());
    desk.attach(store.clone());
    desk
}

fn desk() -> (Desk, tempfile::TempDir) {
    let (store, dir) = store();
    (desk_on(&store, false), dir)
}

fn approve() -> Decision {
    Decision::Approve {
        typed: None,
        secret: None,
    }
}

async fn csrf(desk: &Desk, link: &str) -> String {
    desk.view(link, true).await.unwrap().unwrap().csrf
}

/// The private directory, if this desk made one.
fn private_dir(desk: &Desk) -> Option<std::path::PathBuf> {
    desk.private.get().map(|p| p._dir.0.clone())
}

#[tokio::test]
async fn a_desk_given_a_store_never_makes_one_of_its_own() {
    let (desk, _dir) = desk();
    let opened = desk.open(request(1), &[]).await.unwrap();
    let t = &opened.requester_token;
    let csrf_t = csrf(&desk, t).await;
    desk.decide(t, &csrf_t, approve(), None).await.unwrap();
    desk.status(&opened.id).await.unwrap();
    assert_eq!(private_dir(&desk), None);
}

#[cfg(unix)]
#[tokio::test]
async fn a_desk_without_a_store_makes_its_own_on_first_use_and_removes_it() {
    use std::os::unix::fs::PermissionsExt;
    let desk = Desk::new(Arc::default(), false, people());
    assert_eq!(private_dir(&desk), None, "made before anything needed it");
    let opened = desk.open(request(1), &[]).await.unwrap();
    let dir = private_dir(&desk).expect("the first approval made the private store");
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{}", dir.display());
    let again = desk.open(request(1), &[]).await.unwrap();
    assert_eq!(private_dir(&desk), Some(dir.clone()), "made once");
    assert_eq!(desk.status(&opened.id).await.unwrap(), Status::Pending);
    assert_eq!(desk.status(&again.id).await.unwrap(), Status::Pending);
    drop(desk);
    assert!(!dir.exists(), "{} outlived the desk", dir.display());
}

#[tokio::test]
async fn links_go_to_distinct_approvers_of_the_tenant_other_than_the_requester() {
    let (desk, _dir) = desk();
    let opened = desk.open(request(2), &people()).await.unwrap();
    let users: Vec<_> = opened
        .approver_tokens
        .iter()
        .map(|(who, _)| who.user())
        .collect();
    assert_eq!(users, ["bob", "carol"]);
    let err = desk.open(request(3), &people()).await.err().unwrap();
    assert!(err.contains("needs 3 approvers"), "{err}");
}

#[tokio::test]
async fn two_approvals_from_two_people_and_each_link_once() {
    let (desk, _dir) = desk();
    let opened = desk.open(request(2), &people()).await.unwrap();
    let (bob, carol) = (&opened.approver_tokens[0].1, &opened.approver_tokens[1].1);
    let requester = &opened.requester_token;
    assert_eq!(
        desk.decide(requester, &csrf(&desk, requester).await, approve(), None)
            .await,
        Err(Refusal::RequesterCannotApprove)
    );
    assert_eq!(
        desk.decide(bob, "forged", approve(), None).await,
        Err(Refusal::BadCsrf)
    );
    assert_eq!(
        desk.decide(bob, &csrf(&desk, bob).await, approve(), None)
            .await,
        Ok(Status::Pending)
    );
    assert_eq!(
        desk.decide(bob, &csrf(&desk, bob).await, approve(), None)
            .await,
        Err(Refusal::LinkUsed)
    );
    assert_eq!(
        desk.decide("0".repeat(64).as_str(), "x", approve(), None)
            .await,
        Err(Refusal::UnknownLink)
    );
    assert_eq!(desk.status(&opened.id).await.unwrap(), Status::Pending);
    assert_eq!(
        desk.decide(carol, &csrf(&desk, carol).await, approve(), None)
            .await,
        Ok(Status::Approved)
    );
    assert_eq!(desk.status(&opened.id).await.unwrap(), Status::Approved);
    // A link still unused, replayed after the approval ended, changes nothing.
    assert_eq!(
        desk.decide(
            requester,
            &csrf(&desk, requester).await,
            Decision::Reject,
            None
        )
        .await,
        Err(Refusal::AlreadyDecided)
    );
    assert_eq!(desk.status(&opened.id).await.unwrap(), Status::Approved);
    let (_, _, given) = answer(desk.take_answer(&opened.id, "t").await).unwrap();
    let who: Vec<_> = given.iter().map(|g| g.who.user()).collect();
    assert_eq!(who, ["bob", "carol"]);
}

#[tokio::test]
async fn a_closed_approval_takes_no_decision_and_an_approved_one_stays_approved() {
    let (desk, _dir) = desk();
    let opened = desk.open(request(1), &[]).await.unwrap();
    let t = &opened.requester_token;
    let csrf_t = csrf(&desk, t).await;
    assert_eq!(
        desk.close(&opened.id, Status::Expired).await,
        Status::Expired
    );
    assert_eq!(
        desk.decide(t, &csrf_t, approve(), None).await,
        Err(Refusal::Expired)
    );

    let opened = desk.open(request(1), &[]).await.unwrap();
    let t = &opened.requester_token;
    let csrf_t = csrf(&desk, t).await;
    assert_eq!(
        desk.decide(t, &csrf_t, approve(), None).await,
        Ok(Status::Approved)
    );
    assert_eq!(
        desk.close(&opened.id, Status::Expired).await,
        Status::Approved
    );
}

#[tokio::test]
async fn a_typed_name_and_the_secret_are_checked_before_an_approval_counts() {
    let (desk, _dir) = desk();
    let opened = desk
        .open(
            Request {
                expected: Some("production".into()),
                secret: Some("Deploy token"),
                ..request(1)
            },
            &[],
        )
        .await
        .unwrap();
    let t = &opened.requester_token;
    let csrf_t = csrf(&desk, t).await;
    let typed = |typed: &str, secret: &str| Decision::Approve {
        typed: Some(typed.into()),
        secret: Some(secret.into()),
    };
    assert!(matches!(
        desk.decide(t, &csrf_t, typed("producti\u{200b}on", "tok"), None)
            .await,
        Err(Refusal::TypedMismatch(_))
    ));
    assert!(matches!(
        desk.decide(t, &csrf_t, typed("staging", "tok"), None).await,
        Err(Refusal::TypedMismatch(_))
    ));
    assert_eq!(
        desk.decide(t, &csrf_t, typed("production", ""), None).await,
        Err(Refusal::SecretMissing)
    );
    assert_eq!(
        desk.decide(t, &csrf_t, typed("production", "tok"), None)
            .await,
        Ok(Status::Approved)
    );
    let (typed, secret, _) = answer(desk.take_answer(&opened.id, "t").await).unwrap();
    assert_eq!(typed.as_deref(), Some("production"));
    assert_eq!(secret.unwrap().expose(), "tok");
    // Handed over once: an approval that needs a secret has no answer without it.
    assert!(answer(desk.take_answer(&opened.id, "t").await).is_none());
}

#[tokio::test]
async fn only_the_requester_with_the_same_binding_may_wait_for_an_approval() {
    let (desk, _dir) = desk();
    let opened = desk.open(request(1), &[]).await.unwrap();
    let alice = Person::new("acme", "Alice").unwrap();
    let watched = desk
        .watch(&opened.id, &alice, "deploy production")
        .await
        .unwrap();
    assert_eq!(watched.expires_at, opened.expires_at);
    assert_eq!(watched.fingerprint.as_deref(), Some("shown"));
    let dave = Person::new("acme", "dave").unwrap();
    let other_tenant = Person::new("other", "alice").unwrap();
    for (who, bound) in [
        (&dave, "deploy production"),
        (&other_tenant, "deploy production"),
        (&alice, "deploy staging"),
    ] {
        assert_eq!(
            desk.watch(&opened.id, who, bound).await.err(),
            Some(Claim::NotYours)
        );
    }
    assert_eq!(
        desk.watch(&"0".repeat(64), &alice, "deploy production")
            .await
            .err(),
        Some(Claim::Unknown)
    );
}

#[tokio::test]
async fn one_person_under_other_spellings_or_a_look_alike_is_one_person() {
    let (desk, _dir) = desk();
    // The requester listed again as `Alice`, bob twice, and carol's look-alikes.
    let listed: Vec<Person> = [
        "Alice",
        "bob",
        "BOB",
        "\u{FF42}\u{FF4F}\u{FF42}",
        "carol",
        "\u{441}\u{430}rol",
        "al\u{131}ce",
    ]
    .into_iter()
    .map(|u| Person::new("ACME", u).unwrap())
    .collect();
    let opened = desk.open(request(2), &listed).await.unwrap();
    let users: Vec<_> = opened
        .approver_tokens
        .iter()
        .map(|(who, _)| who.user())
        .collect();
    assert_eq!(
        users,
        ["bob", "carol"],
        "each person once, never the requester"
    );
    let err = desk.open(request(3), &listed).await.err().unwrap();
    assert!(err.contains("knows 2 other people"), "{err}");
}

#[tokio::test]
async fn with_sign_in_only_the_links_own_person_decides_and_never_the_requester() {
    let (store, _dir) = store();
    let desk = desk_on(&store, true);
    let opened = desk.open(request(2), &people()).await.unwrap();
    let (bob, carol) = (&opened.approver_tokens[0].1, &opened.approver_tokens[1].1);
    let as_ = |u: &str| Person::new("acme", u).unwrap();
    let bob_csrf = csrf(&desk, bob).await;
    assert_eq!(
        desk.decide(bob, &bob_csrf, approve(), None).await,
        Err(Refusal::SignInRequired),
        "the link alone proves nothing"
    );
    assert_eq!(
        desk.decide(bob, &bob_csrf, approve(), Some(&as_("ALICE")))
            .await,
        Err(Refusal::RequesterCannotApprove),
        "the requester holding bob's link"
    );
    assert_eq!(
        desk.decide(bob, &bob_csrf, approve(), Some(&as_("carol")))
            .await,
        Err(Refusal::NotYourLink {
            link_for: "bob".into()
        })
    );
    assert_eq!(
        desk.decide(bob, &bob_csrf, approve(), Some(&as_("Bob")))
            .await,
        Ok(Status::Pending)
    );
    let carol_csrf = csrf(&desk, carol).await;
    assert_eq!(
        desk.decide(carol, &carol_csrf, approve(), Some(&as_("carol")))
            .await,
        Ok(Status::Approved)
    );
}

/// A desk started afresh on the same store (a restarted process, or another replica)
/// serves the same links, keeps the decisions taken before, and takes the rest.
#[tokio::test]
async fn another_desk_on_the_same_store_serves_the_same_approval() {
    let (store, _dir) = store();
    // Both hold the guard's key, as a restarted server or a replica does.
    let before = desk_on(&store, false);
    before.use_link_key([7; 32]);
    let opened = before.open(request(2), &people()).await.unwrap();
    let (bob, carol) = (&opened.approver_tokens[0].1, &opened.approver_tokens[1].1);
    assert_eq!(
        before
            .decide(bob, &csrf(&before, bob).await, approve(), None)
            .await,
        Ok(Status::Pending)
    );
    drop(before);

    let after = desk_on(&store, false);
    after.use_link_key([7; 32]);
    let view = after.view(bob, false).await.unwrap().unwrap();
    assert!(view.used, "bob's link stays used");
    assert_eq!(view.given.len(), 1);
    assert_eq!(
        after.decide(bob, &view.csrf, approve(), None).await,
        Err(Refusal::LinkUsed)
    );
    assert_eq!(
        after
            .decide(carol, &csrf(&after, carol).await, approve(), None)
            .await,
        Ok(Status::Approved)
    );
    let alice = Person::new("acme", "alice").unwrap();
    assert!(
        after
            .watch(&opened.id, &alice, "deploy production")
            .await
            .is_ok()
    );
    let (_, _, given) = answer(after.take_answer(&opened.id, "t").await).unwrap();
    assert_eq!(given.len(), 2);
}

/// The deadline is the database's: an approval past it reads as expired, is recorded
/// once as such, and takes no decision.
#[tokio::test]
async fn an_approval_past_its_deadline_expires_and_takes_no_decision() {
    let (desk, _dir) = desk();
    let opened = desk
        .open(
            Request {
                valid_for: Duration::from_millis(50),
                ..request(1)
            },
            &[],
        )
        .await
        .unwrap();
    let t = &opened.requester_token;
    let csrf_t = csrf(&desk, t).await;
    tokio::time::sleep(Duration::from_millis(120)).await;
    assert_eq!(
        desk.decide(t, &csrf_t, approve(), None).await,
        Err(Refusal::Expired)
    );
    assert_eq!(desk.status(&opened.id).await.unwrap(), Status::Expired);
    assert!(answer(desk.take_answer(&opened.id, "t").await).is_none());
}

/// A later call of the requester finds the approval by person and binding, with the
/// same link (derived from the id under the key), until it is used, and never when it
/// ended otherwise.
#[tokio::test]
async fn an_approval_whose_secret_another_process_holds_is_not_taken_up() {
    let (store, _dir) = store();
    let (served, other) = (desk_on(&store, false), desk_on(&store, false));
    for desk in [&served, &other] {
        desk.use_link_key([7; 32]);
    }
    let opened = served
        .open(
            Request {
                secret: Some("Deploy token"),
                ..request(1)
            },
            &[],
        )
        .await
        .unwrap();
    let t = &opened.requester_token;
    let secret = Decision::Approve {
        typed: None,
        secret: Some("s3cret".into()),
    };
    served
        .decide(t, &csrf(&served, t).await, secret, None)
        .await
        .unwrap();
    let alice = Person::new("acme", "alice").unwrap();
    // The process that took the secret runs it; another one (a replica, or this one
    // restarted) lets a new call ask anew instead of finding an approval it cannot run.
    assert!(
        other
            .find(&alice, "deploy production")
            .await
            .unwrap()
            .is_none()
    );
    let found = served
        .find(&alice, "deploy production")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((found.id, found.status), (opened.id, Status::Approved));
}

#[tokio::test]
async fn the_requesters_next_call_finds_the_approval_and_it_runs_once() {
    let (store, _dir) = store();
    let desk = desk_on(&store, false);
    desk.use_link_key([7; 32]);
    let opened = desk.open(request(1), &[]).await.unwrap();
    let alice = Person::new("ACME", "\u{FF21}lice").unwrap();
    let found = desk
        .find(&alice, "deploy production")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.id, opened.id);
    assert_eq!(found.status, Status::Pending);
    assert_eq!(found.fingerprint.as_deref(), Some("shown"));
    assert_eq!(
        found.requester_token.as_deref(),
        Some(opened.requester_token.as_str())
    );
    // Another replica with the same key derives the same link; one with another key
    // cannot, and finds no link to send the requester to.
    let replica = desk_on(&store, false);
    replica.use_link_key([7; 32]);
    let seen = replica
        .find(&alice, "deploy production")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(seen.requester_token, found.requester_token);
    let stranger = desk_on(&store, false);
    stranger.use_link_key([8; 32]);
    let unseen = stranger
        .find(&alice, "deploy production")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(unseen.requester_token, None);
    for (who, bound) in [
        (Person::new("acme", "dave").unwrap(), "deploy production"),
        (
            Person::new("other-tenant", "alice").unwrap(),
            "deploy production",
        ),
        (alice.clone(), "deploy staging"),
    ] {
        assert!(desk.find(&who, bound).await.unwrap().is_none());
    }

    let t = &opened.requester_token;
    desk.decide(t, &csrf(&desk, t).await, approve(), None)
        .await
        .unwrap();
    let found = replica
        .find(&alice, "deploy production")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.status, Status::Approved);
    assert!(answer(replica.take_answer(&opened.id, "first").await).is_some());
    assert!(matches!(
        desk.take_answer(&opened.id, "second").await,
        Taken::Used
    ));
    assert!(
        desk.find(&alice, "deploy production")
            .await
            .unwrap()
            .is_none()
    );

    let withdrawn = desk.open(request(1), &[]).await.unwrap();
    desk.close(&withdrawn.id, Status::Withdrawn).await;
    assert!(
        desk.find(&alice, "deploy production")
            .await
            .unwrap()
            .is_none()
    );
}

/// A task keeps the arguments it was made with, runs under one claim at a time (a stale
/// claim is taken over), ends once, and a cancellation yields to a claimed run; a task
/// cancelled before any run hands its approval's answer to nobody.
#[tokio::test]
async fn a_task_runs_under_one_claim_ends_once_and_a_cancelled_one_runs_nothing() {
    let (desk, _dir) = desk();
    let minute = Duration::from_secs(60);
    let opened = desk.open(request(1), &[]).await.unwrap();
    desk.make_task(&opened.id, "{}").await.unwrap();
    desk.make_task(&opened.id, r#"{"x":1}"#).await.unwrap();
    let view = desk.task(&opened.id).await.unwrap().unwrap();
    assert_eq!(
        (view.arguments.as_str(), view.status),
        ("{}", Status::Pending)
    );
    let t = &opened.requester_token;
    desk.decide(t, &csrf(&desk, t).await, approve(), None)
        .await
        .unwrap();
    assert!(desk.claim_run(&opened.id, "one", minute).await.unwrap());
    assert!(!desk.claim_run(&opened.id, "two", minute).await.unwrap());
    assert!(
        desk.claim_run(&opened.id, "three", Duration::ZERO)
            .await
            .unwrap(),
        "a stale claim is taken over"
    );
    assert!(
        !desk.cancel_task(&opened.id, "{}").await.unwrap(),
        "a claimed run ends the task itself"
    );
    desk.end_task(&opened.id, "completed", r#"{"content":[]}"#)
        .await
        .unwrap();
    desk.end_task(&opened.id, "failed", "{}").await.unwrap();
    let view = desk.task(&opened.id).await.unwrap().unwrap();
    assert_eq!(
        view.ended,
        Some(("completed".to_owned(), r#"{"content":[]}"#.to_owned()))
    );
    assert!(
        !desk
            .claim_run(&opened.id, "four", Duration::ZERO)
            .await
            .unwrap()
    );

    let cancelled = desk.open(request(1), &[]).await.unwrap();
    desk.make_task(&cancelled.id, "{}").await.unwrap();
    let t = &cancelled.requester_token;
    desk.decide(t, &csrf(&desk, t).await, approve(), None)
        .await
        .unwrap();
    assert!(desk.cancel_task(&cancelled.id, "{}").await.unwrap());
    assert!(answer(desk.take_answer(&cancelled.id, "t").await).is_none());
    assert!(
        !desk
            .claim_run(&cancelled.id, "r", Duration::ZERO)
            .await
            .unwrap()
    );
    assert!(desk.task(&"0".repeat(64)).await.unwrap().is_none());
    // Not a task: an approval without one is no task.
    let plain = desk.open(request(1), &[]).await.unwrap();
    assert!(desk.task(&plain.id).await.unwrap().is_none());
}

#[tokio::test]
async fn the_inbox_lists_its_holders_grants_and_only_the_holder_revokes_them() {
    use crate::grant::{Grants, Revoked};
    let (store, _dir) = store();
    let desk = desk_on(&store, true);
    let alice = Person::new("acme", "Alice").unwrap();
    let bob = Person::new("acme", "bob").unwrap();
    // No grants attached: an empty list, and nothing to revoke.
    assert!(desk.grants_of(&alice).await.unwrap().is_empty());
    let grants = Grants::new(
        store.clone(),
        crate::audit::AuditLog::shared(store.clone(), "test"),
    );
    desk.attach_grants(grants.clone());
    let opened = grants
        .open(
            &alice,
            "delete_file",
            "files directly in folder logs/",
            &serde_json::json!({"confirm": true}),
            (5, Duration::from_secs(600)),
            crate::store::now_ms(),
            "t",
        )
        .await
        .unwrap();
    let listed = desk.grants_of(&alice).await.unwrap();
    assert_eq!(listed, std::slice::from_ref(&opened));
    assert!(
        desk.grants_of(&bob).await.unwrap().is_empty(),
        "bob holds none"
    );
    assert_eq!(
        desk.revoke_grant(&bob, &opened.grant_id).await.unwrap(),
        Revoked::NotFound,
        "anyone else's grant is not found"
    );
    let Revoked::Now(revoked) = desk.revoke_grant(&alice, &opened.grant_id).await.unwrap() else {
        panic!("alice revokes her own grant");
    };
    assert_eq!(
        revoked.revoked.map(|(_, by)| by),
        Some("acme/alice".to_owned())
    );
    assert!(!desk.grants_of(&alice).await.unwrap()[0].active_at(crate::store::now_ms()));
}
