//! What a confirm decides (docs/protocol.md §3.4): in two steps, because the
//! server asks the object store between them, outside the attempt's row
//! lock.
//!
//! 1. [`before_looking`]: from the attempt as locked and the client's
//!    claim — answer the media again (a repeat), answer the attempt's end,
//!    expire it, reject a claim that contradicts the authorization, or look
//!    in the store.
//! 2. [`after_looking`]: from what the store holds — nothing yet (`409`),
//!    reject what contradicts the authorization or the claim (`422`), refuse
//!    a file spliced from two (`422 file_changed`, its upload aborted), or
//!    record the media under the key the store verified.

pub use super::{Attempt, Refusal};
use crate::error::ErrorCode;
use crate::wire::AttemptState;

/// What the client confirms.
#[derive(Clone, Copy, Debug)]
pub struct Claim<'a> {
    /// The file's size.
    pub size: u64,
    /// Its content type, normalized
    /// ([`crate::restrictions::normalize_content_type`]).
    pub content_type: &'a str,
    /// Its SHA-256, if the client sends one.
    pub sha256: Option<&'a str>,
    /// For a file in parts, the composite checksum of the client's file.
    pub composite: Option<&'a str>,
}

/// What a confirm does before it asks the store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Before {
    /// Already confirmed: answer its media again; nothing changes.
    Replay,
    /// Already over: answer this; nothing changes.
    Ended(Refusal),
    /// Past its expiry: record it expired, then answer this.
    Expire(Refusal),
    /// The claim contradicts the authorization: record the attempt rejected
    /// with this code and reason, then answer it.
    Reject(Refusal),
    /// Ask the store what it holds, then [`after_looking`].
    Look,
}

/// Step 1: what to do from the attempt and the claim alone.
pub fn before_looking(attempt: &Attempt<'_>, claim: &Claim<'_>) -> Before {
    match attempt.state {
        AttemptState::Confirmed => return Before::Replay,
        AttemptState::Expired => return Before::Ended(Refusal::expired()),
        AttemptState::Rejected => return Before::Ended(attempt.rejected()),
        AttemptState::Authorized => {}
    }
    if attempt.due {
        return Before::Expire(Refusal::expired());
    }
    match mismatch(attempt, "the confirmed file", claim.size, claim.content_type, claim.sha256) {
        Some(refusal) => Before::Reject(refusal),
        None => Before::Look,
    }
}

/// Whether a confirm will look in the store for an attempt as read before
/// its lock (the server looks before it locks, so that a slow store holds
/// no database lock): only when step 1 would say [`Before::Look`].
pub fn will_look(attempt: &Attempt<'_>, claim: &Claim<'_>) -> bool {
    before_looking(attempt, claim) == Before::Look
}

/// What the store holds for the attempt.
#[derive(Clone, Copy, Debug)]
pub enum Stored<'a> {
    /// Not everything is stored yet.
    Missing,
    /// Every part is stored, but their composite checksum is not the
    /// client's: a file spliced from two. Nothing was assembled.
    Spliced {
        /// The composite of the parts the store holds.
        composite: &'a str,
    },
    /// Every part is stored, but whether they are all of one file cannot be
    /// checked: every digest is known and the confirm claims no composite,
    /// or only some digests are known. Nothing was assembled.
    Unclaimed,
    /// The object.
    Object(Object<'a>),
}

/// A stored object, as the store reported it.
#[derive(Clone, Copy, Debug)]
pub struct Object<'a> {
    /// Its size.
    pub size: u64,
    /// The content type it was stored with.
    pub content_type: &'a str,
    /// Its SHA-256, when the store knows it.
    pub sha256: Option<&'a str>,
    /// For an object assembled from parts, its composite checksum, when
    /// known (the store's, or the one of the digests recorded).
    pub composite: Option<&'a str>,
}

/// What a confirm does with what the store holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum After {
    /// Not everything is stored: `409 object_missing`; nothing changes.
    NotYet(Refusal),
    /// A file in parts confirmed without its composite checksum, where the
    /// parts' digests are known ([`composite_required`]): answer this;
    /// nothing changes.
    Refuse(Refusal),
    /// The object contradicts the authorization or the claim: record the
    /// attempt rejected with this code and reason, then answer it.
    Reject(Refusal),
    /// A file spliced from two: record the attempt rejected
    /// (`file_changed`), abort its upload, then answer it.
    Splice(Refusal),
    /// Create the media record (or return the one that holds the same bytes
    /// in the event's dedup scope).
    Record(Record),
}

/// The media record a confirm creates, as far as the rules decide it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The SHA-256 to record: a single PUT's is the authorized one (the
    /// store refused other bytes), else the store's; an object assembled
    /// from parts has only its store's, if any.
    pub sha256: Option<String>,
    /// The composite checksum to record (parts).
    pub composite: Option<String>,
    /// The key the bytes are indexed under for dedup: what the store
    /// verified (a single PUT's SHA-256, or the composite); `None`: not
    /// indexed.
    pub content_key: Option<String>,
}

/// Step 2: what to do with what the store holds (the attempt is still as in
/// step 1: the server re-checks it under its lock).
pub fn after_looking(attempt: &Attempt<'_>, claim: &Claim<'_>, stored: Stored<'_>) -> After {
    let object = match stored {
        Stored::Missing => {
            return After::NotYet(Refusal::new(
                ErrorCode::ObjectMissing,
                "the object (or one of its parts) is not stored yet; upload it, then confirm again",
            ));
        }
        Stored::Spliced { composite } => {
            return After::Splice(Refusal::new(
                ErrorCode::FileChanged,
                format!(
                    "the parts stored have the composite checksum {composite}, but the file confirmed has {}: \
                     they are not all parts of one file",
                    claim.composite.unwrap_or_default()
                ),
            ));
        }
        Stored::Unclaimed => return After::Refuse(composite_required()),
        Stored::Object(object) => object,
    };
    // An object assembled by an earlier confirm whose answer was lost, whose
    // composite is known: a confirm must claim it too.
    if attempt.in_parts && claim.composite.is_none() && object.composite.is_some() {
        return After::Refuse(composite_required());
    }
    if let Some(refusal) = mismatch(attempt, "the stored object", object.size, object.content_type, object.sha256) {
        return After::Reject(refusal);
    }
    // An object assembled by an earlier confirm whose answer was lost: its
    // composite must be the client's file's too.
    if let (true, Some(claimed), Some(stored)) = (attempt.in_parts, claim.composite, object.composite) {
        if claimed != stored {
            return After::Splice(Refusal::new(
                ErrorCode::FileChanged,
                format!("the stored object has the composite checksum {stored}, but the file confirmed has {claimed}"),
            ));
        }
    }
    // A checksum the client claims must hold for the stored bytes, even when
    // the authorization carried none.
    if let (Some(claimed), Some(stored)) = (claim.sha256, object.sha256) {
        if claimed != stored {
            return After::Reject(Refusal::new(
                ErrorCode::ChecksumMismatch,
                format!("the stored object has SHA-256 {stored} but the client confirmed {claimed}"),
            ));
        }
    }
    let owned = |s: Option<&str>| s.map(str::to_owned);
    After::Record(if attempt.in_parts {
        Record {
            sha256: owned(object.sha256),
            composite: owned(object.composite),
            content_key: owned(object.composite),
        }
    } else {
        Record {
            sha256: owned(attempt.sha256.or(object.sha256)),
            composite: owned(object.composite),
            content_key: owned(object.sha256),
        }
    })
}

/// `400 malformed_request`: a file in parts is confirmed with the composite
/// checksum of the client's own file (`composite_sha256`, from the digests
/// it signed its parts with) whenever its parts' digests are known, and a
/// file some of whose parts were sent without their digest (or with two)
/// is not confirmed at all. Without it the server could not tell the parts of one file from
/// parts of two (some stored before a reload, the rest from a file picked
/// again), and would assemble and record a spliced object; so an older
/// client, or one whose hashing failed halfway, is refused visibly instead.
/// A client that signed no part with a digest stored nothing the server
/// can compare, and confirms without one.
pub fn composite_required() -> Refusal {
    Refusal::new(
        ErrorCode::MalformedRequest,
        "a file sent in parts is confirmed with its composite_sha256 (the SHA-256 of its parts' digests, and the \
         part count), and every part is sent with its digest: otherwise the parts stored cannot be checked to be \
         all of one file; pick the file again",
    )
}

/// A contradiction between what was authorized and `what` (the confirmed
/// file, or the stored object): its size, then its type, then its SHA-256
/// when both are known.
pub fn mismatch(
    attempt: &Attempt<'_>,
    what: &str,
    size: u64,
    content_type: &str,
    sha256: Option<&str>,
) -> Option<Refusal> {
    if size != attempt.size {
        return Some(Refusal::new(
            ErrorCode::SizeMismatch,
            format!("{what} is {size} bytes but {} were authorized", attempt.size),
        ));
    }
    if content_type != attempt.content_type {
        return Some(Refusal::new(
            ErrorCode::TypeMismatch,
            format!("{what} is {content_type} but {} was authorized", attempt.content_type),
        ));
    }
    if let (Some(expected), Some(actual)) = (attempt.sha256, sha256) {
        if expected != actual {
            return Some(Refusal::new(
                ErrorCode::ChecksumMismatch,
                format!("{what} has SHA-256 {actual} but {expected} was authorized"),
            ));
        }
    }
    None
}
