//! Records and protocol answers cross between Rust and JS by hand-written
//! code (no serde in the package): every field must survive the trip.
#![cfg(target_arch = "wasm32")]

use upload_once::core::attempt::{AttemptError, AttemptRecord, Confirmation, FileInfo, ModerationView, Step, Transfer};
use upload_once::core::wire::{AttemptResponse, AttemptState, AttemptStatus, MediaSummary, Moderation, StatusResponse, UploadInstruction};
use upload_once::jsio::{FromJs, record_from_js, record_to_js};
use uuid::Uuid;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn id(n: u8) -> Uuid {
    Uuid::from_bytes([n; 16])
}

#[wasm_bindgen_test]
fn a_record_with_every_field_set_round_trips_through_js() {
    let mut headers = std::collections::BTreeMap::new();
    headers.insert("Content-Type".to_owned(), "image/png".to_owned());
    headers.insert("If-None-Match".to_owned(), "*".to_owned());
    let mut r = AttemptRecord::new(
        id(1),
        "wedding",
        FileInfo { name: "ünïcödé 🎉.png".into(), size: 9_007_199_254_740_000, content_type: "image/png".into(), last_modified: 1_700_000_000_123 },
        1_800_000_000_000,
    );
    r.blob_key = id(2);
    r.sha256 = Some("ab".repeat(32));
    r.object_key = Some("wedding/0123".into());
    r.upload = Some(UploadInstruction { method: "PUT".into(), url: "http://x/storage/k?sig=1".into(), headers, expires_at: "2026-11-30T04:00:00.000Z".into() });
    r.expires_at = Some("2026-12-07T04:00:00.000Z".into());
    r.transfer = Transfer::Uploaded;
    r.confirmation = Confirmation::Confirmed;
    r.moderation = ModerationView::Rejected;
    r.media = Some(MediaSummary { id: id(3), moderation: Moderation::Rejected, reason: Some("blurry".into()), url: "http://x/m".into() });
    r.error = Some(AttemptError { code: "network".into(), message: "lost".into() });
    r.retries = 7;
    r.next_retry_at = Some(1_800_000_000_500);
    r.step = Step::Done;
    r.updated_at = 1_800_000_000_999;
    r.revision = 42;
    r.replaces = Some(id(4));
    r.replaced_by = Some(id(5));
    let back = record_from_js(&record_to_js(&r)).expect("reads back");
    assert_eq!(back, r);

    let plain = AttemptRecord::new(id(9), "e", FileInfo { name: "a".into(), size: 1, content_type: "image/jpeg".into(), last_modified: 0 }, 5);
    assert_eq!(record_from_js(&record_to_js(&plain)), Some(plain));
}

#[wasm_bindgen_test]
fn a_record_from_a_newer_version_is_left_alone() {
    let plain = AttemptRecord::new(id(9), "e", FileInfo { name: "a".into(), size: 1, content_type: "image/jpeg".into(), last_modified: 0 }, 5);
    let value = record_to_js(&plain);
    js_sys::Reflect::set(&value, &"v".into(), &99.into()).unwrap();
    assert_eq!(record_from_js(&value), None);
}

#[wasm_bindgen_test]
fn server_answers_are_read_from_their_json() {
    let json = r#"{"id":"01010101-0101-0101-0101-010101010101","state":"authorized","object_key":"ev/ab",
        "upload":{"method":"PUT","url":"http://s/storage/ev/ab?sig=x","headers":{"Content-Type":"image/png"},"expires_at":"2026-11-30T04:00:00.000Z"},
        "expires_at":"2026-12-07T04:00:00.000Z"}"#;
    let a = AttemptResponse::from_js(&js_sys::JSON::parse(json).unwrap()).unwrap();
    assert_eq!(a.id, id(1));
    assert_eq!(a.state, AttemptState::Authorized);
    assert_eq!(a.upload.unwrap().headers["Content-Type"], "image/png");

    let json = r#"{"results":[
        {"state":"confirmed","id":"01010101-0101-0101-0101-010101010101","media":{"id":"03030303-0303-0303-0303-030303030303","moderation":"approved","url":"u"}},
        {"state":"authorized","id":"02020202-0202-0202-0202-020202020202","object_stored":true,"expires_at":"t"},
        {"state":"rejected","id":"04040404-0404-0404-0404-040404040404","code":"size_mismatch","reason":"r"},
        {"state":"expired","id":"05050505-0505-0505-0505-050505050505"},
        {"state":"not_found","id":"06060606-0606-0606-0606-060606060606"}]}"#;
    let s = StatusResponse::from_js(&js_sys::JSON::parse(json).unwrap()).unwrap();
    assert!(matches!(&s.results[0], AttemptStatus::Confirmed { media, .. } if media.moderation == Moderation::Approved));
    assert!(matches!(&s.results[1], AttemptStatus::Authorized { object_stored: true, .. }));
    assert!(matches!(&s.results[2], AttemptStatus::Rejected { code, .. } if code == "size_mismatch"));
    assert!(matches!(&s.results[3], AttemptStatus::Expired { .. }));
    assert!(matches!(&s.results[4], AttemptStatus::NotFound { .. }));

    let bad = js_sys::JSON::parse(r#"{"results":[{"state":"sideways","id":"06060606-0606-0606-0606-060606060606"}]}"#).unwrap();
    assert_eq!(StatusResponse::from_js(&bad).err(), Some("state"));
}
