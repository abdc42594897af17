//! The guest can pause a transfer: what is being sent is aborted (not a
//! failure, not a retry), nothing more is sent until they resume, a reload
//! keeps it paused (the server is still asked what became of it), and a
//! large file's stored parts stay stored: resuming sends only the rest.

mod support;

use support::*;
use upload_once_core::attempt::{Confirmation, Transfer};
use upload_once_core::scheduler::Command;
use uuid::Uuid;

fn sending(sim: &Sim, id: Uuid) -> bool {
    sim.inflight()
        .iter()
        .any(|c| matches!(c, Command::Upload { id: i, .. } | Command::UploadPart { id: i, .. } if *i == id))
}

/// Runs the page until bytes of `id` are on the wire (and not answered).
fn until_sending(sim: &mut Sim, id: Uuid) {
    for _ in 0..10_000 {
        sim.persist_all();
        if sending(sim, id) {
            return;
        }
        if sim.inflight().is_empty() {
            sim.tick();
        } else {
            sim.resolve_random();
        }
    }
    panic!("nothing was sent\n{}", sim.dump());
}

#[test]
fn a_paused_put_is_aborted_waits_and_goes_up_once_on_resume() {
    let (mut sim, id) = Sim::with_jpeg(1, 20_000);
    until_sending(&mut sim, id);
    assert!(sim.pause(id), "a transfer under way can be paused");
    sim.run_until_idle();

    let r = sim.record(id);
    assert!(r.paused);
    assert_eq!((r.transfer, r.confirmation), (Transfer::Queued, Confirmation::Unconfirmed));
    assert!(!r.is_terminal() && r.error.is_none() && r.retries == 0, "the abort is not a failure: {r:?}");
    assert!(sim.db[&id].paused, "the pause is stored: a reload keeps it");
    let view = sim.page().view(&id).unwrap();
    assert!(view.paused && !view.offline);
    assert!(sim.inflight().is_empty(), "nothing is sent while paused");
    assert_eq!(sim.server.media_rows_for_attempt(id), 0);

    assert!(sim.resume(id));
    sim.run_until_idle();
    let r = sim.record(id);
    assert_eq!(r.confirmation, Confirmation::Confirmed);
    assert!(!r.paused);
    assert_eq!(sim.server.media_rows_for_attempt(id), 1);
    sim.check_exactly_once().unwrap();
}

#[test]
fn a_paused_large_file_keeps_its_stored_parts_and_sends_only_the_rest() {
    let mut sim = Sim::multipart(2);
    let id = sim.add_jpeg(48); // 10 parts
    sim.tick_until(|s| s.server.attempts.get(&id).is_some_and(|a| a.parts.len() >= 4) && sending(s, id));
    assert!(sim.pause(id));
    let paused_at = sim.stats.sent.len();
    sim.run_until_idle();
    assert!(sim.stats.parts_since(paused_at, id).is_empty(), "no part starts after the pause");
    let stored: Vec<u32> = sim.server.attempts[&id].parts.keys().copied().collect();
    let r = sim.record(id);
    assert!(r.paused && !r.is_terminal() && r.retries == 0, "{r:?}");
    let ledger = r.multipart.as_ref().unwrap();
    let mut in_ledger: Vec<u32> = ledger.done.iter().map(|p| p.number).collect();
    in_ledger.sort();
    assert_eq!(in_ledger, stored, "the ledger holds what the store holds, after the cut parts");

    let resumed_at = sim.stats.sent.len();
    assert!(sim.resume(id));
    sim.run_until_idle();
    assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed);
    let resent = sim.stats.parts_since(resumed_at, id);
    assert!(resent.iter().all(|n| !stored.contains(n)), "no stored part is sent again: {resent:?} vs {stored:?}");
    assert_eq!(resent.len() + stored.len(), 10);
    assert!(sim.server.parts_stored.values().all(|n| *n == 1));
    sim.check_exactly_once().unwrap();
}

#[test]
fn a_reload_keeps_the_pause_and_still_asks_the_server() {
    let (mut sim, id) = Sim::with_jpeg(3, 20_000);
    until_sending(&mut sim, id);
    sim.pause(id);
    sim.run_until_idle();
    sim.reload(Reload::KEEP_BLOBS);
    assert_eq!(sim.kinds_sent_until_idle(), vec![ReqKind::Status], "asked, and sent nothing");
    assert!(sim.record(id).paused);
    assert!(sim.page().view(&id).unwrap().paused);

    sim.resume(id);
    sim.run_until_idle();
    assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed);
    sim.check_exactly_once().unwrap();
}

#[test]
fn stored_bytes_cannot_be_paused_and_a_repeat_changes_nothing() {
    let (mut sim, id) = Sim::with_jpeg(4, 20_000);
    sim.run_until_idle();
    assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed);
    assert!(!sim.pause(id), "nothing left to pause");
    assert!(!sim.resume(id), "it was not paused");

    let other = sim.add_jpeg(30_000);
    assert!(sim.pause(other), "a queued transfer can be paused");
    let revision = sim.record(other).revision;
    assert!(sim.pause(other), "a second pause answers the same");
    assert_eq!(sim.record(other).revision, revision, "and changes nothing");
    sim.run_until_idle();
    assert_eq!(sim.stats.kinds_for(other), vec![], "a paused new attempt is not even authorized");
    sim.resume(other);
    sim.run_until_idle();
    assert_eq!(sim.record(other).confirmation, Confirmation::Confirmed);
}
