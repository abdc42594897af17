//! Backoff: the ceiling doubles from `base` up to `cap`, full jitter draws
//! from `[0, ceiling]`, `Retry-After` is a lower bound, and `max_retries`
//! ends in a visible `retries_exhausted` failure instead of retrying forever.

mod support;

use support::*;
use upload_once_core::Entropy;
use upload_once_core::attempt::{Env, Step, Transfer};
use upload_once_core::retry::{Failure, RetryPolicy};

fn env(now: i64, jitter: f64, policy: &RetryPolicy) -> Env<'_> {
    Env { now, jitter, policy, has_blob: true, online: true }
}

fn unavailable(retry_after_ms: Option<u64>) -> Failure {
    Failure::Http { status: 503, code: Some("database_unavailable".into()), message: "down".into(), retry_after_ms }
}

#[test]
fn ceiling_doubles_from_base_until_the_cap() {
    let p = RetryPolicy::default();
    assert_eq!((p.base_ms, p.cap_ms, p.max_retries), (1000, 30_000, 10), "documented defaults");
    let expected = [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000];
    for (retry, want) in expected.iter().enumerate() {
        assert_eq!(p.ceiling_ms(retry as u32), *want, "ceiling before retry {retry}");
    }
}

#[test]
fn ceiling_matches_min_of_cap_and_base_times_two_to_the_retry_for_any_policy() {
    let mut rng = TestRng::new(11);
    for _ in 0..200 {
        let base = rng.below(5000) + 1;
        let cap = base + rng.below(1_000_000);
        let p = RetryPolicy { base_ms: base, cap_ms: cap, max_retries: 5 };
        for retry in [0u32, 1, 2, 5, 10, 31, 32, 62, 63, 64, 100, u32::MAX] {
            // base >= 1, so from 2^64 on the product exceeds any u64 cap.
            let exact = if retry >= 64 { cap } else { (u128::from(base) << retry).min(u128::from(cap)) as u64 };
            assert_eq!(p.ceiling_ms(retry), exact, "base {base} cap {cap} retry {retry}");
        }
    }
}

#[test]
fn huge_retry_counts_do_not_overflow_the_ceiling() {
    let p = RetryPolicy { base_ms: u64::MAX / 2, cap_ms: u64::MAX, max_retries: 1 };
    assert_eq!(p.ceiling_ms(0), u64::MAX / 2);
    assert_eq!(p.ceiling_ms(1), u64::MAX - 1);
    assert_eq!(p.ceiling_ms(2), u64::MAX, "saturates instead of wrapping");
    assert_eq!(p.ceiling_ms(u32::MAX), u64::MAX);
}

#[test]
fn full_jitter_scales_the_ceiling_by_the_draw() {
    let p = RetryPolicy::default();
    assert_eq!(p.delay_ms(3, 0.0, 0), 0, "a zero draw retries at once");
    assert_eq!(p.delay_ms(3, 0.25, 0), 2000);
    assert_eq!(p.delay_ms(3, 0.5, 0), 4000);
    let near_one = 1.0 - f64::EPSILON;
    assert!(p.delay_ms(3, near_one, 0) >= 7999 && p.delay_ms(3, near_one, 0) <= 8000);
    assert_eq!(p.delay_ms(20, 0.5, 0), 15_000, "half of the capped ceiling");
}

#[test]
fn out_of_range_draws_stay_within_zero_and_the_ceiling() {
    let p = RetryPolicy::default();
    for unit in [-0.5, -0.0, 1.0, 1.5, f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
        let d = p.delay_ms(2, unit, 0);
        assert!(d <= p.ceiling_ms(2), "draw {unit} gave {d}");
    }
    assert_eq!(p.delay_ms(2, f64::NAN, 0), 0);
}

#[test]
fn jitter_is_spread_over_the_whole_interval() {
    // Full jitter, not "equal jitter" (ceiling/2 + rand) nor a fixed delay.
    let p = RetryPolicy::default();
    let mut rng = TestRng::new(3);
    let draws: Vec<u64> = (0..20_000).map(|_| p.delay_ms(3, rng.unit(), 0)).collect();
    let ceiling = p.ceiling_ms(3);
    assert!(draws.iter().all(|d| *d <= ceiling));
    let min = *draws.iter().min().unwrap();
    let max = *draws.iter().max().unwrap();
    let mean = draws.iter().sum::<u64>() as f64 / draws.len() as f64;
    assert!(min < ceiling / 50, "smallest delay {min} should be near 0");
    assert!(max > ceiling - ceiling / 50, "largest delay {max} should be near {ceiling}");
    assert!((mean - ceiling as f64 / 2.0).abs() < ceiling as f64 * 0.03, "mean {mean} should be near {}", ceiling / 2);
    let below_quarter = draws.iter().filter(|d| **d < ceiling / 4).count() as f64 / draws.len() as f64;
    assert!(
        (below_quarter - 0.25).abs() < 0.03,
        "uniform: a quarter of the draws below ceiling/4, got {below_quarter}"
    );
}

#[test]
fn retry_after_is_a_lower_bound_even_above_the_cap() {
    let p = RetryPolicy::default();
    assert_eq!(p.delay_ms(0, 0.0, 5000), 5000, "a short jitter is lifted to Retry-After");
    assert_eq!(p.delay_ms(0, 0.99, 5000), 5000, "ceiling 1000 is below Retry-After");
    assert_eq!(p.delay_ms(4, 0.75, 100), 12_000, "a longer jitter wins over a short Retry-After");
    assert_eq!(p.delay_ms(9, 0.5, 120_000), 120_000, "Retry-After beyond the cap is honoured");
}

#[test]
fn the_state_machine_waits_within_the_growing_ceiling() {
    let policy = RetryPolicy { base_ms: 1000, cap_ms: 8000, max_retries: 6 };
    let mut rec = record(1, 10);
    let mut now = T0;
    for retry in 0..6u32 {
        assert!(matches!(rec.poll_action(now, true), upload_once_core::attempt::Action::Authorize(_)));
        let _ = rec.handle_authorize(Err(unavailable(None)), &env(now, 1.0 - f64::EPSILON, &policy));
        assert_eq!(rec.retries, retry + 1);
        assert_eq!(rec.step, Step::Authorize, "a plain retry repeats the same step");
        let wait = rec.next_retry_at.expect("a backoff is scheduled") - now;
        let ceiling = policy.ceiling_ms(retry) as i64;
        assert!(wait <= ceiling && wait >= ceiling - 1, "retry {retry}: waited {wait}, ceiling {ceiling}");
        assert_eq!(rec.poll_action(now + wait - 1, true), upload_once_core::attempt::Action::Wait(now + wait));
        now += wait;
    }
}

#[test]
fn retry_after_from_a_429_delays_the_next_request() {
    let policy = RetryPolicy::default();
    let mut rec = record(2, 10);
    let limited = Failure::Http {
        status: 429,
        code: Some("rate_limited".into()),
        message: String::new(),
        retry_after_ms: Some(7000),
    };
    let _ = rec.handle_authorize(Err(limited), &env(T0, 0.0, &policy));
    assert_eq!(rec.next_retry_at, Some(T0 + 7000));
    assert_eq!(rec.error.as_ref().unwrap().code, "rate_limited");
    assert!(!rec.is_terminal(), "a 429 is transient");
}

#[test]
fn max_retries_failures_then_one_more_ends_in_retries_exhausted() {
    let policy = RetryPolicy { base_ms: 10, cap_ms: 100, max_retries: 3 };
    let mut rec = record(3, 10);
    for n in 1..=3 {
        let _ = rec.handle_authorize(Err(unavailable(None)), &env(T0, 0.5, &policy));
        assert!(!rec.is_terminal(), "failure {n} of 3 allowed retries is retried");
    }
    let _ = rec.handle_authorize(Err(unavailable(None)), &env(T0, 0.5, &policy));
    assert_failed_with(&rec, "retries_exhausted");
    assert_eq!(rec.transfer, Transfer::Failed);
    assert_eq!(rec.next_retry_at, None, "nothing is scheduled after giving up");
    let message = &rec.error.as_ref().unwrap().message;
    assert!(message.contains("3 retries") && message.contains("down"), "the message says why: {message}");
}

#[test]
fn a_server_that_is_always_down_gets_exactly_max_retries_plus_one_requests() {
    let policy = RetryPolicy { base_ms: 1000, cap_ms: 30_000, max_retries: 4 };
    let mut sim = Sim::new(SimConfig { policy, ..SimConfig::default() });
    sim.faults.random = Some(RandomFaults { probability: 1.0, weights: [0, 0, 1, 0, 0], max_retry_after_ms: 0 });
    let id = sim.add_jpeg(100);
    sim.run_until_idle();
    let sends: Vec<i64> = sim.stats.sent.iter().map(|s| s.at).collect();
    assert_eq!(sends.len(), 5, "1 request + 4 retries, never more");
    assert_eq!(sim.stats.kinds_for(id), vec![ReqKind::Authorize; 5]);
    for (i, pair) in sends.windows(2).enumerate() {
        let gap = pair[1] - pair[0];
        let (lo, hi) = sim.config.latency_ms;
        let ceiling = policy.ceiling_ms(i as u32) as i64;
        assert!(gap >= lo && gap <= ceiling + hi, "gap {i} is {gap} ms, ceiling {ceiling}");
    }
    let r = sim.record(id);
    assert_failed_with(r, "retries_exhausted");
    assert!(sim.scheduler().is_idle(), "a failed attempt is left alone");
    assert_eq!(sim.scheduler().next_wakeup(), None);
}

#[test]
fn progress_resets_the_retry_count() {
    let policy = RetryPolicy { base_ms: 10, cap_ms: 100, max_retries: 2 };
    let mut server = FakeServer::new(ServerConfig::default());
    let mut rec = record(4, 10);
    for _ in 0..2 {
        let _ = rec.handle_authorize(Err(unavailable(None)), &env(T0, 0.5, &policy));
    }
    assert_eq!(rec.retries, 2);
    let upload_once_core::attempt::Action::Authorize(req) = rec.poll_action(T0 + 1000, true) else { panic!() };
    let _ = rec.handle_authorize(server.authorize(&req, T0), &env(T0 + 1000, 0.5, &policy));
    assert_eq!((rec.retries, rec.next_retry_at, rec.error.clone()), (0, None, None));
    // Two more failures are allowed again after progress.
    for _ in 0..2 {
        let _ = rec.handle_upload(Err(unavailable(None)), &env(T0 + 2000, 0.5, &policy));
        assert!(!rec.is_terminal());
    }
}

#[test]
fn a_url_that_is_refused_again_and_again_does_not_loop_forever() {
    // Renew succeeds every time, the PUT is refused every time: a renew does
    // not reset the retry count, so this ends.
    let policy = RetryPolicy { base_ms: 10, cap_ms: 100, max_retries: 5 };
    let mut server = FakeServer::new(ServerConfig::default());
    let mut rec = record(5, 10);
    let mut now = T0;
    let upload_once_core::attempt::Action::Authorize(req) = rec.poll_action(now, true) else { panic!() };
    let _ = rec.handle_authorize(server.authorize(&req, now), &env(now, 0.5, &policy));
    let mut puts = 0;
    for _ in 0..100 {
        now += 1000;
        match rec.poll_action(now, true) {
            upload_once_core::attempt::Action::Upload(_) => {
                puts += 1;
                let refused = Failure::http(403, Some("bad_signature"), "signature does not match");
                let _ = rec.handle_upload(Err(refused), &env(now, 0.5, &policy));
            }
            upload_once_core::attempt::Action::Renew => {
                let _ = rec.handle_renew(server.renew(rec.id, now), &env(now, 0.5, &policy));
            }
            upload_once_core::attempt::Action::Idle => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_failed_with(&rec, "retries_exhausted");
    assert_eq!(puts, 6, "max_retries + 1 refused PUTs, then give up");
}
