//! The harness every other test relies on: the fake server must model the
//! reference server's semantics, the fault layer must do what it says, and
//! a simulation must be reproducible from its seed.

mod support;

use support::*;
use upload_once_core::Entropy;
use upload_once_core::wire::{AttemptState, AttemptStatus, AuthorizeRequest, ConfirmRequest};
use uuid::Uuid;

fn req(n: u128, size: u64) -> AuthorizeRequest {
    AuthorizeRequest {
        id: Uuid::from_u128(n),
        filename: format!("f{n}.jpg"),
        size,
        content_type: "image/jpeg".into(),
        sha256: None,
    }
}

fn confirm(size: u64) -> ConfirmRequest {
    ConfirmRequest { size, content_type: "image/jpeg".into(), sha256: None, composite_sha256: None }
}

#[test]
fn authorize_is_create_or_return_by_id() {
    let mut s = FakeServer::new(ServerConfig::default());
    let a = s.authorize(&req(1, 10), T0).unwrap();
    let b = s.authorize(&req(1, 10), T0 + 1000).unwrap();
    assert_eq!((a.id, a.state, &a.object_key), (b.id, AttemptState::Authorized, &b.object_key));
    assert_eq!(a.expires_at, b.expires_at, "the attempt's TTL is fixed at creation");
    assert_eq!(s.attempts.len(), 1);
    assert_eq!(http_code(s.authorize(&req(1, 11), T0)), (422, "id_reused".into()));
    let url = a.upload.unwrap().put().cloned().unwrap();
    assert_eq!(url.method, "PUT");
    assert_eq!(url.expires_at, upload_once_core::time::format_rfc3339(T0 + s.config.url_ttl_ms));
    assert_eq!(a.expires_at, upload_once_core::time::format_rfc3339(T0 + s.config.attempt_ttl_ms));
}

#[test]
fn put_checks_url_expiry_and_is_idempotent() {
    let mut s = FakeServer::new(ServerConfig::default());
    let a = s.authorize(&req(1, 10), T0).unwrap();
    let url = a.upload.unwrap().put().cloned().unwrap();
    assert_eq!(s.put_signed(&url, 10, T0 + 1), Ok(()));
    assert_eq!(s.put_signed(&url, 10, T0 + 2), Ok(()), "the same object again is fine");
    assert_eq!(s.puts_for_key(&a.object_key), 2);
    assert_eq!(http_code(s.put_signed(&url, 10, T0 + s.config.url_ttl_ms)), (403, "url_expired".into()));
    assert_eq!(http_code(s.put_signed(&url, 9, T0 + 3)), (400, "length_mismatch".into()));
    assert_eq!(s.put_requests_for_key(&a.object_key), 4);
}

#[test]
fn confirm_is_create_or_return_with_one_media_row() {
    let mut s = FakeServer::new(ServerConfig::default());
    let id = Uuid::from_u128(1);
    let a = s.authorize(&req(1, 10), T0).unwrap();
    assert_eq!(http_code(s.confirm(id, &confirm(10), T0)), (409, "object_missing".into()));
    s.put_signed(a.upload.as_ref().and_then(|u| u.put()).unwrap(), 10, T0).unwrap();
    let m1 = s.confirm(id, &confirm(10), T0 + 1).unwrap();
    let m2 = s.confirm(id, &confirm(10), T0 + 2).unwrap();
    assert_eq!(m1, m2);
    assert_eq!(s.media_rows_for_attempt(id), 1);
    assert_eq!(
        http_code(s.put_signed(a.upload.as_ref().and_then(|u| u.put()).unwrap(), 10, T0 + 3)),
        (409, "already_confirmed".into())
    );
    assert_eq!(http_code(s.renew(id, T0 + 3)), (409, "already_confirmed".into()));
    assert!(matches!(s.status_of(id, T0 + 3), AttemptStatus::Confirmed { media, .. } if media.id == m1.id));
    assert_eq!(http_code(s.confirm(Uuid::from_u128(99), &confirm(1), T0)), (404, "not_found".into()));
}

#[test]
fn a_mismatch_at_confirm_rejects_the_attempt_for_good() {
    let mut s = FakeServer::new(ServerConfig::default());
    let id = Uuid::from_u128(1);
    let a = s.authorize(&req(1, 10), T0).unwrap();
    s.put_signed(a.upload.as_ref().and_then(|u| u.put()).unwrap(), 10, T0).unwrap();
    assert_eq!(http_code(s.confirm(id, &confirm(11), T0)), (422, "size_mismatch".into()));
    assert_eq!(http_code(s.confirm(id, &confirm(10), T0)), (422, "size_mismatch".into()), "rejected stays rejected");
    assert!(matches!(s.status_of(id, T0), AttemptStatus::Rejected { code, .. } if code == "size_mismatch"));
    assert!(s.media.is_empty());
}

#[test]
fn attempts_expire_after_their_ttl_and_lose_their_object() {
    let mut s = FakeServer::new(ServerConfig::default());
    let id = Uuid::from_u128(1);
    let a = s.authorize(&req(1, 10), T0).unwrap();
    s.put_signed(a.upload.as_ref().and_then(|u| u.put()).unwrap(), 10, T0).unwrap();
    assert!(matches!(s.status_of(id, T0), AttemptStatus::Authorized { object_stored: true, .. }));
    let later = T0 + s.config.attempt_ttl_ms;
    assert_eq!(s.status_of(id, later), AttemptStatus::Expired { id });
    assert!(s.objects.is_empty(), "the expired attempt's object is deleted");
    assert_eq!(http_code(s.confirm(id, &confirm(10), later)), (410, "expired".into()));
    assert_eq!(http_code(s.renew(id, later)), (410, "expired".into()));
    // As the reference server answers a repeat of an expired attempt.
    assert_eq!(http_code(s.authorize(&req(1, 10), later)), (410, "expired".into()));
}

#[test]
fn status_answers_every_id_in_order_and_refuses_more_than_500() {
    let mut s = FakeServer::new(ServerConfig::default());
    s.authorize(&req(1, 10), T0).unwrap();
    let ids = [Uuid::from_u128(2), Uuid::from_u128(1)];
    let r = s.status(&ids, T0).unwrap();
    assert_eq!(r.results.iter().map(|x| x.id()).collect::<Vec<_>>(), ids);
    assert!(matches!(r.results[0], AttemptStatus::NotFound { .. }));
    let many: Vec<Uuid> = (0..501).map(Uuid::from_u128).collect();
    assert_eq!(http_code(s.status(&many, T0)), (422, "too_many_ids".into()));
}

#[test]
fn the_server_clock_offset_shifts_its_expiries() {
    let mut s = FakeServer::new(ServerConfig { clock_offset_ms: -HOUR, ..ServerConfig::default() });
    let a = s.authorize(&req(1, 10), T0).unwrap();
    let url = a.upload.unwrap().put().cloned().unwrap();
    assert_eq!(url.expires_at, upload_once_core::time::format_rfc3339(T0 - HOUR + s.config.url_ttl_ms));
    // At client time T0 + 10 min the URL (T0 - 45 min) looks long expired to
    // the client, but the server clock says T0 - 50 min: still valid.
    assert_eq!(s.put_signed(&url, 10, T0 + 10 * MINUTE), Ok(()), "valid on the server's (earlier) clock");
    assert_eq!(http_code(s.put_signed(&url, 10, T0 + 15 * MINUTE)), (403, "url_expired".into()));
}

#[test]
fn faults_apply_before_or_after_the_server_commits() {
    let mut sim = Sim::with_faults(1, &[(ReqKind::Authorize, Fault::DropBefore)]);
    let id = sim.add_jpeg(10);
    sim.persist_all();
    sim.poll_all();
    sim.resolve(0);
    assert!(sim.server.attempts.is_empty(), "dropped before: no effect");
    sim.faults.script(ReqKind::Authorize, Fault::DropAfter);
    sim.now = sim.record(id).next_retry_at.unwrap();
    sim.persist_all();
    sim.poll_all();
    let (_, reply) = sim.resolve(0);
    assert!(format!("{reply:?}").contains("Network"));
    assert_eq!(sim.server.attempts.len(), 1, "dropped after: the effect is there, the answer is not");
    assert_eq!(sim.faults.injected.len(), 2);
}

#[test]
fn random_faults_follow_their_probability_and_weights() {
    let mut layer = FaultLayer::new(9);
    layer.random = Some(RandomFaults { probability: 0.25, weights: [0, 3, 0, 0, 1], max_retry_after_ms: 0 });
    let decided: Vec<Option<Fault>> = (0..8000).map(|_| layer.decide(ReqKind::Confirm)).collect();
    let faulted = decided.iter().filter(|d| d.is_some()).count() as f64 / 8000.0;
    assert!((faulted - 0.25).abs() < 0.02, "{faulted}");
    let after = decided.iter().filter(|d| **d == Some(Fault::DropAfter)).count() as f64;
    let limited = decided.iter().filter(|d| matches!(d, Some(Fault::RateLimited { .. }))).count() as f64;
    assert!((after / (after + limited) - 0.75).abs() < 0.04);
    assert!(
        decided.iter().flatten().all(|f| matches!(f, Fault::DropAfter | Fault::RateLimited { retry_after_ms: None }))
    );
    layer.enabled = false;
    assert!((0..100).all(|_| layer.decide(ReqKind::Confirm).is_none()));
}

#[test]
fn the_same_seed_replays_the_same_run() {
    let run = |seed: u64| {
        let mut sim = Sim::with_seed(seed);
        sim.faults.random = Some(RandomFaults { probability: 0.4, weights: [1, 1, 1, 1, 1], max_retry_after_ms: 3000 });
        for _ in 0..5 {
            sim.add_jpeg(10);
        }
        for i in 0..150 {
            if i == 60 {
                sim.reload(Reload { lose_blob: 0.3, inflight_reached_server: 0.5 });
            }
            sim.tick();
        }
        sim.faults.enabled = false;
        sim.run_until_idle();
        (format!("{:?}", sim.stats.sent), sim.now, sim.server.media.len())
    };
    assert_eq!(run(77), run(77));
    assert_ne!(run(77).0, run(78).0, "a different seed, a different schedule");
}

#[test]
fn the_test_rng_is_deterministic_and_fills_every_byte() {
    let mut a = TestRng::new(5);
    let mut b = TestRng::new(5);
    let mut buf_a = [0u8; 13];
    let mut buf_b = [0u8; 13];
    a.fill(&mut buf_a);
    b.fill(&mut buf_b);
    assert_eq!(buf_a, buf_b);
    assert!(buf_a[8..].iter().any(|b| *b != 0), "a partial chunk is filled too");
    let units: Vec<f64> = (0..1000).map(|_| a.unit()).collect();
    assert!(units.iter().all(|u| (0.0..1.0).contains(u)));
    assert_ne!(upload_once_core::new_attempt_id(&mut a), upload_once_core::new_attempt_id(&mut a));
}
