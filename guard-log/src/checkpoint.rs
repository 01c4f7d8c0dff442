//! Signed checkpoints: a tree head (origin, size, root) as a C2SP `tlog-checkpoint`, signed
//! with Ed25519 as a C2SP signed note. Plain text, so it can leave the database: a file, a
//! ticket, stdout, an HTTP endpoint a monitor polls. Whoever keeps an old checkpoint can
//! later prove the log still contains it.
//!
//! ```text
//! guard audit log
//! 1024
//! <base64 root hash>
//!
//! — audit-key <base64(key id || signature)>
//! ```
//!
//! Keys use the signed-note encodings: `PRIVATE+KEY+<name>+<id>+<base64>` for the signer
//! (keep it secret, outside the database) and `<name>+<id>+<base64>` for verifiers.

use base64::{Engine, engine::general_purpose::STANDARD as B64};
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};

pub use super::note::CheckpointError;
use super::{
    merkle::Hash,
    note::{self, ED25519, KnownKey, key_id, key_text, parse_key, valid_name},
};

/// Signs checkpoints. Its text form starts with `PRIVATE+KEY+`.
pub struct CheckpointSigner {
    name: String,
    key: SigningKey,
}

/// Checks checkpoint signatures: the public half of a [`CheckpointSigner`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointVerifier {
    name: String,
    key: VerifyingKey,
}

/// A fresh Ed25519 key named `name` (no spaces, no `+`).
pub(crate) fn generate_key(name: &str) -> Result<SigningKey, CheckpointError> {
    if !valid_name(name) {
        return Err(CheckpointError::BadKey(
            "the name is empty or has spaces or +",
        ));
    }
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed)
        .map_err(|_| CheckpointError::BadKey("the system random source failed"))?;
    Ok(SigningKey::from_bytes(&seed))
}

/// Reads a `PRIVATE+KEY+…` text of signature type `kind`.
pub(crate) fn parse_signer(text: &str, kind: u8) -> Result<(String, SigningKey), CheckpointError> {
    let rest = text
        .trim()
        .strip_prefix("PRIVATE+KEY+")
        .ok_or(CheckpointError::BadKey(
            "a signer key starts with PRIVATE+KEY+",
        ))?;
    let (name, id, seed) = parse_key(rest, kind)?;
    let key = SigningKey::from_bytes(&seed);
    if key_id(&name, kind, key.verifying_key().as_bytes()) != id {
        return Err(CheckpointError::BadKey("the key id does not match the key"));
    }
    Ok((name, key))
}

/// Reads a verifier key text of signature type `kind`.
pub(crate) fn parse_verifier(
    text: &str,
    kind: u8,
) -> Result<(String, VerifyingKey), CheckpointError> {
    let (name, id, public) = parse_key(text, kind)?;
    if key_id(&name, kind, &public) != id {
        return Err(CheckpointError::BadKey("the key id does not match the key"));
    }
    let key = VerifyingKey::from_bytes(&public)
        .map_err(|_| CheckpointError::BadKey("not a valid Ed25519 public key"))?;
    Ok((name, key))
}

/// Whether `signature` is `key`'s strict Ed25519 signature of `message`.
pub(crate) fn ed25519_signs(key: &VerifyingKey, message: &[u8], signature: &[u8]) -> bool {
    Signature::from_slice(signature).is_ok_and(|sig| key.verify_strict(message, &sig).is_ok())
}

impl CheckpointSigner {
    /// A fresh key named `name` (no spaces, no `+`).
    pub fn generate(name: &str) -> Result<Self, CheckpointError> {
        Ok(Self {
            name: name.to_owned(),
            key: generate_key(name)?,
        })
    }

    /// Reads a `PRIVATE+KEY+…` text.
    pub fn parse(text: &str) -> Result<Self, CheckpointError> {
        let (name, key) = parse_signer(text, ED25519)?;
        Ok(Self { name, key })
    }

    /// The secret text form, `PRIVATE+KEY+<name>+<id>+<base64>`.
    pub fn to_text(&self) -> String {
        let public = self.key.verifying_key().to_bytes();
        format!(
            "PRIVATE+KEY+{}",
            key_text(&self.name, ED25519, &public, self.key.as_bytes())
        )
    }

    /// The public key that checks this signer's checkpoints.
    pub fn verifier(&self) -> CheckpointVerifier {
        CheckpointVerifier {
            name: self.name.clone(),
            key: self.key.verifying_key(),
        }
    }

    /// Signs the tree head (`size`, `root`) of the log named `origin`.
    pub fn sign(&self, origin: &str, size: u64, root: &Hash) -> String {
        let body = Checkpoint::body(origin, size, root);
        let signature = self.key.sign(body.as_bytes()).to_bytes();
        let id = key_id(&self.name, ED25519, self.key.verifying_key().as_bytes());
        format!(
            "{body}\n{}",
            note::signature_line(&self.name, id, &signature)
        )
    }
}

/// The origin a log named `name` gives its checkpoints: one line (control characters
/// become spaces), trimmed.
pub fn checkpoint_origin(name: &str) -> String {
    let line: String = name
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    line.trim().to_owned()
}

impl std::fmt::Debug for CheckpointSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckpointSigner")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl CheckpointVerifier {
    /// Reads a `<name>+<id>+<base64>` text.
    pub fn parse(text: &str) -> Result<Self, CheckpointError> {
        let (name, key) = parse_verifier(text, ED25519)?;
        Ok(Self { name, key })
    }

    /// The text form, `<name>+<id>+<base64>`.
    pub fn to_text(&self) -> String {
        let public = self.key.to_bytes();
        key_text(&self.name, ED25519, &public, &public)
    }

    /// The key's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The Ed25519 public key.
    pub(crate) fn public(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    /// The checkpoint in `text`, if this key signed it as it stands. Signatures by other
    /// keys (a witness's cosignature) are ignored; a second signature by this key that
    /// fails refuses the note.
    pub fn open(&self, text: &str) -> Result<Checkpoint, CheckpointError> {
        let note = note::parse(text)?;
        if note.verify(&[self])? != [true] {
            return Err(CheckpointError::BadSignature(self.name.clone()));
        }
        Checkpoint::parse_body(note.text)
    }
}

impl KnownKey for CheckpointVerifier {
    fn name(&self) -> &str {
        &self.name
    }

    fn id(&self) -> [u8; 4] {
        key_id(&self.name, ED25519, self.key.as_bytes())
    }

    fn signs(&self, text: &str, signature: &[u8]) -> bool {
        ed25519_signs(&self.key, text.as_bytes(), signature)
    }
}

/// A verified tree head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The log's name.
    pub origin: String,
    /// How many entries the head covers.
    pub size: u64,
    /// The Merkle root over those entries.
    pub root: Hash,
}

impl Checkpoint {
    fn body(origin: &str, size: u64, root: &Hash) -> String {
        format!("{origin}\n{size}\n{}\n", B64.encode(root))
    }

    /// Reads a checkpoint's note text: origin, tree size, root, then extension lines (which
    /// must not be empty).
    pub(crate) fn parse_body(body: &str) -> Result<Self, CheckpointError> {
        let mut lines = body
            .strip_suffix('\n')
            .ok_or(CheckpointError::Malformed(
                "the text does not end in a newline",
            ))?
            .split('\n');
        let origin = lines
            .next()
            .filter(|o| !o.is_empty())
            .ok_or(CheckpointError::Malformed("no origin line"))?;
        let size = lines
            .next()
            .and_then(|s| s.parse::<u64>().ok().filter(|n| n.to_string() == s))
            .ok_or(CheckpointError::Malformed(
                "the second line is not a tree size",
            ))?;
        let root = lines
            .next()
            .and_then(|r| B64.decode(r).ok().filter(|d| B64.encode(d) == r))
            .and_then(|r| <Hash>::try_from(r.as_slice()).ok())
            .ok_or(CheckpointError::Malformed(
                "the third line is not a base64 root hash",
            ))?;
        if lines.any(str::is_empty) {
            return Err(CheckpointError::Malformed("an extension line is empty"));
        }
        Ok(Self {
            origin: origin.to_owned(),
            size,
            root,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_checkpoint_opens_with_its_key_only_as_written() {
        let signer = CheckpointSigner::generate("audit-test").unwrap();
        let again = CheckpointSigner::parse(&signer.to_text()).unwrap();
        let verifier = CheckpointVerifier::parse(&again.verifier().to_text()).unwrap();
        let text = signer.sign("guard audit log", 12, &[7; 32]);
        assert!(text.starts_with("guard audit log\n12\n"));
        let cp = verifier.open(&text).unwrap();
        assert_eq!((cp.size, cp.root), (12, [7; 32]));

        let other = CheckpointSigner::generate("audit-test").unwrap().verifier();
        assert!(matches!(
            other.open(&text),
            Err(CheckpointError::BadSignature(_))
        ));
        for (i, _) in text
            .char_indices()
            .filter(|(i, _)| *i < text.find('\u{2014}').unwrap())
        {
            let mut forged = text.clone().into_bytes();
            forged[i] ^= 1;
            if let Ok(forged) = String::from_utf8(forged) {
                assert!(verifier.open(&forged).is_err(), "byte {i}");
            }
        }
    }

    #[test]
    fn keys_with_a_wrong_id_or_algorithm_are_refused() {
        let signer = CheckpointSigner::generate("k").unwrap();
        let text = signer.verifier().to_text();
        let (name_id, material) = text.rsplit_once('+').unwrap();
        let (name, _) = name_id.split_once('+').unwrap();
        assert!(CheckpointVerifier::parse(&format!("{name}+00000000+{material}")).is_err());
        assert!(CheckpointSigner::generate("has space").is_err());
        assert!(CheckpointSigner::parse(&text).is_err());
    }

    #[test]
    fn a_note_is_read_as_c2sp_signed_note_says() {
        let signer = CheckpointSigner::generate("audit-test").unwrap();
        let verifier = signer.verifier();
        let text = signer.sign("guard audit log", 3, &[1; 32]);
        // Another key's signature line is ignored.
        let other = CheckpointSigner::generate("other").unwrap();
        let other_line = other.sign("guard audit log", 3, &[1; 32]);
        let other_line = other_line.rsplit_once("\n\n").unwrap().1;
        let cosigned = format!("{text}{other_line}");
        assert_eq!(verifier.open(&cosigned).unwrap().size, 3);
        // A carriage return anywhere refuses the note.
        assert!(verifier.open(&text.replace('\n', "\r\n")).is_err());
        assert!(verifier.open(&format!("{}\r\n", text.trim_end())).is_err());
        // A second signature by the known key that fails refuses the note, even after a
        // good one.
        let forged = signer.sign("guard audit log", 4, &[1; 32]);
        let forged_line = forged.rsplit_once("\n\n").unwrap().1;
        assert!(matches!(
            verifier.open(&format!("{text}{forged_line}")),
            Err(CheckpointError::BadSignature(_))
        ));
        // The text ends at the last blank line: a signature line smuggled into the text
        // is text, and then the note is not a checkpoint (its extension line is empty).
        let body = Checkpoint::body("guard audit log", 3, &[1; 32]);
        let smuggled = format!("{body}\n{}", text.rsplit_once("\n\n").unwrap().1);
        let id = key_id("audit-test", ED25519, signer.key.verifying_key().as_bytes());
        let line = note::signature_line(
            "audit-test",
            id,
            &signer.key.sign(smuggled.as_bytes()).to_bytes(),
        );
        let smuggled = format!("{smuggled}\n{line}");
        assert!(verifier.open(&smuggled).is_err());
        // A root with trailing base64 bits set is not the root's one spelling.
        let root_line = text.lines().nth(2).unwrap().to_owned();
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut bytes = root_line.clone().into_bytes();
        let last = bytes.len() - 2;
        let value = ALPHABET.iter().position(|&c| c == bytes[last]).unwrap();
        bytes[last] = ALPHABET[value ^ 1];
        let respelled = String::from_utf8(bytes).unwrap();
        assert!(Checkpoint::parse_body(&body.replace(&root_line, &respelled)).is_err());
    }
}
