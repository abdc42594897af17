//! In normal operation no route and no worker gives a database connection
//! back to the pool inside a transaction. The pool closes such a
//! connection rather than reuse it (`keep_released_connection`), which is
//! right for a client that hangs up at the wrong moment, but a path that
//! leaves a transaction open on every call costs a closed and reopened
//! connection each time (issue 48 counted 2,150 of them while 10,000
//! uploads were confirmed): this runs the whole flow and counts them.

use crate::support;

use reqwest::{Method, StatusCode};
use support::TestServer;
use support::media::{encoded, quadrants, settled, upload_as, wall_item};
use uuid::Uuid;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_whole_flow_gives_every_connection_back_outside_a_transaction() {
    let (server, _workers) = TestServer::start_rendering().await;
    let guest = server.guest().await;
    let photo = |n: u32| encoded(quadrants(40 + n, 30), image::ImageFormat::Png);

    // Six photos of an event under moderation: each is confirmed, and its
    // rendition job ends while it is still waiting for the host (a job's
    // end asks to place it on the wall, which it may not be yet).
    // The first with its SHA-256, as the client sends it (every store then
    // verifies it, and the content index holds it).
    let mut ids = vec![guest.upload_hashed(&photo(0)).await.1.id];
    for n in 1..6 {
        let media = upload_as(&guest, "image/png", &format!("p{n}.png"), &photo(n)).await;
        ids.push(media.id);
    }
    for id in &ids {
        settled(&server, *id).await;
    }
    // The same photo again: confirmed as a duplicate of the first.
    let (_, again, _) = guest.upload_hashed(&photo(0)).await;
    assert_eq!(again.id, ids[0], "the same bytes are the same media");

    // The host decides: two approved (each placed on the wall), two rejected,
    // one approved twice, one decision on a media of no event of the host.
    for id in &ids[..2] {
        let r = server.moderate(&guest.event.host_token, id, "approve", None).await;
        assert_eq!(r.status(), StatusCode::OK);
        wall_item(&guest, *id).await;
    }
    assert_eq!(server.moderate(&guest.event.host_token, ids[0], "approve", None).await.status(), StatusCode::OK);
    for id in &ids[2..4] {
        assert_eq!(
            server.moderate(&guest.event.host_token, id, "reject", Some("blurry")).await.status(),
            StatusCode::OK
        );
    }
    let stranger = server.moderate(&guest.event.host_token, Uuid::new_v4(), "approve", None).await;
    assert_eq!(stranger.status(), StatusCode::NOT_FOUND);

    // The guest withdraws one (its media taken down), and one twice.
    let withdrawn = server.state.records.media(ids[4]).await.unwrap().expect("the media exists").attempt_id;
    for _ in 0..2 {
        let r = server.call(Method::DELETE, &format!("/v1/attempts/{withdrawn}"), Some(&guest.session), None).await;
        assert!(r.status().is_success(), "withdraw: {}", r.status());
    }
    // A second guest authorizes a file and never sends it; the host removes
    // the first guest (and their address), then a guest of no such number.
    let other = server.guest_of(&guest.event).await;
    other.authorize(Uuid::new_v4(), 10).await;
    let first = server.state.records.media(ids[5]).await.unwrap().expect("the media exists").session_id;
    for (guest_number, answer) in [(first, StatusCode::OK), (first + 1_000_000, StatusCode::NOT_FOUND)] {
        let path = format!("/v1/events/{}/guests/{guest_number}/revoke", guest.slug());
        let body = serde_json::json!({"block_address": true});
        let r = server.call(Method::POST, &path, Some(&guest.event.host_token), Some(body)).await;
        assert_eq!(r.status(), answer, "revoke guest {guest_number}");
    }
    server.sweep().await;

    let discarded = server.state.records.dirty_connections_discarded();
    assert_eq!(discarded, 0, "{discarded} connections came back inside a transaction in normal operation");
}
