//! Witness cosignatures (`c2sp.org/tlog-cosignature`, Ed25519 `cosignature/v1`): a witness
//! that checked a checkpoint extends everything it cosigned before for that log adds a line
//! to the checkpoint's note. The signed message is
//!
//! ```text
//! cosignature/v1
//! time <seconds since the epoch>
//! <the checkpoint's note text>
//! ```
//!
//! and the line carries `key id || timestamp (8 bytes, big endian) || signature`. The key
//! id uses signature type 0x04, so a witness key never passes for a log key.

use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};

use super::{
    checkpoint::{CheckpointError, ed25519_signs, generate_key, parse_signer, parse_verifier},
    note::{COSIGNATURE, KnownKey, key_id, key_text, signature_line},
};

/// A witness's signing key. Its text form starts with `PRIVATE+KEY+`.
pub struct WitnessSigner {
    name: String,
    key: SigningKey,
}

/// Checks a witness's cosignatures: the public half of a [`WitnessSigner`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessVerifier {
    name: String,
    key: VerifyingKey,
}

fn message(text: &str, time: u64) -> String {
    format!("cosignature/v1\ntime {time}\n{text}")
}

impl WitnessSigner {
    /// A fresh key named `name` (no spaces, no `+`; a schema-less URL such as
    /// `witness.example.com/w1` is the convention).
    pub fn generate(name: &str) -> Result<Self, CheckpointError> {
        Ok(Self {
            name: name.to_owned(),
            key: generate_key(name)?,
        })
    }

    /// Reads a `PRIVATE+KEY+…` text of a witness key.
    pub fn parse(text: &str) -> Result<Self, CheckpointError> {
        let (name, key) = parse_signer(text, COSIGNATURE)?;
        Ok(Self { name, key })
    }

    /// The secret text form.
    pub fn to_text(&self) -> String {
        let public = self.key.verifying_key().to_bytes();
        format!(
            "PRIVATE+KEY+{}",
            key_text(&self.name, COSIGNATURE, &public, self.key.as_bytes())
        )
    }

    /// The public key that checks this witness's cosignatures.
    pub fn verifier(&self) -> WitnessVerifier {
        WitnessVerifier {
            name: self.name.clone(),
            key: self.key.verifying_key(),
        }
    }

    /// The cosignature line (with its newline) of the checkpoint whose note text is `text`,
    /// made at `time` (seconds since the epoch, not zero).
    pub fn cosign(&self, text: &str, time: u64) -> String {
        let signature = self.key.sign(message(text, time).as_bytes()).to_bytes();
        let mut blob = time.to_be_bytes().to_vec();
        blob.extend_from_slice(&signature);
        signature_line(&self.name, self.verifier().id(), &blob)
    }
}

impl std::fmt::Debug for WitnessSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WitnessSigner")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl WitnessVerifier {
    /// Reads a `<name>+<id>+<base64(0x04 || key)>` text.
    pub fn parse(text: &str) -> Result<Self, CheckpointError> {
        let (name, key) = parse_verifier(text, COSIGNATURE)?;
        Ok(Self { name, key })
    }

    /// The text form.
    pub fn to_text(&self) -> String {
        let public = self.key.to_bytes();
        key_text(&self.name, COSIGNATURE, &public, &public)
    }

    /// The witness's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The Ed25519 public key.
    pub(crate) fn public(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    /// The time of this witness's cosignature of the checkpoint in `note`, if it holds one;
    /// a cosignature by this key that fails refuses the note.
    pub fn cosigned_at(&self, note: &str) -> Result<Option<u64>, CheckpointError> {
        let parsed = super::note::parse(note)?;
        if parsed.verify(&[self])? != [true] {
            return Ok(None);
        }
        Ok(parsed
            .signatures
            .iter()
            .filter(|line| line.name == self.name && line.id == self.id())
            .find_map(|line| timestamp(&line.signature)))
    }
}

/// The timestamp a cosignature's bytes start with.
fn timestamp(signature: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(signature.get(..8)?.try_into().ok()?))
}

impl KnownKey for WitnessVerifier {
    fn name(&self) -> &str {
        &self.name
    }

    fn id(&self) -> [u8; 4] {
        key_id(&self.name, COSIGNATURE, self.key.as_bytes())
    }

    fn signs(&self, text: &str, signature: &[u8]) -> bool {
        match (timestamp(signature), signature.get(8..)) {
            (Some(time), Some(sig)) if time > 0 && time < 1 << 63 => {
                ed25519_signs(&self.key, message(text, time).as_bytes(), sig)
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::{CheckpointSigner, CheckpointVerifier};

    #[test]
    fn a_cosignature_holds_for_its_checkpoint_only() {
        let log = CheckpointSigner::generate("log.example/a").unwrap();
        let witness = WitnessSigner::generate("witness.example/w1").unwrap();
        let again = WitnessSigner::parse(&witness.to_text()).unwrap();
        let key = WitnessVerifier::parse(&again.verifier().to_text()).unwrap();
        let note = log.sign("log.example/a", 5, &[3; 32]);
        let text = note.rsplit_once("\n\n").unwrap().0.to_owned() + "\n";
        let cosigned = format!("{note}{}", witness.cosign(&text, 1_700_000_000));
        assert_eq!(key.cosigned_at(&cosigned).unwrap(), Some(1_700_000_000));
        assert_eq!(key.cosigned_at(&note).unwrap(), None);
        // The log key still opens the cosigned note; the witness key is not a log key.
        assert_eq!(log.verifier().open(&cosigned).unwrap().size, 5);
        assert!(CheckpointVerifier::parse(&key.to_text()).is_err());
        assert!(WitnessVerifier::parse(&log.verifier().to_text()).is_err());
        // Moved to another checkpoint, the cosignature fails and refuses the note.
        let other = log.sign("log.example/a", 6, &[3; 32]);
        let moved = format!("{other}{}", cosigned.lines().last().unwrap());
        assert!(key.cosigned_at(&format!("{moved}\n")).is_err());
        // A zero timestamp is not a cosignature.
        let zero = format!("{note}{}", witness.cosign(&text, 0));
        assert!(key.cosigned_at(&zero).is_err());
    }
}
