//! The server's side of multipart uploads: which digest a part has
//! ([`with_digests`]) and the composite checksum ([`composite_sha256`]).
//! How a file is split and which parts a confirm may assemble are decided
//! in core (`upload_once_core::decide::multipart`, re-exported here), and
//! which part requests are valid in `upload_once_core::decide::signing`.
//! Pure functions: the handlers and the object stores do the I/O.

use sha2::{Digest, Sha256};
pub use upload_once_core::decide::multipart::{ListedPart, MIN_PART_SIZE, PartBounds, PartPlan, parts_to_complete};
use upload_once_core::wire::StoredPart;

/// The SHA-256 a part's URLs were signed with, as recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartDigest {
    /// The attempt's internal id.
    pub attempt_row_id: i64,
    /// The part number.
    pub number: u32,
    /// The one digest every URL of the part was signed with; `None` when a
    /// URL was signed without one, or two URLs with different ones.
    pub sha256: Option<String>,
}

/// The store's listing, each part with the digest it has: the store's own
/// when it lists one, else the one every URL of the part was signed with
/// (the store refuses other bytes). Which parts exist is the store's
/// listing alone.
pub fn with_digests(listed: Vec<ListedPart>, recorded: &[PartDigest]) -> Vec<ListedPart> {
    listed
        .into_iter()
        .map(|mut part| {
            if part.sha256.is_none() {
                part.sha256 = recorded.iter().find(|d| d.number == part.number).and_then(|d| d.sha256.clone());
            }
            part
        })
        .collect()
}

/// The parts as status shows them.
pub fn stored_parts(listed: &[ListedPart]) -> Vec<StoredPart> {
    listed.iter().map(|p| StoredPart { number: p.number, size: p.size, sha256: p.sha256.clone() }).collect()
}

/// The composite checksum of parts given in part order: the lowercase hex
/// SHA-256 over their raw 32-byte SHA-256 digests, then `-` and the part
/// count. `None` unless every digest is known.
pub fn composite_sha256<'a>(digests: impl IntoIterator<Item = Option<&'a str>>) -> Option<String> {
    let mut hasher = Sha256::new();
    let mut count = 0usize;
    for digest in digests {
        let raw = hex::decode(digest?).ok().filter(|d| d.len() == 32)?;
        hasher.update(&raw);
        count += 1;
    }
    (count > 0).then(|| format!("{}-{count}", hex::encode(hasher.finalize())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(number: u32, size: u64, sha256: Option<&str>) -> ListedPart {
        ListedPart { number, size, sha256: sha256.map(str::to_owned), etag: format!("\"{number}\"") }
    }

    #[test]
    fn a_part_takes_the_stores_digest_else_the_one_it_was_signed_with() {
        let recorded =
            |number, sha256: Option<&str>| PartDigest { attempt_row_id: 7, number, sha256: sha256.map(str::to_owned) };
        let merged = with_digests(
            vec![listed(1, 5, Some("store")), listed(2, 5, None), listed(3, 5, None)],
            &[
                recorded(1, Some("signed")),
                recorded(2, Some("signed-2")),
                recorded(3, None),
                recorded(4, Some("never stored")),
            ],
        );
        let digests: Vec<_> = merged.iter().map(|p| (p.number, p.sha256.as_deref())).collect();
        assert_eq!(
            digests,
            vec![(1, Some("store")), (2, Some("signed-2")), (3, None)],
            "only listed parts, and no invented digest"
        );
    }

    #[test]
    fn the_composite_checksum_is_the_sha256_of_the_raw_digests_and_the_count() {
        let a = crate::secrets::sha256_hex(b"part one");
        let b = crate::secrets::sha256_hex(b"part two");
        let mut raw = hex::decode(&a).unwrap();
        raw.extend(hex::decode(&b).unwrap());
        let expected = format!("{}-2", crate::secrets::sha256_hex(&raw));
        assert_eq!(composite_sha256([Some(a.as_str()), Some(b.as_str())]), Some(expected));
        assert_eq!(composite_sha256([Some(a.as_str()), None]), None, "unknown unless every digest is known");
        assert_eq!(composite_sha256([Some("not hex")]), None);
        assert_eq!(composite_sha256([]), None);
    }
}
