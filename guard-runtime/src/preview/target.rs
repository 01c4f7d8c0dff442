//! What an effect acts on. One value plays three parts, and guard reads each through its
//! own method, so no part is taken for another: the words the human reads (which the audit
//! log's `target` field and the rows of undo windows, deferred calls and approvals record),
//! the key the re-check compares and a grant is keyed by, and the pin the handler acts on.

use sha2::{Digest, Sha256};

/// The target of one effect, as the author's preview resolved it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The target as the preview named it: what the human reads, and the pin the proof
    /// hands back to the handler. A preview that resolves its target to an identity names
    /// that identity (safe-ops names a file by its pin), so what the human confirmed is what
    /// the handler acts on.
    named: String,
    /// What the human does not read but must not change before the effect runs.
    state: String,
    /// The scope a grant covers, in the words the human reads.
    scope: Option<String>,
}

impl Target {
    /// A target named `named`, with no hidden state and no grant scope.
    pub(crate) fn new(named: impl Into<String>) -> Self {
        Self {
            named: named.into(),
            state: String::new(),
            scope: None,
        }
    }

    /// The same target with `state` the re-check compares too.
    pub(crate) fn with_state(self, state: String) -> Self {
        Self { state, ..self }
    }

    /// The same target, grantable over `words` (none if they are blank).
    pub(crate) fn with_scope(self, words: String) -> Self {
        Self {
            scope: Some(words).filter(|w| !w.trim().is_empty()),
            ..self
        }
    }

    /// What the human reads, and what the records name.
    pub(crate) fn shown(&self) -> &str {
        &self.named
    }

    /// What the handler acts on ([`crate::confirmed::Confirmed::target`]).
    pub(crate) fn pin(&self) -> &str {
        &self.named
    }

    /// The words a grant over this target is keyed by, if the preview stated any.
    pub(crate) fn grant_scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// The key the re-check compares: a digest of the target, what the human is `told` of
    /// the effect, the hidden state and, when there is one, the grant scope. It is sealed
    /// into an MRTR request state and stored with an approval or a deferred call, so a
    /// later round can tell whether the target changed since the human saw it.
    pub(crate) fn recheck_key(&self, told: &str) -> String {
        let mut hash = Sha256::new();
        for part in [self.named.as_str(), told, self.state.as_str()] {
            hash.update((part.len() as u64).to_be_bytes());
            hash.update(part.as_bytes());
        }
        // Only a scoped target hashes its scope, so unscoped keys stay as they were.
        if let Some(scope) = &self.scope {
            hash.update(b"scope");
            hash.update((scope.len() as u64).to_be_bytes());
            hash.update(scope.as_bytes());
        }
        crate::canonical::hex(&hash.finalize())
    }
}

#[cfg(test)]
mod tests {
    use super::Target;

    #[test]
    fn the_key_changes_with_every_part_and_a_blank_scope_is_none() {
        let base = Target::new("a.txt");
        let key = base.recheck_key("Delete a.txt");
        assert_ne!(key, base.recheck_key("Delete a.txt and b.txt"));
        assert_ne!(key, Target::new("b.txt").recheck_key("Delete a.txt"));
        let stated = base.clone().with_state("inode 7".into());
        assert_ne!(key, stated.recheck_key("Delete a.txt"));
        let scoped = base.clone().with_scope("files in /".into());
        assert_ne!(key, scoped.recheck_key("Delete a.txt"));
        assert_eq!(scoped.grant_scope(), Some("files in /"));
        let blank = base.clone().with_scope("  ".into());
        assert_eq!(blank.grant_scope(), None);
        assert_eq!(key, blank.recheck_key("Delete a.txt"));
    }

    #[test]
    fn the_key_keeps_the_digest_states_sealed_earlier_carry() {
        // SHA-256 of the length-prefixed ("thumbnails", "Wipe", ""): a request state or an
        // approval sealed before the target was a type is still answered.
        assert_eq!(
            Target::new("thumbnails").recheck_key("Wipe"),
            "47b69fcdb10120204f749b37022fc7491c2dbb6d79c4db39e6a6da2c92a1298d"
        );
    }
}
