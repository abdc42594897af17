//! The problem answers (`application/problem+json`, a [`Problem`] body)
//! that several routes document alike. Each type here stands in a route's
//! `#[utoipa::path(responses(...))]` for its rows, and makes each row as
//! `(status = .., body = Problem, content_type = "application/problem+json",
//! description = ..)` makes it: the OpenAPI document is the same, written
//! once.

use std::collections::BTreeMap;

use upload_once_core::wire::Problem;
use utoipa::openapi::content::ContentBuilder;
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{IntoResponses, ToSchema};

/// The media type of every problem answer.
const PROBLEM_JSON: &str = "application/problem+json";

/// The documented responses of `rows`, each a status and its description
/// (empty when the route says no more of it).
fn problem_responses(rows: &[(u16, &str)]) -> BTreeMap<String, RefOr<Response>> {
    rows.iter()
        .map(|&(status, description)| {
            let body = ContentBuilder::new().schema(Some(Ref::from_schema_name(Problem::name()))).build();
            let response = ResponseBuilder::new().description(description).content(PROBLEM_JSON, body).build();
            (status.to_string(), RefOr::T(response))
        })
        .collect()
}

/// Declares each named set of problem answers: a unit type whose
/// [`IntoResponses`] documents its rows, `(status, description)`.
macro_rules! problem_answers {
    ($($(#[$doc:meta])* $name:ident = [$(($status:literal, $description:literal)),+ $(,)?];)+) => {$(
        $(#[$doc])*
        pub struct $name;

        impl IntoResponses for $name {
            fn responses() -> BTreeMap<String, RefOr<Response>> {
                problem_responses(&[$(($status, $description)),+])
            }
        }
    )+};
}

problem_answers! {
    /// `401` and `403`, said no more of: no credential, or one that does
    /// not open this route.
    CredentialRefused = [(401, ""), (403, "")];
    /// `404`, said no more of.
    NotFound = [(404, "")];
    /// What a wall refuses, said no more of: a cursor it did not issue
    /// (`400`), no credential (`401`), one that does not open it (`403`).
    WallRefused = [(400, ""), (401, ""), (403, "")];
    /// A guest route's request whose body does not parse
    /// (`malformed_request`), or whose id is not a UUID (`invalid_id`).
    MalformedRequest = [(400, "malformed_request, invalid_id")];
    /// A guest route without a live session.
    SessionRefused = [(401, "unauthorized, invalid_session")];
    /// An attempt already confirmed, which takes no more bytes.
    AlreadyConfirmed = [(409, "already_confirmed")];
    /// An attempt past its expiry.
    Expired = [(410, "expired")];
    /// The object store or the database does not answer now.
    Unavailable = [(503, "object_store_unavailable, database_unavailable (retryable)")];
    /// A media link that does not open its media: past its `exp`, or not
    /// one this server signed (or still can check).
    LinkRefused = [
        (403, "url_expired: the link is past its `exp` (links made before links expired, too); a fresh one comes with the status, the wall, the host's list"),
        (404, "not a link this server signed, or signed by a key it no longer has (`kid`); or no such media"),
    ];
    /// A rendition not served (yet): the host rejected its media, or it is
    /// still being made.
    RenditionWithheld = [
        (410, "removed: the host rejected this media (the host's own link, with `host=`, still answers)"),
        (503, "object_store_unavailable: the rendition is still being made (Retry-After)"),
    ];
}
