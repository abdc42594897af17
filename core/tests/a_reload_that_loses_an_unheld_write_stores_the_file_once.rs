//! The answers the server keeps the last word on are written without
//! holding the next step (issue 34, docs/protocol.md §5.1): the PUT goes
//! before the authorize's URL is on disk, the confirm before the PUT's
//! success is. A reload that loses those writes finds a record a step
//! behind; it asks the server what became of the attempt, and the file is
//! stored once, its bytes sent once.

mod support;

use support::*;
use upload_once_core::attempt::{Step, Transfer};

/// A page whose record writes wait until the test lets them happen.
fn slow_disk(seed: u64) -> Sim {
    Sim::new(SimConfig { seed, defer_persist: 1.0, concurrency: 1, ..SimConfig::default() })
}

/// The page reloads (the confirm on the wire is lost with it) and the disk
/// is quick again: the record, a step behind, names the attempt, and the
/// server says what became of it. The file is confirmed once, its bytes sent
/// once, under one attempt.
fn reload_and_finish(sim: &mut Sim, id: uuid::Uuid, key: &str) {
    sim.reload(Reload::KEEP_BLOBS);
    sim.config.defer_persist = 0.0;
    let kinds = sim.kinds_sent_until_idle();
    assert_eq!(without_renews(&kinds), vec![ReqKind::Status, ReqKind::Confirm], "{kinds:?}");
    assert_eq!(sim.server.puts_for_key(key), 1, "the bytes were not sent again");
    assert_eq!(sim.server.attempts.len(), 1, "no second attempt");
    assert_eq!(sim.server.media_rows_for_attempt(id), 1);
    sim.check_exactly_once().unwrap();
}

#[test]
fn lost_authorize_answer_asks_the_server_and_confirms_without_a_second_put() {
    let mut sim = slow_disk(341);
    let id = sim.add_jpeg(100);
    sim.tick_until(|sim| sim.stats.kinds_for(id).contains(&ReqKind::Confirm));
    assert_eq!(sim.stats.kinds_for(id), vec![ReqKind::Authorize, ReqKind::Upload, ReqKind::Confirm]);
    let stored = sim.db.get(&id).expect("the new record was written before anything was sent");
    assert_eq!(
        (stored.step, stored.object_key.as_deref()),
        (Step::Authorize, None),
        "the authorize's answer was not written when the page went (the fault this test is about)"
    );
    let key = sim.server.object_key_of(id).expect("authorized");
    assert_eq!(sim.server.puts_for_key(&key), 1);
    // The confirm never reached the server: the page went with it.
    reload_and_finish(&mut sim, id, &key);
}

#[test]
fn lost_put_success_asks_the_server_and_confirms_without_a_second_put() {
    let mut sim = slow_disk(342);
    let id = sim.add_jpeg(100);
    // The authorize's answer reaches the disk; the PUT's success will not.
    sim.config.defer_persist = 0.0;
    sim.tick_until(|sim| sim.db.get(&id).is_some_and(|r| r.object_key.is_some()));
    sim.config.defer_persist = 1.0;
    sim.tick_until(|sim| sim.stats.kinds_for(id).contains(&ReqKind::Confirm));
    let stored = sim.db.get(&id).expect("written");
    assert!(stored.object_key.is_some());
    assert_ne!(stored.transfer, Transfer::Uploaded, "the PUT's success was not written (the fault this test is about)");
    let key = stored.object_key.clone().unwrap();
    assert_eq!(sim.server.puts_for_key(&key), 1);
    reload_and_finish(&mut sim, id, &key);
}

#[test]
fn the_put_does_not_wait_for_the_session_token_of_the_pages_own_session() {
    // The record takes the token of the session that authorized it. When
    // that is the page's own session (stored before it was used), the PUT
    // does not wait for the record to be written: a reload asks with the
    // same token anyway. The hash's write, still under way when the answer
    // came, is not made a write the PUT waits for either.
    let mut sim = slow_disk(343);
    let id = sim.add_jpeg(100);
    sim.tick_until(|sim| sim.stats.kinds_for(id).contains(&ReqKind::Upload));
    assert_eq!(sim.record(id).session_token.as_deref(), Some(SESSION));
    let stored = sim.db.get(&id).expect("written");
    assert_eq!(stored.session_token, None, "the PUT went before the token was on disk");
    assert_eq!(stored.revision, 1, "and before the hash's write: only the add's record is on disk");
    sim.config.defer_persist = 0.0;
    sim.run_until_idle();
    assert_eq!(sim.db.get(&id).unwrap().session_token, sim.record(id).session_token, "then it is stored");
    sim.check_exactly_once().unwrap();
}
