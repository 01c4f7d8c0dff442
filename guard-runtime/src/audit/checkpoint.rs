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
use sha2::{Digest, Sha256};

use super::merkle::Hash;

/// Ed25519's algorithm byte in signed-note keys.
const ED25519: u8 = 1;

/// Why a key or a checkpoint was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    /// The key text is not a signed-note Ed25519 key.
    #[error("not an audit key ({0}); make one with `guard-audit keygen NAME`")]
    BadKey(&'static str),
    /// The checkpoint text is not a signed checkpoint.
    #[error("not a signed checkpoint ({0}); write one with `guard-audit checkpoint`")]
    Malformed(&'static str),
    /// No signature line is by the given key, or its signature does not verify.
    #[error(
        "the checkpoint is not signed by key {0}: it was altered or signed by another key; use the checkpoint as it was published and that log's verifier key"
    )]
    BadSignature(String),
}

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

fn key_id(name: &str, public: &[u8; 32]) -> [u8; 4] {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update(b"\n");
    h.update([ED25519]);
    h.update(public);
    let digest = h.finalize();
    [digest[0], digest[1], digest[2], digest[3]]
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('+') && !name.chars().any(char::is_whitespace)
}

fn key_text(name: &str, public: &[u8; 32], material: &[u8; 32]) -> String {
    let mut bytes = vec![ED25519];
    bytes.extend_from_slice(material);
    format!(
        "{name}+{}+{}",
        crate::canonical::hex(&key_id(name, public)),
        B64.encode(bytes)
    )
}

/// Reads `<name>+<id>+<base64(0x01 || 32 bytes)>`.
fn parse_key(text: &str) -> Result<(String, [u8; 4], [u8; 32]), CheckpointError> {
    let mut parts = text.trim().splitn(3, '+');
    let (Some(name), Some(id), Some(material)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(CheckpointError::BadKey("expected NAME+ID+KEY"));
    };
    if !valid_name(name) {
        return Err(CheckpointError::BadKey(
            "the name is empty or has spaces or +",
        ));
    }
    let id = u32::from_str_radix(id, 16)
        .ok()
        .filter(|_| id.len() == 8)
        .ok_or(CheckpointError::BadKey("the key id is not 8 hex digits"))?
        .to_be_bytes();
    let bytes = B64
        .decode(material)
        .map_err(|_| CheckpointError::BadKey("the key is not base64"))?;
    match bytes.split_first() {
        Some((&ED25519, rest)) if rest.len() == 32 => {
            Ok((name.to_owned(), id, rest.try_into().expect("32 bytes")))
        }
        _ => Err(CheckpointError::BadKey("not an Ed25519 key")),
    }
}

impl CheckpointSigner {
    /// A fresh key named `name` (no spaces, no `+`).
    pub fn generate(name: &str) -> Result<Self, CheckpointError> {
        if !valid_name(name) {
            return Err(CheckpointError::BadKey(
                "the name is empty or has spaces or +",
            ));
        }
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed)
            .map_err(|_| CheckpointError::BadKey("the system random source failed"))?;
        Ok(Self {
            name: name.to_owned(),
            key: SigningKey::from_bytes(&seed),
        })
    }

    /// Reads a `PRIVATE+KEY+…` text.
    pub fn parse(text: &str) -> Result<Self, CheckpointError> {
        let rest = text
            .trim()
            .strip_prefix("PRIVATE+KEY+")
            .ok_or(CheckpointError::BadKey(
                "a signer key starts with PRIVATE+KEY+",
            ))?;
        let (name, id, seed) = parse_key(rest)?;
        let key = SigningKey::from_bytes(&seed);
        if key_id(&name, key.verifying_key().as_bytes()) != id {
            return Err(CheckpointError::BadKey("the key id does not match the key"));
        }
        Ok(Self { name, key })
    }

    /// The secret text form, `PRIVATE+KEY+<name>+<id>+<base64>`.
    pub fn to_text(&self) -> String {
        let public = self.key.verifying_key().to_bytes();
        format!(
            "PRIVATE+KEY+{}",
            key_text(&self.name, &public, self.key.as_bytes())
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
        let mut blob = key_id(&self.name, self.key.verifying_key().as_bytes()).to_vec();
        blob.extend_from_slice(&signature);
        format!("{body}\n\u{2014} {} {}\n", self.name, B64.encode(blob))
    }
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
        let (name, id, public) = parse_key(text)?;
        if key_id(&name, &public) != id {
            return Err(CheckpointError::BadKey("the key id does not match the key"));
        }
        let key = VerifyingKey::from_bytes(&public)
            .map_err(|_| CheckpointError::BadKey("not a valid Ed25519 public key"))?;
        Ok(Self { name, key })
    }

    /// The text form, `<name>+<id>+<base64>`.
    pub fn to_text(&self) -> String {
        let public = self.key.to_bytes();
        key_text(&self.name, &public, &public)
    }

    /// The checkpoint in `text`, if this key signed it as it stands.
    pub fn open(&self, text: &str) -> Result<Checkpoint, CheckpointError> {
        let (body, signatures) = text.split_once("\n\n").ok_or(CheckpointError::Malformed(
            "no blank line before the signatures",
        ))?;
        let body = format!("{body}\n");
        let id = key_id(&self.name, self.key.as_bytes());
        let signed = signatures.lines().any(|line| {
            let Some(rest) = line.strip_prefix("\u{2014} ") else {
                return false;
            };
            let Some((name, blob)) = rest.split_once(' ') else {
                return false;
            };
            let Ok(blob) = B64.decode(blob) else {
                return false;
            };
            name == self.name
                && blob.len() == 68
                && blob[..4] == id
                && Signature::from_slice(&blob[4..])
                    .is_ok_and(|sig| self.key.verify_strict(body.as_bytes(), &sig).is_ok())
        });
        if !signed {
            return Err(CheckpointError::BadSignature(self.name.clone()));
        }
        Checkpoint::parse_body(&body)
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

    fn parse_body(body: &str) -> Result<Self, CheckpointError> {
        let mut lines = body.lines();
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
            .and_then(|r| B64.decode(r).ok())
            .and_then(|r| <Hash>::try_from(r.as_slice()).ok())
            .ok_or(CheckpointError::Malformed(
                "the third line is not a base64 root hash",
            ))?;
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
}
