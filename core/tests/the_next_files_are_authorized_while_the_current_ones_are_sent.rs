//! While every transfer slot is taken, the next files are authorized, so a
//! file's PUT starts the moment a slot frees instead of an authorize's
//! round trip later (issue 34; Uppy and the bare protocol authorize a file
//! only once a slot is free). No more files get ready than the transfers on
//! the wire will free; the transfers themselves never exceed the limit; and
//! a file authorized ahead is still stored exactly once, whatever fails.

mod support;

use support::*;
use upload_once_core::scheduler::{Command, Outcome, Scheduler};
use uuid::Uuid;

fn drain(s: &mut Scheduler) -> Vec<Command> {
    std::iter::from_fn(|| s.poll(T0)).collect()
}

fn authorized(commands: &[Command]) -> Vec<u128> {
    commands.iter().filter_map(|c| matches!(c, Command::Authorize { .. }).then(|| c.id().unwrap().as_u128())).collect()
}

fn uploads(commands: &[Command]) -> Vec<u128> {
    commands.iter().filter_map(|c| matches!(c, Command::Upload { .. }).then(|| c.id().unwrap().as_u128())).collect()
}

/// Answers the authorizes among `commands` from `server`.
fn answer(s: &mut Scheduler, server: &mut FakeServer, commands: &[Command], rng: &mut TestRng) {
    for c in commands {
        if let Command::Authorize { id, request } = c {
            s.handle(id, Outcome::Authorize(server.authorize(request, T0)), T0, rng);
        }
    }
}

#[test]
fn the_next_files_are_ready_when_a_transfer_slot_frees() {
    let (mut server, mut rng) = default_server_and_rng(3);
    let mut s = scheduler_with_records(3, 10);

    // Nothing on the wire yet: three authorizes in the three slots, no more.
    let first = drain(&mut s);
    assert_eq!(authorized(&first), vec![1, 2, 3]);
    answer(&mut s, &mut server, &first, &mut rng);

    // Their PUTs take the slots; the next three files are authorized
    // beside them, one per transfer that will free a slot.
    let next = drain(&mut s);
    assert_eq!(uploads(&next), vec![1, 2, 3]);
    assert_eq!(authorized(&next), vec![4, 5, 6]);
    assert_eq!((s.active(), s.authorizes_ahead()), (3, 3));
    answer(&mut s, &mut server, &next, &mut rng);
    assert_eq!(s.authorizes_ahead(), 0);
    assert!(drain(&mut s).is_empty(), "three files ready for three transfers: nothing more, and no fourth transfer");

    // A transfer ends: the next file's PUT goes at once (no round trip
    // first), and one more file is authorized ahead in its place.
    let Some(Command::Upload { id, instruction }) = next.iter().find(|c| c.id() == Some(Uuid::from_u128(1))) else {
        panic!("the first file's PUT")
    };
    server.put_signed(instruction, 10, T0).unwrap();
    s.handle(id, Outcome::Upload(Ok(())), T0, &mut rng);
    let after = drain(&mut s);
    assert_eq!(uploads(&after), vec![4], "the file authorized ahead is sent at once");
    assert_eq!(authorized(&after), vec![7]);
    assert!(after.iter().any(|c| matches!(c, Command::Confirm { id, .. } if *id == Uuid::from_u128(1))));
    assert_eq!(s.active(), 3, "never more than three transfers");
}

#[test]
fn a_status_check_alone_sends_no_authorize_ahead() {
    // Only transfers free a slot soon: a status check holding the one slot
    // is not a reason to authorize ahead.
    let mut s = new_scheduler(1);
    for n in 1..=2 {
        let mut r = record(n, 10);
        if n == 1 {
            r.restore(T0);
        }
        insert_stored(&mut s, [r]);
    }
    assert!(matches!(s.poll(T0), Some(Command::Status { .. })));
    assert_eq!(s.poll(T0), None);
    assert_eq!(s.authorizes_ahead(), 0);
}

#[test]
fn files_authorized_ahead_are_stored_once_through_faults_and_reloads() {
    for seed in 0..40 {
        let mut sim = Sim::new(SimConfig { seed: 900 + seed, concurrency: 3, ..SimConfig::default() });
        sim.faults.random =
            Some(RandomFaults { probability: 0.25, weights: [1, 1, 1, 1, 1], max_retry_after_ms: 1500 });
        for _ in 0..12 {
            sim.add_jpeg(100);
        }
        // The limit, and the authorizes ahead within it, are checked on every
        // poll; a reload part-way loses what was not stored.
        for _ in 0..40 {
            sim.tick();
        }
        sim.reload(Reload { lose_blob: 0.0, inflight_reached_server: 0.5 });
        sim.run_until_idle();
        sim.check_exactly_once().unwrap();
        assert!(sim.stats.max_authorizes_ahead > 0, "seed {seed}: some file was authorized ahead");
    }
}
