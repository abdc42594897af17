//! A page hands its transfers to a Background Fetch when it is hidden
//! (issue 33): each is paused there and marked `background`, stored, and
//! its lock let go; the browser sends the same PUTs; the service worker
//! restores only those attempts and confirms what the store holds. A page
//! that comes back takes them back. However the two meet, each file is
//! stored once and never sent twice by the page.

mod support;

use support::*;
use upload_once_core::attempt::{Confirmation, Step};
use upload_once_core::scheduler::Command;
use uuid::Uuid;

/// Runs the page until every one of `ids` holds its signed URL (and is
/// stored so), with none confirmed yet.
fn until_authorized(sim: &mut Sim, ids: &[Uuid]) {
    for _ in 0..10_000 {
        sim.persist_all();
        if ids.iter().all(|id| sim.record(*id).upload.is_some() && sim.db[id].upload.is_some()) {
            return;
        }
        if sim.inflight().is_empty() {
            sim.tick();
        } else {
            // Authorizes only: the bytes stay on the wire.
            let authorize = sim.inflight().iter().position(|c| matches!(c, Command::Authorize { .. }));
            match authorize {
                Some(i) => {
                    sim.resolve(i);
                }
                None => {
                    sim.pump();
                    if !sim.inflight().iter().any(|c| matches!(c, Command::Authorize { .. })) {
                        return;
                    }
                }
            }
        }
    }
    panic!("not authorized\n{}", sim.dump());
}

/// The page's own PUTs of `id` from `sent[from..]`.
fn puts_by_page(sim: &Sim, from: usize, id: Uuid) -> usize {
    sim.stats.sent[from..].iter().filter(|s| matches!(&s.command, Command::Upload { id: i, .. } if *i == id)).count()
}

fn handed_over(sim: &mut Sim, files: usize) -> Vec<Uuid> {
    let ids: Vec<Uuid> = (0..files).map(|n| sim.add_jpeg(20_000 + n as u64)).collect();
    until_authorized(sim, &ids);
    let handed = sim.hand_over();
    sim.persist_all();
    sim.pump();
    sim.persist_all();
    sim.pump();
    handed
}

#[test]
fn a_hidden_page_hands_over_and_the_service_worker_confirms_each_once() {
    let mut sim = Sim::new(SimConfig { seed: 1, concurrency: 3, ..SimConfig::default() });
    let handed = handed_over(&mut sim, 3);
    assert_eq!(handed.len(), 3, "every authorized single PUT is handed over\n{}", sim.dump());
    let from = sim.stats.sent.len();
    sim.run_until_idle();
    for id in &handed {
        let r = sim.record(*id);
        assert!(r.background && r.paused && !r.is_terminal(), "{r:?}");
        assert!(sim.db[id].background && sim.db[id].paused, "the hand-over is stored before its lock goes");
        assert_eq!(sim.lock_holder(*id), None, "the page let go of its lock");
        let view = sim.page().view(id).unwrap();
        assert!(view.in_background && !view.paused && !view.driven_here, "{view:?}");
        assert_eq!(puts_by_page(&sim, from, *id), 0, "the page sends nothing it handed over");
    }

    let answers = sim.background_fetch(&handed);
    assert!(answers.iter().all(|a| a.is_ok()), "{answers:?}");
    let worker = sim.open_service_worker(&handed);
    sim.run_until_idle();
    for id in &handed {
        assert_eq!(sim.db[id].confirmation, Confirmation::Confirmed, "the service worker confirmed it");
        assert_eq!(sim.server.media_rows_for_attempt(*id), 1);
        assert_eq!(puts_by_page(&sim, from, *id), 0, "only the Background Fetch sent its bytes");
        let view = sim.page().view(id).unwrap();
        assert_eq!(view.confirmation, Confirmation::Confirmed, "the hidden page hears of it: {view:?}");
        assert!(!view.in_background);
    }
    sim.close_tab(worker);
    sim.check_exactly_once().unwrap();
}

#[test]
fn a_page_that_returns_while_the_service_worker_confirms_stores_each_once() {
    for worker_first in [true, false] {
        let mut sim = Sim::new(SimConfig { seed: 2, concurrency: 3, ..SimConfig::default() });
        let handed = handed_over(&mut sim, 3);
        assert_eq!(handed.len(), 3);
        sim.run_until_idle();
        sim.background_fetch(&handed);
        let from = sim.stats.sent.len();
        let worker = if worker_first {
            let worker = sim.open_service_worker(&handed);
            assert_eq!(sim.take_back(), handed, "the page takes every hand-over back");
            worker
        } else {
            assert_eq!(sim.take_back(), handed);
            sim.open_service_worker(&handed)
        };
        sim.run_until_idle();
        for id in &handed {
            assert_eq!(sim.db[id].confirmation, Confirmation::Confirmed);
            assert_eq!(sim.server.media_rows_for_attempt(*id), 1, "one media row, whoever confirmed");
            assert_eq!(puts_by_page(&sim, from, *id), 0, "the stored bytes are not sent again");
            let view = sim.page().view(id).unwrap();
            assert!(view.terminal && !view.in_background && !view.paused, "{view:?}");
        }
        sim.close_tab(worker);
        sim.check_exactly_once().unwrap();
    }
}

#[test]
fn a_fetch_that_stored_nothing_leaves_them_to_the_page_which_sends_them_once() {
    let mut sim = Sim::new(SimConfig { seed: 3, concurrency: 3, ..SimConfig::default() });
    let handed = handed_over(&mut sim, 2);
    assert_eq!(handed.len(), 2);
    sim.run_until_idle();
    // The fetch failed (the network, the browser): nothing reached the store.
    let from = sim.stats.sent.len();
    let worker = sim.open_service_worker(&handed);
    sim.run_until_idle();
    for id in &handed {
        let r = &sim.db[id];
        assert!(r.background && r.paused && r.confirmation == Confirmation::Unconfirmed, "{r:?}");
        assert_eq!(puts_by_page(&sim, from, *id), 0, "the service worker never sends bytes");
    }
    assert!(sim.stats.kinds_since(from).iter().all(|k| *k == ReqKind::Status), "it only asked");
    sim.close_tab(worker);

    assert_eq!(sim.take_back(), handed);
    sim.run_until_idle();
    for id in &handed {
        assert_eq!(sim.record(*id).confirmation, Confirmation::Confirmed);
        assert_eq!(puts_by_page(&sim, from, *id), 1, "sent once, by the page");
        assert!(!sim.db[id].background && !sim.db[id].paused);
    }
    sim.check_exactly_once().unwrap();
}

#[test]
fn only_authorized_single_puts_that_the_guest_did_not_pause_are_handed_over() {
    let mut config = SimConfig { seed: 4, concurrency: 4, ..SimConfig::default() };
    config.server.multipart_threshold = 40_000;
    config.server.part_size = 20_000;
    let mut sim = Sim::new(config);
    let single = sim.add_jpeg(20_000);
    let paused = sim.add_jpeg(21_000);
    let large = sim.add_jpeg(60_000);
    until_authorized(&mut sim, &[single, paused]);
    assert!(sim.pause(paused));
    let not_yet = sim.add_jpeg(22_000);
    let handed = sim.hand_over();
    assert_eq!(handed, vec![single], "{}", sim.dump());
    assert!(!sim.record(paused).background, "the guest's pause stays the guest's");
    assert!(!sim.record(large).background && sim.record(large).multipart.is_some());
    assert!(!sim.record(not_yet).background && sim.record(not_yet).step == Step::Authorize);
    // Taken back before its hand-over was even stored: it goes on here.
    assert_eq!(sim.take_back(), vec![single]);
    assert!(sim.resume(paused));
    sim.run_until_idle();
    for id in [single, paused, large, not_yet] {
        let r = sim.record(id);
        assert_eq!(r.confirmation, Confirmation::Confirmed, "{r:?}");
        assert!(!r.background && !r.paused);
    }
    sim.check_exactly_once().unwrap();
}

#[test]
fn a_hand_over_first_authorizes_every_file_beyond_the_limit_and_starts_no_transfer() {
    let mut sim = Sim::new(SimConfig { seed: 5, concurrency: 1, ..SimConfig::default() });
    let ids: Vec<Uuid> = (0..5).map(|n| sim.add_jpeg(20_000 + n)).collect();
    until_sending_any(&mut sim);
    let from = sim.stats.sent.len();
    sim.prepare_hand_over();
    sim.tick_until(|s| {
        !s.page().hand_over_waits() && !s.inflight().iter().any(|c| !matches!(c, Command::Upload { .. }))
    });
    let started: Vec<&Command> = sim.stats.sent[from..].iter().map(|s| &s.command).collect();
    assert!(started.iter().all(|c| !matches!(c, Command::Upload { .. })), "no transfer starts: {started:?}");
    assert!(ids.iter().all(|id| sim.record(*id).upload.is_some() || sim.record(*id).is_terminal()));
    let handed = sim.hand_over();
    sim.run_until_idle();
    let unfinished = ids.iter().filter(|id| !sim.record(**id).is_terminal()).count();
    assert_eq!(handed.len(), unfinished, "every file not stored yet is handed over\n{}", sim.dump());
    assert!(handed.len() >= 4, "{handed:?}");
    sim.background_fetch(&handed);
    let worker = sim.open_service_worker(&handed);
    sim.run_until_idle();
    sim.close_tab(worker);
    for id in &ids {
        assert_eq!(sim.db[id].confirmation, Confirmation::Confirmed);
    }
    sim.check_exactly_once().unwrap();
}

/// Runs until a PUT is on the wire.
fn until_sending_any(sim: &mut Sim) {
    sim.tick_until(|s| s.inflight().iter().any(|c| matches!(c, Command::Upload { .. })));
}
