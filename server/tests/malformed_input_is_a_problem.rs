//! Malformed input of any kind is a 4xx `application/problem+json` answer
//! with a stable code — never a 5xx, a plain-text error or a hung server —
//! and it leaves the server working.

use crate::support;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::{ADMIN, TestServer, problem};
use uuid::Uuid;

/// One malformed request and the answer it must get.
struct Case {
    what: &'static str,
    method: Method,
    path: String,
    bearer: Option<String>,
    headers: Vec<(&'static str, String)>,
    /// Body bytes with their Content-Type (`None`: no Content-Type header).
    body: Option<(Option<&'static str>, Vec<u8>)>,
    status: u16,
    code: &'static str,
}

fn case(what: &'static str, method: Method, path: impl Into<String>, status: u16, code: &'static str) -> Case {
    Case { what, method, path: path.into(), bearer: None, headers: Vec::new(), body: None, status, code }
}

impl Case {
    fn bearer(mut self, token: &str) -> Case {
        self.bearer = Some(token.to_owned());
        self
    }
    fn json(mut self, text: impl Into<String>) -> Case {
        self.body = Some((Some("application/json"), text.into().into_bytes()));
        self
    }
    fn value(self, value: Value) -> Case {
        self.json(value.to_string())
    }
    fn raw(mut self, content_type: Option<&'static str>, bytes: Vec<u8>) -> Case {
        self.body = Some((content_type, bytes));
        self
    }
    fn header(mut self, name: &'static str, value: impl Into<String>) -> Case {
        self.headers.push((name, value.into()));
        self
    }
}

fn event_def(slug: &str) -> Value {
    json!({"slug": slug, "title": "A party", "max_file_bytes": 1000, "allowed_types": ["image/*"], "moderation": "required"})
}

#[tokio::test]
async fn every_malformed_request_is_a_4xx_problem_and_the_server_keeps_working() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let slug = guest.slug().to_owned();
    let session = guest.session.clone();
    let host = guest.event.host_token.clone();
    let code = guest.event.guest_code.clone();
    let (attempt, media) = guest.upload(b"abc".to_vec()).await;
    let id = Uuid::new_v4();
    let attempts = format!("/v1/events/{slug}/attempts");
    let confirm = format!("/v1/attempts/{attempt}/confirm");
    let good = json!({"id": id, "filename": "p.png", "size": 5, "content_type": "image/png"});
    let with = |field: &str, value: Value| {
        let mut v = good.clone();
        v[field] = value;
        v
    };
    let without = |field: &str| {
        let mut v = good.clone();
        v.as_object_mut().unwrap().remove(field);
        v
    };
    let ids_501: Vec<Uuid> = (0..501).map(|_| Uuid::new_v4()).collect();
    let nested = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let big = format!("{{\"ids\": [], \"pad\": \"{}\"}}", "x".repeat(70 * 1024));
    let mut long_types: Vec<String> = (0..51).map(|i| format!("image/x-{i}")).collect();
    long_types.sort();
    let mut bad_events: Vec<(&'static str, Value)> = vec![
        ("slug with uppercase", event_def("Party")),
        ("slug with a space", event_def("my party")),
        ("slug with a slash", event_def("a/b")),
        ("slug starting with -", event_def("-party")),
        ("empty slug", event_def("")),
        ("65-char slug", event_def(&"a".repeat(65))),
    ];
    let mut e = event_def("fine");
    e["title"] = json!("   ");
    bad_events.push(("blank title", e.clone()));
    e["title"] = json!("a\u{7}b");
    bad_events.push(("control character in the title", e.clone()));
    e["title"] = json!("t".repeat(201));
    bad_events.push(("201-char title", e.clone()));
    let mut e = event_def("fine");
    e["max_file_bytes"] = json!(0);
    bad_events.push(("max_file_bytes 0", e));
    for (what, types) in [
        ("no allowed types", json!([])),
        ("a type without a slash", json!(["image"])),
        ("a half wildcard", json!(["*/png"])),
        ("a type with a space", json!(["image/ png"])),
        ("51 allowed types", json!(long_types)),
    ] {
        let mut e = event_def("fine");
        e["allowed_types"] = types;
        bad_events.push((what, e));
    }

    let mut cases = vec![
        // --- JSON syntax and shape --------------------------------------
        case("truncated JSON", Method::POST, &attempts, 400, "malformed_request").bearer(&session).json("{\"id\": "),
        case("not JSON at all", Method::POST, &attempts, 400, "malformed_request").bearer(&session).json("hello"),
        case("empty JSON body", Method::POST, &attempts, 400, "malformed_request").bearer(&session).json(""),
        case("JSON array instead of object", Method::POST, &attempts, 400, "malformed_request")
            .bearer(&session)
            .json("[]"),
        case("JSON null body", Method::POST, &attempts, 400, "malformed_request").bearer(&session).json("null"),
        case("trailing garbage", Method::POST, &attempts, 400, "malformed_request")
            .bearer(&session)
            .json(format!("{good} x")),
        case("invalid UTF-8", Method::POST, &attempts, 400, "malformed_request")
            .bearer(&session)
            .raw(Some("application/json"), b"{\"id\": \"\xff\xfe\"}".to_vec()),
        case("nested 5000 deep", Method::POST, "/v1/attempts/status", 400, "malformed_request")
            .bearer(&session)
            .json(nested),
        case("size is a string", Method::POST, &attempts, 400, "malformed_request")
            .bearer(&session)
            .value(with("size", json!("5"))),
        case("size is negative", Method::POST, &attempts, 400, "malformed_request")
            .bearer(&session)
            .value(with("size", json!(-1))),
        case("size is fractional", Method::POST, &attempts, 400, "malformed_request")
            .bearer(&session)
            .value(with("size", json!(1.5))),
        case("size is 2^64", Method::POST, &attempts, 400, "malformed_request")
            .bearer(&session)
            .json(good.to_string().replace("\"size\":5", "\"size\":18446744073709551616")),
        case("size is 1e400", Method::POST, &attempts, 400, "malformed_request")
            .bearer(&session)
            .json(good.to_string().replace("\"size\":5", "\"size\":1e400")),
        case("size is u64::MAX", Method::POST, &attempts, 422, "file_too_large")
            .bearer(&session)
            .value(with("size", json!(u64::MAX))),
        case("size is null", Method::POST, &attempts, 400, "malformed_request")
            .bearer(&session)
            .value(with("size", Value::Null)),
        case("filename is null", Method::POST, &attempts, 400, "malformed_request")
            .bearer(&session)
            .value(with("filename", Value::Null)),
        case("filename is a number", Method::POST, &attempts, 400, "malformed_request")
            .bearer(&session)
            .value(with("filename", json!(7))),
        case("content_type is a list", Method::POST, &attempts, 400, "malformed_request")
            .bearer(&session)
            .value(with("content_type", json!(["image/png"]))),
        case("sha256 is a number", Method::POST, &attempts, 400, "malformed_request")
            .bearer(&session)
            .value(with("sha256", json!(5))),
        case("id is null", Method::POST, &attempts, 400, "malformed_request")
            .bearer(&session)
            .value(with("id", Value::Null)),
        case("id is a number", Method::POST, &attempts, 400, "malformed_request")
            .bearer(&session)
            .value(with("id", json!(42))),
        case("missing id", Method::POST, &attempts, 400, "malformed_request").bearer(&session).value(without("id")),
        case("missing size", Method::POST, &attempts, 400, "malformed_request").bearer(&session).value(without("size")),
        case("missing filename", Method::POST, &attempts, 400, "malformed_request")
            .bearer(&session)
            .value(without("filename")),
        case("missing content_type", Method::POST, &attempts, 400, "malformed_request")
            .bearer(&session)
            .value(without("content_type")),
        case("empty object", Method::POST, &attempts, 400, "malformed_request").bearer(&session).value(json!({})),
        case("confirm: size is a string", Method::POST, &confirm, 400, "malformed_request")
            .bearer(&session)
            .header("idempotency-key", attempt.to_string())
            .value(json!({"size": "3", "content_type": "image/png"})),
        case("confirm: missing content_type", Method::POST, &confirm, 400, "malformed_request")
            .bearer(&session)
            .header("idempotency-key", attempt.to_string())
            .value(json!({"size": 3})),
        case("status: ids is not a list", Method::POST, "/v1/attempts/status", 400, "malformed_request")
            .bearer(&session)
            .value(json!({"ids": "x"})),
        case("status: ids missing", Method::POST, "/v1/attempts/status", 400, "malformed_request")
            .bearer(&session)
            .value(json!({})),
        case("status: 501 ids", Method::POST, "/v1/attempts/status", 422, "too_many_ids")
            .bearer(&session)
            .value(json!({"ids": ids_501})),
        case(
            "moderation: unknown decision",
            Method::POST,
            format!("/v1/media/{}/moderation", media.id),
            400,
            "malformed_request",
        )
        .bearer(&host)
        .value(json!({"decision": "maybe"})),
        case(
            "moderation: 501-char reason",
            Method::POST,
            format!("/v1/media/{}/moderation", media.id),
            400,
            "malformed_request",
        )
        .bearer(&host)
        .value(json!({"decision": "reject", "reason": "r".repeat(501)})),
        case(
            "join: guest_code is a number",
            Method::POST,
            format!("/v1/events/{slug}/sessions"),
            400,
            "malformed_request",
        )
        .value(json!({"guest_code": 5})),
        case("event: max_file_bytes negative", Method::POST, "/v1/events", 400, "malformed_request")
            .bearer(ADMIN)
            .value({
                let mut e = event_def("neg");
                e["max_file_bytes"] = json!(-5);
                e
            }),
        case("event: unknown moderation policy", Method::POST, "/v1/events", 400, "malformed_request")
            .bearer(ADMIN)
            .value({
                let mut e = event_def("pol");
                e["moderation"] = json!("sometimes");
                e
            }),
        // --- content type and size ------------------------------------------
        case("text/plain body", Method::POST, &attempts, 415, "unsupported_media_type")
            .bearer(&session)
            .raw(Some("text/plain"), good.to_string().into_bytes()),
        case("form body", Method::POST, "/v1/events", 415, "unsupported_media_type")
            .bearer(ADMIN)
            .raw(Some("application/x-www-form-urlencoded"), b"slug=x".to_vec()),
        case("no content type", Method::POST, "/v1/attempts/status", 415, "unsupported_media_type")
            .bearer(&session)
            .raw(None, b"{\"ids\": []}".to_vec()),
        case("no body, no content type", Method::POST, &confirm, 415, "unsupported_media_type")
            .bearer(&session)
            .header("idempotency-key", attempt.to_string()),
        case("body over 64 KiB", Method::POST, "/v1/attempts/status", 413, "payload_too_large")
            .bearer(&session)
            .json(big),
        // --- paths, ids and queries ---------------------------------------------
        case("GET attempt: not a UUID", Method::GET, "/v1/attempts/not-a-uuid", 400, "invalid_id").bearer(&session),
        case(
            "GET attempt: UUID with a bad digit",
            Method::GET,
            format!("/v1/attempts/{}", id.to_string().replace('-', "g")),
            400,
            "invalid_id",
        )
        .bearer(&session),
        case("confirm: not a UUID", Method::POST, "/v1/attempts/1234/confirm", 400, "invalid_id")
            .bearer(&session)
            .header("idempotency-key", "1234")
            .value(json!({"size": 3, "content_type": "image/png"})),
        case("renew: not a UUID", Method::POST, "/v1/attempts/%FF/renew", 400, "invalid_id").bearer(&session),
        case("withdraw: not a UUID", Method::DELETE, "/v1/attempts/not-a-uuid", 400, "invalid_id").bearer(&session),
        case("moderation: not a UUID", Method::POST, "/v1/media/xyz/moderation", 400, "invalid_id")
            .bearer(&host)
            .value(json!({"decision": "approve"})),
        case("media content: not a UUID", Method::GET, "/v1/media/xyz/content?sig=00", 400, "invalid_id"),
        case("media content: no sig", Method::GET, format!("/v1/media/{}/content", media.id), 400, "invalid_query"),
        case(
            "media display: exp not a number",
            Method::GET,
            format!("/v1/media/{}/display?sig=00&exp=soon&kid=k", media.id),
            400,
            "invalid_query",
        ),
        case(
            "media display: a key id the server has no key for",
            Method::GET,
            format!("/v1/media/{}/display?sig=00&exp=99999999999&kid=unknown", media.id),
            404,
            "not_found",
        ),
        case("rotate: not a credential", Method::POST, format!("/v1/events/{slug}/rotate"), 400, "malformed_request")
            .bearer(&host)
            .value(json!({"what": "admin_token"})),
        case("rotate: no body", Method::POST, format!("/v1/events/{slug}/rotate"), 415, "unsupported_media_type")
            .bearer(&host),
        case("delete: no such event", Method::DELETE, "/v1/events/no-such-event", 404, "not_found").bearer(&host),
        case(
            "wall: cursor not ours",
            Method::GET,
            format!("/v1/events/{slug}/wall?code={code}&after=zzz"),
            400,
            "invalid_query",
        ),
        case(
            "wall: negative cursor",
            Method::GET,
            format!("/v1/events/{slug}/wall?code={code}&after=w-1"),
            400,
            "invalid_query",
        ),
        case(
            "wall: empty cursor",
            Method::GET,
            format!("/v1/events/{slug}/wall?code={code}&after="),
            400,
            "invalid_query",
        ),
        case(
            "wall: cursor past i64",
            Method::GET,
            format!("/v1/events/{slug}/wall?code={code}&after=w{}", "f".repeat(17)),
            400,
            "invalid_query",
        ),
        case(
            "media list: unknown moderation",
            Method::GET,
            format!("/v1/events/{slug}/media?moderation=maybe"),
            400,
            "invalid_query",
        )
        .bearer(&host),
        case(
            "revoke guest: block_address not a bool",
            Method::POST,
            format!("/v1/events/{slug}/guests/1/revoke"),
            400,
            "malformed_request",
        )
        .bearer(&host)
        .value(json!({"block_address": "yes"})),
        case(
            "revoke guest: unknown field",
            Method::POST,
            format!("/v1/events/{slug}/guests/1/revoke"),
            400,
            "malformed_request",
        )
        .bearer(&host)
        .value(json!({"block": true})),
        case("revoke guest: not a guest", Method::POST, format!("/v1/events/{slug}/guests/x/revoke"), 404, "not_found")
            .bearer(&host)
            .value(json!({})),
        case("storage: no signature", Method::PUT, "/storage/x/0123", 400, "invalid_query")
            .raw(Some("image/png"), b"abc".to_vec()),
        case(
            "storage: len not a number",
            Method::PUT,
            "/storage/x/0123?ct=image%2Fpng&len=five&exp=1&sig=00",
            400,
            "invalid_query",
        )
        .raw(Some("image/png"), b"abc".to_vec()),
        // With S3 storage this server has no storage endpoint (the bucket's own
        // presigned URLs apply): a well-formed query reaches the handler,
        // which says so.
        case(
            "storage: unsigned key with ..",
            Method::PUT,
            "/storage/x/%2e%2e/y?ct=image%2Fpng&len=3&exp=99999999999&sig=00",
            if support::is_s3() { 404 } else { 403 },
            if support::is_s3() { "route_not_found" } else { "bad_signature" },
        )
        .raw(Some("image/png"), b"abc".to_vec()),
        // --- routing --------------------------------------------------------
        case("unknown route", Method::GET, "/nope", 404, "route_not_found"),
        case("API route with a trailing slash", Method::GET, format!("/v1/attempts/{id}/"), 404, "route_not_found")
            .bearer(&session),
        case("GET /v1/events", Method::GET, "/v1/events", 405, "method_not_allowed"),
        case("PUT an attempt", Method::PUT, format!("/v1/attempts/{id}"), 405, "method_not_allowed").bearer(&session),
        case("DELETE an unknown attempt", Method::DELETE, format!("/v1/attempts/{id}"), 404, "not_found")
            .bearer(&session),
        case("PUT /healthz", Method::PUT, "/healthz", 405, "method_not_allowed"),
        case("GET the storage", Method::GET, "/storage/x/0123", 405, "method_not_allowed"),
        case("GET confirm", Method::GET, &confirm, 405, "method_not_allowed").bearer(&session),
        case("unknown event: join", Method::POST, "/v1/events/no-such-event/sessions", 404, "not_found")
            .value(json!({"guest_code": code})),
        // --- events (admin) ---------------------------------------------------
        case("event: no bearer", Method::POST, "/v1/events", 401, "unauthorized").value(event_def("nobody")),
        case("event: wrong bearer", Method::POST, "/v1/events", 403, "forbidden")
            .bearer("not-the-admin")
            .value(event_def("nobody")),
        case("event: guest session", Method::POST, "/v1/events", 403, "forbidden")
            .bearer(&session)
            .value(event_def("nobody")),
        case("event: host token", Method::POST, "/v1/events", 403, "forbidden")
            .bearer(&host)
            .value(event_def("nobody")),
        case("event: duplicate slug", Method::POST, "/v1/events", 409, "slug_taken")
            .bearer(ADMIN)
            .value(event_def(&slug)),
        case("sweep: no bearer", Method::POST, "/v1/admin/sweep", 401, "unauthorized"),
        case("sweep: host token", Method::POST, "/v1/admin/sweep", 403, "forbidden").bearer(&host),
    ];
    for (what, def) in bad_events {
        cases.push(case(what, Method::POST, "/v1/events", 422, "invalid_event").bearer(ADMIN).value(def));
    }
    assert!(cases.len() >= 20);

    let counts = server.counts().await;
    for c in &cases {
        let mut req = server.http.request(c.method.clone(), server.url(&c.path));
        if let Some(b) = &c.bearer {
            req = req.bearer_auth(b);
        }
        for (k, v) in &c.headers {
            req = req.header(*k, v);
        }
        if let Some((ct, bytes)) = &c.body {
            if let Some(ct) = ct {
                req = req.header("content-type", *ct);
            }
            req = req.body(bytes.clone());
        }
        let r = req.send().await.unwrap_or_else(|e| panic!("{}: no answer: {e}", c.what));
        let status = r.status();
        assert!(status.is_client_error(), "{}: {status}", c.what);
        let ct = r.headers().get("content-type").map(|v| v.to_str().unwrap_or("?").to_owned());
        assert_eq!(ct.as_deref(), Some("application/problem+json"), "{}: {status}", c.what);
        let (status, p) = problem(r).await;
        assert_eq!((status.as_u16(), p["code"].as_str()), (c.status, Some(c.code)), "{}: {p}", c.what);
        assert_eq!(p["type"], format!("urn:upload-once:{}", c.code), "{}", c.what);
        assert_eq!(p["retryable"], false, "{}", c.what);
    }
    assert_eq!(server.counts().await, counts, "no malformed request stored anything");

    // Still healthy, and a normal upload still works end to end.
    let r = server.call(Method::GET, "/healthz", None, None).await;
    assert_eq!(r.status(), StatusCode::OK);
    let (_, media) = guest.upload(b"still fine".to_vec()).await;
    assert_eq!(media.size, 10);
    assert_eq!(server.counts().await, (counts.0 + 1, counts.1 + 1));
}

/// `invalid_id` is documented (core/src/error.rs) as "a path or body id is
/// not a UUID": an attempt id in a JSON body that is not a UUID gets it,
/// like one in the path.
#[tokio::test]
async fn an_id_in_a_body_that_is_not_a_uuid_is_invalid_id() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let r = server
        .call(Method::POST, "/v1/attempts/status", Some(&guest.session), Some(json!({"ids": ["not-a-uuid"]})))
        .await;
    let (status, p) = problem(r).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_id")), "status ids: {p}");
    let r = guest
        .authorize_raw(json!({"id": "not-a-uuid", "filename": "p.png", "size": 5, "content_type": "image/png"}))
        .await;
    let (status, p) = problem(r).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_id")), "authorize id: {p}");
}

/// `route_not_found` is the answer for a path no route matches, whatever
/// the method. With web pages configured (`www_dir`, as in every test
/// server and whenever `./www` exists) the fallback is a `ServeDir`, which
/// answers other methods than GET/HEAD itself.
#[tokio::test]
async fn an_unknown_route_is_route_not_found_for_every_method() {
    let server = TestServer::start().await;
    for method in [Method::GET, Method::POST, Method::PUT, Method::DELETE, Method::PATCH] {
        for path in ["/nope", "/v1/nothing", "/v1/events/x/y/z"] {
            let r = server.http.request(method.clone(), server.url(path)).json(&json!({})).send().await.unwrap();
            let status = r.status();
            let ct = r.headers().get("content-type").map(|v| v.to_str().unwrap_or("?").to_owned());
            let body = r.text().await.unwrap();
            assert_eq!(
                (status, ct.as_deref()),
                (StatusCode::NOT_FOUND, Some("application/problem+json")),
                "{method} {path}: body {body:?}"
            );
            let p: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(p["code"], "route_not_found", "{method} {path}");
        }
    }
}
