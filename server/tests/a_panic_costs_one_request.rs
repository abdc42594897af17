//! A bug that panics in one handler costs that one request: it is answered
//! `500 internal` (nothing of the panic in the answer) by the catch-panic
//! layer, while a confirm in flight at that moment completes and new
//! uploads go on. In the build as deployed too: the server's own profile
//! (`--profile server`) unwinds, the release profile (the wasm package's,
//! `panic = "abort"`) is never used for a native binary, and the server
//! refuses to compile under `panic = "abort"`.

use crate::support;

use reqwest::{Method, StatusCode};
use serde_json::json;
use support::{ADMIN, Options, TestServer, problem};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_handler_that_panics_answers_500_while_a_confirm_in_flight_completes() {
    let server =
        TestServer::start_with(Options { configure: Some(Box::new(|c| c.test_hooks = true)), ..Default::default() })
            .await;
    let gate = server.state.test_hooks.as_ref().unwrap().gate_confirms();
    let guest = server.guest().await;
    let (id, _) = guest.authorize_and_put(b"held").await;
    let confirm = {
        let (http, url, session) =
            (server.http.clone(), server.url(&format!("/v1/attempts/{id}/confirm")), guest.session.clone());
        tokio::spawn(async move {
            let body = json!({"size": 4, "content_type": "image/png"});
            let r = http.post(url).bearer_auth(session).header("Idempotency-Key", id.to_string()).json(&body);
            r.send().await.unwrap().status()
        })
    };
    gate.entered.notified().await;

    // The confirm is inside its transaction: now another handler panics.
    let r = server.call(Method::POST, "/v1/admin/test-hooks", Some(ADMIN), Some(json!({"panic": true}))).await;
    let (status, p) = problem(r).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::INTERNAL_SERVER_ERROR, Some("internal")));
    assert!(!p.to_string().contains("test hook"), "nothing of the panic is told: {p}");

    gate.release.add_permits(1000);
    assert_eq!(confirm.await.unwrap(), StatusCode::OK, "the confirm in flight completes");
    assert_eq!(guest.status(&[id]).await["results"][0]["state"], "confirmed");
    server.another_event_still_uploads().await;
}

/// The profile every native binary is built with as deployed: its own, which
/// unwinds; the release profile aborts (it is the wasm package's) and is
/// not used for the server anywhere the project builds or documents it.
#[test]
fn the_server_is_built_as_deployed_with_a_profile_that_unwinds() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let read = |path: &str| std::fs::read_to_string(root.join(path)).unwrap();
    let manifest = read("Cargo.toml");
    let section = manifest.split("[profile.server]").nth(1).expect("a `server` profile in the workspace's Cargo.toml");
    let section = section.split("\n[").next().unwrap();
    let setting = |key: &str| {
        section
            .lines()
            .find_map(|l| l.split_once('=').filter(|(k, _)| k.trim() == key).map(|(_, v)| v.trim().to_owned()))
    };
    assert_eq!(setting("panic").as_deref(), Some("\"unwind\""), "{section}");
    assert_ne!(setting("opt-level").as_deref(), Some("\"z\""), "built for speed, not size");
    assert!(read("server/src/main.rs").contains("#[cfg(panic = \"abort\")]\ncompile_error!"), "the guard");
    for (file, builds) in [
        ("docs/deploy.md", "cargo build --profile server -p upload-once-server"),
        ("xtask/src/run.rs", r#""--profile", "server", "-p", "upload-once-server""#),
    ] {
        let text = read(file);
        assert!(text.contains(builds), "{file} builds the server with its profile");
        for line in text.lines().filter(|l| l.contains("upload-once-server") && l.contains("build")) {
            assert!(!line.contains("--release") && !line.contains("\"--release\""), "{file}: {line}");
        }
    }
}
