//! Deterministic test harness for `upload-once-core`.
//!
//! - [`TestRng`]: a seeded splitmix64 generator implementing [`Entropy`].
//! - [`FakeServer`]: an in-memory model of the reference server's protocol
//!   semantics (one implicit guest session).
//! - [`FaultLayer`]: per-request fault injection (drop before / after the
//!   server applies a request, 503, 429), scripted or random.
//! - [`Sim`]: a virtual clock and a browser of one or more tabs, each
//!   driving a [`Page`] (the same type the browser client runs) against a
//!   fake IndexedDB, fake Web Locks and a BroadcastChannel; page reloads and
//!   extra tabs included.
//!
//! Each test binary uses a different part of it, hence `dead_code`.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;

use upload_once_core::Entropy;
use upload_once_core::attempt::{AttemptRecord, Confirmation, FileInfo};
use upload_once_core::decide::multipart::{self, ListedPart, MAX_PARTS, PartBounds, PartPlan};
use upload_once_core::decide::{authorize, confirm, dedup, moderation, signing};
use upload_once_core::error::{Error, ErrorCode};
use upload_once_core::page::{AddPlan, Added, Effect, Input, Page, PageConfig, Session, Ticket};
use upload_once_core::restrictions::{PickLimits, Restrictions, normalize_content_type};
use upload_once_core::retry::{Failure, RetryPolicy};
use upload_once_core::scheduler::{Command, Outcome, Scheduler};
use upload_once_core::time::{UnixMillis, format_rfc3339};
use upload_once_core::wire::{
    AttemptResponse, AttemptState, AttemptStatus, AuthorizeRequest, ConfirmRequest, EventInfo, MAX_STATUS_IDS, Media,
    MediaSummary, Moderation, ModerationPolicy, MultipartPlan, PartsRequest, PartsResponse, Rejection, SignedPart,
    StatusResponse, StoredPart, Upload, UploadInstruction,
};
pub use upload_once_core::wire::{Dedup, ModerationDecision};
use uuid::Uuid;

/// The event every simulated guest uploads to.
pub const EVENT: &str = "party";

/// 2026-11-30T04:00:00Z: an arbitrary, fixed start for virtual clocks.
pub const T0: UnixMillis = 1_796_011_200_000;

/// The part size of [`Sim::multipart`] (the fake server's units).
pub const MULTIPART_PART_SIZE: u64 = 5;

pub const SECOND: i64 = 1000;
pub const MINUTE: i64 = 60 * SECOND;
pub const HOUR: i64 = 60 * MINUTE;

/// The simulated store's multipart bounds: S3's part count, but parts of
/// any size (the simulation's files are a few bytes long).
const SIM_PARTS: PartBounds = PartBounds { min_part_size: 1, max_parts: MAX_PARTS, grow_by: 1 };

// ---------------------------------------------------------------------------
// Randomness
// ---------------------------------------------------------------------------

/// A seeded splitmix64 generator. Deterministic, no external crates.
#[derive(Clone, Debug)]
pub struct TestRng {
    state: u64,
}

impl TestRng {
    pub fn new(seed: u64) -> Self {
        TestRng { state: seed ^ 0x5DEE_CE66_D1CE_4E5B }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        self.next_u64() % n
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        assert!(lo <= hi);
        lo + self.below((hi - lo) as u64 + 1) as i64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// A seed for a derived generator.
    pub fn fork(&mut self) -> TestRng {
        TestRng::new(self.next_u64())
    }
}

impl Entropy for TestRng {
    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let bytes = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

// ---------------------------------------------------------------------------
// Fake server
// ---------------------------------------------------------------------------

/// Knobs of the fake server.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// How long a signed URL works.
    pub url_ttl_ms: i64,
    /// How long an attempt may stay unconfirmed.
    pub attempt_ttl_ms: i64,
    /// The moderation state new media records start in.
    pub moderation: Moderation,
    /// The server's clock minus the client's clock (clock skew).
    pub clock_offset_ms: i64,
    /// Files larger than this go up in parts.
    pub multipart_threshold: u64,
    /// Bytes per part.
    pub part_size: u64,
    /// How long a guest session lives (each authorize extends it to at
    /// least one attempt TTL ahead, as the reference server does); `None`:
    /// forever, and every join hands out [`SESSION`].
    pub session_ttl_ms: Option<i64>,
    /// Where the same bytes are stored once (the simulation's default is
    /// `none`: most tests are not about it).
    pub dedup: Dedup,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            url_ttl_ms: 15 * MINUTE,
            attempt_ttl_ms: 24 * HOUR,
            moderation: Moderation::Pending,
            clock_offset_ms: 0,
            multipart_threshold: u64::MAX,
            part_size: 5,
            session_ttl_ms: None,
            dedup: Dedup::None,
        }
    }
}

/// A stand-in SHA-256 (64 hex digits) of part `number` of a file whose
/// bytes are `content` (the simulation has no bytes).
/// The digest of part `number` of a file whose bytes are `content`: a
/// content `base~n,m` is the file `base` with other bytes in parts `n` and
/// `m` only (the same name, size and time, the same other parts).
pub fn part_sha(content: &str, number: u32) -> String {
    match content.split_once('~') {
        Some((base, changed)) if !changed.split(',').any(|n| n.parse() == Ok(number)) => fake_sha(base, number),
        _ => fake_sha(content, number),
    }
}

pub fn fake_sha(content: &str, number: u32) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in content.bytes().chain(number.to_le_bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}").repeat(4)
}

/// One attempt as the server keeps it.
#[derive(Clone, Debug)]
pub struct ServerAttempt {
    pub request: AuthorizeRequest,
    pub object_key: String,
    pub state: AttemptState,
    pub expires_at: UnixMillis,
    /// The id of the one media record, once confirmed.
    pub media_id: Option<Uuid>,
    pub rejection: Option<Rejection>,
    /// The multipart plan, for a large file.
    pub plan: Option<MultipartPlan>,
    /// The parts the store holds (multipart, before confirm).
    pub parts: BTreeMap<u32, StoredPart>,
    /// The token of the session that authorized it.
    pub session: String,
}

impl ServerAttempt {
    /// The attempt as the server's rules see it, at server time `now`.
    pub fn facts(&self, now: UnixMillis) -> confirm::Attempt<'_> {
        confirm::Attempt {
            state: self.state,
            due: now >= self.expires_at,
            size: self.request.size,
            content_type: &self.request.content_type,
            sha256: self.request.sha256.as_deref(),
            in_parts: self.plan.is_some(),
            rejection: self.rejection.as_ref().map(|r| (r.code.as_str(), r.reason.as_str())),
        }
    }
}

/// An object in the fake object store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredObject {
    pub size: u64,
    pub content_type: String,
    /// The content key of the stored bytes: the file's (stand-in) SHA-256,
    /// or the composite of its parts'.
    pub content: String,
}

/// A problem answer with a stable code.
pub fn problem(status: u16, code: ErrorCode, message: &str) -> Failure {
    Failure::http(status, Some(code.as_str()), message)
}

/// The status and code of a request's failure (a test expects one).
pub fn http_code(r: Result<impl std::fmt::Debug, Failure>) -> (u16, String) {
    match r {
        Err(Failure::Http { status, code, .. }) => (status, code.unwrap_or_default()),
        other => panic!("expected an HTTP failure, got {other:?}"),
    }
}

/// The answer to a refusal of the server's rules.
pub fn refused(refusal: confirm::Refusal) -> Failure {
    problem(refusal.code.http_status(), refusal.code, &refusal.reason)
}

/// The reference server's protocol semantics, in memory. All time arguments
/// are the client's clock; the server adds `clock_offset_ms`.
#[derive(Clone, Debug, Default)]
pub struct FakeServer {
    pub config: ServerConfig,
    pub attempts: BTreeMap<Uuid, ServerAttempt>,
    pub objects: BTreeMap<String, StoredObject>,
    /// Every media row ever created (rows are never deleted).
    pub media: Vec<Media>,
    /// PUT requests that reached storage, per object key (stored or not).
    pub put_requests: BTreeMap<String, u32>,
    /// PUT requests that stored the object, per object key.
    pub puts_stored: BTreeMap<String, u32>,
    /// Part PUTs that stored a part, per (object key, part number).
    pub parts_stored: BTreeMap<(String, u32), u32>,
    /// Requests the server applied, in order.
    pub applied: Vec<ReqKind>,
    keys: BTreeMap<String, Uuid>,
    /// Guest sessions: token → when it lapses (server clock).
    pub sessions: BTreeMap<String, UnixMillis>,
    /// The content index: (scope, content key) → media.
    pub content_index: BTreeMap<(String, String), Uuid>,
    /// Uploads not stored because their bytes already were.
    pub deduplicated: u64,
    /// Part numbers the store holds with other bytes than any sent now:
    /// a PUT of one answers `412 object_exists` (as the embedded store
    /// does for a part stored with other bytes).
    pub parts_held_otherwise: BTreeSet<u32>,
    joins: u32,
}

impl FakeServer {
    pub fn new(config: ServerConfig) -> Self {
        let lapses = config.session_ttl_ms.map_or(UnixMillis::MAX, |ttl| T0 + ttl);
        FakeServer { config, sessions: BTreeMap::from([(SESSION.to_owned(), lapses)]), ..Default::default() }
    }

    /// `POST /v1/events/{slug}/sessions`: a new session's token.
    pub fn join(&mut self, now: UnixMillis) -> String {
        let Some(ttl) = self.config.session_ttl_ms else {
            return SESSION.to_owned();
        };
        self.joins += 1;
        let token = format!("{SESSION}-{}", self.joins);
        let lapses = self.clock(now) + ttl.max(self.config.attempt_ttl_ms);
        self.sessions.insert(token.clone(), lapses);
        token
    }

    /// The session check in front of every API call, as the reference
    /// server makes it: an unknown token is refused; a lapsed one may still
    /// ask about, renew and confirm its own attempts, but authorize nothing
    /// new; another session's attempt is not found.
    pub fn admit(&mut self, command: &Command, token: &str, now: UnixMillis) -> Result<(), Failure> {
        if matches!(command, Command::Upload { .. } | Command::UploadPart { .. }) {
            return Ok(()); // storage: the signed URL is the credential
        }
        let Some(lapses) = self.sessions.get(token).copied() else {
            return Err(problem(401, ErrorCode::InvalidSession, "unknown session"));
        };
        match command {
            Command::Authorize { request, .. } => {
                if lapses <= self.clock(now) {
                    return Err(problem(401, ErrorCode::InvalidSession, "the session lapsed"));
                }
                if self.attempts.get(&request.id).is_some_and(|a| a.session != token) {
                    return Err(problem(422, ErrorCode::IdReused, "the attempt id belongs to another session"));
                }
            }
            Command::Renew { id } | Command::Confirm { id, .. } | Command::SignParts { id, .. } => {
                if self.attempts.get(id).is_some_and(|a| a.session != token) {
                    return Err(problem(404, ErrorCode::NotFound, "no such attempt"));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// `POST /v1/events/{slug}/attempts` under session `token`.
    pub fn authorize_as(
        &mut self,
        request: &AuthorizeRequest,
        token: &str,
        now: UnixMillis,
    ) -> Result<AttemptResponse, Failure> {
        let existed = self.attempts.contains_key(&request.id);
        let result = self.authorize(request, now);
        if result.is_ok() {
            if let Some(a) = self.attempts.get_mut(&request.id) {
                a.session = token.to_owned();
            }
            let at_least = self.clock(now) + self.config.attempt_ttl_ms;
            if let Some(lapses) = self.sessions.get_mut(token) {
                *lapses = (*lapses).max(at_least);
            }
            // The same bytes already confirmed in scope, as the same file:
            // confirmed at once, pointing to that media; nothing is
            // transferred.
            if let (false, Some(sha256)) = (existed, &request.sha256) {
                let found =
                    self.scope_of(request.id).and_then(|scope| self.content_index.get(&(scope, sha256.clone())));
                let same_file = |media_id: &&Uuid| {
                    let media = self.media_row(**media_id);
                    let own = self.attempts.get(&media.attempt_id).is_some_and(|stored| stored.session == token);
                    let seen_by_claimer = own || media.moderation == Moderation::Approved;
                    let indexed =
                        dedup::Indexed { size: media.size, content_type: &media.content_type, seen_by_claimer };
                    dedup::claim_matches(&indexed, request.size, &normalize_content_type(&request.content_type))
                };
                if let Some(media_id) = found.filter(same_file).copied() {
                    let a = self.attempts.get_mut(&request.id).expect("just made");
                    a.state = AttemptState::Confirmed;
                    a.media_id = Some(media_id);
                    self.deduplicated += 1;
                    return Ok(self.response(request.id, now));
                }
            }
        }
        result
    }

    /// Where attempt `id`'s bytes are looked for (`None`: not at all).
    fn scope_of(&self, id: Uuid) -> Option<String> {
        match dedup::scope(self.config.dedup)? {
            dedup::Scope::OwnSession => self.attempts.get(&id).map(|a| a.session.clone()),
            dedup::Scope::Event => Some(String::new()),
        }
    }

    /// `POST /v1/attempts/status` under session `token`: another session's
    /// attempts are not found.
    pub fn status_as(&mut self, ids: &[Uuid], token: &str, now: UnixMillis) -> Result<StatusResponse, Failure> {
        let mut answer = self.status(ids, now)?;
        for result in &mut answer.results {
            let id = result.id();
            if self.attempts.get(&id).is_some_and(|a| a.session != token) {
                *result = AttemptStatus::NotFound { id };
            }
        }
        Ok(answer)
    }

    fn clock(&self, now: UnixMillis) -> UnixMillis {
        now + self.config.clock_offset_ms
    }

    /// Expires every authorized attempt whose TTL has passed (lazily, as a
    /// sweeper would) and deletes its object.
    fn sweep(&mut self, now: UnixMillis) {
        let now = self.clock(now);
        for attempt in self.attempts.values_mut() {
            if attempt.state == AttemptState::Authorized && now >= attempt.expires_at {
                attempt.state = AttemptState::Expired;
                self.objects.remove(&attempt.object_key);
                // The multipart upload is aborted: no part is left behind.
                attempt.parts.clear();
            }
        }
    }

    fn sign(&self, object_key: &str, content_type: &str, now: UnixMillis) -> UploadInstruction {
        let expires = self.clock(now) + self.config.url_ttl_ms;
        let mut headers = BTreeMap::new();
        headers.insert("content-type".to_owned(), content_type.to_owned());
        UploadInstruction {
            method: "PUT".to_owned(),
            url: format!("https://storage.test/{object_key}?exp={expires}&sig=ok"),
            headers,
            expires_at: format_rfc3339(expires),
        }
    }

    /// Media `media_id` as the guest of attempt `id` may see it (as the
    /// reference server's `media_for_guest`): a duplicate sees its own
    /// attempt id, filename and key, no reason, and a URL only once approved.
    fn media_for(&self, media_id: Uuid, id: Uuid) -> Media {
        let media = self.media_row(media_id).clone();
        if !dedup::is_duplicate(media.attempt_id, id) {
            return media;
        }
        let own = &self.attempts[&id];
        Media {
            attempt_id: id,
            object_key: own.object_key.clone(),
            filename: own.request.filename.clone(),
            moderation_reason: None,
            url: media.url.clone().filter(|_| media.moderation == upload_once_core::wire::Moderation::Approved),
            duplicate: true,
            ..media
        }
    }

    fn media_row(&self, id: Uuid) -> &Media {
        self.media.iter().find(|m| m.id == id).expect("media row exists")
    }

    fn response(&self, id: Uuid, now: UnixMillis) -> AttemptResponse {
        let a = &self.attempts[&id];
        AttemptResponse {
            id,
            state: a.state,
            object_key: a.object_key.clone(),
            upload: (a.state == AttemptState::Authorized).then(|| match &a.plan {
                Some(plan) => Upload::Multipart(plan.clone()),
                None => Upload::Put(self.sign(&a.object_key, &a.request.content_type, now)),
            }),
            expires_at: format_rfc3339(a.expires_at),
            media: a.media_id.map(|m| MediaSummary::for_attempt(&self.media_for(m, id), id)),
            rejection: a.rejection.clone(),
        }
    }

    /// `POST /v1/events/{slug}/attempts`: create-or-return by id.
    pub fn authorize(&mut self, request: &AuthorizeRequest, now: UnixMillis) -> Result<AttemptResponse, Failure> {
        self.applied.push(ReqKind::Authorize);
        self.sweep(now);
        // The server's own rules (core/src/decide/authorize.rs); this server
        // sets no limits of its own.
        let content_type = authorize::check(request, &Restrictions::default()).map_err(refused)?;
        let requested = authorize::File {
            filename: &request.filename,
            size: request.size,
            content_type: &content_type,
            sha256: request.sha256.as_deref(),
        };
        if let Some(existing) = self.attempts.get(&request.id) {
            let recorded = authorize::File {
                filename: &existing.request.filename,
                size: existing.request.size,
                content_type: &existing.request.content_type,
                sha256: existing.request.sha256.as_deref(),
            };
            authorize::same_file(&recorded, &requested).map_err(refused)?;
            authorize::answer(&existing.facts(self.clock(now))).map_err(refused)?;
            return Ok(self.response(request.id, now));
        }
        let request = &AuthorizeRequest { content_type, ..request.clone() };
        let object_key = format!("uploads/{}", request.id);
        self.keys.insert(object_key.clone(), request.id);
        // The server's plan, with bounds that let the simulation's files
        // of a few bytes go up in parts of a few bytes.
        let plan = PartPlan::for_size(request.size, self.config.multipart_threshold, self.config.part_size, SIM_PARTS)
            .map(|plan| plan.wire(format_rfc3339(self.clock(now) + self.config.attempt_ttl_ms)));
        self.attempts.insert(
            request.id,
            ServerAttempt {
                request: request.clone(),
                object_key,
                state: AttemptState::Authorized,
                expires_at: self.clock(now) + self.config.attempt_ttl_ms,
                media_id: None,
                rejection: None,
                plan,
                parts: BTreeMap::new(),
                session: SESSION.to_owned(),
            },
        );
        Ok(self.response(request.id, now))
    }

    /// `POST /v1/attempts/{id}/parts`: signed part URLs, each bound to its
    /// number, exact length and (when given) SHA-256.
    pub fn sign_parts(&mut self, id: Uuid, request: &PartsRequest, now: UnixMillis) -> Result<PartsResponse, Failure> {
        self.applied.push(ReqKind::SignParts);
        self.sweep(now);
        let Some(a) = self.attempts.get(&id) else {
            return Err(problem(404, ErrorCode::NotFound, "no such attempt"));
        };
        // The server's own rules (core/src/decide/signing.rs).
        signing::parts(&a.facts(self.clock(now))).map_err(refused)?;
        let plan = a.plan.as_ref().expect("signing::parts allows only an attempt in parts");
        signing::part_requests(&request.parts, plan.part_count).map_err(refused)?;
        let expires = self.clock(now) + self.config.url_ttl_ms;
        let mut parts = Vec::new();
        for p in &request.parts {
            let sha = p.sha256.clone().unwrap_or_default();
            let url = format!("https://storage.test/{}/part/{}?exp={expires}&sha={sha}&sig=ok", a.object_key, p.number);
            parts.push(SignedPart {
                number: p.number,
                upload: UploadInstruction {
                    method: "PUT".into(),
                    url,
                    headers: BTreeMap::new(),
                    expires_at: format_rfc3339(expires),
                },
            });
        }
        Ok(PartsResponse { parts })
    }

    /// The PUT of a part to a URL signed by `sign_parts`; `sha256` is the
    /// SHA-256 of the bytes really sent.
    pub fn put_part(
        &mut self,
        instruction: &UploadInstruction,
        size: u64,
        sha256: &str,
        now: UnixMillis,
    ) -> Result<(), Failure> {
        self.applied.push(ReqKind::UploadPart);
        self.sweep(now);
        let rest = instruction.url.strip_prefix("https://storage.test/").expect("a URL this server signed");
        let (key, query) = rest.split_once("/part/").expect("a part URL");
        let (number, query) = query.split_once("?exp=").expect("a part URL");
        let number: u32 = number.parse().expect("a part number");
        let (expires, query) = query.split_once("&sha=").expect("a part URL");
        let (signed_sha, _) = query.split_once('&').expect("a part URL");
        if self.clock(now) >= expires.parse::<i64>().expect("an expiry") {
            return Err(problem(403, ErrorCode::UrlExpired, "the signed URL has expired"));
        }
        let id = self.keys[key];
        let attempt = self.attempts.get_mut(&id).expect("known key");
        match attempt.state {
            AttemptState::Authorized => {}
            AttemptState::Confirmed => {
                return Err(problem(409, ErrorCode::AlreadyConfirmed, "already confirmed"));
            }
            AttemptState::Expired | AttemptState::Rejected => {
                return Err(problem(410, ErrorCode::Expired, "the attempt ended"));
            }
        }
        let plan = attempt.plan.clone().expect("a multipart attempt");
        let (start, end) = plan.range(number, attempt.request.size);
        if size != end - start {
            return Err(problem(400, ErrorCode::LengthMismatch, "the part's length differs from the signed one"));
        }
        if !signed_sha.is_empty() && signed_sha != sha256 {
            return Err(problem(422, ErrorCode::ChecksumMismatch, "the part's bytes do not have the signed SHA-256"));
        }
        if self.parts_held_otherwise.contains(&number) {
            return Err(problem(412, ErrorCode::ObjectExists, "the part is stored with other bytes"));
        }
        attempt.parts.insert(number, StoredPart { number, size, sha256: Some(sha256.to_owned()) });
        *self.parts_stored.entry((key.to_owned(), number)).or_default() += 1;
        Ok(())
    }

    /// The PUT to a signed URL (`url_expires_at` is the expiry signed into
    /// the URL, on the server's clock).
    pub fn put(
        &mut self,
        object_key: &str,
        size: u64,
        content_type: &str,
        content: Option<&str>,
        url_expires_at: UnixMillis,
        now: UnixMillis,
    ) -> Result<(), Failure> {
        self.applied.push(ReqKind::Upload);
        self.sweep(now);
        *self.put_requests.entry(object_key.to_owned()).or_default() += 1;
        if self.clock(now) >= url_expires_at {
            return Err(problem(403, ErrorCode::UrlExpired, "the signed URL has expired"));
        }
        let Some(id) = self.keys.get(object_key).copied() else {
            return Err(problem(403, ErrorCode::BadSignature, "unknown object key"));
        };
        let attempt = &self.attempts[&id];
        match attempt.state {
            AttemptState::Confirmed => {
                return Err(problem(409, ErrorCode::AlreadyConfirmed, "the attempt is already confirmed"));
            }
            AttemptState::Expired => {
                return Err(problem(403, ErrorCode::UrlExpired, "the attempt has expired"));
            }
            AttemptState::Rejected => {
                return Err(problem(403, ErrorCode::Forbidden, "the attempt was rejected"));
            }
            AttemptState::Authorized => {}
        }
        if size != attempt.request.size {
            return Err(problem(400, ErrorCode::LengthMismatch, "length differs from the signed length"));
        }
        if content_type != attempt.request.content_type {
            return Err(problem(400, ErrorCode::ContentTypeMismatch, "content type differs from the signed one"));
        }
        // `None`: the bytes authorized.
        let content = content.map(str::to_owned).or_else(|| attempt.request.sha256.clone()).unwrap_or_default();
        if attempt.request.sha256.as_ref().is_some_and(|signed| *signed != content) {
            // The store hashes what it writes: other bytes than the ones
            // authorized are refused, and nothing is kept.
            return Err(problem(422, ErrorCode::ChecksumMismatch, "the bytes are not the ones authorized"));
        }
        self.objects
            .insert(object_key.to_owned(), StoredObject { size, content_type: content_type.to_owned(), content });
        *self.puts_stored.entry(object_key.to_owned()).or_default() += 1;
        Ok(())
    }

    /// The PUT, with key and expiry read back from the signed URL.
    /// The PUT of the authorized bytes to a signed URL.
    pub fn put_signed(&mut self, instruction: &UploadInstruction, size: u64, now: UnixMillis) -> Result<(), Failure> {
        self.put_content(instruction, size, None, now)
    }

    /// The PUT of bytes whose SHA-256 is `content` (`None`: the ones
    /// authorized) to a signed URL.
    pub fn put_content(
        &mut self,
        instruction: &UploadInstruction,
        size: u64,
        content: Option<&str>,
        now: UnixMillis,
    ) -> Result<(), Failure> {
        let (key, expires) = parse_signed_url(&instruction.url).expect("a URL this server signed");
        let content_type = instruction.headers.get("content-type").cloned().unwrap_or_default();
        self.put(&key, size, &content_type, content, expires, now)
    }

    /// `POST /v1/attempts/{id}/confirm`: create-or-return the one media row,
    /// decided by the server's own rules ([`upload_once_core::decide::confirm`]).
    pub fn confirm(&mut self, id: Uuid, request: &ConfirmRequest, now: UnixMillis) -> Result<Media, Failure> {
        self.applied.push(ReqKind::Confirm);
        self.sweep(now);
        let Some(attempt) = self.attempts.get(&id).cloned() else {
            return Err(problem(404, ErrorCode::NotFound, "no such attempt"));
        };
        let content_type = normalize_content_type(&request.content_type);
        let claim = confirm::Claim {
            size: request.size,
            content_type: &content_type,
            sha256: request.sha256.as_deref(),
            composite: request.composite_sha256.as_deref(),
        };
        let facts = attempt.facts(self.clock(now));
        match confirm::before_looking(&facts, &claim) {
            confirm::Before::Replay => return Ok(self.media_for(attempt.media_id.expect("confirmed"), id)),
            confirm::Before::Ended(refusal) => return Err(refused(refusal)),
            confirm::Before::Expire(refusal) => {
                self.attempts.get_mut(&id).expect("present").state = AttemptState::Expired;
                return Err(refused(refusal));
            }
            confirm::Before::Reject(refusal) => return Err(self.reject(id, refusal)),
            confirm::Before::Look => {}
        }
        // What the store holds: a multipart object is assembled from the
        // store's own part list, unless the client's file is not the parts'.
        let (mut spliced, mut unclaimed) = (None, false);
        if let Some(plan) = &attempt.plan {
            let plan = PartPlan { part_size: plan.part_size, part_count: plan.part_count };
            let listed: Vec<ListedPart> = attempt
                .parts
                .values()
                .map(|p| ListedPart { number: p.number, size: p.size, sha256: p.sha256.clone(), etag: String::new() })
                .collect();
            if let Ok(parts) = multipart::parts_to_complete(&plan, attempt.request.size, &listed) {
                let digests: String = parts.iter().map(|p| p.sha256.clone().unwrap_or_default()).collect();
                let composite = format!("{}-{}", fake_sha(&digests, 0), plan.part_count);
                if claim.composite.is_none() && parts.iter().any(|p| p.sha256.is_some()) {
                    unclaimed = true;
                } else if claim.composite.is_some_and(|claimed| claimed != composite) {
                    spliced = Some(composite);
                } else {
                    let size = parts.iter().map(|p| p.size).sum();
                    let object =
                        StoredObject { size, content_type: attempt.request.content_type.clone(), content: composite };
                    self.attempts.get_mut(&id).expect("present").parts.clear();
                    self.objects.insert(attempt.object_key.clone(), object);
                }
            }
        }
        let object = self.objects.get(&attempt.object_key).cloned();
        let known = |content: &str| Some(content.to_owned()).filter(|c| !c.is_empty());
        let (sha256, composite) = match &object {
            Some(o) if attempt.plan.is_some() => (None, known(&o.content)),
            Some(o) => (known(&o.content), None),
            None => (None, None),
        };
        let stored = match (&spliced, &object) {
            (Some(composite), _) => confirm::Stored::Spliced { composite },
            (None, None) if unclaimed => confirm::Stored::Unclaimed,
            (None, None) => confirm::Stored::Missing,
            (None, Some(o)) => confirm::Stored::Object(confirm::Object {
                size: o.size,
                content_type: &o.content_type,
                sha256: sha256.as_deref(),
                composite: composite.as_deref(),
            }),
        };
        let record = match confirm::after_looking(&facts, &claim, stored) {
            confirm::After::NotYet(refusal) | confirm::After::Refuse(refusal) => return Err(refused(refusal)),
            confirm::After::Reject(refusal) => return Err(self.reject(id, refusal)),
            confirm::After::Splice(refusal) => {
                // Rejected, and its upload aborted: no part is left behind.
                self.attempts.get_mut(&id).expect("present").parts.clear();
                return Err(self.reject(id, refusal));
            }
            confirm::After::Record(record) => record,
        };
        let object = object.expect("recorded from an object");
        // The same bytes already stored in scope: this object goes, and the
        // attempt points to that media.
        let scope = self.scope_of(id).zip(record.content_key.clone());
        if let Some(media_id) = scope.clone().and_then(|key| self.content_index.get(&key)).copied() {
            let a = self.attempts.get_mut(&id).expect("present");
            a.state = AttemptState::Confirmed;
            a.media_id = Some(media_id);
            let key = a.object_key.clone();
            self.objects.remove(&key);
            self.deduplicated += 1;
            return Ok(self.media_for(media_id, id));
        }
        let media_id = Uuid::from_u128(0xFEED_0000_0000_0000_0000_0000_0000_0000 | (self.media.len() as u128 + 1));
        if let Some(key) = scope {
            self.content_index.insert(key, media_id);
        }
        let a = self.attempts.get_mut(&id).expect("present");
        let media = Media {
            id: media_id,
            attempt_id: id,
            event: EVENT.to_owned(),
            object_key: a.object_key.clone(),
            filename: a.request.filename.clone(),
            size: object.size,
            content_type: object.content_type.clone(),
            sha256: record.sha256,
            composite_sha256: record.composite,
            moderation: self.config.moderation,
            moderation_reason: None,
            url: Some(format!("https://media.test/{}", a.object_key)),
            created_at: format_rfc3339(now + self.config.clock_offset_ms),
            duplicate: false,
        };
        a.state = AttemptState::Confirmed;
        a.media_id = Some(media_id);
        self.media.push(media.clone());
        Ok(media)
    }

    /// Rejects attempt `id` for `refusal`: the answer.
    fn reject(&mut self, id: Uuid, refusal: confirm::Refusal) -> Failure {
        let a = self.attempts.get_mut(&id).expect("present");
        a.state = AttemptState::Rejected;
        a.rejection = Some(Rejection { code: refusal.code.as_str().to_owned(), reason: refusal.reason.clone() });
        refused(refusal)
    }

    /// `POST /v1/attempts/{id}/renew`: a fresh signed URL.
    pub fn renew(&mut self, id: Uuid, now: UnixMillis) -> Result<AttemptResponse, Failure> {
        self.applied.push(ReqKind::Renew);
        self.sweep(now);
        let Some(attempt) = self.attempts.get(&id) else {
            return Err(problem(404, ErrorCode::NotFound, "no such attempt"));
        };
        signing::renew(&attempt.facts(self.clock(now))).map_err(refused)?;
        Ok(self.response(id, now))
    }

    /// One attempt's status.
    pub fn status_of(&mut self, id: Uuid, now: UnixMillis) -> AttemptStatus {
        self.sweep(now);
        let Some(a) = self.attempts.get(&id) else {
            return AttemptStatus::NotFound { id };
        };
        match a.state {
            AttemptState::Authorized => AttemptStatus::Authorized {
                id,
                object_stored: self.objects.contains_key(&a.object_key),
                expires_at: format_rfc3339(a.expires_at),
                parts: a.plan.as_ref().map(|_| a.parts.values().cloned().collect()),
            },
            AttemptState::Confirmed => AttemptStatus::Confirmed {
                id,
                media: MediaSummary::for_attempt(&self.media_for(a.media_id.expect("confirmed"), id), id),
            },
            AttemptState::Expired => AttemptStatus::Expired { id },
            AttemptState::Rejected => {
                let r = a.rejection.clone().expect("rejected");
                AttemptStatus::Rejected { id, code: r.code, reason: r.reason }
            }
        }
    }

    /// `POST /v1/attempts/status`.
    pub fn status(&mut self, ids: &[Uuid], now: UnixMillis) -> Result<StatusResponse, Failure> {
        self.applied.push(ReqKind::Status);
        if ids.len() > MAX_STATUS_IDS {
            return Err(problem(422, ErrorCode::TooManyIds, "at most 500 ids"));
        }
        Ok(StatusResponse { results: ids.iter().map(|id| self.status_of(*id, now)).collect() })
    }

    // ----- test helpers ----------------------------------------------------

    /// Media rows created for one attempt.
    pub fn media_rows_for_attempt(&self, id: Uuid) -> usize {
        self.media.iter().filter(|m| m.attempt_id == id).count()
    }

    /// Media rows whose filename is `name` (the sim gives every file a
    /// unique name, so this counts rows per file across all its attempts).
    pub fn media_for_file(&self, name: &str) -> Vec<&Media> {
        self.media.iter().filter(|m| m.filename == name).collect()
    }

    /// Attempts authorized for the file `name`.
    pub fn attempts_for_file(&self, name: &str) -> Vec<(Uuid, &ServerAttempt)> {
        self.attempts.iter().filter(|(_, a)| a.request.filename == name).map(|(id, a)| (*id, a)).collect()
    }

    /// PUTs that stored the object under `key`.
    pub fn puts_for_key(&self, key: &str) -> u32 {
        self.puts_stored.get(key).copied().unwrap_or(0)
    }

    /// PUTs that reached storage for `key`, stored or refused.
    pub fn put_requests_for_key(&self, key: &str) -> u32 {
        self.put_requests.get(key).copied().unwrap_or(0)
    }

    pub fn object_key_of(&self, id: Uuid) -> Option<String> {
        self.attempts.get(&id).map(|a| a.object_key.clone())
    }

    pub fn state_of(&self, id: Uuid) -> Option<AttemptState> {
        self.attempts.get(&id).map(|a| a.state)
    }

    /// Counts applied requests of one kind.
    pub fn applied_count(&self, kind: ReqKind) -> usize {
        self.applied.iter().filter(|k| **k == kind).count()
    }

    /// Puts an object in storage behind the protocol's back.
    pub fn plant_object(&mut self, key: &str, size: u64, content_type: &str) {
        self.objects.insert(
            key.to_owned(),
            StoredObject { size, content_type: content_type.to_owned(), content: String::new() },
        );
    }

    /// The host decides on a media record, by the server's rule.
    pub fn moderate(&mut self, media_id: Uuid, decision: ModerationDecision, reason: Option<&str>, now: UnixMillis) {
        let now = self.clock(now);
        let m = self.media.iter_mut().find(|m| m.id == media_id).expect("media exists");
        let recorded = moderation::Moderated {
            state: m.moderation,
            reason: m.moderation_reason.as_deref(),
            moderated_at: None,
            rejected_at: None,
        };
        // The fake makes no renditions: every record's are settled.
        let wall = moderation::Wall { placed: false, rendition_settled: true };
        if let Some(change) = moderation::decide(&recorded, wall, decision, reason, now) {
            m.moderation = change.moderated.state;
            m.moderation_reason = change.moderated.reason.map(str::to_owned);
        }
    }
}

/// Reads `(object_key, expires_ms)` back from a URL signed by [`FakeServer`].
pub fn parse_signed_url(url: &str) -> Option<(String, UnixMillis)> {
    let rest = url.strip_prefix("https://storage.test/")?;
    let (key, query) = rest.split_once("?exp=")?;
    let (exp, _) = query.split_once('&')?;
    Some((key.to_owned(), exp.parse().ok()?))
}

// ---------------------------------------------------------------------------
// Fault injection
// ---------------------------------------------------------------------------

/// The kind of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ReqKind {
    Authorize,
    Upload,
    Renew,
    Confirm,
    Status,
    SignParts,
    UploadPart,
}

impl ReqKind {
    pub fn of(command: &Command) -> ReqKind {
        match command {
            Command::Authorize { .. } => ReqKind::Authorize,
            Command::Upload { .. } => ReqKind::Upload,
            Command::Renew { .. } => ReqKind::Renew,
            Command::Confirm { .. } => ReqKind::Confirm,
            Command::Status { .. } => ReqKind::Status,
            Command::SignParts { .. } => ReqKind::SignParts,
            Command::UploadPart { .. } | Command::HashPart { .. } => ReqKind::UploadPart,
            Command::HashFile { .. } => ReqKind::Upload,
        }
    }
}

/// The ids a command is about.
pub fn command_ids(command: &Command) -> Vec<Uuid> {
    match command {
        Command::Status { ids } => ids.clone(),
        command => command.id().into_iter().collect(),
    }
}

/// What goes wrong with one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The connection fails before the server sees the request: no effect.
    DropBefore,
    /// The server commits the request, then the answer is lost.
    DropAfter,
    /// 503 before the server applies anything.
    Unavailable { retry_after_ms: Option<u64> },
    /// The server commits, then a gateway answers 503 (no problem code).
    UnavailableAfterCommit,
    /// 429 before the server applies anything.
    RateLimited { retry_after_ms: Option<u64> },
}

impl Fault {
    /// Whether the server applies the request despite the fault.
    pub fn commits(self) -> bool {
        matches!(self, Fault::DropAfter | Fault::UnavailableAfterCommit)
    }

    /// The failure the client sees.
    pub fn failure(self) -> Failure {
        match self {
            Fault::DropBefore | Fault::DropAfter => Failure::Network,
            Fault::Unavailable { retry_after_ms } => Failure::Http {
                status: 503,
                code: Some(ErrorCode::DatabaseUnavailable.as_str().to_owned()),
                message: "the database did not answer".to_owned(),
                retry_after_ms,
            },
            Fault::UnavailableAfterCommit => Failure::http(503, None, "Service Unavailable"),
            Fault::RateLimited { retry_after_ms } => Failure::Http {
                status: 429,
                code: Some(ErrorCode::RateLimited.as_str().to_owned()),
                message: "slow down".to_owned(),
                retry_after_ms,
            },
        }
    }
}

/// Random faults: each request fails with `probability`, the kind drawn by
/// `weights` = [drop before, drop after, 503, 503 after commit, 429].
#[derive(Clone, Debug)]
pub struct RandomFaults {
    pub probability: f64,
    pub weights: [u32; 5],
    pub max_retry_after_ms: u64,
}

/// Decides, per request, whether and how it fails. Scripted faults come
/// first (each consumed by the next request of its kind), then random ones.
#[derive(Clone, Debug)]
pub struct FaultLayer {
    pub enabled: bool,
    script: VecDeque<(ReqKind, Fault)>,
    pub random: Option<RandomFaults>,
    rng: TestRng,
    /// Every fault injected so far.
    pub injected: Vec<(ReqKind, Fault)>,
}

impl FaultLayer {
    pub fn new(seed: u64) -> Self {
        FaultLayer {
            enabled: true,
            script: VecDeque::new(),
            random: None,
            rng: TestRng::new(seed),
            injected: Vec::new(),
        }
    }

    /// The next request of `kind` fails with `fault`.
    pub fn script(&mut self, kind: ReqKind, fault: Fault) {
        self.script.push_back((kind, fault));
    }

    /// Scripted faults not consumed yet.
    pub fn pending_script(&self) -> usize {
        self.script.len()
    }

    pub fn decide(&mut self, kind: ReqKind) -> Option<Fault> {
        if !self.enabled {
            return None;
        }
        if let Some(pos) = self.script.iter().position(|(k, _)| *k == kind) {
            let (_, fault) = self.script.remove(pos).expect("present");
            self.injected.push((kind, fault));
            return Some(fault);
        }
        let random = self.random.as_ref()?;
        if !self.rng.chance(random.probability) {
            return None;
        }
        let total: u32 = random.weights.iter().sum();
        if total == 0 {
            return None;
        }
        let mut pick = self.rng.below(u64::from(total)) as u32;
        let mut index = 0;
        while pick >= random.weights[index] {
            pick -= random.weights[index];
            index += 1;
        }
        let retry_after = |rng: &mut TestRng, max: u64| {
            if max > 0 && rng.chance(0.5) { Some(rng.below(max + 1)) } else { None }
        };
        let max = random.max_retry_after_ms;
        let fault = match index {
            0 => Fault::DropBefore,
            1 => Fault::DropAfter,
            2 => Fault::Unavailable { retry_after_ms: retry_after(&mut self.rng, max) },
            3 => Fault::UnavailableAfterCommit,
            _ => Fault::RateLimited { retry_after_ms: retry_after(&mut self.rng, max) },
        };
        self.injected.push((kind, fault));
        Some(fault)
    }
}

// ---------------------------------------------------------------------------
// Simulation
// ---------------------------------------------------------------------------

/// A file the guest picked.
#[derive(Clone, Debug)]
pub struct FileSpec {
    pub name: String,
    pub size: u64,
    pub content_type: String,
    /// The id of its first attempt (= the `blob_key` of all its attempts).
    pub blob_key: Uuid,
    /// What its bytes are (the simulation has none): two files with the
    /// same content have the same part hashes.
    pub content: String,
}

impl FileSpec {
    pub fn info(&self) -> FileInfo {
        FileInfo {
            name: self.name.clone(),
            size: self.size,
            content_type: self.content_type.clone(),
            last_modified: T0 - HOUR,
        }
    }
}

/// The answer to one command.
#[derive(Clone, Debug)]
pub enum Reply {
    Outcome(Outcome),
    Status(Result<StatusResponse, Failure>),
}

fn failed_reply(command: &Command, failure: Failure) -> Reply {
    match Outcome::failed(command, failure.clone()) {
        Some(outcome) => Reply::Outcome(outcome),
        None => Reply::Status(Err(failure)),
    }
}

/// Knobs of a simulation.
#[derive(Clone, Debug)]
pub struct SimConfig {
    pub seed: u64,
    /// The app's caps on one pick.
    pub pick_limits: PickLimits,
    pub concurrency: usize,
    pub policy: RetryPolicy,
    pub server: ServerConfig,
    /// Virtual time each request takes, drawn from this inclusive range.
    pub latency_ms: (i64, i64),
    /// Probability that a loop iteration defers writing the dirty records
    /// (the IndexedDB transaction has not committed yet).
    pub defer_persist: f64,
    /// Loop iterations before `run_until_idle` gives up.
    pub max_steps: usize,
    /// Check the write-ahead rule on every polled command.
    pub check_write_ahead: bool,
    /// Probability that a write of attempt records is refused (quota).
    pub store_failure: f64,
    /// Files up to this size are kept in the fake IndexedDB.
    pub keep_file_max_bytes: u64,
    /// At most this many bytes of files are kept.
    pub keep_files_total_bytes: u64,
    /// Lock answers reach a page one at a time, each followed by what the
    /// page does next (as Web Locks' callbacks do, each its own task), not
    /// all before the page acts.
    pub locks_one_at_a_time: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            seed: 1,
            pick_limits: PickLimits::default(),
            concurrency: 3,
            policy: RetryPolicy::default(),
            server: ServerConfig::default(),
            latency_ms: (5, 50),
            defer_persist: 0.0,
            max_steps: 20_000,
            check_write_ahead: true,
            store_failure: 0.0,
            keep_file_max_bytes: u64::MAX,
            keep_files_total_bytes: u64::MAX,
            locks_one_at_a_time: false,
        }
    }
}

/// `kinds` without renew requests. Whether a stored signed URL is reused or
/// renewed first after a check is the client's choice; what matters is the
/// rest of the sequence (and that renews stay few, see [`renews`]).
pub fn without_renews(kinds: &[ReqKind]) -> Vec<ReqKind> {
    kinds.iter().copied().filter(|k| *k != ReqKind::Renew).collect()
}

/// How many renew requests `kinds` holds.
pub fn renews(kinds: &[ReqKind]) -> usize {
    kinds.iter().filter(|k| **k == ReqKind::Renew).count()
}

/// A command sent, for the test's eyes.
#[derive(Clone, Debug)]
pub struct Sent {
    pub at: UnixMillis,
    pub command: Command,
}

/// What happened during a simulation.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub sent: Vec<Sent>,
    /// How many files each `KeepFiles` kept, in order.
    pub keep_batches: Vec<usize>,
    pub max_inflight: usize,
    /// The most confirms of one page on the wire at once.
    pub max_confirms_in_flight: usize,
    /// The most authorizes of one page sent ahead at once (while every
    /// request slot was taken).
    pub max_authorizes_ahead: usize,
    /// Times the loop found nothing to do while `next_wakeup()` pointed at
    /// the present or the past.
    pub spurious_wakeups: usize,
    pub reloads: usize,
    pub steps: usize,
    /// Lock requests answered "another page holds it".
    pub lock_waits: usize,
    /// Records read back to take an attempt over (or follow another page).
    pub loads: usize,
    /// Writes of attempt records refused (an add's included).
    pub store_failures: usize,
    /// Adds refused because their new records could not be stored (the
    /// guest picked the files again).
    pub adds_refused: usize,
    /// Tabs opened beside the first.
    pub tabs_opened: usize,
    /// PUTs a Background Fetch sent ([`Sim::background_fetch`]).
    pub background_puts: usize,
    /// Joins of the event.
    pub joins: usize,
    /// Times a page said its session was joined or refused.
    pub session_changes: usize,
    /// Parts hashed.
    pub hashes: usize,
    /// Whole files hashed before authorize.
    pub file_hashes: usize,
    /// The most parts of one file on the wire at once.
    pub max_parts_in_flight: usize,
    /// Times an add asked the server which parts it holds of the attempts
    /// a file picked again might go to.
    pub stored_parts_asked: usize,
    /// Stored parts of files picked again hashed to check them.
    pub parts_checked: usize,
    /// Files given to add again: the server listed a part they were not
    /// checked against.
    pub rechecks: usize,
}

impl Stats {
    pub fn count(&self, kind: ReqKind) -> usize {
        self.sent.iter().filter(|s| ReqKind::of(&s.command) == kind).count()
    }

    /// Every command sent, in order.
    pub fn commands(&self) -> impl Iterator<Item = &Command> {
        self.sent.iter().map(|s| &s.command)
    }

    pub fn commands_for(&self, id: Uuid) -> Vec<&Command> {
        self.sent.iter().filter(|s| command_ids(&s.command).contains(&id)).map(|s| &s.command).collect()
    }

    pub fn kinds_for(&self, id: Uuid) -> Vec<ReqKind> {
        self.commands_for(id).into_iter().map(ReqKind::of).collect()
    }

    /// The kinds of all commands sent from index `from` on.
    pub fn kinds_since(&self, from: usize) -> Vec<ReqKind> {
        self.sent[from..].iter().map(|s| ReqKind::of(&s.command)).collect()
    }

    /// The numbers of the parts of attempt `id` sent from index `from` on,
    /// in order.
    pub fn parts_since(&self, from: usize, id: Uuid) -> Vec<u32> {
        self.sent[from..]
            .iter()
            .filter_map(|s| match &s.command {
                Command::UploadPart { id: i, number, .. } if *i == id => Some(*number),
                _ => None,
            })
            .collect()
    }
}

/// How a reload treats the page's state.
#[derive(Clone, Copy, Debug)]
pub struct Reload {
    /// Probability that each held file loses its bytes.
    pub lose_blob: f64,
    /// Probability that each in-flight request had already reached the
    /// server (it is applied, its answer is lost with the page).
    pub inflight_reached_server: f64,
}

impl Reload {
    pub const KEEP_BLOBS: Reload = Reload { lose_blob: 0.0, inflight_reached_server: 0.0 };
    pub const LOSE_BLOBS: Reload = Reload { lose_blob: 1.0, inflight_reached_server: 0.0 };
}

/// What one loop iteration did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tick {
    Progress,
    Idle,
    Stuck,
}

/// The session token of the fake server's one guest session.
pub const SESSION: &str = "sim-session";

/// The event as the fake server describes it.
pub fn event_info() -> EventInfo {
    EventInfo {
        slug: EVENT.to_owned(),
        title: "Party".to_owned(),
        max_file_bytes: 1 << 40,
        allowed_types: vec!["image/*".to_owned(), "video/*".to_owned()],
        moderation: ModerationPolicy::Required,
        dedup: Default::default(),
        multipart_threshold: None,
    }
}

/// One page (tab) of the simulated browser, driving a [`Page`] the way the
/// browser client does: it carries out every effect and feeds the answers
/// back as inputs.
pub struct Tab {
    /// Unique among every tab the simulation ever opened.
    pub id: u32,
    pub page: Page,
    /// Files this tab holds in memory, by blob key.
    pub memory: BTreeSet<Uuid>,
    inbox: VecDeque<Input>,
    /// A write of attempt records not committed yet.
    pending_store: Option<(Vec<AttemptRecord>, Vec<Uuid>)>,
    /// Tickets done (adds kept, restores settled).
    pub done: Vec<Ticket>,
    /// Storage errors reported to the app, in order.
    pub storage_errors: Vec<Option<Error>>,
    /// What each `BusyChanged` said, in order.
    pub busy_changes: Vec<bool>,
}

/// One request on the wire.
#[derive(Clone, Debug)]
struct InFlight {
    tab: u32,
    command: Command,
    token: String,
    aborted: bool,
    /// Returned by `poll_all` already.
    seen: bool,
}

/// Who holds one attempt's Web Lock, and who waits for it.
#[derive(Clone, Debug, Default)]
struct LockLine {
    holder: Option<u32>,
    line: VecDeque<u32>,
}

/// A virtual clock, a browser of one or more tabs (fake IndexedDB, Web
/// Locks, BroadcastChannel) and a fake server behind a fault layer.
pub struct Sim {
    pub now: UnixMillis,
    pub config: SimConfig,
    pub server: FakeServer,
    pub faults: FaultLayer,
    /// The fake IndexedDB: each record as last written.
    pub db: BTreeMap<Uuid, AttemptRecord>,
    /// The fake IndexedDB: kept files, by blob key.
    pub kept: BTreeSet<Uuid>,
    pub files: Vec<FileSpec>,
    pub stats: Stats,
    pub rng: TestRng,
    pub online: bool,
    /// `tabs[0]` is the page the guest uses; others are extra tabs.
    pub tabs: Vec<Tab>,
    offline_until: Option<UnixMillis>,
    inflight: Vec<InFlight>,
    locks: BTreeMap<Uuid, LockLine>,
    next_tab: u32,
    /// When set, the server refuses (or does not answer) every join.
    pub join_failure: Option<Failure>,
    /// When set, a join's answer is held back (the request is under way)
    /// until [`Sim::answer_join`].
    pub hold_join: bool,
    held_join: Option<(usize, Input)>,
    /// The guest session as stored in IndexedDB (the last one joined).
    pub session_token: String,
    /// Files (by blob key) the browser refuses to read (`NotReadableError`).
    pub unreadable: BTreeSet<Uuid>,
    /// Files the page gave back to add ([`Effect::Recheck`]), not yet added.
    rechecks_due: Vec<Uuid>,
}

impl Sim {
    pub fn new(config: SimConfig) -> Self {
        let mut rng = TestRng::new(config.seed);
        let faults = FaultLayer::new(rng.next_u64());
        let mut sim = Sim {
            now: T0,
            server: FakeServer::new(config.server.clone()),
            faults,
            db: BTreeMap::new(),
            kept: BTreeSet::new(),
            files: Vec::new(),
            stats: Stats::default(),
            rng,
            online: true,
            tabs: Vec::new(),
            offline_until: None,
            inflight: Vec::new(),
            locks: BTreeMap::new(),
            next_tab: 0,
            join_failure: None,
            hold_join: false,
            held_join: None,
            session_token: SESSION.to_owned(),
            unreadable: BTreeSet::new(),
            rechecks_due: Vec::new(),
            config,
        };
        let mut tab = sim.new_tab();
        // The first visit joins at open.
        let event = sim.event_info();
        tab.page.set_session(Session { token: SESSION.to_owned(), event });
        sim.tabs.push(tab);
        sim
    }

    pub fn with_seed(seed: u64) -> Self {
        Sim::new(SimConfig { seed, ..SimConfig::default() })
    }

    /// A simulation seeded with `seed` in which `faults` are scripted, in
    /// order (see [`FaultLayer::script`]).
    pub fn with_faults(seed: u64, faults: &[(ReqKind, Fault)]) -> Self {
        let mut sim = Sim::with_seed(seed);
        for (kind, fault) in faults {
            sim.faults.script(*kind, *fault);
        }
        sim
    }

    /// A simulation seeded with `seed` whose server takes files over 20
    /// bytes in parts of [`MULTIPART_PART_SIZE`], four transfers at a time.
    pub fn multipart(seed: u64) -> Self {
        let mut config = SimConfig { seed, concurrency: 4, ..SimConfig::default() };
        config.server.multipart_threshold = 20;
        config.server.part_size = MULTIPART_PART_SIZE;
        Sim::new(config)
    }

    /// A first visit: no stored session; the page joins in the background.
    pub fn first_visit(config: SimConfig) -> Self {
        let mut sim = Sim::new(config);
        let mut tab = sim.new_tab();
        tab.page.join_now();
        sim.tabs[0] = tab;
        sim
    }

    fn page_config(&self) -> PageConfig {
        PageConfig {
            event: EVENT.to_owned(),
            policy: self.config.policy,
            concurrency: self.config.concurrency,
            restrictions: Restrictions::default(),
            pick_limits: self.config.pick_limits,
            keep_file_max_bytes: self.config.keep_file_max_bytes,
            keep_files_total_bytes: self.config.keep_files_total_bytes,
            hash_file_max_bytes: upload_once_core::scheduler::DEFAULT_HASH_LIMIT,
        }
    }

    fn new_tab(&mut self) -> Tab {
        self.next_tab += 1;
        let mut page = Page::new(self.page_config());
        page.handle(Input::Online(self.online), self.now, &mut self.rng);
        Tab {
            id: self.next_tab,
            page,
            memory: BTreeSet::new(),
            inbox: VecDeque::new(),
            pending_store: None,
            done: Vec::new(),
            storage_errors: Vec::new(),
            busy_changes: Vec::new(),
        }
    }

    /// The event as the fake server describes it to a joining page (with
    /// its multipart threshold, when it has one).
    pub fn event_info(&self) -> EventInfo {
        let threshold = self.config.server.multipart_threshold;
        EventInfo {
            dedup: self.config.server.dedup,
            multipart_threshold: (threshold != u64::MAX).then_some(threshold),
            ..event_info()
        }
    }

    /// The guest clears the site's data (or picks the photo on another
    /// device): every page goes, with IndexedDB and the stored session; a
    /// new page joins the event afresh.
    pub fn clear_site_data(&mut self) {
        while self.tabs.len() > 1 {
            self.close_tab(1);
        }
        let old = self.tabs.remove(0);
        self.drop_tab(old, 0.0);
        self.db.clear();
        self.kept.clear();
        let mut tab = self.new_tab();
        tab.page.join_now();
        self.tabs.insert(0, tab);
    }

    /// The guest's page.
    pub fn page(&self) -> &Page {
        &self.tabs[0].page
    }

    /// The guest's page, to act on it (cancel, retry …).
    pub fn page_mut(&mut self) -> &mut Page {
        &mut self.tabs[0].page
    }

    /// The guest page's scheduler.
    pub fn scheduler(&self) -> &Scheduler {
        self.tabs[0].page.scheduler()
    }

    // ----- guest actions -----------------------------------------------------

    /// The guest picks files in the first tab, as `Uploader.add` does: the
    /// page plans, the new records are stored (strict), then the page
    /// starts them.
    pub fn add_files(&mut self, infos: &[FileInfo]) -> AddPlan {
        let contents: Vec<String> = infos.iter().map(|i| i.name.clone()).collect();
        self.add_files_with(infos, &contents)
    }

    /// `add_files` with the files' contents given (a file edited on disk,
    /// or another file with the same name, size and time).
    pub fn add_files_with(&mut self, infos: &[FileInfo], contents: &[String]) -> AddPlan {
        // As the driver does: the server is asked which parts it holds of the
        // attempts the files may go to, then every such part of each file is
        // hashed, before the page decides.
        let candidates = self.tabs[0].page.repick_candidates(infos);
        if !candidates.is_empty() {
            let token = self.tabs[0].page.session().map(|s| s.token.clone()).unwrap_or_default();
            self.stats.stored_parts_asked += 1;
            if let Reply::Status(Ok(response)) = self.execute(&Command::Status { ids: candidates }, &token) {
                self.tabs[0].page.learn_stored_parts(&response);
            }
        }
        let mut digests = vec![Vec::new(); infos.len()];
        for check in self.tabs[0].page.identity_checks(infos) {
            for part in &check.parts {
                digests[check.index].push((part.number, part_sha(&contents[check.index], part.number)));
                self.stats.parts_checked += 1;
            }
        }
        // As the driver does: the page decides, and queues the strict write
        // of the new records; the add resolves once its files are kept, or
        // fails.
        let (plan, ticket) = self.tabs[0].page.add(infos, &digests, self.now, &mut self.rng);
        for (index, blob_key) in &plan.hold {
            self.tabs[0].memory.insert(*blob_key);
            // The bytes held under that key are now the ones just picked.
            if let Some(held) = self.files.iter_mut().find(|f| f.blob_key == *blob_key) {
                if let Some(content) = contents.get(*index) {
                    held.content.clone_from(content);
                }
            } else {
                let info = &infos[*index];
                self.files.push(FileSpec {
                    name: info.name.clone(),
                    size: info.size,
                    content_type: info.content_type.clone(),
                    blob_key: *blob_key,
                    content: contents.get(*index).cloned().unwrap_or_else(|| info.name.clone()),
                });
            }
        }
        // The write is carried out: the new records are stored (strictly).
        if let Some(first) = plan.new_records.first().map(|r| r.id) {
            self.write_own(|records, _| records.first().map(|r| r.id) == Some(first));
        }
        if self.tabs[0].page.take_failure(ticket).is_some() {
            // Nothing of the add remains; the guest is told, and picks the
            // same files again.
            self.stats.adds_refused += 1;
            let new: Vec<Uuid> = plan.new_records.iter().map(|r| r.blob_key).collect();
            self.files.retain(|f| !new.contains(&f.blob_key));
            for record in &plan.new_records {
                assert!(!self.db.contains_key(&record.id), "a refused add left its record behind");
                assert!(!self.tabs[0].page.holds_file(&record.blob_key), "a refused add holds its file");
            }
            return self.add_files_with(infos, contents);
        }
        plan
    }

    /// The guest picks one new file: its attempt's id.
    pub fn add_file(&mut self, name: &str, size: u64, content_type: &str) -> Uuid {
        let info =
            FileInfo { name: name.to_owned(), size, content_type: content_type.to_owned(), last_modified: T0 - HOUR };
        let plan = self.add_files(&[info]);
        match plan.outcomes.as_slice() {
            [Added::New(id)] => *id,
            other => panic!("expected a new attempt, got {other:?}"),
        }
    }

    /// `add_file` with a generated name `file-N.jpg`.
    pub fn add_jpeg(&mut self, size: u64) -> Uuid {
        let name = format!("file-{}.jpg", self.files.len());
        self.add_file(&name, size, "image/jpeg")
    }

    /// A simulation seeded with `seed` in which the guest has picked one
    /// jpeg of `size` bytes (nothing is sent yet): it and the jpeg's attempt.
    pub fn with_jpeg(seed: u64, size: u64) -> (Sim, Uuid) {
        let mut sim = Sim::with_seed(seed);
        let id = sim.add_jpeg(size);
        (sim, id)
    }

    /// The guest picks a jpeg of `size` bytes, then the simulation ticks
    /// until its request of `kind` has been answered: its attempt.
    pub fn add_jpeg_answered(&mut self, size: u64, kind: ReqKind) -> Uuid {
        let id = self.add_jpeg(size);
        self.tick_until_answered(id, kind);
        id
    }

    /// [`Sim::add_jpeg_answered`], then every pending write is committed
    /// (the answer is in IndexedDB): the jpeg's attempt.
    pub fn add_jpeg_answered_and_persisted(&mut self, size: u64, kind: ReqKind) -> Uuid {
        let id = self.add_jpeg_answered(size, kind);
        self.persist_all();
        id
    }

    pub fn file(&self, blob_key: Uuid) -> &FileSpec {
        self.files.iter().find(|f| f.blob_key == blob_key).expect("known file")
    }

    /// The file an attempt uploads.
    /// Whether the browser reads the attempt's file.
    fn read(&self, id: Uuid) -> Result<(), Failure> {
        if self.unreadable.contains(&self.file_of(id).blob_key) { Err(Failure::FileUnreadable) } else { Ok(()) }
    }

    pub fn file_of(&self, id: Uuid) -> &FileSpec {
        let record =
            self.db.get(&id).or_else(|| self.tabs.iter().find_map(|t| t.page.record(&id))).expect("known attempt");
        self.file(record.blob_key)
    }

    /// Whether the guest's page can read the file's bytes (in memory, or
    /// kept in IndexedDB).
    pub fn held(&self, blob_key: Uuid) -> bool {
        self.tabs[0].memory.contains(&blob_key) || self.kept.contains(&blob_key)
    }

    /// The record of an attempt (the guest page's view).
    pub fn record(&self, id: Uuid) -> &AttemptRecord {
        self.scheduler().record(&id).unwrap_or_else(|| panic!("no record {id}\n{}", self.dump()))
    }

    /// Every attempt of the file whose first attempt is `blob_key`, in order.
    pub fn chain(&self, blob_key: Uuid) -> Vec<&AttemptRecord> {
        self.scheduler().records().filter(|r| r.blob_key == blob_key).collect()
    }

    /// The guest picks the file again: what `add` made of it.
    pub fn reattach(&mut self, blob_key: Uuid) -> Added {
        let content = self.file(blob_key).content.clone();
        self.reattach_with(blob_key, &content)
    }

    /// The guest picks a file with the same name, size and time, whose
    /// bytes are `content`.
    pub fn reattach_with(&mut self, blob_key: Uuid, content: &str) -> Added {
        let info = self.file(blob_key).info();
        let plan = self.add_files_with(&[info], &[content.to_owned()]);
        plan.outcomes.into_iter().next().expect("one outcome")
    }

    /// The guest cancels an attempt.
    pub fn cancel(&mut self, id: Uuid) -> bool {
        let now = self.now;
        self.tabs[0].page.cancel(&id, now).expect("a known attempt")
    }

    /// The guest presses Pause.
    pub fn pause(&mut self, id: Uuid) -> bool {
        let now = self.now;
        self.tabs[0].page.pause(&id, now).expect("a known attempt")
    }

    /// The guest presses Resume.
    pub fn resume(&mut self, id: Uuid) -> bool {
        let now = self.now;
        self.tabs[0].page.resume(&id, now).expect("a known attempt")
    }

    /// The guest presses Retry.
    pub fn retry(&mut self, id: Uuid) -> bool {
        let now = self.now;
        self.tabs[0].page.retry(&id, now).expect("a known attempt")
    }

    /// The guest forgets an attempt: its record is deleted, then it goes.
    pub fn forget(&mut self, id: Uuid) {
        let now = self.now;
        self.tabs[0].page.forget(&id, now).expect("a known attempt");
        self.write_own(|_, delete| delete == [id]);
    }

    /// Carries out the first tab's own write of a guest's action (an add's
    /// new records, a forget's delete) now, as the driver does while the
    /// action waits: the page's inputs are handed over and a write under
    /// way is finished first, then the queue is carried out up to the
    /// write, which is answered at once (refused with `store_failure`).
    /// Nothing is sent meanwhile: the network here is slow to start.
    fn write_own(&mut self, ours: impl Fn(&[AttemptRecord], &[Uuid]) -> bool) {
        loop {
            while let Some(input) = self.tabs[0].inbox.pop_front() {
                self.tabs[0].page.handle(input, self.now, &mut self.rng);
            }
            if self.tabs[0].pending_store.is_some() {
                self.finish_store(0);
                continue;
            }
            let effect = self.tabs[0].page.poll_effect(self.now).expect("the action's write is queued");
            let Effect::Store { records, delete, .. } = &effect else {
                self.carry_out(0, effect);
                continue;
            };
            if !ours(records, delete) {
                self.carry_out(0, effect);
                continue;
            }
            self.carry_out(0, effect);
            self.finish_store(0);
            let answer = self.tabs[0].inbox.pop_back().expect("the write's answer");
            self.tabs[0].page.handle(answer, self.now, &mut self.rng);
            return;
        }
    }

    pub fn set_online(&mut self, online: bool) {
        self.online = online;
        for tab in &mut self.tabs {
            tab.inbox.push_back(Input::Online(online));
        }
        if online {
            self.offline_until = None;
        }
    }

    /// Offline now, back online after `ms`.
    pub fn go_offline_for(&mut self, ms: i64) {
        self.set_online(false);
        self.offline_until = Some(self.now + ms);
    }

    pub fn advance(&mut self, ms: i64) {
        self.now += ms;
    }

    /// The commands on the wire, oldest first.
    pub fn inflight(&self) -> Vec<Command> {
        self.inflight.iter().map(|f| f.command.clone()).collect()
    }

    // ----- tabs ------------------------------------------------------------------

    /// Opens another tab of the same browser; it restores like a reload.
    pub fn open_tab(&mut self) -> usize {
        self.stats.tabs_opened += 1;
        let tab = self.restored_tab();
        self.tabs.push(tab);
        self.tabs.len() - 1
    }

    /// Closes tab `index` (not the guest's page): its locks go to whoever
    /// waits for them; its requests in flight are lost.
    pub fn close_tab(&mut self, index: usize) {
        assert!(index > 0, "the guest's page reloads, it does not close");
        let tab = self.tabs.remove(index);
        self.drop_tab(tab, 0.0);
    }

    fn restored_tab(&mut self) -> Tab {
        let mut tab = self.new_tab();
        let records: Vec<AttemptRecord> = self.stored_records();
        let kept: Vec<Uuid> = self.kept.iter().copied().collect();
        tab.page.open(records.clone(), &kept);
        // The session is stored: no join.
        tab.page.set_session(Session { token: self.session_token.clone(), event: self.event_info() });
        tab.page.restore(records, &kept);
        tab
    }

    // ----- Background Fetch ----------------------------------------------------

    /// The guest's page hands its transfers in one PUT to a Background
    /// Fetch (`Client::hand_over`): the ids handed over.
    pub fn hand_over(&mut self) -> Vec<Uuid> {
        let now = self.now;
        let (ids, _ticket) = self.tabs[0].page.hand_over(now);
        ids
    }

    /// The guest's page prepares a hand-over: every file's signed URL
    /// first (`Client::hand_over` waits for [`Page::hand_over_waits`]).
    pub fn prepare_hand_over(&mut self) {
        self.tabs[0].page.prepare_hand_over();
    }

    /// The guest's page takes every hand-over back (`Client::take_back`).
    pub fn take_back(&mut self) -> Vec<Uuid> {
        let now = self.now;
        self.tabs[0].page.take_back(None, now)
    }

    /// The browser's Background Fetch sends the stored records' PUTs of
    /// `ids` (the signed URL and headers each record holds), as the page
    /// built them: what each PUT answered.
    pub fn background_fetch(&mut self, ids: &[Uuid]) -> Vec<Result<(), Failure>> {
        let now = self.now;
        ids.iter()
            .map(|id| {
                let record = self.db.get(id).expect("a stored record").clone();
                let upload = record.upload.expect("handed over with its signed URL");
                self.stats.background_puts += 1;
                self.server.put_signed(&upload, record.file.size, now)
            })
            .collect()
    }

    /// The service worker settles a Background Fetch of `ids`
    /// (`settleBackgroundFetch`): a page of its own that restores only
    /// those attempts. Its index in the tabs.
    pub fn open_service_worker(&mut self, ids: &[Uuid]) -> usize {
        let mut tab = self.new_tab();
        let records: Vec<AttemptRecord> = self.stored_records();
        let kept: Vec<Uuid> = self.kept.iter().copied().collect();
        tab.page.open(records.clone(), &kept);
        tab.page.set_session(Session { token: self.session_token.clone(), event: self.event_info() });
        let mine: Vec<AttemptRecord> = records.into_iter().filter(|r| ids.contains(&r.id)).collect();
        tab.page.restore(mine, &kept);
        self.tabs.push(tab);
        self.tabs.len() - 1
    }

    fn stored_records(&self) -> Vec<AttemptRecord> {
        let mut records: Vec<AttemptRecord> = self.db.values().filter(|r| r.event == EVENT).cloned().collect();
        records.sort_by_key(|r| (r.created_at, r.id));
        records
    }

    /// A tab goes away: what it had in flight reached the server with
    /// probability `reached`, its unwritten records are lost, its locks are
    /// released.
    fn drop_tab(&mut self, tab: Tab, reached: f64) {
        let (mine, others): (Vec<InFlight>, Vec<InFlight>) =
            std::mem::take(&mut self.inflight).into_iter().partition(|f| f.tab == tab.id);
        self.inflight = others;
        for f in mine {
            if self.online && self.rng.chance(reached) {
                let _ = self.apply(&f.command, &f.token);
            }
        }
        let ids: Vec<Uuid> = self.locks.keys().copied().collect();
        for id in ids {
            self.release_lock(tab.id, id);
        }
    }

    fn tab_index(&self, tab: u32) -> Option<usize> {
        self.tabs.iter().position(|t| t.id == tab)
    }

    fn send_input(&mut self, tab: u32, input: Input) {
        if let Some(i) = self.tab_index(tab) {
            self.tabs[i].inbox.push_back(input);
        }
    }

    // ----- Web Locks ------------------------------------------------------------

    fn ask_lock(&mut self, tab: u32, id: Uuid) {
        let line = self.locks.entry(id).or_default();
        match line.holder {
            None => {
                line.holder = Some(tab);
                self.send_input(tab, Input::Lock { id, granted: true });
            }
            Some(holder) if holder == tab => {}
            Some(_) => {
                if !line.line.contains(&tab) {
                    line.line.push_back(tab);
                }
                self.stats.lock_waits += 1;
                self.send_input(tab, Input::Lock { id, granted: false });
            }
        }
    }

    fn release_lock(&mut self, tab: u32, id: Uuid) {
        let Some(line) = self.locks.get_mut(&id) else {
            return;
        };
        line.line.retain(|t| *t != tab);
        if line.holder != Some(tab) {
            return;
        }
        line.holder = None;
        while let Some(next) = line.line.pop_front() {
            if self.tabs.iter().any(|t| t.id == next) {
                line.holder = Some(next);
                break;
            }
        }
        if let Some(next) = line.holder {
            self.send_input(next, Input::Lock { id, granted: true });
        }
    }

    /// Who holds the attempt's lock.
    pub fn lock_holder(&self, id: Uuid) -> Option<u32> {
        self.locks.get(&id).and_then(|l| l.holder)
    }

    // ----- the driver -------------------------------------------------------------

    /// Carries out every effect of every tab, feeding back the answers that
    /// come at once (locks, reads, kept files, the session), until nothing
    /// is left. Writes of records stay pending until [`Sim::persist`].
    /// Delivers a join answer held back by [`Sim::hold_join`] (and stops
    /// holding them).
    pub fn answer_join(&mut self) {
        self.hold_join = false;
        let (i, answer) = self.held_join.take().expect("a join is under way");
        self.tabs[i].inbox.push_back(answer);
    }

    pub fn pump(&mut self) {
        loop {
            let mut busy = false;
            for i in 0..self.tabs.len() {
                while let Some(input) = self.tabs[i].inbox.pop_front() {
                    busy = true;
                    let lock = matches!(input, Input::Lock { .. });
                    self.tabs[i].page.handle(input, self.now, &mut self.rng);
                    if lock && self.config.locks_one_at_a_time {
                        break;
                    }
                }
                while let Some(effect) = self.tabs[i].page.poll_effect(self.now) {
                    busy = true;
                    self.carry_out(i, effect);
                }
                // The browser's driver sleeps once the page says there is
                // nothing to do: asking again must not find anything.
                if let Some(effect) = self.tabs[i].page.poll_effect(self.now) {
                    panic!("the page had {effect:?} to do after saying it had nothing\n{}", self.dump());
                }
                for key in std::mem::take(&mut self.rechecks_due) {
                    busy = true;
                    self.stats.rechecks += 1;
                    let (info, content) = (self.file(key).info(), self.file(key).content.clone());
                    self.add_files_with(&[info], &[content]);
                }
            }
            if !busy {
                break;
            }
        }
        for tab in &self.tabs {
            // (A request waiting for the session holds its slot too.)
            let (confirms, rest) = self.counted_on_wire(tab);
            let on_wire = rest + tab.page.requests_waiting_for_session();
            assert_eq!(
                tab.page.scheduler().active() + tab.page.scheduler().authorizes_ahead(),
                on_wire,
                "scheduler.active() disagrees with the requests on the wire\n{}",
                self.dump()
            );
            assert_eq!(
                tab.page.scheduler().confirms_active(),
                confirms,
                "scheduler.confirms_active() disagrees with the confirms on the wire\n{}",
                self.dump()
            );
        }
    }

    /// A tab's requests on the wire that still hold a slot: a forgotten
    /// attempt's request runs on, but its slot was given back.
    /// Requests of `tab`'s attempts on the wire: (confirms, the rest).
    fn counted_on_wire(&self, tab: &Tab) -> (usize, usize) {
        let mine = self
            .inflight
            .iter()
            .filter(|f| f.tab == tab.id && command_ids(&f.command).iter().any(|id| tab.page.record(id).is_some()));
        mine.fold((0, 0), |(confirms, rest), f| match f.command {
            Command::Confirm { .. } => (confirms + 1, rest),
            _ => (confirms, rest + 1),
        })
    }

    fn carry_out(&mut self, i: usize, effect: Effect) {
        let tab = self.tabs[i].id;
        match effect {
            Effect::Store { records, delete, .. } => {
                assert!(self.tabs[i].pending_store.is_none(), "one write at a time");
                self.tabs[i].pending_store = Some((records, delete));
            }
            Effect::AskLock(id) => self.ask_lock(tab, id),
            Effect::ReleaseLock(id) => self.release_lock(tab, id),
            Effect::Load { id, find_file } => {
                self.stats.loads += 1;
                let input = Input::Loaded {
                    id,
                    record: Ok(self.db.get(&id).cloned()),
                    file_found: find_file.is_some_and(|k| self.kept.contains(&k)),
                };
                self.tabs[i].inbox.push_back(input);
            }
            Effect::KeepFiles(keys) => {
                self.stats.keep_batches.push(keys.len());
                self.kept.extend(keys);
                self.tabs[i].inbox.push_back(Input::Kept(Ok(())));
            }
            Effect::DeleteKeptFiles(keys) => {
                for k in keys {
                    self.kept.remove(&k);
                }
            }
            Effect::DropFile(key) => {
                self.tabs[i].memory.remove(&key);
            }
            // As the driver does: the held file goes through add again, once
            // the effects of now are carried out (the driver's add is a task
            // of its own).
            Effect::Recheck(key) if i == 0 => self.rechecks_due.push(key),
            Effect::Recheck(_) => {}
            Effect::Join { .. } => {
                self.stats.joins += 1;
                let answer = match &self.join_failure {
                    Some(failure) => Err(failure.clone()),
                    None => {
                        let token = self.server.join(self.now);
                        // Kept in IndexedDB for the next page.
                        self.session_token = token.clone();
                        Ok(Session { token, event: self.event_info() })
                    }
                };
                if self.hold_join {
                    self.held_join = Some((i, Input::Joined(answer)));
                } else {
                    self.tabs[i].inbox.push_back(Input::Joined(answer));
                }
            }
            Effect::Send { command, token } => self.send(i, command, token),
            Effect::Abort(id) => {
                for f in self.inflight.iter_mut().filter(|f| f.tab == tab && f.command.id() == Some(id)) {
                    if matches!(f.command, Command::Upload { .. } | Command::UploadPart { .. }) {
                        f.aborted = true;
                    }
                }
            }
            Effect::Announce(id) => {
                for other in self.tabs.iter_mut().filter(|t| t.id != tab) {
                    other.inbox.push_back(Input::RemoteChange(id));
                }
            }
            Effect::StorageError(e) => self.tabs[i].storage_errors.push(e),
            Effect::Done(ticket) => self.tabs[i].done.push(ticket),
            Effect::SessionChanged => self.stats.session_changes += 1,
            Effect::BusyChanged(busy) => {
                assert_eq!(busy, self.tabs[i].page.is_busy(), "BusyChanged says what is_busy says");
                self.tabs[i].busy_changes.push(busy);
            }
            Effect::Changed(_) | Effect::Removed(_) | Effect::FilesNotKept(_) => {}
        }
    }

    fn send(&mut self, i: usize, command: Command, token: String) {
        let tab = self.tabs[i].id;
        if self.config.check_write_ahead {
            for id in command_ids(&command) {
                // Its latest revision, but for the changes stored without
                // holding it (a part in the ledger, the content hash): a
                // reload that loses those is what the property test does.
                let required = self.tabs[i].page.scheduler().required_revision(&id);
                let stored = self.db.get(&id).map(|r| r.revision);
                assert!(
                    stored.is_some() && stored >= required,
                    "write-ahead violated: {command:?} for {id} at revision {required:?}, stored {stored:?}"
                );
            }
        }
        if let Some(id) = command.id() {
            assert_eq!(
                self.lock_holder(id),
                Some(tab),
                "{command:?} sent by a tab that does not hold the attempt's lock"
            );
        }
        if let Command::Upload { id, .. }
        | Command::UploadPart { id, .. }
        | Command::HashPart { id, .. }
        | Command::HashFile { id, .. } = &command
        {
            // The driver reads the bytes before the PUT (memory, then the
            // kept copy): without them nothing is sent.
            let blob_key = self.db.get(id).map(|r| r.blob_key);
            if !blob_key.is_some_and(|k| self.tabs[i].memory.contains(&k) || self.kept.contains(&k)) {
                let input = match &command {
                    Command::HashPart { number, .. } => Input::Outcome {
                        id: *id,
                        outcome: Outcome::PartHashed {
                            number: *number,
                            result: Err(Failure::Unexpected("no bytes".into())),
                        },
                        token,
                    },
                    Command::HashFile { .. } => Input::Outcome {
                        id: *id,
                        outcome: Outcome::FileHashed(Err(Failure::Unexpected("no bytes".into()))),
                        token,
                    },
                    Command::UploadPart { number, .. } => Input::FileUnavailable { id: *id, part: Some(*number) },
                    _ => Input::FileUnavailable { id: *id, part: None },
                };
                self.tabs[i].inbox.push_back(input);
                return;
            }
        }
        if let Command::HashFile { id, .. } = &command {
            // Local work, answered at once.
            self.stats.file_hashes += 1;
            let content = self.file_of(*id).content.clone();
            let outcome = Outcome::FileHashed(self.read(*id).map(|()| fake_sha(&content, 0)));
            self.tabs[i].inbox.push_back(Input::Outcome { id: *id, outcome, token });
            return;
        }
        if let Command::HashPart { id, number, .. } = &command {
            // Local work, answered at once.
            self.stats.hashes += 1;
            let content = self.file_of(*id).content.clone();
            let outcome =
                Outcome::PartHashed { number: *number, result: self.read(*id).map(|()| part_sha(&content, *number)) };
            self.tabs[i].inbox.push_back(Input::Outcome { id: *id, outcome, token });
            return;
        }
        self.stats.sent.push(Sent { at: self.now, command: command.clone() });
        let part_of = match &command {
            Command::UploadPart { id, .. } => Some(*id),
            _ => None,
        };
        self.inflight.push(InFlight { tab, command, token, aborted: false, seen: false });
        if let Some(id) = part_of {
            let sending = self
                .inflight
                .iter()
                .filter(|f| matches!(f.command, Command::UploadPart { id: i, .. } if i == id))
                .count();
            self.stats.max_parts_in_flight = self.stats.max_parts_in_flight.max(sending);
        }
        // Confirms go beside the transfers, in as many slots of their own.
        let (confirms, mut on_wire) = self.counted_on_wire(&self.tabs[i]);
        if self.tabs[i].page.scheduler().is_preparing_hand_over() {
            // A hand-over being prepared authorizes every file at once.
            let tab = self.tabs[i].id;
            on_wire -=
                self.inflight.iter().filter(|f| f.tab == tab && matches!(f.command, Command::Authorize { .. })).count();
        }
        let limit = self.config.concurrency.max(1);
        assert!(confirms <= limit, "confirm limit {limit} exceeded: {confirms} in flight");
        // The next files' authorizes may go while every slot is taken, at
        // most as many again (with the files authorized and waiting).
        let ahead = self.tabs[i].page.scheduler().authorizes_ahead();
        assert!(ahead <= limit, "authorizes ahead {ahead} over the limit {limit}");
        self.stats.max_authorizes_ahead = self.stats.max_authorizes_ahead.max(ahead);
        on_wire -= ahead.min(on_wire);
        self.stats.max_confirms_in_flight = self.stats.max_confirms_in_flight.max(confirms);
        // One sign request of parts may go beside a full set of requests
        // (the next parts are signed while the current ones are sent).
        let signing =
            self.inflight.iter().any(|f| f.tab == self.tabs[i].id && matches!(f.command, Command::SignParts { .. }));
        assert!(
            on_wire <= limit || (on_wire == limit + 1 && signing),
            "concurrency limit {} exceeded: {on_wire} in flight",
            self.config.concurrency
        );
        self.stats.max_inflight = self.stats.max_inflight.max(on_wire.min(limit));
    }

    /// Commits (or, with `store_failure`, refuses) every pending write of
    /// records, unless the write is deferred.
    pub fn persist(&mut self) {
        if self.config.defer_persist > 0.0 && self.rng.chance(self.config.defer_persist) {
            return;
        }
        self.persist_all();
    }

    /// Commits every pending write of records now (a refusal still counts
    /// when `store_failure` is set), and lets the pages hear of it.
    pub fn persist_all(&mut self) {
        self.pump();
        for i in 0..self.tabs.len() {
            self.finish_store(i);
        }
        self.pump();
    }

    /// Commits (or, with `store_failure`, refuses) tab `i`'s pending write,
    /// if any, and queues its answer.
    fn finish_store(&mut self, i: usize) {
        let Some((records, delete)) = self.tabs[i].pending_store.take() else {
            return;
        };
        if self.config.store_failure > 0.0 && self.rng.chance(self.config.store_failure) {
            self.stats.store_failures += 1;
            let refused = Error::new(ErrorCode::QuotaExceeded, "the browser's storage quota is exceeded");
            self.tabs[i].inbox.push_back(Input::Stored(Err(refused)));
            return;
        }
        for r in records {
            self.db.insert(r.id, r);
        }
        for id in delete {
            self.db.remove(&id);
        }
        self.tabs[i].inbox.push_back(Input::Stored(Ok(())));
    }

    pub fn has_pending_writes(&self) -> bool {
        self.tabs.iter().any(|t| t.pending_store.is_some())
    }

    /// Carries out every effect and returns the requests on the wire that
    /// no earlier call returned.
    pub fn poll_all(&mut self) -> Vec<Command> {
        self.pump();
        let mut new = Vec::new();
        for f in self.inflight.iter_mut().filter(|f| !f.seen) {
            f.seen = true;
            new.push(f.command.clone());
        }
        new
    }

    // ----- network ------------------------------------------------------------

    /// Performs a command against the server, without faults, with the
    /// session `token`.
    pub fn apply(&mut self, command: &Command, token: &str) -> Reply {
        let now = self.now;
        if let Err(refused) = self.server.admit(command, token, now) {
            return failed_reply(command, refused);
        }
        match command {
            Command::Authorize { request, .. } => {
                Reply::Outcome(Outcome::Authorize(self.server.authorize_as(request, token, now)))
            }
            Command::Upload { id, instruction } => {
                let blob_key = self.db.get(id).map(|r| r.blob_key).expect("an uploaded attempt is stored");
                let file = self.file(blob_key);
                let (size, content) = (file.size, fake_sha(&file.content, 0));
                Reply::Outcome(Outcome::Upload(self.server.put_content(instruction, size, Some(&content), now)))
            }
            Command::Renew { id } => Reply::Outcome(Outcome::Renew(self.server.renew(*id, now))),
            Command::Confirm { id, request } => {
                // As the driver does (src/client/requests.rs): a file in
                // parts is confirmed with the composite of the digests its
                // parts were sent with, when every one is known (the sim's
                // digests are `fake_sha`s, and so is its composite).
                let mut request = request.clone();
                let ledger = self.db.get(id).and_then(|r| r.multipart.clone());
                if let Some(ledger) = ledger.filter(|l| l.composite_input().is_some()) {
                    let digests: String = ledger
                        .done
                        .iter()
                        .take(ledger.part_count as usize)
                        .map(|p| p.sha256.clone().unwrap_or_default())
                        .collect();
                    request.composite_sha256 = Some(format!("{}-{}", fake_sha(&digests, 0), ledger.part_count));
                }
                Reply::Outcome(Outcome::Confirm(self.server.confirm(*id, &request, now)))
            }
            Command::Status { ids } => Reply::Status(self.server.status_as(ids, token, now)),
            Command::SignParts { id, request } => {
                Reply::Outcome(Outcome::PartsSigned(self.server.sign_parts(*id, request, now)))
            }
            Command::UploadPart { id, number, start, end, instruction } => {
                let content = self.file_of(*id).content.clone();
                let result = self.server.put_part(instruction, end - start, &part_sha(&content, *number), now);
                Reply::Outcome(Outcome::PartSent { number: *number, result })
            }
            Command::HashPart { .. } | Command::HashFile { .. } => panic!("hashing is not a request"),
        }
    }

    /// Performs a command through the fault layer.
    pub fn execute(&mut self, command: &Command, token: &str) -> Reply {
        if !self.online {
            return failed_reply(command, Failure::Network);
        }
        match self.faults.decide(ReqKind::of(command)) {
            None => self.apply(command, token),
            Some(fault) => {
                if fault.commits() {
                    let _ = self.apply(command, token);
                }
                failed_reply(command, fault.failure())
            }
        }
    }

    /// Resolves the request on the wire at `index`: time passes, the server
    /// (through the fault layer) answers, the page hears it.
    pub fn resolve(&mut self, index: usize) -> (Command, Reply) {
        let f = self.inflight.remove(index);
        let (lo, hi) = self.config.latency_ms;
        self.now += self.rng.range(lo, hi);
        let Some(t) = self.tab_index(f.tab) else { panic!("a request of a closed tab") };
        let reply =
            if f.aborted { failed_reply(&f.command, Failure::Network) } else { self.execute(&f.command, &f.token) };
        let input = match (&f.command, reply.clone()) {
            (Command::Status { ids }, Reply::Status(result)) => {
                Input::Status { ids: ids.clone(), result, token: f.token.clone() }
            }
            (command, Reply::Outcome(outcome)) => {
                Input::Outcome { id: command.id().expect("one attempt"), outcome, token: f.token.clone() }
            }
            (command, reply) => panic!("reply {reply:?} does not fit {command:?}"),
        };
        self.tabs[t].inbox.push_back(input);
        self.pump();
        (f.command, reply)
    }

    /// Resolves one request on the wire, chosen at random.
    pub fn resolve_random(&mut self) -> Option<(Command, Reply)> {
        if self.inflight.is_empty() {
            return None;
        }
        let index = self.rng.below(self.inflight.len() as u64) as usize;
        Some(self.resolve(index))
    }

    /// Resolves every request on the wire, in a random order.
    pub fn resolve_all(&mut self) -> Vec<(Command, Reply)> {
        let mut out = Vec::new();
        while let Some(r) = self.resolve_random() {
            out.push(r);
        }
        out
    }

    // ----- the run loop ---------------------------------------------------------

    fn all_idle(&self) -> bool {
        self.tabs.iter().all(|t| t.page.is_idle())
    }

    /// One step: write what waits to be written, then answer one request on
    /// the wire or move the clock to the next thing a page waits for.
    pub fn tick(&mut self) -> Tick {
        self.stats.steps += 1;
        if !self.online && self.offline_until.is_some_and(|t| t <= self.now) {
            self.set_online(true);
        }
        self.pump();
        self.persist();
        if !self.inflight.is_empty() {
            self.resolve_random();
            return Tick::Progress;
        }
        if self.has_pending_writes() {
            self.persist_all();
            return Tick::Progress;
        }
        if !self.online {
            match self.offline_until {
                Some(t) => {
                    self.now = self.now.max(t);
                    return Tick::Progress;
                }
                None => return Tick::Stuck,
            }
        }
        if self.all_idle() {
            return Tick::Idle;
        }
        let wakeup = self.tabs.iter().filter_map(|t| t.page.poll_timeout()).min();
        match wakeup {
            Some(t) if t > self.now => {
                self.now = t;
                Tick::Progress
            }
            Some(_) => {
                // Due now, yet nothing happened: the page would spin.
                self.stats.spurious_wakeups += 1;
                Tick::Stuck
            }
            None => Tick::Stuck,
        }
    }

    /// Runs until every tab is idle, or returns why not.
    pub fn try_run_until_idle(&mut self) -> Result<(), String> {
        for _ in 0..self.config.max_steps {
            match self.tick() {
                Tick::Progress => {}
                Tick::Idle => return Ok(()),
                Tick::Stuck => {
                    return Err(format!("stuck: not idle and nothing to do\n{}", self.dump()));
                }
            }
        }
        Err(format!("not idle after {} steps\n{}", self.config.max_steps, self.dump()))
    }

    /// Ticks until `done` holds (checked before every tick).
    pub fn tick_until(&mut self, mut done: impl FnMut(&Sim) -> bool) {
        for _ in 0..self.config.max_steps {
            if done(self) {
                return;
            }
            if self.tick() == Tick::Stuck {
                panic!("stuck before the condition held\n{}", self.dump());
            }
        }
        panic!("condition not reached after {} steps\n{}", self.config.max_steps, self.dump());
    }

    /// Ticks until a command of `kind` for `id` has been answered.
    pub fn tick_until_answered(&mut self, id: Uuid, kind: ReqKind) {
        let already = self.stats.kinds_for(id).iter().filter(|k| **k == kind).count();
        self.tick_until(|sim| {
            let sent = sim.stats.kinds_for(id).iter().filter(|k| **k == kind).count();
            sent > already
                && !sim
                    .inflight
                    .iter()
                    .any(|f| ReqKind::of(&f.command) == kind && command_ids(&f.command).contains(&id))
        });
    }

    pub fn run_until_idle(&mut self) {
        if let Err(e) = self.try_run_until_idle() {
            panic!("{e}");
        }
    }

    /// Runs until idle: the kinds of the requests sent meanwhile, in order.
    pub fn kinds_sent_until_idle(&mut self) -> Vec<ReqKind> {
        let from = self.stats.sent.len();
        self.run_until_idle();
        self.stats.kinds_since(from)
    }

    // ----- page reload ----------------------------------------------------------

    /// The guest's page reloads: its requests in flight and unwritten
    /// records are gone, and so are the files it held in memory (each kept
    /// copy is lost too with probability `lose_blob`); a new page restores
    /// from the fake IndexedDB.
    pub fn reload(&mut self, how: Reload) {
        self.stats.reloads += 1;
        let old = self.tabs.remove(0);
        self.drop_tab(old, how.inflight_reached_server);
        let keys: Vec<Uuid> = self.kept.iter().copied().collect();
        for key in keys {
            if self.rng.chance(how.lose_blob) {
                self.kept.remove(&key);
            }
        }
        let tab = self.restored_tab();
        self.tabs.insert(0, tab);
    }

    // ----- checks ------------------------------------------------------------------

    /// The exactly-once properties, after a run to idle with a reachable
    /// server and only the guest's page open.
    pub fn check_exactly_once(&self) -> Result<(), String> {
        let mut errors = Vec::new();
        let mut per_attempt: BTreeMap<Uuid, usize> = BTreeMap::new();
        for m in &self.server.media {
            *per_attempt.entry(m.attempt_id).or_default() += 1;
        }
        for (id, n) in &per_attempt {
            if *n != 1 {
                errors.push(format!("attempt {id} has {n} media rows"));
            }
        }
        let persisted_files: BTreeSet<Uuid> = self.db.values().map(|r| r.blob_key).collect();
        for f in &self.files {
            let rows = self.server.media_for_file(&f.name);
            if rows.len() > 1 {
                errors.push(format!("file {} has {} media rows (duplicate)", f.name, rows.len()));
            }
            if !persisted_files.contains(&f.blob_key) {
                // Never written: write-ahead says the server never heard of it.
                if !self.server.attempts_for_file(&f.name).is_empty() {
                    errors.push(format!("file {} was never persisted but the server knows it", f.name));
                }
                continue;
            }
            let held = self.held(f.blob_key);
            if held && rows.len() != 1 {
                errors.push(format!("file {} (bytes held) has {} media rows, expected 1", f.name, rows.len()));
            }
            let confirmed: Vec<&AttemptRecord> =
                self.chain(f.blob_key).into_iter().filter(|r| r.confirmation == Confirmation::Confirmed).collect();
            if confirmed.len() > 1 {
                errors.push(format!("file {} has {} confirmed attempts on the client", f.name, confirmed.len()));
            }
            if held && confirmed.len() != 1 {
                errors.push(format!("file {} (bytes held) is not confirmed on the client", f.name));
            }
        }
        for m in &self.server.media {
            match self.scheduler().record(&m.attempt_id) {
                None => errors.push(format!("media {} of attempt {} has no client record", m.id, m.attempt_id)),
                Some(r) if r.confirmation != Confirmation::Confirmed => errors.push(format!(
                    "media {} exists but attempt {} is {:?} on the client (orphan)",
                    m.id, m.attempt_id, r.confirmation
                )),
                Some(r) if r.media.as_ref().map(|s| s.id) != Some(m.id) => {
                    errors.push(format!("attempt {} shows media {:?}, server has {}", r.id, r.media, m.id))
                }
                Some(_) => {}
            }
        }
        for ((key, number), n) in &self.server.parts_stored {
            if *n > 1 {
                errors.push(format!("part {number} of {key} was stored {n} times"));
            }
        }
        for (id, a) in &self.server.attempts {
            if a.state != AttemptState::Authorized && !a.parts.is_empty() {
                errors.push(format!("attempt {id} ended {:?} with {} parts left behind", a.state, a.parts.len()));
            }
        }
        for r in self.scheduler().records() {
            let held = self.scheduler().has_blob(&r.id);
            if !(r.is_terminal() || r.needs_file() && !held) {
                errors.push(format!("attempt {} is still active: step {:?} transfer {:?}", r.id, r.step, r.transfer));
            }
            if r.needs_file() && held {
                errors.push(format!("attempt {} needs its file although the bytes are held", r.id));
            }
            if self.db.get(&r.id) != Some(r) {
                errors.push(format!("attempt {} is not stored as the page shows it", r.id));
            }
            if let Some(next) = r.replaced_by {
                match self.scheduler().record(&next) {
                    Some(s) if s.replaces == Some(r.id) && s.blob_key == r.blob_key => {}
                    other => errors.push(format!("attempt {} replaced_by {next} but that is {other:?}", r.id)),
                }
                if r.confirmation != Confirmation::Expired {
                    errors.push(format!("attempt {} has a successor but is {:?}", r.id, r.confirmation));
                }
            }
        }
        if errors.is_empty() { Ok(()) } else { Err(format!("{}\n{}", errors.join("\n"), self.dump())) }
    }

    /// A readable picture of client and server state.
    pub fn dump(&self) -> String {
        let mut out = String::new();
        let _ =
            writeln!(out, "now = {} (T0 + {} ms), online = {}", format_rfc3339(self.now), self.now - T0, self.online);
        for tab in &self.tabs {
            let _ = writeln!(out, "tab {} records:", tab.id);
            for r in tab.page.records() {
                let _ = writeln!(
                    out,
                    "  {} file={} step={:?} transfer={:?} confirmation={:?} retries={} next={:?} rev={} stored_rev={:?} blob={} owned={} lock={:?} busy={} err={:?} replaces={:?} replaced_by={:?} paused={}",
                    r.id,
                    r.file.name,
                    r.step,
                    r.transfer,
                    r.confirmation,
                    r.retries,
                    r.next_retry_at.map(|t| t - self.now),
                    r.revision,
                    self.db.get(&r.id).map(|d| d.revision),
                    tab.page.scheduler().has_blob(&r.id),
                    tab.page.scheduler().is_owned(&r.id),
                    self.lock_holder(r.id),
                    tab.page.scheduler().is_busy(&r.id),
                    r.error.as_ref().map(|e| &e.code),
                    r.replaces,
                    r.replaced_by,
                    r.paused,
                );
            }
        }
        let _ = writeln!(out, "server attempts:");
        for (id, a) in &self.server.attempts {
            let _ = writeln!(
                out,
                "  {id} file={} state={:?} stored={} media={:?} expires_in={}",
                a.request.filename,
                a.state,
                self.server.objects.contains_key(&a.object_key),
                a.media_id,
                a.expires_at - (self.now + self.server.config.clock_offset_ms),
            );
        }
        let _ = writeln!(out, "media rows: {}", self.server.media.len());
        let _ = writeln!(
            out,
            "in flight: {:?}",
            self.inflight.iter().map(|f| (f.tab, ReqKind::of(&f.command))).collect::<Vec<_>>()
        );
        let _ = writeln!(out, "faults injected: {}", self.faults.injected.len());
        out
    }
}

// ---------------------------------------------------------------------------
// Small builders for state-machine tests
// ---------------------------------------------------------------------------

pub fn jpeg(name: &str, size: u64) -> FileInfo {
    FileInfo { name: name.to_owned(), size, content_type: "image/jpeg".to_owned(), last_modified: T0 - HOUR }
}

/// A fresh record with a deterministic id.
pub fn record(n: u128, size: u64) -> AttemptRecord {
    AttemptRecord::new(Uuid::from_u128(n), EVENT, jpeg(&format!("file-{n}.jpg"), size), T0)
}

/// A fake server with the default config, and a generator seeded with
/// `seed`: what a test of the bare scheduler answers its commands with.
pub fn default_server_and_rng(seed: u64) -> (FakeServer, TestRng) {
    (FakeServer::new(ServerConfig::default()), TestRng::new(seed))
}

/// A scheduler for `concurrency` transfers (default retry policy) that
/// hashes no file whole before authorize (whole-file hashing has its own
/// tests).
pub fn new_scheduler(concurrency: usize) -> Scheduler {
    let mut s = Scheduler::new(RetryPolicy::default(), concurrency);
    s.set_hash_limit(0);
    s
}

/// Adds `records` to `s` in order, each with its file held, owned by this
/// page and stored at its current revision.
pub fn insert_stored(s: &mut Scheduler, records: impl IntoIterator<Item = AttemptRecord>) {
    for r in records {
        let revision = r.revision;
        s.insert(r, true, true, revision);
    }
}

/// A [`new_scheduler`] holding the stored records 1 to `n` (see
/// [`record`]; 10 bytes each), in order.
pub fn scheduler_with_records(concurrency: usize, n: u128) -> Scheduler {
    let mut s = new_scheduler(concurrency);
    insert_stored(&mut s, (1..=n).map(|i| record(i, 10)));
    s
}

/// Asserts a record is terminal with the given error code.
pub fn assert_failed_with(record: &AttemptRecord, code: &str) {
    assert!(record.is_terminal(), "expected terminal, got step {:?}", record.step);
    assert_eq!(record.error.as_ref().map(|e| e.code.as_str()), Some(code), "error of {record:?}");
}
