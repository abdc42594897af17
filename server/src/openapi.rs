//! The OpenAPI 3.1 description, generated from the handlers and the wire
//! types so it cannot drift from the code. Served at `GET /openapi.json`.
//!
//! The paths come from the same list as the router (`api` in routes/mod.rs):
//! each route is declared once, by its handler's `#[utoipa::path]`.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

struct BearerSchemes;

impl Modify for BearerSchemes {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        for (name, about) in [
            ("admin", "The admin token from the server's configuration"),
            ("host", "The event's host token"),
            ("session", "A guest session token from POST /v1/events/{slug}/sessions"),
            ("wall", "The event's wall token (or send the guest code as `code` or X-Guest-Code)"),
        ] {
            components.add_security_scheme(
                name,
                SecurityScheme::Http(
                    HttpBuilder::new().scheme(HttpAuthScheme::Bearer).description(Some(about)).build(),
                ),
            );
        }
    }
}

/// What the document says besides its paths: title, description and the
/// bearer security schemes.
#[derive(OpenApi)]
#[openapi(
    info(title = "upload-once", description = "Browser uploads stored exactly once: authorize, PUT to a signed URL, confirm (create-or-return), reconcile, moderate. See docs/protocol.md."),
    modifiers(&BearerSchemes),
)]
pub struct ApiDoc;

/// Finishes the document the router's list produced: a catch-all route
/// parameter (`{*key}`, as axum writes it) is written `{key}`, as OpenAPI
/// does.
pub fn finish(mut doc: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    doc.paths.paths =
        std::mem::take(&mut doc.paths.paths).into_iter().map(|(path, item)| (path.replace("{*", "{"), item)).collect();
    doc
}
