//! How a file in parts is planned and which parts a confirm may assemble
//! (docs/protocol.md §3.8): [`PartPlan::for_size`] at authorize and
//! [`parts_to_complete`] at confirm, from the store's own listing. Which
//! part requests are valid is [`super::signing`]. The server calls these
//! with the object store's bounds ([`PartBounds::S3`]); the client's
//! simulation calls the same functions with bounds of its own (parts of a
//! few bytes).

use crate::wire::MultipartPlan;

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

/// What the object store allows of a multipart upload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartBounds {
    /// The smallest part but the last.
    pub min_part_size: u64,
    /// The most parts.
    pub max_parts: u32,
    /// A part size grown to fit `max_parts` is a multiple of this.
    pub grow_by: u64,
}

impl PartBounds {
    /// S3's (and every store's here): parts of at least 5 MiB but the last,
    /// at most 10,000 parts, grown in whole MiB.
    pub const S3: PartBounds = PartBounds { min_part_size: MIN_PART_SIZE, max_parts: MAX_PARTS, grow_by: MIB };
}

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
    /// `threshold` bytes; above it, parts of `part_size` (at least the
    /// bounds' smallest), grown to a multiple of `grow_by` when more than
    /// `max_parts` parts would be needed.
    pub fn for_size(size: u64, threshold: u64, part_size: u64, bounds: PartBounds) -> Option<PartPlan> {
        if size <= threshold || size == 0 {
            return None;
        }
        let mut part_size = part_size.max(bounds.min_part_size).max(1);
        if size.div_ceil(part_size) > u64::from(bounds.max_parts) {
            let grow_by = bounds.grow_by.max(1);
            part_size = size.div_ceil(u64::from(bounds.max_parts)).div_ceil(grow_by) * grow_by;
        }
        let part_count = u32::try_from(size.div_ceil(part_size)).unwrap_or(bounds.max_parts);
        Some(PartPlan { part_size, part_count })
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

#[cfg(test)]
mod tests {
    use super::*;

    const S3: PartBounds = PartBounds::S3;

    const GIB: u64 = 1024 * MIB;

    #[test]
    fn small_files_go_up_in_one_put_and_larger_ones_in_parts() {
        assert_eq!(PartPlan::for_size(32 * MIB, 32 * MIB, 8 * MIB, S3), None, "at the threshold: one PUT");
        let plan = PartPlan::for_size(32 * MIB + 1, 32 * MIB, 8 * MIB, S3).unwrap();
        assert_eq!(plan, PartPlan { part_size: 8 * MIB, part_count: 5 });
        assert_eq!(plan.part_len(4, 32 * MIB + 1), 8 * MIB);
        assert_eq!(plan.part_len(5, 32 * MIB + 1), 1, "the last part holds the rest");
    }

    #[test]
    fn parts_are_never_smaller_than_five_mib() {
        let plan = PartPlan::for_size(11 * MIB, MIB, MIB, S3).unwrap();
        assert_eq!(plan, PartPlan { part_size: 5 * MIB, part_count: 3 });
    }

    #[test]
    fn the_part_size_grows_to_whole_mib_so_there_are_at_most_ten_thousand_parts() {
        // 100 GiB in 8 MiB parts would be 12,800 parts.
        let plan = PartPlan::for_size(100 * GIB, 32 * MIB, 8 * MIB, S3).unwrap();
        assert_eq!(plan.part_size % MIB, 0);
        assert!(plan.part_size > 8 * MIB);
        assert!(plan.part_count <= MAX_PARTS);
        assert_eq!(plan.part_size, 11 * MIB, "the smallest whole MiB that fits");
        // 5 TiB, S3's largest object.
        let plan = PartPlan::for_size(5 * 1024 * GIB, 32 * MIB, 8 * MIB, S3).unwrap();
        assert!(plan.part_count <= MAX_PARTS && u64::from(plan.part_count) * plan.part_size >= 5 * 1024 * GIB);
    }

    fn listed(number: u32, size: u64, sha256: Option<&str>) -> ListedPart {
        ListedPart { number, size, sha256: sha256.map(str::to_owned), etag: format!("\"{number}\"") }
    }

    #[test]
    fn a_confirm_assembles_only_every_part_at_its_exact_length() {
        let size = 11 * MIB;
        let plan = PartPlan::for_size(size, MIB, 5 * MIB, S3).unwrap();
        let all = vec![listed(3, MIB, None), listed(1, 5 * MIB, None), listed(2, 5 * MIB, None)];
        let parts = parts_to_complete(&plan, size, &all).unwrap();
        assert_eq!(parts.iter().map(|p| p.number).collect::<Vec<_>>(), vec![1, 2, 3], "in part order");
        assert_eq!(parts_to_complete(&plan, size, &all[..2]), Err(vec![2]));
        let short = vec![listed(1, 5 * MIB, None), listed(2, 5 * MIB - 1, None), listed(3, MIB, None)];
        assert_eq!(parts_to_complete(&plan, size, &short), Err(vec![2]), "a part of another length is missing");
        assert_eq!(parts_to_complete(&plan, size, &[]), Err(vec![1, 2, 3]));
    }

    #[test]
    fn other_bounds_plan_by_the_same_rule() {
        let tiny = PartBounds { min_part_size: 1, max_parts: 4, grow_by: 1 };
        assert_eq!(PartPlan::for_size(20, 20, 5, tiny), None, "at the threshold: one PUT");
        assert_eq!(
            PartPlan::for_size(21, 20, 5, tiny),
            Some(PartPlan { part_size: 6, part_count: 4 }),
            "grown to fit 4 parts"
        );
        assert_eq!(PartPlan::for_size(0, 0, 5, tiny), None, "an empty file is one PUT");
    }
}
