//! The decisions of multipart uploads, each in one place: how a file is
//! split ([`PartPlan::for_size`]), which parts a confirm may assemble
//! ([`parts_to_complete`]), which digest a part has ([`with_digests`]) and
//! the composite checksum ([`composite_sha256`]). Pure functions: the
//! handlers and the object stores do the I/O. Which part requests are
//! valid is decided in core (`upload_once_core::decide::signing`), with
//! whether parts may be signed at all.

use sha2::{Digest, Sha256};
use upload_once_core::wire::{MultipartPlan, StoredPart};

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

/// A part the store holds, as the store lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedPart {
    /// The part number.
    pub number: u32,
    /// Its size in bytes.
    pub size: u64,
    /// Its SHA-256 as lowercase hex, when known.
    pub sha256: Option<String>,
    /// The entity tag the store gave it (S3 wants it back at complete).
    pub etag: String,
}

/// One mebibyte.
pub const MIB: u64 = 1024 * 1024;

/// The smallest part size: S3's minimum for every part but the last.
pub const MIN_PART_SIZE: u64 = 5 * MIB;

/// The most parts one upload may have (S3's limit).
pub const MAX_PARTS: u32 = 10_000;

/// How a multipart attempt's file is split, fixed at authorize.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartPlan {
    /// Bytes per part; the last part holds the rest.
    pub part_size: u64,
    /// How many parts.
    pub part_count: u32,
}

impl PartPlan {
    /// The plan for a file of `size` bytes: one PUT (`None`) up to
    /// `threshold` bytes; above it, parts of `part_size` (at least
    /// [`MIN_PART_SIZE`]), grown to a whole number of MiB when more than
    /// [`MAX_PARTS`] parts would be needed.
    pub fn for_size(size: u64, threshold: u64, part_size: u64) -> Option<PartPlan> {
        if size <= threshold || size == 0 {
            return None;
        }
        let mut part_size = part_size.max(MIN_PART_SIZE);
        if size.div_ceil(part_size) > u64::from(MAX_PARTS) {
            part_size = size.div_ceil(u64::from(MAX_PARTS)).div_ceil(MIB) * MIB;
        }
        Some(PartPlan { part_size, part_count: u32::try_from(size.div_ceil(part_size)).unwrap_or(MAX_PARTS) })
    }

    /// The plan as the wire shows it, with the attempt's expiry.
    pub fn wire(&self, expires_at: String) -> MultipartPlan {
        MultipartPlan { part_size: self.part_size, part_count: self.part_count, expires_at }
    }

    /// The exact length of part `number` of a file of `size` bytes.
    pub fn part_len(&self, number: u32, size: u64) -> u64 {
        let (start, end) = self.wire(String::new()).range(number, size);
        end - start
    }
}

/// The parts a confirm assembles, from the store's own listing: parts 1 to
/// `part_count`, each with its exact length, in order. Otherwise the
/// numbers of the parts that are missing (or of another length).
pub fn parts_to_complete(
    plan: &PartPlan,
    size: u64,
    listed: &[ListedPart],
) -> std::result::Result<Vec<ListedPart>, Vec<u32>> {
    let mut parts = Vec::with_capacity(plan.part_count as usize);
    let mut missing = Vec::new();
    for number in 1..=plan.part_count {
        match listed.iter().find(|p| p.number == number && p.size == plan.part_len(number, size)) {
            Some(part) => parts.push(part.clone()),
            None => missing.push(number),
        }
    }
    if missing.is_empty() { Ok(parts) } else { Err(missing) }
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

    const GIB: u64 = 1024 * MIB;

    #[test]
    fn small_files_go_up_in_one_put_and_larger_ones_in_parts() {
        assert_eq!(PartPlan::for_size(32 * MIB, 32 * MIB, 8 * MIB), None, "at the threshold: one PUT");
        let plan = PartPlan::for_size(32 * MIB + 1, 32 * MIB, 8 * MIB).unwrap();
        assert_eq!(plan, PartPlan { part_size: 8 * MIB, part_count: 5 });
        assert_eq!(plan.part_len(4, 32 * MIB + 1), 8 * MIB);
        assert_eq!(plan.part_len(5, 32 * MIB + 1), 1, "the last part holds the rest");
    }

    #[test]
    fn parts_are_never_smaller_than_five_mib() {
        let plan = PartPlan::for_size(11 * MIB, MIB, MIB).unwrap();
        assert_eq!(plan, PartPlan { part_size: 5 * MIB, part_count: 3 });
    }

    #[test]
    fn the_part_size_grows_to_whole_mib_so_there_are_at_most_ten_thousand_parts() {
        // 100 GiB in 8 MiB parts would be 12,800 parts.
        let plan = PartPlan::for_size(100 * GIB, 32 * MIB, 8 * MIB).unwrap();
        assert_eq!(plan.part_size % MIB, 0);
        assert!(plan.part_size > 8 * MIB);
        assert!(plan.part_count <= MAX_PARTS);
        assert_eq!(plan.part_size, 11 * MIB, "the smallest whole MiB that fits");
        // 5 TiB, S3's largest object.
        let plan = PartPlan::for_size(5 * 1024 * GIB, 32 * MIB, 8 * MIB).unwrap();
        assert!(plan.part_count <= MAX_PARTS && u64::from(plan.part_count) * plan.part_size >= 5 * 1024 * GIB);
    }

    fn listed(number: u32, size: u64, sha256: Option<&str>) -> ListedPart {
        ListedPart { number, size, sha256: sha256.map(str::to_owned), etag: format!("\"{number}\"") }
    }

    #[test]
    fn a_confirm_assembles_only_every_part_at_its_exact_length() {
        let size = 11 * MIB;
        let plan = PartPlan::for_size(size, MIB, 5 * MIB).unwrap();
        let all = vec![listed(3, MIB, None), listed(1, 5 * MIB, None), listed(2, 5 * MIB, None)];
        let parts = parts_to_complete(&plan, size, &all).unwrap();
        assert_eq!(parts.iter().map(|p| p.number).collect::<Vec<_>>(), vec![1, 2, 3], "in part order");
        assert_eq!(parts_to_complete(&plan, size, &all[..2]), Err(vec![2]));
        let short = vec![listed(1, 5 * MIB, None), listed(2, 5 * MIB - 1, None), listed(3, MIB, None)];
        assert_eq!(parts_to_complete(&plan, size, &short), Err(vec![2]), "a part of another length is missing");
        assert_eq!(parts_to_complete(&plan, size, &[]), Err(vec![1, 2, 3]));
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
