//! At authorize, a claimed SHA-256 that the content index holds makes the
//! attempt a duplicate (confirmed at once, nothing sent) only when the media
//! indexed there is the same file, the same size and content type, and one
//! the claimer can already see (its own, or approved)
//! (`decide::dedup::claim_matches`, which the reference server and the
//! simulation's server both call). A claim that differs in either goes up
//! and is checked at confirm like any other.

mod support;

use support::*;
use upload_once_core::attempt::{Confirmation, FileInfo};
use upload_once_core::decide::dedup::{Indexed, claim_matches};
use upload_once_core::page::Added;
use uuid::Uuid;

fn sim() -> Sim {
    let mut config = SimConfig { seed: 7, ..SimConfig::default() };
    config.server.dedup = Dedup::Event;
    Sim::new(config)
}

/// The guest picks a file whose bytes hash like `content`: its attempt.
fn pick(sim: &mut Sim, name: &str, size: u64, content_type: &str, content: &str) -> Uuid {
    let file = FileInfo { name: name.to_owned(), size, content_type: content_type.to_owned(), last_modified: T0 };
    match sim.add_files_with(&[file], &[content.to_owned()]).outcomes.as_slice() {
        [Added::New(id)] => *id,
        other => panic!("a new attempt, got {other:?}"),
    }
}

fn sent_bytes(sim: &Sim, id: Uuid) -> bool {
    sim.stats.kinds_for(id).iter().any(|k| matches!(k, ReqKind::Upload | ReqKind::UploadPart))
}

#[test]
fn the_same_size_and_type_match_and_nothing_else_does() {
    let indexed = Indexed { size: 20_000, content_type: "image/jpeg", seen_by_claimer: true };
    assert!(claim_matches(&indexed, 20_000, "image/jpeg"));
    assert!(!claim_matches(&indexed, 20_001, "image/jpeg"), "another size");
    assert!(!claim_matches(&indexed, 20_000, "image/png"), "another type");
}

#[test]
fn a_claim_of_what_the_claimer_cannot_see_is_a_new_file() {
    let hidden = Indexed { size: 20_000, content_type: "image/jpeg", seen_by_claimer: false };
    assert!(!claim_matches(&hidden, 20_000, "image/jpeg"), "another guest's photo the host has not approved");
}

#[test]
fn a_claim_of_indexed_bytes_for_another_size_or_type_is_sent_and_confirmed() {
    let mut sim = sim();
    let first = pick(&mut sim, "IMG_0001.jpg", 20_000, "image/jpeg", "the cake");
    sim.run_until_idle();
    assert_eq!(sim.record(first).confirmation, Confirmation::Confirmed);

    let larger = pick(&mut sim, "IMG_0002.jpg", 30_000, "image/jpeg", "the cake");
    let other_type = pick(&mut sim, "IMG_0003.png", 20_000, "image/png", "the cake");
    let same = pick(&mut sim, "IMG_0001 copy.jpg", 20_000, "image/jpeg", "the cake");
    sim.run_until_idle();

    for id in [larger, other_type] {
        assert!(sent_bytes(&sim, id), "not a duplicate at authorize: {:?}", sim.stats.kinds_for(id));
        assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed, "and not lost");
    }
    assert!(!sent_bytes(&sim, same), "the same file is: {:?}", sim.stats.kinds_for(same));
    assert!(sim.record(same).is_duplicate());
}
