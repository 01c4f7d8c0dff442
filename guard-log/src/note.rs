//! C2SP signed notes (`c2sp.org/signed-note`): a text, a blank line, and signature lines
//! `— <key name> base64(key id || signature)`. Checkpoints are notes signed by the log's
//! key; witnesses add their cosignatures as more lines of the same note.
//!
//! The rules a verifier must hold to, all here so every reader of a note holds them:
//! - the note is UTF-8 with no control character but the newline (a carriage return is
//!   refused: two spellings of one note must not both verify);
//! - the text ends at the **last** blank line, so a text may hold blank lines of its own;
//! - a signature by an unknown key (name or id differ) is ignored;
//! - a signature by a known key must verify, or the whole note is refused;
//! - at least one known key must have signed.
//!
//! Keys use the signed-note encodings: `<name>+<hex id>+<base64(type || public key)>` for
//! verifiers and `PRIVATE+KEY+<name>+<hex id>+<base64(type || seed)>` for signers; the id is
//! `SHA-256(name || "\n" || type || public key)[:4]`.

use base64::{Engine, engine::general_purpose::STANDARD as B64};
use sha2::{Digest, Sha256};

/// The most signature lines a note may carry (the specification asks for at least 16).
const MAX_SIGNATURES: usize = 100;

/// Why a key or a checkpoint was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    /// The key text is not a signed-note Ed25519 key.
    #[error("not an audit key ({0}); make one with `guard-audit keygen NAME`")]
    BadKey(&'static str),
    /// The checkpoint text is not a signed checkpoint.
    #[error("not a signed checkpoint ({0}); write one with `guard-audit checkpoint`")]
    Malformed(&'static str),
    /// No signature line is by the given key, or a signature by it does not verify.
    #[error(
        "the checkpoint is not signed by key {0}: it was altered or signed by another key; use the checkpoint as it was published and that log's verifier key"
    )]
    BadSignature(String),
}

/// The signature type of log checkpoint signatures: plain Ed25519.
pub(crate) const ED25519: u8 = 0x01;
/// The signature type of timestamped Ed25519 cosignatures (`c2sp.org/tlog-cosignature`).
pub(crate) const COSIGNATURE: u8 = 0x04;

/// A note split into its text and its signature lines, nothing verified yet.
#[derive(Debug)]
pub(crate) struct Note<'a> {
    /// The signed text, ending in its newline.
    pub text: &'a str,
    /// The signature lines, in order.
    pub signatures: Vec<Line<'a>>,
}

/// One signature line.
#[derive(Debug)]
pub(crate) struct Line<'a> {
    /// The key name.
    pub name: &'a str,
    /// The key id (the first four bytes of the decoded signature).
    pub id: [u8; 4],
    /// The signature after the key id.
    pub signature: Vec<u8>,
    /// The whole line, with its newline.
    pub raw: &'a str,
}

/// A key a note may be signed by: its name and id, and the check of its signature.
pub(crate) trait KnownKey {
    /// The key name.
    fn name(&self) -> &str;
    /// The key id.
    fn id(&self) -> [u8; 4];
    /// Whether `signature` (after the key id) signs `text`.
    fn signs(&self, text: &str, signature: &[u8]) -> bool;
}

/// Splits `note` into text and signatures, refusing what the format forbids.
pub(crate) fn parse(note: &str) -> Result<Note<'_>, CheckpointError> {
    if note.chars().any(|c| c.is_ascii_control() && c != '\n') {
        return Err(CheckpointError::Malformed(
            "it holds a control character other than a newline (a carriage return, a tab?)",
        ));
    }
    let split = note.rfind("\n\n").ok_or(CheckpointError::Malformed(
        "no blank line before the signatures",
    ))?;
    let text = &note[..=split];
    let block = &note[split + 2..];
    if block.is_empty() || !block.ends_with('\n') {
        return Err(CheckpointError::Malformed(
            "the signature lines must end with a newline",
        ));
    }
    let mut signatures = Vec::new();
    for raw in block.split_inclusive('\n') {
        if signatures.len() == MAX_SIGNATURES {
            return Err(CheckpointError::Malformed("more than 100 signature lines"));
        }
        signatures.push(line(raw)?);
    }
    Ok(Note { text, signatures })
}

fn line(raw: &str) -> Result<Line<'_>, CheckpointError> {
    let bad = CheckpointError::Malformed("a signature line is not `— NAME BASE64`");
    let rest = raw
        .strip_suffix('\n')
        .and_then(|l| l.strip_prefix("\u{2014} "))
        .ok_or(bad.clone())?;
    let (name, blob) = rest.split_once(' ').ok_or(bad.clone())?;
    let bytes = B64.decode(blob).map_err(|_| bad.clone())?;
    if !valid_name(name) || bytes.len() < 5 {
        return Err(bad);
    }
    Ok(Line {
        name,
        id: bytes[..4].try_into().expect("4 bytes"),
        signature: bytes[4..].to_vec(),
        raw,
    })
}

impl Note<'_> {
    /// Checks every signature by one of `known`: each must verify (else the note is refused),
    /// and at least one must be there. Returns, per key of `known`, whether it signed.
    pub(crate) fn verify(&self, known: &[&dyn KnownKey]) -> Result<Vec<bool>, CheckpointError> {
        let mut signed = vec![false; known.len()];
        for line in &self.signatures {
            for (i, key) in known.iter().enumerate() {
                if key.name() != line.name || key.id() != line.id {
                    continue;
                }
                if !key.signs(self.text, &line.signature) {
                    return Err(CheckpointError::BadSignature(key.name().to_owned()));
                }
                signed[i] = true;
            }
        }
        Ok(signed)
    }
}

/// Whether `name` may name a key: not empty, no spaces, no `+`.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('+') && !name.chars().any(char::is_whitespace)
}

/// `SHA-256(name || "\n" || kind || public)[:4]`.
pub(crate) fn key_id(name: &str, kind: u8, public: &[u8; 32]) -> [u8; 4] {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update(b"\n");
    h.update([kind]);
    h.update(public);
    let digest = h.finalize();
    [digest[0], digest[1], digest[2], digest[3]]
}

/// `<name>+<hex id>+<base64(kind || material)>`, the id computed from `public`.
pub(crate) fn key_text(name: &str, kind: u8, public: &[u8; 32], material: &[u8; 32]) -> String {
    let mut bytes = vec![kind];
    bytes.extend_from_slice(material);
    format!(
        "{name}+{}+{}",
        crate::canonical::hex(&key_id(name, kind, public)),
        B64.encode(bytes)
    )
}

/// Reads `<name>+<id>+<base64(kind || 32 bytes)>` for a key of signature type `kind`.
pub(crate) fn parse_key(
    text: &str,
    kind: u8,
) -> Result<(String, [u8; 4], [u8; 32]), CheckpointError> {
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
        Some((&found, rest)) if found == kind && rest.len() == 32 => {
            Ok((name.to_owned(), id, rest.try_into().expect("32 bytes")))
        }
        Some((&ED25519, _)) => Err(CheckpointError::BadKey(
            "this is a log key (type 1), not a witness key (type 4)",
        )),
        Some((&COSIGNATURE, _)) => Err(CheckpointError::BadKey(
            "this is a witness key (type 4), not a log key (type 1)",
        )),
        _ => Err(CheckpointError::BadKey("not an Ed25519 key")),
    }
}

/// The line `— <name> base64(id || signature)` with its newline.
pub(crate) fn signature_line(name: &str, id: [u8; 4], signature: &[u8]) -> String {
    let mut blob = id.to_vec();
    blob.extend_from_slice(signature);
    format!("\u{2014} {name} {}\n", B64.encode(blob))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(&'static str, [u8; 4], bool);

    impl KnownKey for Fixed {
        fn name(&self) -> &str {
            self.0
        }
        fn id(&self) -> [u8; 4] {
            self.1
        }
        fn signs(&self, _: &str, _: &[u8]) -> bool {
            self.2
        }
    }

    fn note(text: &str, lines: &[(&str, [u8; 4])]) -> String {
        let mut out = format!("{text}\n");
        for (name, id) in lines {
            out.push_str(&signature_line(name, *id, &[9; 64]));
        }
        out
    }

    #[test]
    fn the_text_ends_at_the_last_blank_line() {
        let text = note("a\n\nb\n", &[("k", [1; 4])]);
        let parsed = parse(&text).unwrap();
        assert_eq!(parsed.text, "a\n\nb\n");
        assert_eq!(parsed.signatures.len(), 1);
    }

    #[test]
    fn control_characters_and_bad_lines_are_refused() {
        let good = note("a\nb\n", &[("k", [1; 4])]);
        assert!(parse(&good).is_ok());
        for bad in [
            good.replace("a\n", "a\r\n"),
            good.replace('b', "b\t"),
            good.trim_end().to_owned(),
            good.replace("\u{2014} k", "\u{2014} k k"),
            good.replace("\u{2014} ", "- "),
            format!("{good}\n"),
        ] {
            assert!(parse(&bad).is_err(), "{bad:?}");
        }
        let many: Vec<(&str, [u8; 4])> = vec![("k", [1; 4]); 101];
        assert!(parse(&note("a\n", &many)).is_err());
        assert!(parse(&note("a\n", &many[..16])).is_ok());
    }

    #[test]
    fn a_failing_known_key_refuses_the_note_and_unknown_keys_are_ignored() {
        let text = note(
            "a\n",
            &[("log", [1; 4]), ("other", [2; 4]), ("log", [3; 4])],
        );
        let parsed = parse(&text).unwrap();
        let good = Fixed("log", [1; 4], true);
        let unknown_id = Fixed("log", [4; 4], false);
        assert_eq!(parsed.verify(&[&good, &unknown_id]).unwrap(), [true, false]);
        let failing = Fixed("other", [2; 4], false);
        assert!(parsed.verify(&[&good, &failing]).is_err());
    }
}
