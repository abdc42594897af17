//! Attempts: authorize (create-or-return), status, renew, signing the
//! parts of a large file, and confirm (create-or-return the media record,
//! exactly once; for a large file, assembled from the parts the store
//! holds).

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use futures_util::StreamExt;
use upload_once_core::ErrorCode;
use upload_once_core::decide::confirm::{self, After, Before, Refusal, Stored};
use upload_once_core::decide::{authorize as authorizing, signing};
use upload_once_core::restrictions::{Restrictions, normalize_content_type};
use upload_once_core::time::format_rfc3339;
use upload_once_core::wire::{
    AttemptResponse, AttemptState, AttemptStatus, AuthorizeRequest, ConfirmRequest, MAX_STATUS_IDS, Media, Moderation,
    ModerationPolicy, PartsRequest, PartsResponse, Problem, Rejection, SignedPart, StatusRequest, StatusResponse,
    StoredPart, Upload,
};
use uuid::Uuid;

use super::extract::{ApiJson, ApiPath, Session, event, lapsed_session};
use super::problems::{AlreadyConfirmed, Expired, MalformedRequest, NotFound, SessionRefused, Unavailable};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::limits::{ClientAddress, Limits, RateClass};
use crate::media::MediaServices;
use crate::metrics::ConfirmOutcome;
use crate::rules::multipart::{PartBounds, PartPlan, composite_sha256, parts_to_complete, stored_parts, with_digests};
use crate::secrets::new_object_key;
use crate::state::{AppState, Lifetimes, Links, Objects, Records, Stores};
use crate::storage::{ObjectMeta, PartGrant, PutGrant};
use crate::store::{AttemptLock, AttemptRow, EventRow, MediaRow, NewAttempt, NewMedia, SessionRow};
use std::sync::Arc;
use upload_once_core::time::UnixMillis;

/// The attempt as `authorize` and `renew` answer it while it is
/// authorized: a fresh signed URL, or its multipart plan (the parts are
/// signed by `POST /parts`).
fn attempt_response(
    objects: &Objects,
    lifetimes: &Lifetimes,
    links: &Links,
    a: &AttemptRow,
    media: Option<&MediaRow>,
) -> AttemptResponse {
    let upload = (a.state == AttemptState::Authorized).then(|| match a.plan {
        Some(plan) => Upload::Multipart(plan.wire(format_rfc3339(a.expires_at))),
        None => Upload::Put(objects.presign_put(&PutGrant {
            key: &a.object_key,
            content_type: &a.content_type,
            size: a.size,
            sha256: a.sha256.as_deref(),
            expires_at: lifetimes.url_expiry(a.expires_at),
        })),
    });
    AttemptResponse {
        id: a.id,
        state: a.state,
        object_key: a.object_key.clone(),
        upload,
        expires_at: format_rfc3339(a.expires_at),
        media: media.map(|m| links.media_summary(m, a)),
        rejection: rejection(a),
    }
}

fn rejection(a: &AttemptRow) -> Option<Rejection> {
    (a.state == AttemptState::Rejected).then(|| Rejection {
        code: a.reject_code.clone().unwrap_or_else(|| "rejected".into()),
        reason: a.reject_reason.clone().unwrap_or_else(|| "rejected".into()),
    })
}

/// Whether an attempt is past its expiry (even if the sweeper has not run).
fn is_expired(now: UnixMillis, a: &AttemptRow) -> bool {
    facts(now, a).expired()
}

/// `POST /v1/events/{slug}/attempts`
#[utoipa::path(post, path = "/v1/events/{slug}/attempts", tag = "guests",
    params(("slug" = String, Path, description = "Event slug")),
    request_body = AuthorizeRequest,
    security(("session" = [])),
    responses(
        (status = 201, body = AttemptResponse, description = "Authorized now: a signed URL, or (above the multipart threshold) the plan of parts; or, when its sha256 is already stored in the event's dedup scope, confirmed at once as a duplicate of that media (no upload)"),
        (status = 200, body = AttemptResponse, description = "The same id and parameters again: the same attempt, a fresh URL (or the same plan)"),
        MalformedRequest, SessionRefused,
        (status = 403, body = Problem, content_type = "application/problem+json", description = "forbidden: the session belongs to another event"),
        (status = 404, body = Problem, content_type = "application/problem+json", description = "no such event"),
        Expired,
        (status = 422, body = Problem, content_type = "application/problem+json",
            description = "id_reused, file_too_large, type_not_allowed, empty_file, invalid_filename, invalid_checksum"),
    ))]
pub async fn authorize(
    State(Stores { records, objects, lifetimes, links }): State<Stores>,
    State(config): State<Arc<Config>>,
    State(limits): State<Arc<Limits>>,
    Session(session): Session,
    ApiPath(slug): ApiPath<String>,
    ApiJson(req): ApiJson<AuthorizeRequest>,
) -> Result<(StatusCode, Json<AttemptResponse>)> {
    let event = event(&records, &slug).await?;
    if session.event_id != event.id {
        return Err(Error::problem(ErrorCode::Forbidden, "this session belongs to another event"));
    }
    // A lapsed session may repeat an authorize of its own (create-or-return
    // returns it); only a new attempt needs a live session.
    let now = lifetimes.now();
    if !session.is_live(now) && records.attempt(session.id, req.id).await?.is_none() {
        return Err(lapsed_session());
    }
    // Everything is checked before anything is stored.
    let restrictions =
        Restrictions { max_file_bytes: Some(event.max_file_bytes), allowed_types: event.allowed_types.clone() };
    let content_type = authorizing::check(&req, &restrictions)?;

    let attempt = NewAttempt {
        id: req.id,
        session_id: session.id,
        event_id: event.id,
        filename: req.filename.clone(),
        size: req.size,
        content_type: content_type.clone(),
        sha256: req.sha256.clone(),
        object_key: new_object_key(&event.slug),
        created_at: now,
        expires_at: now + lifetimes.attempt_ttl_ms(),
        reserved_until: lifetimes.reservation_until(now + lifetimes.attempt_ttl_ms()),
        // Fixed now: a later change of the flags never alters it.
        plan: PartPlan::for_size(req.size, config.multipart_threshold, config.part_size, PartBounds::S3),
        quotas: limits.config.attempt_quotas(),
    };
    // The same bytes already stored in the event's dedup scope: confirmed at
    // once, nothing to transfer.
    let dedup = crate::rules::dedup::authorize_entry(&event, &attempt);
    let (row, created) = records.authorize(attempt, dedup).await?;
    let requested = authorizing::File {
        filename: &req.filename,
        size: req.size,
        content_type: &content_type,
        sha256: req.sha256.as_deref(),
    };
    authorizing::same_file(&file_of(&row), &requested)?;
    authorizing::answer(&facts(lifetimes.now(), &row))?;
    // The session must outlive every attempt it authorizes, or the guest could
    // never confirm (nor ask about) an attempt made late in the session.
    records.extend_session(session.id, row.expires_at).await?;
    let media = match row.state {
        AttemptState::Confirmed => records.media_for_attempts(&[row.row_id]).await?.pop(),
        _ => None,
    };
    let status = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(attempt_response(&objects, &lifetimes, &links, &row, media.as_ref()))))
}

/// `POST /v1/attempts/{id}/renew`
#[utoipa::path(post, path = "/v1/attempts/{id}/renew", tag = "guests",
    params(("id" = Uuid, Path, description = "Attempt id")),
    security(("session" = [])),
    responses(
        (status = 200, body = AttemptResponse, description = "A fresh signed URL, or the attempt's multipart plan"),
        NotFound, AlreadyConfirmed, Expired,
    ))]
pub async fn renew(
    State(Stores { records, objects, lifetimes, links }): State<Stores>,
    Session(session): Session,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<Json<AttemptResponse>> {
    let row = records.attempt(session.id, id).await?.ok_or_else(|| Error::not_found("attempt"))?;
    signing::renew(&facts(lifetimes.now(), &row))?;
    // A new URL: the reservation lasts as long as it may land bytes.
    records.reserve(row.row_id, lifetimes.reservation_until(row.expires_at)).await?;
    Ok(Json(attempt_response(&objects, &lifetimes, &links, &row, None)))
}

/// The plan of an attempt that may have parts signed now, or why not
/// ([`signing::parts`]).
fn parts_allowed(now: UnixMillis, a: &AttemptRow) -> Result<PartPlan> {
    signing::parts(&facts(now, a))?;
    Ok(a.plan.expect("signing::parts allows only an attempt in parts"))
}

/// Under the attempt's row lock: the store's multipart upload (made now if
/// there is none yet, so two first calls make one), the parts' digests
/// recorded, committed. The upload's id.
async fn open_upload(objects: &Objects, lock: &mut dyn AttemptLock, parts: &[(u32, Option<String>)]) -> Result<String> {
    let a = lock.attempt().clone();
    let (upload_id, made_now) = match a.upload_id {
        Some(id) => (id, false),
        None => (objects.create_multipart(&a.object_key, &a.content_type).await?, true),
    };
    let recorded = async {
        if made_now {
            lock.set_upload_id(&upload_id).await?;
        }
        lock.record_part_digests(parts).await
    }
    .await;
    if let Err(e) = recorded {
        if made_now {
            // Never recorded: nothing would ever abort it.
            let _ = objects.abort_multipart(&a.object_key, &upload_id).await;
        }
        return Err(e);
    }
    Ok(upload_id)
}

/// `POST /v1/attempts/{id}/parts`: signs a batch of parts of a multipart
/// attempt, each URL bound to its part's number, exact length and (when
/// given) SHA-256.
#[utoipa::path(post, path = "/v1/attempts/{id}/parts", tag = "guests",
    params(("id" = Uuid, Path, description = "Attempt id")),
    request_body = PartsRequest,
    security(("session" = [])),
    responses(
        (status = 200, body = PartsResponse, description = "One signed URL per part asked for, in the order asked"),
        MalformedRequest, SessionRefused,
        (status = 404, body = Problem, content_type = "application/problem+json", description = "no such attempt in this session"),
        AlreadyConfirmed, Expired,
        (status = 422, body = Problem, content_type = "application/problem+json",
            description = "not_multipart, invalid_part, invalid_checksum; or the attempt's rejection code"),
        Unavailable,
    ))]
pub async fn sign_parts(
    State(Stores { records, objects, lifetimes, .. }): State<Stores>,
    Session(session): Session,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(req): ApiJson<PartsRequest>,
) -> Result<Json<PartsResponse>> {
    // Everything is checked on a plain read first: a refused request locks
    // and stores nothing.
    let row = records.attempt(session.id, id).await?.ok_or_else(|| Error::not_found("attempt"))?;
    let plan = parts_allowed(lifetimes.now(), &row)?;
    signing::part_requests(&req.parts, plan.part_count)?;

    let mut lock = records.lock_attempt(session.id, id).await?.ok_or_else(|| Error::not_found("attempt"))?;
    let a = lock.attempt().clone();
    parts_allowed(lifetimes.now(), &a)?;
    let digests: Vec<(u32, Option<String>)> = req.parts.iter().map(|p| (p.number, p.sha256.clone())).collect();
    let upload_id = open_upload(&objects, lock.as_mut(), &digests).await?;
    lock.commit().await?;
    // New URLs: the reservation lasts as long as they may land bytes.
    records.reserve(a.row_id, lifetimes.reservation_until(a.expires_at)).await?;

    let expires_at = lifetimes.url_expiry(a.expires_at);
    let parts = req
        .parts
        .iter()
        .map(|p| SignedPart {
            number: p.number,
            upload: objects.presign_part(&PartGrant {
                key: &a.object_key,
                upload_id: &upload_id,
                number: p.number,
                size: plan.part_len(p.number, a.size),
                sha256: p.sha256.as_deref(),
                expires_at,
            }),
        })
        .collect();
    Ok(Json(PartsResponse { parts }))
}

/// What the store holds for a live authorized attempt: whether its object
/// is stored, and (multipart) the parts it lists.
struct Held {
    row_id: i64,
    object_stored: bool,
    parts: Option<Vec<crate::storage::ListedPart>>,
}

/// Once a multipart attempt's parts are assembled (a complete whose answer
/// was lost), its parts are left out: there are none any more, only the
/// object, and only the confirm is missing.
async fn held(objects: Objects, a: AttemptRow) -> Result<Held> {
    let object_stored = objects.head(&a.object_key).await?.is_some();
    let parts = match (&a.plan, &a.upload_id) {
        (None, _) => None,
        (Some(_), _) if object_stored => None,
        (Some(_), None) => Some(Vec::new()),
        (Some(_), Some(upload_id)) => Some(objects.list_parts(&a.object_key, upload_id).await?.unwrap_or_default()),
    };
    Ok(Held { row_id: a.row_id, object_stored, parts })
}

/// Who asks for statuses, and the rate their calls to the object store are
/// counted against.
pub struct Asker<'a> {
    /// The limits (the status rate).
    pub limits: &'a Limits,
    /// The client's address, when known.
    pub client: Option<std::net::IpAddr>,
}

/// What each attempt's status is, in request order. The object store is
/// asked about each live attempt (a HEAD, and a parts listing for one in
/// parts): those calls are counted against the asker's status rate
/// (`--rate-status`) before they are made, so one request of 200 ids costs
/// what 400 requests would, and a flood of them is refused (`429` with
/// `Retry-After`) before the store is.
pub async fn statuses(
    asker: &Asker<'_>,
    records: &Records,
    objects: &Objects,
    lifetimes: &Lifetimes,
    links: &Links,
    session: &SessionRow,
    ids: &[Uuid],
) -> Result<Vec<AttemptStatus>> {
    let rows = records.attempts(session.id, ids).await?;
    let confirmed: Vec<i64> = rows.iter().filter(|a| a.state == AttemptState::Confirmed).map(|a| a.row_id).collect();
    let media = records.media_for_attempts(&confirmed).await?;
    // Ask the store about live authorized attempts, a few at a time: HEAD
    // the object, and list the parts of a multipart one.
    let live: Vec<AttemptRow> = rows
        .iter()
        .filter(|a| a.state == AttemptState::Authorized && !is_expired(lifetimes.now(), a))
        .cloned()
        .collect();
    let with_upload: Vec<i64> = live.iter().filter(|a| a.upload_id.is_some()).map(|a| a.row_id).collect();
    if let Some(client) = asker.client {
        let calls = (live.len() + with_upload.len()) as u32;
        if let Err(wait) = asker.limits.charge(RateClass::Status, client, calls) {
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            return Err(Error::problem(
                ErrorCode::RateLimited,
                format!(
                    "this status asks the store about {calls} uploads, more than this address's status rate has room for now; ask again in {} s",
                    seconds.max(1)
                ),
            ));
        }
    }
    let recorded = records.part_digests(&with_upload).await?;
    let held: Vec<Held> = futures_util::stream::iter(live)
        .map(|a| held(objects.clone(), a))
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<_>>()?;
    Ok(ids
        .iter()
        .map(|id| {
            let Some(a) = rows.iter().find(|a| a.id == *id) else { return AttemptStatus::NotFound { id: *id } };
            if is_expired(lifetimes.now(), a) {
                return AttemptStatus::Expired { id: *id };
            }
            match a.state {
                AttemptState::Authorized => {
                    let held = held.iter().find(|h| h.row_id == a.row_id);
                    let parts: Option<Vec<StoredPart>> = held.and_then(|h| h.parts.clone()).map(|listed| {
                        let own: Vec<_> = recorded.iter().filter(|d| d.attempt_row_id == a.row_id).cloned().collect();
                        stored_parts(&with_digests(listed, &own))
                    });
                    AttemptStatus::Authorized {
                        id: *id,
                        object_stored: held.is_some_and(|h| h.object_stored),
                        expires_at: format_rfc3339(a.expires_at),
                        parts,
                    }
                }
                AttemptState::Confirmed => match media.iter().find(|m| a.media_id == Some(m.id)) {
                    Some(m) => AttemptStatus::Confirmed { id: *id, media: links.media_summary(m, a) },
                    None => AttemptStatus::NotFound { id: *id },
                },
                AttemptState::Rejected => {
                    let r = rejection(a).expect("rejected attempts have a rejection");
                    AttemptStatus::Rejected { id: *id, code: r.code, reason: r.reason }
                }
                AttemptState::Expired => AttemptStatus::Expired { id: *id },
            }
        })
        .collect())
}

/// `GET /v1/attempts/{id}`
#[utoipa::path(get, path = "/v1/attempts/{id}", tag = "guests",
    params(("id" = Uuid, Path, description = "Attempt id")),
    security(("session" = [])),
    responses(
        (status = 200, body = AttemptStatus, description = "`not_found` is an answer, not an error: unknown ids and other sessions' ids look the same"),
        SessionRefused,
    ))]
pub async fn status(
    State(Stores { records, objects, lifetimes, links }): State<Stores>,
    State(limits): State<Arc<Limits>>,
    client: Option<axum::Extension<ClientAddress>>,
    Session(session): Session,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<Json<AttemptStatus>> {
    let asker = Asker { limits: &limits, client: client.map(|c| c.0.0) };
    let mut all = statuses(&asker, &records, &objects, &lifetimes, &links, &session, &[id]).await?;
    Ok(Json(all.pop().unwrap_or(AttemptStatus::NotFound { id })))
}

/// What a withdrawn attempt, and the media it made, are marked with.
const WITHDRAWN: &str = "withdrawn by the guest who uploaded it";

/// `DELETE /v1/attempts/{id}`: the guest withdraws an upload.
#[utoipa::path(delete, path = "/v1/attempts/{id}", tag = "guests",
    params(("id" = Uuid, Path, description = "Attempt id")),
    security(("session" = [])),
    responses(
        (status = 204, description = "Withdrawn, or already over. Not confirmed yet: the attempt is rejected with `withdrawn` (its URLs take no more bytes, its reserved bytes are freed, a multipart upload is aborted, what it stored is deleted by the sweeper). Confirmed: the media it made is taken down like a rejected one, leaves the wall and the host's list, and its objects are deleted; a duplicate's media is another upload's and stays. Again: `204`, nothing more"),
        SessionRefused,
        (status = 404, body = Problem, content_type = "application/problem+json", description = "not_found: unknown ids and other sessions' ids look the same"),
    ))]
pub async fn withdraw(
    State(Stores { records, objects, lifetimes, .. }): State<Stores>,
    State(media_services): State<Arc<MediaServices>>,
    Session(session): Session,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<StatusCode> {
    let lock = records.lock_attempt(session.id, id).await?.ok_or_else(|| Error::not_found("attempt"))?;
    let a = lock.attempt().clone();
    match a.state {
        AttemptState::Authorized => {
            lock.reject(ErrorCode::Withdrawn.as_str(), WITHDRAWN).await?;
            crate::services::uploads::abort_upload(&objects, &a, "a withdrawn attempt").await;
        }
        AttemptState::Confirmed => {
            if let Some(media) = lock.withdraw_media(WITHDRAWN, lifetimes.now()).await? {
                crate::services::views::moderated(&media_services, &media);
            }
        }
        // Already ended: dropping the lock leaves it as it is.
        AttemptState::Expired | AttemptState::Rejected => {}
    }
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /v1/attempts/status`
#[utoipa::path(post, path = "/v1/attempts/status", tag = "guests",
    request_body = StatusRequest,
    security(("session" = [])),
    responses(
        (status = 200, body = StatusResponse),
        (status = 422, body = Problem, content_type = "application/problem+json", description = "too_many_ids"),
        (status = 429, body = Problem, content_type = "application/problem+json", description = "rate_limited: the store calls the request needs (a HEAD per live upload, a parts listing per one in parts) do not fit in the address's status rate now; Retry-After says when"),
    ))]
pub async fn status_batch(
    State(Stores { records, objects, lifetimes, links }): State<Stores>,
    State(limits): State<Arc<Limits>>,
    client: Option<axum::Extension<ClientAddress>>,
    Session(session): Session,
    ApiJson(req): ApiJson<StatusRequest>,
) -> Result<Json<StatusResponse>> {
    if req.ids.len() > MAX_STATUS_IDS {
        return Err(Error::problem(ErrorCode::TooManyIds, format!("at most {MAX_STATUS_IDS} ids per request")));
    }
    let asker = Asker { limits: &limits, client: client.map(|c| c.0.0) };
    let results = statuses(&asker, &records, &objects, &lifetimes, &links, &session, &req.ids).await?;
    Ok(Json(StatusResponse { results }))
}

/// What the object store holds for an attempt, as seen before its row
/// lock is taken.
enum Seen {
    /// The object is stored (for a multipart attempt: assembled, by this
    /// confirm or an earlier one whose answer was lost); when this confirm
    /// assembled it, the composite checksum of the parts it assembled (the
    /// store's listed digests, else the recorded ones).
    Object(ObjectMeta, Option<String>),
    /// Not everything is stored yet.
    Missing,
    /// Every part is stored, but their composite checksum is not the one
    /// of the client's file: a file spliced from two (parts of one file
    /// stored, the rest sent from another). Nothing was assembled.
    Spliced {
        /// The composite of the parts the store holds.
        stored: String,
    },
    /// Every part is stored, and whether they are all of one file cannot
    /// be checked: every digest is known and the confirm claims no
    /// composite, or only some digests are known
    /// ([`confirm::composite_required`]). Nothing was assembled.
    Unclaimed,
}

/// Asks the store what it holds for `a` — a HEAD, and for a multipart
/// attempt not yet assembled, its parts' list (the store's own, never the
/// client's) — and assembles a multipart object whose every part is stored,
/// all without holding anything in the database: a slow store (assembling
/// a large object takes a while) stalls no other writer. Confirms of one
/// attempt racing each other assemble it once on this instance. Assembling
/// is safe outside the lock: a part or an upload is only removed once its
/// attempt is over (expired or rejected, under the lock), the store aborts
/// the upload before it deletes the object, and an upload aborted during
/// the assembly is not completed (the local store checks under its own
/// lock; S3 refuses to complete an aborted upload); the row lock then
/// re-checks the attempt.
async fn look(state: &AppState, a: &AttemptRow, claimed_composite: Option<&str>) -> Result<Seen> {
    if let Some(object) = state.objects.head(&a.object_key).await? {
        return Ok(Seen::Object(object, None));
    }
    let (Some(plan), Some(upload_id)) = (&a.plan, &a.upload_id) else { return Ok(Seen::Missing) };
    let gate = state.assemblies.gate(&a.object_key);
    let _assembling = gate.lock().await;
    // Assembled by a racing confirm while this one waited.
    if let Some(object) = state.objects.head(&a.object_key).await? {
        return Ok(Seen::Object(object, None));
    }
    let listed = state.objects.list_parts(&a.object_key, upload_id).await?.unwrap_or_default();
    let Ok(parts) = parts_to_complete(plan, a.size, &listed) else { return Ok(Seen::Missing) };
    // Digests the store does not list: the ones recorded when their URLs
    // were signed (a part's digest never changes once its URL is signed).
    let recorded = state.records.part_digests(&[a.row_id]).await?;
    let parts = with_digests(parts, &recorded);
    // The client's file must be the parts' file, all of them: checked
    // before anything is assembled. When every part's digest is known the
    // client must claim the composite, and it must match; when only some
    // are (a part signed without its digest, or with two), the parts cannot
    // be checked to be one file whatever is claimed; when none is (a client
    // that hashed nothing), there is nothing to compare.
    let known = parts.iter().filter(|p| p.sha256.is_some()).count();
    let stored = composite_sha256(parts.iter().map(|p| p.sha256.as_deref()));
    match (claimed_composite, stored) {
        (_, None) if known > 0 => return Ok(Seen::Unclaimed),
        (None, Some(_)) => return Ok(Seen::Unclaimed),
        (Some(claimed), Some(stored)) if claimed != stored => return Ok(Seen::Spliced { stored }),
        _ => {}
    }
    state.objects.complete_multipart(&a.object_key, upload_id, &parts).await?;
    let object = state
        .objects
        .head(&a.object_key)
        .await?
        .ok_or_else(|| Error::ObjectStore("the store completed the upload but holds no object".into()))?;
    let composite = composite_sha256(parts.iter().map(|p| p.sha256.as_deref()));
    Ok(Seen::Object(object, composite))
}

/// The object a confirm compares and records, with its composite checksum
/// (multipart, when every part's digest is known); `None` when something
/// is still missing (`409 object_missing`, nothing changed). Called under
/// the attempt's row lock, with what was seen before it: the attempt is
/// still authorized and not due, so nothing seen has gone (an object or a
/// part is only deleted once its attempt is expired or rejected, which
/// needs this lock).
async fn stored_object(
    lock: &mut dyn AttemptLock,
    a: &AttemptRow,
    seen: Seen,
) -> Result<Option<(ObjectMeta, Option<String>)>> {
    let (object, assembled) = match seen {
        Seen::Object(object, assembled) => (object, assembled),
        Seen::Missing | Seen::Spliced { .. } | Seen::Unclaimed => return Ok(None),
    };
    let Some(plan) = a.plan else { return Ok(Some((object, None))) };
    if let Some(composite) = object.composite_sha256.clone().or(assembled) {
        return Ok(Some((object, Some(composite))));
    }
    // Assembled by an earlier confirm whose answer was lost, on a store
    // that keeps no composite: the one of the digests recorded.
    let recorded = lock.part_digests().await?;
    let signed = composite_sha256(
        (1..=plan.part_count).map(|n| recorded.iter().find(|d| d.number == n).and_then(|d| d.sha256.as_deref())),
    );
    Ok(Some((object, signed)))
}

/// A confirm of a file spliced from two: the attempt is rejected with
/// `file_changed` (under its lock), then its multipart upload is aborted,
/// so nothing half-made is kept. The error to answer.
async fn refuse_splice(state: &AppState, lock: Box<dyn AttemptLock>, a: &AttemptRow, refusal: Refusal) -> Error {
    if let Err(e) = lock.reject(refusal.code.as_str(), &refusal.reason).await {
        return e;
    }
    crate::services::uploads::abort_upload(&state.objects, a, "a spliced file").await;
    refusal.into()
}

/// Confirms an attempt: create-or-return its media record, in one
/// transaction holding the attempt's row lock. Never read-then-insert.
/// Counts the outcome ([`ConfirmOutcome`]).
pub async fn confirm_attempt(
    state: &AppState,
    session: &SessionRow,
    id: Uuid,
    req: &ConfirmRequest,
) -> Result<MediaRow> {
    let result = confirm_under_lock(state, session, id, req).await;
    let outcome = match &result {
        Ok((_, outcome)) => Some(*outcome),
        Err(e) => ConfirmOutcome::of_error(e),
    };
    if let Some(outcome) = outcome {
        state.metrics.confirmed(outcome);
    }
    if let Ok((media, ConfirmOutcome::Created)) = &result {
        // Its renditions are begun now rather than at the next scan: the
        // media goes onto the wall once they are settled.
        match state.media.db.enqueue(media.id, state.now()).await {
            Ok(()) => state.media.events.wake(),
            Err(e) => tracing::warn!(media = %media.id, "confirm: the rendition job waits for the scan: {e}"),
        }
    }
    result.map(|(media, _)| media)
}

/// The file an attempt was authorized for ([`authorizing::same_file`]).
fn file_of(a: &AttemptRow) -> authorizing::File<'_> {
    authorizing::File {
        filename: &a.filename,
        size: a.size,
        content_type: &a.content_type,
        sha256: a.sha256.as_deref(),
    }
}

/// An attempt as the rules see it ([`upload_once_core::decide::Attempt`]).
fn facts(now: UnixMillis, a: &AttemptRow) -> confirm::Attempt<'_> {
    confirm::Attempt {
        state: a.state,
        due: now >= a.expires_at,
        size: a.size,
        content_type: &a.content_type,
        sha256: a.sha256.as_deref(),
        in_parts: a.plan.is_some(),
        rejection: (a.state == AttemptState::Rejected).then(|| {
            (a.reject_code.as_deref().unwrap_or("rejected"), a.reject_reason.as_deref().unwrap_or("rejected"))
        }),
    }
}

/// What a confirm writes with the attempt's row lock, which the write
/// finishes.
enum Write {
    /// Nothing: answer the media again.
    Replay,
    /// Nothing: answer this.
    Answer(Refusal),
    /// The attempt expired.
    Expire(Refusal),
    /// The attempt rejected.
    Reject(Refusal),
    /// The attempt rejected as a splice, and its upload aborted.
    Splice(Refusal),
    /// The media record, created or returned.
    Record(NewMedia, Option<String>),
}

/// Confirms attempt `id` of `session`: extract (done), load, decide, write.
/// The store is asked before the row lock is taken, so a slow store holds
/// no database lock (SQLite's write lock) and no pooled connection while it
/// answers; under the lock the rules decide again from the locked row.
async fn confirm_under_lock(
    state: &AppState,
    session: &SessionRow,
    id: Uuid,
    req: &ConfirmRequest,
) -> Result<(MediaRow, ConfirmOutcome)> {
    // Read before the lock: inside it, only the locked transaction may touch
    // the database.
    let event = state.records.event_by_id(session.event_id).await?.ok_or_else(|| Error::not_found("attempt"))?;
    let claimed_type = normalize_content_type(&req.content_type);
    let claim = confirm::Claim {
        size: req.size,
        content_type: &claimed_type,
        sha256: req.sha256.as_deref(),
        composite: req.composite_sha256.as_deref(),
    };
    let read = state.records.attempt(session.id, id).await?.ok_or_else(|| Error::not_found("attempt"))?;
    let seen = if confirm::will_look(&facts(state.now(), &read), &claim) {
        Some(look(state, &read, claim.composite).await?)
    } else {
        None
    };
    let mut lock = state.records.lock_attempt(session.id, id).await?.ok_or_else(|| Error::not_found("attempt"))?;
    let a = lock.attempt().clone();
    // The lock is its own guard: an error or an answer that changes nothing
    // drops it, which rolls back.
    let write = decide_under_lock(state, lock.as_mut(), &event, &a, &claim, seen).await?;
    match write {
        Write::Replay => Ok((lock.media().await?, ConfirmOutcome::Replayed)),
        Write::Answer(refusal) => Err(refusal.into()),
        Write::Expire(refusal) => {
            lock.expire().await?;
            Err(refusal.into())
        }
        Write::Reject(refusal) => {
            lock.reject(refusal.code.as_str(), &refusal.reason).await?;
            Err(refusal.into())
        }
        Write::Splice(refusal) => Err(refuse_splice(state, lock, &a, refusal).await),
        Write::Record(media, content_key) => {
            crate::services::dedup::confirm(&state.objects, &event, lock, media, content_key.as_deref()).await
        }
    }
}

/// What a confirm writes, decided by the rules ([`confirm`]) from the locked
/// attempt, the claim and what the store holds (looked at now when it was
/// not before the lock: the clock moved back?).
async fn decide_under_lock(
    state: &AppState,
    lock: &mut dyn AttemptLock,
    event: &EventRow,
    a: &AttemptRow,
    claim: &confirm::Claim<'_>,
    seen: Option<Seen>,
) -> Result<Write> {
    let attempt = facts(state.now(), a);
    match confirm::before_looking(&attempt, claim) {
        Before::Replay => return Ok(Write::Replay),
        Before::Ended(refusal) => return Ok(Write::Answer(refusal)),
        Before::Expire(refusal) => return Ok(Write::Expire(refusal)),
        Before::Reject(refusal) => return Ok(Write::Reject(refusal)),
        Before::Look => {}
    }
    let seen = match seen {
        Some(seen) => seen,
        None => look(state, a, claim.composite).await?,
    };
    #[cfg(feature = "test-hooks")]
    if let Some(hooks) = &state.test_hooks {
        // Inside the transaction, holding the attempt's row lock.
        hooks.hold_confirm().await;
    }
    let unclaimed = matches!(seen, Seen::Unclaimed);
    let (stored_object, spliced) = match seen {
        Seen::Spliced { stored } => (None, Some(stored)),
        seen => (stored_object(lock, a, seen).await?, None),
    };
    let stored = match (&spliced, &stored_object) {
        (Some(composite), _) => Stored::Spliced { composite },
        (None, None) if unclaimed => Stored::Unclaimed,
        (None, None) => Stored::Missing,
        (None, Some((object, composite))) => Stored::Object(confirm::Object {
            size: object.size,
            content_type: &object.content_type,
            sha256: object.sha256.as_deref(),
            composite: composite.as_deref(),
        }),
    };
    Ok(match confirm::after_looking(&attempt, claim, stored) {
        After::NotYet(refusal) | After::Refuse(refusal) => Write::Answer(refusal),
        After::Reject(refusal) => Write::Reject(refusal),
        After::Splice(refusal) => Write::Splice(refusal),
        After::Record(record) => {
            let (object, _) = stored_object.expect("recorded from a stored object");
            let moderation = match event.moderation {
                ModerationPolicy::Required => Moderation::Pending,
                ModerationPolicy::None => Moderation::Approved,
            };
            let media = NewMedia {
                id: Uuid::new_v4(),
                size: object.size,
                content_type: object.content_type,
                sha256: record.sha256,
                composite_sha256: record.composite,
                moderation,
                created_at: state.now(),
            };
            Write::Record(media, record.content_key)
        }
    })
}

/// `POST /v1/attempts/{id}/confirm`
#[utoipa::path(post, path = "/v1/attempts/{id}/confirm", tag = "guests",
    params(
        ("id" = Uuid, Path, description = "Attempt id"),
        ("Idempotency-Key" = String, Header, description = "The attempt id again"),
    ),
    request_body = ConfirmRequest,
    security(("session" = [])),
    responses(
        (status = 200, body = Media, description = "The media record; a repeat returns the same record. When the stored bytes were already in the event's dedup scope, that media as this guest may see it: `duplicate: true`, its id and moderation, this attempt's own id, filename and object key, no reason, and a `url` only once the host approved it"),
        (status = 400, body = Problem, content_type = "application/problem+json", description = "idempotency_key_missing, idempotency_key_mismatch; malformed_request for a file in parts confirmed without its composite_sha256 while a digest of its parts is known (nothing changes)"),
        NotFound,
        (status = 409, body = Problem, content_type = "application/problem+json", description = "object_missing (retryable): the object, or a part of it, is not stored yet"),
        Expired,
        (status = 422, body = Problem, content_type = "application/problem+json", description = "size_mismatch, type_mismatch, checksum_mismatch, file_changed (a file in parts whose composite_sha256 is not the one of the parts stored: its upload is aborted): the attempt is rejected"),
        Unavailable,
    ))]
pub async fn confirm(
    State(state): State<AppState>,
    Session(session): Session,
    headers: HeaderMap,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(req): ApiJson<ConfirmRequest>,
) -> Result<Json<Media>> {
    let key = headers
        .get("idempotency-key")
        .ok_or_else(|| Error::problem(ErrorCode::IdempotencyKeyMissing, "send Idempotency-Key: <attempt id>"))?;
    let key = key.to_str().ok().and_then(|k| Uuid::parse_str(k.trim()).ok());
    if key != Some(id) {
        return Err(Error::problem(ErrorCode::IdempotencyKeyMismatch, "Idempotency-Key must be the attempt id"));
    }
    let media = confirm_attempt(&state, &session, id, &req).await?;
    if media.attempt_id == id {
        return Ok(Json(state.links.media_json(&media)));
    }
    // A duplicate: what this guest may see of another attempt's media.
    let own = state.records.attempt(session.id, id).await?.ok_or_else(|| Error::not_found("attempt"))?;
    Ok(Json(state.links.media_for_guest(&media, &own)))
}
