//! Interoperability with an independent implementation of the C2SP formats, Cloudflare's
//! Azul crates (`signed_note`, `tlog_tiles`): guard's checkpoints, signed notes, witness
//! cosignatures, inclusion and consistency proofs check with them, and the notes, trees and
//! proofs they make check with guard.

use rmcp_guard::audit::{
    CheckpointSigner, CheckpointVerifier, ConsistencyProof, Policy, Receipt, WitnessSigner,
    merkle::{self, Hash, leaf_hash},
};
use signed_note::{Note, StandardSigner, StandardVerifier, Verifier, VerifierList};
use tlog_tiles::{HashReader, check_record, check_tree, prove_record, prove_tree, stored_hashes};

fn entries(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("{{\"seq\":{i},\"tool\":\"delete_file\"}}").into_bytes())
        .collect()
}

fn text_of(note: &str) -> String {
    note.rsplit_once("\n\n").unwrap().0.to_owned() + "\n"
}

/// A tlog-cosignature/v1 (type 0x04) verifier written against signed_note's trait from the
/// specification alone: key id, signed message and timestamp as `c2sp.org/tlog-cosignature`
/// defines them.
struct Cosignature {
    name: String,
    id: u32,
    key: ed25519_dalek::VerifyingKey,
}

impl Cosignature {
    fn new(vkey: &str) -> Self {
        use base64::{Engine, engine::general_purpose::STANDARD};
        let mut parts = vkey.splitn(3, '+');
        let (name, _, material) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        let bytes = STANDARD.decode(material).unwrap();
        assert_eq!(bytes[0], 0x04, "a cosignature key is of type 4");
        Self {
            name: name.to_owned(),
            id: signed_note::key_id(name, &bytes),
            key: ed25519_dalek::VerifyingKey::from_bytes(&bytes[1..].try_into().unwrap()).unwrap(),
        }
    }
}

impl Verifier for Cosignature {
    fn name(&self) -> &str {
        &self.name
    }
    fn key_id(&self) -> u32 {
        self.id
    }
    fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        let (Some(time), Some(signature)) = (sig.get(..8), sig.get(8..)) else {
            return false;
        };
        let time = u64::from_be_bytes(time.try_into().unwrap());
        let mut message = format!("cosignature/v1\ntime {time}\n").into_bytes();
        message.extend_from_slice(msg);
        ed25519_dalek::Signature::from_slice(signature)
            .is_ok_and(|s| self.key.verify_strict(&message, &s).is_ok())
    }
}

#[test]
fn guards_checkpoints_cosignatures_and_proofs_check_with_azul() {
    let log = CheckpointSigner::generate("example.com/audit").unwrap();
    let witness = WitnessSigner::generate("witness.example/w1").unwrap();
    let entries = entries(13);
    let leaves: Vec<Hash> = entries.iter().map(|e| leaf_hash(e)).collect();
    let note = log.sign("example.com/audit", 13, &merkle::root(&leaves));
    let cosigned = format!("{note}{}", witness.cosign(&text_of(&note), 1_760_000_000));

    // signed_note reads guard's keys and verifies both signatures, the cosignature with a
    // type-4 verifier whose key id it computes itself.
    let log_key = StandardVerifier::new(&log.verifier().to_text()).expect("guard's vkey");
    let known = VerifierList::new(vec![
        Box::new(log_key),
        Box::new(Cosignature::new(&witness.verifier().to_text())),
    ]);
    let parsed = Note::from_bytes(cosigned.as_bytes()).expect("guard's note");
    let (verified, unverified) = parsed.verify(&known).expect("both signatures hold");
    assert_eq!((verified.len(), unverified.len()), (2, 0));

    // tlog_tiles reads the checkpoint as guard wrote it.
    let checkpoint = tlog_tiles::Checkpoint::from_bytes(parsed.text()).expect("a checkpoint");
    assert_eq!(
        (checkpoint.origin(), checkpoint.size(), checkpoint.hash().0),
        ("example.com/audit", 13, merkle::root(&leaves))
    );

    // An inclusion proof from a guard receipt, and a consistency proof, check with tlog_tiles.
    let receipt = Receipt::new(&entries[9], 9, &leaves, &cosigned).unwrap();
    let proof: Vec<tlog_tiles::Hash> = receipt.proof.iter().map(|h| tlog_tiles::Hash(*h)).collect();
    check_record(
        &proof,
        13,
        tlog_tiles::Hash(merkle::root(&leaves)),
        9,
        tlog_tiles::record_hash(&entries[9]),
    )
    .expect("guard's inclusion proof");
    for old in 1..13 {
        let consistency = ConsistencyProof::new(&leaves, old, 13).unwrap();
        let proof: Vec<tlog_tiles::Hash> = consistency
            .path
            .iter()
            .map(|h| tlog_tiles::Hash(*h))
            .collect();
        check_tree(
            &proof,
            13,
            tlog_tiles::Hash(merkle::root(&leaves)),
            old,
            tlog_tiles::Hash(merkle::root(&leaves[..old as usize])),
        )
        .unwrap_or_else(|e| panic!("guard's consistency proof from {old}: {e:?}"));
    }
}

/// A tree kept as tlog_tiles stores it.
struct Stored(Vec<tlog_tiles::Hash>);

impl HashReader for Stored {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<tlog_tiles::Hash>, tlog_tiles::Error> {
        Ok(indexes.iter().map(|&i| self.0[i as usize]).collect())
    }
}

#[test]
fn azuls_notes_trees_and_proofs_check_with_guard() {
    let entries = entries(21);
    let mut stored = Stored(Vec::new());
    for (n, entry) in entries.iter().enumerate() {
        let more = stored_hashes(n as u64, entry, &stored).unwrap();
        stored.0.extend(more);
    }
    let root = tlog_tiles::tree_hash(21, &stored).unwrap();
    let leaves: Vec<Hash> = entries.iter().map(|e| leaf_hash(e)).collect();
    assert_eq!(
        root.0,
        merkle::root(&leaves),
        "one tree, two implementations"
    );

    // A checkpoint formatted by tlog_tiles and signed by signed_note, with a key guard made.
    let signer = CheckpointSigner::generate("example.com/azul").unwrap();
    let body = tlog_tiles::Checkpoint::new("example.com/azul", 21, root, "")
        .unwrap()
        .to_bytes();
    let azul_signer = StandardSigner::new(&signer.to_text()).expect("guard's signer key");
    let mut note = Note::new(&body, &[]).unwrap();
    note.add_sigs(&[&azul_signer]).unwrap();
    let text = String::from_utf8(note.to_bytes()).unwrap();
    let opened = signer.verifier().open(&text).expect("signed_note's note");
    assert_eq!((opened.size, opened.root), (21, root.0));
    let verifier = CheckpointVerifier::parse(&signer.verifier().to_text()).unwrap();
    assert!(Policy::log_only(verifier).open(&text).is_ok());

    // tlog_tiles's proofs check with guard.
    for index in [0u64, 7, 20] {
        let proof = prove_record(21, index, &stored).unwrap();
        let path: Vec<Hash> = proof.iter().map(|h| h.0).collect();
        let receipt = Receipt {
            entry: entries[index as usize].clone(),
            index,
            proof: path,
            checkpoint: text.clone(),
        };
        let policy = Policy::log_only(signer.verifier());
        assert!(
            receipt.verify(&policy, "example.com/azul").is_ok(),
            "record {index}"
        );
    }
    for old in 1..21u64 {
        let proof = prove_tree(21, old, &stored).unwrap();
        let consistency = ConsistencyProof {
            first: old,
            second: 21,
            path: proof.iter().map(|h| h.0).collect(),
        };
        let old_head = rmcp_guard::audit::Checkpoint {
            origin: "example.com/azul".into(),
            size: old,
            root: merkle::root(&leaves[..old as usize]),
        };
        assert!(consistency.verify(&old_head, &opened), "from {old}");
    }
}
