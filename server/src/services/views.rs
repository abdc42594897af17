//! What the answers show of the records: wall items, the host's list, and
//! the live walls told of a host's decision. Used by the handlers and the
//! live feed alike.

use std::collections::HashMap;

use upload_once_core::ErrorCode;
use upload_once_core::wire::{HostMedia, Moderation, WallItem};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::media::MediaServices;
use crate::media::Size;
use crate::media::jobs::{JobRow, JobState};
use crate::state::Links;
use crate::store::{EventRow, MediaRow};

/// `410 removed` for everyone, its host too, once a rejected media's
/// objects are deleted after the retention.
pub(crate) fn removed(media: &MediaRow) -> Result<()> {
    if media.removed {
        return Err(Error::problem(
            ErrorCode::Removed,
            "the host took this down and it was deleted after the retention",
        ));
    }
    Ok(())
}

/// The rendition jobs of these rows, by media id.
pub async fn jobs_of(media: &MediaServices, rows: &[MediaRow]) -> Result<HashMap<Uuid, JobRow>> {
    let ids: Vec<Uuid> = rows.iter().map(|m| m.id).collect();
    let mut jobs = HashMap::new();
    for chunk in ids.chunks(500) {
        jobs.extend(media.db.jobs(chunk).await?.into_iter().map(|j| (j.media_id, j)));
    }
    Ok(jobs)
}

/// Wall items of these rows, each with the reason when its `url` serves
/// the placeholder.
pub async fn wall_items(links: &Links, media: &MediaServices, rows: &[MediaRow]) -> Result<Vec<WallItem>> {
    let jobs = jobs_of(media, rows).await?;
    Ok(rows
        .iter()
        .map(|m| {
            let mut item = links.wall_item(m);
            let job = jobs.get(&m.id);
            item.placeholder = job
                .filter(|j| j.state == JobState::Placeholder)
                .map(|j| j.reason.clone().unwrap_or_else(|| crate::media::jobs::reason_for_type(&m.content_type)));
            item.duration_ms = job.and_then(|j| j.duration_ms).and_then(|d| u64::try_from(d).ok());
            item
        })
        .collect())
}

/// Media records as their host sees them: with the original's URL and how
/// far the renditions are.
pub async fn host_media(
    links: &Links,
    media: &MediaServices,
    event: &EventRow,
    rows: &[MediaRow],
) -> Result<Vec<HostMedia>> {
    let jobs = jobs_of(media, rows).await?;
    let binding = crate::media::host_binding(event);
    // One expiry for every link of the answer (the `host=` signature is
    // checked against the URL's own `exp`).
    let exp = links.media_link_expiry();
    Ok(rows
        .iter()
        .map(|m| {
            let job = jobs.get(&m.id);
            let mut media = links.media_json(m);
            let url = links.rendition_url_until(m.event_id, m.id, Size::Display, exp);
            media.url = Some(if m.moderation == Moderation::Rejected {
                // Taken down for everyone else; the host still sees it.
                format!("{url}&host={}", crate::media::sign_host_preview(&links.signer, m.id, &binding, exp))
            } else {
                url
            });
            HostMedia {
                media,
                original_url: links.original_url_until(m.id, &binding, exp),
                preview: job.map_or("pending", |j| j.state.as_api()).to_owned(),
                preview_reason: job.filter(|j| j.state == JobState::Placeholder).and_then(|j| j.reason.clone()),
                guest: m.session_id,
            }
        })
        .collect())
}

/// A host decision was taken on this instance: the walls hear of it now.
pub fn moderated(media: &MediaServices, row: &MediaRow) {
    match row.moderation {
        Moderation::Approved => media.live.poke(row.event_id),
        Moderation::Rejected => media.live.removed(row.event_id, row.id),
        Moderation::Pending => {}
    }
}
