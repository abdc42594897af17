//! What may be uploaded: size limits, allowed types, sane filenames and
//! checksums. The server checks these at `authorize`; the client checks the
//! same rules before anything touches the network.

use crate::error::{Error, ErrorCode, Result};

/// The longest filename accepted, in bytes of UTF-8.
pub const MAX_FILENAME_BYTES: usize = 255;

/// The content type a browser reports as `""` is treated as this.
pub const UNKNOWN_CONTENT_TYPE: &str = "application/octet-stream";

/// Normalises a `Content-Type` value: lowercase, parameters dropped,
/// surrounding whitespace trimmed, empty becomes `application/octet-stream`.
pub fn normalize_content_type(value: &str) -> String {
    let essence = value.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    if essence.is_empty() { UNKNOWN_CONTENT_TYPE.to_owned() } else { essence }
}

fn is_token(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
}

/// Whether `value` is a syntactically valid `type/subtype` (no parameters).
pub fn is_valid_content_type(value: &str) -> bool {
    match value.split_once('/') {
        Some((t, s)) => is_token(t) && is_token(s),
        None => false,
    }
}

/// Whether `pattern` is a valid allow-list entry: `type/subtype`,
/// `type/*` or `*/*`.
pub fn is_valid_type_pattern(pattern: &str) -> bool {
    match pattern.split_once('/') {
        Some(("*", "*")) => true,
        Some((t, "*")) => is_token(t),
        Some((t, s)) => is_token(t) && is_token(s),
        None => false,
    }
}

/// Whether a (normalised) content type matches an allow-list pattern.
pub fn type_matches(pattern: &str, content_type: &str) -> bool {
    let pattern = pattern.trim().to_ascii_lowercase();
    let Some((pt, ps)) = pattern.split_once('/') else {
        return false;
    };
    let Some((ct, cs)) = content_type.split_once('/') else {
        return false;
    };
    (pt == "*" || pt == ct) && (ps == "*" || ps == cs)
}

/// Upload restrictions: the event's, the app's, or both combined.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Restrictions {
    /// The largest accepted file in bytes; `None` means no limit.
    pub max_file_bytes: Option<u64>,
    /// Allowed content-type patterns; empty means any type.
    pub allowed_types: Vec<String>,
}

impl Restrictions {
    /// Whether a type is allowed.
    pub fn allows_type(&self, content_type: &str) -> bool {
        self.allowed_types.is_empty() || self.allowed_types.iter().any(|p| type_matches(p, content_type))
    }

    /// Checks one file. `content_type` should already be normalised.
    pub fn check(&self, size: u64, content_type: &str) -> Result<()> {
        if size == 0 {
            return Err(Error::new(ErrorCode::EmptyFile, "the file is empty"));
        }
        if let Some(max) = self.max_file_bytes {
            if size > max {
                return Err(Error::new(
                    ErrorCode::FileTooLarge,
                    format!("the file is {} but at most {} is allowed", human_bytes(size), human_bytes(max)),
                ));
            }
        }
        if !self.allows_type(content_type) {
            return Err(Error::new(
                ErrorCode::TypeNotAllowed,
                format!("{content_type} files are not accepted here (allowed: {})", self.allowed_types.join(", ")),
            ));
        }
        Ok(())
    }
}

/// Caps on one pick (one `add`), checked before anything is recorded or
/// sent: a pick over either is refused whole, each of its files with the
/// same error, so the guest picks fewer and nothing of the first pick
/// remains.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PickLimits {
    /// The most files one pick may hold; `None` means no limit.
    pub max_files: Option<u32>,
    /// The most bytes the files of one pick may add up to; `None` means no
    /// limit.
    pub max_bytes: Option<u64>,
}

impl PickLimits {
    /// Checks a pick of `count` files whose sizes add up to `total_bytes`.
    pub fn check(&self, count: usize, total_bytes: u64) -> Result<()> {
        if let Some(max) = self.max_files {
            if count > max as usize {
                let files = |n: usize| if n == 1 { "1 file".to_owned() } else { format!("{n} files") };
                return Err(Error::new(
                    ErrorCode::TooManyFiles,
                    format!(
                        "{} were picked at once but at most {} can be: pick fewer",
                        files(count),
                        files(max as usize)
                    ),
                ));
            }
        }
        if let Some(max) = self.max_bytes {
            if total_bytes > max {
                return Err(Error::new(
                    ErrorCode::PickTooLarge,
                    format!(
                        "the files picked add up to {} but at most {} can be picked at once: pick fewer",
                        human_bytes(total_bytes),
                        human_bytes(max)
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Checks a filename: 1..=255 bytes, no control characters.
pub fn check_filename(name: &str) -> Result<()> {
    // Bidirectional overrides would let a name display as something else
    // ("photo\u{202e}gpj.exe" shows as "photoexe.jpg").
    let spoofing = |c: char| matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}');
    if name.is_empty() || name.len() > MAX_FILENAME_BYTES || name.chars().any(|c| c.is_control() || spoofing(c)) {
        return Err(Error::new(
            ErrorCode::InvalidFilename,
            "the filename must be 1 to 255 bytes without control or text-direction characters",
        ));
    }
    Ok(())
}

/// Checks a SHA-256 given as 64 lowercase hex digits.
pub fn check_sha256(hex: &str) -> Result<()> {
    if hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        Ok(())
    } else {
        Err(Error::new(ErrorCode::InvalidChecksum, "sha256 must be 64 lowercase hex digits"))
    }
}

/// Formats a byte count for messages: `1.5 MB`, `300 bytes`. Integer
/// arithmetic only (no float formatting in the wasm build).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1000 {
        return format!("{bytes} bytes");
    }
    let mut divisor: u64 = 1000;
    for (i, unit) in UNITS.iter().enumerate() {
        // Tenths of the unit, rounded half up; decide on the rounded value:
        // 999,999 bytes is "1 MB", not "1000 KB".
        // u128 arithmetic: no overflow for any u64 (and no u128 formatting).
        let tenths = ((u128::from(bytes) * 10 + u128::from(divisor) / 2) / u128::from(divisor)) as u64;
        if tenths < 10_000 || i == UNITS.len() - 1 {
            let (whole, frac) = (tenths / 10, tenths % 10);
            return if frac == 0 { format!("{whole} {unit}") } else { format!("{whole}.{frac} {unit}") };
        }
        divisor = divisor.saturating_mul(1000);
    }
    unreachable!("the last unit always returns")
}
