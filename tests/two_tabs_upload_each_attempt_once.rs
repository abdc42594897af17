//! Two uploaders over one IndexedDB stand for two tabs: Web Locks let only
//! one drive each attempt, so every attempt is uploaded once.
#![cfg(target_arch = "wasm32")]

use crate::common;

use std::rc::Rc;

use common::*;
use upload_once::core::attempt::{Confirmation, Transfer};
use wasm_bindgen_test::*;

#[wasm_bindgen_test]
async fn each_attempt_is_uploaded_once_across_two_tabs() {
    let event = create_event(1_000_000, "none").await;
    let db = unique("db");
    let (faults_a, faults_b) = (Rc::new(Faults::default()), Rc::new(Faults::default()));
    let tab_a = open(options(&event, &db), &faults_a).await;
    let tab_b = open(options(&event, &db), &faults_b).await;
    let files = (0..4).map(|i| file(&format!("p{i}.png"), "image/png", 50_000 + i, i as f64)).collect();
    tab_a.add(files).await.unwrap();
    // The other tab restores while the first is uploading.
    tab_b.restore().await.unwrap();
    wait_for("both tabs to settle", 20_000.0, || tab_a.is_idle() && tab_b.is_idle()).await;
    wait_for("tab B to learn every outcome", 10_000.0, || {
        tab_b.records().len() == 4 && tab_b.records().iter().all(|r| r.confirmation == Confirmation::Confirmed)
    })
    .await;

    assert_eq!(faults_a.puts.get() + faults_b.puts.get(), 4, "one PUT per attempt across both tabs");
    assert_eq!(faults_a.authorizes.get() + faults_b.authorizes.get(), 4);
    assert_eq!(host_media(&event).await.len(), 4);
    tab_a.close();
    tab_b.close();
}

#[wasm_bindgen_test]
async fn a_tab_takes_over_when_the_driving_tab_closes() {
    let event = create_event(1_000_000, "none").await;
    let db = unique("db");
    let (faults_a, faults_b) = (Rc::new(Faults::default()), Rc::new(Faults::default()));
    faults_a.offline.set(true);
    let mut slow = options(&event, &db);
    slow_retries(&mut slow);
    let tab_a = open(slow, &faults_a).await;
    let tab_b = open(options(&event, &db), &faults_b).await;
    tab_a.add(vec![file("x.png", "image/png", 2_000, 1.0)]).await.unwrap();
    tab_b.restore().await.unwrap();
    wait_for("tab A to try and fail", 10_000.0, || faults_a.authorizes.get() >= 1).await;
    assert_eq!(faults_b.authorizes.get(), 0, "tab B waits while tab A holds the attempt");
    tab_a.close();
    if !blobs_can_be_kept().await {
        // A private profile kept no copy: the file left with tab A, so tab B
        // takes the attempt over and asks for the file.
        wait_for("tab B to ask for the file", 20_000.0, || {
            tab_b.records().first().is_some_and(|r| r.transfer == Transfer::NeedsFile)
        })
        .await;
        assert_eq!(faults_b.puts.get(), 0);
        tab_b.close();
        return;
    }
    // The file was kept in IndexedDB, so tab B can finish it.
    wait_for("tab B to finish", 20_000.0, || {
        tab_b.records().first().is_some_and(|r| r.confirmation == Confirmation::Confirmed)
    })
    .await;
    assert_eq!(faults_b.puts.get(), 1);
    assert_eq!(host_media(&event).await.len(), 1);
    tab_b.close();
}
