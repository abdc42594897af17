//! Whether a URL may be signed for an attempt (renew, parts) and which parts
//! a request may name are decided once, in `decide::signing`: the reference
//! server and the client's simulation (`FakeServer`) answer alike, with the
//! attempt's own rejection code rather than a stand-in.

mod support;

use support::*;
use upload_once_core::ErrorCode;
use upload_once_core::decide::signing::{part_requests, parts, renew};
use upload_once_core::decide::{Attempt, Refusal};
use upload_once_core::wire::{AttemptState, AuthorizeRequest, ConfirmRequest, PartRequest, PartsRequest};
use uuid::Uuid;

fn attempt(state: AttemptState, due: bool, in_parts: bool) -> Attempt<'static> {
    Attempt {
        state,
        due,
        size: 10,
        content_type: "image/jpeg",
        sha256: None,
        in_parts,
        rejection: (state == AttemptState::Rejected).then_some(("type_mismatch", "the stored object is text/plain")),
    }
}

fn code(r: Result<(), Refusal>) -> ErrorCode {
    r.unwrap_err().code
}

#[test]
fn only_an_authorized_attempt_within_its_expiry_is_renewed() {
    assert_eq!(renew(&attempt(AttemptState::Authorized, false, false)), Ok(()));
    assert_eq!(renew(&attempt(AttemptState::Authorized, false, true)), Ok(()), "a plan of parts is answered again");
    assert_eq!(code(renew(&attempt(AttemptState::Authorized, true, false))), ErrorCode::Expired, "due, not swept");
    assert_eq!(code(renew(&attempt(AttemptState::Expired, true, false))), ErrorCode::Expired);
    assert_eq!(code(renew(&attempt(AttemptState::Confirmed, true, false))), ErrorCode::AlreadyConfirmed);
    let rejected = renew(&attempt(AttemptState::Rejected, false, false)).unwrap_err();
    assert_eq!(rejected.code, ErrorCode::TypeMismatch, "its own code");
    assert_eq!(rejected.reason, "the stored object is text/plain");
}

#[test]
fn parts_are_signed_only_for_a_live_attempt_in_parts() {
    assert_eq!(parts(&attempt(AttemptState::Authorized, false, true)), Ok(()));
    assert_eq!(code(parts(&attempt(AttemptState::Authorized, false, false))), ErrorCode::NotMultipart);
    assert_eq!(code(parts(&attempt(AttemptState::Authorized, true, false))), ErrorCode::Expired, "expiry first");
    assert_eq!(code(parts(&attempt(AttemptState::Confirmed, false, true))), ErrorCode::AlreadyConfirmed);
    assert_eq!(code(parts(&attempt(AttemptState::Rejected, false, true))), ErrorCode::TypeMismatch);
}

fn request(number: u32) -> PartRequest {
    PartRequest { number, sha256: None }
}

#[test]
fn part_requests_are_checked_against_the_plan() {
    assert_eq!(part_requests(&[request(1), request(150)], 150), Ok(()));
    assert_eq!(code(part_requests(&[], 150)), ErrorCode::InvalidPart);
    assert_eq!(code(part_requests(&[request(0)], 150)), ErrorCode::InvalidPart);
    assert_eq!(code(part_requests(&[request(151)], 150)), ErrorCode::InvalidPart);
    assert_eq!(code(part_requests(&[request(2), request(2)], 150)), ErrorCode::InvalidPart);
    let hundred_and_one: Vec<_> = (1..=101).map(request).collect();
    assert_eq!(code(part_requests(&hundred_and_one, 150)), ErrorCode::InvalidPart);
    assert_eq!(part_requests(&hundred_and_one[..100], 150), Ok(()));
    let bad_sha = PartRequest { number: 1, sha256: Some("ABC".into()) };
    assert_eq!(code(part_requests(&[bad_sha], 150)), ErrorCode::InvalidChecksum);
}

#[test]
fn the_simulation_answers_a_rejected_attempt_with_its_own_code() {
    let mut s = FakeServer::new(ServerConfig { multipart_threshold: 20, ..ServerConfig::default() });
    let id = Uuid::from_u128(1);
    let authorize = |size| AuthorizeRequest {
        id,
        filename: "big.mov".into(),
        size,
        content_type: "video/quicktime".into(),
        sha256: None,
    };
    s.authorize(&authorize(30), T0).unwrap();
    let wrong_type =
        ConfirmRequest { size: 30, content_type: "image/jpeg".into(), sha256: None, composite_sha256: None };
    assert_eq!(http_code(s.confirm(id, &wrong_type, T0)), (422, "type_mismatch".into()));
    assert_eq!(http_code(s.renew(id, T0)), (422, "type_mismatch".into()));
    let one = PartsRequest { parts: vec![request(1)] };
    assert_eq!(http_code(s.sign_parts(id, &one, T0)), (422, "type_mismatch".into()));
    // A used id with another file.
    assert_eq!(http_code(s.authorize(&authorize(31), T0)), (422, "id_reused".into()));
}
