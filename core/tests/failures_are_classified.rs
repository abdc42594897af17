//! Which failure leads to which next step, per protocol operation.

use upload_once_core::error::ErrorCode;
use upload_once_core::retry::Disposition::{self, Check, Expired, Fail, Rejected, Retry};
use upload_once_core::retry::Operation::{self, Authorize, Status, Upload};
use upload_once_core::retry::{Failure, classify};

// `Renew` and `Confirm` name both an operation and a disposition.
const RENEW: Operation = Operation::Renew;
const CONFIRM: Operation = Operation::Confirm;
const TO_RENEW: Disposition = Disposition::Renew;
const TO_CONFIRM: Disposition = Disposition::Confirm;

const ALL_OPS: [Operation; 5] = [Authorize, Upload, RENEW, CONFIRM, Status];

fn http(status: u16, code: Option<&str>) -> Failure {
    Failure::http(status, code, "")
}

fn after(status: u16, code: Option<&str>, retry_after_ms: u64) -> Failure {
    Failure::Http {
        status,
        code: code.map(str::to_owned),
        message: String::new(),
        retry_after_ms: Some(retry_after_ms),
    }
}

/// (operation, failure, expected disposition, why)
fn table() -> Vec<(Operation, Failure, Disposition, &'static str)> {
    let r0 = Retry { min_delay_ms: 0 };
    vec![
        // No answer at all.
        (Authorize, Failure::Network, r0, "authorize is create-or-return: repeating it is safe"),
        (Upload, Failure::Network, Check, "the bytes may have landed: ask before sending again"),
        (RENEW, Failure::Network, r0, "renew has no lasting effect"),
        (CONFIRM, Failure::Network, r0, "confirm is create-or-return: repeat with the same id"),
        (Status, Failure::Network, r0, "a read: repeat"),
        // The file changed on the device since the pick: sending it again
        // cannot help, and nothing was stored.
        (Upload, Failure::FileChanged, Fail, "the guest must pick the file again"),
        // A garbled success.
        (Authorize, Failure::Unexpected("bad json".into()), Check, "it may have taken effect"),
        (Upload, Failure::Unexpected("bad json".into()), Check, "it may have taken effect"),
        (CONFIRM, Failure::Unexpected("bad json".into()), Check, "it may have taken effect"),
        (Status, Failure::Unexpected("bad json".into()), r0, "a read: repeat"),
        // 5xx.
        (
            Authorize,
            after(503, Some("database_unavailable"), 2000),
            Retry { min_delay_ms: 2000 },
            "Retry-After is kept",
        ),
        (CONFIRM, http(500, Some("internal")), r0, "no Retry-After: no minimum"),
        (RENEW, http(502, None), r0, "bare gateway error"),
        (Status, after(503, None, 1500), Retry { min_delay_ms: 1500 }, "status honours Retry-After"),
        (Upload, http(503, Some("object_store_unavailable")), Check, "storage may have stored before failing"),
        (Upload, http(500, None), Check, "storage may have stored before failing"),
        // 429 and 408 on every operation.
        (Upload, after(429, Some("rate_limited"), 3000), Retry { min_delay_ms: 3000 }, "rate limited before storing"),
        (CONFIRM, after(429, None, 4000), Retry { min_delay_ms: 4000 }, "rate limited"),
        (Authorize, http(408, None), r0, "request timeout"),
        // 409 / 412.
        (CONFIRM, http(409, Some("object_missing")), Check, "confirm before the object: re-check, maybe upload"),
        (Upload, http(409, Some("already_confirmed")), TO_CONFIRM, "confirmed already: confirm returns the media"),
        (RENEW, http(409, Some("already_confirmed")), TO_CONFIRM, "no URL needed any more"),
        (Upload, http(412, Some("object_exists")), TO_CONFIRM, "the object is stored already"),
        (Upload, http(412, None), TO_CONFIRM, "S3 If-None-Match: stored already"),
        (Authorize, http(412, None), Fail, "a precondition on authorize is not retryable"),
        // 403.
        (Upload, http(403, Some("url_expired")), TO_RENEW, "get a fresh URL"),
        (Upload, http(403, Some("bad_signature")), TO_RENEW, "get a fresh URL"),
        (Upload, http(403, None), TO_RENEW, "S3 answers an expired presigned URL with a bare 403"),
        (Upload, http(403, Some("forbidden")), Fail, "really forbidden"),
        (Authorize, http(403, Some("wrong_guest_code")), Fail, "credentials do not get better"),
        (RENEW, http(403, Some("url_expired")), Fail, "only the PUT renews on 403"),
        // 410.
        (Authorize, http(410, Some("expired")), Expired, "the attempt is gone"),
        (RENEW, http(410, Some("expired")), Expired, "the attempt is gone"),
        (CONFIRM, http(410, Some("expired")), Expired, "the attempt is gone"),
        (Status, http(410, None), Fail, "a status request does not expire"),
        // 422.
        (CONFIRM, http(422, Some("size_mismatch")), Rejected, "the stored object contradicts the authorization"),
        (CONFIRM, http(422, Some("type_mismatch")), Rejected, "the stored object contradicts the authorization"),
        (Authorize, http(422, Some("file_too_large")), Fail, "the file will never fit"),
        (Authorize, http(422, Some("id_reused")), Fail, "an id conflict is not transient"),
        (Status, http(422, Some("too_many_ids")), Fail, "a client bug, not transient"),
        // Other 4xx.
        // A lapsed session: a new attempt is authorized again under a new
        // session. An attempt goes with its own session's token, which the
        // server honours after it lapsed: a 401 there means the session is
        // unknown (revoked), and the attempt fails for the guest to see.
        (Authorize, http(401, Some("invalid_session")), Retry { min_delay_ms: 0 }, "session lost: join again"),
        (CONFIRM, http(401, Some("invalid_session")), Fail, "a session the server does not know at all: no successor"),
        (Status, http(401, Some("invalid_session")), Fail, "a session the server does not know at all: no successor"),
        (RENEW, http(401, Some("invalid_session")), Fail, "a session the server does not know at all: no successor"),
        (CONFIRM, http(401, None), Fail, "unauthorized"),
        (Authorize, http(401, Some("unauthorized")), Fail, "unauthorized"),
        (RENEW, http(404, Some("not_found")), Fail, "unknown attempt"),
        (Status, http(404, Some("route_not_found")), Fail, "wrong server"),
        (Upload, http(400, Some("length_mismatch")), Fail, "the request is wrong"),
        (CONFIRM, http(400, Some("idempotency_key_missing")), Fail, "the request is wrong"),
        (Authorize, http(413, Some("payload_too_large")), Fail, "too large"),
    ]
}

#[test]
fn every_operation_and_failure_maps_to_its_disposition() {
    let mut wrong = Vec::new();
    for (op, failure, want, why) in table() {
        let got = classify(op, &failure);
        if got != want {
            wrong.push(format!("{op:?} {failure:?}: got {got:?}, want {want:?} ({why})"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn rate_limits_and_server_errors_are_never_terminal() {
    for op in ALL_OPS {
        for status in [429, 500, 502, 503, 504] {
            let d = classify(op, &after(status, None, 10));
            assert!(matches!(d, Retry { .. } | Check), "{op:?} {status}: {d:?}");
        }
    }
}

#[test]
fn client_errors_other_than_the_protocol_ones_are_terminal_everywhere() {
    for op in ALL_OPS {
        for status in [400, 401, 404, 405, 413, 415] {
            assert_eq!(classify(op, &http(status, Some("whatever"))), Fail, "{op:?} {status}");
        }
    }
}

#[test]
fn retryable_server_codes_are_never_classified_as_failures() {
    for code in ErrorCode::ALL.iter().filter(|c| c.is_retryable() && c.http_status() != 0) {
        for op in ALL_OPS {
            let d = classify(op, &http(code.http_status(), Some(code.as_str())));
            assert!(!matches!(d, Fail | Rejected | Expired), "{op:?} {code}: {d:?}");
        }
    }
}

#[test]
fn failure_codes_and_messages_for_people() {
    assert_eq!(Failure::Network.code(), "network");
    assert_eq!(http(409, Some("object_missing")).code(), "object_missing", "the problem code wins");
    assert_eq!(http(429, None).code(), "rate_limited");
    assert_eq!(http(502, None).code(), "internal");
    assert_eq!(http(418, None).code(), "http_418");
    assert_eq!(Failure::Unexpected("x".into()).code(), "unexpected_response");
    assert_eq!(http(503, None).message(), "the server answered 503", "an empty message gets a fallback");
    assert_eq!(Failure::http(400, None, "bad").message(), "bad");
    assert!(!Failure::Network.message().is_empty());
}

#[test]
fn a_file_changed_since_the_pick_is_reported_with_its_own_code() {
    assert_eq!(Failure::FileChanged.code(), ErrorCode::FileChanged.as_str());
    assert_eq!(ErrorCode::FileChanged.as_str(), "file_changed");
    assert!(!ErrorCode::FileChanged.is_retryable());
    assert!(Failure::FileChanged.message().contains("pick it again"));
}
