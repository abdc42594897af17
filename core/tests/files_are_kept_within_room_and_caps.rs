//! A picked file is kept in IndexedDB for a reload only within the app's
//! caps and the room the browser's storage estimate leaves (a tenth of it
//! stays free); the view says why a file was not kept. Not keeping a file
//! never stops its upload.

mod support;

use support::*;
use upload_once_core::attempt::Confirmation;

fn reason(sim: &Sim, id: uuid::Uuid) -> Option<&'static str> {
    sim.page().view(&id).unwrap().not_kept_reason
}

fn all_saved(sim: &mut Sim, ids: &[uuid::Uuid]) {
    sim.run_until_idle();
    for id in ids {
        assert_eq!(sim.record(*id).confirmation, Confirmation::Confirmed, "not kept is not lost");
    }
    sim.check_exactly_once().unwrap();
}

#[test]
fn a_file_too_large_or_beyond_the_browsers_room_is_not_kept_and_says_why() {
    let mut sim = Sim::new(SimConfig { seed: 41, keep_file_max_bytes: 600, ..SimConfig::default() });
    // The browser says 1,000 bytes are left: 900 may be used.
    sim.page_mut().set_storage_room(Some(1_000));
    let kept = sim.add_jpeg(400);
    let too_large = sim.add_jpeg(700);
    let no_room = sim.add_jpeg(550);
    sim.pump();
    assert_eq!(reason(&sim, kept), None);
    assert!(sim.page().view(&kept).unwrap().file_kept);
    assert_eq!(reason(&sim, too_large), Some("too_large"));
    assert_eq!(reason(&sim, no_room), Some("no_room"), "400 + 550 > 900");
    // A fresh estimate with room again: the next one is kept.
    sim.page_mut().set_storage_room(Some(10_000));
    let later = sim.add_jpeg(550);
    sim.pump();
    assert_eq!(reason(&sim, later), None);
    all_saved(&mut sim, &[kept, too_large, no_room, later]);
}

#[test]
fn the_apps_total_cap_holds_and_says_why() {
    let mut sim =
        Sim::new(SimConfig { seed: 42, keep_file_max_bytes: 600, keep_files_total_bytes: 800, ..SimConfig::default() });
    let kept = sim.add_jpeg(400);
    let over_total = sim.add_jpeg(450);
    let fits = sim.add_jpeg(300);
    sim.pump();
    assert_eq!(reason(&sim, over_total), Some("over_total"), "400 + 450 > 800");
    assert_eq!(reason(&sim, fits), None);
    assert!(sim.page().view(&fits).unwrap().file_kept);
    all_saved(&mut sim, &[kept, over_total, fits]);
}
