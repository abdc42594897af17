//! Every request and response body of the upload-once HTTP protocol
//! (docs/protocol.md). Timestamps are RFC 3339 strings in UTC; ids are
//! hyphenated UUIDs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Where an event looks for the same bytes already stored (the content
/// identity: SHA-256 of the file, or the composite of its parts' digests).
/// A photo already confirmed in scope is not stored again: the attempt ends
/// confirmed, pointing to the existing media ([`MediaSummary::duplicate`]).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum Dedup {
    /// Every upload is kept.
    None,
    /// The same bytes from the same guest session are stored once.
    Guest,
    /// The same bytes from anyone in the event are stored once (default).
    #[default]
    Event,
}

impl Dedup {
    /// The stable string form.
    pub const fn as_str(self) -> &'static str {
        match self {
            Dedup::None => "none",
            Dedup::Guest => "guest",
            Dedup::Event => "event",
        }
    }
}

/// Whether an event's media waits for the host before it reaches the wall.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum ModerationPolicy {
    /// Every media record starts `pending` and needs the host's approval.
    Required,
    /// Media records are `approved` as soon as they are confirmed.
    None,
}

impl ModerationPolicy {
    /// The stable string form.
    pub const fn as_str(self) -> &'static str {
        match self {
            ModerationPolicy::Required => "required",
            ModerationPolicy::None => "none",
        }
    }

    /// Parses the stable string form.
    pub fn parse(text: &str) -> Option<ModerationPolicy> {
        match text {
            "required" => Some(ModerationPolicy::Required),
            "none" => Some(ModerationPolicy::None),
            _ => None,
        }
    }
}

/// `POST /v1/events` body (admin).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateEventRequest {
    /// URL-safe name: 1-64 of `a-z`, `0-9`, `-`, not starting with `-`.
    pub slug: String,
    /// Shown to guests.
    pub title: String,
    /// The largest file a guest may upload, in bytes.
    pub max_file_bytes: u64,
    /// Allowed content-type patterns such as `image/*` or `video/mp4`.
    pub allowed_types: Vec<String>,
    /// Whether the host approves media before the wall shows it.
    pub moderation: ModerationPolicy,
    /// Where the same bytes are stored only once (default `event`; `null`
    /// reads as left out).
    #[serde(default, deserialize_with = "null_as_default")]
    pub dedup: Dedup,
}

/// An optional field sent as `null` reads as if it were left out.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// The public description of an event.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct EventInfo {
    /// URL-safe name.
    pub slug: String,
    /// Shown to guests.
    pub title: String,
    /// The largest accepted file in bytes.
    pub max_file_bytes: u64,
    /// Allowed content-type patterns.
    pub allowed_types: Vec<String>,
    /// Moderation policy.
    pub moderation: ModerationPolicy,
    /// Where the same bytes are stored only once.
    #[serde(default)]
    pub dedup: Dedup,
    /// Files larger than this go up in parts (the server's setting); the
    /// client hashes smaller ones whole before authorize.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub multipart_threshold: Option<u64>,
}

/// `POST /v1/events` answer.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateEventResponse {
    /// The event as stored.
    pub event: EventInfo,
    /// The code guests use to join (share it in the guest link).
    pub guest_code: String,
    /// The host's bearer token for moderation.
    pub host_token: String,
    /// A bearer token that only reads the wall.
    pub wall_token: String,
}

/// `POST /v1/events/{slug}/sessions` body.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateSessionRequest {
    /// The event's guest code.
    pub guest_code: String,
}

/// `POST /v1/events/{slug}/sessions` answer.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionResponse {
    /// Bearer token for every later guest call. Keep it with the attempts.
    pub session_token: String,
    /// When the session stops working (at least the attempt TTL away).
    pub expires_at: String,
    /// The event this session belongs to, with its restrictions.
    pub event: EventInfo,
}

/// `POST /v1/events/{slug}/attempts` body.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthorizeRequest {
    /// The attempt id, minted by the client when the guest picked the file.
    pub id: Uuid,
    /// The original filename (display only; never part of the object key).
    pub filename: String,
    /// Exact size in bytes.
    pub size: u64,
    /// The file's content type.
    pub content_type: String,
    /// Optional SHA-256 of the content, 64 lowercase hex digits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// The server-side state of an attempt.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptState {
    /// Authorized: the object may be uploaded, then confirmed.
    Authorized,
    /// Confirmed: the media record exists.
    Confirmed,
    /// Not confirmed within the attempt TTL; its object is deleted.
    Expired,
    /// Confirm found a mismatch; no media record was made.
    Rejected,
}

impl AttemptState {
    /// Whether the attempt can still change.
    pub const fn is_terminal(self) -> bool {
        !matches!(self, AttemptState::Authorized)
    }

    /// The stable string form.
    pub const fn as_str(self) -> &'static str {
        match self {
            AttemptState::Authorized => "authorized",
            AttemptState::Confirmed => "confirmed",
            AttemptState::Expired => "expired",
            AttemptState::Rejected => "rejected",
        }
    }

    /// Parses the stable string form.
    pub fn parse(text: &str) -> Option<AttemptState> {
        Some(match text {
            "authorized" => AttemptState::Authorized,
            "confirmed" => AttemptState::Confirmed,
            "expired" => AttemptState::Expired,
            "rejected" => AttemptState::Rejected,
            _ => return None,
        })
    }
}

/// How to send the bytes: a signed request straight to object storage.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct UploadInstruction {
    /// Always `PUT`.
    pub method: String,
    /// The signed URL.
    pub url: String,
    /// Exactly these headers must be sent with the request.
    pub headers: BTreeMap<String, String>,
    /// When the URL stops working.
    pub expires_at: String,
}

/// How an attempt's bytes go up: one signed PUT, or parts (large files).
///
/// On the wire an object tagged by `kind` (`put` is the default, so a
/// single-PUT answer without `kind` reads the same). Read through
/// [`UploadFields`], not serde's internally tagged enum support (smaller in
/// the browser package).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", try_from = "UploadFields")]
pub enum Upload {
    /// One signed PUT of the whole file.
    Put(UploadInstruction),
    /// Parts of `part_size` bytes (the last one shorter), each sent to a
    /// URL signed by `POST /v1/attempts/{id}/parts`.
    Multipart(MultipartPlan),
}

impl Upload {
    /// The single PUT, if it is one.
    pub fn put(&self) -> Option<&UploadInstruction> {
        match self {
            Upload::Put(instruction) => Some(instruction),
            Upload::Multipart(_) => None,
        }
    }
}

/// How a large file is split.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MultipartPlan {
    /// Bytes per part (at least 5 MiB); the last part holds the rest.
    pub part_size: u64,
    /// How many parts (at most 10,000).
    pub part_count: u32,
    /// When the multipart upload stops taking parts (the attempt's expiry).
    pub expires_at: String,
}

impl MultipartPlan {
    /// The byte range `[start, end)` of part `number` (1-based) of a file of
    /// `size` bytes.
    pub fn range(&self, number: u32, size: u64) -> (u64, u64) {
        let start = u64::from(number.saturating_sub(1)) * self.part_size;
        (start.min(size), (start + self.part_size).min(size))
    }
}

/// An [`Upload`] as read from the wire: its fields side by side.
#[derive(Deserialize)]
pub struct UploadFields {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: Option<BTreeMap<String, String>>,
    expires_at: String,
    #[serde(default)]
    part_size: Option<u64>,
    #[serde(default)]
    part_count: Option<u32>,
}

impl TryFrom<UploadFields> for Upload {
    type Error = String;

    fn try_from(f: UploadFields) -> Result<Self, String> {
        let missing = |field: &str| format!("an upload needs `{field}`");
        match f.kind.as_deref().unwrap_or("put") {
            "put" => Ok(Upload::Put(UploadInstruction {
                method: f.method.ok_or_else(|| missing("method"))?,
                url: f.url.ok_or_else(|| missing("url"))?,
                headers: f.headers.unwrap_or_default(),
                expires_at: f.expires_at,
            })),
            "multipart" => Ok(Upload::Multipart(MultipartPlan {
                part_size: f.part_size.filter(|s| *s > 0).ok_or_else(|| missing("part_size"))?,
                part_count: f.part_count.filter(|c| *c > 0).ok_or_else(|| missing("part_count"))?,
                expires_at: f.expires_at,
            })),
            other => Err(format!("unknown upload kind `{other}`")),
        }
    }
}

/// One part to sign, in `POST /v1/attempts/{id}/parts`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartRequest {
    /// The part number, 1-based.
    pub number: u32,
    /// The part's SHA-256 (64 lowercase hex digits): signed into its URL,
    /// so the store refuses other bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// `POST /v1/attempts/{id}/parts` body: the parts to sign (at most 100).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartsRequest {
    /// The parts, each once.
    pub parts: Vec<PartRequest>,
}

/// The most parts one `POST /v1/attempts/{id}/parts` may sign.
pub const MAX_PARTS_PER_REQUEST: usize = 100;

/// A signed part URL.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignedPart {
    /// The part number.
    pub number: u32,
    /// Where and how to PUT its exact bytes.
    pub upload: UploadInstruction,
}

/// `POST /v1/attempts/{id}/parts` answer.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartsResponse {
    /// One signed URL per part asked for, in the order asked.
    pub parts: Vec<SignedPart>,
}

/// A part the object store holds, as the store itself lists it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredPart {
    /// The part number.
    pub number: u32,
    /// Its size in bytes.
    pub size: u64,
    /// Its SHA-256, when the store knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// Why an attempt was rejected.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejection {
    /// Stable code such as `size_mismatch`.
    pub code: String,
    /// Human-readable reason.
    pub reason: String,
}

/// An attempt as `authorize` returns it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptResponse {
    /// The client-minted id.
    pub id: Uuid,
    /// The server-side state.
    pub state: AttemptState,
    /// The server-generated object key.
    pub object_key: String,
    /// How to send the bytes (only while `authorized`): one signed PUT,
    /// or parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upload: Option<Upload>,
    /// When the attempt expires unless confirmed.
    pub expires_at: String,
    /// The media record, once confirmed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<MediaSummary>,
    /// Why it was rejected, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejection: Option<Rejection>,
}

impl AttemptResponse {
    /// The single signed PUT, if the answer carries one.
    pub fn put(&self) -> Option<&UploadInstruction> {
        self.upload.as_ref().and_then(Upload::put)
    }
}

/// `POST /v1/attempts/{id}/confirm` body: what the client believes it stored.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfirmRequest {
    /// Size in bytes.
    pub size: u64,
    /// Content type.
    pub content_type: String,
    /// Optional SHA-256, 64 lowercase hex digits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// For a file sent in parts: the composite checksum of the client's own
    /// file (the SHA-256 of its parts' raw digests, in part order, then `-`
    /// and the part count), computed from the digests of every part of the
    /// file it holds. Confirm compares it with the composite of the parts
    /// the store holds: a mismatch (a file spliced from two) is
    /// `422 file_changed`, the attempt rejected and its upload aborted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub composite_sha256: Option<String>,
}

/// A media record's moderation state.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum Moderation {
    /// Waiting for the host.
    Pending,
    /// On the wall.
    Approved,
    /// Not accepted by the host.
    Rejected,
}

impl Moderation {
    /// The stable string form.
    pub const fn as_str(self) -> &'static str {
        match self {
            Moderation::Pending => "pending",
            Moderation::Approved => "approved",
            Moderation::Rejected => "rejected",
        }
    }

    /// Parses the stable string form.
    pub fn parse(text: &str) -> Option<Moderation> {
        Some(match text {
            "pending" => Moderation::Pending,
            "approved" => Moderation::Approved,
            "rejected" => Moderation::Rejected,
            _ => return None,
        })
    }
}

/// The canonical media record, as confirm returns it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Media {
    /// Server-minted media id.
    pub id: Uuid,
    /// The attempt that created it.
    pub attempt_id: Uuid,
    /// The event slug.
    pub event: String,
    /// The object key holding the bytes.
    pub object_key: String,
    /// The original filename.
    pub filename: String,
    /// Size in bytes, as stored.
    pub size: u64,
    /// Content type, as stored.
    pub content_type: String,
    /// SHA-256 when it was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// For a file stored in parts: SHA-256 over the parts' SHA-256
    /// digests (raw, in part order), lowercase hex, then `-` and the number
    /// of parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub composite_sha256: Option<String>,
    /// Moderation state.
    pub moderation: Moderation,
    /// The host's reason, when rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moderation_reason: Option<String>,
    /// Where the bytes can be read back (its display rendition). Left out
    /// of a duplicate's answer unless the host approved the media: then it
    /// is on the wall, which every guest sees anyway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// When the media record was created.
    pub created_at: String,
    /// The answer to a guest whose bytes were already stored in the event
    /// by another attempt (a duplicate): `id` is that media, everything else
    /// of it the guest sees is its own (its attempt id, filename and object
    /// key; no reason of the host's, no URL before the host approved it).
    #[serde(default, skip_serializing_if = "is_false")]
    pub duplicate: bool,
}

/// The part of a media record a guest sees in status answers.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct MediaSummary {
    /// Media id.
    pub id: Uuid,
    /// Moderation state.
    pub moderation: Moderation,
    /// The host's reason, when rejected (never a duplicate's: the reason is
    /// about another guest's upload).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub reason: Option<String>,
    /// Where the bytes can be read back. Left out of a duplicate's summary
    /// unless the host approved the media (then it is on the wall).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub url: Option<String>,
    /// For a file stored in parts: its composite checksum (see
    /// [`Media::composite_sha256`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub composite_sha256: Option<String>,
    /// This attempt's bytes were already stored in the event's dedup scope:
    /// the media is the one another attempt stored, and nothing of this one
    /// was kept.
    #[serde(default, skip_serializing_if = "is_false")]
    pub duplicate: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl From<&Media> for MediaSummary {
    fn from(media: &Media) -> Self {
        MediaSummary {
            id: media.id,
            moderation: media.moderation,
            reason: media.moderation_reason.clone(),
            url: media.url.clone(),
            composite_sha256: media.composite_sha256.clone(),
            duplicate: false,
        }
    }
}

impl MediaSummary {
    /// The summary attempt `attempt` sees of `media`: a duplicate when
    /// another attempt stored it (a confirm answered with the media already
    /// in scope).
    pub fn for_attempt(media: &Media, attempt: Uuid) -> Self {
        MediaSummary { duplicate: media.duplicate || media.attempt_id != attempt, ..MediaSummary::from(media) }
    }
}

/// What became of one attempt, as `GET /v1/attempts/{id}` and
/// `POST /v1/attempts/status` report it.
///
/// On the wire it is an object tagged by `state`. It is read through
/// [`StatusFields`] rather than serde's internally tagged enum support,
/// which buffers every value first and costs the browser package 17 KB.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case", try_from = "StatusFields")]
pub enum AttemptStatus {
    /// Authorized and not confirmed yet.
    Authorized {
        /// The attempt id.
        id: Uuid,
        /// Whether the object is already in storage (then only confirm is
        /// missing).
        object_stored: bool,
        /// When the attempt expires unless confirmed.
        expires_at: String,
        /// For a multipart attempt: the parts the object store holds, from
        /// the store's own listing.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parts: Option<Vec<StoredPart>>,
    },
    /// Confirmed: the media record exists.
    Confirmed {
        /// The attempt id.
        id: Uuid,
        /// The media record.
        media: MediaSummary,
    },
    /// Expired before it was confirmed.
    Expired {
        /// The attempt id.
        id: Uuid,
    },
    /// Rejected at confirm.
    Rejected {
        /// The attempt id.
        id: Uuid,
        /// Stable code such as `size_mismatch`.
        code: String,
        /// Human-readable reason.
        reason: String,
    },
    /// Unknown to this session (never authorized, or another session's).
    NotFound {
        /// The attempt id.
        id: Uuid,
    },
}

/// An [`AttemptStatus`] as read from the wire: its fields side by side,
/// checked against its `state` when turned into the enum.
#[derive(Deserialize)]
pub struct StatusFields {
    state: String,
    id: Uuid,
    #[serde(default)]
    object_stored: Option<bool>,
    #[serde(default)]
    expires_at: Option<String>,
    #[serde(default)]
    media: Option<MediaSummary>,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    parts: Option<Vec<StoredPart>>,
}

impl TryFrom<StatusFields> for AttemptStatus {
    type Error = String;

    fn try_from(f: StatusFields) -> Result<Self, String> {
        let missing = |field: &str| format!("a `{}` status needs `{field}`", f.state);
        let id = f.id;
        Ok(match f.state.as_str() {
            "authorized" => AttemptStatus::Authorized {
                id,
                object_stored: f.object_stored.ok_or_else(|| missing("object_stored"))?,
                expires_at: f.expires_at.clone().ok_or_else(|| missing("expires_at"))?,
                parts: f.parts.clone(),
            },
            "confirmed" => AttemptStatus::Confirmed { id, media: f.media.clone().ok_or_else(|| missing("media"))? },
            "expired" => AttemptStatus::Expired { id },
            "rejected" => AttemptStatus::Rejected {
                id,
                code: f.code.clone().ok_or_else(|| missing("code"))?,
                reason: f.reason.clone().ok_or_else(|| missing("reason"))?,
            },
            "not_found" => AttemptStatus::NotFound { id },
            other => return Err(format!("unknown attempt state `{other}`")),
        })
    }
}

impl AttemptStatus {
    /// The attempt id the status is about.
    pub fn id(&self) -> Uuid {
        match self {
            AttemptStatus::Authorized { id, .. }
            | AttemptStatus::Confirmed { id, .. }
            | AttemptStatus::Expired { id }
            | AttemptStatus::Rejected { id, .. }
            | AttemptStatus::NotFound { id } => *id,
        }
    }
}

/// The most ids one status request may carry.
pub const MAX_STATUS_IDS: usize = 500;

/// `POST /v1/attempts/status` body.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusRequest {
    /// Up to 500 attempt ids.
    pub ids: Vec<Uuid>,
}

/// `POST /v1/attempts/status` answer: one entry per requested id, in order.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusResponse {
    /// One status per requested id, in request order.
    pub results: Vec<AttemptStatus>,
}

/// The host's decision on a media record.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModerationDecision {
    /// Show it on the wall.
    Approve,
    /// Keep it off the wall.
    Reject,
}

/// `POST /v1/media/{id}/moderation` body (host).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModerationRequest {
    /// Approve or reject.
    pub decision: ModerationDecision,
    /// Why, shown to the guest when rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A media record as its event's host sees it (the media list, a
/// moderation answer): the record, whose `url` is the display rendition as
/// everyone's is, and the original's URL, which only hosts get.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostMedia {
    /// The record.
    #[serde(flatten)]
    pub media: Media,
    /// The original bytes, as uploaded, with their metadata (location,
    /// camera): for the host alone.
    pub original_url: String,
    /// How far its display renditions are: `pending`, `ready`, or
    /// `placeholder` (there is none: the URLs serve a placeholder image).
    pub preview: String,
    /// Why there is only the placeholder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_reason: Option<String>,
    /// The guest session that uploaded it (for the host to remove that
    /// guest: `POST /v1/events/{slug}/guests/{guest}/revoke`).
    #[serde(default)]
    pub guest: i64,
}

/// `GET /v1/events/{slug}/media` answer (host): one page of the list, or
/// what changed since a change cursor.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MediaListResponse {
    /// A page: media records in the order asked for. What changed: the
    /// records changed since the cursor, in the order they changed.
    pub media: Vec<HostMedia>,
    /// What changed: media withdrawn by their guest since the cursor (no
    /// longer in the list).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gone: Vec<Uuid>,
    /// Uploads that were not stored because their bytes already were (in
    /// the event's dedup scope). Absent from an answer of what changed when
    /// nothing did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deduplicated: Option<u64>,
    /// How many media the list holds per filter, counted now. Absent from
    /// an answer of what changed when nothing did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<MediaCounts>,
    /// A page: pass as `cursor` (with the same filter and order) for the
    /// next one; absent after the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Pass as `since` to learn what changes after this answer. Opaque;
    /// it only grows.
    pub changes: String,
    /// What changed: more changes wait (ask again with `changes`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub more: bool,
}

/// How many media of an event the host's list holds, per filter.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MediaCounts {
    /// Waiting for the host.
    pub pending: u64,
    /// Approved.
    pub approved: u64,
    /// Rejected.
    pub rejected: u64,
    /// All of them.
    pub all: u64,
}

/// One approved media record on the wall.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WallItem {
    /// Media id.
    pub id: Uuid,
    /// The display rendition (a photo about 1,600 px on its long edge, with
    /// no metadata; a video's shareable MP4, with none either; else a
    /// placeholder image).
    pub url: String,
    /// The thumbnail (about 400 px; a video's poster).
    #[serde(default)]
    pub thumb_url: String,
    /// When `url` serves a placeholder image: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placeholder: Option<String>,
    /// A video's duration in milliseconds, once its shareable MP4 is made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Content type of the original (`video/…` plays from `url`).
    pub content_type: String,
    /// When it was approved.
    pub approved_at: String,
}

/// `GET /v1/events/{slug}/wall` answer.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WallResponse {
    /// Approved media after the given cursor, in approval order.
    pub items: Vec<WallItem>,
    /// Pass this as `after` to get what comes next. Opaque.
    pub next_cursor: String,
}

/// An `application/problem+json` body (RFC 9457) with a stable `code`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// A URI naming the problem type (`urn:upload-once:<code>`).
    #[serde(rename = "type")]
    pub type_uri: String,
    /// Short summary of the problem type.
    pub title: String,
    /// The HTTP status code.
    pub status: u16,
    /// What happened in this occurrence.
    pub detail: String,
    /// The stable error code.
    pub code: String,
    /// Whether repeating the same request later may succeed.
    #[serde(default)]
    pub retryable: bool,
}
