//! The browser tests (wasm-bindgen-test, against the reference server the
//! test command starts), one file per behaviour, built as one wasm test
//! binary: linked and bound once, and run in one page per engine rather
//! than one browser start per file. Each test opens its own IndexedDB
//! database (`common::unique`) and closes its uploader.
//!
//! A new behaviour is a new file here and a line below.
#![cfg(target_arch = "wasm32")]

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

mod common;

mod a_freed_uploader_leaves_no_timer_behind;
mod a_pick_over_the_apps_caps_is_refused_whole;
mod a_refused_write_leaves_the_store_usable;
mod a_repicked_file_is_never_spliced;
mod an_action_whose_write_is_refused_leaves_nothing;
mod busy_is_said_while_files_go_up;
mod each_file_is_hashed_once_and_its_authorize_carries_its_hash;
mod engine_probes;
mod expired_url_is_renewed;
mod file_not_kept_attempt_goes_on;
mod files_are_kept_within_the_browsers_room;
mod happy_path_uploads_and_confirms;
mod large_file_resumes_from_the_servers_parts;
mod lost_confirm_answer_is_reconciled_after_reload;
mod moderation_is_refreshed_on_restore;
mod needs_file_after_reload_without_blob;
mod open_makes_no_request_and_joins_in_the_background;
mod oversize_file_is_refused_before_any_request;
mod parts_are_hashed_through_reused_buffers;
mod storage_error_is_reported_and_holds_the_attempt;
mod stored_records_and_answers_keep_their_format;
mod two_tabs_joining_at_once_share_one_session;
mod two_tabs_upload_each_attempt_once;
mod waits_fire_while_the_pages_timers_are_held;
mod whole_files_are_hashed_off_the_pages_thread;
