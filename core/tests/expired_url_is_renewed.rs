//! A signed URL that has expired is renewed, and the bytes then go up with
//! the fresh URL: exactly one stored PUT, at most one refused one.
//!
//! Whether the client skips a URL its own clock believes expired, or tries
//! it and lets storage refuse it (403 `url_expired`), is its choice: the
//! server is the judge of expiry. These tests hold for both.

mod support;

use support::*;
use upload_once_core::attempt::{Action, Env, Step};
use upload_once_core::retry::{Failure, RetryPolicy};
use upload_once_core::scheduler::Command;
use upload_once_core::time::parse_rfc3339;

/// The expiry of every URL a PUT was sent to, in order.
fn put_url_expiries(sim: &Sim) -> Vec<i64> {
    sim.stats
        .sent
        .iter()
        .filter_map(|s| match &s.command {
            Command::Upload { instruction, .. } => Some(parse_rfc3339(&instruction.expires_at).unwrap()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_url_that_expired_while_waiting_is_renewed_and_the_put_uses_the_fresh_one() {
    let mut sim = Sim::with_seed(31);
    let id = sim.add_jpeg_answered(300, ReqKind::Authorize);
    let stale = parse_rfc3339(&sim.record(id).upload.as_ref().unwrap().expires_at).unwrap();
    sim.now = stale + 1; // the tab slept past the URL's expiry
    sim.run_until_idle();

    let kinds = sim.stats.kinds_for(id);
    assert_eq!(renews(&kinds), 1, "one renew: {kinds:?}");
    assert_eq!(without_renews(&kinds).last(), Some(&ReqKind::Confirm));
    let key = sim.server.object_key_of(id).unwrap();
    assert_eq!(sim.server.puts_for_key(&key), 1, "stored once");
    assert!(sim.server.put_requests_for_key(&key) <= 2, "at most one refused PUT with the stale URL");
    let used = put_url_expiries(&sim);
    assert!(*used.last().unwrap() > stale, "the PUT that stored used the renewed URL");
    assert!(used.iter().filter(|e| **e == stale).count() <= 1, "the stale URL is not tried twice");
    let renew_at = sim.stats.sent.iter().position(|s| matches!(s.command, Command::Renew { .. })).unwrap();
    let last_put = sim.stats.sent.iter().rposition(|s| matches!(s.command, Command::Upload { .. })).unwrap();
    assert!(renew_at < last_put, "renew, then the successful PUT");
    sim.check_exactly_once().unwrap();
}

#[test]
fn a_put_refused_because_the_url_expired_in_flight_is_renewed_and_repeated() {
    let mut sim = Sim::with_seed(32);
    let id = sim.add_jpeg_answered_and_persisted(300, ReqKind::Authorize);
    let polled = sim.poll_all();
    assert!(matches!(polled.as_slice(), [Command::Upload { .. }]), "{polled:?}");
    sim.advance(sim.config.server.url_ttl_ms); // a very slow connection
    let (_, reply) = sim.resolve(0);
    assert!(format!("{reply:?}").contains("url_expired"), "{reply:?}");
    let r = sim.record(id);
    assert_eq!(r.step, Step::Renew, "a refused URL is renewed");
    assert_eq!(r.next_retry_at, Some(sim.now), "a renew is a new step, not a repeat: no backoff");
    sim.run_until_idle();

    assert_eq!(
        sim.stats.kinds_for(id),
        vec![ReqKind::Authorize, ReqKind::Upload, ReqKind::Renew, ReqKind::Upload, ReqKind::Confirm]
    );
    let key = sim.server.object_key_of(id).unwrap();
    assert_eq!((sim.server.put_requests_for_key(&key), sim.server.puts_for_key(&key)), (2, 1));
    let used = put_url_expiries(&sim);
    assert!(used[1] > used[0], "the second PUT used a fresh URL");
    sim.check_exactly_once().unwrap();
}

fn authorized(n: u128) -> upload_once_core::attempt::AttemptRecord {
    let mut server = FakeServer::new(ServerConfig::default());
    let mut rec = record(n, 10);
    let Action::Authorize(req) = rec.poll_action(T0, true) else { panic!() };
    let policy = RetryPolicy::default();
    let env = Env { now: T0, jitter: 0.5, policy: &policy, has_blob: true, online: true };
    let _ = rec.handle_authorize(server.authorize(&req, T0), &env);
    assert_eq!(rec.step, Step::Upload);
    rec
}

#[test]
fn a_bare_403_from_s3_style_storage_also_renews_without_waiting() {
    let mut rec = authorized(4);
    let policy = RetryPolicy::default();
    let env = Env { now: T0 + 10, jitter: 0.9, policy: &policy, has_blob: true, online: true };
    let _ = rec.handle_upload(Err(Failure::http(403, None, "Forbidden")), &env);
    assert_eq!(rec.step, Step::Renew);
    assert_eq!(rec.next_retry_at, Some(T0 + 10));
    assert_eq!(rec.retries, 1, "but it counts against max_retries");
    assert_eq!(rec.poll_action(T0 + 10, true), Action::Renew);
}

#[test]
fn without_a_url_the_upload_step_renews_first() {
    let mut rec = authorized(5);
    rec.upload = None;
    let revision = rec.revision;
    assert_eq!(rec.poll_action(T0 + 1, true), Action::Renew);
    assert_eq!(rec.step, Step::Renew);
    assert!(rec.revision > revision, "the switch to renew is a durable change");
}

#[test]
fn a_renewed_url_replaces_the_old_one() {
    let mut server = FakeServer::new(ServerConfig::default());
    let mut rec = record(6, 10);
    let policy = RetryPolicy::default();
    let Action::Authorize(req) = rec.poll_action(T0, true) else { panic!() };
    let env = |now| Env { now, jitter: 0.5, policy: &policy, has_blob: true, online: true };
    let _ = rec.handle_authorize(server.authorize(&req, T0), &env(T0));
    let old = rec.upload.clone().unwrap();
    rec.step = Step::Renew;
    let later = T0 + 20 * MINUTE;
    let _ = rec.handle_renew(server.renew(rec.id, later), &env(later));
    assert_eq!(rec.step, Step::Upload);
    let new = rec.upload.clone().unwrap();
    assert_ne!(new.url, old.url);
    assert_eq!(parse_rfc3339(&new.expires_at), Some(later + server.config.url_ttl_ms));
    assert!(matches!(rec.poll_action(later, true), Action::Upload(u) if u == new));
}
