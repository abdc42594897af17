//! A client whose clock runs ahead of the server's sees every fresh signed
//! URL as already expired. That must not turn into an endless, back-to-back
//! stream of renew requests: like a URL refused again and again, it has to
//! end (upload anyway, or fail visibly) within the retry budget.

mod support;

use support::*;
use upload_once_core::retry::RetryPolicy;

#[test]
fn a_client_clock_an_hour_ahead_does_not_renew_forever() {
    let policy = RetryPolicy::default();
    let mut config = SimConfig { seed: 111, policy, max_steps: 2_000, ..SimConfig::default() };
    config.server.clock_offset_ms = -HOUR; // the server is an hour behind
    config.server.url_ttl_ms = 15 * MINUTE;
    let mut sim = Sim::new(config);
    let id = sim.add_jpeg(100);
    let outcome = sim.try_run_until_idle();
    let renews = sim.stats.count(ReqKind::Renew);
    let elapsed = sim.now - T0;
    assert!(
        outcome.is_ok() && renews <= policy.max_retries as usize + 1,
        "{renews} renew requests in {elapsed} ms of virtual time without reaching idle (budget: {} retries); record: step {:?}, retries {}",
        policy.max_retries,
        sim.record(id).step,
        sim.record(id).retries,
    );
}
