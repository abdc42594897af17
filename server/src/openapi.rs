//! The OpenAPI 3.1 description, generated from the handlers and the wire
//! types so it cannot drift from the code. Served at `GET /openapi.json`.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::routes;

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
                SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).description(Some(about)).build()),
            );
        }
    }
}

/// The upload-once HTTP API.
#[derive(OpenApi)]
#[openapi(
    info(title = "upload-once", description = "Browser uploads stored exactly once: authorize, PUT to a signed URL, confirm (create-or-return), reconcile, moderate. See docs/protocol.md."),
    paths(
        routes::healthz,
        routes::readyz,
        routes::admin_sweep,
        routes::events::create_event,
        routes::events::create_session,
        routes::events::list_media,
        routes::events::moderate,
        routes::events::wall,
        routes::attempts::authorize,
        routes::attempts::renew,
        routes::attempts::status,
        routes::attempts::status_batch,
        routes::attempts::confirm,
        routes::storage::put_object,
        routes::storage::media_content,
    ),
    modifiers(&BearerSchemes),
)]
pub struct ApiDoc;
