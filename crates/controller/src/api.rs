//! The HTTP JSON API, as a function from a request to a response (the server only moves bytes):
//! the dispatch here, one function per endpoint in [`endpoints`], and the OpenAPI document
//! generated from those functions' annotations in [`doc`] (docs/api/openapi.yaml is its output).
//! The rules common to all:
//!
//! - `GET` is open; `POST`, `PUT` and `DELETE` need `Authorization: Bearer TOKEN` (401 without).
//! - Bodies are JSON documents with known fields only; a bad one gets 400 naming the field, and
//!   changes nothing. A body over the size limit gets 413 (checked by the server).
//! - Errors are `{"error": "..."}` with a 4xx or 5xx status.

pub mod doc;
pub mod endpoints;

use serde_json::{json, Value};

use crate::controller::Controller;
use crate::model::valid_id;

pub struct Request<'a> {
    pub method: &'a str,
    /// The path and query, as sent (`/utilization?top=10`).
    pub url: &'a str,
    /// The token of an `Authorization: Bearer` header.
    pub bearer: Option<&'a str>,
    pub body: &'a [u8],
}

pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Response {
    fn json(status: u16, value: &Value) -> Response {
        let mut body = serde_json::to_vec(value).expect("JSON values serialize");
        body.push(b'\n');
        Response {
            status,
            content_type: "application/json",
            body,
        }
    }
}

/// A request refused, with its status.
#[derive(Debug)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
}

impl ApiError {
    pub fn invalid(message: String) -> ApiError {
        ApiError {
            status: 400,
            message,
        }
    }
    pub fn not_found(message: String) -> ApiError {
        ApiError {
            status: 404,
            message,
        }
    }
    pub fn no_fabric() -> ApiError {
        ApiError {
            status: 409,
            message: "no fabric loaded: POST /topology first".into(),
        }
    }
    pub fn internal(message: String) -> ApiError {
        ApiError {
            status: 500,
            message,
        }
    }
    pub fn too_large(limit: usize) -> ApiError {
        ApiError {
            status: 413,
            message: format!("request body over the limit of {limit} bytes"),
        }
    }
    pub fn response(&self) -> Response {
        Response::json(self.status, &json!({ "error": self.message }))
    }
}

/// The 401 for a request of `method` whose bearer token is not the controller's; `None` for
/// a read (`GET`, `HEAD`) or an authorized write. The server asks before it reads a body.
pub fn refusal(ctl: &Controller, method: &str, bearer: Option<&str>) -> Option<Response> {
    let read = matches!(method, "GET" | "HEAD");
    (!read && !ctl.authorized(bearer)).then(|| {
        ApiError {
            status: 401,
            message: "this method needs `Authorization: Bearer TOKEN`".into(),
        }
        .response()
    })
}

pub fn handle(ctl: &Controller, req: &Request<'_>) -> Response {
    if let Some(r) = refusal(ctl, req.method, req.bearer) {
        return r;
    }
    let (path, query) = req.url.split_once('?').unwrap_or((req.url, ""));
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    // HEAD is GET without the body (the server sends no body for it).
    let req = Request {
        method: if req.method == "HEAD" {
            "GET"
        } else {
            req.method
        },
        url: req.url,
        bearer: req.bearer,
        body: req.body,
    };
    match route(ctl, &req, &segments, query) {
        Ok(r) => r,
        Err(e) => e.response(),
    }
}

/// The `key=value` pairs of a query string, split on `&`; every key must be one of `known`.
pub(crate) fn query_pairs<'q>(
    query: &'q str,
    known: &[&str],
) -> Result<Vec<(&'q str, &'q str)>, ApiError> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            if known.contains(&k) {
                Ok((k, v))
            } else {
                Err(ApiError::invalid(format!(
                    "unknown query parameter `{k}`; expected {}",
                    known.join(", ")
                )))
            }
        })
        .collect()
}

fn route(
    ctl: &Controller,
    req: &Request<'_>,
    segments: &[&str],
    query: &str,
) -> Result<Response, ApiError> {
    use endpoints as e;
    match (req.method, segments) {
        ("GET", ["healthz"]) => ok(e::healthz(ctl)),
        ("GET", ["metrics"]) => Ok(Response {
            status: 200,
            content_type: "text/plain; version=0.0.4",
            body: e::metrics(ctl).into_bytes(),
        }),
        ("GET", ["openapi.json"]) => Ok(Response {
            status: 200,
            content_type: "application/json",
            body: e::openapi().into_bytes(),
        }),
        ("GET", ["topology"]) => ok(e::topology(ctl)?),
        ("POST", ["topology"]) => ok(e::load_topology(ctl, body(req)?)?),
        ("GET", ["events"]) => ok(e::events(ctl)),
        ("POST", ["events"]) => ok(e::post_event(ctl, body(req)?)?),
        ("GET", ["demands"]) => ok(e::demand_sets(ctl)),
        ("GET", ["demands", id]) => ok(e::demand_set(ctl, id)?),
        ("PUT", ["demands", id]) => {
            check_id(id)?;
            ok(e::put_demand_set(ctl, id, body(req)?)?)
        }
        ("DELETE", ["demands", id]) => ok(e::delete_demand_set(ctl, id)?),
        ("GET", ["jobs"]) => ok(e::jobs(ctl)),
        ("GET", ["jobs", id]) => ok(e::job(ctl, id)?),
        ("PUT", ["jobs", id]) => {
            check_id(id)?;
            ok(e::put_job(ctl, id, body(req)?)?)
        }
        ("DELETE", ["jobs", id]) => ok(e::delete_job(ctl, id)?),
        ("GET", ["routes"]) => ok(e::routes(ctl)),
        // Switch names have slashes (`zone0/rack3/rtsw`): the rest of the path is the name.
        ("GET", ["routes", name @ ..]) => ok(e::switch_routes(ctl, &name.join("/"))?),
        ("GET", ["utilization"]) => ok(e::utilization(ctl, query)?),
        (_, s) if known(s) => Err(ApiError {
            status: 405,
            message: format!("{} is not allowed on {}", req.method, req.url),
        }),
        _ => Err(ApiError::not_found(format!("no endpoint {}", req.url))),
    }
}

/// A 200 with `value` as JSON (objects' keys in alphabetical order).
fn ok(value: impl serde::Serialize) -> Result<Response, ApiError> {
    let value = serde_json::to_value(value).expect("responses serialize");
    Ok(Response::json(200, &value))
}

/// Whether a path names an endpoint under some method.
fn known(segments: &[&str]) -> bool {
    matches!(
        segments,
        ["healthz"
            | "metrics"
            | "openapi.json"
            | "topology"
            | "events"
            | "demands"
            | "jobs"
            | "routes"
            | "utilization"]
            | ["demands" | "jobs", _]
            | ["routes", ..]
    )
}

fn body<T: serde::de::DeserializeOwned>(req: &Request<'_>) -> Result<T, ApiError> {
    if req.body.is_empty() {
        return Err(ApiError::invalid("body: expected a JSON document".into()));
    }
    serde_json::from_slice(req.body).map_err(|e| ApiError::invalid(format!("body: {e}")))
}

fn check_id(id: &str) -> Result<(), ApiError> {
    if valid_id(id) {
        Ok(())
    } else {
        Err(ApiError::invalid(format!(
            "id `{id}`: expected 1 to 64 of A-Z a-z 0-9 . _ -"
        )))
    }
}
