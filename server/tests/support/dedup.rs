//! The content identity in the tests: events with a chosen dedup scope,
//! attempts authorized with their file's SHA-256 (as the browser client
//! does for a file below the multipart threshold), and what the host sees.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use reqwest::{Method, Response, StatusCode};
use serde_json::json;
use upload_once_core::wire::{AttemptResponse, CreateEventResponse, Media, MediaListResponse};
use upload_once_server::Result;
use upload_once_server::secrets::sha256_hex;
use upload_once_server::storage::ObjectStore;
use upload_once_server::storage::intercept::{Call, Intercepted, Interceptor, Operation};
use uuid::Uuid;

use super::{ADMIN, Guest, TestServer};

impl TestServer {
    /// A fresh event with this `dedup` value (moderation required).
    pub async fn scoped_event(&self, dedup: &str, max: u64, types: &[&str]) -> CreateEventResponse {
        let slug = format!("dd-{}", &Uuid::new_v4().simple().to_string()[..12]);
        let r = self
            .call(
                Method::POST,
                "/v1/events",
                Some(ADMIN),
                Some(json!({"slug": slug, "title": "Dedup", "max_file_bytes": max, "allowed_types": types,
                            "moderation": "required", "dedup": dedup})),
            )
            .await;
        assert_eq!(r.status(), StatusCode::CREATED, "create event with dedup {dedup}");
        r.json().await.unwrap()
    }

    /// A guest of a fresh event (1 MB images) with this `dedup` value.
    pub async fn guest_in_scope(&self, dedup: &str) -> Guest<'_> {
        let event = self.scoped_event(dedup, 1_000_000, &["image/*", "video/mp4"]).await;
        self.guest_of(&event).await
    }

    /// The host's media list of an event.
    pub async fn host_list(&self, event: &CreateEventResponse) -> MediaListResponse {
        let path = format!("/v1/events/{}/media", event.event.slug);
        let r = self.call(Method::GET, &path, Some(&event.host_token), None).await;
        assert_eq!(r.status(), StatusCode::OK, "host list");
        r.json().await.unwrap()
    }
}

impl Guest<'_> {
    /// Authorizes `bytes` as `photo.png` with their SHA-256.
    pub async fn authorize_hashed(&self, id: Uuid, bytes: &[u8]) -> Response {
        self.authorize_raw(json!({"id": id, "filename": "photo.png", "size": bytes.len(),
                                  "content_type": "image/png", "sha256": sha256_hex(bytes)}))
            .await
    }

    /// Authorize (with the SHA-256), PUT when the answer asks for the bytes,
    /// confirm: the media the attempt ends with, and whether its bytes were
    /// sent.
    pub async fn upload_hashed(&self, bytes: &[u8]) -> (Uuid, Media, bool) {
        let id = Uuid::new_v4();
        let r = self.authorize_hashed(id, bytes).await;
        assert_eq!(r.status(), StatusCode::CREATED, "authorize");
        let a: AttemptResponse = r.json().await.unwrap();
        let sent = match a.put() {
            Some(put) => {
                let r = self.server.put(put, bytes.to_vec()).await;
                assert_eq!(r.status(), StatusCode::OK, "PUT: {}", r.text().await.unwrap_or_default());
                true
            }
            None => false,
        };
        let r = self.confirm_hashed(id, bytes).await;
        assert_eq!(r.status(), StatusCode::OK, "confirm");
        (id, r.json().await.unwrap(), sent)
    }

    /// Confirms `bytes` as `photo.png`, claiming their SHA-256.
    pub async fn confirm_hashed(&self, id: Uuid, bytes: &[u8]) -> Response {
        self.confirm_raw(id, json!({"size": bytes.len(), "content_type": "image/png", "sha256": sha256_hex(bytes)}))
            .await
    }
}

/// An object store whose HEADs (a confirm's, inside its transaction) wait
/// until `hold` of them have arrived, then all go on: that many confirms are
/// inside their transactions at once, racing to the content index.
pub struct HeadGate {
    pub hold: usize,
    arrived: AtomicUsize,
    open: tokio::sync::Semaphore,
}

impl HeadGate {
    pub fn new(inner: Arc<dyn ObjectStore>, hold: usize) -> Intercepted<HeadGate> {
        Intercepted::new(inner, HeadGate { hold, arrived: AtomicUsize::new(0), open: tokio::sync::Semaphore::new(0) })
    }
}

#[async_trait]
impl Interceptor for HeadGate {
    async fn before(&self, call: Call<'_>) -> Result<()> {
        if call.operation != Operation::Head {
            return Ok(());
        }
        if self.arrived.fetch_add(1, Ordering::SeqCst) + 1 >= self.hold {
            self.open.close();
        }
        // Waits while the gate is shut; a closed semaphore lets everyone by.
        let _ = self.open.acquire().await;
        Ok(())
    }
}
