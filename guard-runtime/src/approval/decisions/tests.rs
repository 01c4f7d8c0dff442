use super::*;

fn key() -> SealKey {
    SealKey::derive(&[7; 32])
}

fn stored(required: u8) -> Stored {
    Stored {
        id: "a1".into(),
        tool: "deploy".into(),
        message: None,
        target: "production".into(),
        summary: "Deploy".into(),
        requester: Person::new("acme", "alice").unwrap(),
        trace_id: "t".into(),
        bound_sha256: "b".into(),
        fingerprint: Some("f".into()),
        expected: None,
        secret_label: None,
        required,
        created_at: 1,
        expires_at: 2,
        status: crate::approval::state::Status::Approved,
        typed: None,
    }
}

/// Whether a decision by `(tenant, user)` as `role`, sealed by guard's own key through a
/// link sealed by it too, counts on `record` for a page listing `listed`.
fn sealed_counts(
    record: &Stored,
    (tenant, user): (&str, &str),
    role: &str,
    listed: &[Person],
) -> Result<Person, &'static str> {
    let who = Person::new(tenant, user).unwrap();
    let link_seal = key().link(&record.id, role, &who, "l1");
    let seal = key().decision(record, &who, role, "APPROVE", "l1");
    let stated = Stated {
        tenant,
        user,
        verdict: "APPROVE",
        link: Some("l1"),
        seal: Some(&seal),
        role: Some(role),
        link_seal: Some(&link_seal),
    };
    let key = key();
    counts(
        &stated,
        record,
        &Rules {
            key: Some(&key),
            listed,
        },
    )
}

#[test]
fn even_sealed_only_listed_people_of_the_requesters_tenant_approve_for_someone_else() {
    let listed = [
        Person::new("acme", "bob").unwrap(),
        Person::new("other", "mallory").unwrap(),
    ];
    let two = stored(2);
    assert!(sealed_counts(&two, ("acme", "bob"), "APPROVER", &listed).is_ok());
    for (who, role) in [
        (("other", "mallory"), "APPROVER"),
        (("acme", "dave"), "APPROVER"),
        (("acme", "alice"), "APPROVER"),
        (("acme", "alice"), "REQUESTER"),
        (("acme", "bob"), "REQUESTER"),
        (("acme", "bob"), "OWNER"),
    ] {
        assert!(
            sealed_counts(&two, who, role, &listed).is_err(),
            "{who:?} as {role}"
        );
    }
    let one = stored(1);
    assert!(sealed_counts(&one, ("acme", "alice"), "REQUESTER", &listed).is_ok());
    assert!(sealed_counts(&one, ("acme", "bob"), "APPROVER", &listed).is_err());
    // A spelling guard never writes, sealed or not.
    assert_eq!(
        sealed_counts(&two, ("acme", "Bob"), "APPROVER", &listed).unwrap_err(),
        "a spelling guard never writes"
    );
}

mod handed_over {
    //! What the file's owner writes into a SQLite store (dropping its triggers first)
    //! never reaches a call: the hand-off counts only the decisions guard took.

    use std::{sync::Arc, time::Duration};

    use sha2::Digest;

    use super::super::super::{
        desk::{Decision, Desk, Opened, Request, Taken},
        state::Status,
    };
    use crate::{
        person::Person,
        store::{OperationStore, SqliteStore, now_ms},
    };

    fn acme(user: &str) -> Person {
        Person::new("acme", user).unwrap()
    }

    fn request(required: u8, bound_to: &str) -> Request {
        Request {
            tool: "deploy",
            message: None,
            target: "production".into(),
            summary: "Deploy v2 to production".into(),
            requester: acme("alice"),
            trace_id: "trace".into(),
            expected: None,
            required,
            secret: None,
            valid_for: Duration::from_secs(60),
            bound_to: bound_to.into(),
            fingerprint: "shown".into(),
        }
    }

    /// A desk listing bob and carol (and mallory of another tenant) on a store of its own,
    /// under the guard's key.
    fn desk() -> (Desk, Arc<dyn OperationStore>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn OperationStore> =
            Arc::new(SqliteStore::open(dir.path().join("guard.db")).unwrap());
        let listed = vec![
            acme("bob"),
            acme("carol"),
            Person::new("other", "mallory").unwrap(),
        ];
        let desk = Desk::new(Arc::default(), false, listed.clone());
        desk.attach(store.clone());
        desk.use_link_key([7; 32]);
        (desk, store, dir)
    }

    async fn approve(desk: &Desk, token: &str) -> Status {
        let csrf = desk.view(token, false).await.unwrap().unwrap().csrf;
        let approve = Decision::Approve {
            typed: None,
            secret: None,
        };
        desk.decide(token, &csrf, approve, None).await.unwrap()
    }

    fn token_of<'o>(opened: &'o Opened, user: &str) -> &'o str {
        let (_, token) = opened
            .approver_tokens
            .iter()
            .find(|(p, _)| p.user() == user)
            .unwrap();
        token
    }

    fn key(token: &str) -> String {
        crate::canonical::hex(&sha2::Sha256::digest(token.as_bytes()))
    }

    /// As the file's owner: every trigger dropped, then `sql` run.
    async fn as_owner(store: &Arc<dyn OperationStore>, sql: &[String]) {
        let mut tx = store.begin().await.unwrap();
        let triggers = tx
            .query("SELECT name FROM sqlite_master WHERE type = 'trigger'", &[])
            .await
            .unwrap();
        for trigger in &triggers {
            let name = trigger.text("name").unwrap().to_owned();
            tx.execute(&format!("DROP TRIGGER {name}"), &[])
                .await
                .unwrap();
        }
        for statement in sql {
            tx.execute(statement, &[]).await.unwrap();
        }
        tx.commit().await.unwrap();
    }

    /// A decision row on `id` naming `user` of `tenant`, through `link`, sealed `seal`.
    fn row(id: &str, (tenant, user): (&str, &str), link: &str, seal: &str, n: u32) -> String {
        format!(
            "INSERT INTO guard_approval_decisions
                 (approval_id, tenant, user_id, skeleton, decision, at, link_sha256, seal)
             VALUES ('{id}', '{tenant}', '{user}', 'forged-{n}', 'APPROVE', {}, '{link}', '{seal}')",
            now_ms()
        )
    }

    fn approved(id: &str) -> String {
        format!(
            "UPDATE guard_approvals SET status = 'APPROVED', ended_at = {} WHERE approval_id = '{id}'",
            now_ms()
        )
    }

    /// Reads column `column` of `who`'s decision on `id`.
    async fn column(store: &Arc<dyn OperationStore>, id: &str, who: &str, column: &str) -> String {
        let mut tx = store.begin().await.unwrap();
        let sql = format!(
            "SELECT {column} AS v FROM guard_approval_decisions WHERE approval_id = $1 AND user_id = $2"
        );
        let row = tx
            .query_opt(&sql, &[id.into(), who.into()])
            .await
            .unwrap()
            .unwrap();
        let value = row.text("v").unwrap().to_owned();
        tx.rollback().await.unwrap();
        value
    }

    #[tokio::test]
    async fn decisions_nobody_took_on_the_page_never_complete_an_approval() {
        let (desk, store, _dir) = desk();
        let opened = desk
            .open(
                request(2, "deploy production"),
                &[acme("bob"), acme("carol")],
            )
            .await
            .unwrap();
        let id = &opened.id;
        assert_eq!(
            approve(&desk, token_of(&opened, "bob")).await,
            Status::Pending
        );
        let bobs_seal = column(&store, id, "bob", "seal").await;
        let (bob_link, carol_link) = (
            key(token_of(&opened, "bob")),
            key(token_of(&opened, "carol")),
        );
        let requester_link = key(&opened.requester_token);
        let mallory_link = "ab".repeat(32);
        as_owner(
            &store,
            &[
                // (ii) a link and a decision for someone not listed.
                format!(
                    "INSERT INTO guard_approval_links (token_sha256, approval_id, role, tenant, user_id, csrf, seal)
                     VALUES ('{mallory_link}', '{id}', 'APPROVER', 'acme', 'mallory', 'c', '{bobs_seal}')"
                ),
                row(id, ("acme", "mallory"), &mallory_link, &bobs_seal, 1),
                // (i) the requester, through their own link, with bob's seal.
                row(id, ("acme", "alice"), &requester_link, &bobs_seal, 2),
                // (v) carol's name in another case, with an invisible character, and in
                // look-alike letters, through carol's link.
                row(id, ("acme", "Carol"), &carol_link, &bobs_seal, 3),
                row(id, ("acme", "car\u{200b}ol"), &carol_link, &bobs_seal, 4),
                row(id, ("acme", "\u{0441}arol"), &carol_link, &bobs_seal, 5),
                // (iv) bob's row, copied as carol's.
                row(id, ("acme", "carol"), &bob_link, &bobs_seal, 6),
                // (iii) and the status.
                approved(id),
            ],
        )
        .await;
        assert!(matches!(
            desk.take_answer(id, "t").await,
            Taken::NotApproved {
                counted: 1,
                required: 2,
                forged: 6
            }
        ));
        // Not taken up by the requester's next call either, and the page shows bob only.
        assert!(
            desk.find(&acme("alice"), "deploy production")
                .await
                .unwrap()
                .is_none()
        );
        let view = desk
            .view(&opened.requester_token, false)
            .await
            .unwrap()
            .unwrap();
        let given: Vec<&str> = view.given.iter().map(|g| g.who.user()).collect();
        assert_eq!(given, ["bob"]);
    }

    #[tokio::test]
    async fn a_decision_copied_from_another_approval_or_approver_never_counts() {
        let (desk, store, _dir) = desk();
        let people = [acme("bob"), acme("carol")];
        let first = desk
            .open(request(2, "deploy production"), &people)
            .await
            .unwrap();
        let other = desk
            .open(request(2, "deploy staging"), &people)
            .await
            .unwrap();
        approve(&desk, token_of(&other, "bob")).await;
        assert_eq!(
            approve(&desk, token_of(&other, "carol")).await,
            Status::Approved
        );
        assert_eq!(
            approve(&desk, token_of(&first, "bob")).await,
            Status::Pending
        );
        let carols_seal = column(&store, &other.id, "carol", "seal").await;
        let bobs_seal = column(&store, &first.id, "bob", "seal").await;
        let (carol_there, carol_here) = (
            key(token_of(&other, "carol")),
            key(token_of(&first, "carol")),
        );
        for copied in [
            // carol's row of the other approval, as it is, and moved onto her link here;
            row(&first.id, ("acme", "carol"), &carol_there, &carols_seal, 1),
            row(&first.id, ("acme", "carol"), &carol_here, &carols_seal, 1),
            // bob's seal here, on a row naming carol.
            row(&first.id, ("acme", "carol"), &carol_here, &bobs_seal, 1),
        ] {
            as_owner(
                &store,
                &[
                    format!(
                        "DELETE FROM guard_approval_decisions WHERE approval_id = '{}' AND user_id = 'carol'",
                        first.id
                    ),
                    copied.clone(),
                    approved(&first.id),
                ],
            )
            .await;
            assert!(
                matches!(
                    desk.take_answer(&first.id, "t").await,
                    Taken::NotApproved {
                        counted: 1,
                        required: 2,
                        forged: 1
                    }
                ),
                "{copied}"
            );
        }
        // The other approval, decided on the page, still hands its answer over.
        assert!(matches!(
            desk.take_answer(&other.id, "t").await,
            Taken::Answer(..)
        ));
    }

    #[tokio::test]
    async fn an_approval_marked_approved_without_decisions_runs_nothing() {
        let (desk, store, _dir) = desk();
        let two = desk
            .open(
                request(2, "deploy production"),
                &[acme("bob"), acme("carol")],
            )
            .await
            .unwrap();
        let one = desk.open(request(1, "deploy staging"), &[]).await.unwrap();
        let requester_link = key(&one.requester_token);
        as_owner(
            &store,
            &[
                approved(&two.id),
                row(
                    &one.id,
                    ("acme", "alice"),
                    &requester_link,
                    &"00".repeat(32),
                    1,
                ),
                approved(&one.id),
            ],
        )
        .await;
        assert!(matches!(
            desk.take_answer(&two.id, "t").await,
            Taken::NotApproved {
                counted: 0,
                required: 2,
                forged: 0
            }
        ));
        assert!(matches!(
            desk.take_answer(&one.id, "t").await,
            Taken::NotApproved {
                counted: 0,
                required: 1,
                forged: 1
            }
        ));
    }
}
