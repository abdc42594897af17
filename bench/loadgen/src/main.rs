//! Load generator for the reference server.
//!
//! ```text
//! upload-once-loadgen --base http://127.0.0.1:8080 --admin TOKEN [--clients 64] [--confirms 4000]
//!                     [--storm-attempts 10] [--storm-requests 1000] [--out results.json]
//! ```
//!
//! 1. Confirm throughput: attempts are authorized and their bytes stored
//!    first; then `clients` concurrent clients confirm them as fast as they
//!    can. Baseline in the same run: the same clients on `GET /healthz`.
//! 2. Duplicate storm: `storm-requests` confirms at once, spread over
//!    `storm-attempts` attempts; exactly one media row per attempt must come
//!    out, and every answer for an attempt must carry the same media id.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use reqwest::Client;
use serde_json::{Value, json};
use uuid::Uuid;

type Result<T> = std::result::Result<T, String>;

/// Load generator for the reference server.
#[derive(Debug, clap::Parser)]
#[command(name = "upload-once-loadgen", version)]
struct Args {
    /// The server's base URL, e.g. `http://127.0.0.1:8080`.
    #[arg(long)]
    base: String,
    /// The server's admin token.
    #[arg(long)]
    admin: String,
    /// Concurrent clients of the throughput run.
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// Confirms of the throughput run.
    #[arg(long, default_value_t = 4000)]
    confirms: usize,
    /// Attempts the duplicate storm confirms.
    #[arg(long, default_value_t = 10)]
    storm_attempts: usize,
    /// Confirms of the duplicate storm, spread over its attempts.
    #[arg(long, default_value_t = 1000)]
    storm_requests: usize,
    /// Also write the results (JSON) to this file.
    #[arg(long)]
    out: Option<String>,
}

async fn json_ok(r: reqwest::Response) -> Result<Value> {
    let status = r.status();
    let body: Value = r.json().await.map_err(|e| e.to_string())?;
    if status.is_success() { Ok(body) } else { Err(format!("{status}: {body}")) }
}

struct Event {
    slug: String,
    code: String,
    host: String,
}

async fn create_event(http: &Client, a: &Args) -> Result<Event> {
    let slug = format!("load-{}", &Uuid::new_v4().simple().to_string()[..10]);
    let v = json_ok(
        http.post(format!("{}/v1/events", a.base))
            .bearer_auth(&a.admin)
            .json(&json!({"slug": slug, "title": "load", "max_file_bytes": 1_000_000, "allowed_types": ["*/*"], "moderation": "none"}))
            .send()
            .await
            .map_err(|e| e.to_string())?,
    )
    .await?;
    Ok(Event {
        slug,
        code: v["guest_code"].as_str().unwrap_or_default().into(),
        host: v["host_token"].as_str().unwrap_or_default().into(),
    })
}

async fn join(http: &Client, a: &Args, e: &Event) -> Result<String> {
    let v = json_ok(
        http.post(format!("{}/v1/events/{}/sessions", a.base, e.slug))
            .json(&json!({"guest_code": e.code}))
            .send()
            .await
            .map_err(|e| e.to_string())?,
    )
    .await?;
    Ok(v["session_token"].as_str().unwrap_or_default().into())
}

/// Authorizes an attempt and stores its bytes; returns its id.
async fn prepared_attempt(http: &Client, a: &Args, e: &Event, session: &str) -> Result<Uuid> {
    let id = Uuid::new_v4();
    // Bytes of its own: the server stores the same bytes once per event (a
    // confirm of bytes already shared answers 409).
    let body = id.as_bytes().repeat(16);
    let v = json_ok(
        http.post(format!("{}/v1/events/{}/attempts", a.base, e.slug))
            .bearer_auth(session)
            .json(&json!({"id": id, "filename": "load.bin", "size": body.len(), "content_type": "application/octet-stream"}))
            .send()
            .await
            .map_err(|e| e.to_string())?,
    )
    .await?;
    let upload = &v["upload"];
    let mut put = http.put(upload["url"].as_str().ok_or("no upload url")?).body(body);
    for (k, val) in upload["headers"].as_object().ok_or("no headers")? {
        put = put.header(k, val.as_str().unwrap_or_default());
    }
    let r = put.send().await.map_err(|e| e.to_string())?;
    if !r.status().is_success() {
        return Err(format!("PUT {}", r.status()));
    }
    Ok(id)
}

async fn confirm(http: &Client, a: &Args, session: &str, id: Uuid) -> Result<(u16, String)> {
    let r = http
        .post(format!("{}/v1/attempts/{id}/confirm", a.base))
        .bearer_auth(session)
        .header("Idempotency-Key", id.to_string())
        .json(&json!({"size": 256, "content_type": "application/octet-stream"}))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = r.status().as_u16();
    let v: Value = r.json().await.map_err(|e| e.to_string())?;
    Ok((status, v["id"].as_str().unwrap_or_default().to_owned()))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * (sorted.len() as f64 - 1.0)).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn summary(mut ms: Vec<f64>, elapsed: Duration) -> Value {
    ms.sort_by(|a, b| a.total_cmp(b));
    json!({
        "requests": ms.len(),
        "per_sec": ms.len() as f64 / elapsed.as_secs_f64(),
        "p50_ms": percentile(&ms, 50.0),
        "p99_ms": percentile(&ms, 99.0),
        "max_ms": ms.last().copied().unwrap_or(0.0),
    })
}

async fn run(a: Arc<Args>) -> Result<Value> {
    let http = Client::builder()
        .pool_max_idle_per_host(2048)
        .timeout(Duration::from_secs(120))
        .build()
        .map_err(|e| e.to_string())?;
    let event = Arc::new(create_event(&http, &a).await?);

    // Sessions, and the attempts to confirm, prepared beforehand.
    let mut sessions = Vec::new();
    for _ in 0..a.clients {
        sessions.push(join(&http, &a, &event).await?);
    }
    let per_client = a.confirms.div_ceil(a.clients);
    let prepared: Vec<Vec<Uuid>> = futures_util::future::try_join_all(sessions.iter().map(|s| {
        let (http, a, event, s) = (http.clone(), a.clone(), event.clone(), s.clone());
        async move {
            let mut ids = Vec::new();
            for _ in 0..per_client {
                ids.push(prepared_attempt(&http, &a, &event, &s).await?);
            }
            Ok::<_, String>(ids)
        }
    }))
    .await?;

    // 1. Confirm throughput.
    let started = Instant::now();
    let latencies: Vec<Vec<f64>> =
        futures_util::future::try_join_all(prepared.iter().zip(&sessions).map(|(ids, s)| {
            let (http, a, s, ids) = (http.clone(), a.clone(), s.clone(), ids.clone());
            async move {
                let mut out = Vec::new();
                for id in ids {
                    let t = Instant::now();
                    let (status, _) = confirm(&http, &a, &s, id).await?;
                    if status != 200 {
                        return Err(format!("confirm answered {status}"));
                    }
                    out.push(t.elapsed().as_secs_f64() * 1000.0);
                }
                Ok::<_, String>(out)
            }
        }))
        .await?;
    let confirm_summary = summary(latencies.concat(), started.elapsed());

    // Baseline: the same clients on a trivial endpoint.
    let total = per_client * a.clients;
    let done = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let health: Vec<Vec<f64>> = futures_util::future::try_join_all((0..a.clients).map(|_| {
        let (http, a, done) = (http.clone(), a.clone(), done.clone());
        async move {
            let mut out = Vec::new();
            while done.fetch_add(1, Ordering::Relaxed) < total {
                let t = Instant::now();
                let r = http.get(format!("{}/healthz", a.base)).send().await.map_err(|e| e.to_string())?;
                let _ = r.bytes().await;
                out.push(t.elapsed().as_secs_f64() * 1000.0);
            }
            Ok::<_, String>(out)
        }
    }))
    .await?;
    let health_summary = summary(health.concat(), started.elapsed());

    // 2. Duplicate storm.
    let storm_session = join(&http, &a, &event).await?;
    let mut storm_ids = Vec::new();
    for _ in 0..a.storm_attempts {
        storm_ids.push(prepared_attempt(&http, &a, &event, &storm_session).await?);
    }
    let started = Instant::now();
    let answers: Vec<(Uuid, u16, String, f64)> = futures_util::future::try_join_all((0..a.storm_requests).map(|i| {
        let (http, a, s, id) = (http.clone(), a.clone(), storm_session.clone(), storm_ids[i % storm_ids.len()]);
        async move {
            let t = Instant::now();
            let (status, media) = confirm(&http, &a, &s, id).await?;
            Ok::<_, String>((id, status, media, t.elapsed().as_secs_f64() * 1000.0))
        }
    }))
    .await?;
    let storm_elapsed = started.elapsed();
    let mut per_attempt: BTreeMap<Uuid, BTreeSet<String>> = BTreeMap::new();
    let mut failures = 0;
    for (id, status, media, _) in &answers {
        if *status == 200 {
            per_attempt.entry(*id).or_default().insert(media.clone());
        } else {
            failures += 1;
        }
    }
    // Every page of the host's list (it is paged: 100 by default, 500 at most).
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut url = format!("{}/v1/events/{}/media?limit=500", a.base, event.slug);
        if let Some(c) = &cursor {
            url.push_str(&format!("&cursor={c}"));
        }
        let page = json_ok(http.get(url).bearer_auth(&event.host).send().await.map_err(|e| e.to_string())?).await?;
        listed.extend(page["media"].as_array().cloned().unwrap_or_default());
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    let storm_set: BTreeSet<String> = storm_ids.iter().map(|u| u.to_string()).collect();
    let media_rows =
        listed.iter().filter(|x| x["attempt_id"].as_str().is_some_and(|id| storm_set.contains(id))).count();
    let distinct: usize = per_attempt.values().map(BTreeSet::len).sum();
    let storm_latency = summary(answers.iter().map(|x| x.3).collect(), storm_elapsed);
    Ok(json!({
        "clients": a.clients,
        "confirm": confirm_summary,
        "healthz": health_summary,
        "storm": {
            "attempts": a.storm_attempts,
            "requests": a.storm_requests,
            "failures": failures,
            "media_rows": media_rows,
            "distinct_media_ids": distinct,
            "p50_ms": storm_latency["p50_ms"],
            "p99_ms": storm_latency["p99_ms"],
        },
    }))
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Arc::new(<Args as clap::Parser>::parse());
    match run(args.clone()).await {
        Ok(result) => {
            let text = serde_json::to_string_pretty(&result).unwrap_or_default();
            println!("{text}");
            if let Some(path) = &args.out
                && let Err(e) = std::fs::write(path, &text)
            {
                eprintln!("loadgen: {path}: {e}");
                return std::process::ExitCode::FAILURE;
            }
            let storm = &result["storm"];
            if storm["media_rows"] != storm["attempts"]
                || storm["distinct_media_ids"] != storm["attempts"]
                || storm["failures"] != 0
            {
                eprintln!("loadgen: the duplicate storm did not come out as exactly one media row per attempt");
                return std::process::ExitCode::FAILURE;
            }
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("loadgen: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
