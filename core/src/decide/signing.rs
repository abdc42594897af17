//! Whether a URL may be signed for an attempt now (docs/protocol.md §3.8
//! and §3.8a): a renew (its one URL again, or its plan of parts) and a
//! request for parts, and which parts such a request may name.

use std::collections::BTreeSet;

use super::{Attempt, Refusal};
use crate::error::ErrorCode;
use crate::restrictions::check_sha256;
use crate::wire::{AttemptState, MAX_PARTS_PER_REQUEST, PartRequest};

/// `POST /renew`: only an authorized attempt that is not past its expiry;
/// else `410 expired`, `409 already_confirmed`, or its rejection.
pub fn renew(attempt: &Attempt<'_>) -> Result<(), Refusal> {
    if attempt.expired() {
        return Err(Refusal::expired());
    }
    alive(attempt)
}

/// `POST /parts`: as [`renew`], and only for an attempt sent in parts
/// (`422 not_multipart`, said before its state).
pub fn parts(attempt: &Attempt<'_>) -> Result<(), Refusal> {
    if attempt.expired() {
        return Err(Refusal::expired());
    }
    if !attempt.in_parts {
        return Err(Refusal::new(ErrorCode::NotMultipart, "this attempt goes up in one PUT: renew it for a fresh URL"));
    }
    alive(attempt)
}

fn alive(attempt: &Attempt<'_>) -> Result<(), Refusal> {
    match attempt.state {
        AttemptState::Authorized => Ok(()),
        AttemptState::Confirmed => Err(Refusal::already_confirmed()),
        AttemptState::Rejected => Err(attempt.rejected()),
        AttemptState::Expired => Err(Refusal::expired()),
    }
}

fn invalid_part(reason: String) -> Refusal {
    Refusal::new(ErrorCode::InvalidPart, reason)
}

/// A `POST /parts` body against the attempt's `part_count`: 1 to
/// [`MAX_PARTS_PER_REQUEST`] parts, each number in `1..=part_count` and
/// asked once (`invalid_part`), each SHA-256 64 lowercase hex digits
/// (`invalid_checksum`).
pub fn part_requests(parts: &[PartRequest], part_count: u32) -> Result<(), Refusal> {
    if parts.is_empty() {
        return Err(invalid_part("ask for at least one part".into()));
    }
    if parts.len() > MAX_PARTS_PER_REQUEST {
        return Err(invalid_part(format!("at most {MAX_PARTS_PER_REQUEST} parts per request, not {}", parts.len())));
    }
    let mut seen = BTreeSet::new();
    for part in parts {
        if !(1..=part_count).contains(&part.number) {
            return Err(invalid_part(format!(
                "part {} does not exist: this attempt has parts 1 to {part_count}",
                part.number
            )));
        }
        if !seen.insert(part.number) {
            return Err(invalid_part(format!("part {} is asked for twice", part.number)));
        }
        if let Some(sha) = &part.sha256 {
            check_sha256(sha)?;
        }
    }
    Ok(())
}
