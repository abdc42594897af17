//! The uploader in a dedicated Worker: the same behaviours as in a page,
//! run by wasm-bindgen-test inside a `Worker` instead of a window, so the
//! client's IndexedDB store, XHR transfers, Web Locks, BroadcastChannel and
//! timers are the worker's. Each file here is the page's own test of that
//! behaviour, compiled a second time into this binary.
#![cfg(target_arch = "wasm32")]

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_dedicated_worker);

mod common;

#[path = "expired_url_is_renewed.rs"]
mod expired_url_is_renewed;
#[path = "happy_path_uploads_and_confirms.rs"]
mod happy_path_uploads_and_confirms;
#[path = "large_file_resumes_from_the_servers_parts.rs"]
mod large_file_resumes_from_the_servers_parts;
#[path = "lost_confirm_answer_is_reconciled_after_reload.rs"]
mod lost_confirm_answer_is_reconciled_after_reload;
