//! Hosts moderate their own event's media and nobody else's; guests see the
//! decision through status; the wall shows only approved media, in approval
//! order, and its cursor returns each item once.

use crate::support;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::{Guest, TestServer, problem, unsigned};
use uuid::Uuid;

async fn list(server: &TestServer, slug: &str, token: &str, filter: Option<&str>) -> reqwest::Response {
    let query = filter.map(|f| format!("?moderation={f}")).unwrap_or_default();
    server.call(Method::GET, &format!("/v1/events/{slug}/media{query}"), Some(token), None).await
}

async fn listed_ids(server: &TestServer, slug: &str, token: &str, filter: Option<&str>) -> Vec<String> {
    let r = list(server, slug, token, filter).await;
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = r.json().await.unwrap();
    v["media"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap().to_owned()).collect()
}

/// How a wall reader proves it may look.
#[derive(Clone, Copy, Debug)]
enum WallAuth<'a> {
    CodeQuery(&'a str),
    CodeHeader(&'a str),
    Bearer(&'a str),
    Nothing,
}

async fn wall_raw(server: &TestServer, slug: &str, auth: WallAuth<'_>, after: Option<&str>) -> reqwest::Response {
    let mut query = Vec::new();
    if let WallAuth::CodeQuery(code) = auth {
        query.push(("code", code.to_owned()));
    }
    if let Some(a) = after {
        query.push(("after", a.to_owned()));
    }
    let mut req = server.http.get(server.url(&format!("/v1/events/{slug}/wall"))).query(&query);
    match auth {
        WallAuth::CodeHeader(code) => req = req.header("x-guest-code", code),
        WallAuth::Bearer(token) => req = req.bearer_auth(token),
        _ => {}
    }
    req.send().await.unwrap()
}

/// (item ids, next_cursor, the items)
async fn wall(
    server: &TestServer,
    slug: &str,
    auth: WallAuth<'_>,
    after: Option<&str>,
) -> (Vec<String>, String, Vec<Value>) {
    let r = wall_raw(server, slug, auth, after).await;
    assert_eq!(r.status(), StatusCode::OK, "{auth:?}");
    let v: Value = r.json().await.unwrap();
    let items = v["items"].as_array().unwrap().clone();
    let ids = items.iter().map(|i| i["id"].as_str().unwrap().to_owned()).collect();
    (ids, v["next_cursor"].as_str().unwrap().to_owned(), items)
}

/// Uploads `bytes` and waits for its rendition job to end (the test's
/// workers end it): an approval then places it on the wall at once, and a
/// media approved on upload is on the wall.
async fn upload(guest: &Guest<'_>, bytes: &[u8]) -> (Uuid, String) {
    let (attempt, media) = guest.upload(bytes.to_vec()).await;
    support::media::settled(guest.server, media.id).await;
    (attempt, media.id.to_string())
}

#[tokio::test]
async fn the_host_moderates_and_the_wall_shows_only_approved_media_in_approval_order() {
    let (server, _workers) = TestServer::start_rendering().await;
    let guest = server.guest().await;
    let slug = guest.slug().to_owned();
    let host = guest.event.host_token.clone();
    let code = guest.event.guest_code.clone();
    let wall_token = guest.event.wall_token.clone();

    let (att_a, a) = upload(&guest, b"aaa").await;
    server.clock.advance(1000);
    let (att_b, b) = upload(&guest, b"bbb").await;
    server.clock.advance(1000);
    let (att_c, c) = upload(&guest, b"ccc").await;

    assert_eq!(
        listed_ids(&server, &slug, &host, Some("pending")).await,
        vec![a.clone(), b.clone(), c.clone()],
        "oldest first"
    );
    let (empty, start, _) = wall(&server, &slug, WallAuth::CodeQuery(&code), None).await;
    assert!(empty.is_empty(), "nothing approved yet");

    // Approve c, then a; reject b with a reason.
    server.clock.advance(1000);
    let r = server.moderate(&host, &c, "approve", None).await;
    assert_eq!(r.status(), StatusCode::OK);
    let approved_c: Value = r.json().await.unwrap();
    assert_eq!(approved_c["moderation"], "approved");
    server.clock.advance(1000);
    assert_eq!(server.moderate(&host, &a, "approve", None).await.status(), StatusCode::OK);
    let r = server.moderate(&host, &b, "reject", Some("  blurry  ")).await;
    assert_eq!(r.status(), StatusCode::OK);
    let rejected_b: Value = r.json().await.unwrap();
    assert_eq!(
        (rejected_b["moderation"].as_str(), rejected_b["moderation_reason"].as_str()),
        (Some("rejected"), Some("blurry"))
    );

    assert!(listed_ids(&server, &slug, &host, Some("pending")).await.is_empty());
    assert_eq!(listed_ids(&server, &slug, &host, Some("approved")).await, vec![a.clone(), c.clone()]);
    assert_eq!(listed_ids(&server, &slug, &host, Some("rejected")).await, vec![b.clone()]);
    assert_eq!(listed_ids(&server, &slug, &host, None).await, vec![a.clone(), b.clone(), c.clone()]);

    // Guests see the decisions through status.
    let status = guest.status(&[att_a, att_b, att_c]).await;
    let media_of = |i: usize| status["results"][i]["media"].clone();
    assert_eq!((media_of(0)["id"].as_str(), media_of(0)["moderation"].as_str()), (Some(a.as_str()), Some("approved")));
    assert_eq!(media_of(1)["moderation"], "rejected");
    assert_eq!(media_of(1)["reason"], "blurry");
    assert_eq!(media_of(2)["moderation"], "approved");

    // The wall: approved only, in approval order, however the reader proves
    // it may look.
    let by_code = wall(&server, &slug, WallAuth::CodeQuery(&code), None).await;
    assert_eq!(by_code.0, vec![c.clone(), a.clone()], "approval order, not upload order");
    for auth in [WallAuth::CodeHeader(&code), WallAuth::Bearer(&wall_token), WallAuth::Bearer(&host)] {
        let other = wall(&server, &slug, auth, None).await;
        assert_eq!((&other.0, &other.1), (&by_code.0, &by_code.1), "{auth:?}");
    }
    let items = &by_code.2;
    assert_eq!(items[0]["content_type"], "image/png");
    assert_eq!(items[0]["url"], approved_c["url"]);
    assert!(items[0]["approved_at"].as_str().unwrap() < items[1]["approved_at"].as_str().unwrap());
    assert_ne!(by_code.1, start, "the cursor moved");

    // Nothing changed: nothing new, the cursor stays.
    let (nothing, same, _) = wall(&server, &slug, WallAuth::CodeQuery(&code), Some(&by_code.1)).await;
    assert!(nothing.is_empty(), "{nothing:?}");
    assert_eq!(same, by_code.1);

    // A newly approved item is picked up after the cursor, and only it.
    let (_, d) = upload(&guest, b"ddd").await;
    let (nothing, _, _) = wall(&server, &slug, WallAuth::CodeQuery(&code), Some(&same)).await;
    assert!(nothing.is_empty(), "pending media is not on the wall");
    assert_eq!(server.moderate(&host, &d, "approve", None).await.status(), StatusCode::OK);
    let (new, next, _) = wall(&server, &slug, WallAuth::CodeQuery(&code), Some(&same)).await;
    assert_eq!(new, vec![d.clone()]);
    let (nothing, _, _) = wall(&server, &slug, WallAuth::CodeQuery(&code), Some(&next)).await;
    assert!(nothing.is_empty());

    // Approve is idempotent: the item keeps its place and the cursor does
    // not hand it out again.
    server.clock.advance(1000);
    let r = server.moderate(&host, &c, "approve", None).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.json::<Value>().await.unwrap()["moderation"], "approved");
    let (all, _, _) = wall(&server, &slug, WallAuth::CodeQuery(&code), None).await;
    assert_eq!(all, vec![c.clone(), a.clone(), d.clone()], "same positions");
    let (nothing, _, _) = wall(&server, &slug, WallAuth::CodeQuery(&code), Some(&next)).await;
    assert!(nothing.is_empty(), "a repeated approve is not news: {nothing:?}");

    // Rejecting an approved item takes it off the wall.
    assert_eq!(server.moderate(&host, &a, "reject", Some("oops")).await.status(), StatusCode::OK);
    let (all, _, _) = wall(&server, &slug, WallAuth::CodeQuery(&code), None).await;
    assert_eq!(all, vec![c.clone(), d.clone()]);
    assert_eq!(guest.status(&[att_a]).await["results"][0]["media"]["reason"], "oops");
}

/// Re-approving what is already approved changes nothing a reader can see:
/// not the position, and not the `approved_at` the wall reports either.
#[tokio::test]
async fn a_repeated_approve_leaves_the_wall_item_unchanged() {
    let (server, _workers) = TestServer::start_rendering().await;
    let guest = server.guest().await;
    let slug = guest.slug().to_owned();
    let host = guest.event.host_token.clone();
    let (_, m) = upload(&guest, b"xyz").await;
    assert_eq!(server.moderate(&host, &m, "approve", None).await.status(), StatusCode::OK);
    let (_, _, before) = wall(&server, &slug, WallAuth::Bearer(&guest.event.wall_token), None).await;
    server.clock.advance(60_000);
    assert_eq!(server.moderate(&host, &m, "approve", None).await.status(), StatusCode::OK);
    let (_, _, after) = wall(&server, &slug, WallAuth::Bearer(&guest.event.wall_token), None).await;
    // The same items, their links up to their signatures: a link's expiry is
    // rounded up to a step (a day here), and the minute above may cross one.
    assert_eq!(after.iter().map(unsigned).collect::<Vec<_>>(), before.iter().map(unsigned).collect::<Vec<_>>());
    assert!(before.iter().any(|item| item.to_string().contains('?')), "the items carry signed links");
}

#[tokio::test]
async fn the_wall_pages_by_cursor() {
    let (server, _workers) = TestServer::start_rendering().await;
    // No moderation: every confirmed upload goes onto the wall once its
    // renditions are settled.
    let event = server.create_event("busy-wall", 1000, &["image/*"], "none").await;
    let guest = server.guest_of(&event).await;
    let code = event.guest_code.clone();
    let uploads = (0..101u32).map(|i| {
        let guest = &guest;
        async move {
            let id = Uuid::new_v4();
            let bytes = i.to_be_bytes().to_vec();
            let a = guest.authorize(id, 4).await;
            assert_eq!(guest.server.put(a.put().unwrap(), bytes).await.status(), StatusCode::OK);
            id
        }
    });
    let ids = futures_util::future::join_all(uploads).await;
    // Confirm one after the other, each placed on the wall (its renditions
    // settled) before the next, so the wall order is known.
    let mut media = Vec::new();
    for id in ids {
        let r = guest.confirm(id, 4).await;
        assert_eq!(r.status(), StatusCode::OK);
        let id: Uuid = r.json::<Value>().await.unwrap()["id"].as_str().unwrap().parse().unwrap();
        support::media::settled(&server, id).await;
        media.push(id.to_string());
    }

    let (page1, cursor1, _) = wall(&server, "busy-wall", WallAuth::CodeQuery(&code), None).await;
    assert_eq!(page1.len(), 100, "one page holds 100");
    assert_eq!(page1, media[..100]);
    let (page2, cursor2, _) = wall(&server, "busy-wall", WallAuth::CodeQuery(&code), Some(&cursor1)).await;
    assert_eq!(page2, media[100..]);
    let (page3, cursor3, _) = wall(&server, "busy-wall", WallAuth::CodeQuery(&code), Some(&cursor2)).await;
    assert!(page3.is_empty());
    assert_eq!(cursor3, cursor2);
}

#[tokio::test]
async fn only_this_events_host_may_moderate_or_list() {
    let (server, _workers) = TestServer::start_rendering().await;
    let guest_a = server.guest().await;
    let guest_b = server.guest().await;
    let (att, media_a) = upload(&guest_a, b"aaa").await;
    let (_, media_b) = upload(&guest_b, b"bbb").await;
    let host_a = guest_a.event.host_token.clone();
    let host_b = guest_b.event.host_token.clone();

    let forbidden: [(&str, &str); 4] = [
        ("a guest session of the event", guest_a.session.as_str()),
        ("another event's host", host_b.as_str()),
        ("the event's wall token", guest_a.event.wall_token.as_str()),
        ("a made-up token", "not-a-token"),
    ];
    for (who, token) in forbidden {
        for decision in ["approve", "reject"] {
            let (s, p) = problem(server.moderate(token, &media_a, decision, Some("no")).await).await;
            assert_eq!((s, p["code"].as_str()), (StatusCode::FORBIDDEN, Some("forbidden")), "{who} {decision}s");
        }
        let (s, p) = problem(list(&server, guest_a.slug(), token, None).await).await;
        assert_eq!((s, p["code"].as_str()), (StatusCode::FORBIDDEN, Some("forbidden")), "{who} lists");
    }
    let r = server
        .call(Method::POST, &format!("/v1/media/{media_a}/moderation"), None, Some(json!({"decision": "approve"})))
        .await;
    let (s, p) = problem(r).await;
    assert_eq!((s, p["code"].as_str()), (StatusCode::UNAUTHORIZED, Some("unauthorized")), "no bearer");
    let r = server.call(Method::GET, &format!("/v1/events/{}/media", guest_a.slug()), None, None).await;
    let (s, p) = problem(r).await;
    assert_eq!((s, p["code"].as_str()), (StatusCode::UNAUTHORIZED, Some("unauthorized")), "no bearer lists");

    // Nothing changed.
    assert_eq!(guest_a.status(&[att]).await["results"][0]["media"]["moderation"], "pending");
    assert_eq!(listed_ids(&server, guest_a.slug(), &host_a, Some("pending")).await, vec![media_a.clone()]);
    // Each host moderates their own.
    assert_eq!(server.moderate(&host_b, &media_b, "approve", None).await.status(), StatusCode::OK);
    assert_eq!(server.moderate(&host_a, &media_a, "approve", None).await.status(), StatusCode::OK);
    let (wall_a, _, _) = wall(&server, guest_a.slug(), WallAuth::CodeQuery(&guest_a.event.guest_code), None).await;
    assert_eq!(wall_a, vec![media_a], "one event's wall shows only its own media");
}

#[tokio::test]
async fn the_wall_needs_this_events_code_or_token() {
    let (server, _workers) = TestServer::start_rendering().await;
    let guest = server.guest().await;
    let other = server.guest().await;
    let slug = guest.slug().to_owned();
    let (_, m) = upload(&guest, b"aaa").await;
    assert_eq!(server.moderate(&guest.event.host_token, &m, "approve", None).await.status(), StatusCode::OK);

    let cases = [
        (WallAuth::CodeQuery("wrong"), StatusCode::FORBIDDEN, "wrong_guest_code"),
        (WallAuth::CodeQuery(&other.event.guest_code), StatusCode::FORBIDDEN, "wrong_guest_code"),
        (WallAuth::CodeHeader("wrong"), StatusCode::FORBIDDEN, "wrong_guest_code"),
        (WallAuth::Bearer(&other.event.wall_token), StatusCode::FORBIDDEN, "forbidden"),
        (WallAuth::Bearer(&other.event.host_token), StatusCode::FORBIDDEN, "forbidden"),
        (WallAuth::Bearer(&guest.session), StatusCode::FORBIDDEN, "forbidden"),
        (WallAuth::Nothing, StatusCode::UNAUTHORIZED, "unauthorized"),
    ];
    for (auth, status, code) in cases {
        let (s, p) = problem(wall_raw(&server, &slug, auth, None).await).await;
        assert_eq!((s, p["code"].as_str()), (status, Some(code)), "{auth:?}");
    }
    let (ids, _, _) = wall(&server, &slug, WallAuth::CodeQuery(&guest.event.guest_code), None).await;
    assert_eq!(ids, vec![m]);
}

#[tokio::test]
async fn a_rejection_never_makes_the_wall_cursor_skip_a_later_approval() {
    let (server, _workers) = TestServer::start_rendering().await;
    let guest = server.guest().await;
    let slug = guest.slug().to_owned();
    let host = guest.event.host_token.clone();
    let auth = WallAuth::Bearer(&guest.event.wall_token);
    let (_, first) = upload(&guest, b"first").await;
    let (_, second) = upload(&guest, b"second").await;
    let (_, third) = upload(&guest, b"third").await;
    for m in [&first, &second] {
        assert_eq!(server.moderate(&host, m, "approve", None).await.status(), StatusCode::OK);
    }
    let (seen, cursor, _) = wall(&server, &slug, auth, None).await;
    assert_eq!(seen, vec![first.clone(), second.clone()]);
    // The newest item is taken down, then another is approved: the wall,
    // polling from its cursor, must still see the new one.
    assert_eq!(server.moderate(&host, &second, "reject", Some("blurry")).await.status(), StatusCode::OK);
    assert_eq!(server.moderate(&host, &third, "approve", None).await.status(), StatusCode::OK);
    let (next, _, _) = wall(&server, &slug, auth, Some(&cursor)).await;
    assert_eq!(next, vec![third.clone()]);
    let (all, _, _) = wall(&server, &slug, auth, None).await;
    assert_eq!(all, vec![first, third], "a rejected item leaves the wall");
}
