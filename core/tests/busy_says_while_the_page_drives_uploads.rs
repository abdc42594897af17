//! `Page::is_busy` (the app's `uploader.busy`, what the guest page holds a
//! Screen Wake Lock for, issue 33) is true exactly while this page drives an
//! attempt that goes on without the guest, and `Effect::BusyChanged` says
//! each change once. (The sim asserts, for every `BusyChanged`, that it says
//! what `is_busy` says at that moment.)

mod support;

use support::*;
use upload_once_core::attempt::Confirmation;

#[test]
fn busy_from_the_pick_until_every_file_is_confirmed() {
    let mut sim = Sim::first_visit(SimConfig::default());
    assert!(!sim.page().is_busy(), "nothing picked: not busy");
    sim.add_jpeg(100);
    sim.add_jpeg(200);
    sim.pump();
    assert!(sim.page().is_busy());
    assert_eq!(sim.tabs[0].busy_changes, vec![true]);
    sim.run_until_idle();
    assert!(sim.page().records().all(|r| r.confirmation == Confirmation::Confirmed));
    assert!(!sim.page().is_busy());
    assert_eq!(sim.tabs[0].busy_changes, vec![true, false], "said once each way");
}

#[test]
fn a_retry_waiting_for_its_time_is_still_busy() {
    for seed in 0..10 {
        let mut sim = Sim::first_visit(SimConfig { seed, ..SimConfig::default() });
        sim.faults.random =
            Some(RandomFaults { probability: 0.4, weights: [1, 1, 1, 1, 1], max_retry_after_ms: 2_000 });
        for _ in 0..4 {
            sim.add_jpeg(100);
        }
        sim.pump();
        for _ in 0..300 {
            let unfinished = sim.page().records().any(|r| !r.is_terminal());
            assert_eq!(sim.page().is_busy(), unfinished, "seed {seed}: busy while any file is unfinished");
            if sim.tick() == Tick::Idle {
                break;
            }
        }
        assert_eq!(sim.tabs[0].busy_changes.first(), Some(&true), "seed {seed}");
        assert!(!sim.tabs[0].busy_changes.windows(2).any(|w| w[0] == w[1]), "seed {seed}: only changes are said");
    }
}

#[test]
fn a_paused_file_is_not_busy_until_resumed() {
    let mut sim = Sim::first_visit(SimConfig { defer_persist: 1.0, ..SimConfig::default() });
    let id = sim.add_jpeg(100);
    sim.pump();
    assert!(sim.page().is_busy());
    assert!(sim.pause(id));
    sim.pump();
    assert!(!sim.page().is_busy(), "it waits for the guest");
    assert!(sim.resume(id));
    sim.pump();
    assert!(sim.page().is_busy());
    assert_eq!(sim.tabs[0].busy_changes, vec![true, false, true]);
}

#[test]
fn a_file_that_must_be_picked_again_is_not_busy() {
    // Not kept for a reload: after one, the attempt waits for the guest.
    let mut sim = Sim::first_visit(SimConfig { keep_file_max_bytes: 0, ..SimConfig::default() });
    let id = sim.add_jpeg(100);
    sim.pump();
    assert!(sim.page().is_busy());
    sim.reload(Reload { lose_blob: 1.0, inflight_reached_server: 0.0 });
    sim.run_until_idle();
    let record = sim.page().record(&id).expect("still recorded");
    assert!(record.needs_file(), "{record:?}");
    assert!(!sim.page().is_busy());
    // Busy only while the restore asked the server what became of it.
    assert_eq!(sim.tabs[0].busy_changes, vec![true, false]);
}

#[test]
fn a_closed_page_is_not_busy_and_says_so() {
    let mut sim = Sim::first_visit(SimConfig::default());
    sim.add_jpeg(100);
    sim.pump();
    assert_eq!(sim.tabs[0].busy_changes, vec![true]);
    sim.page_mut().close();
    sim.pump();
    assert!(!sim.page().is_busy());
    assert_eq!(sim.tabs[0].busy_changes, vec![true, false]);
}
