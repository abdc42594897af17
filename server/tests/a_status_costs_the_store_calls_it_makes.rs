//! A status request asks the object store about each live upload it names
//! (a HEAD, and a parts listing for one in parts): one request of 200 ids
//! could cost 400 store calls. Those calls are counted against the asking
//! address's status rate (`--rate-status`) before they are made, so a
//! flood of them is refused `429` with `Retry-After` before the store is
//! asked, while ids that need no call (confirmed, unknown) cost only the
//! request.

use crate::support;

use reqwest::StatusCode;
use serde_json::json;
use support::limits::with_limits;
use support::{TestServer, problem};
use upload_once_server::config::limits::parse_rate;
use uuid::Uuid;

#[tokio::test]
async fn store_calls_count_against_the_status_rate() {
    let server = TestServer::start_with(with_limits(|l| l.rate_status = parse_rate("12/h").unwrap())).await;
    let guest = server.guest().await;
    let mut live = Vec::new();
    for _ in 0..5 {
        let id = Uuid::new_v4();
        guest.authorize(id, 3).await;
        live.push(id);
    }
    let ask = |ids: Vec<Uuid>| {
        let guest = &guest;
        async move {
            guest
                .server
                .call(reqwest::Method::POST, "/v1/attempts/status", Some(&guest.session), Some(json!({"ids": ids})))
                .await
        }
    };
    // The request and its five HEADs: 6 of the 12.
    assert_eq!(ask(live.clone()).await.status(), StatusCode::OK);
    // Six more would be 12: the last that fit.
    assert_eq!(ask(live.clone()).await.status(), StatusCode::OK);
    // Nothing left for the store calls of a third.
    let (status, p) = problem(ask(live.clone()).await).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::TOO_MANY_REQUESTS, Some("rate_limited")), "{p}");
}

#[tokio::test]
async fn ids_that_need_no_store_call_cost_only_the_request() {
    let server = TestServer::start_with(with_limits(|l| l.rate_status = parse_rate("12/h").unwrap())).await;
    let guest = server.guest().await;
    let (confirmed, _) = guest.upload(b"one".to_vec()).await;
    let unknown = Uuid::new_v4();
    for _ in 0..12 {
        let r = guest
            .server
            .call(
                reqwest::Method::POST,
                "/v1/attempts/status",
                Some(&guest.session),
                Some(json!({"ids": [confirmed, unknown]})),
            )
            .await;
        assert_eq!(r.status(), StatusCode::OK);
    }
}
