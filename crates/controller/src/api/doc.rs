//! The OpenAPI document, gathered from the endpoints' annotations ([`super::endpoints`]) and the
//! documents' types. `fabricsim serve --openapi` prints it; docs/api/openapi.yaml is that output,
//! and a test keeps the two equal.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::endpoints::*;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "fabricsim TE controller",
        description = "The API of `fabricsim serve` (docs/commands/serve.md): a centralized \
traffic-engineering controller. Clients load a fabric, report link events, and register demand \
sets and jobs; the controller recomputes routes off the request path and serves them as \
per-switch next-hop tables keyed by (ingress port, destination prefix), with the link \
utilization of the traffic those tables forward.

Every change is committed to SQLite (WAL, synchronous=FULL) before it is acknowledged, and the \
acknowledgement carries the `state_version` it made. Routes follow: poll `/healthz` (or \
`/routes`) until `routes_current` is true (or `state_version` reaches yours).

GET and HEAD are open; POST, PUT and DELETE need `Authorization: Bearer TOKEN`, checked before \
the body is read. Request bodies over the size limit (`--max-body`, 8 MiB by default) get 413, \
and requests not answered within `--request-timeout` get 408. Bodies must be JSON documents \
with known fields only; a bad one gets 400 naming the field and changes nothing. Every error is \
`{\"error\": \"...\"}`.

This document is generated from the server's code (`fabricsim serve --openapi`); the server \
also serves it at `/openapi.json`.",
    ),
    servers((url = "http://127.0.0.1:8080")),
    security(("bearer" = [])),
    modifiers(&Bearer),
    paths(
        healthz,
        metrics,
        openapi,
        topology,
        load_topology,
        events,
        post_event,
        demand_sets,
        demand_set,
        put_demand_set,
        delete_demand_set,
        jobs,
        job,
        put_job,
        delete_job,
        routes,
        switch_routes,
        utilization,
    ),
    components(
        schemas(ErrorBody),
        responses(Changed, Invalid, Unauthorized, NotFound, NoFabric, TooLarge)
    )
)]
struct ApiDoc;

/// The `bearer` security scheme the writes name.
struct Bearer;

impl Modify for Bearer {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The document as YAML (docs/api/openapi.yaml).
pub fn yaml() -> String {
    ApiDoc::openapi()
        .to_yaml()
        .expect("the OpenAPI document serializes")
}

/// The document as JSON (`GET /openapi.json`).
pub fn json() -> String {
    ApiDoc::openapi()
        .to_json()
        .expect("the OpenAPI document serializes")
}

/// Every documented path, as written in the document (`/demands/{id}`).
pub fn paths() -> Vec<String> {
    ApiDoc::openapi().paths.paths.into_keys().collect()
}
