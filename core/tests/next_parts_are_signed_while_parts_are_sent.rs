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

/// Three parts sent, and three more hashed beside them.
fn three_on_the_wire() -> (Pipeline, Ledger) {
    let ledger = ledger();
    let mut p = Pipeline::default();
    let first = drain(&mut p, &ledger, (true, true));
    assert_eq!(hashes(&first), vec![1, 2, 3], "as many hashed at once as may be sent");
    for n in 1..=3 {
        assert!(p.handle_hashed(n, Ok(format!("{n:064x}"))).is_none());
    }
    let sign = drain(&mut p, &ledger, (true, true));
    assert!(matches!(sign.first(), Some(PartAction::Sign(batch)) if batch.len() == 3), "{sign:?}");
    assert_eq!(hashes(&sign), vec![4, 5, 6], "the next parts are hashed meanwhile (at most six on their way)");
    p.handle_signed(Ok(signed(&[1, 2, 3])), &RetryPolicy::default(), 0, 0.5, T0);
    let sends = drain(&mut p, &ledger, (true, true));
    let sent: Vec<u32> = sends
        .iter()
        .filter_map(|a| if let PartAction::Send { number, .. } = a { Some(*number) } else { None })
        .collect();
    assert_eq!(sent, vec![1, 2, 3]);
    (p, ledger)
}

fn hashed(p: &mut Pipeline, numbers: std::ops::RangeInclusive<u32>) {
    for n in numbers {
        assert!(p.handle_hashed(n, Ok(format!("{n:064x}"))).is_none());
    }
}

#[test]
fn the_next_parts_are_signed_while_every_slot_is_taken() {
    let (mut p, ledger) = three_on_the_wire();
    hashed(&mut p, 4..=6);
    // The page's slots are all taken by the three PUTs: no PUT may start,
    // but the sign request may go beside them.
    let actions = drain(&mut p, &ledger, (false, true));
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
    hashed(&mut p, 4..=6);
    // The page's limit with the sign allowance taken too (other attempts'
    // requests): the hashed parts wait.
    assert!(drain(&mut p, &ledger, (false, false)).is_empty());
    assert_eq!(p.requests_in_flight(), 3);
}

#[test]
fn parts_signed_ahead_are_signed_together() {
    let (mut p, ledger) = three_on_the_wire();
    // While every slot is busy, one part hashed is not worth a request: the
    // sign request waits for the set (a request per part cost the server a
    // transaction per part).
    hashed(&mut p, 4..=4);
    assert!(drain(&mut p, &ledger, (false, true)).is_empty(), "part 4 waits for 5 and 6");
    hashed(&mut p, 5..=6);
    let actions = drain(&mut p, &ledger, (false, true));
    assert!(matches!(actions.as_slice(), [PartAction::Sign(batch)] if batch.len() == 3), "{actions:?}");
}

#[test]
fn a_free_slot_with_nothing_signed_has_what_is_hashed_signed_at_once() {
    let ledger = ledger();
    let mut p = Pipeline::default();
    assert_eq!(hashes(&drain(&mut p, &ledger, (true, true))), vec![1, 2, 3]);
    hashed(&mut p, 1..=1);
    // Nothing is sent and nothing signed: waiting for 2 and 3 would leave
    // the wire idle.
    let actions = drain(&mut p, &ledger, (true, true));
    assert!(
        matches!(actions.as_slice(), [PartAction::Sign(batch), ..] if batch.iter().map(|r| r.number).collect::<Vec<_>>() == [1]),
        "{actions:?}"
    );
}
