//! The log as a Merkle tree hashed as RFC 9162 (Certificate Transparency v2) does: a leaf
//! is `SHA-256(0x00 || entry)`, a node `SHA-256(0x01 || left || right)`, so a leaf can never
//! pass for a node. A tree head (size and root) commits to every entry before it; an
//! inclusion proof shows one entry is under a head, a consistency proof that a later head
//! only appended to an earlier one.

use base64::{Engine, engine::general_purpose::STANDARD as B64};
use sha2::{Digest, Sha256};

/// A SHA-256 value: a leaf hash, a node hash or a root.
pub type Hash = [u8; 32];

/// `SHA-256(0x00 || entry)`.
pub fn leaf_hash(entry: &[u8]) -> Hash {
    leaf_hash_parts(b"", entry)
}

/// The leaf hash of the entry `head` followed by `rest`, read where they lie.
pub(crate) fn leaf_hash_parts(head: &[u8], rest: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(head);
    h.update(rest);
    h.finalize().into()
}

/// `SHA-256(0x01 || left || right)`.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The root of the tree over `leaves` (leaf hashes, in log order). The empty tree's root is
/// `SHA-256("")`.
pub fn root(leaves: &[Hash]) -> Hash {
    if leaves.is_empty() {
        return Sha256::digest(b"").into();
    }
    subtree(leaves)
}

fn subtree(leaves: &[Hash]) -> Hash {
    if leaves.len() == 1 {
        return leaves[0];
    }
    let k = split(leaves.len());
    node_hash(&subtree(&leaves[..k]), &subtree(&leaves[k..]))
}

/// The largest power of two smaller than `n` (n ≥ 2).
fn split(n: usize) -> usize {
    1 << (usize::BITS - 1 - (n - 1).leading_zeros())
}

/// The audit path of leaf `index` in the tree over `leaves` (RFC 9162 §2.1.3.1).
pub fn inclusion_proof(index: usize, leaves: &[Hash]) -> Option<Vec<Hash>> {
    (index < leaves.len()).then(|| {
        let mut path = Vec::new();
        path_into(index, leaves, &mut path);
        path
    })
}

fn path_into(index: usize, leaves: &[Hash], path: &mut Vec<Hash>) {
    if leaves.len() <= 1 {
        return;
    }
    let k = split(leaves.len());
    if index < k {
        path_into(index, &leaves[..k], path);
        path.push(subtree(&leaves[k..]));
    } else {
        path_into(index - k, &leaves[k..], path);
        path.push(subtree(&leaves[..k]));
    }
}

/// Whether `path` proves leaf `leaf` at `index` is in the tree of `size` with `root`
/// (RFC 9162 §2.1.3.2).
pub fn verify_inclusion(index: u64, size: u64, leaf: &Hash, path: &[Hash], root: &Hash) -> bool {
    if index >= size {
        return false;
    }
    let (mut f, mut s) = (index, size - 1);
    let mut r = *leaf;
    for p in path {
        if s == 0 {
            return false;
        }
        if f & 1 == 1 || f == s {
            r = node_hash(p, &r);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    s == 0 && r == *root
}

/// The proof that the tree over the first `first` leaves is a prefix of the tree over all
/// of `leaves` (RFC 9162 §2.1.4.1).
pub fn consistency_proof(first: usize, leaves: &[Hash]) -> Option<Vec<Hash>> {
    if first > leaves.len() {
        return None;
    }
    let mut proof = Vec::new();
    if first > 0 && first < leaves.len() {
        subproof(first, leaves, true, &mut proof);
    }
    Some(proof)
}

fn subproof(m: usize, leaves: &[Hash], complete: bool, proof: &mut Vec<Hash>) {
    let n = leaves.len();
    if m == n {
        if !complete {
            proof.push(subtree(leaves));
        }
        return;
    }
    let k = split(n);
    if m <= k {
        subproof(m, &leaves[..k], complete, proof);
        proof.push(subtree(&leaves[k..]));
    } else {
        subproof(m - k, &leaves[k..], false, proof);
        proof.push(subtree(&leaves[..k]));
    }
}

/// Whether `proof` shows the tree (`first`, `first_root`) is a prefix of (`second`,
/// `second_root`) (RFC 9162 §2.1.4.2).
pub fn verify_consistency(
    first: u64,
    second: u64,
    first_root: &Hash,
    second_root: &Hash,
    proof: &[Hash],
) -> bool {
    if first > second {
        return false;
    }
    if first == second {
        return proof.is_empty() && first_root == second_root;
    }
    if first == 0 {
        // The empty tree is a prefix of every tree.
        return proof.is_empty();
    }
    let mut path: Vec<Hash> = Vec::with_capacity(proof.len() + 1);
    if first.is_power_of_two() {
        path.push(*first_root);
    }
    path.extend_from_slice(proof);
    let Some((&start, rest)) = path.split_first() else {
        return false;
    };
    let (mut f, mut s) = (first - 1, second - 1);
    while f & 1 == 1 {
        f >>= 1;
        s >>= 1;
    }
    let (mut fr, mut sr) = (start, start);
    for c in rest {
        if s == 0 {
            return false;
        }
        if f & 1 == 1 || f == s {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            sr = node_hash(&sr, c);
        }
        f >>= 1;
        s >>= 1;
    }
    fr == *first_root && sr == *second_root && s == 0
}

/// Proof hashes as the C2SP formats write them: base64, one a line, each ending in a newline.
pub fn hash_lines(hashes: &[Hash]) -> String {
    hashes
        .iter()
        .map(|h| format!("{}\n", B64.encode(h)))
        .collect()
}

/// A proof line's hash, if the line is the one base64 spelling of 32 bytes.
pub fn parse_hash_line(line: &str) -> Option<Hash> {
    B64.decode(line)
        .ok()
        .filter(|h| B64.encode(h) == line)
        .and_then(|h| Hash::try_from(h.as_slice()).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaves(n: usize) -> Vec<Hash> {
        (0..n)
            .map(|i| leaf_hash(format!("entry {i}").as_bytes()))
            .collect()
    }

    #[test]
    fn the_empty_tree_and_one_leaf_are_as_rfc_9162_defines_them() {
        assert_eq!(
            crate::canonical::hex(&root(&[])),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        let one = leaves(1);
        assert_eq!(root(&one), one[0]);
        let two = leaves(2);
        assert_eq!(root(&two), node_hash(&two[0], &two[1]));
        let three = leaves(3);
        assert_eq!(
            root(&three),
            node_hash(&node_hash(&three[0], &three[1]), &three[2])
        );
    }

    #[test]
    fn every_leaf_of_every_small_tree_proves_its_inclusion_and_no_other() {
        for n in 1..=33 {
            let all = leaves(n);
            let head = root(&all);
            for i in 0..n {
                let path = inclusion_proof(i, &all).unwrap();
                assert!(verify_inclusion(i as u64, n as u64, &all[i], &path, &head));
                let other = leaf_hash(b"not in the log");
                assert!(!verify_inclusion(i as u64, n as u64, &other, &path, &head));
                let longer = leaves(n + 1);
                assert!(!verify_inclusion(
                    i as u64,
                    n as u64 + 1,
                    &all[i],
                    &path,
                    &root(&longer)
                ));
                if n > 1 {
                    let wrong = (i + 1) % n;
                    assert!(!verify_inclusion(
                        wrong as u64,
                        n as u64,
                        &all[i],
                        &path,
                        &head
                    ));
                }
            }
            assert!(inclusion_proof(n, &all).is_none());
        }
    }

    #[test]
    fn every_prefix_is_consistent_and_a_rewritten_prefix_is_not() {
        for n in 1..=33 {
            let all = leaves(n);
            let head = root(&all);
            for m in 0..=n {
                let proof = consistency_proof(m, &all).unwrap();
                let old = root(&all[..m]);
                assert!(
                    verify_consistency(m as u64, n as u64, &old, &head, &proof),
                    "{m} of {n}"
                );
                if m > 0 && m < n {
                    let mut forged = all[..m].to_vec();
                    forged[m - 1] = leaf_hash(b"rewritten");
                    assert!(!verify_consistency(
                        m as u64,
                        n as u64,
                        &root(&forged),
                        &head,
                        &proof
                    ));
                }
            }
        }
    }
}
