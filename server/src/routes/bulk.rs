//! "Approve all waiting" as one request (issue 48): the server carries the
//! decision out in batches ([`crate::services::bulk`]), and the host reads
//! its progress.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde::{Deserialize, Serialize};
use upload_once_core::wire::ModerationDecision;
use uuid::Uuid;

use super::extract::{ApiJson, ApiPath, HostOfEvent, event, require_host};
use super::problems::{CredentialRefused, NotFound};
use crate::error::{Error, Result};
use crate::state::AppState;
use crate::store::BulkModeration;

/// `POST /v1/events/{slug}/moderation/bulk` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkModerationRequest {
    /// `approve` or `reject`.
    pub decision: ModerationDecision,
    /// The `changes` cursor of the host's list as the host saw it: only
    /// media confirmed by then and still waiting are decided (a photo that
    /// arrives meanwhile waits for the host to see it). Absent: every media
    /// waiting now.
    #[serde(default)]
    pub upto: Option<String>,
}

/// A bulk decision's progress.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BulkModerationResponse {
    /// Its id (`GET /v1/events/{slug}/moderation/bulk/{id}`).
    pub id: Uuid,
    /// `running`, or `done`.
    pub state: String,
    /// How many media were waiting when it began.
    pub total: u64,
    /// How many it has decided so far.
    pub done: u64,
}

impl From<&BulkModeration> for BulkModerationResponse {
    fn from(b: &BulkModeration) -> Self {
        BulkModerationResponse {
            id: b.id,
            state: if b.finished { "done" } else { "running" }.to_owned(),
            total: b.total,
            done: b.done,
        }
    }
}

/// `POST /v1/events/{slug}/moderation/bulk`: decides every media waiting as
/// of `upto`, in batches, after the answer.
#[utoipa::path(post, path = "/v1/events/{slug}/moderation/bulk", tag = "hosts",
    params(("slug" = String, Path, description = "Event slug")),
    request_body = BulkModerationRequest,
    security(("host" = [])),
    responses(
        (status = 202, body = BulkModerationResponse, description = "Begun: read its progress at its id"),
        (status = 400, body = upload_once_core::wire::Problem, content_type = "application/problem+json", description = "invalid_query: `upto` is not a change cursor of this event"),
        CredentialRefused,
    ))]
pub async fn start(
    State(state): State<AppState>,
    HostOfEvent(event): HostOfEvent,
    ApiJson(request): ApiJson<BulkModerationRequest>,
) -> Result<(StatusCode, Json<BulkModerationResponse>)> {
    let now = state.now();
    let current = state.records.change_seq(event.id).await?;
    let upto = match request.upto.as_deref() {
        Some(cursor) => super::host_list::decode_change_cursor(cursor.trim(), &event)?.min(current),
        None => current,
    };
    let claim = now + crate::services::bulk::CLAIM_MS;
    let bulk = state.records.start_bulk(event.id, request.decision, upto, now, claim).await?;
    let answer = BulkModerationResponse::from(&bulk);
    if !bulk.finished {
        crate::services::bulk::spawn(state, bulk);
    }
    Ok((StatusCode::ACCEPTED, Json(answer)))
}

/// `GET /v1/events/{slug}/moderation/bulk/{id}`: a bulk decision's progress.
#[utoipa::path(get, path = "/v1/events/{slug}/moderation/bulk/{id}", tag = "hosts",
    params(("slug" = String, Path, description = "Event slug"), ("id" = Uuid, Path, description = "The bulk decision's id")),
    security(("host" = [])),
    responses(
        (status = 200, body = BulkModerationResponse),
        CredentialRefused, NotFound,
    ))]
pub async fn progress(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiPath((slug, id)): ApiPath<(String, Uuid)>,
) -> Result<Json<BulkModerationResponse>> {
    let event = event(&state.records, &slug).await?;
    require_host(&headers, &event)?;
    let bulk = state.records.bulk(event.id, id).await?.ok_or_else(|| Error::not_found("bulk decision"))?;
    Ok(Json(BulkModerationResponse::from(&bulk)))
}
