//! While the browser is offline nothing is sent, and network failures do not
//! count as retries: coming back online resumes at once, with the budget
//! intact.

mod support;

use support::*;
use upload_once_core::attempt::{Confirmation, Env, Step};
use upload_once_core::retry::{Failure, RetryPolicy};
use upload_once_core::scheduler::{Command, Outcome, Scheduler};

#[test]
fn nothing_is_polled_while_offline() {
    let mut s = new_scheduler(4);
    insert_stored(&mut s, [record(1, 10)]);
    s.set_online(false);
    assert_eq!(s.poll(T0), None);
    s.set_online(true);
    assert!(matches!(s.poll(T0), Some(Command::Authorize { .. })));
}

#[test]
fn an_offline_network_failure_pauses_without_a_retry_or_a_backoff() {
    let policy = RetryPolicy { base_ms: 1000, cap_ms: 30_000, max_retries: 0 };
    let mut rec = record(1, 10);
    let offline = Env { now: T0, jitter: 0.9, policy: &policy, has_blob: true, online: false };
    let _ = rec.handle_authorize(Err(Failure::Network), &offline);
    assert!(!rec.is_terminal(), "even with max_retries = 0, being offline is not a failure");
    assert_eq!((rec.retries, rec.next_retry_at, rec.step), (0, None, Step::Authorize));
    assert_eq!(rec.error.as_ref().unwrap().code, "network", "the pause is visible");

    // The same failure while online spends the (empty) budget.
    let mut rec = record(2, 10);
    let online = Env { online: true, ..offline };
    let _ = rec.handle_authorize(Err(Failure::Network), &online);
    assert_failed_with(&rec, "retries_exhausted");
}

#[test]
fn an_offline_upload_failure_still_asks_before_uploading_again() {
    let policy = RetryPolicy::default();
    let mut rec = record(1, 10);
    rec.step = Step::Upload;
    let offline = Env { now: T0, jitter: 0.9, policy: &policy, has_blob: true, online: false };
    let _ = rec.handle_upload(Err(Failure::Network), &offline);
    assert_eq!((rec.step, rec.retries), (Step::Check, 0), "the PUT may have landed before the link died");
}

#[test]
fn only_network_failures_are_excused_while_offline() {
    let policy = RetryPolicy { base_ms: 1000, cap_ms: 30_000, max_retries: 0 };
    let mut rec = record(1, 10);
    let offline = Env { now: T0, jitter: 0.9, policy: &policy, has_blob: true, online: false };
    let _ = rec.handle_authorize(Err(Failure::http(503, None, "")), &offline);
    assert_failed_with(&rec, "retries_exhausted");
}

#[test]
fn requests_in_flight_when_the_link_drops_spend_no_retries() {
    let policy = RetryPolicy { base_ms: 1000, cap_ms: 30_000, max_retries: 0 };
    let mut s = Scheduler::new(policy, 4);
    s.set_hash_limit(0); // whole-file hashing: its own tests
    let mut rng = TestRng::new(1);
    let mut ids = Vec::new();
    for n in 1..=4 {
        let r = record(n, 10);
        ids.push(r.id);
        insert_stored(&mut s, [r]);
    }
    let polled: Vec<Command> = std::iter::from_fn(|| s.poll(T0)).collect();
    assert_eq!(polled.len(), 4);
    s.set_online(false);
    for id in &ids {
        s.handle(id, Outcome::Authorize(Err(Failure::Network)), T0 + 10, &mut rng);
        let r = s.record(id).unwrap();
        assert!(!r.is_terminal());
        assert_eq!(r.retries, 0);
        let rev = r.revision;
        s.mark_persisted(id, rev);
    }
    assert_eq!(s.poll(T0 + 20), None, "still offline");
    s.set_online(true);
    let resumed: Vec<Command> = std::iter::from_fn(|| s.poll(T0 + 20)).collect();
    assert_eq!(resumed.len(), 4, "all resume at once when back online, no backoff to sit out");
}

#[test]
fn a_long_outage_with_a_tiny_retry_budget_still_ends_confirmed() {
    let policy = RetryPolicy { base_ms: 1000, cap_ms: 30_000, max_retries: 1 };
    let mut sim = Sim::new(SimConfig { seed: 5, concurrency: 3, policy, ..SimConfig::default() });
    let ids: Vec<_> = (0..6).map(|_| sim.add_jpeg(100)).collect();
    sim.persist_all();
    sim.poll_all();
    sim.go_offline_for(10 * MINUTE); // with three requests in flight
    sim.run_until_idle();
    for id in &ids {
        let r = sim.record(*id);
        assert_eq!(r.confirmation, Confirmation::Confirmed, "{}", sim.dump());
    }
    let offline_sends = sim.stats.sent.iter().filter(|s| s.at > T0 && s.at < T0 + 10 * MINUTE).count();
    assert_eq!(offline_sends, 0, "nothing was sent during the outage");
    let first_after = sim.stats.sent.iter().find(|s| s.at >= T0 + 10 * MINUTE).unwrap().at;
    assert_eq!(first_after, T0 + 10 * MINUTE, "work resumes the moment the browser is back online");
    sim.check_exactly_once().unwrap();
}
