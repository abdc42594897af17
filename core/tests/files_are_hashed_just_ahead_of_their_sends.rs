//! Whole-file hashing runs just ahead of the sends, not through the whole
//! pick at once: the files hashed and waiting for a slot to send their
//! authorize, with those being hashed, are at most as many as may be sent
//! at once (issue 34: hashing thirty photos at the pick held the first
//! files' authorizes and PUTs back on a phone's CPU). A file that waits for
//! another reason (paused, in a backoff) does not hold the others' hashing.

mod support;

use support::*;
use upload_once_core::retry::RetryPolicy;
use upload_once_core::scheduler::{Command, Outcome, Scheduler};
use uuid::Uuid;

const MIB: u64 = 1 << 20;

fn scheduler_with(concurrency: usize, files: usize) -> Scheduler {
    let mut s = Scheduler::new(RetryPolicy::default(), concurrency);
    s.set_hash_limit(64 * MIB);
    insert_stored(&mut s, (1..=files).map(|n| record(n as u128, 4 * MIB)));
    s
}

fn drain(s: &mut Scheduler) -> Vec<Command> {
    std::iter::from_fn(|| s.poll(T0)).collect()
}

fn ids_of(commands: &[Command], hash: bool) -> Vec<u128> {
    commands
        .iter()
        .filter_map(|c| match c {
            Command::HashFile { id, .. } if hash => Some(id.as_u128()),
            Command::Authorize { id, .. } if !hash => Some(id.as_u128()),
            _ => None,
        })
        .collect()
}

fn hashed(s: &mut Scheduler, n: u128, rng: &mut TestRng) {
    s.handle(&Uuid::from_u128(n), Outcome::FileHashed(Ok(fake_sha(&format!("f{n}"), 0))), T0, rng);
}

#[test]
fn no_more_files_are_hashed_than_may_be_sent_next() {
    let mut rng = TestRng::new(7);
    let mut s = scheduler_with(3, 30);
    assert_eq!(ids_of(&drain(&mut s), true), vec![1, 2, 3]);
    for n in 1..=3 {
        hashed(&mut s, n, &mut rng);
    }
    // Three authorizes take the three slots; three more files are hashed
    // for the slots that free next, and no more.
    let next = drain(&mut s);
    assert_eq!(ids_of(&next, false), vec![1, 2, 3]);
    assert_eq!(ids_of(&next, true), vec![4, 5, 6]);
    for n in 4..=6 {
        hashed(&mut s, n, &mut rng);
    }
    assert!(drain(&mut s).is_empty(), "three files hashed and waiting for a slot: nothing more is hashed yet");
    // The first authorize answers; its PUT takes its slot back at once. A
    // failed authorize frees the slot, and the fourth file's authorize goes;
    // the seventh file is hashed in its place.
    s.handle(
        &Uuid::from_u128(1),
        Outcome::Authorize(Err(problem(503, upload_once_core::ErrorCode::Internal, "down"))),
        T0,
        &mut rng,
    );
    let persisted = s.record(&Uuid::from_u128(1)).unwrap().revision;
    s.mark_persisted(&Uuid::from_u128(1), persisted);
    let after = drain(&mut s);
    assert_eq!(ids_of(&after, false), vec![4]);
    assert_eq!(ids_of(&after, true), vec![7], "one more hashed for the one that went");
}

#[test]
fn a_paused_hashed_file_does_not_hold_the_others() {
    let mut rng = TestRng::new(8);
    let mut s = scheduler_with(2, 6);
    assert_eq!(ids_of(&drain(&mut s), true), vec![1, 2]);
    hashed(&mut s, 1, &mut rng);
    hashed(&mut s, 2, &mut rng);
    // Both are paused before a slot took them: they wait for the guest, so
    // two more files are hashed and sent.
    assert!(s.pause(&Uuid::from_u128(1), T0));
    assert!(s.pause(&Uuid::from_u128(2), T0));
    for n in 1..=2u128 {
        let revision = s.record(&Uuid::from_u128(n)).unwrap().revision;
        s.mark_persisted(&Uuid::from_u128(n), revision);
    }
    assert_eq!(ids_of(&drain(&mut s), true), vec![3, 4]);
}

#[test]
fn the_first_files_of_a_pick_are_hashed_while_their_records_are_written() {
    // The driver starts these hashes beside the add's write, and answers the
    // scheduler's first HashFile commands with them.
    let mut sim = Sim::new(SimConfig { seed: 9, concurrency: 3, ..SimConfig::default() });
    let infos: Vec<upload_once_core::attempt::FileInfo> = [4 * MIB, 100 * MIB, 4 * MIB, 4 * MIB, 4 * MIB]
        .iter()
        .enumerate()
        .map(|(i, size)| upload_once_core::attempt::FileInfo {
            name: format!("p{i}.jpg"),
            size: *size,
            content_type: "image/jpeg".into(),
            last_modified: T0 - i as i64,
        })
        .collect();
    let digests = vec![Vec::new(); infos.len()];
    let mut rng = TestRng::new(9);
    let (plan, _) = sim.page_mut().add(&infos, &digests, T0, &mut rng);
    let ids: Vec<Uuid> = plan.new_records.iter().map(|r| r.id).collect();
    // Three at once; the 100 MiB file goes up in parts (hashed part by part).
    assert_eq!(plan.hash_ahead, vec![ids[0], ids[2], ids[3]]);
}
