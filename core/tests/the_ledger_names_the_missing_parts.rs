//! The part ledger answers "is this part done?" and "which is the first
//! part missing?" by binary searches over its sorted list of parts done,
//! not by scanning it: these tests hold those answers to the plain ones
//! for ledgers built part by part in any order and from a store's list.

use std::collections::BTreeSet;

use proptest::prelude::*;
use upload_once_core::multipart::Ledger;
use upload_once_core::wire::{MultipartPlan, StoredPart};

fn ledger(part_count: u32) -> Ledger {
    Ledger::new(&MultipartPlan { part_size: 5 << 20, part_count, expires_at: String::new() })
}

/// What the ledger must say, from the set of parts done.
fn check(ledger: &Ledger, done: &BTreeSet<u32>) {
    let expected: Vec<u32> = (1..=ledger.part_count).filter(|n| !done.contains(n)).collect();
    assert_eq!(ledger.first_missing(), expected.first().copied().unwrap_or(ledger.part_count + 1));
    for n in 0..=ledger.part_count + 1 {
        assert_eq!(ledger.is_done(n), done.contains(&n), "part {n}");
    }
    assert_eq!(ledger.is_complete(), expected.is_empty());
    let numbers: Vec<u32> = ledger.done.iter().map(|p| p.number).collect();
    assert_eq!(numbers, done.iter().copied().collect::<Vec<_>>(), "kept sorted, each part once");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn parts_marked_done_in_any_order(part_count in 1u32..200, marks in prop::collection::vec(1u32..200, 0..400)) {
        let mut l = ledger(part_count);
        let mut done = BTreeSet::new();
        for n in marks.into_iter().filter(|n| *n <= part_count) {
            l.mark_done(n, None);
            done.insert(n);
            check(&l, &done);
        }
    }

    #[test]
    fn parts_from_the_stores_list(part_count in 1u32..200, stored in prop::collection::vec(0u32..210, 0..300)) {
        let mut l = ledger(part_count);
        let size = u64::from(part_count) * (5 << 20);
        let list: Vec<StoredPart> = stored.iter().map(|n| StoredPart { number: *n, size: 5 << 20, sha256: None }).collect();
        l.reconcile(&list, size);
        let done: BTreeSet<u32> = stored.into_iter().filter(|n| (1..=part_count).contains(n)).collect();
        check(&l, &done);
    }
}

#[test]
fn ten_thousand_parts_with_holes_anywhere() {
    let mut l = ledger(10_000);
    let mut done = BTreeSet::new();
    // A prefix done, then every part but a few scattered holes.
    for n in (1..=10_000).filter(|n| ![1_234, 1_235, 5_000, 9_999].contains(n) && (*n <= 1_000 || *n > 1_100)) {
        l.mark_done(n, None);
        done.insert(n);
    }
    check(&l, &done);
    assert_eq!(l.first_missing(), 1_001);
    for n in [1_001, 1_050, 1_100, 1_234] {
        l.mark_done(n, None);
        done.insert(n);
    }
    check(&l, &done);
    for n in (1_002..=1_099).chain([1_235, 5_000, 9_999]) {
        l.mark_done(n, None);
        done.insert(n);
    }
    check(&l, &done);
    assert!(l.is_complete());
}
