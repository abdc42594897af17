//! An attempt's answer outlives its session: after the guest session
//! lapsed, its token still asks about, confirms, renews and signs parts for
//! the session's own attempts — so a confirm whose answer was lost is found
//! confirmed however long the guest was away — while it authorizes nothing
//! new and sees nothing of other sessions. A token the server does not know
//! stays `401 invalid_session`.

use crate::support;

use reqwest::{Method, StatusCode};
use serde_json::json;
use support::{TestServer, problem};
use uuid::Uuid;

#[tokio::test]
async fn a_lapsed_session_confirms_asks_and_renews_its_own_attempts_but_authorizes_nothing_new() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    // Confirmed (as if its answer was lost), stored but never confirmed,
    // and never stored.
    let (confirmed, media) = guest.upload(b"kept!".to_vec()).await;
    let (stored, _) = guest.authorize_and_put(b"later").await;
    let never = Uuid::new_v4();
    guest.authorize(never, 5).await;

    // The guest comes back after the session lapsed (it outlives its
    // attempts, so those not confirmed have expired too).
    server.clock.advance(server.state.config.effective_session_ttl().as_millis() as i64 + 1);

    // The lost answer is found: the same media record, not a 401.
    let r = guest.confirm(confirmed, 5).await;
    assert_eq!(r.status(), StatusCode::OK, "a lapsed session's own confirmed attempt");
    let again: upload_once_core::wire::Media = r.json().await.unwrap();
    assert_eq!(again.id, media.id);

    // Status, one and many, answers what became of each.
    let one: serde_json::Value = guest.get(confirmed).await.json().await.unwrap();
    assert_eq!(one["state"], "confirmed");
    assert_eq!(one["media"]["id"], media.id.to_string());
    let many = guest.status(&[confirmed, stored, never]).await;
    let states: Vec<&str> = many["results"].as_array().unwrap().iter().map(|r| r["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["confirmed", "expired", "expired"]);

    // Confirm, renew and parts answer each attempt's own state (410, 409),
    // never 401: the client reconciles rather than starting a successor
    // blind.
    for (what, response, status, code) in [
        ("confirm of an expired attempt", guest.confirm(stored, 5).await, StatusCode::GONE, "expired"),
        ("renew of an expired attempt", guest.renew(never).await, StatusCode::GONE, "expired"),
        ("renew of a confirmed attempt", guest.renew(confirmed).await, StatusCode::CONFLICT, "already_confirmed"),
        (
            "parts of an expired attempt",
            server
                .call(
                    Method::POST,
                    &format!("/v1/attempts/{never}/parts"),
                    Some(&guest.session),
                    Some(json!({"parts": [{"number": 1}]})),
                )
                .await,
            StatusCode::GONE,
            "expired",
        ),
    ] {
        let (s, p) = problem(response).await;
        assert_eq!((s, p["code"].as_str()), (status, Some(code)), "{what}");
    }

    // Repeating an authorize of its own is create-or-return: the attempt
    // as it is.
    let r = guest
        .authorize_raw(json!({"id": confirmed, "filename": "photo.png", "size": 5, "content_type": "image/png"}))
        .await;
    assert_eq!(r.status(), StatusCode::OK, "its own attempt, returned");
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(
        (body["state"].as_str(), body["media"]["id"].as_str()),
        (Some("confirmed"), Some(&*media.id.to_string()))
    );

    // A new attempt needs a live session.
    let new = Uuid::new_v4();
    let r =
        guest.authorize_raw(json!({"id": new, "filename": "new.png", "size": 5, "content_type": "image/png"})).await;
    let (s, p) = problem(r).await;
    assert_eq!((s, p["code"].as_str()), (StatusCode::UNAUTHORIZED, Some("invalid_session")));
    assert_eq!(server.counts().await, (3, 1), "nothing new stored");

    // A token the server does not know is refused as before.
    let stranger = support::Guest { server: &server, event: guest.event.clone(), session: "not-a-session".into() };
    let (s, p) = problem(stranger.confirm(confirmed, 5).await).await;
    assert_eq!((s, p["code"].as_str()), (StatusCode::UNAUTHORIZED, Some("invalid_session")));
    let (s, p) = problem(stranger.get(confirmed).await).await;
    assert_eq!((s, p["code"].as_str()), (StatusCode::UNAUTHORIZED, Some("invalid_session")));
}

#[tokio::test]
async fn a_lapsed_session_sees_nothing_of_other_sessions() {
    let server = TestServer::start().await;
    let owner = server.guest().await;
    let (theirs, _) = owner.upload(b"mine!".to_vec()).await;
    let lapsed = server.guest_of(&owner.event).await;
    let (own, _) = lapsed.upload(b"ours!".to_vec()).await;
    server.clock.advance(server.state.config.effective_session_ttl().as_millis() as i64 + 1);

    // Its own attempt: answered. The owner's: exactly an unknown id.
    let unknown = Uuid::new_v4();
    let status = lapsed.status(&[own, theirs, unknown]).await;
    assert_eq!(status["results"][0]["state"], "confirmed");
    assert_eq!(status["results"][1], json!({"state": "not_found", "id": theirs}));
    assert_eq!(status["results"][2], json!({"state": "not_found", "id": unknown}));
    for id in [theirs, unknown] {
        let (s, p) = problem(lapsed.confirm(id, 5).await).await;
        assert_eq!((s, p["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")));
        let (s, p) = problem(lapsed.renew(id).await).await;
        assert_eq!((s, p["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")));
    }
    assert_eq!(server.counts().await, (2, 2));
}
