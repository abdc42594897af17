//! What authorize decides (docs/protocol.md §3.4), around the store's
//! create-or-return by id:
//!
//! 1. [`check`]: before anything is stored, the request itself — its
//!    filename, content type, checksum and the event's limits;
//! 2. [`same_file`]: the attempt the id names is this request's file (a
//!    repeat), or the id was used for another (`422 id_reused`);
//! 3. [`answer`]: a repeat of an attempt that has expired is `410 expired`;
//!    any other state is answered as it is.

use super::{Attempt, Refusal};
use crate::error::ErrorCode;
use crate::restrictions::{Restrictions, check_filename, check_sha256, is_valid_content_type, normalize_content_type};
use crate::wire::AuthorizeRequest;

/// Step 1: the request's own checks, against the event's limits. The
/// content type to record (normalized).
pub fn check(request: &AuthorizeRequest, limits: &Restrictions) -> Result<String, Refusal> {
    check_filename(&request.filename)?;
    let content_type = normalize_content_type(&request.content_type);
    if !is_valid_content_type(&content_type) {
        return Err(Refusal::new(
            ErrorCode::TypeNotAllowed,
            format!("`{}` is not a content type", request.content_type),
        ));
    }
    if let Some(sha) = &request.sha256 {
        check_sha256(sha)?;
    }
    limits.check(request.size, &content_type)?;
    Ok(content_type)
}

/// The file an attempt was authorized for.
#[derive(Clone, Copy, Debug)]
pub struct File<'a> {
    /// Its filename.
    pub filename: &'a str,
    /// Its size.
    pub size: u64,
    /// Its content type, normalized.
    pub content_type: &'a str,
    /// Its SHA-256, if one was given.
    pub sha256: Option<&'a str>,
}

/// Step 2: whether the attempt stored under the request's id (`recorded`)
/// is the file asked for (`requested`, after [`check`]). Another file under
/// a used id is `422 id_reused`: a new file needs a new id.
pub fn same_file(recorded: &File<'_>, requested: &File<'_>) -> Result<(), Refusal> {
    let same = recorded.filename == requested.filename
        && recorded.size == requested.size
        && recorded.content_type == requested.content_type
        && recorded.sha256 == requested.sha256;
    if same {
        return Ok(());
    }
    Err(Refusal::new(
        ErrorCode::IdReused,
        "this attempt id was already used for a different file; mint a new id for a new file",
    ))
}

/// Step 3: whether the attempt is answered: any state but expired (a
/// confirmed one with its media, a rejected one with its rejection).
pub fn answer(attempt: &Attempt<'_>) -> Result<(), Refusal> {
    if attempt.expired() {
        return Err(Refusal::expired());
    }
    Ok(())
}
