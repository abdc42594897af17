//! When the PUT landed but its answer was lost, the client asks the server,
//! finds the object stored and confirms, even though the signed URL has
//! expired meanwhile: no renew, no second PUT.

mod support;

use support::*;
use upload_once_core::attempt::{Action, Env, Step, Transfer};
use upload_once_core::retry::{Failure, RetryPolicy};
use upload_once_core::scheduler::Command;

#[test]
fn a_lost_put_answer_then_an_expired_url_leads_to_confirm_only() {
    let mut sim = Sim::with_faults(41, &[(ReqKind::Upload, Fault::DropAfter)]);
    let id = sim.add_jpeg_answered(300, ReqKind::Upload);
    assert_eq!(sim.record(id).step, Step::Check, "an ambiguous PUT failure asks the server first");
    sim.advance(sim.config.server.url_ttl_ms + MINUTE);
    sim.run_until_idle();

    assert_eq!(sim.stats.kinds_for(id), vec![ReqKind::Authorize, ReqKind::Upload, ReqKind::Status, ReqKind::Confirm]);
    let key = sim.server.object_key_of(id).unwrap();
    assert_eq!(sim.server.puts_for_key(&key), 1);
    assert_eq!(sim.server.put_requests_for_key(&key), 1, "no second PUT");
    assert_eq!(sim.stats.count(ReqKind::Renew), 0, "no URL was needed");
    sim.check_exactly_once().unwrap();
}

#[test]
fn a_reload_during_a_put_that_landed_confirms_after_the_url_expired() {
    let mut sim = Sim::with_seed(42);
    let id = sim.add_jpeg_answered_and_persisted(300, ReqKind::Authorize);
    assert!(matches!(sim.poll_all().as_slice(), [Command::Upload { .. }]));
    // The PUT reaches storage, then the page goes away with its answer.
    sim.reload(Reload { lose_blob: 0.0, inflight_reached_server: 1.0 });
    sim.advance(sim.config.server.url_ttl_ms + MINUTE);
    let after = sim.kinds_sent_until_idle();

    assert_eq!(after, vec![ReqKind::Status, ReqKind::Confirm]);
    let key = sim.server.object_key_of(id).unwrap();
    assert_eq!(sim.server.put_requests_for_key(&key), 1);
    sim.check_exactly_once().unwrap();
}

#[test]
fn the_same_holds_when_the_bytes_were_lost_with_the_page() {
    let mut sim = Sim::with_seed(43);
    let id = sim.add_jpeg_answered_and_persisted(300, ReqKind::Authorize);
    sim.poll_all();
    sim.reload(Reload { lose_blob: 1.0, inflight_reached_server: 1.0 });
    sim.advance(sim.config.server.url_ttl_ms + MINUTE);
    sim.run_until_idle();
    assert_eq!(
        sim.record(id).confirmation,
        upload_once_core::attempt::Confirmation::Confirmed,
        "the stored object needs no bytes"
    );
    assert_eq!(sim.server.media_rows_for_attempt(id), 1);
}

#[test]
fn object_exists_from_storage_goes_straight_to_confirm() {
    let policy = RetryPolicy::default();
    let mut server = FakeServer::new(ServerConfig::default());
    let mut rec = record(1, 10);
    let Action::Authorize(req) = rec.poll_action(T0, true) else { panic!() };
    let env = |now| Env { now, jitter: 0.9, policy: &policy, has_blob: true, online: true };
    let _ = rec.handle_authorize(server.authorize(&req, T0), &env(T0));
    let Action::Upload(_) = rec.poll_action(T0 + 1, true) else { panic!() };
    let _ = rec.handle_upload(Err(Failure::http(412, Some("object_exists"), "")), &env(T0 + 2));
    assert_eq!((rec.step, rec.transfer), (Step::Confirm, Transfer::Uploaded));
    assert_eq!(rec.next_retry_at, Some(T0 + 2), "confirm right away, no backoff");
    assert!(matches!(rec.poll_action(T0 + 2, true), Action::Confirm(_)));
}
