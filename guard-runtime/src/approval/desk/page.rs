//! What the page reads for the people at it: the view behind a link, whose a link is and
//! who may sign in through it, and a signed-in approver's inbox with the grants they hold.

use super::{Desk, LinkKey, digest, unavailable};
use crate::{
    approval::{
        ledger,
        refusal::Refusal,
        settle::person,
        view::{View, view_in},
    },
    person::Person,
};

impl Desk {
    /// The grants `person` holds, those that still cover calls first; none where the page
    /// has no guard's grants.
    pub async fn grants_of(&self, person: &Person) -> Result<Vec<crate::grant::Grant>, Refusal> {
        let Some(grants) = self.grants.get() else {
            return Ok(Vec::new());
        };
        grants
            .held_by(person, crate::store::now_ms(), 50)
            .await
            .map_err(unavailable)
    }

    /// Revokes `person`'s grant `id`: anyone else's is not found.
    pub async fn revoke_grant(
        &self,
        person: &Person,
        id: &str,
    ) -> Result<crate::grant::Revoked, Refusal> {
        let Some(grants) = self.grants.get() else {
            return Ok(crate::grant::Revoked::NotFound);
        };
        grants
            .revoke(
                id,
                crate::grant::Revoker::Holder(person),
                crate::store::now_ms(),
                &crate::trace::new_id(),
            )
            .await
            .map_err(unavailable)
    }

    /// The page behind `link`, or `None` for a link never issued (or purged). A `visit`
    /// (a person loading the page) is recorded the first time for each link.
    pub async fn view(&self, link: &str, visit: bool) -> Result<Option<View>, Refusal> {
        self.view_key(&LinkKey::of(link), visit).await
    }

    /// The page behind the link stored under `key`, as [`view`](Self::view) shows it.
    pub(in crate::approval) async fn view_key(
        &self,
        key: &LinkKey,
        visit: bool,
    ) -> Result<Option<View>, Refusal> {
        (in_tx!(self, |tx| {
            let mut events = Vec::new();
            let view = view_in(
                tx,
                &key.0,
                visit,
                (self.sign_in, &self.rules()),
                &mut events,
            )
            .await?;
            Ok((view, events))
        }))
        .map_err(unavailable)
    }

    /// The person `link` speaks for, if `csrf` is its token: someone signs in through it.
    pub async fn person_of(&self, link: &str, csrf: &str) -> Result<Person, Refusal> {
        let key = digest(link);
        let found = (in_tx!(self, |tx| {
            let Some(link) = ledger::link(tx, &key).await? else {
                return Ok((None, Vec::new()));
            };
            let record = ledger::approval(tx, &link.approval, false).await?;
            Ok((record.map(|r| (link, r)), Vec::new()))
        }))
        .map_err(unavailable)?;
        let (link, record) = found.ok_or(Refusal::UnknownLink)?;
        if digest(csrf) != digest(&link.csrf) {
            return Err(Refusal::BadCsrf);
        }
        Ok(person(&record, &link.role).clone())
    }

    /// Whether `person` may sign in through a link for `link_for` of the approval behind
    /// `link`: only as the link's own person, and never the requester through an
    /// approver's link.
    pub async fn may_sign_in(
        &self,
        link: &str,
        link_for: &Person,
        person: &Person,
    ) -> Result<(), Refusal> {
        if person.is(link_for) {
            return Ok(());
        }
        let key = digest(link);
        let requester = (in_tx!(self, |tx| {
            let Some(link) = ledger::link(tx, &key).await? else {
                return Ok((None, Vec::new()));
            };
            let record = ledger::approval(tx, &link.approval, false).await?;
            Ok((record.map(|r| r.requester), Vec::new()))
        }))
        .map_err(unavailable)?;
        if requester.is_some_and(|r| person.resembles(&r)) {
            return Err(Refusal::RequesterCannotApprove);
        }
        Err(Refusal::NotYourLink {
            link_for: link_for.user().to_owned(),
        })
    }

    /// What waits for `person`'s decision: each pending approval before its deadline on which
    /// they hold an approver link they have not used, the soonest deadline first, with the
    /// page that link shows. The requester holds no approver link, so their own requests
    /// never appear.
    pub async fn inbox(&self, person: &Person) -> Result<Vec<(String, View)>, Refusal> {
        (in_tx!(self, |tx| {
            let mut events = Vec::new();
            let now = ledger::now(tx).await?;
            let mut inbox = Vec::new();
            for (id, key) in ledger::waiting_for(tx, person, now).await? {
                if let Some(view) =
                    view_in(tx, &key, false, (self.sign_in, &self.rules()), &mut events).await?
                {
                    inbox.push((id, view));
                }
            }
            Ok((inbox, events))
        }))
        .map_err(unavailable)
    }

    /// The key of `person`'s approver link on approval `id`, or `None` when they hold none
    /// (the same answer for an approval that does not exist, so the inbox tells nobody
    /// which approvals exist).
    pub(in crate::approval) async fn link_of(
        &self,
        id: &str,
        person: &Person,
    ) -> Result<Option<LinkKey>, Refusal> {
        (in_tx!(self, |tx| {
            Ok((
                ledger::link_of(tx, id, person).await?.map(LinkKey),
                Vec::new(),
            ))
        }))
        .map_err(unavailable)
    }
}
