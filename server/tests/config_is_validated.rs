//! The configuration is checked before the server starts: a signed URL
//! must never outlive its attempt, origins must be origins, durations must
//! be durations, sizes sizes, parts at least S3's smallest — and a guest
//! session lasts at least as long as the attempts made in it.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;
use support::{Options, TestServer};
use upload_once_core::time::parse_rfc3339;
use upload_once_server::clock::{Clock, ManualClock};
use upload_once_server::config::{Config, parse_bytes, parse_duration};
use upload_once_server::{Error, build_state};

const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;

fn config_in(dir: &std::path::Path) -> Config {
    let mut c = Config::defaults();
    c.data_dir = dir.join("data");
    c.listen = "127.0.0.1:0".parse().unwrap();
    c.admin_token = Some("admin".into());
    c
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

#[tokio::test]
async fn a_url_ttl_not_shorter_than_the_attempt_ttl_is_refused_and_the_server_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let defaults = config_in(dir.path());
    defaults.validate().expect("the defaults are valid");
    assert!(defaults.url_ttl < defaults.attempt_ttl);

    for (url_ttl, attempt_ttl) in
        [(secs(3600), secs(3600)), (secs(7200), secs(3600)), (secs(0), secs(3600)), (secs(60), secs(0))]
    {
        let mut c = config_in(dir.path());
        c.url_ttl = url_ttl;
        c.attempt_ttl = attempt_ttl;
        let what = format!("url_ttl {url_ttl:?}, attempt_ttl {attempt_ttl:?}");
        assert!(matches!(c.validate(), Err(Error::Config(_))), "{what}");
        let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(0));
        assert!(matches!(build_state(c.clone(), clock).await, Err(Error::Config(_))), "{what}: build_state");
        assert!(!c.data_dir.exists(), "{what}: refused before touching the data directory");
        // The whole server refuses to start (and returns rather than serve).
        let run = tokio::time::timeout(Duration::from_secs(5), upload_once_server::run(c)).await;
        assert!(matches!(run, Ok(Err(Error::Config(_)))), "{what}: run");
    }

    let mut c = config_in(dir.path());
    c.url_ttl = secs(3599);
    c.attempt_ttl = secs(3600);
    c.validate().expect("just shorter is fine");
}

#[test]
fn origins_must_be_scheme_host_and_port() {
    let dir = tempfile::tempdir().unwrap();
    let good = [
        "http://app.example",
        "https://app.example",
        "https://app.example:8443",
        "http://localhost:5173",
        "http://127.0.0.1:3000",
    ];
    let mut c = config_in(dir.path());
    c.allowed_origins = good.iter().map(|s| s.to_string()).collect();
    c.validate().expect("valid origins");

    for bad in [
        "app.example",
        "http://app.example/",
        "https://app.example/",
        "ftp://app.example",
        "*",
        "",
        "//app.example",
        "ws://app.example",
    ] {
        let mut c = config_in(dir.path());
        c.allowed_origins = vec!["http://fine.example".into(), bad.into()];
        assert!(matches!(c.validate(), Err(Error::Config(_))), "{bad:?} accepted");
    }
}

/// The refusal says origins are "scheme, host, optional port, no path";
/// `Config::validate` only checks the scheme and a trailing `/`.
#[test]
fn an_origin_with_a_path_or_without_a_host_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["http://app.example/app", "https://app.example/a/b", "http://", "https://app.example?x=1"] {
        let mut c = config_in(dir.path());
        c.allowed_origins = vec![bad.into()];
        assert!(matches!(c.validate(), Err(Error::Config(_))), "{bad:?} accepted: it can never match an Origin header");
    }
}

#[test]
fn durations_parse_with_units_and_junk_is_refused() {
    let cases = [
        ("500ms", Duration::from_millis(500)),
        ("90s", secs(90)),
        ("15m", secs(15 * 60)),
        ("2h", secs(2 * 3600)),
        ("7d", secs(7 * 86_400)),
        ("30", secs(30)),
        (" 15m ", secs(15 * 60)),
        ("0s", secs(0)),
        ("1h30m", secs(90 * 60)),
        ("1h 30m", secs(90 * 60)),
        ("1.5h", secs(90 * 60)),
        ("2 days", secs(2 * 86_400)),
        ("1w", secs(7 * 86_400)),
        ("PT15M", secs(15 * 60)),
        ("P7D", secs(7 * 86_400)),
    ];
    for (text, expected) in cases {
        assert_eq!(parse_duration(text), Ok(expected), "{text:?}");
    }
    // Uppercase units are refused rather than guessed (15M: minutes or
    // months?); months and years are not of fixed length.
    for junk in ["", " ", "abc", "ms", "s", "10x", "-5s", "5s ago", "15M", "2H", "1mo", "1y", "0x10s", "١٠s"] {
        assert!(parse_duration(junk).is_err(), "{junk:?} accepted as {:?}", parse_duration(junk));
    }
}

#[test]
fn sizes_parse_with_binary_units_and_junk_is_refused() {
    const MIB: u64 = 1 << 20;
    let cases = [
        ("8388608", 8 * MIB),
        ("8MiB", 8 * MIB),
        ("32 MiB", 32 * MIB),
        ("5M", 5 * MIB),
        ("1GiB", 1 << 30),
        ("512KiB", 512 << 10),
    ];
    for (text, expected) in cases {
        assert_eq!(parse_bytes(text), Ok(expected), "{text:?}");
    }
    for junk in ["", "MiB", "8 MB", "8mib", "-5MiB", "1.5MiB", "99999999999999999999", "17179869184GiB"] {
        assert!(parse_bytes(junk).is_err(), "{junk:?} accepted as {:?}", parse_bytes(junk));
    }
    let defaults = Config::defaults();
    assert_eq!((defaults.multipart_threshold, defaults.part_size), (32 * MIB, 8 * MIB));
}

#[tokio::test]
async fn parts_smaller_than_five_mib_are_refused_and_the_server_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config_in(dir.path());
    c.part_size = 5 * (1 << 20) - 1;
    assert!(matches!(c.validate(), Err(Error::Config(ref m)) if m.contains("--part-size")), "{:?}", c.validate());
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(0));
    assert!(matches!(build_state(c.clone(), clock).await, Err(Error::Config(_))));
    c.part_size = 5 * (1 << 20);
    c.validate().expect("5 MiB is S3's smallest part, and fine");
}

/// A duration too long to represent is junk too: refused, not a panic (or,
/// in a release build, a silently wrapped small number).
#[test]
fn an_out_of_range_duration_is_refused_not_a_panic() {
    for text in ["300000000000d", "18446744073709551615s", "9999999999999999h"] {
        let result = std::panic::catch_unwind(|| parse_duration(text));
        assert!(matches!(result, Ok(Err(_))), "{text:?}: {:?}", result.map_err(|_| "panicked"));
    }
}

#[test]
fn the_effective_session_ttl_is_never_shorter_than_the_attempt_ttl() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config_in(dir.path());
    assert!(c.effective_session_ttl() >= c.attempt_ttl, "defaults");
    c.session_ttl = secs(3600);
    c.attempt_ttl = secs(86_400);
    assert_eq!(c.effective_session_ttl(), secs(86_400));
    c.session_ttl = secs(2 * 86_400);
    assert_eq!(c.effective_session_ttl(), secs(2 * 86_400));
}

#[tokio::test]
async fn a_session_lasts_at_least_the_attempt_ttl() {
    let server = TestServer::start_with(Options {
        session_ttl: Some(secs(3600)),
        attempt_ttl: Some(secs(2 * 3600)),
        url_ttl: Some(secs(600)),
        ..Default::default()
    })
    .await;
    let event = server.create_event("long-party", 1000, &["image/*"], "required").await;
    let joined_at = server.state.now();
    let r = server
        .call(
            reqwest::Method::POST,
            "/v1/events/long-party/sessions",
            None,
            Some(serde_json::json!({"guest_code": event.guest_code})),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let session: Value = r.json().await.unwrap();
    let expires_at = parse_rfc3339(session["expires_at"].as_str().unwrap()).unwrap();
    assert!(expires_at >= joined_at + 2 * HOUR, "the session ends {} ms after joining", expires_at - joined_at);

    // And it really works that long: an attempt authorized at once can be
    // confirmed just before it expires, past the configured session TTL.
    let guest =
        support::Guest { server: &server, event, session: session["session_token"].as_str().unwrap().to_owned() };
    let (id, _) = guest.authorize_and_put(b"abc").await;
    server.clock.advance(2 * HOUR - 1000);
    assert_eq!(guest.confirm(id, 3).await.status(), StatusCode::OK);
}

/// Every attempt must be confirmable until the `expires_at` authorize
/// reported for it. An attempt authorized late in a session is given the
/// full attempt TTL, but the session — the only credential that can
/// confirm it — ends first.
#[tokio::test]
async fn an_attempt_can_be_confirmed_until_its_reported_expiry_even_late_in_a_session() {
    let server = TestServer::start_with(Options {
        session_ttl: Some(secs(2 * 3600)),
        attempt_ttl: Some(secs(3600)),
        url_ttl: Some(secs(600)),
        ..Default::default()
    })
    .await;
    let guest = server.guest().await; // session ends at t0 + 2 h
    server.clock.advance(90 * MINUTE);
    let (id, a) = guest.authorize_and_put(b"abc").await;
    let attempt_expires = parse_rfc3339(&a.expires_at).unwrap();

    // Just before the attempt's reported expiry (t0 + 2h30 as things are).
    server.clock.set(attempt_expires - 1000);
    let r = guest.confirm(id, 3).await;
    let status = r.status();
    assert_eq!(status, StatusCode::OK, "confirm before the reported expiry: {}", r.text().await.unwrap());
}
