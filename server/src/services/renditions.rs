//! The rendition workers: a scanner that makes a job for every media
//! record without one, and a bounded pool of workers that claim jobs from
//! the table ([`crate::media::jobs`]), decode the original at a low CPU
//! priority and store the renditions, off the request path.

use std::time::Duration;

use futures_util::StreamExt;
use tokio::task::JoinHandle;
use upload_once_core::time::UnixMillis;
use uuid::Uuid;

use crate::media::jobs::{BUDGET_WINDOW, Claimed, DEFER, MAX_TRIES, Made, Placeholder, reason_for_type};
use crate::media::renditions::{self, MAX_SOURCE_BYTES, RENDITION_TYPE};
use crate::media::video::{self, Scratch, VIDEO_TYPE};
use crate::media::{Size, rendition_keys, video_key};
use crate::state::AppState;
use crate::store::MediaRow;

/// The running workers and scanner; dropping it stops them (tests).
#[derive(Debug)]
pub struct Workers {
    tasks: Vec<JoinHandle<()>>,
}

impl Workers {
    /// Stops every task at once, wherever it is (what a crash does).
    pub fn abort(&mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.abort();
    }
}

/// Starts the scanner and the workers over `state`.
pub fn spawn(state: &AppState) -> Workers {
    let mut tasks = vec![tokio::spawn(scanner(state.clone()))];
    for n in 0..state.media.settings.workers.max(1) {
        tasks.push(tokio::spawn(worker(state.clone(), n)));
    }
    Workers { tasks }
}

/// Waits until woken or `interval` has passed.
async fn idle(state: &AppState, interval: Duration) {
    let _ = tokio::time::timeout(interval, state.media.events.wake.notified()).await;
}

/// How often the scanner looks for approved media whose renditions are
/// settled and that have no wall position (an instance died between a
/// job's end and its placement).
const PLACEMENT_CHECK: Duration = Duration::from_secs(10);

/// How far back the scanner looks for media without a job, once its first
/// scan (through every media) is done.
const RECENT_SCAN: Duration = Duration::from_secs(600);

async fn scanner(state: AppState) {
    let mut next_placement_check = tokio::time::Instant::now();
    let mut full_scan_done = false;
    loop {
        if tokio::time::Instant::now() >= next_placement_check {
            next_placement_check = tokio::time::Instant::now() + PLACEMENT_CHECK;
            match state.records.unplaced_on_wall(100).await {
                Ok(ids) => {
                    for id in ids {
                        if let Err(e) = place_on_wall(&state, id).await {
                            tracing::warn!(media = %id, "rendition jobs: could not place a media on the wall: {e}");
                        }
                    }
                }
                Err(e) => tracing::warn!("rendition jobs: the scan for media to place on the wall failed: {e}"),
            }
        }
        // Through every media until the first scan finds nothing; then
        // through the recent ones only, on a timer (a confirm makes its job
        // and wakes the workers itself: this covers an instance that stopped
        // in between). A scan through every media at each wake-up cost each
        // upload a read of the whole table (issue 48).
        let since = full_scan_done.then(|| state.now() - RECENT_SCAN.as_millis() as i64);
        match state.media.db.enqueue_missing(state.now(), since).await {
            Ok(0) => {
                full_scan_done = true;
                tokio::time::sleep(state.media.settings.scan_interval).await;
            }
            Ok(_) => state.media.events.wake(),
            Err(e) => {
                tracing::warn!("rendition jobs: the scan for new media failed: {e}");
                tokio::time::sleep(state.media.settings.scan_interval).await;
            }
        }
    }
}

async fn worker(state: AppState, n: usize) {
    let settings = &state.media.settings;
    loop {
        match state.media.db.claim(state.now(), settings.lease).await {
            Ok(Some(job)) => run(&state, job).await,
            Ok(None) => idle(&state, settings.scan_interval).await,
            Err(e) => {
                tracing::warn!(worker = n, "rendition jobs: could not claim a job: {e}");
                idle(&state, settings.scan_interval).await;
            }
        }
    }
}

/// Why a job did not make its renditions.
enum Failure {
    /// For good: the placeholder, with this reason (a fixed sentence: the
    /// wall shows it).
    Placeholder(String),
    /// A store did not answer: again later (the detail is logged only).
    Transient(String),
    /// Its session is over its rendition budget: in the queue again, at
    /// this time, without counting the claim.
    Deferred(UnixMillis),
    /// For good, a video's poster made and stored, and for the rest the
    /// placeholder with this reason (a video over the length limit).
    PosterOnly(String, Made),
}

impl From<crate::error::Error> for Failure {
    fn from(e: crate::error::Error) -> Self {
        Failure::Transient(e.to_string())
    }
}

impl From<renditions::Unrenderable> for Failure {
    fn from(why: renditions::Unrenderable) -> Self {
        Failure::Placeholder(why.reason)
    }
}

/// Runs one held job to its end (or back into the queue).
async fn run(state: &AppState, job: Claimed) {
    let lease = state.media.settings.lease;
    // The lease is renewed by the same task that renders, so that nothing
    // renews it once the worker is gone.
    let heartbeat = async {
        loop {
            tokio::time::sleep(lease / 3).await;
            match state.media.db.renew(job, state.now() + lease.as_millis() as i64).await {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => tracing::warn!(media = %job.media_id, "rendition job: the lease could not be renewed: {e}"),
            }
        }
    };
    let outcome = tokio::select! {
        outcome = render(state, job) => outcome,
        () = heartbeat => Err(Failure::Transient("another worker took the job".into())),
    };
    let now = state.now();
    let written = match outcome {
        Ok(size) => finish(state, job, Ok(size), now).await,
        Err(Failure::Placeholder(reason)) => {
            tracing::info!(media = %job.media_id, "rendition job: a placeholder: {reason}");
            finish(state, job, Err(Placeholder { reason, poster: None }), now).await
        }
        Err(Failure::PosterOnly(reason, poster)) => {
            tracing::info!(media = %job.media_id, "rendition job: a poster and a placeholder: {reason}");
            finish(state, job, Err(Placeholder { reason, poster: Some(poster) }), now).await
        }
        Err(Failure::Deferred(at)) => {
            tracing::info!(media = %job.media_id, "rendition job: its guest is over the rendition budget; again at {at}");
            state.media.db.defer(job, at).await
        }
        Err(Failure::Transient(detail)) if job.tries >= MAX_TRIES => {
            tracing::warn!(media = %job.media_id, "rendition job: no rendition after {} tries: {detail}", job.tries);
            // The store's own text (an S3 error carries a signed URL) stays
            // in the log.
            let reason = "the original could not be read from storage".into();
            finish(state, job, Err(Placeholder { reason, poster: None }), now).await
        }
        Err(Failure::Transient(reason)) => {
            let backoff = 1_000 * (1i64 << job.tries.clamp(0, 6));
            tracing::warn!(media = %job.media_id, "rendition job: tried again in {backoff} ms: {reason}");
            state.media.db.retry_later(job, now + backoff, &reason).await
        }
    };
    if let Err(e) = written {
        // The lease runs out and another claim does it again.
        tracing::warn!(media = %job.media_id, "rendition job: its end could not be recorded: {e}");
    }
    state.media.events.finished();
}

/// Ends the job, and counts it if this claim ended it (a claim whose lease
/// ran out ends nothing).
async fn finish(
    state: &AppState,
    job: Claimed,
    outcome: std::result::Result<Made, Placeholder>,
    now: UnixMillis,
) -> crate::error::Result<()> {
    if state.media.db.finish(job, &outcome, now).await? {
        state.metrics.rendition_job_ended(if outcome.is_ok() { "done" } else { "placeholder" });
        // Its renditions are settled: an approved media goes onto the wall
        // now, not before (the scanner places it if this instance dies
        // first).
        if let Err(e) = place_on_wall(state, job.media_id).await {
            tracing::warn!(media = %job.media_id, "rendition job: could not place the media on the wall yet: {e}");
        }
    }
    Ok(())
}

/// Places an approved media whose renditions are settled on the wall, and
/// tells this instance's live walls (the others' watchers read it on their
/// next poll).
async fn place_on_wall(state: &AppState, media_id: Uuid) -> crate::error::Result<()> {
    if let Some(row) = state.records.place_on_wall(media_id).await? {
        state.media.live.poke(row.event_id);
    }
    Ok(())
}

/// How much lower than the requests' a decode's CPU priority is (a nice
/// value): a photo's decode takes a core for a second or more, and the
/// requests of every guest must not wait behind it.
const DECODE_NICENESS: i32 = 10;

/// Runs a decode on a thread of its own, at a lower CPU priority
/// ([`DECODE_NICENESS`]); the workers bound how many run at once. A thread
/// of its own rather than the blocking pool's, whose threads do the store's
/// file I/O too and could not take their priority back without privileges.
async fn decode_at_low_priority<T: Send + 'static>(
    decode: impl FnOnce() -> T + Send + 'static,
) -> std::result::Result<T, String> {
    let (done, result) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("rendition".into())
        .spawn(move || {
            // On Linux the nice value is the calling thread's own.
            #[cfg(target_os = "linux")]
            // SAFETY: setpriority only reads its arguments.
            unsafe {
                libc::setpriority(libc::PRIO_PROCESS, 0, DECODE_NICENESS);
            }
            let _ = done.send(decode());
        })
        .map_err(|e| format!("no thread for the decode: {e}"))?;
    result.await.map_err(|_| "the decode's thread ended without an answer (it panicked)".to_owned())
}

/// Whether a job may decode `pixels` now: its session's budget over the
/// last [`BUDGET_WINDOW`] has room (a photo larger than the whole budget still gets a turn when
/// nothing else of its session was decoded).
async fn within_budget(state: &AppState, job: Claimed, pixels: i64) -> std::result::Result<(), Failure> {
    let budget = state.media.settings.session_pixels as i64;
    let now = state.now();
    let used = state.media.db.session_pixels(job.media_id, now - BUDGET_WINDOW.as_millis() as i64).await?;
    if used > 0 && used + pixels > budget {
        return Err(Failure::Deferred(now + DEFER.as_millis() as i64));
    }
    Ok(())
}

/// A photo's original is no larger than [`MAX_SOURCE_BYTES`].
fn not_too_large(media: &MediaRow) -> std::result::Result<(), Failure> {
    if media.size > MAX_SOURCE_BYTES {
        return Err(Failure::Placeholder(format!(
            "{} bytes is more than the {MAX_SOURCE_BYTES} bytes a photo is decoded from",
            media.size
        )));
    }
    Ok(())
}

/// How long a video that found every video slot taken waits in the queue.
const VIDEO_SLOT_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Reads the original and stores its renditions; what was made.
async fn render(state: &AppState, job: Claimed) -> std::result::Result<Made, Failure> {
    let media_id = job.media_id;
    let Some(media) = state.records.media(media_id).await? else {
        return Err(Failure::Placeholder("the media record is gone".into()));
    };
    if media.content_type.starts_with("video/") {
        return render_video(state, &media).await;
    }
    if crate::media::heic::is_heif(&media.content_type) {
        return render_heic(state, job, &media).await;
    }
    let Some(format) = renditions::decodable(&media.content_type) else {
        return Err(Failure::Placeholder(reason_for_type(&media.content_type)));
    };
    not_too_large(&media)?;
    // Known from an earlier claim: over the budget, it waits without a read.
    if let Some(pixels) = job.pixels {
        within_budget(state, job, pixels).await?;
    }
    let Some((_, mut body)) = state.objects.get(&media.object_key).await? else {
        return Err(Failure::Transient("the original is not in the object store".into()));
    };
    let mut bytes = Vec::with_capacity(media.size as usize);
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| Failure::Transient(format!("reading the original: {e}")))?;
        if (bytes.len() + chunk.len()) as u64 > MAX_SOURCE_BYTES {
            return Err(Failure::Placeholder("the original is larger than its record says".into()));
        }
        bytes.extend_from_slice(&chunk);
    }
    // The header says how many pixels a decode would make, before one is.
    let header = renditions::header(&bytes, format).inspect_err(|why| {
        tracing::info!(media = %media_id, "rendition job: {}: {}", why.reason, why.detail);
    })?;
    let pixels = header.pixels() as i64;
    if job.pixels.is_none() {
        state.media.db.record_pixels(job, pixels, None).await?;
        within_budget(state, job, pixels).await?;
    }
    state.media.db.record_pixels(job, pixels, Some(state.now())).await?;
    let (width, height) = store_stills(state, &media, bytes, format).await?;
    kept_if_wanted(state, &media, Made { width, height, duration_ms: None }).await
}

/// Decodes a photo (or a video's still) at a low priority into both
/// renditions and stores them; the display rendition's size.
async fn store_stills(
    state: &AppState,
    media: &MediaRow,
    bytes: Vec<u8>,
    format: image::ImageFormat,
) -> std::result::Result<(u32, u32), Failure> {
    let media_id = media.id;
    let made = decode_at_low_priority(move || renditions::make(&bytes, format))
        .await
        .map_err(|e| {
            tracing::warn!(media = %media_id, "rendition job: the decoder failed: {e}");
            Failure::Placeholder("the decoder failed on this file".into())
        })?
        .inspect_err(|why| tracing::info!(media = %media_id, "rendition job: {}: {}", why.reason, why.detail))?;
    for (size, bytes) in [(Size::Thumb, made.thumb), (Size::Display, made.display)] {
        state.objects.put(&size.key(&media.object_key), RENDITION_TYPE, bytes.into()).await?;
    }
    Ok((made.width, made.height))
}

/// What a job made, if its media is still wanted after the writes; if not,
/// its renditions are deleted again. The media may have gone while this
/// worker rendered: its event deleted, or the media removed after a
/// takedown. Whoever deleted its objects did so after marking it gone, and
/// this check comes after the writes, so either that delete saw the
/// renditions or this check sees it gone and deletes them: none is left
/// behind.
async fn kept_if_wanted(state: &AppState, media: &MediaRow, made: Made) -> std::result::Result<Made, Failure> {
    if still_wanted(state, media.id).await? {
        return Ok(made);
    }
    for key in rendition_keys(&media.object_key) {
        state.objects.delete(&key).await?;
    }
    Err(Failure::Placeholder("the media was deleted while its renditions were made".into()))
}

/// A video's poster (thumbnail and display stills) and its shareable MP4
/// ([`crate::media::video`]), made by ffmpeg from a copy of the original in
/// a scratch directory that is removed however the job ends.
async fn render_video(state: &AppState, media: &MediaRow) -> std::result::Result<Made, Failure> {
    let tools = match &state.media.video {
        Ok(tools) => tools.clone(),
        Err(_) => return Err(Failure::Placeholder(reason_for_type(&media.content_type))),
    };
    // One video at a time per instance (by default). A video that finds no
    // slot goes back in the queue for a few seconds rather than hold its
    // worker, so photos never wait behind a transcode.
    let Ok(_slot) = state.media.video_slots.try_acquire() else {
        return Err(Failure::Deferred(state.now() + VIDEO_SLOT_WAIT.as_millis() as i64));
    };
    let logged = |why: renditions::Unrenderable| {
        tracing::info!(media = %media.id, "video job: {}: {}", why.reason, why.detail);
        Failure::Placeholder(why.reason)
    };
    let scratch = Scratch::new(&tools.scratch).map_err(|e| Failure::Transient(format!("no scratch directory: {e}")))?;
    let input = scratch.path("original");
    copy_original(state, media, &input).await?;
    let (probe, plain_pixels) = video::probe(&tools, &input).await.map_err(logged)?;
    let png = video::poster(&tools, &input, &probe).await.map_err(logged)?;
    let duration_ms = Some(probe.duration.as_millis() as i64);
    // Too long to be made shareable: its poster, and the original for the
    // host; no transcode.
    let max = tools.max_duration;
    if probe.duration > max {
        let (width, height) = store_stills(state, media, png, image::ImageFormat::Png).await?;
        let poster = kept_if_wanted(state, media, Made { width, height, duration_ms }).await?;
        return Err(Failure::PosterOnly(
            format!(
                "longer than {} minutes: the host has the original, and the wall no copy of it",
                max.as_secs().div_ceil(60)
            ),
            poster,
        ));
    }
    let output = scratch.path("shareable.mp4");
    let copy = probe.copyable(plain_pixels);
    video::shareable(&tools, &input, &output, &probe, copy).await.map_err(logged)?;
    // Its size as shown, read from what was written, before anything is
    // stored.
    let (shown, _) = video::probe(&tools, &output).await.map_err(logged)?;
    let (width, height) = (shown.width, shown.height);
    store_stills(state, media, png, image::ImageFormat::Png).await?;
    state.objects.put_file(&video_key(&media.object_key), VIDEO_TYPE, &output).await?;
    tracing::info!(media = %media.id, copy, width, height, "video job: poster and shareable video stored");
    kept_if_wanted(state, media, Made { width, height, duration_ms }).await
}

/// An HEIC/HEIF photo's renditions: its top-level images' sizes read from
/// the boxes of a copy in a scratch directory (refused past the pixels a
/// photo is decoded from, and all of them counted against its session's
/// budget, before a decode), then decoded upright by heif-convert ([`crate::media::heic`])
/// and made like any photo's.
async fn render_heic(state: &AppState, job: Claimed, media: &MediaRow) -> std::result::Result<Made, Failure> {
    let tools = match &state.media.heic {
        Ok(tools) => tools.clone(),
        Err(_) => return Err(Failure::Placeholder(reason_for_type(&media.content_type))),
    };
    not_too_large(media)?;
    if let Some(pixels) = job.pixels {
        within_budget(state, job, pixels).await?;
    }
    let limits = &state.media.settings.video_limits;
    let scratch =
        Scratch::new(&limits.scratch_dir()).map_err(|e| Failure::Transient(format!("no scratch directory: {e}")))?;
    let input = scratch.path("original");
    copy_original(state, media, &input).await?;
    // A photo's decode: two minutes at most, whatever a video may take.
    let timeout = limits.timeout.min(std::time::Duration::from_secs(120));
    let placeholder = |why: renditions::Unrenderable| {
        tracing::info!(media = %media.id, "HEIC job: {}: {}", why.reason, why.detail);
        Failure::Placeholder(why.reason)
    };
    let primary = crate::media::heic::primary(&tools, &input, timeout, limits.memory).await.map_err(placeholder)?;
    let pixels = primary.decoded_pixels as i64;
    if job.pixels.is_none() {
        state.media.db.record_pixels(job, pixels, None).await?;
        within_budget(state, job, pixels).await?;
    }
    state.media.db.record_pixels(job, pixels, Some(state.now())).await?;
    let png = crate::media::heic::to_png(&tools, &input, primary, &scratch, timeout, limits.memory)
        .await
        .map_err(placeholder)?;
    drop(scratch);
    let (width, height) = store_stills(state, media, png, image::ImageFormat::Png).await?;
    kept_if_wanted(state, media, Made { width, height, duration_ms: None }).await
}

/// Copies the original from the object store to `path`; no more bytes than
/// its record says.
async fn copy_original(state: &AppState, media: &MediaRow, path: &std::path::Path) -> std::result::Result<(), Failure> {
    use tokio::io::AsyncWriteExt;
    let Some((_, mut body)) = state.objects.get(&media.object_key).await? else {
        return Err(Failure::Transient("the original is not in the object store".into()));
    };
    let local = |e: std::io::Error| Failure::Transient(format!("writing the original to the scratch directory: {e}"));
    let mut file = tokio::fs::File::create(path).await.map_err(local)?;
    let mut written = 0u64;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| Failure::Transient(format!("reading the original: {e}")))?;
        written += chunk.len() as u64;
        if written > media.size {
            return Err(Failure::Placeholder("the original is larger than its record says".into()));
        }
        file.write_all(&chunk).await.map_err(local)?;
    }
    file.flush().await.map_err(local)?;
    Ok(())
}

/// Whether a media is still there to be shown: its record is, it was not
/// removed after a takedown, and its event is not deleted.
async fn still_wanted(state: &AppState, media_id: Uuid) -> crate::error::Result<bool> {
    let Some(media) = state.records.media(media_id).await? else { return Ok(false) };
    Ok(!media.removed && state.records.event_by_id(media.event_id).await?.is_some())
}
