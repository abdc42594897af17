//! The host's list at a festival's size (issue 48): read by pages, by
//! filter, with the counts per filter from the database, and then by what
//! changed since the last read, so a refresh with nothing new is a few
//! hundred bytes. Bad parameters get a clear `400 invalid_query`.

use crate::support;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use support::{Guest, TestServer, problem};
use uuid::Uuid;

/// `GET /v1/events/{slug}/media?{query}` as the host: the status and body.
async fn list(guest: &Guest<'_>, query: &str) -> (StatusCode, Value, usize) {
    let path = format!("/v1/events/{}/media?{query}", guest.slug());
    let r = guest.server.call(Method::GET, &path, Some(&guest.event.host_token), None).await;
    let status = r.status();
    let bytes = r.bytes().await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null), bytes.len())
}

/// The ids of an answer's media.
fn ids(answer: &Value) -> Vec<String> {
    answer["media"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap().to_owned()).collect()
}

/// Uploads `n` photos, each of other bytes, a millisecond apart (the
/// test server's clock stands still otherwise; media of the same
/// millisecond are in id order); their media ids in upload order.
async fn upload_photos(guest: &Guest<'_>, n: usize) -> Vec<String> {
    let mut media = Vec::new();
    for _ in 0..n {
        guest.server.clock.advance(1);
        let (_, m) = guest.upload(Uuid::new_v4().as_bytes().to_vec()).await;
        media.push(m.id.to_string());
    }
    media
}

/// Every page of a filter and order, `limit` at a time.
async fn every_page(guest: &Guest<'_>, query: &str, limit: u32) -> (Vec<String>, usize) {
    let (mut all, mut pages, mut cursor) = (Vec::new(), 0, None::<String>);
    loop {
        let q = match &cursor {
            Some(c) => format!("{query}&limit={limit}&cursor={c}"),
            None => format!("{query}&limit={limit}"),
        };
        let (status, page, _) = list(guest, &q).await;
        assert_eq!(status, StatusCode::OK, "{q}: {page}");
        assert!(page["media"].as_array().unwrap().len() <= limit as usize);
        all.extend(ids(&page));
        pages += 1;
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return (all, pages),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pages_hold_each_media_once_in_order_with_counts_per_filter() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let uploaded = upload_photos(&guest, 7).await;

    let (oldest, pages) = every_page(&guest, "filter=all", 3).await;
    assert_eq!((oldest.clone(), pages), (uploaded.clone(), 3), "oldest first, 3 + 3 + 1");
    let (newest, _) = every_page(&guest, "filter=all&order=newest", 3).await;
    assert_eq!(newest, uploaded.iter().rev().cloned().collect::<Vec<_>>(), "newest first");

    for id in &uploaded[..2] {
        assert_eq!(server.moderate(&guest.event.host_token, id, "approve", None).await.status(), StatusCode::OK);
    }
    assert_eq!(server.moderate(&guest.event.host_token, &uploaded[2], "reject", None).await.status(), StatusCode::OK);
    let (pending, _) = every_page(&guest, "filter=pending", 2).await;
    assert_eq!(pending, uploaded[3..].to_vec(), "the queue, oldest first");
    let (approved, _) = every_page(&guest, "filter=approved&order=newest", 1).await;
    assert_eq!(approved, vec![uploaded[1].clone(), uploaded[0].clone()]);
    let (rejected, _) = every_page(&guest, "moderation=rejected", 10).await;
    assert_eq!(rejected, vec![uploaded[2].clone()], "the older parameter name still works");

    let (_, first, _) = list(&guest, "filter=pending&limit=1").await;
    assert_eq!(first["counts"], serde_json::json!({"pending": 4, "approved": 2, "rejected": 1, "all": 7}));
    assert_eq!(first["deduplicated"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refresh_asks_only_for_what_changed_and_a_quiet_one_is_tiny() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let uploaded = upload_photos(&guest, 5).await;
    let (_, first, _) = list(&guest, "").await;
    let changes = first["changes"].as_str().unwrap().to_owned();

    // Nothing new: no media, no counts, the same cursor, a few bytes.
    let (status, quiet, bytes) = list(&guest, &format!("since={changes}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(quiet, serde_json::json!({"media": [], "changes": changes}), "a quiet refresh");
    assert!(bytes < 200, "a quiet refresh is {bytes} bytes");

    // A decision (of another host tab), a withdrawal and a new upload.
    assert_eq!(server.moderate(&guest.event.host_token, &uploaded[0], "approve", None).await.status(), StatusCode::OK);
    let withdrawn = server.state.records.media(uploaded[1].parse().unwrap()).await.unwrap().unwrap().attempt_id;
    let r = server.call(Method::DELETE, &format!("/v1/attempts/{withdrawn}"), Some(&guest.session), None).await;
    assert!(r.status().is_success());
    let fresh = upload_photos(&guest, 1).await;

    let (_, changed, _) = list(&guest, &format!("since={changes}")).await;
    assert_eq!(ids(&changed), vec![uploaded[0].clone(), fresh[0].clone()], "what changed, in change order");
    assert_eq!(changed["media"][0]["moderation"], "approved");
    assert_eq!(changed["gone"], serde_json::json!([uploaded[1]]), "the withdrawn one is gone");
    assert_eq!(changed["counts"], serde_json::json!({"pending": 4, "approved": 1, "rejected": 0, "all": 5}));
    let later = changed["changes"].as_str().unwrap().to_owned();
    assert_ne!(later, changes);
    let (_, quiet, _) = list(&guest, &format!("since={later}")).await;
    assert_eq!(ids(&quiet), Vec::<String>::new(), "told once");

    // Read a change at a time: `more` until the last.
    let (_, one, _) = list(&guest, &format!("since={changes}&limit=1")).await;
    assert_eq!((ids(&one), one["more"].clone()), (vec![uploaded[0].clone()], Value::Bool(true)));
    let (_, two, _) = list(&guest, &format!("since={}&limit=1", one["changes"].as_str().unwrap())).await;
    assert_eq!(two["gone"], serde_json::json!([uploaded[1]]));
    let (_, three, _) = list(&guest, &format!("since={}&limit=1", two["changes"].as_str().unwrap())).await;
    assert_eq!(ids(&three), vec![fresh[0].clone()]);
    assert_eq!(three["changes"].as_str().unwrap(), later);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_large_list_is_compressed_when_the_client_accepts_it() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    upload_photos(&guest, 12).await;
    let url = server.url(&format!("/v1/events/{}/media", guest.slug()));
    let plain = server.http.get(&url).bearer_auth(&guest.event.host_token).send().await.unwrap();
    assert_eq!(plain.headers().get("content-encoding"), None);
    let plain_len = plain.bytes().await.unwrap().len();
    let gzipped = server
        .http
        .get(&url)
        .bearer_auth(&guest.event.host_token)
        .header("accept-encoding", "gzip, br")
        .send()
        .await
        .unwrap();
    assert_eq!(gzipped.headers().get("content-encoding").map(|v| v.to_str().unwrap()), Some("gzip"));
    let gzipped_len = gzipped.bytes().await.unwrap().len();
    assert!(gzipped_len * 3 < plain_len, "{gzipped_len} bytes gzipped against {plain_len}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_parameters_are_a_clear_400() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let other = server.guest().await;
    upload_photos(&guest, 2).await;
    upload_photos(&other, 2).await;
    let (_, page, _) = list(&other, "limit=1").await;
    let (foreign_cursor, foreign_changes) =
        (page["next_cursor"].as_str().unwrap().to_owned(), page["changes"].as_str().unwrap().to_owned());
    let (_, own, _) = list(&guest, "limit=1").await;
    let own_cursor = own["next_cursor"].as_str().unwrap().to_owned();

    for (query, says) in [
        ("limit=0".to_owned(), "limit"),
        ("limit=1000000000".to_owned(), "limit"),
        ("limit=-1".to_owned(), "limit"),
        ("filter=maybe".to_owned(), "filter"),
        ("order=sideways".to_owned(), "order"),
        (format!("cursor={foreign_cursor}"), "another event"),
        (format!("since={foreign_changes}"), "another event"),
        ("cursor=p1.all.o.0.nonsense".to_owned(), "cursor"),
        ("since=c-1".to_owned(), "since"),
        (format!("cursor={own_cursor}&filter=pending"), "another filter"),
        (format!("cursor={own_cursor}&since={foreign_changes}"), "one of them"),
        ("filter=pending&moderation=approved".to_owned(), "filter"),
        ("colour=blue".to_owned(), "colour"),
    ] {
        let path = format!("/v1/events/{}/media?{query}", guest.slug());
        let r = server.call(Method::GET, &path, Some(&guest.event.host_token), None).await;
        let (status, body) = problem(r).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert_eq!(body["code"], "invalid_query", "{query}: {body}");
        let detail = body["detail"].as_str().unwrap();
        assert!(detail.contains(says), "{query}: the answer says why ({detail})");
    }
    let (status, _, _) = list(&guest, "limit=500").await;
    assert_eq!(status, StatusCode::OK, "500 is the most, and allowed");
}
