//! A fault-injecting HTTP/1.1 reverse proxy, for tests only.
//!
//! ```text
//! upload-once-fault-proxy --listen 127.0.0.1:9000 --upstream http://127.0.0.1:8080
//! upload-once-fault-proxy --listen 127.0.0.1:0     # any free port; the upstream comes later
//! ```
//!
//! It prints `fault-proxy: listening on <address> → <upstream>` once it
//! listens, so a test can let it pick its own port (`:0`) and read it back.
//!
//! Put it between the browser and the reference server (and its storage:
//! start the server with `--public-url` pointing at the proxy). Tests drive
//! it through its admin API under `/__faults/`:
//!
//! - `POST /__faults/rules` `{"rules": [Rule, …]}` adds rules;
//! - `POST /__faults/reset` removes every rule and clears the logs;
//! - `POST /__faults/seed` `{"seed": 42}` seeds the random draws;
//! - `POST /__faults/release` forwards every request a `store_late` rule
//!   without `ms` holds (the test says when, not a timer);
//! - `POST /__faults/upstream` `{"upstream": "http://127.0.0.1:8080"}` sets
//!   where requests go (until then they are answered 502): the server's
//!   `--public-url` is the proxy, so the proxy starts first;
//! - `GET /__faults/log` → `{"faults": […], "requests": […], "in_flight": […], "held": […], "bytes_up": n}`:
//!   every fault injected and every request seen (forwarded or not), with
//!   times and the body bytes read from the client (`body_bytes`; their sum
//!   is `bytes_up`), once it is over; and the requests forwarded and not yet answered
//!   (the server is at work on them), with the time each was forwarded.
//!
//! A rule matches a method (optional) and a path pattern (`*` matches any
//! run of characters), and fires on the n-th match (`nth`, 1-based) or with
//! a probability (`probability`, seeded), at most `times` times:
//!
//! | action | what happens |
//! | --- | --- |
//! | `drop_before` | the connection is closed; nothing reaches the server |
//! | `drop_after` | the request is forwarded and fully answered upstream (committed), then the connection is closed without an answer |
//! | `cut_body` (`after_bytes`) | the request body is cut after N bytes, upstream and downstream connections dropped |
//! | `delay` (`ms`) | the request waits, then goes on |
//! | `status` (`status`, `retry_after`) | answered here with that status (503, 429 + Retry-After …) |
//! | `store_late` (`ms`, optional) | the whole request body is read from the client (then the request's id is in the log's `held`), the client's connection is closed without an answer, and the request is forwarded on its own `ms` later, or, without `ms`, when the test calls `POST /__faults/release`: the store finishes a PUT while the page that sent it is gone (a reload); the log has the forwarded request once it is answered |
//! | `hang_up` (`after_ms`, `jitter_ms`) | the request is forwarded, then both connections are closed `after_ms` (plus up to `jitter_ms`, seeded) later: a client that gives up, or a page reloaded, while the server works; the log says whether the server had answered (`status`) or was still at work (`status: null`) |
//!
//! Every response carries `Connection: close`, so a browser never replays a
//! request on a reused connection behind the test's back.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde::{Deserialize, Serialize};
use serde_json::json;

type Body = BoxBody<Bytes, std::io::Error>;
type Error = Box<dyn std::error::Error + Send + Sync>;

/// What a rule does.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Action {
    DropBefore,
    DropAfter,
    CutBody {
        after_bytes: u64,
    },
    Delay {
        ms: u64,
    },
    StoreLate {
        /// Forward this long after the body is held; without it, the
        /// request waits for `POST /__faults/release`.
        #[serde(default)]
        ms: Option<u64>,
    },
    Status {
        status: u16,
        #[serde(default)]
        retry_after: Option<String>,
    },
    HangUp {
        #[serde(default)]
        after_ms: u64,
        #[serde(default)]
        jitter_ms: u64,
    },
}

/// One fault rule.
#[derive(Clone, Debug, Deserialize, Serialize)]
struct Rule {
    #[serde(default)]
    method: Option<String>,
    path: String,
    #[serde(default)]
    nth: Option<u64>,
    #[serde(default)]
    probability: Option<f64>,
    #[serde(default)]
    times: Option<u64>,
    action: Action,
    /// Matches so far (set by the proxy).
    #[serde(default)]
    seen: u64,
    /// Injections so far (set by the proxy).
    #[serde(default)]
    fired: u64,
}

#[derive(Clone, Debug, Serialize)]
struct FaultLog {
    rule: usize,
    method: String,
    path: String,
    action: Action,
    at_ms: u128,
}

#[derive(Clone, Debug, Serialize)]
struct RequestLog {
    /// The request's number, in order of arrival (also in `in_flight`).
    id: u64,
    method: String,
    path: String,
    /// The query string (a part's number, for a storage PUT).
    query: String,
    /// The upstream status, or none when it was not forwarded / not answered.
    status: Option<u16>,
    forwarded: bool,
    fault: Option<String>,
    at_ms: u128,
    done_ms: u128,
    /// Bytes of the request body read from the client (what it sent, up to
    /// a cut).
    body_bytes: u64,
    #[serde(skip)]
    counted: Arc<AtomicU64>,
}

/// A request forwarded upstream and not answered yet.
#[derive(Clone, Debug, Serialize)]
struct InFlight {
    id: u64,
    method: String,
    path: String,
    at_ms: u128,
}

#[derive(Default)]
struct State {
    rules: Vec<Rule>,
    faults: Vec<FaultLog>,
    requests: Vec<RequestLog>,
    in_flight: std::collections::BTreeMap<u64, InFlight>,
    /// Requests whose whole body a `store_late` rule holds, to forward later.
    held: Vec<u64>,
    next_id: u64,
    rng: u64,
}

fn now_ms() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0)
}

/// `*` matches any run of characters (including `/`).
fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || !text.ends_with(last) || text.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

impl State {
    fn unit(&mut self) -> f64 {
        // splitmix64
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The first rule that fires for this request, if any.
    fn pick(&mut self, method: &Method, path: &str) -> Option<(usize, Action)> {
        for i in 0..self.rules.len() {
            let rule = &self.rules[i];
            if rule.method.as_deref().is_some_and(|m| !m.eq_ignore_ascii_case(method.as_str()))
                || !glob(&rule.path, path)
            {
                continue;
            }
            self.rules[i].seen += 1;
            let rule = self.rules[i].clone();
            let limit = rule.times.unwrap_or(if rule.nth.is_some() { 1 } else { u64::MAX });
            if rule.fired >= limit {
                continue;
            }
            let fires = match (rule.nth, rule.probability) {
                (Some(n), _) => rule.seen == n,
                (None, Some(p)) => self.unit() < p,
                (None, None) => true,
            };
            if fires {
                self.rules[i].fired += 1;
                return Some((i, rule.action));
            }
        }
        None
    }
}

struct Proxy {
    upstream: Mutex<Option<String>>,
    client: Client<HttpConnector, Body>,
    state: Mutex<State>,
    /// Bumped by `POST /__faults/release`: held requests without a time go on.
    release: tokio::sync::watch::Sender<u64>,
}

/// Keeps a forwarded request in the in-flight list until it is answered
/// (or given up on).
struct InFlightGuard {
    proxy: Arc<Proxy>,
    id: u64,
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.proxy.state.lock().expect("state").in_flight.remove(&self.id);
    }
}

fn full(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()).map_err(|e: Infallible| match e {}).boxed());
    *r.status_mut() = status;
    r
}

fn cors(origin: Option<&HeaderValue>, r: &mut Response<Body>) {
    if let Some(origin) = origin {
        r.headers_mut().insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
        r.headers_mut().insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static("retry-after, etag"));
    }
}

impl Proxy {
    async fn admin(&self, req: Request<Incoming>) -> Response<Body> {
        let (parts, body) = req.into_parts();
        let bytes = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
        let mut state = self.state.lock().expect("state");
        let answer = match (parts.method, parts.uri.path()) {
            (Method::POST, "/__faults/rules") => {
                #[derive(Deserialize)]
                struct Rules {
                    rules: Vec<Rule>,
                }
                match serde_json::from_slice::<Rules>(&bytes) {
                    Ok(r) => {
                        let first = state.rules.len();
                        for rule in &r.rules {
                            eprintln!("fault-proxy: rule {:?}", rule);
                        }
                        state.rules.extend(r.rules);
                        json!({"ids": (first..state.rules.len()).collect::<Vec<_>>()})
                    }
                    Err(e) => return full(StatusCode::BAD_REQUEST, e.to_string()),
                }
            }
            (Method::DELETE, "/__faults/rules") => {
                state.rules.clear();
                json!({})
            }
            (Method::POST, "/__faults/reset") => {
                state.rules.clear();
                state.faults.clear();
                state.requests.clear();
                state.held.clear();
                json!({})
            }
            (Method::POST, "/__faults/release") => {
                self.release.send_modify(|n| *n += 1);
                json!({"released": state.held.len()})
            }
            (Method::POST, "/__faults/seed") => {
                let seed = serde_json::from_slice::<serde_json::Value>(&bytes)
                    .ok()
                    .and_then(|v| v["seed"].as_u64())
                    .unwrap_or(0);
                state.rng = seed;
                json!({"seed": seed})
            }
            (Method::POST, "/__faults/upstream") => {
                let upstream = serde_json::from_slice::<serde_json::Value>(&bytes)
                    .ok()
                    .and_then(|v| v["upstream"].as_str().map(str::to_owned));
                let Some(upstream) = upstream.filter(|u| u.starts_with("http://")) else {
                    return full(StatusCode::BAD_REQUEST, "{\"upstream\": \"http://host:port\"} is required");
                };
                let upstream = upstream.trim_end_matches('/').to_owned();
                eprintln!("fault-proxy: upstream {upstream}");
                *self.upstream.lock().expect("upstream") = Some(upstream.clone());
                json!({"upstream": upstream})
            }
            (Method::GET, "/__faults/log") => {
                let in_flight: Vec<&InFlight> = state.in_flight.values().collect();
                let bytes_up: u64 = state.requests.iter().map(|r| r.body_bytes).sum();
                json!({"faults": state.faults, "requests": state.requests, "in_flight": in_flight, "held": state.held, "rules": state.rules, "bytes_up": bytes_up})
            }
            _ => return full(StatusCode::NOT_FOUND, "no such admin route"),
        };
        let mut r = full(StatusCode::OK, serde_json::to_vec(&answer).unwrap_or_default());
        r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        r
    }

    /// Reads the whole request from the client, closes the client's
    /// connection without an answer, and forwards the request `after`
    /// later, on its own (see `store_late`).
    async fn store_late(
        self: Arc<Self>,
        req: Request<Incoming>,
        mut entry: RequestLog,
        after: Option<Duration>,
    ) -> Result<Response<Body>, Error> {
        let mut released = self.release.subscribe();
        let (mut parts, body) = req.into_parts();
        let bytes = body.collect().await?.to_bytes();
        entry.counted.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        // The whole request is here: from now on it reaches the store
        // whatever the client does (the log's `held` says so).
        self.state.lock().expect("state").held.push(entry.id);
        let Some(upstream) = self.upstream.lock().expect("upstream").clone() else {
            entry.done_ms = now_ms();
            self.log_request(entry);
            return Err("fault-proxy: no upstream yet".into());
        };
        parts.uri = format!("{}{}", upstream, parts.uri.path_and_query().map_or("/", |p| p.as_str())).parse()?;
        parts.headers.remove(header::HOST);
        parts.headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        let me = self.clone();
        tokio::spawn(async move {
            match after {
                Some(after) => tokio::time::sleep(after).await,
                // A release before this point counts too: `changed` sees
                // every bump since the subscription above.
                None => {
                    let _ = released.changed().await;
                }
            }
            entry.forwarded = true;
            let body: Body = Full::new(bytes).map_err(|e: Infallible| match e {}).boxed();
            if let Ok(answered) = me.client.request(Request::from_parts(parts, body)).await {
                entry.status = Some(answered.status().as_u16());
                let _ = answered.into_body().collect().await;
            }
            entry.done_ms = now_ms();
            me.log_request(entry);
        });
        Err("fault: the client's connection closed; the request goes on later".into())
    }

    fn log_request(&self, mut entry: RequestLog) {
        entry.body_bytes = entry.counted.load(Ordering::Relaxed);
        self.state.lock().expect("state").requests.push(entry);
    }

    async fn handle(self: Arc<Self>, req: Request<Incoming>) -> Result<Response<Body>, Error> {
        let path = req.uri().path().to_owned();
        if path.starts_with("/__faults/") {
            let mut r = self.admin(req).await;
            r.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
            return Ok(r);
        }
        let method = req.method().clone();
        let origin = req.headers().get(header::ORIGIN).cloned();
        let started = now_ms();
        let (id, picked) = {
            let mut state = self.state.lock().expect("state");
            state.next_id += 1;
            (state.next_id, state.pick(&method, &path))
        };
        let mut entry = RequestLog {
            id,
            method: method.to_string(),
            path: path.clone(),
            query: req.uri().query().unwrap_or_default().to_owned(),
            status: None,
            forwarded: false,
            fault: None,
            at_ms: started,
            done_ms: 0,
            body_bytes: 0,
            counted: Arc::default(),
        };
        let mut cut_after = None;
        let mut drop_after = false;
        let mut hang_up_after = None;
        if let Some((rule, action)) = picked {
            eprintln!("fault-proxy: {} {} → {:?}", method, path, action);
            entry.fault = Some(serde_json::to_string(&action).unwrap_or_default());
            self.state.lock().expect("state").faults.push(FaultLog {
                rule,
                method: method.to_string(),
                path: path.clone(),
                action: action.clone(),
                at_ms: started,
            });
            match action {
                Action::DropBefore => {
                    entry.done_ms = now_ms();
                    self.log_request(entry);
                    return Err("fault: drop before forwarding".into());
                }
                Action::Status { status, retry_after } => {
                    let mut r = full(StatusCode::from_u16(status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE), "");
                    if let Some(after) = retry_after.and_then(|v| HeaderValue::from_str(&v).ok()) {
                        r.headers_mut().insert(header::RETRY_AFTER, after);
                    }
                    cors(origin.as_ref(), &mut r);
                    r.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
                    entry.status = Some(status);
                    entry.done_ms = now_ms();
                    self.log_request(entry);
                    return Ok(r);
                }
                Action::Delay { ms } => tokio::time::sleep(Duration::from_millis(ms)).await,
                Action::StoreLate { ms } => return self.store_late(req, entry, ms.map(Duration::from_millis)).await,
                Action::CutBody { after_bytes } => cut_after = Some(after_bytes),
                Action::DropAfter => drop_after = true,
                Action::HangUp { after_ms, jitter_ms } => {
                    let jitter = (self.state.lock().expect("state").unit() * jitter_ms as f64) as u64;
                    hang_up_after = Some(Duration::from_millis(after_ms + jitter));
                }
            }
        }

        // Forward.
        let Some(upstream) = self.upstream.lock().expect("upstream").clone() else {
            entry.done_ms = now_ms();
            self.log_request(entry);
            let mut r = full(StatusCode::BAD_GATEWAY, "fault-proxy: no upstream yet (POST /__faults/upstream)");
            r.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
            return Ok(r);
        };
        let (mut parts, body) = req.into_parts();
        let target = format!("{}{}", upstream, parts.uri.path_and_query().map_or("/", |p| p.as_str()));
        parts.uri = target.parse()?;
        parts.headers.remove(header::HOST);
        parts.headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        let counted = entry.counted.clone();
        let body: Body = match cut_after {
            None => body
                .map_frame(move |frame| {
                    if let Some(data) = frame.data_ref() {
                        counted.fetch_add(data.len() as u64, Ordering::Relaxed);
                    }
                    frame
                })
                .map_err(std::io::Error::other)
                .boxed(),
            Some(limit) => {
                // Pass `limit` bytes through, then fail the body mid-way.
                let mut sent = 0u64;
                let stream = body.into_data_stream().map(move |chunk| {
                    let chunk = chunk.map_err(std::io::Error::other)?;
                    counted.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                    if sent >= limit {
                        return Err(std::io::Error::other("fault: body cut"));
                    }
                    let room = (limit - sent) as usize;
                    sent += chunk.len() as u64;
                    if chunk.len() > room {
                        return Ok(Frame::data(chunk.slice(..room)));
                    }
                    Ok(Frame::data(chunk))
                });
                let stream =
                    stream.chain(futures_util::stream::once(async { Err(std::io::Error::other("fault: body cut")) }));
                BodyExt::boxed(StreamBody::new(stream))
            }
        };
        entry.forwarded = true;
        self.state
            .lock()
            .expect("state")
            .in_flight
            .insert(id, InFlight { id, method: method.to_string(), path: path.clone(), at_ms: started });
        let _in_flight = InFlightGuard { proxy: self.clone(), id };
        let request = self.client.request(Request::from_parts(parts, body));
        if let Some(after) = hang_up_after {
            // Dropping the upstream request closes its connection: the
            // server sees its client go away.
            if let Ok(Ok(answered)) = tokio::time::timeout(after, request).await {
                entry.status = Some(answered.status().as_u16());
            }
            entry.done_ms = now_ms();
            self.log_request(entry);
            return Err("fault: hung up".into());
        }
        let upstream = request.await;
        let response = match upstream {
            Ok(r) => r,
            Err(e) => {
                entry.done_ms = now_ms();
                self.log_request(entry);
                // Upstream down or the body was cut: the client sees a dropped connection.
                return Err(format!("upstream: {e}").into());
            }
        };
        entry.status = Some(response.status().as_u16());
        if cut_after.is_some() {
            entry.done_ms = now_ms();
            self.log_request(entry);
            return Err("fault: body cut (the upstream answered anyway)".into());
        }
        let (mut parts, body) = response.into_parts();
        parts.headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        if drop_after {
            // Let the upstream finish (commit) completely, then drop the answer.
            let _ = body.collect().await;
            entry.done_ms = now_ms();
            self.log_request(entry);
            return Err("fault: answer dropped after the upstream committed".into());
        }
        entry.done_ms = now_ms();
        self.log_request(entry);
        Ok(Response::from_parts(parts, body.map_err(std::io::Error::other).boxed()))
    }
}

/// A fault-injecting HTTP/1.1 reverse proxy, for tests only.
#[derive(Debug, clap::Parser)]
#[command(name = "upload-once-fault-proxy", version)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:9000")]
    listen: SocketAddr,
    /// Where requests go: `http://host:port` (or later, through
    /// `POST /__faults/upstream`).
    #[arg(long)]
    upstream: Option<String>,
    /// Seed of the random draws (also settable at `POST /__faults/seed`).
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let Args { listen, upstream, seed } = clap::Parser::parse();
    let upstream = upstream.map(|u| u.trim_end_matches('/').to_owned());
    let client = Client::builder(TokioExecutor::new()).pool_max_idle_per_host(0).build_http();
    let proxy = Arc::new(Proxy {
        upstream: Mutex::new(upstream),
        client,
        state: Mutex::new(State { rng: seed, ..State::default() }),
        release: tokio::sync::watch::channel(0).0,
    });
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let to = proxy.upstream.lock().expect("upstream").clone().unwrap_or_else(|| "(no upstream yet)".into());
    eprintln!("fault-proxy: listening on {} → {to}", listener.local_addr()?);
    let started = Instant::now();
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => accepted?,
            _ = tokio::signal::ctrl_c() => break,
        };
        let proxy = proxy.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| proxy.clone().handle(req));
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
        });
    }
    eprintln!("fault-proxy: stopped after {:?}", started.elapsed());
    Ok(())
}
