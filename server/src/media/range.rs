//! HTTP Range requests (RFC 9110 §14) on the media URLs: one byte range
//! per answer.
//!
//! - `bytes=a-b`, `bytes=a-` and `bytes=-n` are answered `206 Partial
//!   Content` with `Content-Range: bytes a-b/size` (an end past the object is
//!   cut to its last byte).
//! - A range that starts at or past the end, or a suffix of 0 bytes, is
//!   unsatisfiable: `416` with `Content-Range: bytes */size`.
//! - Several ranges in one request (`bytes=0-1,5-6`) are not answered as
//!   `multipart/byteranges`: the whole body is sent, `200`, as RFC 9110
//!   lets a server do with any Range it does not take. So is a Range in
//!   another unit or not well formed, and one whose `If-Range` no longer
//!   matches the object's ETag.

/// What to send for a request's `Range` (and `If-Range`) headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeAnswer {
    /// `200` with the whole body.
    Full,
    /// `206` with bytes `first..=last`.
    Partial {
        /// The first byte.
        first: u64,
        /// The last byte (inclusive).
        last: u64,
    },
    /// `416 Range Not Satisfiable`.
    Unsatisfiable,
}

/// Decides the answer to `range` (the `Range` header, if any) for an object
/// of `size` bytes whose entity tag is `etag`, given `if_range`.
pub fn answer(range: Option<&str>, if_range: Option<&str>, size: u64, etag: &str) -> RangeAnswer {
    let Some(range) = range else { return RangeAnswer::Full };
    // If-Range with a date, or another tag: the representation may have
    // changed, so the whole of it.
    if let Some(tag) = if_range {
        if tag.trim() != etag || etag.starts_with("W/") {
            return RangeAnswer::Full;
        }
    }
    let Some(spec) = range.trim().strip_prefix("bytes=") else { return RangeAnswer::Full };
    if spec.contains(',') {
        return RangeAnswer::Full;
    }
    let Some((start, end)) = spec.trim().split_once('-') else { return RangeAnswer::Full };
    let (start, end) = (start.trim(), end.trim());
    let number = |s: &str| -> Option<u64> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) { None } else { s.parse().ok() }
    };
    match (start.is_empty(), end.is_empty()) {
        // bytes=-n: the last n bytes.
        (true, false) => match number(end) {
            Some(0) => RangeAnswer::Unsatisfiable,
            Some(_) if size == 0 => RangeAnswer::Unsatisfiable,
            Some(n) => RangeAnswer::Partial { first: size.saturating_sub(n), last: size - 1 },
            None => RangeAnswer::Full,
        },
        // bytes=a- : from a to the end.
        (false, true) => match number(start) {
            Some(first) if first >= size => RangeAnswer::Unsatisfiable,
            Some(first) => RangeAnswer::Partial { first, last: size - 1 },
            None => RangeAnswer::Full,
        },
        // bytes=a-b
        (false, false) => match (number(start), number(end)) {
            (Some(first), Some(last)) if last < first => RangeAnswer::Full,
            (Some(first), Some(_)) if first >= size => RangeAnswer::Unsatisfiable,
            (Some(first), Some(last)) => RangeAnswer::Partial { first, last: last.min(size - 1) },
            _ => RangeAnswer::Full,
        },
        (true, true) => RangeAnswer::Full,
    }
}

#[cfg(test)]
mod tests {
    use super::RangeAnswer::*;
    use super::answer;

    const TAG: &str = "\"abc\"";

    #[test]
    fn single_ranges_are_cut_to_the_object() {
        assert_eq!(answer(Some("bytes=0-9"), None, 100, TAG), Partial { first: 0, last: 9 });
        assert_eq!(answer(Some("bytes=90-"), None, 100, TAG), Partial { first: 90, last: 99 });
        assert_eq!(answer(Some("bytes=90-1000"), None, 100, TAG), Partial { first: 90, last: 99 });
        assert_eq!(answer(Some("bytes=-10"), None, 100, TAG), Partial { first: 90, last: 99 });
        assert_eq!(answer(Some("bytes=-1000"), None, 100, TAG), Partial { first: 0, last: 99 });
        assert_eq!(answer(Some("bytes=0-"), None, 1, TAG), Partial { first: 0, last: 0 });
    }

    #[test]
    fn ranges_past_the_end_are_unsatisfiable() {
        assert_eq!(answer(Some("bytes=100-"), None, 100, TAG), Unsatisfiable);
        assert_eq!(answer(Some("bytes=100-200"), None, 100, TAG), Unsatisfiable);
        assert_eq!(answer(Some("bytes=-0"), None, 100, TAG), Unsatisfiable);
        assert_eq!(answer(Some("bytes=0-"), None, 0, TAG), Unsatisfiable);
        assert_eq!(answer(Some("bytes=-5"), None, 0, TAG), Unsatisfiable);
    }

    #[test]
    fn what_is_not_one_well_formed_byte_range_gets_the_whole_body() {
        for range in ["bytes=0-1,5-6", "items=0-1", "bytes=5-1", "bytes=a-b", "bytes=-", "bytes=", "bytes=+1-2"] {
            assert_eq!(answer(Some(range), None, 100, TAG), Full, "{range}");
        }
        assert_eq!(answer(None, None, 100, TAG), Full);
    }

    #[test]
    fn if_range_with_another_tag_gets_the_whole_body() {
        assert_eq!(answer(Some("bytes=0-9"), Some(TAG), 100, TAG), Partial { first: 0, last: 9 });
        assert_eq!(answer(Some("bytes=0-9"), Some("\"other\""), 100, TAG), Full);
        assert_eq!(answer(Some("bytes=0-9"), Some("Tue, 15 Nov 1994 08:12:31 GMT"), 100, TAG), Full);
    }
}
