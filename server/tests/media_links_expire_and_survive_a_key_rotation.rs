//! Media links (display, thumbnail, original) carry an expiry (`exp`) and
//! the id of the key that signed them (`kid`): past its expiry a link
//! answers `403 url_expired` (a fresh one comes with the next status, wall
//! page or host list), and a link whose `exp` or `kid` was changed, or that
//! names a key the server does not have, is `404` like any forged link. The
//! signing key rotates without breaking the links already handed out: the
//! old key, configured as a previous key under its id, still opens them.

use crate::support;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use support::media::{host_list, open_event, upload_as};
use support::{Options, TestServer, problem};
use upload_once_server::clock::Clock;
use upload_once_server::config::{Config, Secret};

const DAY_MS: i64 = 86_400_000;
/// A small photo: its display rendition is what the links open.
fn photo() -> Vec<u8> {
    support::media::encoded(support::media::quadrants(16, 12), image::ImageFormat::Png)
}

async fn answer(server: &TestServer, url: &str) -> (StatusCode, Option<String>) {
    let r = server.http.get(url).send().await.unwrap();
    if r.status().is_success() {
        return (r.status(), None);
    }
    let (status, p) = problem(r).await;
    (status, p["code"].as_str().map(str::to_owned))
}

fn param<'a>(url: &'a str, name: &str) -> &'a str {
    let start = url.find(&format!("{name}=")).unwrap_or_else(|| panic!("{name} in {url}")) + name.len() + 1;
    url[start..].split('&').next().unwrap()
}

#[tokio::test]
async fn a_media_link_expires_and_a_changed_one_opens_nothing() {
    let (server, _workers) = TestServer::start_rendering().await;
    let guest = open_event(&server).await;
    let media = upload_as(&guest, "image/png", "photo.png", &photo()).await;
    let listed = host_list(&guest).await;
    let original = listed[0]["original_url"].as_str().unwrap().to_owned();
    for url in [media.url.as_deref().unwrap(), &original] {
        let exp: i64 = param(url, "exp").parse().unwrap();
        let now = server.state.now() / 1000;
        assert!((now + 7 * 86_400..=now + 7 * 86_400 + 2 * 86_400).contains(&exp), "7 days by default: {url}");
        assert_eq!(param(url, "kid"), server.state.links.signer.key_id());
        assert_eq!(answer(&server, url).await, (StatusCode::OK, None), "{url}");
    }

    // Changed links are not the server's.
    let exp = param(media.url.as_deref().unwrap(), "exp");
    let kid = param(media.url.as_deref().unwrap(), "kid");
    let later = (exp.parse::<i64>().unwrap() + 86_400).to_string();
    let (path, _) = media.url.as_deref().unwrap().split_once('?').unwrap();
    let sig = param(media.url.as_deref().unwrap(), "sig");
    for forged in [
        media.url.as_deref().unwrap().replacen(&format!("exp={exp}"), &format!("exp={later}"), 1),
        media.url.as_deref().unwrap().replacen(&format!("kid={kid}"), "kid=another", 1),
        media.url.as_deref().unwrap().replacen(&format!("&kid={kid}"), "", 1),
        format!("{path}?sig={sig}&exp=-5&kid={kid}"),
        original.replacen(&format!("exp={exp}"), &format!("exp={later}"), 1),
    ] {
        assert_eq!(answer(&server, &forged).await, (StatusCode::NOT_FOUND, Some("not_found".into())), "{forged}");
    }
    let (status, p) =
        problem(server.http.get(format!("{path}?sig={sig}&exp=soon&kid={kid}")).send().await.unwrap()).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_query")));
    // A link from before links expired (signed over the id alone) has
    // expired.
    let legacy_sig = server.state.links.signer.sign(&format!("RENDITION\n{}", media.id));
    let legacy = format!("{path}?sig={legacy_sig}");
    assert_eq!(answer(&server, &legacy).await, (StatusCode::FORBIDDEN, Some("url_expired".into())));

    // Past its expiry: 403 url_expired; the host's list hands out fresh
    // links that work.
    server.clock.advance(9 * DAY_MS);
    for url in [media.url.as_deref().unwrap(), &original] {
        assert_eq!(answer(&server, url).await, (StatusCode::FORBIDDEN, Some("url_expired".into())), "{url}");
    }
    let listed: Vec<Value> = host_list(&guest).await;
    let fresh = listed[0]["url"].as_str().unwrap().to_owned();
    assert_ne!(Some(fresh.clone()), media.url);
    assert_eq!(answer(&server, &fresh).await, (StatusCode::OK, None));
    assert_eq!(answer(&server, listed[0]["original_url"].as_str().unwrap()).await, (StatusCode::OK, None));
}

const K1: &str = "1111111111111111111111111111111111111111111111111111111111111111";
const K2: &str = "2222222222222222222222222222222222222222222222222222222222222222";

/// A second instance over the same records and objects as `first`, signing
/// with `key` under `id`, `previous` keys still accepted.
async fn instance(first: &TestServer, key: &str, id: &str, previous: Vec<String>) -> TestServer {
    let objects = first.state.objects.clone();
    let id = id.to_owned();
    TestServer::start_with(Options {
        database_url: first.database_url.clone(),
        bucket: first.bucket.clone(),
        wrap_objects: Some(Box::new(move |_| objects)),
        signing_key: Some(key.to_owned()),
        configure: Some(Box::new(move |c: &mut Config| {
            c.signing_key_id = Some(id);
            c.previous_signing_keys = previous.into_iter().map(Secret).collect();
        })),
        ..Options::default()
    })
    .await
}

#[tokio::test]
async fn links_signed_by_a_previous_key_keep_working_after_a_rotation() {
    let first = TestServer::start_with(Options {
        signing_key: Some(K1.to_owned()),
        configure: Some(Box::new(|c: &mut Config| c.signing_key_id = Some("k1".into()))),
        ..Options::default()
    })
    .await;
    let _workers = upload_once_server::services::renditions::spawn(&first.state);
    let guest = open_event(&first).await;
    let media = upload_as(&guest, "image/png", "photo.png", &photo()).await;
    let original = host_list(&guest).await[0]["original_url"].as_str().unwrap().to_owned();
    assert_eq!(param(media.url.as_deref().unwrap(), "kid"), "k1");
    // Its rendition made (the first instance's workers make it).
    assert_eq!(answer(&first, media.url.as_deref().unwrap()).await, (StatusCode::OK, None));

    // Rotated: K2 signs, K1 is a previous key.
    let rotated = instance(&first, K2, "k2", vec![format!("k1:{K1}")]).await;
    let on = |server: &TestServer, url: &str| format!("{}{}", server.base, &url[url.find("/v1/").unwrap()..]);
    for url in [media.url.as_deref().unwrap(), &original] {
        assert_eq!(answer(&rotated, &on(&rotated, url)).await, (StatusCode::OK, None), "the old link: {url}");
    }
    let r = rotated
        .call(Method::GET, &format!("/v1/events/{}/media", guest.slug()), Some(&guest.event.host_token), None)
        .await;
    let listed: Value = r.json().await.unwrap();
    let fresh = listed["media"][0]["url"].as_str().unwrap().to_owned();
    assert_eq!(param(&fresh, "kid"), "k2");
    assert_eq!(answer(&rotated, &fresh).await, (StatusCode::OK, None));
    // An instance without K2 does not take its links.
    assert_eq!(answer(&first, &on(&first, &fresh)).await, (StatusCode::NOT_FOUND, Some("not_found".into())));

    // Once K1 is dropped, its links open nothing.
    let dropped = instance(&first, K2, "k2", Vec::new()).await;
    for url in [media.url.as_deref().unwrap(), &original] {
        assert_eq!(answer(&dropped, &on(&dropped, url)).await, (StatusCode::NOT_FOUND, Some("not_found".into())));
    }
    assert_eq!(answer(&dropped, &on(&dropped, &fresh)).await, (StatusCode::OK, None));
}

#[tokio::test]
async fn key_flags_are_checked() {
    use clap::Parser;
    let parse = |args: &[&str]| {
        let mut all = vec!["upload-once-server"];
        all.extend_from_slice(args);
        Config::try_parse_from(all).map_err(|e| e.to_string()).and_then(|c| c.validate().map_err(|e| e.to_string()))
    };
    assert!(parse(&["--previous-signing-key", &format!("old:{K1}"), "--signing-key-id", "new"]).is_ok());
    assert!(parse(&["--previous-signing-key", K1]).is_ok(), "an id derived from the key");
    for bad in [
        vec!["--previous-signing-key", "old:abcd"],
        vec!["--previous-signing-key", "not hex"],
        vec!["--previous-signing-key", &format!("bad id:{K1}")],
        vec!["--signing-key-id", "has space"],
        vec!["--signing-key-id", ""],
        vec!["--media-url-ttl", "0"],
        vec!["--media-url-ttl", "-1d"],
    ] {
        assert!(parse(&bad).is_err(), "{bad:?}");
    }
    let twice = format!("old:{K1},old:{K2}");
    assert!(parse(&["--previous-signing-key", &twice]).is_err(), "one id twice");
}

/// With S3 storage a media link answers with a redirect to a presigned URL
/// of the bucket: that URL works an hour at most, and never past the link's
/// own `exp`, so a link that stopped working does not live on as the bucket
/// URL it redirected to. (The embedded store serves the bytes itself and
/// checks `exp` on every request: there is no second URL to outlive it.)
#[tokio::test]
async fn a_bucket_url_never_outlives_the_link_that_redirected_to_it() {
    if !support::is_s3() {
        return;
    }
    let (server, _workers) = TestServer::start_rendering_with(Options {
        configure: Some(Box::new(|c: &mut Config| c.media_url_ttl = std::time::Duration::from_secs(60))),
        ..Options::default()
    })
    .await;
    let guest = open_event(&server).await;
    let media = upload_as(&guest, "image/png", "photo.png", &photo()).await;
    let exp: i64 = param(media.url.as_deref().unwrap(), "exp").parse().unwrap();
    let no_redirects = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let bucket_url_lifetime = |now_ms: i64| {
        let url = media.url.clone().unwrap();
        let client = no_redirects.clone();
        async move {
            let r = client.get(&url).send().await.unwrap();
            assert_eq!(r.status(), StatusCode::TEMPORARY_REDIRECT);
            let location = r.headers()["location"].to_str().unwrap().to_owned();
            let lifetime: i64 = param(&location, "X-Amz-Expires").parse().unwrap();
            assert!(lifetime <= exp - now_ms.div_euclid(1000), "{lifetime} s past the link's exp {exp}: {location}");
            lifetime
        }
    };
    let first = bucket_url_lifetime(server.clock.now()).await;
    assert!(first > 0 && first <= 75, "a minute's link, rounded up to a quarter: {first}");
    server.clock.advance(30_000);
    let later = bucket_url_lifetime(server.clock.now()).await;
    assert!(later < first, "{later} s after 30 s, {first} s before");
}
