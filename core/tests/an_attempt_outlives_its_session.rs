//! An attempt is asked about, renewed and confirmed with the token of the
//! session that authorized it, which the server honours after that session
//! lapsed. A guest who comes back days later, after the page joined again
//! for a new photo, still learns that the first one was confirmed (its
//! answer had been lost), instead of starting a successor that would store
//! it twice. A session the server no longer knows at all fails the attempt
//! for the guest to see, with no successor either.

mod support;

use support::*;
use upload_once_core::attempt::{Confirmation, Transfer};

fn sim_with_sessions(seed: u64) -> Sim {
    let mut config = SimConfig { seed, ..SimConfig::default() };
    config.server.session_ttl_ms = Some(HOUR);
    config.server.attempt_ttl_ms = HOUR;
    Sim::new(config)
}

#[test]
fn a_confirm_whose_answer_was_lost_is_found_after_the_session_lapsed() {
    let mut sim = sim_with_sessions(1);
    let first = sim.add_jpeg(20_000);
    sim.faults.script(ReqKind::Confirm, Fault::DropAfter);
    sim.tick_until_answered(first, ReqKind::Confirm);
    assert_eq!(sim.server.media_rows_for_attempt(first), 1, "committed, answer lost");
    assert_eq!(sim.record(first).session_token.as_deref(), Some(SESSION));

    // Two days later: the session lapsed. The restored page asks about the
    // first photo (the server is busy once), and the guest picks another,
    // whose authorize makes the page join again.
    sim.advance(48 * HOUR);
    sim.reload(Reload::KEEP_BLOBS);
    sim.faults.script(ReqKind::Status, Fault::Unavailable { retry_after_ms: Some(5_000) });
    let second = sim.add_jpeg(30_000);
    sim.run_until_idle();

    assert_eq!(sim.stats.joins, 1, "joined again for the new photo");
    assert_ne!(sim.session_token, SESSION);
    let r = sim.record(first);
    assert_eq!(r.confirmation, Confirmation::Confirmed, "{r:?}");
    assert_eq!(r.replaced_by, None, "no successor");
    assert_eq!(r.session_token.as_deref(), Some(SESSION), "still its own session");
    assert_eq!(sim.record(second).confirmation, Confirmation::Confirmed);
    assert_eq!(sim.record(second).session_token, Some(sim.session_token.clone()));
    assert_eq!(sim.server.media.len(), 2, "each photo once");
    sim.check_exactly_once().unwrap();
}

#[test]
fn a_session_the_server_forgot_fails_the_attempt_visibly_without_a_successor() {
    let mut sim = sim_with_sessions(2);
    let id = sim.add_jpeg_answered(20_000, ReqKind::Authorize);
    // The host revoked the guest sessions (or the database was restored
    // from a backup): the server no longer knows this one.
    sim.server.sessions.clear();
    sim.run_until_idle();

    let r = sim.record(id);
    assert!(r.is_terminal() && r.has_failed(), "{r:?}");
    assert_eq!(r.error.as_ref().map(|e| e.code.as_str()), Some("invalid_session"));
    assert_eq!(r.replaced_by, None, "no successor that might store it twice");
    assert_ne!(r.transfer, Transfer::Queued);
    assert_eq!(sim.server.media.len(), 0);
}
