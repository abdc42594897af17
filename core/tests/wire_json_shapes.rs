//! The JSON the protocol puts on the wire (and the record put in
//! IndexedDB): field names, tags and omitted fields are part of the contract.

mod support;

use serde_json::{Value, json};
use support::*;
use upload_once_core::attempt::{AttemptRecord, Step, Transfer};
use upload_once_core::wire::{
    AttemptResponse, AttemptState, AttemptStatus, AuthorizeRequest, ConfirmRequest, MediaSummary, Moderation,
    ModerationDecision, ModerationPolicy, ModerationRequest, Problem, StatusResponse,
};
use uuid::Uuid;

const ID: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";

fn id() -> Uuid {
    ID.parse().unwrap()
}

fn summary() -> MediaSummary {
    MediaSummary {
        id: Uuid::from_u128(7),
        moderation: Moderation::Pending,
        reason: None,
        url: Some("https://m/1".into()),
        composite_sha256: None,
        duplicate: false,
    }
}

fn round_trip<T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(value: &T) -> Value {
    let json = serde_json::to_value(value).unwrap();
    let back: T = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(&back, value, "round trip through {json}");
    json
}

#[test]
fn attempt_status_is_tagged_by_state() {
    let expires = "2026-11-30T04:15:00.000Z";
    let cases = [
        (
            AttemptStatus::Authorized { id: id(), object_stored: true, expires_at: expires.into(), parts: None },
            json!({"state": "authorized", "id": ID, "object_stored": true, "expires_at": expires}),
        ),
        (
            AttemptStatus::Confirmed { id: id(), media: summary() },
            json!({"state": "confirmed", "id": ID, "media": {"id": Uuid::from_u128(7).to_string(), "moderation": "pending", "url": "https://m/1"}}),
        ),
        (AttemptStatus::Expired { id: id() }, json!({"state": "expired", "id": ID})),
        (
            AttemptStatus::Rejected { id: id(), code: "size_mismatch".into(), reason: "too big".into() },
            json!({"state": "rejected", "id": ID, "code": "size_mismatch", "reason": "too big"}),
        ),
        (AttemptStatus::NotFound { id: id() }, json!({"state": "not_found", "id": ID})),
    ];
    for (status, want) in cases {
        assert_eq!(round_trip(&status), want);
        assert_eq!(status.id(), id());
    }
}

#[test]
fn a_status_response_parses_from_server_json() {
    let text = format!(
        r#"{{"results":[{{"state":"not_found","id":"{ID}"}},{{"state":"authorized","id":"{ID}","object_stored":false,"expires_at":"x"}}]}}"#
    );
    let r: StatusResponse = serde_json::from_str(&text).unwrap();
    assert!(matches!(r.results[0], AttemptStatus::NotFound { .. }));
    assert!(matches!(r.results[1], AttemptStatus::Authorized { object_stored: false, .. }));
    assert!(
        serde_json::from_str::<AttemptStatus>(r#"{"state":"lost","id":"0f8fad5b-d9cb-469f-a165-70867728950e"}"#)
            .is_err()
    );
}

#[test]
fn a_status_missing_a_field_its_state_needs_is_refused() {
    for (text, field) in [
        (format!(r#"{{"state":"authorized","id":"{ID}","expires_at":"x"}}"#), "object_stored"),
        (format!(r#"{{"state":"confirmed","id":"{ID}"}}"#), "media"),
        (format!(r#"{{"state":"rejected","id":"{ID}","code":"size_mismatch"}}"#), "reason"),
    ] {
        let error = serde_json::from_str::<AttemptStatus>(&text).unwrap_err().to_string();
        assert!(error.contains(field), "{text}: {error}");
    }
    let error = serde_json::from_str::<AttemptStatus>(r#"{"state":"expired"}"#).unwrap_err().to_string();
    assert!(error.contains("id"), "{error}");
}

#[test]
fn problem_uses_the_rfc9457_type_member() {
    let p = Problem {
        type_uri: "urn:upload-once:expired".into(),
        title: "Expired".into(),
        status: 410,
        detail: "the attempt expired".into(),
        code: "expired".into(),
        retryable: false,
    };
    let json = round_trip(&p);
    assert_eq!(
        json,
        json!({"type": "urn:upload-once:expired", "title": "Expired", "status": 410, "detail": "the attempt expired", "code": "expired", "retryable": false})
    );
    assert!(json.get("type_uri").is_none());
    let without_retryable: Problem =
        serde_json::from_value(json!({"type": "t", "title": "t", "status": 500, "detail": "d", "code": "internal"}))
            .unwrap();
    assert!(!without_retryable.retryable, "retryable defaults to false");
}

#[test]
fn optional_checksums_are_omitted_not_null() {
    let mut req = AuthorizeRequest {
        id: id(),
        filename: "a.jpg".into(),
        size: 3,
        content_type: "image/jpeg".into(),
        sha256: None,
    };
    assert_eq!(round_trip(&req), json!({"id": ID, "filename": "a.jpg", "size": 3, "content_type": "image/jpeg"}));
    req.sha256 = Some("ab".repeat(32));
    assert_eq!(round_trip(&req)["sha256"], json!("ab".repeat(32)));
    let confirm = ConfirmRequest { size: 3, content_type: "image/jpeg".into(), sha256: None, composite_sha256: None };
    assert_eq!(round_trip(&confirm), json!({"size": 3, "content_type": "image/jpeg"}));
}

#[test]
fn attempt_response_omits_what_does_not_apply() {
    let mut server = FakeServer::new(ServerConfig::default());
    let req = AuthorizeRequest {
        id: id(),
        filename: "a.jpg".into(),
        size: 3,
        content_type: "image/jpeg".into(),
        sha256: None,
    };
    let authorized = server.authorize(&req, T0).unwrap();
    let json = round_trip(&authorized);
    assert_eq!(json["state"], "authorized");
    assert_eq!(json["upload"]["method"], "PUT");
    assert!(json.get("media").is_none() && json.get("rejection").is_none());

    let done = AttemptResponse { state: AttemptState::Confirmed, upload: None, media: Some(summary()), ..authorized };
    let json = round_trip(&done);
    assert_eq!(json["state"], "confirmed");
    assert!(json.get("upload").is_none(), "no URL once confirmed");
    assert_eq!(json["media"]["moderation"], "pending");
}

#[test]
fn enums_use_their_stable_strings() {
    for (state, text) in [
        (AttemptState::Authorized, "authorized"),
        (AttemptState::Confirmed, "confirmed"),
        (AttemptState::Expired, "expired"),
        (AttemptState::Rejected, "rejected"),
    ] {
        assert_eq!(serde_json::to_value(state).unwrap(), json!(text));
        assert_eq!(state.as_str(), text);
        assert_eq!(AttemptState::parse(text), Some(state));
        assert_eq!(state.is_terminal(), state != AttemptState::Authorized);
    }
    assert_eq!(AttemptState::parse("Authorized"), None);
    for (m, text) in
        [(Moderation::Pending, "pending"), (Moderation::Approved, "approved"), (Moderation::Rejected, "rejected")]
    {
        assert_eq!(serde_json::to_value(m).unwrap(), json!(text));
        assert_eq!((m.as_str(), Moderation::parse(text)), (text, Some(m)));
    }
    assert_eq!(serde_json::to_value(ModerationPolicy::Required).unwrap(), json!("required"));
    assert_eq!(serde_json::to_value(ModerationPolicy::None).unwrap(), json!("none"));
    let decision = ModerationRequest { decision: ModerationDecision::Reject, reason: Some("blurry".into()) };
    assert_eq!(round_trip(&decision), json!({"decision": "reject", "reason": "blurry"}));
}

#[test]
fn the_indexeddb_record_round_trips_and_uses_snake_case() {
    let mut rec = record(9, 1234);
    rec.transfer = Transfer::NeedsFile;
    rec.sha256 = Some("00".repeat(32));
    let json = round_trip(&rec);
    assert_eq!(json["v"], 1);
    assert_eq!(json["transfer"], "needs_file");
    assert_eq!(json["confirmation"], "unconfirmed");
    assert_eq!(json["moderation"], "unknown");
    assert_eq!(json["step"], "authorize");
    assert_eq!(json["blob_key"], json["id"], "a first attempt keeps its bytes under its own id");
}

#[test]
fn a_minimal_stored_record_fills_in_optional_fields() {
    // What an older writer (or a record before authorize) may have stored.
    let stored = json!({
        "v": 1, "id": ID, "event": "party",
        "file": {"name": "a.jpg", "size": 3, "content_type": "image/jpeg", "last_modified": 0},
        "blob_key": ID, "transfer": "queued", "confirmation": "unconfirmed", "moderation": "unknown",
        "retries": 0, "step": "check", "created_at": 1, "updated_at": 2, "revision": 3
    });
    let rec: AttemptRecord = serde_json::from_value(stored).unwrap();
    assert_eq!(rec.step, Step::Check);
    assert_eq!((rec.object_key, rec.upload, rec.media, rec.replaces, rec.replaced_by), (None, None, None, None, None));
    assert_eq!(rec.next_retry_at, None);
}

#[test]
fn state_names_match_their_json_forms() {
    use upload_once_core::attempt::{Confirmation, ModerationView, Step, Transfer};
    use upload_once_core::wire::ModerationPolicy;
    fn same<T: serde::Serialize>(value: T, text: &str) {
        assert_eq!(serde_json::to_value(&value).unwrap(), serde_json::Value::String(text.to_owned()));
    }
    for t in [Transfer::Queued, Transfer::Uploading, Transfer::Uploaded, Transfer::NeedsFile, Transfer::Failed] {
        same(t, t.as_str());
        assert_eq!(Transfer::parse(t.as_str()), Some(t));
    }
    for c in [
        Confirmation::Unconfirmed,
        Confirmation::Confirming,
        Confirmation::Confirmed,
        Confirmation::Rejected,
        Confirmation::Expired,
    ] {
        same(c, c.as_str());
        assert_eq!(Confirmation::parse(c.as_str()), Some(c));
    }
    for m in [ModerationView::Unknown, ModerationView::Pending, ModerationView::Approved, ModerationView::Rejected] {
        same(m, m.as_str());
        assert_eq!(ModerationView::parse(m.as_str()), Some(m));
    }
    for s in [Step::Authorize, Step::Upload, Step::Check, Step::Renew, Step::Confirm, Step::Done] {
        same(s, s.as_str());
        assert_eq!(Step::parse(s.as_str()), Some(s));
    }
    for p in [ModerationPolicy::Required, ModerationPolicy::None] {
        same(p, p.as_str());
        assert_eq!(ModerationPolicy::parse(p.as_str()), Some(p));
    }
    assert_eq!(Transfer::parse("bogus"), None);
}
