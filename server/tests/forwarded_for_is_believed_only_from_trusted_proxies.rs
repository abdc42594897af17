//! The client address the rate limits count under is the connection's
//! peer; `X-Forwarded-For` is believed only when that peer is a configured
//! trusted proxy, and then only up to the first address that is not one —
//! so a client cannot dodge its limit by sending the header itself, nor by
//! prepending addresses to the one its proxy appends.

use crate::support;

use reqwest::StatusCode;
use support::limits::with_limits;
use support::{TestServer, problem};
use upload_once_server::config::limits::parse_rate;

async fn wall(server: &TestServer, code: &str, forwarded: Option<&str>) -> StatusCode {
    let mut req = server.http.get(server.url("/v1/events/xff/wall")).header("x-guest-code", code);
    if let Some(f) = forwarded {
        req = req.header("x-forwarded-for", f);
    }
    let r = req.send().await.unwrap();
    let status = r.status();
    if status != StatusCode::OK {
        let (status, p) = problem(r).await;
        assert_eq!((status, p["code"].as_str()), (StatusCode::TOO_MANY_REQUESTS, Some("rate_limited")));
    }
    status
}

#[tokio::test]
async fn without_a_trusted_proxy_the_header_is_ignored() {
    let server = TestServer::start_with(with_limits(|l| l.rate_wall = parse_rate("2/h").unwrap())).await;
    let code = server.create_event("xff", 1_000_000, &["image/*"], "required").await.guest_code;
    assert_eq!(wall(&server, &code, Some("198.51.100.1")).await, StatusCode::OK);
    assert_eq!(wall(&server, &code, Some("198.51.100.2")).await, StatusCode::OK);
    // A third "client" is the same peer, and is limited.
    assert_eq!(wall(&server, &code, Some("198.51.100.3")).await, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(wall(&server, &code, None).await, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn behind_trusted_proxies_each_forwarded_client_has_its_own_allowance() {
    let server = TestServer::start_with(with_limits(|l| {
        l.rate_wall = parse_rate("2/h").unwrap();
        // The test's own address is the proxy, and so is an inner network.
        l.trusted_proxies = vec!["127.0.0.1".parse().unwrap(), "10.0.0.0/8".parse().unwrap()];
    }))
    .await;
    let code = server.create_event("xff", 1_000_000, &["image/*"], "required").await.guest_code;

    // One client, as its proxy reports it: twice, then limited.
    assert_eq!(wall(&server, &code, Some("203.0.113.7")).await, StatusCode::OK);
    assert_eq!(wall(&server, &code, Some("203.0.113.7")).await, StatusCode::OK);
    assert_eq!(wall(&server, &code, Some("203.0.113.7")).await, StatusCode::TOO_MANY_REQUESTS);
    // It cannot get around that by forging what comes before its address,
    // nor through a second proxy of the trusted network.
    assert_eq!(wall(&server, &code, Some("192.0.2.1, 203.0.113.7")).await, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(wall(&server, &code, Some("192.0.2.2, 203.0.113.7, 10.1.2.3")).await, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(wall(&server, &code, Some("[::ffff:203.0.113.7]:4431")).await, StatusCode::TOO_MANY_REQUESTS);

    // Another client behind the same proxy has its own allowance.
    assert_eq!(wall(&server, &code, Some("203.0.113.8")).await, StatusCode::OK);
    // An IPv6 client is counted by its /56 (a home line is given a /56, and
    // could otherwise rotate through its 256 /64s).
    assert_eq!(wall(&server, &code, Some("2001:db8:7:7::1")).await, StatusCode::OK);
    assert_eq!(wall(&server, &code, Some("2001:db8:7:8::2")).await, StatusCode::OK);
    assert_eq!(wall(&server, &code, Some("2001:db8:7:ff:ffff::9")).await, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(wall(&server, &code, Some("2001:db8:7:100::1")).await, StatusCode::OK);

    // A header that is not an address stops at the proxy: counted as the
    // proxy, never an error.
    assert_eq!(wall(&server, &code, Some("unknown")).await, StatusCode::OK);
    assert_eq!(wall(&server, &code, Some("203.0.113.9, not an address")).await, StatusCode::OK);
    assert_eq!(wall(&server, &code, Some("garbage")).await, StatusCode::TOO_MANY_REQUESTS);
    // And a guest of another event, through the proxy, still uploads.
    server.another_event_still_uploads().await;
}
