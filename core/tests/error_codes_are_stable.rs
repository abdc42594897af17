//! Error codes are a public contract: unique, parseable, with the right
//! HTTP status and retryability.

use std::collections::BTreeSet;

use upload_once_core::error::{Error, ErrorCode};

#[test]
fn every_code_parses_back_and_is_unique() {
    let mut seen = BTreeSet::new();
    for code in ErrorCode::ALL {
        assert_eq!(ErrorCode::parse(code.as_str()), Some(*code));
        assert!(seen.insert(code.as_str()), "duplicate code {code}");
        assert_eq!(code.to_string(), code.as_str());
        assert!(code.as_str().bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{code} is snake_case");
    }
    assert_eq!(ErrorCode::parse("Expired"), None);
    assert_eq!(ErrorCode::parse(""), None);
}

#[test]
fn client_only_codes_have_no_http_status() {
    let client_only = [
        "network",
        "storage_unavailable",
        "quota_exceeded",
        "needs_file",
        "file_unreadable",
        "too_many_files",
        "pick_too_large",
        "cancelled",
        "retries_exhausted",
        "invalid_options",
        "unexpected_response",
        "closed",
    ];
    for code in ErrorCode::ALL {
        let status = code.http_status();
        if client_only.contains(&code.as_str()) {
            assert_eq!(status, 0, "{code}");
        } else {
            assert!((400..=599).contains(&status), "{code} answers {status}");
        }
    }
}

#[test]
fn protocol_codes_have_their_documented_statuses() {
    let expected = [
        (ErrorCode::IdReused, 422),
        (ErrorCode::ObjectMissing, 409),
        (ErrorCode::AlreadyConfirmed, 409),
        (ErrorCode::Expired, 410),
        (ErrorCode::UrlExpired, 403),
        (ErrorCode::ObjectExists, 412),
        (ErrorCode::RateLimited, 429),
        (ErrorCode::RequestTimeout, 408),
        (ErrorCode::TooManyUnconfirmed, 403),
        (ErrorCode::SessionBytesExceeded, 403),
        (ErrorCode::TooManySessions, 403),
        (ErrorCode::EventBytesExceeded, 403),
        (ErrorCode::SessionFilesExceeded, 403),
        (ErrorCode::EventFilesExceeded, 403),
        (ErrorCode::TooManyIds, 422),
        (ErrorCode::SizeMismatch, 422),
        (ErrorCode::FileChanged, 422),
        (ErrorCode::Withdrawn, 410),
    ];
    for (code, status) in expected {
        assert_eq!(code.http_status(), status, "{code}");
    }
}

#[test]
fn only_transient_codes_are_retryable() {
    let retryable: BTreeSet<&str> = ErrorCode::ALL.iter().filter(|c| c.is_retryable()).map(|c| c.as_str()).collect();
    let want: BTreeSet<&str> = [
        "rate_limited",
        "request_timeout",
        "object_store_unavailable",
        "database_unavailable",
        "not_ready",
        "internal",
        "network",
        "object_missing",
    ]
    .into_iter()
    .collect();
    assert_eq!(retryable, want);
}

#[test]
fn errors_display_code_and_message() {
    let e = Error::new(ErrorCode::NeedsFile, "pick it again");
    assert_eq!(e.to_string(), "needs_file: pick it again");
    let boxed: Box<dyn std::error::Error> = Box::new(e);
    assert!(boxed.to_string().starts_with("needs_file"));
}

/// The TypeScript union the package ships names every code, and nothing
/// else: a code added to the enum without it fails here.
#[test]
fn the_typescript_union_names_every_code() {
    let dts = include_str!("../../src/uploader.d.ts");
    let start = dts.find("export type UploadErrorCode =").expect("the union");
    let union = &dts[start..start + dts[start..].find(';').expect("its end")];
    let named: BTreeSet<&str> = union.split('"').skip(1).step_by(2).collect();
    let codes: BTreeSet<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(named, codes);
}
