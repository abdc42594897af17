//! What the server allows one client, one session and one event, so that a
//! stranger holding the printed guest code cannot fill the disk, the
//! database or the request slots:
//!
//! - **quotas**, checked before anything is stored: unconfirmed attempts
//!   and bytes per session, sessions per event per hour, bytes per event
//!   (each a `403` with its own code; the store checks them in the same
//!   transaction as the insert, so concurrent requests cannot overshoot);
//! - **rate limits** per client address on opening sessions, authorizing
//!   (and renewing, signing parts), confirming, asking the status and
//!   reading the wall (`429 rate_limited` with `Retry-After`); the address
//!   is the peer's, or what `X-Forwarded-For` says when the peer is a
//!   trusted proxy;
//! - **timeouts and a concurrency limit**: a whole-request limit on the
//!   JSON API (`408 request_timeout`), an idle timeout on a storage PUT's
//!   body ([`IdleBody`]), and a cap on the handlers running at once
//!   (`429 rate_limited`). The header-read timeout and graceful shutdown are
//!   in shutdown.rs.
//!
//! The settings are [`crate::config::limits::LimitsConfig`]; the quotas'
//! rules are [`upload_once_core::decide::quota`]; `admit` (routes/admission.rs)
//! is the one middleware that applies the per-request limits.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderMap, Method};
use bytes::Bytes;
use futures_util::Stream;
use governor::DefaultKeyedRateLimiter;
use governor::clock::{Clock as _, DefaultClock};
use upload_once_core::ErrorCode;

use crate::config::limits::{LimitsConfig, ProxyNet, Rate, canonical};
use crate::error::{Error, Result};

/// The key a client's requests are counted under: its IPv4 address, or
/// its IPv6 /56 (a home line is given a /56, 256 /64s, and could otherwise
/// rotate through them).
pub fn rate_key(ip: IpAddr) -> IpAddr {
    match canonical(ip) {
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & (u128::MAX << 72))),
        v4 => v4,
    }
}

/// One hop of `X-Forwarded-For`: an address, perhaps with a port
/// (`203.0.113.7:51234`, `[2001:db8::1]:443`).
fn forwarded_hop(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim();
    if let Ok(ip) = hop.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Ok(addr) = hop.parse::<SocketAddr>() {
        return Some(addr.ip());
    }
    hop.strip_prefix('[').and_then(|h| h.strip_suffix(']')).and_then(|h| h.parse().ok())
}

/// The client's address: the peer's, unless the peer is a trusted proxy;
/// then `X-Forwarded-For` is read from the right (the hop the proxy
/// appended) leftwards, past every trusted proxy, to the first address that
/// is not one. An entry that is not an address stops the walk at the last
/// address believed. Without trusted proxies the header is never read.
pub fn client_address(peer: IpAddr, headers: &HeaderMap, trusted: &[ProxyNet]) -> IpAddr {
    let is_trusted = |ip: IpAddr| trusted.iter().any(|net| net.contains(ip));
    let mut client = canonical(peer);
    if !is_trusted(client) {
        return client;
    }
    let hops: Vec<&str> =
        headers.get_all("x-forwarded-for").iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).collect();
    for hop in hops.into_iter().rev() {
        let Some(ip) = forwarded_hop(hop).map(canonical) else { return client };
        client = ip;
        if !is_trusted(ip) {
            return ip;
        }
    }
    client
}

/// The kinds of request that are rate-limited, each at its own rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateClass {
    /// Opening a guest session.
    Sessions,
    /// Authorize, renew, signing parts.
    Authorize,
    /// Confirm.
    Confirm,
    /// Status, one or many.
    Status,
    /// The wall.
    Wall,
}

/// How a request is admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Never refused, never timed: health, readiness, metrics, the OpenAPI
    /// document, pages.
    Free,
    /// Counted against the concurrency limit; timed as a whole when a JSON
    /// request.
    Counted { timed: bool, class: Option<RateClass> },
    /// A storage PUT: one of the PUTs' own slots ([`PutSlots`]); its body
    /// has its own limits (idle, rate, the URL's expiry: [`IdleBody`]).
    Put,
}

pub(crate) fn admission(method: &Method, route: Option<&str>) -> Admission {
    let Some(route) = route else { return Admission::Free };
    let class = match (method.as_str(), route) {
        ("POST", "/v1/events/{slug}/sessions") => Some(RateClass::Sessions),
        ("POST", "/v1/events/{slug}/attempts" | "/v1/attempts/{id}/renew" | "/v1/attempts/{id}/parts") => {
            Some(RateClass::Authorize)
        }
        ("POST", "/v1/attempts/{id}/confirm") | ("DELETE", "/v1/attempts/{id}") => Some(RateClass::Confirm),
        ("POST", "/v1/attempts/status") | ("GET", "/v1/attempts/{id}") => Some(RateClass::Status),
        // A live stream's connect reads the wall like a page does.
        ("GET", "/v1/events/{slug}/wall" | "/v1/events/{slug}/wall/live") => Some(RateClass::Wall),
        (_, "/healthz" | "/readyz" | "/metrics" | "/openapi.json") => return Admission::Free,
        _ => None,
    };
    if route.starts_with("/storage/") {
        return Admission::Put;
    }
    Admission::Counted { timed: true, class }
}

/// The limits in force: the settings and each class's rate limiter.
pub struct Limits {
    /// The settings.
    pub config: LimitsConfig,
    sessions: DefaultKeyedRateLimiter<IpAddr>,
    authorize: DefaultKeyedRateLimiter<IpAddr>,
    confirm: DefaultKeyedRateLimiter<IpAddr>,
    status: DefaultKeyedRateLimiter<IpAddr>,
    wall: DefaultKeyedRateLimiter<IpAddr>,
    /// Storage PUTs being received, shared fairly between events and sessions.
    pub puts: PutSlots,
    /// Live wall streams open, per client address and per event.
    pub live: LiveSlots,
    warned_no_peer: AtomicBool,
}

impl std::fmt::Debug for Limits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limits").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Limits {
    /// The limiters for these settings (validated first).
    pub fn new(config: LimitsConfig) -> Result<Limits> {
        config.validate()?;
        let limiter = |rate: Rate| {
            rate.quota().map(DefaultKeyedRateLimiter::keyed).ok_or_else(|| Error::Config(format!("bad rate {rate}")))
        };
        Ok(Limits {
            sessions: limiter(config.rate_sessions)?,
            authorize: limiter(config.rate_authorize)?,
            confirm: limiter(config.rate_confirm)?,
            status: limiter(config.rate_status)?,
            wall: limiter(config.rate_wall)?,
            puts: PutSlots::default(),
            live: LiveSlots::default(),
            config,
            warned_no_peer: AtomicBool::new(false),
        })
    }

    fn limiter(&self, class: RateClass) -> &DefaultKeyedRateLimiter<IpAddr> {
        match class {
            RateClass::Sessions => &self.sessions,
            RateClass::Authorize => &self.authorize,
            RateClass::Confirm => &self.confirm,
            RateClass::Status => &self.status,
            RateClass::Wall => &self.wall,
        }
    }

    /// Counts one request of `class` from `client`: how long it must wait
    /// when it is over its rate.
    pub fn check(&self, class: RateClass, client: IpAddr) -> std::result::Result<(), Duration> {
        let limiter = self.limiter(class);
        limiter
            .check_key(&rate_key(client))
            .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }

    /// Counts `n` more of `client`'s `class` (what a request costs beyond
    /// itself: a status request's calls to the object store): how long it
    /// must wait when they do not fit in its rate now.
    pub fn charge(&self, class: RateClass, client: IpAddr, n: u32) -> std::result::Result<(), Duration> {
        let Some(mut n) = std::num::NonZeroU32::new(n) else { return Ok(()) };
        loop {
            match self.limiter(class).check_key_n(&rate_key(client), n) {
                Ok(Ok(())) => return Ok(()),
                Ok(Err(not_until)) => return Err(not_until.wait_time_from(DefaultClock::default().now())),
                // More than the rate's whole burst: it costs the whole burst
                // (never a request that can never pass).
                Err(governor::InsufficientCapacity(burst)) => match std::num::NonZeroU32::new(burst) {
                    Some(burst) if burst < n => n = burst,
                    _ => return Ok(()),
                },
            }
        }
    }

    /// Forgets clients whose rate is back to full, so the limiters' memory
    /// follows the clients of the last period, not of all time.
    pub fn forget_idle_clients(&self) {
        for limiter in [&self.sessions, &self.authorize, &self.confirm, &self.status, &self.wall] {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }

    pub(crate) fn client(&self, request: &Request) -> Option<IpAddr> {
        let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
        match peer {
            Some(peer) => Some(client_address(peer, request.headers(), &self.config.trusted_proxies)),
            None => {
                if !self.warned_no_peer.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "requests carry no peer address: rate limits are not applied (serve with the server's own serve function)"
                    );
                }
                None
            }
        }
    }
}

/// The client address of a request (behind a trusted proxy, the one it
/// forwarded for), as [`admit`] found it, for handlers with caps of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddress(pub IpAddr);

/// Live wall streams open: a cap per client address and per event, so one
/// address cannot hold every stream of the server, nor every stream of an
/// event. A stream holds its slot until it ends ([`LiveSlot`]).
#[derive(Debug, Default)]
pub struct LiveSlots {
    held: std::sync::Mutex<LiveHeld>,
}

#[derive(Debug, Default)]
struct LiveHeld {
    per_client: std::collections::HashMap<IpAddr, u64>,
    per_event: std::collections::HashMap<i64, u64>,
}

fn count_down<K: std::hash::Hash + Eq>(map: &mut std::collections::HashMap<K, u64>, key: K) {
    if let std::collections::hash_map::Entry::Occupied(mut e) = map.entry(key) {
        *e.get_mut() -= 1;
        if *e.get() == 0 {
            e.remove();
        }
    }
}

/// A live stream's slot: given back when the stream ends (dropped).
#[derive(Debug)]
pub struct LiveSlot {
    limits: Arc<Limits>,
    client: Option<IpAddr>,
    event_id: i64,
}

impl LiveSlots {
    /// Streams open now (the metrics).
    pub fn open(&self) -> u64 {
        self.held.lock().expect("live slots").per_event.values().sum()
    }

    /// A slot for a stream of `event_id` from `client`, or why not.
    pub fn take(
        limits: &Arc<Limits>,
        client: Option<IpAddr>,
        event_id: i64,
    ) -> std::result::Result<LiveSlot, &'static str> {
        let config = &limits.config;
        let mut held = limits.live.held.lock().expect("live slots");
        let key = client.map(rate_key);
        if key.is_some_and(|k| held.per_client.get(&k).copied().unwrap_or(0) >= config.max_live_per_client) {
            return Err("this address has as many live walls open as it may; close one, or try again later");
        }
        if held.per_event.get(&event_id).copied().unwrap_or(0) >= config.max_live_per_event {
            return Err("this event has as many live walls open as it may; try again later");
        }
        if let Some(k) = key {
            *held.per_client.entry(k).or_default() += 1;
        }
        *held.per_event.entry(event_id).or_default() += 1;
        Ok(LiveSlot { limits: limits.clone(), client: key, event_id })
    }
}

impl Drop for LiveSlot {
    fn drop(&mut self) {
        let mut held = self.limits.live.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = self.client {
            count_down(&mut held.per_client, k);
        }
        count_down(&mut held.per_event, self.event_id);
    }
}

/// What one storage PUT writes, however its URL is spelled: the object key
/// (the path percent-decoded, as the route reads it) and, for a part, its
/// upload and its number (`part=01` is part 1). The one-PUT-per-target
/// rule is keyed on it, so `%61` for `a` or a leading zero cannot open a
/// second slot for the same bytes.
pub fn put_target(path: &str, query: Option<&str>) -> String {
    let decode = |s: &str| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned();
    let (mut upload, mut part) = (String::new(), None::<u32>);
    for pair in query.unwrap_or_default().split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match decode(key).as_str() {
            "upload" => upload = decode(value),
            "part" => part = decode(value).parse().ok(),
            _ => {}
        }
    }
    let part = part.map(|n| n.to_string()).unwrap_or_default();
    format!("{}\n{upload}\n{part}", decode(path))
}

pub use crate::put_slots::{PutSlot, PutSlots, Refused as PutRefused};

/// A storage PUT's body, cut when it stops being worth a slot: nothing
/// arrived for `idle`; less than `min_rate` bytes a second arrived over a
/// window (a body that trickles a byte now and then keeps no slot); or it
/// is still arriving past its URL's expiry and grace. [`Stalled`] tells the
/// handler which cut it was, not a broken connection.
pub struct IdleBody<S> {
    inner: S,
    idle: Duration,
    timer: Pin<Box<tokio::time::Sleep>>,
    /// The slowest acceptable rate (bytes a second) and its window.
    min_rate: (u64, Duration),
    window: Pin<Box<tokio::time::Sleep>>,
    in_window: u64,
    deadline: Pin<Box<tokio::time::Sleep>>,
    /// Ready when its slot is given to another event's or session's PUT.
    made_room: Option<Pin<Box<dyn std::future::Future<Output = ()> + Send>>>,
    cut: Arc<std::sync::Mutex<Option<Cut>>>,
}

/// Why a storage PUT's body was cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// Nothing arrived for the idle timeout.
    Idle,
    /// Less than the minimum rate arrived over a window.
    Slow,
    /// Still arriving past its URL's expiry and grace.
    Expired,
    /// Its slot was given to a PUT of an event (or a session) holding less
    /// than its fair share ([`crate::put_slots`]).
    MadeRoom,
}

/// Whether (and why) an [`IdleBody`] was cut.
#[derive(Clone, Debug, Default)]
pub struct Stalled(Arc<std::sync::Mutex<Option<Cut>>>);

impl Stalled {
    /// Why the body was cut, if it was.
    pub fn cut(&self) -> Option<Cut> {
        *self.0.lock().expect("cut")
    }

    /// The error to answer with: `408 request_timeout` when the body
    /// stalled or crawled, `403 url_expired` when it outlived its URL, else
    /// `error` as it is.
    pub fn explain(&self, error: Error, idle: Duration) -> Error {
        match self.cut() {
            Some(Cut::Idle) => Error::problem(
                ErrorCode::RequestTimeout,
                format!("no byte of the body arrived for {} s; the upload was cut, send it again", idle.as_secs_f64()),
            ),
            Some(Cut::Slow) => Error::problem(
                ErrorCode::RequestTimeout,
                "the body arrived more slowly than the server accepts; the upload was cut, send it again",
            ),
            Some(Cut::Expired) => Error::problem(
                ErrorCode::UrlExpired,
                "the signed URL expired before the body arrived; get a fresh one and send it again",
            ),
            Some(Cut::MadeRoom) => Error::problem(
                ErrorCode::RateLimited,
                "the server is receiving as many uploads as it may, and this event or guest was sending more than its share; send it again in a moment",
            ),
            None => error,
        }
    }
}

/// How a storage PUT's body is bounded ([`IdleBody`]).
#[derive(Clone, Copy, Debug)]
pub struct BodyLimits {
    /// Nothing may arrive for longer than this.
    pub idle: Duration,
    /// At least this many bytes a second, over each window.
    pub min_rate: u64,
    /// The window the rate is measured over.
    pub window: Duration,
    /// The body must have arrived within this (its URL's expiry and grace).
    pub until: Duration,
}

impl<S> IdleBody<S> {
    /// Cut as soon as `made_room` is notified (its slot's [`PutSlot::cut`]).
    pub fn cut_when(mut self, made_room: Arc<tokio::sync::Notify>) -> IdleBody<S> {
        self.made_room = Some(Box::pin(async move { made_room.notified().await }));
        self
    }
}

impl<S> IdleBody<S> {
    /// Wraps `inner`, bounded by `limits`.
    pub fn new(inner: S, limits: BodyLimits) -> (IdleBody<S>, Stalled) {
        let cut = Arc::new(std::sync::Mutex::new(None));
        let body = IdleBody {
            inner,
            idle: limits.idle,
            timer: Box::pin(tokio::time::sleep(limits.idle)),
            min_rate: (limits.min_rate, limits.window),
            window: Box::pin(tokio::time::sleep(limits.window)),
            in_window: 0,
            deadline: Box::pin(tokio::time::sleep(limits.until)),
            made_room: None,
            cut: cut.clone(),
        };
        (body, Stalled(cut))
    }

    fn cut_for(&self, why: Cut) -> Poll<Option<std::result::Result<Bytes, String>>> {
        *self.cut.lock().expect("cut") = Some(why);
        Poll::Ready(Some(Err(format!("the body was cut: {why:?}"))))
    }
}

impl<S, E> Stream for IdleBody<S>
where
    S: Stream<Item = std::result::Result<Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    type Item = std::result::Result<Bytes, String>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.deadline.as_mut().poll(cx).is_ready() {
            return this.cut_for(Cut::Expired);
        }
        if this.made_room.as_mut().is_some_and(|f| f.as_mut().poll(cx).is_ready()) {
            return this.cut_for(Cut::MadeRoom);
        }
        if this.window.as_mut().poll(cx).is_ready() {
            let (rate, window) = this.min_rate;
            if (this.in_window as f64) < rate as f64 * window.as_secs_f64() {
                return this.cut_for(Cut::Slow);
            }
            this.in_window = 0;
            this.window.as_mut().reset(tokio::time::Instant::now() + window);
            // Registers the new deadline with the waker.
            let _ = this.window.as_mut().poll(cx);
        }
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Ready(item) => {
                let deadline = tokio::time::Instant::now() + this.idle;
                this.timer.as_mut().reset(deadline);
                if let Some(Ok(chunk)) = &item {
                    this.in_window += chunk.len() as u64;
                }
                Poll::Ready(item.map(|chunk| chunk.map_err(|e| e.to_string())))
            }
            Poll::Pending => match this.timer.as_mut().poll(cx) {
                Poll::Ready(()) => this.cut_for(Cut::Idle),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::num::NonZeroU32;

    use axum::http::HeaderValue;

    use crate::config::limits::{parse_positive_bytes, parse_positive_count, parse_rate};

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append("x-forwarded-for", HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn forwarded_for_is_read_only_from_trusted_proxies_and_only_past_them() {
        let trusted: Vec<ProxyNet> = vec!["10.0.0.0/8".parse().unwrap(), "::1".parse().unwrap()];
        let h = headers(&["198.51.100.1, 203.0.113.7"]);
        // An untrusted peer's header is ignored.
        assert_eq!(client_address(ip("192.0.2.9"), &h, &trusted), ip("192.0.2.9"));
        // A trusted peer: the rightmost hop it appended.
        assert_eq!(client_address(ip("10.1.2.3"), &h, &trusted), ip("203.0.113.7"));
        // Past a chain of trusted proxies, in several header lines, with ports.
        let h = headers(&["198.51.100.1", "203.0.113.7:5555, 10.9.9.9"]);
        assert_eq!(client_address(ip("10.1.2.3"), &h, &trusted), ip("203.0.113.7"));
        // Everything trusted: the leftmost.
        let h = headers(&["10.0.0.5, 10.0.0.6"]);
        assert_eq!(client_address(ip("10.1.2.3"), &h, &trusted), ip("10.0.0.5"));
        // Garbage stops the walk at the last address believed.
        let h = headers(&["203.0.113.7, not-an-address"]);
        assert_eq!(client_address(ip("10.1.2.3"), &h, &trusted), ip("10.1.2.3"));
        // No header: the proxy itself.
        assert_eq!(client_address(ip("::1"), &HeaderMap::new(), &trusted), ip("::1"));
        // IPv4 mapped into IPv6 is IPv4.
        assert_eq!(
            client_address(ip("::ffff:10.1.2.3"), &headers(&["[2001:db8::1]:443"]), &trusted),
            ip("2001:db8::1")
        );
        // No trusted proxy: never read.
        assert_eq!(client_address(ip("10.1.2.3"), &headers(&["203.0.113.7"]), &[]), ip("10.1.2.3"));
    }

    #[test]
    fn a_put_target_is_the_same_however_its_url_is_spelled() {
        let plain = put_target("/storage/ev/abc", Some("exp=1&sig=x"));
        assert_eq!(put_target("/storage/ev/%61bc", Some("sig=y&exp=2")), plain);
        assert_eq!(put_target("/storage/ev%2Fabc", None), plain);
        let part = put_target("/storage/ev/abc", Some("upload=u1&part=1&sig=x"));
        assert_eq!(put_target("/storage/ev/abc", Some("part=01&upload=u1")), part);
        assert_eq!(put_target("/storage/ev/abc", Some("%70art=%31&upload=%75%31")), part);
        assert_ne!(put_target("/storage/ev/abc", Some("upload=u1&part=2")), part);
        assert_ne!(part, plain);
    }

    #[test]
    fn ipv6_clients_are_counted_per_56() {
        assert_eq!(rate_key(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1::"));
        assert_eq!(rate_key(ip("2001:db8:1:ff:bbbb::9")), rate_key(ip("2001:db8:1:2:aaaa::1")));
        assert_ne!(rate_key(ip("2001:db8:1:100::1")), rate_key(ip("2001:db8:1:2::1")));
        assert_eq!(rate_key(ip("203.0.113.7")), ip("203.0.113.7"));
    }

    #[test]
    fn rates_and_quotas_parse_or_say_why_not() {
        assert_eq!(
            parse_rate("600/min").unwrap(),
            Rate { count: NonZeroU32::new(600).unwrap(), per: Duration::from_secs(60) }
        );
        assert_eq!(parse_rate("10/s").unwrap().per, Duration::from_secs(1));
        assert_eq!(parse_rate("50/10m").unwrap().per, Duration::from_secs(600));
        for bad in ["0/min", "-5/min", "ten/min", "600", "600/", "5/0s", "5/fortnight", "4000000000/1ns"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_positive_count("200"), Ok(200));
        assert!(parse_positive_count("0").unwrap_err().contains("greater than 0"));
        assert!(parse_positive_count("-3").unwrap_err().contains("negative"));
        assert_eq!(parse_positive_bytes("2GiB"), Ok(2 << 30));
        assert!(parse_positive_bytes("0").is_err());
        assert!(parse_positive_bytes("-1GiB").unwrap_err().contains("negative"));
        for bad in ["10.0.0.0/33", "::/129", "example.com", "10.0.0/8", ""] {
            assert!(bad.parse::<ProxyNet>().is_err(), "{bad}");
        }
        let net: ProxyNet = "192.168.0.0/16".parse().unwrap();
        assert!(net.contains(ip("192.168.44.1")) && !net.contains(ip("192.169.0.1")));
        assert!("0.0.0.0/0".parse::<ProxyNet>().unwrap().contains(ip("8.8.8.8")));
    }
}
