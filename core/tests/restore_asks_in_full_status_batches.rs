//! A restore asks the server about its attempts in full batches: 1000
//! unfinished attempts take two status requests of 500, not a first one
//! about the attempt whose record happened to be written back first and
//! then the rest in whatever sizes the next writes left (the benchmark saw
//! 1 + 500 + 169 + 330).

mod support;

use support::*;
use upload_once_core::scheduler::Command;
use upload_once_core::wire::MAX_STATUS_IDS;

#[test]
fn a_thousand_unfinished_attempts_are_asked_about_in_two_full_batches() {
    // Web Locks answer one request at a time: the first attempt's lock is
    // granted, its record written back, before the others are granted.
    let mut sim = Sim::new(SimConfig { seed: 71, locks_one_at_a_time: true, ..SimConfig::default() });
    // Picked offline: recorded, nothing sent.
    sim.set_online(false);
    let ids: Vec<_> = (0..1000).map(|i| sim.add_jpeg(100 + i)).collect();
    sim.persist_all();
    assert!(ids.iter().all(|id| sim.db.contains_key(id)), "every attempt is in IndexedDB");
    sim.reload(Reload::KEEP_BLOBS);
    sim.set_online(true);
    let from = sim.stats.sent.len();
    // Each taken-over record is written back (write-ahead) before it is
    // asked about; the writes complete one at a time, as IndexedDB's do.
    let mut rounds = 0;
    while sim.stats.sent[from..].iter().all(|s| matches!(s.command, Command::Status { .. })) {
        let statuses = sim.stats.sent.len() - from;
        sim.persist();
        sim.pump();
        if sim.stats.sent.len() - from == statuses && !sim.has_pending_writes() {
            break;
        }
        rounds += 1;
        assert!(rounds < 100, "the restore settles");
    }
    let sizes: Vec<usize> = sim.stats.sent[from..]
        .iter()
        .filter_map(|s| match &s.command {
            Command::Status { ids } => Some(ids.len()),
            _ => None,
        })
        .collect();
    assert_eq!(sizes, vec![MAX_STATUS_IDS, MAX_STATUS_IDS], "two full batches, nothing asked twice");
}

/// A page restoring `files` unfinished attempts whose locks are granted and
/// records taken over, the write of those records never completing (nothing
/// calls persist): the restore waits for it. Answers the page's deadline.
fn restore_waiting_for_its_write_back(seed: u64, files: u64) -> (Sim, i64) {
    let mut sim = Sim::new(SimConfig { seed, locks_one_at_a_time: true, ..SimConfig::default() });
    sim.set_online(false);
    for i in 0..files {
        sim.add_jpeg(100 + i);
    }
    sim.persist_all();
    sim.reload(Reload::KEEP_BLOBS);
    sim.set_online(true);
    sim.pump();
    assert!(sim.has_pending_writes());
    assert!(sim.tabs[0].done.is_empty(), "the restore waits for its write-back");
    let deadline = sim.page().poll_timeout().expect("the page wakes up to stop waiting");
    (sim, deadline)
}

#[test]
fn a_write_back_that_never_ends_holds_a_restore_for_a_second_at_most() {
    let (mut sim, deadline) = restore_waiting_for_its_write_back(72, 10);
    sim.advance(deadline - sim.now - 1);
    sim.pump();
    assert!(sim.tabs[0].done.is_empty(), "still within the second");
    sim.advance(1);
    sim.pump();
    assert_eq!(sim.tabs[0].done.len(), 1, "the restore is done without its write-back");
    assert!(sim.stats.sent.is_empty(), "and nothing unwritten acted");
}

#[test]
fn a_restore_waiting_for_a_lock_does_not_wake_the_page_for_its_past_write_deadline() {
    let (mut sim, deadline) = restore_waiting_for_its_write_back(73, 3);
    // A file picked meanwhile asks for its lock; the deadline passes before
    // the lock is answered.
    sim.add_jpeg(500);
    sim.advance(deadline - sim.now + 10);
    let now = sim.now;
    assert!(
        sim.page().poll_timeout().is_none_or(|t| t > now),
        "a wake-up in the past while the lock is asked would spin the driver: {:?} at {now}",
        sim.page().poll_timeout()
    );
    // Once the lock is answered the restore is done (its deadline passed),
    // beside the new file's add.
    sim.pump();
    assert_eq!(sim.tabs[0].done.len(), 2, "the restore and the add");
}
