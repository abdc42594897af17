//! Moderation is the third state, apart from transfer and confirmation: a
//! page that comes back after the host decided shows the decision without
//! being asked to refresh.
#![cfg(target_arch = "wasm32")]

use crate::common;

use common::*;
use gloo_net::http::Request;
use serde_json::json;
use upload_once::core::attempt::{Confirmation, ModerationView};
use wasm_bindgen_test::*;

#[wasm_bindgen_test]
async fn a_restored_page_shows_the_hosts_decision() {
    let setup = Setup::new(1_000_000, "required").await;
    let first = setup.open().await;
    first.add(vec![file("toast.png", "image/png", 2_000, 3.0)]).await.unwrap();
    settle(&first).await;
    let saved = only_record(&first);
    assert_eq!(saved.confirmation, Confirmation::Confirmed);
    assert_eq!(saved.moderation, ModerationView::Pending, "saved, not yet approved");
    first.close();

    // The host approves while the guest is away.
    let media = saved.media.as_ref().expect("a media record").id;
    let approved = Request::post(&format!("{API}/v1/media/{media}/moderation"))
        .header("Authorization", &format!("Bearer {}", setup.event.host_token))
        .json(&json!({"decision": "approve"}))
        .unwrap()
        .send()
        .await
        .unwrap();
    assert_eq!(approved.status(), 200);

    let again = setup.reload(&setup.faults).await;
    wait_for("the decision to show", 10_000.0, || only_record(&again).moderation == ModerationView::Approved).await;
    again.close();
}
