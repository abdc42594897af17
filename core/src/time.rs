//! Time as plain numbers: milliseconds since the Unix epoch (UTC).
//!
//! The core never reads a clock; callers pass `now` in. This module only
//! converts between those numbers and the text forms the protocol uses:
//! RFC 3339 timestamps in JSON and `Retry-After` headers.

/// Milliseconds since 1970-01-01T00:00:00Z.
pub type UnixMillis = i64;

/// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => 0,
    }
}

/// Formats a timestamp as RFC 3339 in UTC with millisecond precision,
/// e.g. `2026-11-30T04:00:00.000Z`.
pub fn format_rfc3339(ms: UnixMillis) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, mo, d) = civil_from_days(days);
    let (h, mi, s, milli) = (rem / 3_600_000, rem / 60_000 % 60, rem / 1000 % 60, rem % 1000);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z")
}

fn digits(text: &str) -> Option<i64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Parses an RFC 3339 timestamp (`Z` or a numeric offset, optional
/// fraction). Returns `None` for anything else.
pub fn parse_rfc3339(text: &str) -> Option<UnixMillis> {
    if !text.is_ascii() {
        return None;
    }
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let year = digits(&text[0..4])?;
    let month = digits(&text[5..7])? as u32;
    let day = digits(&text[8..10])? as u32;
    let (hour, minute, second) = (digits(&text[11..13])?, digits(&text[14..16])?, digits(&text[17..19])?);
    if !(1..=12).contains(&month)
        || day == 0
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &text[19..];
    let mut millis = 0i64;
    if let Some(frac) = rest.strip_prefix('.') {
        let end = frac.find(|c: char| !c.is_ascii_digit()).unwrap_or(frac.len());
        if end == 0 {
            return None;
        }
        let mut scaled = 0i64;
        for (i, c) in frac[..end].bytes().take(3).enumerate() {
            scaled += i64::from(c - b'0') * [100, 10, 1][i];
        }
        millis = scaled;
        rest = &frac[end..];
    }
    let offset_minutes = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && (rest.starts_with('+') || rest.starts_with('-')) && &rest[3..4] == ":" => {
            let sign = if rest.starts_with('-') { -1 } else { 1 };
            sign * (digits(&rest[1..3])? * 60 + digits(&rest[4..6])?)
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second.min(59) - offset_minutes * 60;
    Some(secs * 1000 + millis)
}

const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form
/// RFC 9110 requires senders to use in HTTP dates.
pub fn parse_http_date(text: &str) -> Option<UnixMillis> {
    if !text.is_ascii() {
        return None;
    }
    let parts: Vec<&str> = text.split_ascii_whitespace().collect();
    if parts.len() != 6 || parts[5] != "GMT" || !parts[0].ends_with(',') {
        return None;
    }
    let day = digits(parts[1])? as u32;
    let month = MONTHS.iter().position(|m| *m == parts[2])? as u32 + 1;
    let year = digits(parts[3])?;
    let hms: Vec<&str> = parts[4].split(':').collect();
    if hms.len() != 3 {
        return None;
    }
    let (h, m, s) = (digits(hms[0])?, digits(hms[1])?, digits(hms[2])?);
    if day == 0 || day > days_in_month(year, month) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    Some((days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s.min(59)) * 1000)
}

/// Formats a timestamp as an IMF-fixdate for HTTP headers.
pub fn format_http_date(ms: UnixMillis) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000) / 1000;
    let (y, mo, d) = civil_from_days(days);
    let weekday = DAYS[days.rem_euclid(7) as usize];
    format!(
        "{weekday}, {d:02} {} {y:04} {:02}:{:02}:{:02} GMT",
        MONTHS[mo as usize - 1],
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Parses a `Retry-After` header value (delay-seconds or an HTTP date) into
/// a delay in milliseconds from `now`. A date in the past is a zero delay.
pub fn parse_retry_after(value: &str, now: UnixMillis) -> Option<u64> {
    let value = value.trim();
    if let Some(secs) = digits(value) {
        return Some((secs as u64).saturating_mul(1000));
    }
    let at = parse_http_date(value)?;
    Some(at.saturating_sub(now).max(0) as u64)
}
