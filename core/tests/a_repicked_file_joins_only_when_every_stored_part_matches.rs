//! A file picked again for an attempt in parts that waits for it (same
//! name, size and time) joins that attempt only when it is the same file,
//! byte for byte, in every part the store holds: the server is asked for
//! its parts first, each stored part of the picked file is hashed and
//! compared. Any other file is a new attempt of its own (`NotSameFile`),
//! and the waiting attempt, its ledger and the store's parts stay as they
//! were. A part the server lists that the file was not checked against
//! lets the file go again, before a byte is sent.

mod support;

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use support::*;
use upload_once_core::attempt::{Confirmation, Transfer};
use upload_once_core::page::Added;
use upload_once_core::wire::StoredPart;
use uuid::Uuid;

/// Files over 20 bytes go up in parts of 5 (the fake server's units).
const PART: u64 = MULTIPART_PART_SIZE;

/// Where the picked file differs from the one whose parts are stored.
#[derive(Clone, Copy, Debug)]
enum Differs {
    /// Nowhere: the same file.
    Nowhere,
    /// In part 1.
    First,
    /// In a stored part between the first and the last stored one.
    MiddleStored,
    /// In the last stored part.
    LastStored,
    /// In a part the store does not hold.
    NotStored,
}

/// The part that differs, if the scenario can have one.
fn differing_part(differs: Differs, stored: &[u32], count: u32, pick: usize) -> Option<u32> {
    let missing: Vec<u32> = (1..=count).filter(|n| !stored.contains(n)).collect();
    match differs {
        Differs::Nowhere => None,
        Differs::First => Some(1),
        Differs::MiddleStored if stored.len() > 2 => Some(stored[1 + pick % (stored.len() - 2)]),
        Differs::MiddleStored | Differs::LastStored => stored.last().copied(),
        Differs::NotStored => missing.get(pick % missing.len().max(1)).copied(),
    }
}

/// An attempt of `count` parts, cut after some went up, whose page was
/// reloaded without its file (it waits for it); the store then holds
/// exactly the parts `stored` of the original file. Its id and file.
fn waiting_attempt(sim: &mut Sim, count: u32, stored: &[u32]) -> (Uuid, Uuid, String) {
    let id = sim.add_jpeg(count as u64 * PART);
    sim.tick_until(|s| s.server.attempts.get(&id).is_some_and(|a| !a.parts.is_empty()));
    sim.reload(Reload::LOSE_BLOBS);
    sim.run_until_idle();
    assert_eq!(sim.record(id).transfer, Transfer::NeedsFile);
    let blob_key = sim.record(id).blob_key;
    let content = sim.file(blob_key).content.clone();
    // The store's own parts: those of the original file, as the scenario
    // says (the ledger learns them from the server when the file is picked).
    let parts: BTreeMap<u32, StoredPart> = stored
        .iter()
        .map(|n| (*n, StoredPart { number: *n, size: PART, sha256: Some(part_sha(&content, *n)) }))
        .collect();
    set_stored_parts(sim, id, parts);
    (id, blob_key, content)
}

/// The store holds exactly `parts` of attempt `id` (each as stored once).
fn set_stored_parts(sim: &mut Sim, id: Uuid, parts: BTreeMap<u32, StoredPart>) {
    let key = sim.server.attempts[&id].object_key.clone();
    sim.server.parts_stored.retain(|(k, _), _| *k != key);
    for n in parts.keys() {
        sim.server.parts_stored.insert((key.clone(), *n), 1);
    }
    sim.server.attempts.get_mut(&id).unwrap().parts = parts;
}

fn scenario() -> impl Strategy<Value = (u32, Vec<bool>, Differs, usize, u64)> {
    (5u32..=12)
        .prop_flat_map(|count| {
            (
                Just(count),
                proptest::collection::vec(any::<bool>(), count as usize),
                prop_oneof![
                    Just(Differs::Nowhere),
                    Just(Differs::First),
                    Just(Differs::MiddleStored),
                    Just(Differs::LastStored),
                    Just(Differs::NotStored),
                ],
                any::<usize>(),
                any::<u64>(),
            )
        })
        // The attempt must still wait for its file: not every part stored.
        .prop_filter("some part is missing", |(_, mask, ..)| mask.iter().any(|s| !s))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 192,
        rng_seed: RngSeed::Fixed(0x5EED_F11E),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_repicked_file_joins_only_when_every_stored_part_matches(
        (count, mask, differs, pick, seed) in scenario()
    ) {
        let stored: Vec<u32> = (1..=count).filter(|n| mask[*n as usize - 1]).collect();
        let mut sim = Sim::multipart(seed);
        let (id, blob_key, content) = waiting_attempt(&mut sim, count, &stored);
        let differing = differing_part(differs, &stored, count, pick);
        let picked = match differing {
            Some(n) => format!("{content}~{n}"),
            None => content.clone(),
        };
        let store_before = sim.server.attempts[&id].parts.clone();
        let checked_before = sim.stats.parts_checked;
        let from = sim.stats.sent.len();

        let added = sim.reattach_with(blob_key, &picked);

        // Every part the store holds was hashed in the picked file, after
        // the server was asked which those are.
        prop_assert_eq!(sim.stats.parts_checked - checked_before, stored.len());
        let spliced = differing.is_some_and(|n| stored.contains(&n));
        if spliced {
            let Added::NotSameFile { id: new_id, waiting } = added else {
                return Err(TestCaseError::fail(format!("{added:?}: the file differs in stored part {differing:?}")));
            };
            prop_assert_eq!(waiting, id);
            prop_assert_ne!(new_id, id);
            let old = sim.record(id);
            prop_assert_eq!(old.transfer, Transfer::NeedsFile, "the old attempt still waits for its own file");
            let ledger = old.multipart.clone().unwrap();
            let listed: Vec<(u32, Option<String>)> = ledger.done.iter().map(|p| (p.number, p.sha256.clone())).collect();
            let want: Vec<(u32, Option<String>)> = stored.iter().map(|n| (*n, Some(part_sha(&content, *n)))).collect();
            prop_assert_eq!(listed, want, "the old ledger is the store's parts of the original file");
            sim.run_until_idle();
            prop_assert_eq!(&sim.server.attempts[&id].parts, &store_before, "not a byte sent to the old attempt");
            prop_assert!(sim.stats.parts_since(from, id).is_empty());
            prop_assert_eq!(sim.record(id).transfer, Transfer::NeedsFile);
            prop_assert_eq!(sim.record(new_id).confirmation, Confirmation::Confirmed);
            prop_assert_eq!(sim.stats.parts_since(from, new_id).len() as u32, count, "the other file went up whole");
        } else {
            prop_assert_eq!(&added, &Added::Reattached(id));
            sim.run_until_idle();
            prop_assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed);
            let sent = sim.stats.parts_since(from, id);
            prop_assert!(sent.iter().all(|n| !stored.contains(n)), "no stored part sent again: {:?}", sent);
            prop_assert_eq!(sent.len() + stored.len(), count as usize);
        }
        sim.check_exactly_once().map_err(TestCaseError::fail)?;
    }
}

/// The server could not be asked before the add (the request failed): the
/// file was checked against the parts this browser knew of. The server
/// then lists one more (a part the store finished while the page was
/// away): nothing is sent to the attempt; the file goes through the add
/// again and is checked against that part too. A different file becomes a
/// new attempt there; the same file goes on.
#[test]
fn a_part_the_file_was_not_checked_against_is_checked_before_a_byte_is_sent() {
    for same_file in [false, true] {
        let mut sim = Sim::multipart(7);
        let (id, blob_key, content) = waiting_attempt(&mut sim, 8, &[]);
        // The ledger knows the parts the server listed at the reload; the
        // store finished one more meanwhile.
        let known: Vec<u32> = sim.record(id).multipart.as_ref().unwrap().done.iter().map(|p| p.number).collect();
        let extra = (1..=8).find(|n| !known.contains(n)).unwrap();
        let stored: BTreeMap<u32, StoredPart> = known
            .iter()
            .chain([&extra])
            .map(|n| (*n, StoredPart { number: *n, size: PART, sha256: Some(part_sha(&content, *n)) }))
            .collect();
        set_stored_parts(&mut sim, id, stored);
        // The ask before the add fails.
        sim.faults.script(ReqKind::Status, Fault::DropBefore);
        let from = sim.stats.sent.len();
        let picked = if same_file { content.clone() } else { format!("{content}~{extra}") };
        assert_eq!(sim.reattach_with(blob_key, &picked), Added::Reattached(id), "checked against the known parts");
        sim.run_until_idle();
        assert_eq!(sim.stats.rechecks, 1, "the file went through the add again");
        let sent = sim.stats.parts_since(from, id);
        if same_file {
            assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed);
            assert!(sent.iter().all(|n| !known.contains(n) && *n != extra), "{sent:?}");
            assert_eq!(sim.server.media_rows_for_attempt(id), 1);
        } else {
            assert!(sent.is_empty(), "not a byte sent to the attempt: {sent:?}");
            assert_eq!(sim.record(id).transfer, Transfer::NeedsFile, "it still waits for its own file");
            let other =
                sim.scheduler().records().find(|r| r.id != id).cloned().expect("a new attempt for the other file");
            assert_eq!(other.confirmation, Confirmation::Confirmed);
            // The right file then goes on from the stored parts.
            let from = sim.stats.sent.len();
            assert_eq!(sim.reattach_with(blob_key, &content), Added::Reattached(id));
            sim.run_until_idle();
            assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed);
            let sent = sim.stats.parts_since(from, id);
            assert!(sent.iter().all(|n| !known.contains(n) && *n != extra), "{sent:?}");
        }
        // (Two files of one name, each stored once: the checker of the sim
        // tells files apart by name, so it is asked per attempt here.)
        assert!(sim.server.parts_stored.values().all(|n| *n == 1), "no part stored twice");
    }
}
