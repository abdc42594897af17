//! What the handlers share: [`AppState`], made of sub-states that a
//! handler takes one by one (`State<Records>`, `State<Links>`, …, through
//! axum's `FromRef`), so it names what it uses. The four most routes use
//! together come as one, [`Stores`], which a handler destructures: it
//! still names what it uses.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::FromRef;
use upload_once_core::time::UnixMillis;
use upload_once_core::time::format_rfc3339;
use upload_once_core::wire::{Media, MediaSummary, Moderation, WallItem};
use uuid::Uuid;

use crate::assemblies::Assemblies;
use crate::clock::Clock;
use crate::config::Config;
use crate::limits::Limits;
use crate::media::{MediaServices, Size};
use crate::metrics::Metrics;
use crate::ops::Ops;
use crate::secrets::Signer;
use crate::storage::ObjectStore;
use crate::storage::local::LocalObjectStore;
use crate::store::{AttemptRow, MediaRow, RecordStore};

/// Where records live.
pub type Records = Arc<dyn RecordStore>;

/// Where bytes live.
pub type Objects = Arc<dyn ObjectStore>;

/// The embedded store, when bytes live there: this server serves its signed
/// PUT endpoint and clears its temporary files (`None` with S3).
pub type LocalStore = Option<Arc<LocalObjectStore>>;

/// The admin bearer token.
#[derive(Clone)]
pub struct AdminToken(pub Arc<str>);

/// The shared state of the server.
#[derive(Clone)]
pub struct AppState {
    /// Configuration.
    pub config: Arc<Config>,
    /// Where records live.
    pub records: Records,
    /// Where bytes live.
    pub objects: Objects,
    /// The embedded store, when bytes live there.
    pub local_store: LocalStore,
    /// The clock, and how long attempts, URLs and reservations live.
    pub lifetimes: Lifetimes,
    /// The links the server signs, and the media answers that carry them.
    pub links: Links,
    /// The admin bearer token.
    pub admin_token: AdminToken,
    /// Test-only hooks (`--test-hooks`): only in a build with the
    /// `test-hooks` feature.
    #[cfg(feature = "test-hooks")]
    pub test_hooks: Option<Arc<crate::test_hooks::TestHooks>>,
    /// Hang-ups and the database's health.
    pub ops: Arc<Ops>,
    /// Counters and histograms (`GET /metrics`).
    pub metrics: Arc<Metrics>,
    /// Quotas, rate limits and timeouts.
    pub limits: Arc<Limits>,
    /// Renditions, live walls (issue 17).
    pub media: Arc<MediaServices>,
    /// Multipart uploads being assembled by this instance.
    pub assemblies: Arc<Assemblies>,
}

/// Each part of [`AppState`] a handler may take on its own.
macro_rules! sub_states {
    ($($field:ident: $type:ty),* $(,)?) => {
        $(impl FromRef<AppState> for $type {
            fn from_ref(state: &AppState) -> $type {
                state.$field.clone()
            }
        })*
    };
}

sub_states! {
    config: Arc<Config>,
    records: Records,
    objects: Objects,
    local_store: LocalStore,
    lifetimes: Lifetimes,
    links: Links,
    admin_token: AdminToken,
    ops: Arc<Ops>,
    metrics: Arc<Metrics>,
    limits: Arc<Limits>,
    media: Arc<MediaServices>,
    assemblies: Arc<Assemblies>,
}

/// The record store, the object store, the lifetimes and the links: what
/// most routes use together (a sub-state of [`AppState`]).
#[derive(Clone)]
pub struct Stores {
    /// Where records live.
    pub records: Records,
    /// Where bytes live.
    pub objects: Objects,
    /// The clock, and how long attempts, URLs and reservations live.
    pub lifetimes: Lifetimes,
    /// The links the server signs.
    pub links: Links,
}

impl FromRef<AppState> for Stores {
    fn from_ref(state: &AppState) -> Stores {
        let AppState { records, objects, lifetimes, links, .. } = state;
        Stores {
            records: records.clone(),
            objects: objects.clone(),
            lifetimes: lifetimes.clone(),
            links: links.clone(),
        }
    }
}

impl AppState {
    /// The current time.
    pub fn now(&self) -> UnixMillis {
        self.lifetimes.now()
    }
}

/// The clock, and how long attempts, signed URLs and reservations live.
#[derive(Clone)]
pub struct Lifetimes {
    /// The clock.
    pub clock: Arc<dyn Clock>,
    /// `--attempt-ttl`.
    pub attempt_ttl: Duration,
    /// `--url-ttl`.
    pub url_ttl: Duration,
    /// How long after its URL expires a PUT may still land (`--put-expiry-grace`).
    pub put_expiry_grace: Duration,
}

impl Lifetimes {
    /// The lifetimes the configuration sets, on `clock`.
    pub fn new(config: &Config, clock: Arc<dyn Clock>) -> Lifetimes {
        Lifetimes {
            clock,
            attempt_ttl: config.attempt_ttl,
            url_ttl: config.url_ttl,
            put_expiry_grace: config.limits.put_expiry_grace,
        }
    }

    /// The current time.
    pub fn now(&self) -> UnixMillis {
        self.clock.now()
    }

    /// The attempt TTL in milliseconds.
    pub fn attempt_ttl_ms(&self) -> i64 {
        self.attempt_ttl.as_millis() as i64
    }

    /// When a URL signed now for an attempt expiring at `attempt_expires_at`
    /// stops working: never after its attempt.
    pub fn url_expiry(&self, attempt_expires_at: UnixMillis) -> UnixMillis {
        (self.now() + self.url_ttl.as_millis() as i64).min(attempt_expires_at)
    }

    /// Until when an attempt's bytes stay reserved after a URL of it is
    /// signed (or bytes of it arrive) now: while that URL may still land
    /// bytes (its expiry and the PUT grace).
    pub fn reservation_until(&self, attempt_expires_at: UnixMillis) -> UnixMillis {
        self.url_expiry(attempt_expires_at) + self.put_expiry_grace.as_millis() as i64
    }
}

/// The links the server signs (media renditions, originals), and the media
/// answers that carry them.
#[derive(Clone)]
pub struct Links {
    /// Signs and verifies the links.
    pub signer: Signer,
    /// The public base URL, without a trailing slash.
    pub public_base: Arc<str>,
    /// `--media-url-ttl`.
    pub media_url_ttl: Duration,
    /// The clock.
    pub clock: Arc<dyn Clock>,
}

impl Links {
    /// The links the configuration asks for, signed by `signer`.
    pub fn new(config: &Config, signer: Signer, clock: Arc<dyn Clock>) -> Links {
        Links { signer, public_base: config.public_base().into(), media_url_ttl: config.media_url_ttl, clock }
    }

    /// The current time.
    fn now(&self) -> UnixMillis {
        self.clock.now()
    }

    /// When a media link made now expires (Unix seconds): `--media-url-ttl`
    /// from now, rounded up to a step of a quarter of it (at most a day), so
    /// that the same link is handed out for a while and browsers' caches
    /// keep working.
    pub fn media_link_expiry(&self) -> i64 {
        let ttl = self.media_url_ttl.as_secs().max(1) as i64;
        let step = (ttl / 4).clamp(1, 86_400);
        let at = self.now().div_euclid(1000) + ttl;
        (at.div_euclid(step) + 1) * step
    }

    /// The URL everyone is given for a media record: its display rendition
    /// (guests at confirm and in status, the wall, the host's list alike).
    /// The same signature opens its thumbnail (`/thumb`).
    /// Signed for the media `id` of event `event_id`: it opens nothing of
    /// any other.
    pub fn media_url(&self, event_id: i64, id: Uuid) -> String {
        self.rendition_url(event_id, id, Size::Display)
    }

    /// The URL of one rendition of a media record.
    pub fn rendition_url(&self, event_id: i64, id: Uuid, size: Size) -> String {
        self.rendition_url_until(event_id, id, size, self.media_link_expiry())
    }

    /// The URL of one rendition of a media record, working until `exp`
    /// (Unix seconds): `?sig=…&exp=…&kid=…`.
    pub fn rendition_url_until(&self, event_id: i64, id: Uuid, size: Size, exp: i64) -> String {
        format!(
            "{}/v1/media/{id}/{}?sig={}&exp={exp}&kid={}",
            self.public_base,
            size.as_str(),
            crate::media::sign_rendition(&self.signer, event_id, id, exp),
            self.signer.key_id()
        )
    }

    /// The URL of a media record's original bytes, metadata and all: only
    /// its event's host is given it, for the host token of `binding`
    /// ([`crate::media::host_binding`]).
    pub fn original_url(&self, id: Uuid, binding: &str) -> String {
        self.original_url_until(id, binding, self.media_link_expiry())
    }

    /// The URL of a media record's original, working until `exp`.
    pub fn original_url_until(&self, id: Uuid, binding: &str, exp: i64) -> String {
        format!(
            "{}/v1/media/{id}/content?sig={}&exp={exp}&kid={}",
            self.public_base,
            crate::media::sign_original(&self.signer, id, binding, exp),
            self.signer.key_id()
        )
    }

    /// A media record as the protocol shows it.
    pub fn media_json(&self, m: &MediaRow) -> Media {
        Media {
            id: m.id,
            attempt_id: m.attempt_id,
            event: m.event_slug.clone(),
            object_key: m.object_key.clone(),
            filename: m.filename.clone(),
            size: m.size,
            content_type: m.content_type.clone(),
            sha256: m.sha256.clone(),
            composite_sha256: m.composite_sha256.clone(),
            moderation: m.moderation,
            moderation_reason: m.moderation_reason.clone(),
            url: Some(self.media_url(m.event_id, m.id)),
            created_at: format_rfc3339(m.created_at),
            duplicate: false,
        }
    }

    /// The media record as the guest of attempt `a` may see it: its own in
    /// full; another attempt's (a duplicate, [`crate::rules::dedup`]) only as
    /// "already shared": the media's id and moderation, the guest's own
    /// attempt id, filename and object key, and a URL only once the host
    /// approved it (on the wall, every guest sees it anyway). Never the
    /// other guest's filename, attempt id or key, nor the host's reason: a
    /// claimed hash proves no possession (docs/protocol.md §3.14).
    pub fn media_for_guest(&self, m: &MediaRow, a: &AttemptRow) -> Media {
        if !crate::rules::dedup::is_duplicate(m, a) {
            return self.media_json(m);
        }
        Media {
            attempt_id: a.id,
            object_key: a.object_key.clone(),
            filename: a.filename.clone(),
            moderation_reason: None,
            url: self.public_url(m),
            duplicate: true,
            ..self.media_json(m)
        }
    }

    /// The display rendition's URL when the media is on the wall (approved),
    /// else `None`.
    fn public_url(&self, m: &MediaRow) -> Option<String> {
        (m.moderation == Moderation::Approved).then(|| self.media_url(m.event_id, m.id))
    }

    /// What the guest of attempt `a` sees of its media record in status
    /// answers ([`Links::media_for_guest`]).
    pub fn media_summary(&self, m: &MediaRow, a: &AttemptRow) -> MediaSummary {
        let duplicate = crate::rules::dedup::is_duplicate(m, a);
        MediaSummary {
            id: m.id,
            moderation: m.moderation,
            reason: if duplicate { None } else { m.moderation_reason.clone() },
            url: if duplicate { self.public_url(m) } else { Some(self.media_url(m.event_id, m.id)) },
            composite_sha256: m.composite_sha256.clone(),
            duplicate,
        }
    }

    /// A wall entry (its `placeholder` reason is filled from the rendition
    /// job, `wall_items` in services/views.rs).
    pub fn wall_item(&self, m: &MediaRow) -> WallItem {
        WallItem {
            id: m.id,
            url: self.media_url(m.event_id, m.id),
            thumb_url: self.rendition_url(m.event_id, m.id, Size::Thumb),
            placeholder: None,
            duration_ms: None,
            content_type: m.content_type.clone(),
            approved_at: format_rfc3339(m.moderated_at.unwrap_or(m.created_at)),
        }
    }
}
