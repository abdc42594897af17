//! What the server does with stored media, beyond storing it once (issue
//! 17):
//!
//! - [`renditions`]: a photo's display renditions (a thumbnail of about
//!   400 px and a display size of about 1,600 px on the long edge), decoded
//!   upright (the EXIF orientation applied) and written with no metadata, so
//!   the wall and the guests never see an original (its GPS position, its
//!   camera); a file that cannot be decoded gets a placeholder and a reason.
//! - [`jobs`]: the job table that makes them off the request path, in a
//!   bounded pool of workers, and survives a restart (a job whose worker
//!   died is picked up again when its lease runs out).
//! - [`range`]: HTTP Range requests on the media URLs (a video on a phone
//!   seeks with them).
//! - [`live`]: the wall's Server-Sent Events, one database read per event
//!   however many walls listen.
//! - [`zip`]: the host's download of every original as one streamed ZIP.
//!
//! The handlers are in routes/media.rs.

pub mod heic;
pub mod jobs;
pub mod live;
pub mod range;
pub mod renditions;
pub mod tools;
pub mod video;
pub mod zip;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

use sqlx::AnyPool;
use uuid::Uuid;

use upload_once_core::time::UnixMillis;

use crate::secrets::Signer;

/// The rendition sizes a media record has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// About 400 px on the long edge.
    Thumb,
    /// About 1,600 px on the long edge.
    Display,
}

impl Size {
    /// The path segment (`/v1/media/{id}/thumb`).
    pub fn as_str(self) -> &'static str {
        match self {
            Size::Thumb => "thumb",
            Size::Display => "display",
        }
    }

    /// The longest edge of this size, in pixels.
    pub fn edge(self) -> u32 {
        match self {
            Size::Thumb => renditions::THUMB_EDGE,
            Size::Display => renditions::DISPLAY_EDGE,
        }
    }

    /// Where this rendition of the object `object_key` is stored (a
    /// video's: its poster's).
    pub fn key(self, object_key: &str) -> String {
        format!("{object_key}-{}", self.as_str())
    }
}

/// Where the shareable video of the object `object_key` is stored.
pub fn video_key(object_key: &str) -> String {
    format!("{object_key}-video")
}

/// Every object a media record may have beside its original.
pub fn rendition_keys(object_key: &str) -> [String; 3] {
    [Size::Thumb.key(object_key), Size::Display.key(object_key), video_key(object_key)]
}

/// How the media features are tuned (the server's flags).
#[derive(Clone, Debug)]
pub struct MediaSettings {
    /// Rendition workers (at least one).
    pub workers: usize,
    /// How often the workers look for new media and due jobs when nothing
    /// woke them.
    pub scan_interval: Duration,
    /// How long a job is a worker's before another may take it (renewed
    /// while the worker runs).
    pub lease: Duration,
    /// How long a rendition request waits for a job still running.
    pub wait: Duration,
    /// How often a wall's live feed reads the database when nothing on this
    /// instance told it of a change (approvals on other instances).
    pub live_poll: Duration,
    /// The pixels of originals one guest session may have decoded within
    /// [`jobs::BUDGET_WINDOW`]; its further photos wait their turn.
    pub session_pixels: u64,
    /// Videos made shareable at once on this instance.
    pub video_workers: usize,
    /// How far one video job may go.
    pub video_limits: video::VideoLimits,
}

impl Default for MediaSettings {
    fn default() -> Self {
        MediaSettings {
            workers: 2,
            scan_interval: Duration::from_secs(1),
            lease: Duration::from_secs(30),
            wait: Duration::from_secs(20),
            live_poll: Duration::from_millis(500),
            session_pixels: 4_000_000_000,
            video_workers: 1,
            video_limits: video::VideoLimits::default(),
        }
    }
}

/// What the media features share: the job table, the workers' wake-up, the
/// live hub.
pub struct MediaServices {
    /// The rendition jobs and the wall's own reads.
    pub db: jobs::MediaDb,
    /// Wakes the workers, and tells waiting requests a job ended.
    pub events: jobs::JobEvents,
    /// The walls' live feeds.
    pub live: live::LiveHub,
    /// Tuning.
    pub settings: MediaSettings,
    /// ffmpeg and ffprobe, or why videos are not processed here.
    pub video: std::result::Result<video::VideoTools, String>,
    /// heif-convert, or why HEIC photos are not decoded here.
    pub heic: std::result::Result<heic::HeicTools, String>,
    /// Video jobs running on this instance ([`MediaSettings::video_workers`]).
    pub video_slots: tokio::sync::Semaphore,
    answers: [AtomicU64; Answer::ALL.len()],
}

/// How a media URL was answered (the metrics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// `200`, the whole body.
    Full,
    /// `206`, one range.
    Partial,
    /// `416`.
    Unsatisfiable,
    /// `307` to the store's own URL (S3).
    Redirect,
    /// `200`, the placeholder image.
    Placeholder,
}

impl Answer {
    /// Every kind.
    pub const ALL: [Answer; 5] =
        [Answer::Full, Answer::Partial, Answer::Unsatisfiable, Answer::Redirect, Answer::Placeholder];

    /// The `answer` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Answer::Full => "full",
            Answer::Partial => "partial",
            Answer::Unsatisfiable => "unsatisfiable",
            Answer::Redirect => "redirect",
            Answer::Placeholder => "placeholder",
        }
    }
}

impl std::fmt::Debug for MediaServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MediaServices").field("settings", &self.settings).finish()
    }
}

impl MediaServices {
    /// The services over the records' database pool.
    pub fn new(
        pool: AnyPool,
        settings: MediaSettings,
        video: std::result::Result<video::VideoTools, String>,
        heic: std::result::Result<heic::HeicTools, String>,
    ) -> Arc<MediaServices> {
        Arc::new(MediaServices {
            db: jobs::MediaDb::new(pool),
            events: jobs::JobEvents::default(),
            live: live::LiveHub::default(),
            video_slots: tokio::sync::Semaphore::new(settings.video_workers.max(1)),
            video,
            heic,
            settings,
            answers: Default::default(),
        })
    }

    /// Counts one media answer.
    pub fn count(&self, answer: Answer) {
        self.answers[answer as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Media answers of one kind so far.
    pub fn answers(&self, answer: Answer) -> u64 {
        self.answers[answer as usize].load(Ordering::Relaxed)
    }

    /// Adds the media metrics to a scrape: `upload_once_media_answers_total`
    /// by `answer`, and `upload_once_live_walls` (walls listening now).
    pub fn register_metrics(&self, registry: &mut prometheus_client::registry::Registry) {
        for answer in Answer::ALL {
            registry.sub_registry_with_label(("answer".into(), answer.as_str().into())).register(
                "media_answers",
                "Media URLs answered, by how: full, partial (206), unsatisfiable (416), redirect (S3), placeholder",
                ConstCounter::new(self.answers(answer)),
            );
        }
        registry.register(
            "live_walls",
            "Walls listening to their live feed (Server-Sent Events) on this instance",
            ConstGauge::new(self.live.listeners() as i64),
        );
    }
}

/// The message a rendition URL signs: one signature opens every size of
/// one media record of one event until `exp` (Unix seconds), and nothing
/// else.
fn rendition_message(event_id: i64, id: Uuid, exp: i64) -> String {
    format!("RENDITION\n{event_id}\n{id}\n{exp}")
}

/// The message an original's URL signs (host answers and the ZIP only):
/// bound to the event's host token ([`host_binding`]), so that rotating it
/// ends every host link handed out before.
fn original_message(id: Uuid, binding: &str, exp: i64) -> String {
    format!("ORIGINAL\n{binding}\n{id}\n{exp}")
}

/// The message a rejected media's `host=` signature signs: its rendition
/// shown to its host alone. Not the original's message, so that whoever
/// holds a preview link (shown in the host's page, and easily shared)
/// cannot open the original with its signature.
fn host_preview_message(id: Uuid, binding: &str, exp: i64) -> String {
    format!("HOST-PREVIEW\n{binding}\n{id}\n{exp}")
}

/// Signs the `host=` signature of a rejected media's rendition link, for
/// the event's current host token ([`host_binding`]).
pub fn sign_host_preview(signer: &Signer, id: Uuid, binding: &str, exp: i64) -> String {
    signer.sign(&host_preview_message(id, binding, exp))
}

/// Checks a `host=` signature ([`sign_host_preview`]): signed for the
/// event's current host token, by a key of this server's, not expired.
pub fn check_host_preview(
    signer: &Signer,
    id: Uuid,
    binding: &str,
    link: Link<'_>,
    now: UnixMillis,
) -> std::result::Result<(), LinkError> {
    check(signer, link, now, &|exp| host_preview_message(id, binding, exp), &format!("HOST-PREVIEW\n{id}"))
}

/// What ties a host's links (originals, `host=` rendition links, the ZIP)
/// to the event's current host token: part of its hash. A rotation of the
/// host token changes it, and every such link made before stops working.
pub fn host_binding(event: &crate::store::EventRow) -> String {
    event.host_token_hash.chars().take(32).collect()
}

/// Signs a rendition URL's `sig` (by the current key, [`Signer::key_id`])
/// for media `id` of event `event_id`.
pub fn sign_rendition(signer: &Signer, event_id: i64, id: Uuid, exp: i64) -> String {
    signer.sign(&rendition_message(event_id, id, exp))
}

/// Signs an original's URL `sig` (by the current key), for the event's
/// current host token ([`host_binding`]).
pub fn sign_original(signer: &Signer, id: Uuid, binding: &str, exp: i64) -> String {
    signer.sign(&original_message(id, binding, exp))
}

/// What a media link says of itself: its signature, and (links made since
/// they expire) its expiry and the id of the key that signed it.
#[derive(Clone, Copy, Debug)]
pub struct Link<'a> {
    /// `sig`.
    pub sig: &'a str,
    /// `exp`, Unix seconds.
    pub exp: Option<i64>,
    /// `kid`.
    pub kid: Option<&'a str>,
}

/// Why a media link does not open its media.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkError {
    /// Not a link this server signed (or signed by a key it no longer
    /// has): answered like an unknown media.
    Invalid,
    /// Signed, but past its expiry (or from before links expired).
    Expired,
}

/// Checks a link signed over `message(exp)`; `legacy` is what links made
/// before they carried an expiry signed.
fn check(
    signer: &Signer,
    link: Link<'_>,
    now: UnixMillis,
    message: &dyn Fn(i64) -> String,
    legacy: &str,
) -> std::result::Result<(), LinkError> {
    let (Some(exp), Some(kid)) = (link.exp, link.kid) else {
        // Links made before they carried an expiry were signed over the id
        // alone: they are recognised, and have expired.
        return Err(if signer.verify(legacy, link.sig) { LinkError::Expired } else { LinkError::Invalid });
    };
    if signer.verify_with(kid, &message(exp), link.sig) != Some(true) {
        return Err(LinkError::Invalid);
    }
    if exp.saturating_mul(1000) <= now {
        return Err(LinkError::Expired);
    }
    Ok(())
}

/// Checks a rendition link of media `id` of event `event_id`: signed for
/// them by a key of this server's, not expired.
pub fn check_rendition(
    signer: &Signer,
    event_id: i64,
    id: Uuid,
    link: Link<'_>,
    now: UnixMillis,
) -> std::result::Result<(), LinkError> {
    check(signer, link, now, &|exp| rendition_message(event_id, id, exp), &format!("RENDITION\n{id}"))
}

/// Checks an original's link (or a `host=` signature): signed for the
/// event's current host token ([`host_binding`]), by a key of this
/// server's, not expired.
pub fn check_original(
    signer: &Signer,
    id: Uuid,
    binding: &str,
    link: Link<'_>,
    now: UnixMillis,
) -> std::result::Result<(), LinkError> {
    check(signer, link, now, &|exp| original_message(id, binding, exp), &format!("ORIGINAL\n{id}"))
}
