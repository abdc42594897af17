//! Where the same bytes are looked for, and what counts as the same file
//! (the content identity beside the attempt id, docs/protocol.md §3.14).
//!
//! - [`scope`]: whose uploads an attempt's bytes are compared with, by the
//!   event's choice;
//! - [`claim_matches`]: at authorize, whether the media indexed under the
//!   claimed SHA-256 is this file (then the attempt is a duplicate of it,
//!   confirmed at once, and nothing is sent);
//! - [`bytes_added`]: what a new attempt adds to the quotas;
//! - [`is_duplicate`]: whether an attempt sees a media as a duplicate.
//!
//! At confirm, the key is the one the store verified ([`super::confirm`]),
//! and the bytes are compared under it whatever was claimed.

use crate::wire::Dedup;

/// Whose uploads an attempt's bytes are compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Only the uploads of the attempt's own guest session.
    OwnSession,
    /// Every upload of the event.
    Event,
}

/// The scope the event chose: `None` when it keeps every upload.
pub fn scope(dedup: Dedup) -> Option<Scope> {
    match dedup {
        Dedup::None => None,
        Dedup::Guest => Some(Scope::OwnSession),
        Dedup::Event => Some(Scope::Event),
    }
}

/// The file of a media the content index holds, as a claimer sees it.
#[derive(Clone, Copy, Debug)]
pub struct Indexed<'a> {
    /// Its size in bytes.
    pub size: u64,
    /// Its content type, normalized.
    pub content_type: &'a str,
    /// Whether the claimer can already see that media: its own session
    /// stored it, or the host approved it (it is on the wall, which every
    /// guest of the event sees).
    pub seen_by_claimer: bool,
}

/// At authorize: whether the claim is answered "already shared":
/// `indexed`, the media the content index holds in scope under the
/// request's claimed SHA-256, is the file asked for (the same size and
/// content type too), and the claimer can already see it.
///
/// A claim that differs in size or type is not that file; a claim of a
/// media the claimer cannot see (another guest's photo waiting for the host,
/// or rejected) is answered exactly as a new file, since a claim is only a
/// hash, and "already shared" would tell a hash-guessing guest what others
/// sent. Either way the attempt is authorized like any other, its bytes go
/// up, and its confirm checks them: bytes the store verified as the same
/// are then kept once ([`is_duplicate`]), the uploader having shown it holds
/// the file.
pub fn claim_matches(indexed: &Indexed<'_>, size: u64, content_type: &str) -> bool {
    indexed.seen_by_claimer && indexed.size == size && indexed.content_type == content_type
}

/// The bytes a new attempt of `size` bytes adds to the quotas
/// ([`super::quota`]): none for a duplicate, which stores nothing.
pub fn bytes_added(duplicate: bool, size: u64) -> u64 {
    if duplicate { 0 } else { size }
}

/// Whether an attempt sees a media as a duplicate: another attempt (not
/// itself, `own`) stored it.
pub fn is_duplicate<Id: PartialEq>(stored_by: Id, own: Id) -> bool {
    stored_by != own
}
