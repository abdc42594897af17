//! RFC 3339 and HTTP-date conversions, and `Retry-After` in both forms.

mod support;

use support::{T0, TestRng};
use upload_once_core::time::{format_http_date, format_rfc3339, parse_http_date, parse_retry_after, parse_rfc3339};

const DAY: i64 = 86_400_000;

#[test]
fn formats_utc_with_milliseconds() {
    assert_eq!(format_rfc3339(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(format_rfc3339(T0), "2026-11-30T04:00:00.000Z");
    assert_eq!(format_rfc3339(T0 + 1), "2026-11-30T04:00:00.001Z");
    assert_eq!(format_rfc3339(-1), "1969-12-31T23:59:59.999Z", "before the epoch rounds toward the past");
    assert_eq!(format_rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z", "2000 is a leap year (divisible by 400)");
}

#[test]
fn leap_days_exist_only_in_leap_years() {
    assert!(parse_rfc3339("2024-02-29T12:00:00Z").is_some());
    assert!(parse_rfc3339("2000-02-29T12:00:00Z").is_some(), "divisible by 400");
    assert_eq!(parse_rfc3339("2023-02-29T12:00:00Z"), None);
    assert_eq!(parse_rfc3339("1900-02-29T12:00:00Z"), None, "divisible by 100, not 400");
    assert_eq!(parse_rfc3339("2100-02-29T12:00:00Z"), None);
    let feb28 = parse_rfc3339("2024-02-28T00:00:00Z").unwrap();
    let mar1 = parse_rfc3339("2024-03-01T00:00:00Z").unwrap();
    assert_eq!(mar1 - feb28, 2 * DAY, "2024 has a Feb 29 between them");
    let dec31 = parse_rfc3339("2024-12-31T00:00:00Z").unwrap();
    let jan1 = parse_rfc3339("2024-01-01T00:00:00Z").unwrap();
    assert_eq!(dec31 - jan1, 365 * DAY, "day 366 of a leap year");
    assert_eq!(format_rfc3339(jan1 + 59 * DAY), "2024-02-29T00:00:00.000Z");
}

#[test]
fn format_then_parse_is_the_identity() {
    let mut rng = TestRng::new(5);
    let lo = parse_rfc3339("0001-01-01T00:00:00Z").unwrap();
    let hi = parse_rfc3339("9999-12-31T23:59:59.999Z").unwrap();
    let mut samples = vec![0, -1, 1, T0, lo, hi, 951_782_400_000 - 1, 951_782_400_000];
    samples.extend((0..5000).map(|_| rng.range(lo, hi)));
    for ms in samples {
        let text = format_rfc3339(ms);
        assert_eq!(parse_rfc3339(&text), Some(ms), "{ms} -> {text}");
    }
}

#[test]
fn numeric_offsets_are_converted_to_utc() {
    let t0 = Some(T0);
    assert_eq!(parse_rfc3339("2026-11-30T04:00:00Z"), t0);
    assert_eq!(parse_rfc3339("2026-11-30T05:30:00+01:30"), t0);
    assert_eq!(parse_rfc3339("2026-11-29T23:00:00-05:00"), t0, "a negative offset on the previous day");
    assert_eq!(parse_rfc3339("2026-11-30T04:00:00+00:00"), t0);
    assert_eq!(parse_rfc3339("2026-11-30T04:00:00-00:00"), t0);
    assert_eq!(parse_rfc3339("2026-12-31T20:00:00-05:00"), parse_rfc3339("2027-01-01T01:00:00Z"), "across a year");
    assert_eq!(
        parse_rfc3339("2024-03-01T00:30:00+01:00"),
        parse_rfc3339("2024-02-29T23:30:00Z"),
        "back into a leap day"
    );
}

#[test]
fn fractions_lowercase_and_space_separator() {
    assert_eq!(parse_rfc3339("2026-11-30T04:00:00.5Z"), Some(T0 + 500));
    assert_eq!(parse_rfc3339("2026-11-30T04:00:00.12Z"), Some(T0 + 120));
    assert_eq!(parse_rfc3339("2026-11-30T04:00:00.123456789Z"), Some(T0 + 123), "sub-millisecond digits are dropped");
    assert_eq!(parse_rfc3339("2026-11-30t04:00:00z"), Some(T0));
    assert_eq!(parse_rfc3339("2026-11-30 04:00:00Z"), Some(T0));
    assert_eq!(parse_rfc3339("2026-11-30T04:00:00.250+02:00"), Some(T0 - 2 * 3_600_000 + 250));
}

#[test]
fn malformed_timestamps_are_rejected() {
    for text in [
        "",
        "2026-11-30",
        "2026-11-30T04:00:00",
        "2026-11-30T04:00:00+0100",
        "2026-11-30T04:00:00+01",
        "2026-11-30T04:00:00.Z",
        "2026-11-30T04:00:00 Z",
        "2026-13-01T00:00:00Z",
        "2026-00-01T00:00:00Z",
        "2026-11-31T00:00:00Z",
        "2026-11-00T00:00:00Z",
        "2026-11-30T24:00:00Z",
        "2026-11-30T04:60:00Z",
        "2026/11/30T04:00:00Z",
        "x026-11-30T04:00:00Z",
        "+026-11-30T04:00:00Z",
        "2026-11-30T04:00:00ZZ",
        "Mon, 30 Nov 2026 04:00:00 GMT",
    ] {
        assert_eq!(parse_rfc3339(text), None, "{text:?} should not parse");
    }
}

#[test]
fn non_ascii_text_is_rejected_without_panicking() {
    // Timestamps come from the network: a garbled one must be a `None`, not
    // a panic (which aborts the whole wasm uploader). Each of these places a
    // multi-byte character across one of the fixed byte offsets the parser
    // slices at.
    for text in ["2026-11-30T04:00:0\u{e9}0Z", "2026-11-30T04:00:00+0\u{e9}00", "2026-11-30T04:00:00\u{e9}:00Z"] {
        let parsed = std::panic::catch_unwind(|| parse_rfc3339(text));
        assert!(matches!(parsed, Ok(None)), "{text:?}: expected Ok(None), got {parsed:?}");
    }
}

#[test]
fn http_dates_parse_and_format() {
    let rfc_example = 784_111_777_000; // RFC 9110's example instant
    assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), Some(rfc_example));
    assert_eq!(format_http_date(rfc_example), "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_eq!(format_http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    assert_eq!(format_http_date(T0), "Mon, 30 Nov 2026 04:00:00 GMT");
    assert_eq!(format_http_date(-1), "Wed, 31 Dec 1969 23:59:59 GMT");
    assert_eq!(format_http_date(T0 + 999), format_http_date(T0), "HTTP dates have whole seconds");
    assert_eq!(parse_http_date("Thu, 29 Feb 2024 00:00:00 GMT"), parse_rfc3339("2024-02-29T00:00:00Z"));
}

#[test]
fn http_date_round_trip_at_second_precision() {
    let mut rng = TestRng::new(6);
    for _ in 0..2000 {
        let ms = rng.range(0, 253_402_300_799_000) / 1000 * 1000;
        assert_eq!(parse_http_date(&format_http_date(ms)), Some(ms), "{}", format_http_date(ms));
    }
}

#[test]
fn obsolete_or_broken_http_dates_are_rejected() {
    for text in [
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994",
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 06 Nov 1994 08:49 GMT",
        "Sun 06 Nov 1994 08:49:37 GMT",
        "Sun, 06 November 1994 08:49:37 GMT",
        "Sun, 31 Feb 2024 00:00:00 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "",
    ] {
        assert_eq!(parse_http_date(text), None, "{text:?}");
    }
}

#[test]
fn retry_after_accepts_seconds_and_dates() {
    assert_eq!(parse_retry_after("120", T0), Some(120_000));
    assert_eq!(parse_retry_after(" 0 ", T0), Some(0));
    let in_30s = format_http_date(T0 + 30_000);
    assert_eq!(parse_retry_after(&in_30s, T0), Some(30_000));
    assert_eq!(parse_retry_after(&in_30s, T0 + 400), Some(29_600), "relative to now, in milliseconds");
    let past = format_http_date(T0 - 60_000);
    assert_eq!(parse_retry_after(&past, T0), Some(0), "a date in the past means now");
    assert_eq!(parse_retry_after("99999999999999999", T0), Some(u64::MAX), "saturates, never wraps");
    for bad in ["-1", "1.5", "soon", "", "12s"] {
        assert_eq!(parse_retry_after(bad, T0), None, "{bad:?}");
    }
}
