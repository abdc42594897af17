//! No more requests in flight than the concurrency limit, and the limit is
//! actually used. Only owned attempts are driven.

mod support;

use support::*;
use upload_once_core::scheduler::{Command, Outcome};

#[test]
fn polling_stops_at_the_limit_and_resumes_when_a_slot_frees() {
    let mut s = scheduler_with_records(2, 5);
    let a = s.poll(T0).expect("slot 1");
    let b = s.poll(T0).expect("slot 2");
    assert_eq!(s.poll(T0), None, "both slots taken");
    assert_eq!(s.active(), 2);
    let ids: Vec<_> = [&a, &b].iter().flat_map(|c| command_ids(c)).collect();
    assert_ne!(ids[0], ids[1], "two different attempts");
    assert!(s.is_busy(&ids[0]) && s.is_busy(&ids[1]));
    let mut rng = TestRng::new(1);
    s.handle(&ids[0], Outcome::Authorize(Err(upload_once_core::retry::Failure::Network)), T0, &mut rng);
    assert_eq!(s.active(), 1);
    let c = s.poll(T0).expect("a slot is free again");
    assert!(!command_ids(&c).contains(&ids[1]), "not the attempt that is still busy");
    assert_eq!(s.poll(T0), None);
}

#[test]
fn attempts_are_started_in_the_order_the_guest_added_them() {
    let mut s = new_scheduler(10);
    // Insert out of order; created_at decides.
    for (n, created) in [(3u128, T0 + 30), (1, T0 + 10), (2, T0 + 20)] {
        let mut r = record(n, 10);
        r.created_at = created;
        insert_stored(&mut s, [r]);
    }
    let order: Vec<u128> = (0..3).map(|_| command_ids(&s.poll(T0).unwrap())[0].as_u128()).collect();
    assert_eq!(order, vec![1, 2, 3]);
}

#[test]
fn a_zero_limit_still_lets_one_request_through() {
    let mut s = scheduler_with_records(0, 3);
    assert!(s.poll(T0).is_some());
    assert_eq!(s.poll(T0), None);
}

#[test]
fn status_checks_take_a_slot_too() {
    let mut s = new_scheduler(1);
    for n in 1..=3 {
        let mut r = record(n, 10);
        if n != 2 {
            r.restore(T0);
        }
        insert_stored(&mut s, [r]);
    }
    let first = s.poll(T0).unwrap();
    assert!(matches!(&first, Command::Status { ids } if ids.len() == 2), "{first:?}");
    assert_eq!(s.poll(T0), None, "the status request holds the only slot");
}

#[test]
fn attempts_owned_by_another_tab_are_not_driven() {
    let mut s = new_scheduler(4);
    let r = record(1, 10);
    let (id, rev) = (r.id, r.revision);
    s.insert(r, true, false, rev);
    assert_eq!(s.poll(T0), None);
    assert!(s.is_idle(), "someone else's attempt does not keep this page busy");
    s.set_owned(&id, true);
    assert!(matches!(s.poll(T0), Some(Command::Authorize { .. })));
}

#[test]
fn the_simulated_run_fills_but_never_exceeds_the_limit() {
    for concurrency in 1..=4 {
        let mut sim = Sim::new(SimConfig { seed: 200 + concurrency as u64, concurrency, ..SimConfig::default() });
        sim.faults.random = Some(RandomFaults { probability: 0.3, weights: [1, 1, 1, 1, 1], max_retry_after_ms: 2000 });
        for _ in 0..10 {
            sim.add_jpeg(100);
        }
        sim.run_until_idle(); // asserts the limit on every poll
        assert_eq!(sim.stats.max_inflight, concurrency, "limit {concurrency} is reached, not exceeded");
        sim.check_exactly_once().unwrap();
    }
}

#[test]
fn forgetting_an_attempt_in_flight_gives_its_slot_back() {
    let mut sim = Sim::new(SimConfig { seed: 5, concurrency: 1, ..SimConfig::default() });
    let first = sim.add_jpeg(100);
    let second = sim.add_jpeg(100);
    sim.persist_all();
    let commands = sim.poll_all();
    assert_eq!(commands.len(), 1, "one slot");
    let Command::Authorize { id: busy, .. } = &commands[0] else { panic!("an authorize") };
    let other = if *busy == first { second } else { first };
    let busy = *busy;
    sim.forget(busy);
    assert!(sim.scheduler().record(&busy).is_none(), "the guest forgot it mid-request");
    sim.persist_all(); // the other one's content hash is stored first
    assert!(
        matches!(sim.poll_all().as_slice(), [Command::Authorize { id, .. }] if *id == other),
        "the slot is free for the next attempt"
    );
    assert_eq!(sim.scheduler().active(), 1);
}

#[test]
fn a_confirm_goes_beside_the_transfers_and_does_not_hold_the_next_file() {
    // One transfer at a time: the first file's confirm does not keep the
    // second file waiting for its round trip (issue 34); confirms have as
    // many slots of their own.
    let (mut server, mut rng) = default_server_and_rng(5);
    let mut s = scheduler_with_records(1, 3);
    let Some(Command::Authorize { id: first, request }) = s.poll(T0) else { panic!() };
    s.handle(&first, Outcome::Authorize(server.authorize(&request, T0)), T0, &mut rng);
    let Some(Command::Upload { instruction, .. }) = s.poll(T0) else { panic!() };
    server.put_signed(&instruction, 10, T0).unwrap();
    s.handle(&first, Outcome::Upload(Ok(())), T0, &mut rng);
    let next: Vec<Command> = std::iter::from_fn(|| s.poll(T0)).collect();
    assert!(
        matches!(next.as_slice(), [Command::Confirm { id, .. }, Command::Authorize { id: second, .. }] if *id == first && *second != first),
        "the confirm and the next file's authorize go together: {next:?}"
    );
    assert_eq!((s.active(), s.confirms_active()), (1, 1));
    // The second file's bytes go while the first's confirm is on the wire;
    // the third file is authorized meanwhile, and its bytes wait for the
    // one transfer slot.
    let Some(Command::Authorize { id: second, request }) = next.into_iter().nth(1) else { unreachable!() };
    s.handle(&second, Outcome::Authorize(server.authorize(&request, T0)), T0, &mut rng);
    assert!(matches!(s.poll(T0), Some(Command::Upload { id, .. }) if id == second));
    let Some(Command::Authorize { id: third, request }) = s.poll(T0) else { panic!("the next file authorized ahead") };
    assert!(third != first && third != second);
    assert_eq!((s.active(), s.authorizes_ahead()), (1, 1));
    s.handle(&third, Outcome::Authorize(server.authorize(&request, T0)), T0, &mut rng);
    assert_eq!(s.poll(T0), None, "one transfer at a time");
}
