//! Whole-file hashing (the content identity of a file that goes up in one
//! PUT) runs beside the transfers, as many files at once as may be sent at
//! once, as long as the bytes held for hashing stay within the hash limit: a
//! batch of photos is not hashed one by one in front of the network.
//! Hashing is local work: it takes no request slot.

mod support;

use support::*;
use upload_once_core::retry::RetryPolicy;
use upload_once_core::scheduler::{Command, Outcome, Scheduler};

const MIB: u64 = 1 << 20;

fn scheduler_with(concurrency: usize, sizes: &[u64]) -> Scheduler {
    let mut s = Scheduler::new(RetryPolicy::default(), concurrency);
    s.set_hash_limit(64 * MIB);
    insert_stored(&mut s, sizes.iter().enumerate().map(|(n, size)| record(n as u128 + 1, *size)));
    s
}

/// The record of attempt `n` is stored (write-ahead: its hash is on disk
/// before the authorize that carries it).
fn persist(s: &mut Scheduler, n: u128) {
    let id = uuid::Uuid::from_u128(n);
    let revision = s.record(&id).expect("a record").revision;
    s.mark_persisted(&id, revision);
}

/// Every command `poll` gives now.
fn drain(s: &mut Scheduler) -> Vec<Command> {
    std::iter::from_fn(|| s.poll(T0)).collect()
}

fn hashes(commands: &[Command]) -> Vec<u128> {
    commands
        .iter()
        .filter_map(|c| match c {
            Command::HashFile { id, .. } => Some(id.as_u128()),
            _ => None,
        })
        .collect()
}

#[test]
fn thirty_photos_are_hashed_as_many_at_a_time_as_may_be_sent() {
    let mut s = scheduler_with(3, &[4 * MIB; 30]);
    let first = drain(&mut s);
    assert_eq!(hashes(&first), vec![1, 2, 3], "three at once, as three requests may be in flight");
    assert_eq!(first.len(), 3, "nothing goes over the network before a file's hash is known");
    assert_eq!(s.active(), 0, "hashing takes no request slot");

    // The first hash answers: its authorize goes out, and the fourth file
    // starts hashing while the second and third are still hashed.
    let mut rng = TestRng::new(1);
    s.handle(&uuid::Uuid::from_u128(1), Outcome::FileHashed(Ok(fake_sha("one", 0))), T0, &mut rng);
    persist(&mut s, 1);
    let next = drain(&mut s);
    assert_eq!(hashes(&next), vec![4]);
    assert!(
        next.iter()
            .any(|c| matches!(c, Command::Authorize { id, request } if id.as_u128() == 1 && request.sha256.is_some())),
        "the first file is authorized with its hash while others are hashed: {next:?}"
    );
}

#[test]
fn one_file_of_any_size_is_hashed_even_above_the_limit_share() {
    // 40 MiB each: two would hold 80 MiB, over the 64 MiB limit.
    let mut s = scheduler_with(3, &[40 * MIB, 40 * MIB, 40 * MIB]);
    assert_eq!(hashes(&drain(&mut s)), vec![1], "one at a time when two would not fit");
    let mut rng = TestRng::new(2);
    s.handle(&uuid::Uuid::from_u128(1), Outcome::FileHashed(Ok(fake_sha("big", 0))), T0, &mut rng);
    persist(&mut s, 1);
    assert_eq!(hashes(&drain(&mut s)), vec![2], "the next once the first is done");
}
