//! A media the host rejects, and leaves rejected, loses its objects (the
//! original and both renditions) once the retention has passed (default 30
//! days, `--rejected-retention`): the sweeper deletes them, its links then
//! answer `410 removed` to everyone, its host too, and no decision brings it
//! back. A media approved again before that keeps everything; rejected
//! again, its retention starts over. Time is the server's manual clock.

use crate::support;

use std::time::{Duration, Instant};

use image::{ImageFormat, Rgb, RgbImage};
use reqwest::{Method, StatusCode};
use serde_json::json;
use support::media::{host_list, moderate, open_event, upload_as};
use support::{TestServer, problem};
use upload_once_core::wire::Media;

const DAY_MS: i64 = 86_400_000;

/// Waits for a media's display rendition (made by the workers), so that
/// its three objects exist.
async fn wait_for_renditions(server: &TestServer, media: &Media) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status = server.http.get(media.url.as_deref().unwrap()).send().await.unwrap().status();
        if status == StatusCode::OK {
            return;
        }
        assert!(
            status == StatusCode::SERVICE_UNAVAILABLE && Instant::now() < deadline,
            "{}: {status}",
            media.url.as_deref().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn objects_of(media: &Media) -> [String; 3] {
    let key = &media.object_key;
    [key.clone(), format!("{key}-display"), format!("{key}-thumb")]
}

async fn stored(server: &TestServer, media: &Media) -> usize {
    let keys = server.stored_keys().await;
    objects_of(media).iter().filter(|k| keys.contains(k)).count()
}

#[tokio::test]
async fn a_media_left_rejected_loses_its_objects_after_the_retention_and_one_approved_again_keeps_them() {
    let (server, _workers) = TestServer::start_rendering().await;
    let guest = open_event(&server).await;
    let photo = |r| support::media::encoded(RgbImage::from_pixel(64, 48, Rgb([r, 40, 40])), ImageFormat::Png);
    let left = upload_as(&guest, "image/png", "left.png", &photo(200)).await;
    let back = upload_as(&guest, "image/png", "back.png", &photo(100)).await;
    let kept = upload_as(&guest, "image/png", "kept.png", &photo(50)).await;
    for m in [&left, &back, &kept] {
        wait_for_renditions(&server, m).await;
        assert_eq!(stored(&server, m).await, 3, "{}", m.object_key);
    }

    moderate(&guest, left.id, "reject").await;
    moderate(&guest, back.id, "reject").await;
    // A day short of the retention: nothing goes. `back` is approved again.
    server.clock.advance(29 * DAY_MS);
    server.sweep().await;
    for m in [&left, &back, &kept] {
        assert_eq!(stored(&server, m).await, 3, "before the retention: {}", m.object_key);
    }
    moderate(&guest, back.id, "approve").await;

    // Past it: `left` loses its original and renditions; the others keep
    // theirs.
    server.clock.advance(DAY_MS + 1);
    server.sweep().await;
    assert_eq!(stored(&server, &left).await, 0, "the rejected media's objects are deleted");
    assert_eq!(stored(&server, &back).await, 3, "approved again: kept");
    assert_eq!(stored(&server, &kept).await, 3, "never rejected: kept");

    // Its links (fresh ones: those of 30 days ago have expired) answer 410
    // removed to everyone, its host too.
    let listed = host_list(&guest).await;
    let listed = listed.iter().find(|m| m["id"] == left.id.to_string()).unwrap();
    let host_url = listed["url"].as_str().unwrap().to_owned();
    assert!(host_url.contains("&host="), "{host_url}");
    let original = listed["original_url"].as_str().unwrap().to_owned();
    let public =
        server.state.links.media_url(server.state.records.media(left.id).await.unwrap().unwrap().event_id, left.id);
    for url in [&public, &host_url, &original] {
        let r = server.http.get(url).send().await.unwrap();
        let (status, p) = problem(r).await;
        assert_eq!((status, p["code"].as_str()), (StatusCode::GONE, Some("removed")), "{url}");
    }
    // No decision brings it back.
    let r = server.moderate(&guest.event.host_token, left.id, "approve", None).await;
    let (status, p) = problem(r).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::GONE, Some("removed")));
    // The ZIP of everything leaves it out, and still downloads.
    let r = server
        .call(
            Method::POST,
            &format!("/v1/events/{}/archive", guest.slug()),
            Some(&guest.event.host_token),
            Some(json!({"media": "all"})),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let link: serde_json::Value = r.json().await.unwrap();
    let zip = server.http.get(link["url"].as_str().unwrap()).send().await.unwrap();
    assert_eq!(zip.status(), StatusCode::OK);
    let bytes = zip.bytes().await.unwrap();
    assert!(!bytes.windows(8).any(|w| w == b"left.png"), "the removed media is not in the ZIP");
    assert!(bytes.windows(8).any(|w| w == b"back.png"));

    // The same photo shared again is a photo of its own, stored again: a
    // removed media no longer stands for its bytes in the event (it would
    // be confirmed as a duplicate of a media whose objects are gone).
    // (Another guest: the first one's session lapsed in those 30 days.)
    let other = server.guest_of(&guest.event).await;
    let again = upload_as(&other, "image/png", "left-again.png", &photo(200)).await;
    assert_ne!(again.id, left.id, "not the removed media");
    assert_ne!(again.attempt_id, left.attempt_id, "its own attempt's record, not a duplicate's");
    let event = server.state.records.event_by_slug(guest.slug()).await.unwrap().unwrap();
    let original = server.state.links.original_url(again.id, &upload_once_server::media::host_binding(&event));
    assert_eq!(server.http.get(&original).send().await.unwrap().status(), StatusCode::OK);

    // Rejected again, `back`'s retention starts over from the new decision.
    moderate(&guest, back.id, "reject").await;
    server.clock.advance(29 * DAY_MS);
    server.sweep().await;
    assert_eq!(stored(&server, &back).await, 3, "the retention runs from the last rejection");
    server.clock.advance(DAY_MS + 1);
    server.sweep().await;
    assert_eq!(stored(&server, &back).await, 0);
}

#[tokio::test]
async fn the_retention_is_configurable_and_must_be_positive() {
    use clap::Parser;
    use upload_once_server::config::Config;
    let default = Config::defaults();
    assert_eq!(default.rejected_retention, Duration::from_secs(30 * 86_400));
    let set = Config::try_parse_from(["upload-once-server", "--rejected-retention", "7d"]).unwrap();
    assert_eq!(set.rejected_retention, Duration::from_secs(7 * 86_400));
    let zero = Config::try_parse_from(["upload-once-server", "--rejected-retention", "0"]).unwrap();
    assert!(zero.validate().is_err(), "a zero retention is refused");
    assert!(Config::try_parse_from(["upload-once-server", "--rejected-retention", "-1d"]).is_err());
}
