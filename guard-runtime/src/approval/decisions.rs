//! The decisions an approval counts: only those guard took, through a link it issued, from
//! someone the rules let decide. The database holds approvals' rows, and whoever can write
//! them as the server's own role (or as a SQLite file's owner, who can drop its triggers)
//! could add a decision nobody took, name a person who never decided, or mark an approval
//! `APPROVED`. So guard never counts a row because it is there:
//!
//! - each link guard issues, and each decision it takes, carries a seal: an HMAC-SHA256,
//!   under a key derived from the guard's key (which the database never holds), over the
//!   approval's terms (id, tool, binding, effect, requester, count, deadline), the person
//!   in canonical form, their role, the verdict and the link it came through;
//! - at every hand-off of an approval to its call (a push call, an MRTR retry, a task's
//!   run, a later call taking it up) the decisions are read again and one counts only if
//!   both seals verify, its name is the canonical spelling guard writes, and its person may
//!   decide: the requester of a one-person approval through the requester's link, or an
//!   approver the page lists (in the requester's tenant, never the requester or a
//!   look-alike) through their own link. Two decisions of one person (or look-alikes)
//!   count once. The stored `status` is never enough on its own.
//!
//! Every other row is ignored, and named in the audit log as forged
//! (`approval_forged`) where an approval is handed over. Decisions stored before guard
//! sealed them carry no seal and count for nothing.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use super::{desk::Given, journal::Subject, ledger, ledger::Stored};
use crate::{
    audit::Event,
    outcome::{ApprovalEvent, Outcome},
    person::Person,
    store::{StoreError, Tx},
};

/// The key links and decisions are sealed with: derived from the guard's key, so replicas
/// sharing that key verify each other's seals, and never stored.
#[derive(Clone)]
pub(crate) struct SealKey([u8; 32]);

impl SealKey {
    /// The key derived from `link_key` (itself derived from the guard's key).
    pub(super) fn derive(link_key: &[u8; 32]) -> Self {
        let mut mac = Hmac::<Sha256>::new_from_slice(link_key).expect("HMAC takes any key");
        mac.update(b"guard/v1 approval seals");
        Self(mac.finalize().into_bytes().into())
    }

    /// A key of this process only, for a page no guard handed its key to.
    pub(super) fn random() -> Result<Self, String> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| format!("the system random source failed: {e}"))?;
        Ok(Self(key))
    }

    /// The seal of the link `link` (its token's SHA-256) guard issues on approval `id` to
    /// `who` as `role` (`REQUESTER` or `APPROVER`).
    pub(super) fn link(&self, id: &str, role: &str, who: &Person, link: &str) -> String {
        self.seal(&["link", id, role, who.tenant(), who.user(), link])
    }

    /// Whether `seal` is the seal of that link.
    pub(super) fn link_verifies(
        &self,
        id: &str,
        role: &str,
        who: &Person,
        link: &str,
        seal: &str,
    ) -> bool {
        self.verifies(&["link", id, role, who.tenant(), who.user(), link], seal)
    }

    /// The seal of `who`'s `verdict` (`APPROVE` or `REJECT`) on `record`, through `link` as
    /// `role`.
    pub(super) fn decision(
        &self,
        record: &Stored,
        who: &Person,
        role: &str,
        verdict: &str,
        link: &str,
    ) -> String {
        let terms = Terms::of(record);
        self.seal(&terms.with(who, role, verdict, link))
    }

    fn mac(&self, parts: &[&str]) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key");
        mac.update(b"guard/v1 approval\0");
        // Each part with its length first: no two lists of parts read alike.
        for part in parts {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part.as_bytes());
        }
        mac
    }

    fn seal(&self, parts: &[&str]) -> String {
        crate::canonical::hex(&self.mac(parts).finalize().into_bytes())
    }

    /// Compared in constant time, on the bytes the hex spells.
    fn verifies(&self, parts: &[&str], seal: &str) -> bool {
        match unhex(seal) {
            Some(bytes) => self.mac(parts).verify_slice(&bytes).is_ok(),
            None => false,
        }
    }
}

/// What a decision's seal binds of its approval, as text.
struct Terms {
    parts: [String; 9],
}

impl Terms {
    fn of(record: &Stored) -> Self {
        Self {
            parts: [
                "decision".to_owned(),
                record.id.clone(),
                record.tool.clone(),
                record.bound_sha256.clone(),
                record.fingerprint.clone().unwrap_or_default(),
                record.requester.tenant().to_owned(),
                record.requester.user().to_owned(),
                record.required.to_string(),
                record.expires_at.to_string(),
            ],
        }
    }

    fn with<'a>(
        &'a self,
        who: &'a Person,
        role: &'a str,
        verdict: &'a str,
        link: &'a str,
    ) -> Vec<&'a str> {
        let mut parts: Vec<&str> = self.parts.iter().map(String::as_str).collect();
        parts.extend([who.tenant(), who.user(), role, verdict, link]);
        parts
    }
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Who may decide: the seal key (none where this page never sealed anything) and the
/// approvers the page lists.
pub(super) struct Rules<'a> {
    pub key: Option<&'a SealKey>,
    pub listed: &'a [Person],
}

/// A decision row that does not count, and why.
pub(super) struct Forged {
    pub tenant: String,
    pub user: String,
    pub verdict: String,
    pub why: &'static str,
}

/// An approval's decisions, read again: those that count, and the rows that do not.
pub(super) struct Tally {
    /// Approvals that count, in the order they arrived, one per person.
    pub approvals: Vec<Given>,
    /// People whose rejection (or, for the requester, withdrawal) counts.
    pub rejections: Vec<Person>,
    pub forged: Vec<Forged>,
}

/// The records of an approval the store marks approved that `tally` finds short of
/// `required`: one `approval_forged` for the status (with what counted), and one naming
/// each row that did not count. Each is also a tracing warning, for the operator to find
/// what writes to the tables.
pub(super) fn not_approved_events(subject: &Subject, tally: &Tally, required: u8) -> Vec<Event> {
    tracing::warn!(
        approval_id = %subject.approval_id,
        counted = tally.approvals.len(),
        required,
        "an approval the store marks APPROVED lacks the decisions guard took; nothing runs on it"
    );
    let status = subject
        .event(Outcome::Approval(ApprovalEvent::Forged), None)
        .field("status", "APPROVED")
        .field("counted", tally.approvals.len())
        .field("required", required);
    let rows = tally.forged.iter().map(|row| {
        tracing::warn!(
            approval_id = %subject.approval_id,
            tenant = %row.tenant,
            user = %row.user,
            decision = %row.verdict,
            why = row.why,
            "an approval decision guard never took was ignored: something other than guard wrote to the approval tables"
        );
        subject
            .event(Outcome::Approval(ApprovalEvent::Forged), None)
            .field("named", row.user.as_str())
            .field("named_tenant", row.tenant.as_str())
            .field("decision", row.verdict.as_str())
            .field("why", row.why)
    });
    std::iter::once(status).chain(rows).collect()
}

/// Reads `record`'s decisions with the links they name, and counts them under `rules`.
pub(super) async fn tally(
    tx: &mut Tx,
    record: &Stored,
    rules: &Rules<'_>,
) -> Result<Tally, StoreError> {
    let rows = tx
        .query(
            "SELECT d.tenant, d.user_id, d.decision, d.at, d.link_sha256, d.seal,
                    l.role, l.seal AS link_seal
             FROM guard_approval_decisions d
             LEFT JOIN guard_approval_links l
               ON l.token_sha256 = d.link_sha256 AND l.approval_id = d.approval_id
              AND l.tenant = d.tenant AND l.user_id = d.user_id
             WHERE d.approval_id = $1 ORDER BY d.at, d.user_id",
            &[record.id.as_str().into()],
        )
        .await?;
    let mut tally = Tally {
        approvals: Vec::new(),
        rejections: Vec::new(),
        forged: Vec::new(),
    };
    for row in &rows {
        let verdict = row.text("decision")?;
        let stated = Stated {
            tenant: row.text("tenant")?,
            user: row.text("user_id")?,
            verdict,
            link: row.opt_text("link_sha256")?,
            seal: row.opt_text("seal")?,
            role: row.opt_text("role")?,
            link_seal: row.opt_text("link_seal")?,
        };
        match counts(&stated, record, rules) {
            Ok(who) if verdict == "APPROVE" => {
                if !tally.approvals.iter().any(|g| g.who.resembles(&who)) {
                    tally.approvals.push(Given {
                        who,
                        at: ledger::system_time(row.int("at")?),
                    });
                }
            }
            Ok(who) => tally.rejections.push(who),
            Err(why) => tally.forged.push(Forged {
                tenant: stated.tenant.to_owned(),
                user: stated.user.to_owned(),
                verdict: verdict.to_owned(),
                why,
            }),
        }
    }
    Ok(tally)
}

/// One decision row as stored, with the link it names.
struct Stated<'r> {
    tenant: &'r str,
    user: &'r str,
    verdict: &'r str,
    link: Option<&'r str>,
    seal: Option<&'r str>,
    role: Option<&'r str>,
    link_seal: Option<&'r str>,
}

/// The person whose decision `row` is, if it counts on `record`; else why not, as the
/// audit log says it.
fn counts(row: &Stated<'_>, record: &Stored, rules: &Rules<'_>) -> Result<Person, &'static str> {
    let who = Person::new(row.tenant, row.user).map_err(|_| "a name guard refuses")?;
    if who.tenant() != row.tenant || who.user() != row.user {
        return Err("a spelling guard never writes");
    }
    let (Some(link), Some(role), Some(link_seal)) = (row.link, row.role, row.link_seal) else {
        return Err("no link guard issued for this person");
    };
    let Some(key) = rules.key else {
        return Err("not sealed by this server");
    };
    if !key.link_verifies(&record.id, role, &who, link, link_seal) {
        return Err("its link was not issued by guard");
    }
    let sealed = Terms::of(record);
    let parts = sealed.with(&who, role, row.verdict, link);
    if !row.seal.is_some_and(|seal| key.verifies(&parts, seal)) {
        return Err("its seal does not verify");
    }
    match role {
        "REQUESTER" if !who.is(&record.requester) => Err("a requester's link of someone else"),
        "REQUESTER" if row.verdict == "APPROVE" && record.required > 1 => {
            Err("the requester, who cannot approve their own request")
        }
        "REQUESTER" => Ok(who),
        "APPROVER" if record.required == 1 => {
            Err("an approver on an approval the requester decides")
        }
        "APPROVER" if who.tenant() != record.requester.tenant() => {
            Err("an approver of another tenant than the requester's")
        }
        "APPROVER" if who.resembles(&record.requester) => {
            Err("the requester, who cannot approve their own request")
        }
        "APPROVER" if !rules.listed.iter().any(|listed| listed.is(&who)) => {
            Err("not an approver the page lists")
        }
        "APPROVER" => Ok(who),
        _ => Err("a role guard never writes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SealKey {
        SealKey::derive(&[7; 32])
    }

    #[test]
    fn a_seal_verifies_only_for_what_it_was_made_over() {
        let bob = Person::new("acme", "bob").unwrap();
        let carol = Person::new("acme", "carol").unwrap();
        let seal = key().link("a1", "APPROVER", &bob, "l1");
        assert!(key().link_verifies("a1", "APPROVER", &bob, "l1", &seal));
        for (id, role, who, link) in [
            ("a2", "APPROVER", &bob, "l1"),
            ("a1", "REQUESTER", &bob, "l1"),
            ("a1", "APPROVER", &carol, "l1"),
            ("a1", "APPROVER", &bob, "l2"),
        ] {
            assert!(
                !key().link_verifies(id, role, who, link, &seal),
                "{id} {role} {link}"
            );
        }
        let other = SealKey::derive(&[8; 32]);
        assert!(!other.link_verifies("a1", "APPROVER", &bob, "l1", &seal));
        assert!(!key().link_verifies("a1", "APPROVER", &bob, "l1", "not hex"));
        assert!(!key().link_verifies("a1", "APPROVER", &bob, "l1", ""));
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
            status: super::super::desk::Status::Approved,
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

        use super::super::super::desk::{Decision, Desk, Opened, Request, Status, Taken};
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
        async fn column(
            store: &Arc<dyn OperationStore>,
            id: &str,
            who: &str,
            column: &str,
        ) -> String {
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

    #[test]
    fn parts_are_bound_with_their_lengths() {
        let bob = Person::new("acme", "bob").unwrap();
        let seal = key().link("a1", "APPROVER", &bob, "l1");
        // The same bytes split elsewhere are other parts.
        assert!(!key().link_verifies("a1A", "PPROVER", &bob, "l1", &seal));
    }
}
