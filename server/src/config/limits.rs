//! The limits' settings: quotas, rates, timeouts and caps, as flags and
//! `UPLOAD_ONCE_*` variables ([`LimitsConfig`]), and how their values are
//! written. What enforces them is limits.rs.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::time::Duration;

use governor::Quota;

use super::{parse_bytes, parse_duration};
use crate::error::{Error, Result};
use upload_once_core::decide::quota::AttemptQuotas;

/// How much of something per how long: `600/min`, `10/s`, `100/h`, or
/// `50/10m` (any duration). A client may use the whole count at once, and
/// gets it back evenly over the period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    /// How many.
    pub count: NonZeroU32,
    /// Per how long.
    pub per: Duration,
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}s", self.count, self.per.as_secs_f64())
    }
}

impl Rate {
    /// The GCRA quota: a burst of `count`, one back every `per / count`.
    /// `None` when that interval rounds to nothing.
    pub fn quota(&self) -> Option<Quota> {
        let interval = self.per / self.count.get();
        Quota::with_period(interval).map(|q| q.allow_burst(self.count))
    }
}

/// Parses a rate: `N/s`, `N/min`, `N/h` (also `sec`, `second`, `m`,
/// `minute`, `hour`, `d`, `day`) or `N/<duration>` such as `50/10m`. N is a
/// whole number greater than 0.
pub fn parse_rate(text: &str) -> std::result::Result<Rate, String> {
    let text = text.trim();
    let Some((count, per)) = text.split_once('/') else {
        return Err(format!("`{text}` is not a rate like 600/min, 10/s or 100/h"));
    };
    let count = count
        .trim()
        .parse::<u32>()
        .ok()
        .and_then(NonZeroU32::new)
        .ok_or_else(|| format!("`{text}`: the count must be a whole number greater than 0"))?;
    let per = match per.trim() {
        "s" | "sec" | "second" => Duration::from_secs(1),
        "m" | "min" | "minute" => Duration::from_secs(60),
        "h" | "hour" => Duration::from_secs(3600),
        "d" | "day" => Duration::from_secs(86_400),
        other => parse_duration(other)?,
    };
    if per.is_zero() {
        return Err(format!("`{text}`: the period must be longer than 0"));
    }
    let rate = Rate { count, per };
    if rate.quota().is_none() {
        return Err(format!("`{text}` is more than one request per nanosecond"));
    }
    Ok(rate)
}

/// Parses a count that must be at least 1.
pub fn parse_positive_count(text: &str) -> std::result::Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(0) => Err("must be greater than 0 (there is no `0` for unlimited: give a large number)".into()),
        Ok(n) => Ok(n),
        Err(_) if text.trim().starts_with('-') => {
            Err(format!("`{text}` is negative: give a whole number greater than 0"))
        }
        Err(_) => Err(format!("`{text}` is not a whole number greater than 0")),
    }
}

/// Parses a size (see [`parse_bytes`]) that must be at least one byte.
pub fn parse_positive_bytes(text: &str) -> std::result::Result<u64, String> {
    if text.trim().starts_with('-') {
        return Err(format!("`{text}` is negative: give a size greater than 0, like 20GiB"));
    }
    match parse_bytes(text)? {
        0 => Err("must be greater than 0 (there is no `0` for unlimited: give a large size)".into()),
        n => Ok(n),
    }
}

/// A network whose addresses are trusted proxies: `10.0.0.0/8`,
/// `192.168.1.10`, `fd00::/8`, `::1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProxyNet {
    addr: IpAddr,
    prefix: u8,
}

impl ProxyNet {
    /// Whether `ip` is in this network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, canonical(ip)) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix)).unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix)).unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl std::str::FromStr for ProxyNet {
    type Err = String;
    fn from_str(text: &str) -> std::result::Result<ProxyNet, String> {
        let text = text.trim();
        let bad = || format!("`{text}` is not an address or network like 10.0.0.0/8, 192.168.1.10 or fd00::/8");
        let (addr, prefix) = match text.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix.parse::<u8>().map_err(|_| bad())?)),
            None => (text, None),
        };
        let addr = canonical(addr.parse::<IpAddr>().map_err(|_| bad())?);
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(max);
        if prefix > max {
            return Err(bad());
        }
        Ok(ProxyNet { addr, prefix })
    }
}

/// An IPv4 address mapped into IPv6 is the IPv4 address.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The limits' settings (flags and `UPLOAD_ONCE_*` variables). Every
/// number must be greater than 0: there is no "unlimited", give a large
/// value instead.
#[derive(Clone, Debug, clap::Args)]
pub struct LimitsConfig {
    /// Unconfirmed attempts one guest session may have at once (authorized,
    /// not confirmed, not expired); past it, authorize answers `403
    /// too_many_unconfirmed`.
    #[arg(long, env = "UPLOAD_ONCE_MAX_UNCONFIRMED_PER_SESSION", default_value = "200", value_parser = parse_positive_count)]
    pub max_unconfirmed_per_session: u64,

    /// Bytes one guest session may have authorized (its confirmed attempts
    /// and its live unconfirmed ones): `403 session_bytes_exceeded`.
    #[arg(long, env = "UPLOAD_ONCE_MAX_BYTES_PER_SESSION", default_value = "50GiB", value_parser = parse_positive_bytes)]
    pub max_bytes_per_session: u64,

    /// Guest sessions one event may open per hour (a sliding hour):
    /// `403 too_many_sessions`.
    #[arg(long, env = "UPLOAD_ONCE_MAX_SESSIONS_PER_EVENT_PER_HOUR", default_value = "1000", value_parser = parse_positive_count)]
    pub max_sessions_per_event_per_hour: u64,

    /// Of an event's sessions per hour, how many one client address may open
    /// (a venue's guests share one address behind its NAT: the default lets
    /// 500 of them in, and leaves the other half of the event's sessions to
    /// everyone else whatever one address does). At most
    /// `--max-sessions-per-event-per-hour`.
    #[arg(long, env = "UPLOAD_ONCE_MAX_SESSIONS_PER_CLIENT_PER_EVENT_PER_HOUR", default_value = "500", value_parser = parse_positive_count)]
    pub max_sessions_per_client_per_event_per_hour: u64,

    /// Bytes one event may hold (its confirmed attempts and its live
    /// unconfirmed ones): `403 event_bytes_exceeded`.
    #[arg(long, env = "UPLOAD_ONCE_MAX_BYTES_PER_EVENT", default_value = "1024GiB", value_parser = parse_positive_bytes)]
    pub max_bytes_per_event: u64,

    /// Attempts one guest session may ever make (every authorize of a new
    /// id counts, a duplicate too: each is a row): `403
    /// session_files_exceeded`. A guest who shares a thousand photos at
    /// once is well within it.
    #[arg(long, env = "UPLOAD_ONCE_MAX_ATTEMPTS_PER_SESSION", default_value = "10000", value_parser = parse_positive_count)]
    pub max_attempts_per_session: u64,

    /// Media one guest session may keep (its confirmed media not rejected
    /// or withdrawn, and its live unconfirmed attempts): `403
    /// session_files_exceeded`.
    #[arg(long, env = "UPLOAD_ONCE_MAX_MEDIA_PER_SESSION", default_value = "5000", value_parser = parse_positive_count)]
    pub max_media_per_session: u64,

    /// Attempts one event may hold (every attempt made counts until it has
    /// ended and is forgotten after `--record-retention`): `403
    /// event_files_exceeded`.
    #[arg(long, env = "UPLOAD_ONCE_MAX_ATTEMPTS_PER_EVENT", default_value = "1000000", value_parser = parse_positive_count)]
    pub max_attempts_per_event: u64,

    /// Media one event may keep (as for a session): `403
    /// event_files_exceeded`. Sized for a festival of 100,000 photos and
    /// videos, twice over.
    #[arg(long, env = "UPLOAD_ONCE_MAX_MEDIA_PER_EVENT", default_value = "200000", value_parser = parse_positive_count)]
    pub max_media_per_event: u64,

    /// Sessions one client address may open (`POST /v1/events/{slug}/sessions`).
    #[arg(long, env = "UPLOAD_ONCE_RATE_SESSIONS", default_value = "600/min", value_parser = parse_rate)]
    pub rate_sessions: Rate,

    /// Authorizations one client address may ask for (authorize, renew,
    /// signing parts).
    #[arg(long, env = "UPLOAD_ONCE_RATE_AUTHORIZE", default_value = "6000/min", value_parser = parse_rate)]
    pub rate_authorize: Rate,

    /// Confirms one client address may send.
    #[arg(long, env = "UPLOAD_ONCE_RATE_CONFIRM", default_value = "6000/min", value_parser = parse_rate)]
    pub rate_confirm: Rate,

    /// Status requests one client address may send (`GET /v1/attempts/{id}`,
    /// `POST /v1/attempts/status`).
    #[arg(long, env = "UPLOAD_ONCE_RATE_STATUS", default_value = "6000/min", value_parser = parse_rate)]
    pub rate_status: Rate,

    /// Wall pages one client address may read.
    #[arg(long, env = "UPLOAD_ONCE_RATE_WALL", default_value = "12000/min", value_parser = parse_rate)]
    pub rate_wall: Rate,

    /// A proxy (address or network) whose `X-Forwarded-For` is believed
    /// (repeatable, or comma-separated in the environment). Without one,
    /// the client address is the connection's peer.
    #[arg(long = "trusted-proxy", env = "UPLOAD_ONCE_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<ProxyNet>,

    /// How long a client may take to send a request's headers (also how
    /// long an idle keep-alive connection stays open).
    #[arg(long, env = "UPLOAD_ONCE_HEADER_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub header_timeout: Duration,

    /// How long a JSON API request may take as a whole, body included:
    /// `408 request_timeout` (work already started still runs to its end).
    #[arg(long, env = "UPLOAD_ONCE_REQUEST_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub request_timeout: Duration,

    /// How long a storage PUT's body may send nothing before it is cut
    /// (`408 request_timeout`; its temporary file is removed).
    #[arg(long, env = "UPLOAD_ONCE_PUT_IDLE_TIMEOUT", default_value = "60s", value_parser = parse_duration)]
    pub put_idle_timeout: Duration,

    /// Storage PUTs received at once, in a pool of their own apart from the
    /// API's requests: past it, `429 rate_limited` with `Retry-After: 1`.
    #[arg(long, env = "UPLOAD_ONCE_MAX_PUTS_IN_FLIGHT", default_value = "512", value_parser = parse_positive_count)]
    pub max_puts_in_flight: u64,
    /// Storage PUTs one client address may send at once (a venue's guests
    /// share one address behind its NAT: this many transfers at once fill
    /// any venue's uplink, and the rest wait their turn): past it, `429
    /// rate_limited` with `Retry-After: 1`.
    #[arg(long, env = "UPLOAD_ONCE_MAX_PUTS_PER_CLIENT", default_value = "128", value_parser = parse_positive_count)]
    pub max_puts_per_client: u64,
    /// The slowest a storage PUT's body may arrive, in bytes per second,
    /// averaged over `--put-rate-window`: a slower one is cut (`408
    /// request_timeout`). The default is met by a phone on poor venue Wi-Fi.
    #[arg(long, env = "UPLOAD_ONCE_PUT_MIN_RATE", default_value = "8KiB", value_parser = parse_positive_bytes)]
    pub put_min_rate: u64,
    /// Over how long a storage PUT's rate is measured.
    #[arg(long, env = "UPLOAD_ONCE_PUT_RATE_WINDOW", default_value = "30s", value_parser = parse_duration)]
    pub put_rate_window: Duration,
    /// How long after its signed URL expires a storage PUT may still be
    /// receiving its body: past it, it is cut (`403 url_expired`).
    #[arg(long, env = "UPLOAD_ONCE_PUT_EXPIRY_GRACE", default_value = "60s", value_parser = parse_duration)]
    pub put_expiry_grace: Duration,
    /// Live wall streams (`/wall/live`) one client address may hold open
    /// at once, over all events (a venue's guests share one address behind
    /// its NAT, and each may watch the wall): past it, `429 rate_limited`.
    #[arg(long, env = "UPLOAD_ONCE_MAX_LIVE_PER_CLIENT", default_value = "256", value_parser = parse_positive_count)]
    pub max_live_per_client: u64,
    /// Live wall streams one event may have open at once, from every
    /// address: past it, `429 rate_limited`.
    #[arg(long, env = "UPLOAD_ONCE_MAX_LIVE_PER_EVENT", default_value = "1024", value_parser = parse_positive_count)]
    pub max_live_per_event: u64,
    /// Requests handled at once; past it, `429 rate_limited` with
    /// `Retry-After: 1` (health, readiness and metrics are never refused).
    #[arg(long, env = "UPLOAD_ONCE_MAX_REQUESTS_IN_FLIGHT", default_value = "1024", value_parser = parse_positive_count)]
    pub max_requests_in_flight: u64,

    /// On SIGTERM or Ctrl-C: how long requests in flight (a confirm, an
    /// upload) may take to finish before the server gives up on them and
    /// exits.
    #[arg(long, env = "UPLOAD_ONCE_SHUTDOWN_TIMEOUT", default_value = "25s", value_parser = parse_duration)]
    pub shutdown_timeout: Duration,

    /// On SIGTERM or Ctrl-C: how long an idle keep-alive connection from a
    /// `--trusted-proxy` stays open (within `--shutdown-timeout`), so that a
    /// request the proxy sends on it before it sees this instance stop is
    /// answered (with `Connection: close`) rather than cut; the proxy closes
    /// it first when its own idle timeout is shorter, as it should be.
    /// Connections from anyone else that are idle close at once.
    #[arg(long, env = "UPLOAD_ONCE_SHUTDOWN_PROXY_GRACE", default_value = "10s", value_parser = parse_duration)]
    pub shutdown_proxy_grace: Duration,
}

impl LimitsConfig {
    /// Refuses values no flag parser would give (a configuration built in
    /// code): zero counts, sizes and durations.
    pub fn validate(&self) -> Result<()> {
        let counts = [
            ("--max-unconfirmed-per-session", self.max_unconfirmed_per_session),
            ("--max-bytes-per-session", self.max_bytes_per_session),
            ("--max-sessions-per-event-per-hour", self.max_sessions_per_event_per_hour),
            ("--max-sessions-per-client-per-event-per-hour", self.max_sessions_per_client_per_event_per_hour),
            ("--max-bytes-per-event", self.max_bytes_per_event),
            ("--max-requests-in-flight", self.max_requests_in_flight),
            ("--max-puts-in-flight", self.max_puts_in_flight),
            ("--max-puts-per-client", self.max_puts_per_client),
            ("--max-live-per-client", self.max_live_per_client),
            ("--max-live-per-event", self.max_live_per_event),
            ("--put-min-rate", self.put_min_rate),
        ];
        for (flag, value) in counts {
            if value == 0 {
                return Err(Error::Config(format!(
                    "{flag} must be greater than 0 (there is no `0` for unlimited: give a large value)"
                )));
            }
        }
        let durations = [
            ("--header-timeout", self.header_timeout),
            ("--request-timeout", self.request_timeout),
            ("--put-idle-timeout", self.put_idle_timeout),
            ("--put-rate-window", self.put_rate_window),
            ("--shutdown-timeout", self.shutdown_timeout),
        ];
        for (flag, value) in durations {
            if value.is_zero() {
                return Err(Error::Config(format!("{flag} must be longer than 0")));
            }
        }
        let rates = [
            ("--rate-sessions", self.rate_sessions),
            ("--rate-authorize", self.rate_authorize),
            ("--rate-confirm", self.rate_confirm),
            ("--rate-status", self.rate_status),
            ("--rate-wall", self.rate_wall),
        ];
        for (flag, rate) in rates {
            if rate.per.is_zero() || rate.quota().is_none() {
                return Err(Error::Config(format!("{flag} ({rate}) must be a count per a period longer than 0")));
            }
        }
        Ok(())
    }

    /// The quotas an authorize is checked against.
    pub fn attempt_quotas(&self) -> AttemptQuotas {
        AttemptQuotas {
            max_unconfirmed: self.max_unconfirmed_per_session,
            max_session_bytes: self.max_bytes_per_session,
            max_event_bytes: self.max_bytes_per_event,
            max_session_attempts: self.max_attempts_per_session,
            max_session_media: self.max_media_per_session,
            max_event_attempts: self.max_attempts_per_event,
            max_event_media: self.max_media_per_event,
        }
    }
}
