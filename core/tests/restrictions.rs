//! Size and type rules, filenames and checksums, as both sides check them.

use upload_once_core::error::ErrorCode;
use upload_once_core::restrictions::{
    MAX_FILENAME_BYTES, Restrictions, UNKNOWN_CONTENT_TYPE, check_filename, check_sha256, human_bytes,
    is_valid_content_type, is_valid_type_pattern, normalize_content_type, type_matches,
};

#[test]
fn content_types_are_normalised() {
    assert_eq!(normalize_content_type("Image/JPEG; charset=binary"), "image/jpeg");
    assert_eq!(normalize_content_type("  text/plain  "), "text/plain");
    assert_eq!(normalize_content_type(""), UNKNOWN_CONTENT_TYPE);
    assert_eq!(normalize_content_type("   "), "application/octet-stream");
    assert_eq!(normalize_content_type(";charset=utf-8"), UNKNOWN_CONTENT_TYPE);
}

#[test]
fn content_type_syntax() {
    for ok in ["image/jpeg", "image/svg+xml", "application/vnd.ms-excel", "video/mp4"] {
        assert!(is_valid_content_type(ok), "{ok}");
    }
    for bad in ["image", "image/", "/jpeg", "image/jp eg", "image/*", "*/*", "", "image/jpeg/x"] {
        assert!(!is_valid_content_type(bad), "{bad}");
    }
}

#[test]
fn type_pattern_syntax() {
    for ok in ["image/*", "*/*", "video/mp4", "application/vnd.api+json"] {
        assert!(is_valid_type_pattern(ok), "{ok}");
    }
    for bad in ["*/png", "image", "image/**", "", "/", "image/", "* /*"] {
        assert!(!is_valid_type_pattern(bad), "{bad}");
    }
}

#[test]
fn mime_patterns_match_types() {
    let cases = [
        ("image/*", "image/png", true),
        ("image/*", "image/svg+xml", true),
        ("image/*", "video/mp4", false),
        ("image/*", "imagex/png", false),
        ("*/*", "application/pdf", true),
        ("video/mp4", "video/mp4", true),
        ("video/mp4", "video/mp45", false),
        ("video/mp4", "video/webm", false),
        ("IMAGE/*", "image/png", true),
        (" video/mp4 ", "video/mp4", true),
        ("image/*", "image", false),
        ("image", "image/png", false),
    ];
    for (pattern, content_type, want) in cases {
        assert_eq!(type_matches(pattern, content_type), want, "{pattern} vs {content_type}");
    }
}

#[test]
fn size_limit_is_inclusive_and_explained() {
    let r = Restrictions { max_file_bytes: Some(25_000_000), allowed_types: vec![] };
    assert_eq!(r.check(25_000_000, "image/png"), Ok(()), "exactly the limit is allowed");
    let err = r.check(30_000_000, "image/png").unwrap_err();
    assert_eq!(err.code, ErrorCode::FileTooLarge);
    assert_eq!(err.message, "the file is 30 MB but at most 25 MB is allowed");
    let err = r.check(25_000_001, "image/png").unwrap_err();
    assert_eq!(err.code, ErrorCode::FileTooLarge, "one byte over is too large");
}

#[test]
fn types_outside_the_allow_list_are_refused_with_the_list() {
    let r = Restrictions { max_file_bytes: None, allowed_types: vec!["image/*".into(), "video/mp4".into()] };
    assert_eq!(r.check(10, "image/heic"), Ok(()));
    assert_eq!(r.check(10, "video/mp4"), Ok(()));
    let err = r.check(10, "application/pdf").unwrap_err();
    assert_eq!(err.code, ErrorCode::TypeNotAllowed);
    assert!(err.message.contains("application/pdf") && err.message.contains("image/*, video/mp4"), "{}", err.message);
    assert!(r.allows_type("image/png") && !r.allows_type("video/webm"));
}

#[test]
fn no_rules_allow_anything_non_empty() {
    let r = Restrictions::default();
    assert_eq!(r.check(u64::MAX, "application/x-anything"), Ok(()));
    assert_eq!(r.check(0, "image/png").unwrap_err().code, ErrorCode::EmptyFile);
}

#[test]
fn an_empty_file_is_reported_before_any_other_problem() {
    let r = Restrictions { max_file_bytes: Some(0), allowed_types: vec!["image/*".into()] };
    assert_eq!(r.check(0, "application/pdf").unwrap_err().code, ErrorCode::EmptyFile);
    assert_eq!(r.check(1, "application/pdf").unwrap_err().code, ErrorCode::FileTooLarge, "size before type");
}

#[test]
fn byte_counts_for_people() {
    assert_eq!(human_bytes(0), "0 bytes");
    assert_eq!(human_bytes(999), "999 bytes");
    assert_eq!(human_bytes(1000), "1 KB");
    assert_eq!(human_bytes(1500), "1.5 KB");
    assert_eq!(human_bytes(1_234_567), "1.2 MB");
    assert_eq!(human_bytes(5_000_000_000), "5 GB");
    assert_eq!(human_bytes(2_000_000_000_000_000), "2000 TB", "TB is the largest unit");
}

#[test]
fn byte_counts_that_round_to_a_thousand_use_the_next_unit() {
    // 999 999 bytes is 999.999 KB, shown with one decimal: "1000 KB" reads
    // wrong next to limits shown as "1 MB".
    assert_eq!(human_bytes(999_999), "1 MB");
    assert_eq!(human_bytes(999_999_999), "1 GB");
}

#[test]
fn filenames_are_1_to_255_bytes_without_control_characters() {
    assert_eq!(MAX_FILENAME_BYTES, 255);
    for ok in ["a", "photo (1).jpg", "fête.jpg", "写真.png", &"a".repeat(255), &"é".repeat(127)] {
        assert_eq!(check_filename(ok), Ok(()), "{ok:?}");
    }
    for bad in ["", &"a".repeat(256), &"é".repeat(128), "bad\nname", "tab\there", "nul\0", "del\u{7f}", "c1\u{85}"] {
        assert_eq!(check_filename(bad).unwrap_err().code, ErrorCode::InvalidFilename, "{bad:?}");
    }
}

#[test]
fn sha256_is_64_lowercase_hex_digits() {
    let good = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    assert_eq!(check_sha256(good), Ok(()));
    for bad in [
        &good.to_uppercase(),
        &good[..63],
        &format!("{good}0"),
        &good.replace('e', "g"),
        "",
        &format!(" {}", &good[1..]),
    ] {
        assert_eq!(check_sha256(bad).unwrap_err().code, ErrorCode::InvalidChecksum, "{bad:?}");
    }
}
