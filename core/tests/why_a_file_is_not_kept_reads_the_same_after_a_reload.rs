//! Why a file is not kept for a reload (`notKeptReason`) is stored with its
//! attempt's record, so the page that opens after a reload shows the same
//! reason, not `null` beside `fileKept: false`.

mod support;

use support::*;

fn reason(sim: &Sim, id: uuid::Uuid) -> Option<&'static str> {
    sim.page().view(&id).unwrap().not_kept_reason
}

#[test]
fn the_reason_a_file_is_not_kept_survives_a_reload() {
    let mut sim = Sim::new(SimConfig { seed: 43, keep_file_max_bytes: 600, ..SimConfig::default() });
    sim.page_mut().set_storage_room(Some(1_000));
    let kept = sim.add_jpeg(400);
    let too_large = sim.add_jpeg(700);
    let no_room = sim.add_jpeg(550);
    sim.pump();
    assert_eq!((reason(&sim, too_large), reason(&sim, no_room)), (Some("too_large"), Some("no_room")));
    // Stored with the record before the page goes away.
    sim.persist_all();
    assert_eq!(sim.db[&too_large].not_kept.map(|n| n.as_str()), Some("too_large"));

    sim.reload(Reload::KEEP_BLOBS);
    for id in [too_large, no_room] {
        let view = sim.page().view(&id).unwrap();
        assert!(!view.file_kept);
    }
    assert_eq!(reason(&sim, too_large), Some("too_large"), "the same reason after the reload");
    assert_eq!(reason(&sim, no_room), Some("no_room"));
    assert_eq!(reason(&sim, kept), None, "a kept file has none");
    sim.run_until_idle();
    assert_eq!(reason(&sim, too_large), Some("too_large"));
}
