//! # upload-once-server
//!
//! The reference server of upload-once: it authorizes attempts minted by
//! the browser, signs direct-to-storage PUT URLs (one for a small file, one
//! per part of a large one, which the store then assembles), confirms each
//! attempt exactly once (create-or-return, under a row lock), answers what
//! became of any attempt, expires what was never confirmed, and lets hosts
//! moderate what reaches the wall.
//!
//! [`routes::app`] builds the router over an [`state::AppState`]; the
//! record store ([`store::RecordStore`]) and the object store
//! ([`storage::ObjectStore`]) are traits, so other backends plug in without
//! touching a handler.
#![deny(missing_docs)]

pub mod assemblies;
pub mod clock;
pub mod config;
pub mod error;
pub mod limits;
pub mod logs;
pub mod media;
pub mod metrics;
pub mod openapi;
pub mod ops;
pub mod private_files;
pub mod put_slots;
pub mod routes;
pub mod rules;
pub mod secrets;
pub mod services;
pub mod shutdown;
pub mod state;
pub mod storage;
pub mod store;
#[cfg(feature = "test-hooks")]
pub mod test_hooks;

use std::path::Path;
use std::sync::Arc;

pub use config::Config;
pub use error::{Error, Result};
use upload_once_core::wire::{CreateEventRequest, ModerationPolicy};

use crate::clock::{Clock, SystemClock};
use crate::config::{S3UrlStyle, StorageKind};
use crate::secrets::{Signer, new_token, random_bytes, token_hash};
use crate::state::AppState;
use crate::storage::ObjectStore;
use crate::storage::intercept::Intercepted;
use crate::storage::local::LocalObjectStore;
use crate::storage::s3::{S3ObjectStore, S3Settings};
use crate::store::RecordStore;
use crate::store::sql::SqlStore;

/// Reads the signing key from `<data-dir>/signing.key`, creating it on
/// first start, so signed URLs survive a restart.
pub fn load_signing_key(data_dir: &Path) -> Result<Vec<u8>> {
    let path = data_dir.join("signing.key");
    if let Ok(text) = std::fs::read_to_string(&path) {
        if let Some(key) = hex::decode(text.trim()).ok().filter(|k| k.len() >= 32) {
            return Ok(key);
        }
        return Err(Error::Config(format!("{} is not a hex key of at least 32 bytes", path.display())));
    }
    let mut key = vec![0u8; 32];
    random_bytes(&mut key);
    // Readable by the server's user alone from its first byte.
    crate::private_files::write_new(&path, hex::encode(&key).as_bytes())?;
    Ok(key)
}

/// The signing key: `--signing-key` when given (instances behind one load
/// balancer share it), else `<data-dir>/signing.key`.
pub fn signing_key(config: &Config) -> Result<Vec<u8>> {
    match &config.signing_key {
        Some(key) => hex::decode(&key.0)
            .ok()
            .filter(|k| k.len() >= 32)
            .ok_or_else(|| Error::Config("--signing-key must be hex of at least 32 bytes".into())),
        None => load_signing_key(&config.data_dir),
    }
}

/// The signer: the signing key under its id (`--signing-key-id`, else
/// derived), and the previous keys that still verify.
pub fn signer(config: &Config) -> Result<Signer> {
    let key = signing_key(config)?;
    let id = config.signing_key_id.clone().unwrap_or_else(|| crate::secrets::derived_key_id(&key));
    let previous = config
        .previous_signing_keys
        .iter()
        .map(|k| crate::config::parse_previous_key(&k.0))
        .collect::<Result<Vec<_>>>()?;
    Ok(Signer::with_keys((id, key), previous))
}

/// Opens the record store named by a database URL.
pub async fn open_records(url: &str) -> Result<Arc<dyn RecordStore>> {
    Ok(Arc::new(SqlStore::open(url).await?))
}

/// The object store the configuration names, opened.
pub struct OpenedObjects {
    /// Where bytes live.
    pub objects: Arc<dyn ObjectStore>,
    /// The same store when it is the embedded one: this server serves its
    /// PUT endpoint and clears its temporary files.
    pub local: Option<Arc<LocalObjectStore>>,
}

/// Opens the object store the configuration names.
pub fn open_objects(config: &Config, signer: &Signer, clock: Arc<dyn Clock>) -> Result<OpenedObjects> {
    match config.storage {
        StorageKind::Local => {
            let local = Arc::new(LocalObjectStore::open(
                &config.data_dir.join("objects"),
                &config.public_base(),
                signer.clone(),
            )?);
            Ok(OpenedObjects { objects: local.clone(), local: Some(local) })
        }
        StorageKind::S3 => {
            let (access_key, secret_key, session_token) = S3Settings::credentials_from_env()?;
            let settings = S3Settings {
                endpoint: config.s3_endpoint.clone().unwrap_or_default(),
                bucket: config.s3_bucket.clone().unwrap_or_default(),
                region: config.s3_region.clone(),
                path_style: config.s3_url_style == S3UrlStyle::Path,
                conditional_put: config.s3_conditional_put,
                access_key,
                secret_key,
                session_token,
            };
            Ok(OpenedObjects { objects: Arc::new(S3ObjectStore::new(&settings, clock)?), local: None })
        }
    }
}

/// Builds the server state from a configuration, with the given clock.
pub async fn build_state(config: Config, clock: Arc<dyn Clock>) -> Result<AppState> {
    config.validate()?;
    // The data directory holds the signing key, the database and the
    // originals: the server's user's alone.
    private_files::create_dir_all(&config.data_dir)?;
    private_files::make_private(&config.data_dir)?;
    let signer = signer(&config)?;
    let metrics = Arc::new(metrics::Metrics::new());
    let OpenedObjects { objects: store, local: local_store } = open_objects(&config, &signer, clock.clone())?;
    #[allow(unused_mut)]
    let mut objects: Arc<dyn ObjectStore> = Arc::new(Intercepted::new(store, metrics::Measured(metrics.clone())));
    #[cfg(feature = "test-hooks")]
    let test_hooks = config.test_hooks.then(|| Arc::new(test_hooks::TestHooks::default()));
    #[cfg(feature = "test-hooks")]
    if let Some(hooks) = &test_hooks {
        tracing::warn!("--test-hooks is on: never use it in production");
        objects = Arc::new(Intercepted::new(objects, test_hooks::HeldHeads(hooks.clone())));
    }
    let database_url = match &config.database_url {
        Some(url) => url.clone(),
        None => {
            // Made private before SQLite opens it: its journal and shared
            // memory files take the database file's mode.
            let path = config.data_dir.join("upload-once.db");
            if !path.exists() {
                private_files::write_new(&path, b"")?;
            }
            format!("sqlite://{}", path.display())
        }
    };
    let sql = SqlStore::open(&database_url).await?;
    let widened = sql.widen_ipv6_blocks().await?;
    if widened > 0 {
        tracing::info!(widened, "IPv6 address blocks widened from /64 to /56, as clients are counted now");
    }
    let settings = config.media_settings();
    let video = media::video::VideoTools::find(&config.ffmpeg, &config.ffprobe, &settings.video_limits).await;
    match &video {
        Ok(tools) => tracing::info!("videos: posters and shareable MP4s by {}", tools.version),
        Err(why) => tracing::warn!("videos: no posters and no shareable videos, the wall shows a placeholder: {why}"),
    }
    let heic = media::heic::HeicTools::find(&config.heif_convert).await;
    match &heic {
        Ok(tools) => tracing::info!("HEIC photos: decoded by heif-convert ({})", tools.version),
        Err(why) => tracing::warn!("HEIC photos: not decoded, the wall shows a placeholder: {why}"),
    }
    // What ended on the placeholder because a tool was missing is made now
    // that it is here.
    let mut now_possible = Vec::new();
    if video.is_ok() {
        now_possible.push(media::jobs::reason_for_type("video/mp4"));
    }
    if heic.is_ok() {
        now_possible.extend(
            ["image/heic", "image/heif", "image/heic-sequence", "image/heif-sequence"]
                .map(media::jobs::reason_for_type),
        );
    }
    let media = media::MediaServices::new(sql.pool().clone(), settings, video, heic);
    match media.db.requeue_placeholders(&now_possible, clock.now()).await {
        Ok(0) => {}
        Ok(n) => tracing::info!("rendition jobs: {n} media waiting for a tool that is here now are queued again"),
        Err(e) => tracing::warn!("rendition jobs: could not queue again what waited for a tool: {e}"),
    }
    let records: Arc<dyn RecordStore> = Arc::new(sql);
    let admin_token: Arc<str> = config.admin_token.clone().unwrap_or_else(new_token).into();
    let ops = Arc::new(ops::Ops::default());
    let limits = Arc::new(limits::Limits::new(config.limits.clone())?);
    Ok(AppState {
        lifetimes: state::Lifetimes::new(&config, clock.clone()),
        links: state::Links::new(&config, signer, clock),
        config: Arc::new(config),
        records,
        objects,
        local_store,
        admin_token: state::AdminToken(admin_token),
        #[cfg(feature = "test-hooks")]
        test_hooks,
        ops,
        metrics,
        limits,
        media,
        assemblies: Default::default(),
    })
}

/// Creates the demo event if it is missing (or gives it a fresh host
/// token), and prints its links.
pub async fn ensure_demo_event(state: &AppState, slug: &str) -> Result<()> {
    let base = state.config.public_base();
    let (event, host_token) = match state.records.event_by_slug(slug).await? {
        Some(event) => {
            let host_token = new_token();
            state.records.set_host_token_hash(event.id, &token_hash(&host_token)).await?;
            (event, host_token)
        }
        None => {
            let request = CreateEventRequest {
                slug: slug.to_owned(),
                title: format!("{slug} (demo)"),
                max_file_bytes: state.config.demo_max_file_bytes,
                allowed_types: state.config.demo_allowed_types.clone(),
                moderation: ModerationPolicy::Required,
                dedup: Default::default(),
            };
            let (row, created) =
                routes::events::create_event_row(&state.records, &state.config, state.now(), &request).await?;
            (row, created.host_token)
        }
    };
    let code = &event.guest_code;
    println!("Demo event `{slug}` is ready.");
    println!("  Guest page: {base}/?event={slug}&code={code}");
    // The token goes in the fragment: never sent to a server, never in a Referer.
    println!("  Host page:  {base}/host.html?event={slug}#token={host_token}");
    println!("  Wall:       {base}/wall.html?event={slug}&code={code}");
    Ok(())
}

/// Writes a generated admin token to `admin-token` in `data_dir`, readable
/// by its owner alone (mode 0600, set as the file is created, so no other
/// user can read it for an instant). Its path.
pub fn keep_generated_admin_token(data_dir: &std::path::Path, token: &str) -> Result<std::path::PathBuf> {
    use std::io::Write;
    private_files::create_dir_all(data_dir)?;
    let path = data_dir.join("admin-token");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        // An older file keeps its mode when opened: set it again.
        if path.exists() {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        }
    }
    let mut file = options.open(&path)?;
    file.write_all(token.as_bytes())?;
    file.write_all(b"\n")?;
    Ok(path)
}

/// Runs the server until SIGINT or SIGTERM, then stops gracefully
/// ([`shutdown::serve`]).
pub async fn run(config: Config) -> Result<()> {
    let print_admin = config.admin_token.is_none();
    let sweep_interval = config.sweep_interval;
    let listen = config.listen;
    let demo = config.demo_event.clone();
    let state = build_state(config, Arc::new(SystemClock)).await?;
    if print_admin {
        // A secret is never printed: the generated token goes to a file only
        // its owner may read.
        let path = keep_generated_admin_token(&state.config.data_dir, &state.admin_token.0)?;
        println!("Admin token generated into {} (mode 0600; pass --admin-token to fix one)", path.display());
    }
    if let Some(slug) = demo {
        ensure_demo_event(&state, &slug).await?;
    }
    services::sweeper::spawn(state.clone(), sweep_interval);
    // Renditions are made as long as the server runs.
    let _workers = services::renditions::spawn(&state);
    if let Some(address) = state.config.metrics_listen {
        let metrics = tokio::net::TcpListener::bind(address).await?;
        println!("upload-once-server serving metrics on {}", metrics.local_addr()?);
        let app = routes::metrics_app(state.clone());
        tokio::spawn(async move {
            if let Err(e) = axum::serve(metrics, app).await {
                tracing::error!("the metrics listener stopped: {e}");
            }
        });
    }
    let listener = tokio::net::TcpListener::bind(listen).await?;
    println!("upload-once-server listening on {} (public URL {})", listener.local_addr()?, state.config.public_base());
    shutdown::serve(listener, state, async {
        shutdown::signal().await;
        tracing::info!("shutdown signal received");
    })
    .await;
    Ok(())
}
