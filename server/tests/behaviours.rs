//! The server's behaviour tests, one file per behaviour, built as one test
//! binary: compiled and linked once (not once per file), and their tests
//! share one pool of test threads. Three behaviours keep a process of their
//! own: `a_large_zip_streams_in_flat_memory` measures the process's
//! resident memory, `requests_carry_an_id` and
//! `readiness_follows_database_writes` install the process's one tracing
//! subscriber and read everything logged.
//!
//! A new behaviour is a new file here and a line below.

mod support;

mod a_claimed_hash_reveals_nothing_the_guest_does_not_own;
mod a_decompression_bomb_gets_a_placeholder_not_a_decode;
mod a_different_photo_is_never_merged;
mod a_generated_admin_token_is_never_printed;
mod a_guest_withdraws_an_upload;
mod a_hang_up_never_poisons_the_database;
mod a_hostile_guest_cannot_hold_the_upload_slots;
mod a_lapsed_session_still_answers_for_its_own_attempts;
mod a_multipart_duplicate_leaves_no_second_object;
mod a_proxys_idle_connection_is_answered_while_stopping;
mod a_request_waiting_for_a_rendition_holds_no_slot;
mod a_session_flood_from_one_address_cannot_fill_an_event;
mod a_spliced_file_is_never_confirmed;
mod a_video_over_the_length_limit_gets_a_poster_and_no_copy;
mod an_attempt_lock_is_released_by_dropping_it;
mod an_object_in_parts_reads_like_one;
mod attempt_ids_are_unique_across_sessions;
mod authorize_is_create_or_return;
mod bad_parts_are_refused_and_store_nothing;
mod config_is_validated;
mod confirm_does_not_hold_the_database_while_it_waits_on_storage;
mod confirm_is_idempotent;
mod confirm_rejects_mismatches;
mod cors_grants_only_allowed_origins;
mod credentials_are_checked_before_the_body;
mod deleting_an_event_removes_its_rows_and_objects;
mod duplicates_never_transfer;
mod ended_records_are_deleted_after_the_retention;
mod forwarded_for_is_believed_only_from_trusted_proxies;
mod graceful_shutdown_finishes_confirms_in_flight;
mod heic_photos_are_shown_upright_and_without_metadata;
mod large_files_go_up_in_parts;
mod live_walls_are_capped_per_address_and_event;
mod malformed_input_is_a_problem;
mod media_is_served_safely;
mod media_links_expire_and_survive_a_key_rotation;
mod media_urls_answer_range_requests;
mod migrations_run_once_and_are_checked;
mod moderation_and_wall;
mod no_connection_goes_back_inside_a_transaction;
mod multipart_confirm_is_create_or_return;
mod multipart_uploads_leave_no_parts_behind;
mod nothing_shared_carries_a_location;
mod one_guest_cannot_take_the_rendition_workers;
mod openapi_is_served;
mod operations_are_measured;
mod pages_are_served_with_a_content_security_policy;
mod part_urls_expire;
mod photos_are_shown_upright_and_without_metadata;
mod quotas_hold_per_event;
mod quotas_hold_per_session;
mod rate_limits_hold_per_client_address;
mod readiness_follows_the_object_store;
mod readiness_tells_strangers_only_whether_it_is_ready;
mod rejected_media_is_taken_down;
mod rejected_objects_are_deleted_after_retention;
mod rendition_jobs_survive_a_restart;
mod reservations_never_uploaded_stop_holding_the_event;
mod revoked_host_links_stop_working;
mod same_bytes_are_stored_once_per_scope;
mod sessions_do_not_leak_attempts;
mod signed_urls_are_bound;
mod slow_clients_are_cut_off;
mod static_assets_are_compressed_cached_and_preloaded;
mod status_reports_every_state;
mod store_restart_is_retryable;
mod the_openapi_document_does_not_change_by_itself;
// Holds confirms inside their transaction: the `test-hooks` feature
// (`cargo xtask test server` builds with it).
#[cfg(feature = "test-hooks")]
mod sweeper_never_orphans_media;
mod the_composite_checksum_is_never_guessed;
mod the_dedup_scope_is_chosen_per_event;
mod the_host_downloads_the_originals_as_one_zip;
mod the_hosts_list_is_paged_and_incremental;
mod the_host_reads_the_guest_code;
mod the_host_removes_a_guest;
mod the_host_rotates_the_guest_code_and_the_tokens;
mod the_service_worker_is_served_with_its_build;
mod the_wall_is_live;
mod the_wall_waits_for_the_renditions;
mod two_instances_confirm_once;
mod undecodable_files_get_a_placeholder_and_a_reason;
mod videos_are_shared_without_their_metadata;
mod what_a_crash_left_under_tmp_is_removed;
