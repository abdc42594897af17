//! A large file goes up in parts through the same attempt: each part is
//! hashed, signed (with its hash) and sent, a few at a time; the ledger
//! records what the store holds; a cut connection, a reload or a file
//! picked again go on from the parts the server says it has, and bytes that
//! are not the same file are never spliced in.

mod support;

use support::*;
use upload_once_core::attempt::{Confirmation, Transfer};
use upload_once_core::multipart::Ledger;
use upload_once_core::page::Added;
use upload_once_core::wire::{MultipartPlan, StoredPart};

fn parts_sent(sim: &Sim, id: uuid::Uuid) -> usize {
    sim.stats.kinds_for(id).iter().filter(|k| **k == ReqKind::UploadPart).count()
}

#[test]
fn a_large_file_goes_up_in_parts_and_is_confirmed_once() {
    let mut sim = Sim::multipart(1);
    let id = sim.add_jpeg(48); // 10 parts: 9 of 5 bytes, the last of 3
    sim.run_until_idle();
    let r = sim.record(id);
    assert_eq!(r.confirmation, Confirmation::Confirmed);
    let ledger = r.multipart.as_ref().expect("the ledger");
    assert_eq!((ledger.part_count, ledger.done.len()), (10, 10));
    assert_eq!(parts_sent(&sim, id), 10, "each part once");
    assert_eq!(sim.server.media_rows_for_attempt(id), 1);
    assert_eq!(sim.server.objects.values().next().unwrap().size, 48, "assembled from the parts");
    assert_eq!(sim.stats.count(ReqKind::Upload), 0, "no single PUT");
    assert!(sim.stats.max_parts_in_flight <= 3, "at most three parts of a file at once");
    assert!(sim.stats.max_parts_in_flight >= 2, "parts go in parallel");
    let view = sim.page().view(&id).unwrap();
    assert_eq!((view.parts_done, view.part_count, view.bytes_sent), (Some(10), Some(10), 48.0));
    sim.check_exactly_once().unwrap();
}

#[test]
fn a_small_file_keeps_the_single_put() {
    let mut sim = Sim::multipart(2);
    let id = sim.add_jpeg(20);
    sim.run_until_idle();
    assert_eq!(sim.stats.kinds_for(id), vec![ReqKind::Authorize, ReqKind::Upload, ReqKind::Confirm]);
    assert!(sim.record(id).multipart.is_none());
}

#[test]
fn a_part_cut_mid_way_is_sent_again_and_nothing_else_is() {
    let mut sim = Sim::multipart(3);
    sim.faults.script(ReqKind::UploadPart, Fault::DropBefore);
    let id = sim.add_jpeg(48);
    sim.run_until_idle();
    assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed);
    assert_eq!(parts_sent(&sim, id), 11, "the one part cut, once more");
    sim.check_exactly_once().unwrap();
}

#[test]
fn a_part_stored_whose_answer_was_lost_is_not_sent_again() {
    let mut sim = Sim::multipart(4);
    sim.faults.script(ReqKind::UploadPart, Fault::DropAfter);
    let id = sim.add_jpeg(48);
    sim.run_until_idle();
    assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed);
    assert_eq!(parts_sent(&sim, id), 10, "the server's part list said it was stored");
    assert!(sim.stats.count(ReqKind::Status) >= 1, "it asked");
    assert!(sim.server.parts_stored.values().all(|n| *n == 1));
    sim.check_exactly_once().unwrap();
}

#[test]
fn a_reload_goes_on_from_the_first_part_the_server_does_not_have() {
    let mut sim = Sim::multipart(5);
    let id = sim.add_jpeg(48);
    sim.tick_until(|s| s.server.attempts.values().any(|a| a.parts.len() >= 4));
    let stored_before: Vec<u32> = sim.server.attempts[&id].parts.keys().copied().collect();
    sim.reload(Reload::KEEP_BLOBS);
    let from = sim.stats.sent.len();
    sim.run_until_idle();
    assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed);
    let resent: Vec<u32> = sim.stats.sent[from..]
        .iter()
        .filter_map(|s| match &s.command {
            upload_once_core::scheduler::Command::UploadPart { number, .. } => Some(*number),
            _ => None,
        })
        .collect();
    assert!(
        resent.iter().all(|n| !stored_before.contains(n)),
        "no stored part sent again: {resent:?} vs {stored_before:?}"
    );
    assert_eq!(resent.len() + stored_before.len(), 10);
    sim.check_exactly_once().unwrap();
}

#[test]
fn the_same_file_picked_again_goes_on_and_another_one_is_never_spliced_in() {
    // Large files are not kept: after a reload the attempt waits for its file.
    let mut sim = Sim::multipart(6);
    let id = sim.add_jpeg(48);
    sim.tick_until(|s| s.server.attempts.values().any(|a| a.parts.len() >= 3));
    sim.reload(Reload::LOSE_BLOBS);
    sim.run_until_idle();
    assert_eq!(sim.record(id).transfer, Transfer::NeedsFile);
    let blob_key = sim.record(id).blob_key;
    let stored_parts = sim.server.attempts[&id].parts.len();

    // Another file with the same name, size and time: a new attempt.
    let other = sim.reattach_with(blob_key, "different bytes");
    let Added::NotSameFile { id: new_id, waiting } = other else {
        panic!("a different file is a new attempt: {other:?}")
    };
    assert_eq!(waiting, id, "the guest is told which attempt still waits for its own file");
    assert_ne!(new_id, id);
    assert_eq!(sim.record(id).transfer, Transfer::NeedsFile, "the old attempt still waits for its own file");

    // The same file: the attempt goes on from the parts the store holds.
    let from = sim.stats.sent.len();
    assert_eq!(sim.reattach(blob_key), Added::Reattached(id));
    sim.run_until_idle();
    assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed);
    let parts_after: usize = sim.stats.sent[from..]
        .iter()
        .filter(|s| matches!(s.command, upload_once_core::scheduler::Command::UploadPart { id: i, .. } if i == id))
        .count();
    assert_eq!(parts_after, 10 - stored_parts, "only the missing parts");
    assert_eq!(sim.record(new_id).confirmation, Confirmation::Confirmed, "the other file is its own upload");
    assert_eq!(sim.server.media.len(), 2);
}

#[test]
fn an_expired_part_url_is_signed_again() {
    let mut sim = Sim::multipart(7);
    sim.config.latency_ms = (10, 10);
    let id = sim.add_jpeg(48);
    sim.tick_until(|s| {
        s.inflight().iter().any(|c| matches!(c, upload_once_core::scheduler::Command::UploadPart { .. }))
    });
    // The laptop sleeps with parts signed but not sent: their URLs expire.
    sim.advance(sim.config.server.url_ttl_ms + 1);
    sim.run_until_idle();
    assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed);
    assert!(sim.stats.count(ReqKind::SignParts) >= 2, "signed again");
    sim.check_exactly_once().unwrap();
}

#[test]
fn the_ledger_takes_the_stores_list() {
    let plan = MultipartPlan { part_size: 5, part_count: 4, expires_at: String::new() };
    let mut ledger = Ledger::new(&plan);
    ledger.mark_done(1, Some("a".repeat(64)));
    ledger.mark_done(3, None);
    // The store holds 1 and 2 (3 never arrived; 4 has the wrong length).
    let stored = [
        StoredPart { number: 2, size: 5, sha256: Some("b".repeat(64)) },
        StoredPart { number: 1, size: 5, sha256: Some("a".repeat(64)) },
        StoredPart { number: 4, size: 5, sha256: None },
        StoredPart { number: 9, size: 5, sha256: None },
    ];
    ledger.reconcile(&stored, 18);
    assert_eq!(ledger.done.iter().map(|p| p.number).collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!(ledger.first_part_sha256.as_deref(), Some("a".repeat(64).as_str()));
    assert_eq!(ledger.bytes_done(18), 10);
    assert_eq!(ledger.range(4, 18), (15, 18), "the last part holds the rest");
    assert!(!ledger.is_complete());
}
