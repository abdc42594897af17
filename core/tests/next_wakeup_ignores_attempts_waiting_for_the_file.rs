//! `next_wakeup()` tells the run loop when to poll again. An attempt that
//! waits for the guest to pick its file again has nothing to wake up for,
//! even if an old backoff time is still in its record; otherwise the loop
//! wakes up "now" over and over (a busy loop) while other attempts sit in a
//! real backoff.

mod support;

use support::*;
use upload_once_core::attempt::{Action, Step};
use upload_once_core::retry::{Failure, RetryPolicy};
use upload_once_core::scheduler::{Command, Scheduler};

#[test]
fn a_needs_file_attempt_with_a_stale_backoff_does_not_pull_the_wakeup_into_the_past() {
    let policy = RetryPolicy::default();
    let (mut server, mut rng) = default_server_and_rng(9);

    // Attempt A was authorized, then its bytes were lost: after a reload it
    // is restored in `needs_file`, without its blob.
    let mut a = record(1, 10);
    let Action::Authorize(req) = a.poll_action(T0, true) else { panic!() };
    let env = upload_once_core::attempt::Env { now: T0, jitter: 0.5, policy: &policy, has_blob: true, online: true };
    let _ = a.handle_authorize(server.authorize(&req, T0), &env);
    assert_eq!(a.poll_action(T0, false), Action::Idle);
    assert!(a.needs_file());
    a.restore(T0);
    let a_id = a.id;

    // Attempt B is unrelated and will sit in a long backoff.
    let b = record(2, 10);
    let b_id = b.id;

    let mut s = Scheduler::new(policy, 4);

    s.set_hash_limit(0); // whole-file hashing: its own tests
    for r in [a, b] {
        let (rev, has_blob) = (r.revision, r.id != a_id);
        s.insert(r, has_blob, true, rev);
    }
    let mut now = T0;
    // A's restore check fails once (network), then succeeds: authorized, no object.
    let ids = match s.poll(now) {
        Some(Command::Status { ids }) => ids,
        other => panic!("{other:?}"),
    };
    assert_eq!(ids, vec![a_id]);
    s.handle_status(&ids, Err(Failure::Network), now, &mut rng);
    // B's authorize is rate limited for a minute.
    let Some(Command::Authorize { .. }) = s.poll(now) else { panic!() };
    let limited = Failure::Http { status: 429, code: None, message: String::new(), retry_after_ms: Some(60_000) };
    s.handle(&b_id, upload_once_core::scheduler::Outcome::Authorize(Err(limited)), now, &mut rng);
    for id in s.take_dirty() {
        let rev = s.record(&id).unwrap().revision;
        s.mark_persisted(&id, rev);
    }
    now = s.record(&a_id).unwrap().next_retry_at.unwrap().max(now) + 1;
    let ids = match s.poll(now) {
        Some(Command::Status { ids }) => ids,
        other => panic!("{other:?}"),
    };
    let answer = server.status(&ids, now);
    s.handle_status(&ids, answer, now, &mut rng);
    for id in s.take_dirty() {
        let rev = s.record(&id).unwrap().revision;
        s.mark_persisted(&id, rev);
    }
    assert_eq!(s.poll(now), None);
    let a_rec = s.record(&a_id).unwrap();
    assert!(a_rec.needs_file() && a_rec.step == Step::Upload, "A waits for its file");

    // Nothing can happen before B's backoff ends, so that is the wakeup.
    let b_due = s.record(&b_id).unwrap().next_retry_at.unwrap();
    assert!(b_due >= T0 + 60_000);
    let wakeup = s.next_wakeup();
    assert!(
        wakeup.is_some_and(|t| t > now),
        "next_wakeup() = {:?} is not in the future (now = T0 + {}), although nothing can be polled before T0 + {}; \
         A keeps next_retry_at = {:?} while it waits for its file",
        wakeup.map(|t| t - T0),
        now - T0,
        b_due - T0,
        a_rec.next_retry_at.map(|t| t - T0),
    );
    assert_eq!(wakeup, Some(b_due));
}
