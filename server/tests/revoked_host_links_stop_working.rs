//! A host's links are bound to the event's host token, and a ZIP link to
//! the event's id: rotating the host token ends every original's link, every
//! `host=` link of a taken-down photo and every ZIP link handed out before;
//! the host's next list has working ones. A ZIP link of a deleted event
//! opens nothing of a later event given the same slug, and a rendition
//! link is signed for its event.

use crate::support;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::media::{moderate, open_event, upload_as};
use support::{TestServer, problem};

async fn host_list(server: &TestServer, slug: &str, token: &str) -> Vec<Value> {
    let r = server.call(Method::GET, &format!("/v1/events/{slug}/media"), Some(token), None).await;
    assert_eq!(r.status(), StatusCode::OK);
    r.json::<Value>().await.unwrap()["media"].as_array().unwrap().clone()
}

async fn zip_link(server: &TestServer, slug: &str, token: &str) -> String {
    let r = server
        .call(Method::POST, &format!("/v1/events/{slug}/archive"), Some(token), Some(json!({"media": "all"})))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    r.json::<Value>().await.unwrap()["url"].as_str().unwrap().to_owned()
}

async fn get(server: &TestServer, url: &str) -> StatusCode {
    server.http.get(url).send().await.unwrap().status()
}

#[tokio::test]
async fn rotating_the_host_token_ends_the_host_links_made_before() {
    let (server, _workers) = TestServer::start_rendering().await;
    let guest = open_event(&server).await;
    let slug = guest.slug().to_owned();
    let photo = upload_as(&guest, "image/png", "p.png", &[5; 64]).await;
    moderate(&guest, photo.id, "reject").await;
    let old_token = guest.event.host_token.clone();
    let listed = host_list(&server, &slug, &old_token).await;
    let (original, host_view) = (listed[0]["original_url"].as_str().unwrap(), listed[0]["url"].as_str().unwrap());
    let zip = zip_link(&server, &slug, &old_token).await;
    for url in [original, host_view, &zip] {
        assert_eq!(get(&server, url).await, StatusCode::OK, "before the rotation: {url}");
    }

    let r = server
        .call(Method::POST, &format!("/v1/events/{slug}/rotate"), Some(&old_token), Some(json!({"what": "host_token"})))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let new_token = r.json::<Value>().await.unwrap()["host_token"].as_str().unwrap().to_owned();

    // The old links open nothing: like an unknown media, a taken-down one
    // for everyone, a ZIP link with a bad signature.
    assert_eq!(get(&server, original).await, StatusCode::NOT_FOUND);
    let (status, p) = problem(server.http.get(host_view).send().await.unwrap()).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::GONE, Some("removed")));
    let (status, p) = problem(server.http.get(&zip).send().await.unwrap()).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::FORBIDDEN, Some("bad_signature")));

    // The host's next list and ZIP link work.
    let listed = host_list(&server, &slug, &new_token).await;
    for url in [listed[0]["original_url"].as_str().unwrap(), listed[0]["url"].as_str().unwrap()] {
        assert_eq!(get(&server, url).await, StatusCode::OK, "after the rotation: {url}");
    }
    assert_eq!(get(&server, &zip_link(&server, &slug, &new_token).await).await, StatusCode::OK);
}

#[tokio::test]
async fn a_zip_link_of_a_deleted_event_opens_nothing_of_a_later_event_of_the_same_slug() {
    let server = TestServer::start().await;
    let first = server.create_event("same-slug", 1_000_000, &["image/*"], "none").await;
    let guest = server.guest_of(&first).await;
    upload_as(&guest, "image/png", "p.png", &[6; 64]).await;
    let zip = zip_link(&server, "same-slug", &first.host_token).await;
    let r = server.call(Method::DELETE, "/v1/events/same-slug", Some(&first.host_token), None).await;
    assert!(r.status().is_success(), "{}", r.status());
    server.sweep().await;

    let later = server.create_event("same-slug", 1_000_000, &["image/*"], "none").await;
    let other = server.guest_of(&later).await;
    upload_as(&other, "image/png", "q.png", &[7; 64]).await;
    let (status, p) = problem(server.http.get(&zip).send().await.unwrap()).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::FORBIDDEN, Some("bad_signature")), "{p}");
}

#[tokio::test]
async fn a_rendition_link_is_signed_for_its_event() {
    let (server, _workers) = TestServer::start_rendering().await;
    let guest = open_event(&server).await;
    let photo = upload_as(&guest, "image/png", "p.png", &[8; 64]).await;
    let event_id = server.state.records.media(photo.id).await.unwrap().unwrap().event_id;
    assert_eq!(get(&server, &server.state.links.media_url(event_id, photo.id)).await, StatusCode::OK);
    // The same media id and key, signed for another event: not a link of it.
    assert_eq!(get(&server, &server.state.links.media_url(event_id + 1, photo.id)).await, StatusCode::NOT_FOUND);
}
