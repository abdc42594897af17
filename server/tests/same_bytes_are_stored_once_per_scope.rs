//! The same bytes are stored once per dedup scope: 50 attempts of one photo
//! from 10 guest sessions, racing each other, end with one media record in
//! an `event` event, one per session in a `guest` event, and 50 in a `none`
//! event. Every attempt ends confirmed; the ones whose bytes were already
//! stored point to the media that holds them (`duplicate: true`), and their
//! objects are gone. The host sees how many uploads were deduplicated.
//!
//! The attempts are all authorized before any is confirmed, so none is
//! found at authorize: the 50 confirms race, and only the content index's
//! create-or-return decides. On PostgreSQL, where confirms of different
//! attempts run side by side, the first 8 are held inside their
//! transactions (at the object's HEAD) until all 8 are there, so they reach
//! the index at the same time; SQLite's write lock lets one in at a time.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures_util::future::join_all;
use reqwest::StatusCode;
use support::dedup::HeadGate;
use support::multipart::file;
use support::{Guest, Options, TestServer, is_postgres};
use upload_once_core::wire::{AttemptResponse, Media};
use uuid::Uuid;

const SESSIONS: usize = 10;
const PER_SESSION: usize = 5;

struct Race {
    /// (session index, attempt id, media the confirm answered)
    confirmed: Vec<(usize, Uuid, Media)>,
}

/// 50 attempts of `bytes` over 10 sessions of `guests`: every authorize,
/// then every PUT, then every confirm, each step all at once.
async fn race(guests: &[Guest<'_>], bytes: &[u8]) -> Race {
    let attempts: Vec<(usize, Uuid)> = (0..SESSIONS * PER_SESSION).map(|n| (n % SESSIONS, Uuid::new_v4())).collect();
    let authorized: Vec<AttemptResponse> = join_all(attempts.iter().map(|(g, id)| async move {
        let r = guests[*g].authorize_hashed(*id, bytes).await;
        assert_eq!(r.status(), StatusCode::CREATED, "authorize");
        r.json::<AttemptResponse>().await.unwrap()
    }))
    .await;
    join_all(authorized.iter().zip(&attempts).map(|(a, (g, _))| async move {
        let put = a.put().expect("nothing is confirmed yet: every attempt uploads");
        let r = guests[*g].server.put(put, bytes.to_vec()).await;
        assert_eq!(r.status(), StatusCode::OK, "PUT");
    }))
    .await;
    let confirmed = join_all(attempts.iter().map(|(g, id)| async move {
        let r = guests[*g].confirm_hashed(*id, bytes).await;
        assert_eq!(r.status(), StatusCode::OK, "confirm");
        (*g, *id, r.json::<Media>().await.unwrap())
    }))
    .await;
    Race { confirmed }
}

/// Runs the race in a fresh event with this dedup value and checks it made
/// `expected_media` records, kept one object each, and pointed every other
/// attempt to one of them.
async fn stores(dedup: &str, expected_media: usize) -> (TestServer, Race) {
    let hold = if is_postgres() { 8 } else { 1 };
    let server = TestServer::start_with(Options {
        wrap_objects: Some(Box::new(move |inner| Arc::new(HeadGate::new(inner, hold)))),
        ..Options::default()
    })
    .await;
    let event = server.scoped_event(dedup, 1_000_000, &["image/*"]).await;
    let mut guests = Vec::new();
    for _ in 0..SESSIONS {
        guests.push(server.guest_of(&event).await);
    }
    let bytes = file(40_000, 19);
    let race = race(&guests, &bytes).await;

    let media: BTreeSet<Uuid> = race.confirmed.iter().map(|(_, _, m)| m.id).collect();
    assert_eq!(media.len(), expected_media, "{dedup}: media records the confirms answered");
    assert_eq!(server.counts().await, (50, expected_media as u64), "{dedup}: attempts and media records");
    assert_eq!(server.stored_keys().await.len(), expected_media, "{dedup}: objects kept (a duplicate's is deleted)");
    let listed = server.host_list(&event).await;
    assert_eq!(listed.media.len(), expected_media, "{dedup}: the host's list");
    assert_eq!(listed.deduplicated, Some((50 - expected_media) as u64), "{dedup}: the host's count of duplicates");

    // Every attempt ends confirmed, on the media its confirm answered; it
    // is a duplicate unless it stored that media itself.
    let mut duplicates = 0;
    for (g, id, m) in &race.confirmed {
        let status = guests[*g].status_of(*id).await;
        assert_eq!(status["state"], "confirmed", "{status}");
        assert_eq!(status["media"]["id"], m.id.to_string(), "status and confirm agree");
        let duplicate = status["media"]["duplicate"].as_bool().unwrap_or(false);
        assert_eq!(duplicate, m.duplicate, "duplicate: another attempt stored it ({status})");
        assert_eq!(m.attempt_id, *id, "each guest is told of its own attempt");
        duplicates += usize::from(duplicate);
        // A repeat of the confirm answers the same.
        let again: Media = guests[*g].confirm_hashed(*id, &bytes).await.json().await.unwrap();
        assert_eq!(again.id, m.id, "a repeated confirm");
    }
    assert_eq!(duplicates, 50 - expected_media, "{dedup}: duplicates");
    (server, race)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn in_event_scope_fifty_attempts_make_one_media() {
    // Deduplication keys a single PUT by the SHA-256 the store verified and kept.
    if support::store_lacks("in_event_scope_fifty_attempts_make_one_media", support::StoreCheck::PutChecksum) {
        return;
    }
    stores("event", 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn in_guest_scope_fifty_attempts_make_one_media_per_session() {
    // Deduplication keys a single PUT by the SHA-256 the store verified and kept.
    if support::store_lacks(
        "in_guest_scope_fifty_attempts_make_one_media_per_session",
        support::StoreCheck::PutChecksum,
    ) {
        return;
    }
    let (_, race) = stores("guest", SESSIONS).await;
    let mut by_session: BTreeMap<usize, BTreeSet<Uuid>> = BTreeMap::new();
    for (g, _, m) in &race.confirmed {
        by_session.entry(*g).or_default().insert(m.id);
    }
    assert!(by_session.values().all(|media| media.len() == 1), "one media per session: {by_session:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_dedup_every_upload_is_kept() {
    stores("none", 50).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn attempts_racing_through_every_step_make_one_media() {
    // Deduplication keys a single PUT by the SHA-256 the store verified and kept.
    if support::store_lacks("attempts_racing_through_every_step_make_one_media", support::StoreCheck::PutChecksum) {
        return;
    }
    // Authorize, PUT and confirm, each attempt on its own: the later ones
    // meet the media at authorize, the earlier ones at confirm.
    let server = TestServer::start().await;
    let event = server.scoped_event("event", 1_000_000, &["image/*"]).await;
    let mut guests = Vec::new();
    for _ in 0..SESSIONS {
        guests.push(server.guest_of(&event).await);
    }
    let bytes = file(40_000, 20);
    let ended = join_all((0..SESSIONS * PER_SESSION).map(|n| guests[n % SESSIONS].upload_hashed(&bytes))).await;
    let media: BTreeSet<Uuid> = ended.iter().map(|(_, m, _)| m.id).collect();
    assert_eq!(media.len(), 1, "one media");
    assert_eq!(server.counts().await.1, 1);
    assert_eq!(server.stored_keys().await.len(), 1, "one object");
    assert_eq!(server.host_list(&event).await.deduplicated, Some(49));
}

#[tokio::test]
async fn bytes_sent_without_their_sha256_are_found_where_the_store_hashes_them() {
    let server = TestServer::start().await;
    let first = server.guest_in_scope("event").await;
    let second = server.guest_of(&first.event).await;
    let photo = file(30_000, 21);
    let (_, a) = first.upload(photo.clone()).await;
    let (id, b) = second.upload(photo).await;
    if server.state.local_store.as_deref().is_some() {
        // The embedded store hashes every PUT: the confirm finds the bytes.
        assert_eq!(b.id, a.id, "one media");
        assert_eq!(second.status_of(id).await["media"]["duplicate"], true);
        assert_eq!(server.stored_keys().await.len(), 1);
    } else {
        // A bucket knows the SHA-256 only of a PUT that carried it: nothing
        // verified to compare, so both are kept.
        assert_ne!(b.id, a.id, "two media");
        assert_eq!(server.stored_keys().await.len(), 2);
    }
}
