//! Status reports what became of every attempt — authorized (stored or
//! not), confirmed, rejected, expired, or unknown — in request order, the
//! same through the batch and the single endpoint; renew hands out a fresh
//! URL only while the attempt can still be uploaded.

use crate::support;

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::{Options, TestServer, problem, unsigned};
use upload_once_core::time::parse_rfc3339;
use upload_once_core::wire::{AttemptResponse, AttemptState};
use uuid::Uuid;

const MINUTE: i64 = 60_000;

fn ms(v: &Value) -> i64 {
    parse_rfc3339(v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))).unwrap()
}

#[tokio::test]
async fn status_reports_every_state_in_request_order() {
    let server = TestServer::start_with(Options::attempts_of_an_hour()).await;
    let guest = server.guest().await;
    let (expired, waiting, stored, confirmed, rejected, unknown) =
        (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());

    // t0: the attempt that will expire (its object stored, never confirmed).
    let e = guest.authorize(expired, 5).await;
    assert_eq!(server.put(e.put().unwrap(), b"stale".to_vec()).await.status(), StatusCode::OK);
    server.clock.advance(50 * MINUTE);

    // t0 + 50 min: the others.
    let w = guest.authorize(waiting, 5).await;
    let s = guest.authorize(stored, 5).await;
    let st = guest.status(&[stored]).await;
    assert_eq!(st["results"][0]["object_stored"], false, "not stored before the PUT");
    assert_eq!(server.put(s.put().unwrap(), b"hello".to_vec()).await.status(), StatusCode::OK);
    let st = guest.status(&[stored]).await;
    assert_eq!(st["results"][0]["object_stored"], true, "stored after the PUT");
    let (_, media) = {
        let c = guest.authorize(confirmed, 5).await;
        assert_eq!(server.put(c.put().unwrap(), b"12345".to_vec()).await.status(), StatusCode::OK);
        let r = guest.confirm(confirmed, 5).await;
        assert_eq!(r.status(), StatusCode::OK);
        (c, r.json::<Value>().await.unwrap())
    };
    guest.authorize(rejected, 5).await;
    let (code, p) = problem(guest.confirm(rejected, 4).await).await;
    assert_eq!((code, p["code"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("size_mismatch")));

    // t0 + 61 min: the first attempt is past its TTL; no sweep has run.
    server.clock.advance(11 * MINUTE);
    let order = [rejected, unknown, confirmed, expired, waiting, stored, confirmed];
    let batch = guest.status(&order).await;
    let results = batch["results"].as_array().unwrap();
    assert_eq!(results.len(), order.len(), "one entry per requested id, repeats included");
    for (result, id) in results.iter().zip(order) {
        assert_eq!(result["id"], id.to_string(), "request order");
    }
    let [r_rejected, r_unknown, r_confirmed, r_expired, r_waiting, r_stored, r_again] = results.as_slice() else {
        unreachable!()
    };

    assert_eq!(r_rejected["state"], "rejected");
    assert_eq!(r_rejected["code"], "size_mismatch");
    assert!(r_rejected["reason"].as_str().is_some_and(|r| !r.is_empty()), "{r_rejected}");

    assert_eq!(r_unknown, &json!({"state": "not_found", "id": unknown}));

    assert_eq!(r_confirmed["state"], "confirmed");
    assert_eq!(r_confirmed["media"]["id"], media["id"]);
    assert_eq!(r_confirmed["media"]["moderation"], "pending");
    // The same media link, up to its signature: a link's expiry is rounded
    // up to a step (a day here), and the eleven minutes above may cross one.
    assert_eq!(unsigned(&r_confirmed["media"]["url"]), unsigned(&media["url"]));
    assert!(media["url"].is_string());
    assert_eq!(r_again, r_confirmed, "a repeated id gets the same answer");

    assert_eq!(r_expired, &json!({"state": "expired", "id": expired}), "expired by time, before any sweep");

    assert_eq!(r_waiting["state"], "authorized");
    assert_eq!(r_waiting["object_stored"], false);
    assert_eq!(ms(&r_waiting["expires_at"]), parse_rfc3339(&w.expires_at).unwrap());
    assert_eq!(r_stored["state"], "authorized");
    assert_eq!(r_stored["object_stored"], true);
    assert_eq!(ms(&r_stored["expires_at"]), parse_rfc3339(&s.expires_at).unwrap());
    assert_eq!(ms(&r_stored["expires_at"]) - server.state.now(), 49 * MINUTE, "authorized at t0+50min for 1 h");

    // The single endpoint agrees with the batch, for every state.
    for (id, expected) in order.iter().zip(results) {
        let r = guest.get(*id).await;
        assert_eq!(r.status(), StatusCode::OK, "{id}");
        assert_eq!(&r.json::<Value>().await.unwrap(), expected, "GET /v1/attempts/{id}");
    }

    // A sweep changes nothing in the answers (the object goes, the state stays).
    server.sweep().await;
    let after = guest.status(&order).await;
    assert_eq!(after, batch);
    assert!(server.state.objects.head(&e.object_key).await.unwrap().is_none());

    // An empty batch is an empty answer.
    assert_eq!(guest.status(&[]).await, json!({"results": []}));
}

#[tokio::test]
async fn renew_answers_by_state() {
    let server = TestServer::start_with(Options::attempts_of_an_hour()).await;
    let guest = server.guest().await;
    let (waiting, confirmed, rejected, unknown) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let w = guest.authorize(waiting, 5).await;
    let c = guest.authorize(confirmed, 5).await;
    assert_eq!(server.put(c.put().unwrap(), b"hello".to_vec()).await.status(), StatusCode::OK);
    assert_eq!(guest.confirm(confirmed, 5).await.status(), StatusCode::OK);
    guest.authorize(rejected, 5).await;
    assert_eq!(guest.confirm_raw(rejected, json!({"size": 5, "content_type": "image/gif"})).await.status(), 422);

    // Authorized: the original URL has expired; renew gives one that works.
    server.clock.advance(11 * MINUTE);
    let old = w.put().unwrap();
    if !support::is_s3() {
        // (A bucket checks URL expiry on its own real clock, which this test
        // does not move: see signed_urls_are_bound::an_expired_url_is_refused.)
        let (code, p) = problem(server.put(old, b"hello".to_vec()).await).await;
        assert_eq!((code, p["code"].as_str()), (StatusCode::FORBIDDEN, Some("url_expired")));
    }
    let r = guest.renew(waiting).await;
    assert_eq!(r.status(), StatusCode::OK);
    let renewed: AttemptResponse = r.json().await.unwrap();
    assert_eq!((renewed.id, renewed.state), (waiting, AttemptState::Authorized));
    assert_eq!(renewed.object_key, w.object_key, "the same object");
    assert_eq!(renewed.expires_at, w.expires_at, "renew does not extend the attempt");
    let fresh = renewed.put().unwrap();
    if !support::is_s3() {
        // (An S3 URL is dated by the real clock, which this test does not move.)
        assert_ne!(fresh.url, old.url);
    }
    assert_eq!(
        parse_rfc3339(&fresh.expires_at).unwrap() - parse_rfc3339(&old.expires_at).unwrap(),
        11 * MINUTE,
        "signed from now"
    );
    assert_eq!(server.put(fresh, b"hello".to_vec()).await.status(), StatusCode::OK);
    assert_eq!(guest.confirm(waiting, 5).await.status(), StatusCode::OK);

    // Confirmed: nothing to upload any more.
    for id in [waiting, confirmed] {
        let (code, p) = problem(guest.renew(id).await).await;
        assert_eq!((code, p["code"].as_str()), (StatusCode::CONFLICT, Some("already_confirmed")));
    }
    // Rejected: the rejection again.
    let (code, p) = problem(guest.renew(rejected).await).await;
    assert_eq!((code, p["code"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("type_mismatch")));
    // Unknown: not found.
    let (code, p) = problem(guest.renew(unknown).await).await;
    assert_eq!((code, p["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")));

    // Expired: 410, before and after the sweep. A renew near the end never
    // hands out a URL that outlives the attempt.
    let late = Uuid::new_v4();
    let l = guest.authorize(late, 5).await;
    server.clock.advance(55 * MINUTE);
    let r = guest.renew(late).await;
    assert_eq!(r.status(), StatusCode::OK);
    let near_end: AttemptResponse = r.json().await.unwrap();
    assert!(
        parse_rfc3339(&near_end.put().cloned().unwrap().expires_at).unwrap() <= parse_rfc3339(&l.expires_at).unwrap(),
        "a URL never outlives its attempt"
    );
    server.clock.advance(5 * MINUTE);
    let (code, p) = problem(guest.renew(late).await).await;
    assert_eq!((code, p["code"].as_str()), (StatusCode::GONE, Some("expired")), "expired, not swept");
    server.sweep().await;
    let (code, p) = problem(guest.renew(late).await).await;
    assert_eq!((code, p["code"].as_str()), (StatusCode::GONE, Some("expired")), "expired and swept");
}
