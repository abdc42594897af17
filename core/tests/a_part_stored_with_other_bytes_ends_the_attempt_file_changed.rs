//! A part's URL is bound to its digest, so a `412 object_exists` answered
//! for one part means the store holds that part with other bytes: the file
//! in hand is not the one whose part was stored. The attempt ends
//! `file_changed` (terminal, shown to the guest); nothing is sent again and
//! nothing is confirmed. (For a single PUT, 412 still means "go and
//! confirm": confirm compares the object.) And a file held here that the
//! browser refuses to read ends `file_unreadable`, not a silent
//! `needs_file`.

mod support;

use support::*;
use upload_once_core::attempt::{Confirmation, Transfer};

#[test]
fn a_412_for_a_part_ends_the_attempt_file_changed() {
    let mut sim = Sim::multipart(71);
    sim.server.parts_held_otherwise.insert(4);
    let id = sim.add_jpeg(48);
    sim.run_until_idle();
    let r = sim.record(id);
    assert_eq!(r.transfer, Transfer::Failed);
    assert_eq!(r.confirmation, Confirmation::Unconfirmed);
    assert_eq!(r.error.as_ref().map(|e| e.code.as_str()), Some("file_changed"), "{:?}", r.error);
    assert!(r.is_terminal());
    let part_4_puts = sim
        .stats
        .sent
        .iter()
        .filter(|s| matches!(s.command, upload_once_core::scheduler::Command::UploadPart { number: 4, .. }))
        .count();
    assert_eq!(part_4_puts, 1, "not sent again");
    assert!(sim.server.media.is_empty(), "nothing confirmed");
    assert!(sim.server.parts_stored.values().all(|n| *n == 1), "nothing stored twice");
}

#[test]
fn a_file_the_browser_will_not_read_ends_file_unreadable() {
    let mut sim = Sim::multipart(72);
    let id = sim.add_jpeg(48);
    let blob_key = sim.record(id).blob_key;
    sim.unreadable.insert(blob_key);
    sim.run_until_idle();
    let r = sim.record(id);
    assert_eq!(r.transfer, Transfer::Failed, "{r:?}");
    assert_eq!(r.error.as_ref().map(|e| e.code.as_str()), Some("file_unreadable"));
    assert!(r.error.as_ref().unwrap().message.contains("could not read"));
    assert_ne!(r.transfer, Transfer::NeedsFile);
    assert!(
        sim.stats.sent.iter().all(|s| !matches!(s.command, upload_once_core::scheduler::Command::UploadPart { .. }))
    );

    // A file that goes up in one PUT, hashed whole first: the same.
    let mut sim = Sim::multipart(73);
    let id = sim.add_jpeg(12);
    sim.unreadable.insert(sim.record(id).blob_key);
    sim.run_until_idle();
    let r = sim.record(id);
    assert_eq!(r.error.as_ref().map(|e| e.code.as_str()), Some("file_unreadable"), "{r:?}");
    assert!(r.is_terminal());
}
