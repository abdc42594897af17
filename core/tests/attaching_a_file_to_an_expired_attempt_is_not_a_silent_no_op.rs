//! An attempt that waited for its file (`needs_file`) across a reload, and
//! expired on the server meanwhile, ends terminal (expired) but still with
//! `transfer = needs_file`. If the guest then picks the file again and
//! `Page::add` accepts it, the file has to be
//! stored (through a successor); otherwise the re-pick has to be refused and
//! the attempt keep showing why it ended. Accepting it, erasing the
//! "expired" error and then doing nothing loses the file silently.

mod support;

use support::*;
use upload_once_core::attempt::Confirmation;
use upload_once_core::page::Added;

#[test]
fn a_file_attached_to_an_expired_attempt_is_stored_or_refused_visibly() {
    let mut sim = Sim::with_seed(71);
    let id = sim.add_jpeg_answered_and_persisted(100, ReqKind::Authorize);
    // The bytes are lost with the page: the attempt waits for the guest.
    sim.reload(Reload::LOSE_BLOBS);
    sim.run_until_idle();
    assert!(sim.record(id).needs_file());
    // The guest comes back the next day; the page restores and checks.
    sim.advance(sim.config.server.attempt_ttl_ms + MINUTE);
    sim.reload(Reload::LOSE_BLOBS);
    sim.run_until_idle();
    let r = sim.record(id);
    assert_eq!(r.confirmation, Confirmation::Expired);
    assert!(r.is_terminal());

    // The guest picks the file again.
    let blob_key = r.blob_key;
    let name = sim.file(blob_key).name.clone();
    let accepted = !matches!(sim.reattach(blob_key), Added::Refused { .. });
    sim.run_until_idle();
    let rows = sim.server.media_for_file(&name).len();
    let r = sim.record(id);
    if accepted {
        assert_eq!(
            rows, 1,
            "attach_file accepted the file, but it was never stored; the attempt now shows \
             transfer {:?}, confirmation {:?}, step {:?}, error {:?}, replaced_by {:?}",
            r.transfer, r.confirmation, r.step, r.error, r.replaced_by
        );
        sim.check_exactly_once().unwrap();
    } else {
        assert_eq!(r.error.as_ref().map(|e| e.code.as_str()), Some("expired"), "a refused re-pick keeps the reason");
    }
}
