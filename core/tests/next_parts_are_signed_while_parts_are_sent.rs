//! While a file's parts take every request slot, its next parts are hashed
//! and signed, so a slot that frees is taken at once by a part with its
//! URL, not after a sign round trip. Sending in lock-step (three PUTs, then
//! a sign request while nothing is sent, then three more) left the wire
//! idle for about a quarter of a 1 GiB upload on loopback
//! (docs/benchmarks.md).

use std::collections::BTreeMap;

use upload_once_core::multipart::{Ledger, PartAction, Pipeline};
use upload_once_core::retry::RetryPolicy;
use upload_once_core::wire::{MultipartPlan, PartsResponse, SignedPart, UploadInstruction};

const PART: u64 = 5;
const SIZE: u64 = 48; // 10 parts
const T0: i64 = 1_000;
const PARALLELISM: usize = 3;

fn ledger() -> Ledger {
    Ledger::new(&MultipartPlan { part_size: PART, part_count: 10, expires_at: "2030-01-01T00:00:00Z".into() })
}

fn signed(numbers: &[u32]) -> PartsResponse {
    PartsResponse {
        parts: numbers
            .iter()
            .map(|n| SignedPart {
                number: *n,
                upload: UploadInstruction {
                    method: "PUT".into(),
                    url: format!("http://store.test/part/{n}"),
                    headers: BTreeMap::new(),
                    expires_at: "2030-01-01T00:00:00Z".into(),
                },
            })
            .collect(),
    }
}

/// Polls until nothing more is to be done under these slots.
fn drain(p: &mut Pipeline, ledger: &Ledger, slots: (bool, bool)) -> Vec<PartAction> {
    let mut actions = Vec::new();
    while let Some(a) = p.poll(ledger, SIZE, PARALLELISM, slots, T0) {
        actions.push(a);
    }
    actions
}

fn hashes(actions: &[PartAction]) -> Vec<u32> {
    actions.iter().filter_map(|a| if let PartAction::Hash { number, .. } = a { Some(*number) } else { None }).collect()
}

/// Hashes the one part the pipeline asks for (parts are hashed one at a
/// time: one part's bytes in memory per file), answering sign requests at
/// once, until three parts are on the wire: then parts 4 and 5 are hashed.
fn three_on_the_wire() -> (Pipeline, Ledger) {
    let ledger = ledger();
    let mut p = Pipeline::default();
    let first = drain(&mut p, &ledger, (true, true));
    assert_eq!(hashes(&first), vec![1], "one part hashed at a time");
    let mut sent = Vec::new();
    let mut actions = first;
    for _ in 0..20 {
        let mut hashing = Vec::new();
        for a in &actions {
            match a {
                PartAction::Hash { number, .. } => hashing.push(*number),
                PartAction::Sign(batch) => {
                    let numbers: Vec<u32> = batch.iter().map(|r| r.number).collect();
                    p.handle_signed(Ok(signed(&numbers)), &RetryPolicy::default(), 0, 0.5, T0);
                }
                PartAction::Send { number, .. } => sent.push(*number),
            }
        }
        assert!(hashing.len() <= 1, "at most one part hashed at once: {actions:?}");
        if sent.len() == 3 {
            break;
        }
        for n in hashing {
            assert!(p.handle_hashed(n, Ok(format!("{n:064x}"))).is_none());
        }
        actions = drain(&mut p, &ledger, (sent.len() < 3, true));
    }
    assert_eq!(sent, vec![1, 2, 3]);
    // Beside them part 4 is hashed, not signed (every slot is taken: it
    // waits for a set), and part 5 is being hashed.
    assert!(
        matches!(actions.as_slice(), [PartAction::Send { number: 3, .. }, PartAction::Hash { number: 5, .. }]),
        "{actions:?}"
    );
    assert!(p.handle_hashed(5, Ok(format!("{:064x}", 5))).is_none());
    (p, ledger)
}

/// Hashes parts one at a time, as the pipeline asks for them, while every
/// slot is taken (no PUT may start; signing is allowed unless `sign` is
/// false): the parts hashed.
fn hash_ahead(p: &mut Pipeline, ledger: &Ledger, upto: u32, sign: bool) -> Vec<PartAction> {
    let mut seen = Vec::new();
    loop {
        let actions = drain(p, ledger, (false, sign));
        let hashing = hashes(&actions);
        assert!(hashing.len() <= 1, "at most one part hashed at once: {actions:?}");
        seen.extend(actions.iter().filter(|a| !matches!(a, PartAction::Hash { .. })).cloned());
        match hashing.first() {
            Some(&n) if n <= upto => {
                assert!(p.handle_hashed(n, Ok(format!("{n:064x}"))).is_none());
            }
            _ => return seen,
        }
    }
}

fn hashed(p: &mut Pipeline, numbers: std::ops::RangeInclusive<u32>) {
    for n in numbers {
        assert!(p.handle_hashed(n, Ok(format!("{n:064x}"))).is_none());
    }
}

#[test]
fn the_next_parts_are_signed_while_every_slot_is_taken() {
    let (mut p, ledger) = three_on_the_wire();
    // The page's slots are all taken by the three PUTs: no PUT may start,
    // but the sign request may go beside them, once 4, 5 and 6 are hashed.
    let actions = hash_ahead(&mut p, &ledger, 6, true);
    assert!(
        matches!(actions.as_slice(), [PartAction::Sign(batch)] if batch.iter().map(|r| r.number).collect::<Vec<_>>() == [4, 5, 6]),
        "{actions:?}"
    );
    assert_eq!(p.requests_in_flight(), 4, "three PUTs and the sign request");
    p.handle_signed(Ok(signed(&[4, 5, 6])), &RetryPolicy::default(), 0, 0.5, T0);
    // A PUT ends: its slot goes at once to a part that already has its URL.
    assert_eq!(p.handle_sent(1, Ok(()), &RetryPolicy::default(), 0, 0.5, T0), Ok(Some(format!("{:064x}", 1))));
    let mut ledger = ledger;
    ledger.mark_done(1, Some(format!("{:064x}", 1)));
    let next = p.poll(&ledger, SIZE, PARALLELISM, (true, true), T0);
    assert!(matches!(next, Some(PartAction::Send { number: 4, .. })), "{next:?}");
}

#[test]
fn without_a_sign_slot_nothing_is_signed() {
    let (mut p, ledger) = three_on_the_wire();
    // The page's limit with the sign allowance taken too (other attempts'
    // requests): the hashed parts wait.
    assert!(hash_ahead(&mut p, &ledger, 6, false).is_empty());
    assert_eq!(p.requests_in_flight(), 3);
}

#[test]
fn parts_signed_ahead_are_signed_together() {
    let (mut p, ledger) = three_on_the_wire();
    // While every slot is busy, one part hashed is not worth a request: the
    // sign request waits for the set (a request per part cost the server a
    // transaction per part). Parts 4 and 5 are hashed: they wait for 6.
    let actions = drain(&mut p, &ledger, (false, true));
    assert!(matches!(actions.as_slice(), [PartAction::Hash { number: 6, .. }]), "4 and 5 wait for 6: {actions:?}");
    hashed(&mut p, 6..=6);
    // The set is signed; part 7 is hashed meanwhile (for the set after).
    let actions = drain(&mut p, &ledger, (false, true));
    assert!(
        matches!(actions.as_slice(), [PartAction::Hash { number: 7, .. }, PartAction::Sign(batch)] if batch.iter().map(|r| r.number).collect::<Vec<_>>() == [4, 5, 6]),
        "{actions:?}"
    );
}

/// What became of an upload of `count` parts driven to its end: PUTs
/// answered oldest first, each hash and sign request answered as soon as it
/// is made.
struct Run {
    ledger: Ledger,
    /// The parts hashed, in order.
    hashed: Vec<u32>,
    /// The size of each sign request, in order.
    batches: Vec<usize>,
    /// The most hashes asked for before one was answered.
    most_hashing: usize,
    /// PUTs that ended with a slot already empty while a part was left.
    idle_slots: usize,
}

fn run_to_the_end(count: u32, size: u64) -> Run {
    let mut ledger =
        Ledger::new(&MultipartPlan { part_size: PART, part_count: count, expires_at: "2030-01-01T00:00:00Z".into() });
    let mut p = Pipeline::default();
    let (mut hashed, mut batches, mut most_hashing, mut idle_slots) = (Vec::new(), Vec::new(), 0, 0);
    let mut on_wire: Vec<u32> = Vec::new();
    for _ in 0..1000 {
        let mut actions = Vec::new();
        while let Some(a) = p.poll(&ledger, size, PARALLELISM, (on_wire.len() < PARALLELISM, true), T0) {
            actions.push(a);
        }
        let hashing = hashes(&actions);
        most_hashing = most_hashing.max(hashing.len());
        for a in &actions {
            match a {
                PartAction::Sign(batch) => {
                    batches.push(batch.len());
                    let numbers: Vec<u32> = batch.iter().map(|r| r.number).collect();
                    p.handle_signed(Ok(signed(&numbers)), &RetryPolicy::default(), 0, 0.5, T0);
                }
                PartAction::Send { number, .. } => on_wire.push(*number),
                PartAction::Hash { .. } => {}
            }
        }
        if let Some(&n) = hashing.first() {
            assert!(p.handle_hashed(n, Ok(format!("{n:064x}"))).is_none());
            hashed.push(n);
            continue;
        }
        // Nothing more to hash now: the oldest PUT ends.
        let Some(n) = on_wire.first().copied() else { break };
        let left = (1..=count).filter(|m| !ledger.is_done(*m) && !on_wire.contains(m)).count();
        if on_wire.len() < PARALLELISM && left > 0 {
            idle_slots += 1;
        }
        on_wire.remove(0);
        let sha = p.handle_sent(n, Ok(()), &RetryPolicy::default(), 0, 0.5, T0).expect("stored");
        ledger.mark_done(n, sha);
    }
    Run { ledger, hashed, batches, most_hashing, idle_slots }
}

#[test]
fn parts_are_signed_a_set_at_a_time_once_the_upload_is_under_way() {
    // Thirty-one parts: after the first parts (signed at once so the wire
    // is not idle), every sign request asks for a full set, and no slot
    // that frees waits for one; the last parts, fewer than a set, are
    // signed once hashed.
    const COUNT: u32 = 31;
    let Run { ledger, batches, idle_slots, .. } = run_to_the_end(COUNT, PART * u64::from(COUNT));
    assert!((1..=COUNT).all(|n| ledger.is_done(n)), "every part stored");
    assert_eq!(batches.iter().sum::<usize>(), COUNT as usize);
    let ramp = batches.iter().take_while(|b| **b < PARALLELISM).count();
    assert!(ramp <= PARALLELISM, "the first parts only are signed alone: {batches:?}");
    let (last, sets) = batches[ramp..].split_last().expect("sets after the first parts");
    assert!(sets.iter().all(|b| *b == PARALLELISM), "then a set at a time: {batches:?}");
    assert_eq!(*last, (COUNT as usize - ramp) % PARALLELISM, "and the last part alone: {batches:?}");
    assert_eq!(idle_slots, 0, "no PUT ends with its slot left empty for want of a URL");
}

#[test]
fn a_free_slot_with_nothing_signed_has_what_is_hashed_signed_at_once() {
    let ledger = ledger();
    let mut p = Pipeline::default();
    assert_eq!(hashes(&drain(&mut p, &ledger, (true, true))), vec![1], "one part hashed at a time");
    hashed(&mut p, 1..=1);
    // Waiting for 2 and 3 would leave the wire idle: 2 is hashed, and 1
    // signed at once meanwhile.
    let actions = drain(&mut p, &ledger, (true, true));
    assert!(
        matches!(actions.as_slice(), [PartAction::Hash { number: 2, .. }, PartAction::Sign(batch)] if batch.iter().map(|r| r.number).collect::<Vec<_>>() == [1]),
        "{actions:?}"
    );
}

#[test]
fn one_part_of_a_file_is_in_memory_at_a_time() {
    // Hashing reads a part's bytes into memory; sending streams them from
    // the file. However the answers come, the pipeline never asks for a
    // second hash before the first is answered.
    let run = run_to_the_end(10, SIZE);
    assert!(run.most_hashing <= 1, "at most one hash asked for at once: {}", run.most_hashing);
    assert_eq!(run.hashed, (1..=10).collect::<Vec<u32>>(), "every part hashed once, in order");
}
