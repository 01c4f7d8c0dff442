//! The seals guard puts on what it issues and takes: each link, and each decision taken
//! through one. A seal is an HMAC-SHA256, under a key derived from the guard's key (which
//! the database never holds), over the approval's terms (id, tool, binding, effect,
//! requester, count, deadline), the person in canonical form, their role, the verdict and
//! the link it came through; so a row that whoever writes the tables added, or copied from
//! elsewhere, does not verify ([`super::decisions`]).

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use super::ledger::Stored;
use crate::person::Person;

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

    /// Whether `seal` is the seal of `who`'s `verdict` on `record`, through `link` as `role`.
    pub(super) fn decision_verifies(
        &self,
        record: &Stored,
        who: &Person,
        role: &str,
        verdict: &str,
        link: &str,
        seal: &str,
    ) -> bool {
        let terms = Terms::of(record);
        self.verifies(&terms.with(who, role, verdict, link), seal)
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

    #[test]
    fn parts_are_bound_with_their_lengths() {
        let bob = Person::new("acme", "bob").unwrap();
        let seal = key().link("a1", "APPROVER", &bob, "l1");
        // The same bytes split elsewhere are other parts.
        assert!(!key().link_verifies("a1A", "PPROVER", &bob, "l1", &seal));
    }
}
