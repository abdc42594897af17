//! Command-line flags, each with an `UPLOAD_ONCE_*` environment equivalent.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

pub mod limits;

use crate::error::{Error, Result};

/// Parses a duration: jiff's friendly format (`500ms`, `90s`, `15m`,
/// `2h`, `7d`, `1w`, `1h 30m`, `2 days`, `1.5h`; units are lowercase), ISO
/// 8601 (`PT15M`, `P7D`), or a plain number of seconds. A day is 24 hours;
/// months and years (not of fixed length), negative durations and anything
/// past a century are refused.
pub fn parse_duration(text: &str) -> std::result::Result<Duration, String> {
    let text = text.trim();
    let duration = if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        text.parse::<u64>().map(Duration::from_secs).map_err(|_| format!("`{text}` is too long a duration"))?
    } else {
        let span: jiff::Span =
            text.parse().map_err(|e| format!("`{text}` is not a duration like 90s, 15m, 7d: {e}"))?;
        let signed = span.to_duration(jiff::SpanRelativeTo::days_are_24_hours()).map_err(|_| {
            format!("`{text}`: use days, hours, minutes or seconds (months and years are not of fixed length)")
        })?;
        Duration::try_from(signed).map_err(|_| format!("`{text}` is a negative duration"))?
    };
    // Anything past a century is a typo, and would overflow time arithmetic.
    const CENTURY: Duration = Duration::from_secs(100 * 365 * 86_400);
    if duration > CENTURY {
        return Err(format!("`{text}` is too long a duration"));
    }
    Ok(duration)
}

/// Parses a size in bytes: a plain number of bytes, or a number with a
/// binary unit (`KiB`, `MiB`, `GiB`; `K`, `M`, `G` mean the same).
pub fn parse_bytes(text: &str) -> std::result::Result<u64, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| format!("`{text}` is not a size like 8388608, 8MiB or 32 MiB"))?;
    let scale: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "KiB" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        other => return Err(format!("`{other}` is not a unit: use KiB, MiB or GiB")),
    };
    number.checked_mul(scale).ok_or_else(|| format!("`{text}` is too large"))
}

/// Whether `origin` is `scheme://host[:port]`, as browsers send it in the
/// `Origin` header: http or https, a host, no path, query or credentials.
pub fn is_valid_origin(origin: &str) -> bool {
    let Some((scheme, rest)) = origin.split_once("://") else { return false };
    if !matches!(scheme, "http" | "https") || rest.contains(['/', '?', '#', '@']) {
        return false;
    }
    let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
        match v6.split_once(']') {
            Some((addr, tail)) if !addr.is_empty() && addr.bytes().all(|b| b.is_ascii_hexdigit() || b == b':') => {
                (addr, tail.strip_prefix(':').map(Some).unwrap_or(if tail.is_empty() { None } else { Some("") }))
            }
            _ => return false,
        }
    } else {
        match rest.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (rest, None),
        }
    };
    let host_ok = !host.is_empty()
        && !host.starts_with(['.', '-'])
        && !host.ends_with('.')
        && host.bytes().all(|b| b.is_ascii_alphanumeric() || b"-.:".contains(&b));
    let port_ok = port.is_none_or(|p| p.len() <= 5 && p.parse::<u32>().is_ok_and(|n| (1..=65535).contains(&n)));
    host_ok && port_ok
}

/// Where the bytes live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StorageKind {
    /// Files under `<data-dir>/objects`, uploaded through this server's own
    /// signed `/storage/` URLs (one machine).
    Local,
    /// An S3-compatible bucket, uploaded to through SigV4 presigned URLs.
    S3,
}

/// How bucket URLs are formed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum S3UrlStyle {
    /// `https://endpoint/bucket/key` (MinIO, loopback stores, IP endpoints).
    Path,
    /// `https://bucket.endpoint/key` (AWS's preference).
    VirtualHost,
}

/// A secret from the configuration, kept out of `Debug` output.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        Ok(Secret(s.trim().to_owned()))
    }
}

/// The reference server's configuration.
#[derive(Clone, Debug, Parser)]
#[command(name = "upload-once-server", version, about = "The upload-once reference server")]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "UPLOAD_ONCE_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// Serve `GET /metrics` on this address alone (a private network, or
    /// loopback for a scraper beside the server); the public listener then
    /// answers `404` for it. Without it, metrics are served with the API.
    #[arg(long, env = "UPLOAD_ONCE_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,

    /// Directory for the SQLite database, stored objects and the signing key.
    #[arg(long, env = "UPLOAD_ONCE_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,

    /// Database URL: `sqlite://path` (default: `<data-dir>/upload-once.db`),
    /// `sqlite::memory:`, or `postgres://user:password@host:port/database`.
    #[arg(long, env = "UPLOAD_ONCE_DATABASE_URL")]
    pub database_url: Option<String>,

    /// Bearer token for `POST /v1/events`. A random one is made and printed
    /// when none is given.
    #[arg(long, env = "UPLOAD_ONCE_ADMIN_TOKEN")]
    pub admin_token: Option<String>,

    /// The URL browsers reach this server at (signed URLs and media links
    /// start with it). Default: `http://<listen>`.
    #[arg(long, env = "UPLOAD_ONCE_PUBLIC_URL")]
    pub public_url: Option<String>,

    /// An origin allowed to call the API and PUT to storage from a browser
    /// (repeatable, or comma-separated in the environment).
    #[arg(long = "allowed-origin", env = "UPLOAD_ONCE_ALLOWED_ORIGINS", value_delimiter = ',')]
    pub allowed_origins: Vec<String>,

    /// An origin other than their own that the pages (`www/`) may be
    /// pointed at with `?api=` (repeatable, or comma-separated in the
    /// environment). The server writes them into each page and into its
    /// Content-Security-Policy; `?api=` naming any other origin is refused.
    #[arg(long = "page-api-origin", env = "UPLOAD_ONCE_PAGE_API_ORIGINS", value_delimiter = ',')]
    pub page_api_origins: Vec<String>,

    /// Lifetime of a signed upload URL. Must be shorter than the attempt TTL.
    #[arg(long, env = "UPLOAD_ONCE_URL_TTL", default_value = "15m", value_parser = parse_duration)]
    pub url_ttl: Duration,

    /// How long an attempt may stay unconfirmed before it expires.
    #[arg(long, env = "UPLOAD_ONCE_ATTEMPT_TTL", default_value = "7d", value_parser = parse_duration)]
    pub attempt_ttl: Duration,

    /// How long a guest session lives; never shorter than the attempt TTL.
    #[arg(long, env = "UPLOAD_ONCE_SESSION_TTL", default_value = "30d", value_parser = parse_duration)]
    pub session_ttl: Duration,

    /// How often the sweeper expires old attempts and deletes their objects.
    #[arg(long, env = "UPLOAD_ONCE_SWEEP_INTERVAL", default_value = "60s", value_parser = parse_duration)]
    pub sweep_interval: Duration,

    /// How long a media the host rejected keeps its objects (original and
    /// renditions) while it stays rejected; the sweeper deletes them after.
    /// Approved again before that, nothing is deleted.
    #[arg(long, env = "UPLOAD_ONCE_REJECTED_RETENTION", default_value = "30d", value_parser = parse_duration)]
    pub rejected_retention: Duration,

    /// How long the record of an attempt that ended without a media
    /// (expired, or rejected) is kept after its expiry, and a lapsed guest
    /// session with no attempt left after it lapsed: the sweeper then
    /// deletes them (a status then answers 404). Attempts that made a media
    /// are kept with it, and so are their sessions; events are kept until
    /// their host deletes them.
    #[arg(long, env = "UPLOAD_ONCE_RECORD_RETENTION", default_value = "30d", value_parser = parse_duration)]
    pub record_retention: Duration,

    /// Files larger than this go up in parts (multipart); smaller ones in
    /// one PUT. Bytes, or with a unit: `32MiB`.
    #[arg(long, env = "UPLOAD_ONCE_MULTIPART_THRESHOLD", default_value = "32MiB", value_parser = parse_bytes)]
    pub multipart_threshold: u64,

    /// The size of each part of a multipart upload (the last one holds the
    /// rest): at least 5 MiB (S3's minimum), grown to whole MiB for a file
    /// that would need more than 10,000 parts.
    #[arg(long, env = "UPLOAD_ONCE_PART_SIZE", default_value = "8MiB", value_parser = parse_bytes)]
    pub part_size: u64,

    /// How many photos are made into display renditions at once (decoding
    /// takes a core and up to 256 MiB each).
    #[arg(long, env = "UPLOAD_ONCE_RENDITION_WORKERS", default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub rendition_workers: u16,

    /// The megapixels of photos one guest session may have decoded into
    /// renditions per hour; its further photos wait their turn (so one
    /// guest's few-KB 49-megapixel PNGs cannot keep the workers from every
    /// other guest's). 4000 is about 330 photos of 12 MP.
    #[arg(long, env = "UPLOAD_ONCE_RENDER_MEGAPIXELS_PER_SESSION", default_value_t = 4000, value_parser = clap::value_parser!(u64).range(1..))]
    pub render_megapixels_per_session: u64,

    /// The `ffmpeg` that makes a video's poster and its shareable MP4 (a
    /// program on the `PATH`, or a path). Without it (or `ffprobe`) the
    /// server still runs: videos get the placeholder, never the original,
    /// and `/readyz` tells the admin why.
    #[arg(long, env = "UPLOAD_ONCE_FFMPEG", default_value = "ffmpeg")]
    pub ffmpeg: PathBuf,

    /// libheif's `heif-convert`, which decodes HEIC/HEIF photos (an
    /// iPhone's) for their renditions. Without it they get the placeholder.
    #[arg(long, env = "UPLOAD_ONCE_HEIF_CONVERT", default_value = "heif-convert")]
    pub heif_convert: PathBuf,

    /// The `ffprobe` that reads what a video holds.
    #[arg(long, env = "UPLOAD_ONCE_FFPROBE", default_value = "ffprobe")]
    pub ffprobe: PathBuf,

    /// How many videos are made shareable at once on this instance (a
    /// transcode takes every core it is given).
    #[arg(long, env = "UPLOAD_ONCE_VIDEO_WORKERS", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=16))]
    pub video_workers: u16,

    /// How long one run of ffmpeg or ffprobe may take before it is killed
    /// (the video then gets the placeholder).
    #[arg(long, env = "UPLOAD_ONCE_VIDEO_TIMEOUT", default_value = "20m", value_parser = parse_duration)]
    pub video_timeout: Duration,

    /// The address space one run of ffmpeg or ffprobe may take.
    #[arg(long, env = "UPLOAD_ONCE_VIDEO_MEMORY", default_value = "2GiB", value_parser = parse_bytes)]
    pub video_memory: u64,

    /// Videos longer than this are not made shareable: the host gets the
    /// original, the wall the placeholder with the reason.
    #[arg(long, env = "UPLOAD_ONCE_VIDEO_MAX_DURATION", default_value = "10m", value_parser = parse_duration)]
    pub video_max_duration: Duration,

    /// Where a video job copies the original and writes its shareable MP4
    /// (a directory of its own per job, removed when the job ends); the
    /// system's temporary directory by default. It needs room for twice
    /// the largest video being processed at once.
    #[arg(long, env = "UPLOAD_ONCE_VIDEO_SCRATCH_DIR")]
    pub video_scratch_dir: Option<PathBuf>,

    /// Create this event at startup (if missing) and print its guest, host
    /// and wall links.
    #[arg(long, env = "UPLOAD_ONCE_DEMO_EVENT")]
    pub demo_event: Option<String>,

    /// The demo event's file size limit in bytes.
    #[arg(long, env = "UPLOAD_ONCE_DEMO_MAX_FILE_BYTES", default_value_t = 200_000_000)]
    pub demo_max_file_bytes: u64,

    /// The demo event's allowed types.
    #[arg(long, env = "UPLOAD_ONCE_DEMO_ALLOWED_TYPES", default_value = "image/*,video/*", value_delimiter = ',')]
    pub demo_allowed_types: Vec<String>,

    /// Where uploaded bytes live: `local` (files under the data directory,
    /// one machine) or `s3` (an S3-compatible bucket; credentials from
    /// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN).
    #[arg(long, env = "UPLOAD_ONCE_STORAGE", value_enum, default_value = "local")]
    pub storage: StorageKind,

    /// S3 endpoint URL, e.g. `https://s3.eu-west-1.amazonaws.com` (https
    /// needs a build with the `s3-tls` feature).
    #[arg(long, env = "UPLOAD_ONCE_S3_ENDPOINT")]
    pub s3_endpoint: Option<String>,

    /// S3 bucket name.
    #[arg(long, env = "UPLOAD_ONCE_S3_BUCKET")]
    pub s3_bucket: Option<String>,

    /// S3 region (part of every signature).
    #[arg(long, env = "UPLOAD_ONCE_S3_REGION", default_value = "us-east-1")]
    pub s3_region: String,

    /// S3 URL style: `path` or `virtual-host`.
    #[arg(long, env = "UPLOAD_ONCE_S3_URL_STYLE", value_enum, default_value = "path")]
    pub s3_url_style: S3UrlStyle,

    /// Sign `If-None-Match: *` into every upload URL, so a stored object is
    /// never replaced. Turn off only for a store without conditional writes.
    #[arg(long, env = "UPLOAD_ONCE_S3_CONDITIONAL_PUT", default_value_t = true, action = clap::ArgAction::Set)]
    pub s3_conditional_put: bool,

    /// The key that signs upload and media URLs, as hex (at least 32
    /// bytes). Several instances behind one load balancer must share it.
    /// Default: `<data-dir>/signing.key`, created on first start.
    #[arg(long, env = "UPLOAD_ONCE_SIGNING_KEY", hide_env_values = true)]
    pub signing_key: Option<Secret>,

    /// The id media links name the signing key by (`kid`): 1-32 of
    /// `A-Z a-z 0-9 _ -`. Default: derived from the key (the same on every
    /// instance sharing it).
    #[arg(long, env = "UPLOAD_ONCE_SIGNING_KEY_ID")]
    pub signing_key_id: Option<String>,

    /// A key that signed before the current one, still accepted so that the
    /// links and upload URLs it signed keep working until they expire:
    /// `<id>:<hex>`, or the hex alone (its id derived, as for the current
    /// key). Repeatable, or comma-separated in the environment. To rotate:
    /// make the old key a previous key and give a new `--signing-key`; drop
    /// the previous key once `--media-url-ttl` has passed.
    #[arg(
        long = "previous-signing-key",
        env = "UPLOAD_ONCE_PREVIOUS_SIGNING_KEYS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub previous_signing_keys: Vec<Secret>,

    /// How long a media link (display, thumbnail, original) works; links are
    /// handed out afresh with every status, wall page and host list, rounded
    /// up to a quarter of this (at most a day) so that browsers' caches hold.
    #[arg(long, env = "UPLOAD_ONCE_MEDIA_URL_TTL", default_value = "7d", value_parser = parse_duration)]
    pub media_url_ttl: Duration,

    /// Serve the web pages from this directory (default: `www` if present).
    #[arg(long, env = "UPLOAD_ONCE_WWW_DIR")]
    pub www_dir: Option<PathBuf>,

    /// Serve the built npm package under `/pkg/` from this directory
    /// (default: `pkg` if present).
    #[arg(long, env = "UPLOAD_ONCE_PKG_DIR")]
    pub pkg_dir: Option<PathBuf>,

    /// How log lines are written: `json` (one object per line, each event
    /// of a request with its `request_id`) or `text` (for a terminal).
    /// `RUST_LOG` filters them.
    #[arg(long, env = "UPLOAD_ONCE_LOG_FORMAT", value_enum, default_value = "json")]
    pub log_format: crate::logs::LogFormat,

    /// Test-only hooks (`POST /v1/admin/test-hooks`): only in a build with
    /// the `test-hooks` feature, which production builds leave out.
    #[cfg(feature = "test-hooks")]
    #[arg(long, env = "UPLOAD_ONCE_TEST_HOOKS", hide = true)]
    pub test_hooks: bool,

    /// Quotas, rate limits, timeouts, the concurrency limit and the
    /// shutdown deadline (limits.rs).
    #[command(flatten)]
    pub limits: limits::LimitsConfig,
}

impl Config {
    /// The configuration with every default and no flags.
    pub fn defaults() -> Config {
        Config::parse_from(["upload-once-server"])
    }

    /// Checks rules between flags.
    pub fn validate(&self) -> Result<()> {
        if self.url_ttl.is_zero() || self.attempt_ttl.is_zero() {
            return Err(Error::Config("--url-ttl and --attempt-ttl must be positive".into()));
        }
        if self.record_retention.is_zero() {
            return Err(Error::Config(
                "--record-retention must be positive: a guest's page may still ask about an attempt that ended".into(),
            ));
        }
        if self.rejected_retention.is_zero() {
            return Err(Error::Config(
                "--rejected-retention must be positive: the host needs time to reverse a rejection".into(),
            ));
        }
        if self.url_ttl >= self.attempt_ttl {
            return Err(Error::Config(format!(
                "--url-ttl ({:?}) must be shorter than --attempt-ttl ({:?}): a signed URL must never outlive its attempt",
                self.url_ttl, self.attempt_ttl
            )));
        }
        if self.part_size < crate::rules::multipart::MIN_PART_SIZE {
            return Err(Error::Config(format!(
                "--part-size ({} bytes) must be at least 5 MiB ({} bytes), S3's minimum for every part but the last",
                self.part_size,
                crate::rules::multipart::MIN_PART_SIZE
            )));
        }
        if self.storage == StorageKind::S3 && (self.s3_endpoint.is_none() || self.s3_bucket.is_none()) {
            return Err(Error::Config("--storage s3 needs --s3-endpoint and --s3-bucket".into()));
        }
        if let Some(key) = &self.signing_key {
            if hex::decode(&key.0).map_or(true, |k| k.len() < 32) {
                return Err(Error::Config("--signing-key must be hex of at least 32 bytes (64 hex digits)".into()));
            }
        }
        if self.media_url_ttl.as_secs() < 60 {
            return Err(Error::Config("--media-url-ttl must be at least a minute".into()));
        }
        if let Some(id) = &self.signing_key_id {
            if !crate::secrets::is_valid_key_id(id) {
                return Err(Error::Config("--signing-key-id must be 1-32 of A-Z a-z 0-9 _ -".into()));
            }
        }
        let mut ids = Vec::new();
        for key in &self.previous_signing_keys {
            let (id, _) = parse_previous_key(&key.0)?;
            if ids.contains(&id) || self.signing_key_id.as_ref() == Some(&id) {
                return Err(Error::Config(format!("--previous-signing-key: the key id `{id}` is given twice")));
            }
            ids.push(id);
        }
        self.limits.validate()?;
        for origin in &self.allowed_origins {
            if !is_valid_origin(origin) {
                return Err(Error::Config(format!(
                    "--allowed-origin `{origin}` must look like https://example.com (scheme, host, optional port, no path)"
                )));
            }
        }
        for origin in &self.page_api_origins {
            if !is_valid_origin(origin) {
                return Err(Error::Config(format!(
                    "--page-api-origin `{origin}` must look like https://api.example.com (scheme, host, optional port, no path)"
                )));
            }
        }
        Ok(())
    }

    /// The public base URL without a trailing slash.
    pub fn public_base(&self) -> String {
        match &self.public_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => format!("http://{}", self.listen),
        }
    }

    /// How the renditions and the live walls are tuned.
    pub fn media_settings(&self) -> crate::media::MediaSettings {
        crate::media::MediaSettings {
            workers: usize::from(self.rendition_workers),
            session_pixels: self.render_megapixels_per_session.saturating_mul(1_000_000),
            video_workers: usize::from(self.video_workers),
            video_limits: crate::media::video::VideoLimits {
                timeout: self.video_timeout,
                memory: self.video_memory,
                max_duration: self.video_max_duration,
                scratch: self.video_scratch_dir.clone(),
            },
            ..Default::default()
        }
    }

    /// The session lifetime actually used: at least the attempt TTL.
    pub fn effective_session_ttl(&self) -> Duration {
        self.session_ttl.max(self.attempt_ttl)
    }
}

/// Parses a `--previous-signing-key`: `<id>:<hex>`, or the hex alone (its
/// id derived from the key).
pub fn parse_previous_key(text: &str) -> Result<(String, Vec<u8>)> {
    let (id, hex_key) = match text.split_once(':') {
        Some((id, key)) => (Some(id.trim()), key.trim()),
        None => (None, text.trim()),
    };
    let key = hex::decode(hex_key).ok().filter(|k| k.len() >= 32).ok_or_else(|| {
        Error::Config("--previous-signing-key must be <id>:<hex> or <hex>, the key at least 32 bytes".into())
    })?;
    let id = id.map(str::to_owned).unwrap_or_else(|| crate::secrets::derived_key_id(&key));
    if !crate::secrets::is_valid_key_id(&id) {
        return Err(Error::Config(format!("--previous-signing-key: `{id}` is not a key id (1-32 of A-Z a-z 0-9 _ -)")));
    }
    Ok((id, key))
}
