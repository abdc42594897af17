//! Records and protocol answers cross between Rust and JS through the serde
//! derives of `upload-once-core` (serde-wasm-bindgen). Checked against
//! fixed text, not as a round trip: a field renamed in the derive would
//! break records stored by an earlier visit, or the server's answers.
#![cfg(target_arch = "wasm32")]

use upload_once::core::attempt::{AttemptError, AttemptRecord, Confirmation, FileInfo, ModerationView, Step, Transfer};
use upload_once::core::wire::{
    AttemptResponse, AttemptState, AttemptStatus, MediaSummary, Moderation, StatusResponse, UploadInstruction,
};
use upload_once::serde_js::{from_js, to_js};
use upload_once::store::{record_from_js, record_to_js};
use uuid::Uuid;
use wasm_bindgen_test::*;

fn id(n: u8) -> Uuid {
    Uuid::from_bytes([n; 16])
}

/// A record with every field set, as version 1 stores it in IndexedDB.
const STORED_V1: &str = r#"{"v":1,"id":"01010101-0101-0101-0101-010101010101","event":"wedding",
  "file":{"name":"ünïcödé 🎉.png","size":9007199254740000,"content_type":"image/png","last_modified":1700000000123},
  "blob_key":"02020202-0202-0202-0202-020202020202","sha256":"abababababababababababababababababababababababababababababababab",
  "object_key":"wedding/0123",
  "upload":{"method":"PUT","url":"http://x/storage/k?sig=1","headers":{"Content-Type":"image/png","If-None-Match":"*"},"expires_at":"2026-11-30T04:00:00.000Z"},
  "expires_at":"2026-12-07T04:00:00.000Z","transfer":"uploaded","confirmation":"confirmed","moderation":"rejected",
  "media":{"id":"03030303-0303-0303-0303-030303030303","moderation":"rejected","reason":"blurry","url":"http://x/m"},
  "error":{"code":"network","message":"lost"},"retries":7,"next_retry_at":1800000000500,"step":"done",
  "created_at":1800000000000,"updated_at":1800000000999,"revision":42,
  "replaces":"04040404-0404-0404-0404-040404040404","replaced_by":"05050505-0505-0505-0505-050505050505"}"#;

fn full_record() -> AttemptRecord {
    let mut headers = std::collections::BTreeMap::new();
    headers.insert("Content-Type".to_owned(), "image/png".to_owned());
    headers.insert("If-None-Match".to_owned(), "*".to_owned());
    let mut r = AttemptRecord::new(
        id(1),
        "wedding",
        FileInfo {
            name: "ünïcödé 🎉.png".into(),
            size: 9_007_199_254_740_000,
            content_type: "image/png".into(),
            last_modified: 1_700_000_000_123,
        },
        1_800_000_000_000,
    );
    r.blob_key = id(2);
    r.sha256 = Some("ab".repeat(32));
    r.object_key = Some("wedding/0123".into());
    r.upload = Some(UploadInstruction {
        method: "PUT".into(),
        url: "http://x/storage/k?sig=1".into(),
        headers,
        expires_at: "2026-11-30T04:00:00.000Z".into(),
    });
    r.expires_at = Some("2026-12-07T04:00:00.000Z".into());
    r.transfer = Transfer::Uploaded;
    r.confirmation = Confirmation::Confirmed;
    r.moderation = ModerationView::Rejected;
    r.media = Some(MediaSummary {
        id: id(3),
        moderation: Moderation::Rejected,
        reason: Some("blurry".into()),
        url: Some("http://x/m".into()),
        composite_sha256: None,
        duplicate: false,
    });
    r.error = Some(AttemptError { code: "network".into(), message: "lost".into() });
    r.retries = 7;
    r.next_retry_at = Some(1_800_000_000_500);
    r.step = Step::Done;
    r.updated_at = 1_800_000_000_999;
    r.revision = 42;
    r.replaces = Some(id(4));
    r.replaced_by = Some(id(5));
    r
}

/// A JS value as JSON, for comparing shapes.
fn json_of(value: &wasm_bindgen::JsValue) -> serde_json::Value {
    serde_json::from_str(&String::from(js_sys::JSON::stringify(value).unwrap())).unwrap()
}

#[wasm_bindgen_test]
fn a_record_stored_by_version_1_reads_back_field_for_field() {
    let stored = js_sys::JSON::parse(STORED_V1).unwrap();
    assert_eq!(record_from_js(&stored), Some(full_record()));
}

#[wasm_bindgen_test]
fn a_record_is_stored_in_the_version_1_format() {
    let written = record_to_js(&full_record()).unwrap();
    assert_eq!(json_of(&written), serde_json::from_str::<serde_json::Value>(STORED_V1).unwrap());
    // A fresh record stores its empty fields as null, as version 1 did.
    let plain = AttemptRecord::new(
        id(9),
        "e",
        FileInfo { name: "a".into(), size: 1, content_type: "image/jpeg".into(), last_modified: 0 },
        5,
    );
    let json = json_of(&record_to_js(&plain).unwrap());
    for field in
        ["sha256", "object_key", "upload", "expires_at", "media", "error", "next_retry_at", "replaces", "replaced_by"]
    {
        assert!(json[field].is_null(), "{field} is null: {json}");
    }
}

#[wasm_bindgen_test]
fn a_record_from_a_newer_version_is_left_alone() {
    let stored = js_sys::JSON::parse(STORED_V1).unwrap();
    js_sys::Reflect::set(&stored, &"v".into(), &99.into()).unwrap();
    assert_eq!(record_from_js(&stored), None);
}

#[wasm_bindgen_test]
fn server_answers_are_read_from_their_json() {
    let json = r#"{"id":"01010101-0101-0101-0101-010101010101","state":"authorized","object_key":"ev/ab",
        "upload":{"method":"PUT","url":"http://s/storage/ev/ab?sig=x","headers":{"Content-Type":"image/png"},"expires_at":"2026-11-30T04:00:00.000Z"},
        "expires_at":"2026-12-07T04:00:00.000Z"}"#;
    let a: AttemptResponse = from_js(js_sys::JSON::parse(json).unwrap()).unwrap();
    assert_eq!(a.id, id(1));
    assert_eq!(a.state, AttemptState::Authorized);
    assert_eq!(a.put().unwrap().headers["Content-Type"], "image/png");

    let json = r#"{"results":[
        {"state":"confirmed","id":"01010101-0101-0101-0101-010101010101","media":{"id":"03030303-0303-0303-0303-030303030303","moderation":"approved","url":"u"}},
        {"state":"authorized","id":"02020202-0202-0202-0202-020202020202","object_stored":true,"expires_at":"t"},
        {"state":"rejected","id":"04040404-0404-0404-0404-040404040404","code":"size_mismatch","reason":"r"},
        {"state":"expired","id":"05050505-0505-0505-0505-050505050505"},
        {"state":"not_found","id":"06060606-0606-0606-0606-060606060606"}]}"#;
    let s: StatusResponse = from_js(js_sys::JSON::parse(json).unwrap()).unwrap();
    assert!(
        matches!(&s.results[0], AttemptStatus::Confirmed { media, .. } if media.moderation == Moderation::Approved)
    );
    assert!(matches!(&s.results[1], AttemptStatus::Authorized { object_stored: true, .. }));
    assert!(matches!(&s.results[2], AttemptStatus::Rejected { code, .. } if code == "size_mismatch"));
    assert!(matches!(&s.results[3], AttemptStatus::Expired { .. }));
    assert!(matches!(&s.results[4], AttemptStatus::NotFound { .. }));

    let bad = js_sys::JSON::parse(r#"{"results":[{"state":"sideways","id":"06060606-0606-0606-0606-060606060606"}]}"#)
        .unwrap();
    let error = from_js::<StatusResponse>(bad).unwrap_err();
    assert!(error.contains("sideways"), "the error names what did not fit: {error}");
}

#[wasm_bindgen_test]
fn requests_go_out_in_the_wire_format() {
    let request = upload_once::core::wire::AuthorizeRequest {
        id: id(1),
        filename: "a.png".into(),
        size: 3,
        content_type: "image/png".into(),
        sha256: None,
    };
    let json = json_of(&to_js(&request).unwrap());
    assert_eq!(
        json,
        serde_json::json!({"id": "01010101-0101-0101-0101-010101010101", "filename": "a.png", "size": 3, "content_type": "image/png"})
    );
}
