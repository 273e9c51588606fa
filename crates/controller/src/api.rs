//! The HTTP JSON API, as a function from a request to a response (the server only moves bytes).
//! docs/api/openapi.yaml describes every endpoint; the rules common to all:
//!
//! - `GET` is open; `POST`, `PUT` and `DELETE` need `Authorization: Bearer TOKEN` (401 without).
//! - Bodies are JSON documents with known fields only; a bad one gets 400 naming the field, and
//!   changes nothing. A body over the size limit gets 413 (checked by the server).
//! - Errors are `{"error": "..."}` with a 4xx or 5xx status.

use serde_json::{json, Value};

use crate::controller::Controller;
use crate::metrics;
use crate::model::{valid_id, DemandSet, JobSpec};

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
fn query_pairs<'q>(query: &'q str, known: &[&str]) -> Result<Vec<(&'q str, &'q str)>, ApiError> {
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
    let ok = |v: Value| Ok(Response::json(200, &v));
    match (req.method, segments) {
        ("GET", ["healthz"]) => ok(healthz(ctl)),
        ("GET", ["metrics"]) => Ok(Response {
            status: 200,
            content_type: "text/plain; version=0.0.4",
            body: metrics::render(ctl).into_bytes(),
        }),
        ("GET", ["topology"]) => topology(ctl).map(|v| Response::json(200, &v)),
        ("POST", ["topology"]) => {
            let (v, name, gpus) = ctl.load_fabric(body(req)?)?;
            ok(json!({ "state_version": v, "fabric": name, "gpus": gpus }))
        }
        ("GET", ["events"]) => ok(ctl.read(|s| {
            let events: Vec<Value> = s
                .state
                .events
                .iter()
                .map(|(seq, e)| {
                    let mut v = serde_json::to_value(e).expect("events serialize");
                    v["seq"] = json!(seq);
                    v
                })
                .collect();
            json!({ "events": events })
        })),
        ("POST", ["events"]) => {
            let (seq, v) = ctl.post_event(body(req)?)?;
            ok(json!({ "seq": seq, "state_version": v }))
        }
        ("GET", ["demands"]) => ok(ctl.read(|s| {
            let sets: Vec<Value> = s
                .state
                .demands
                .iter()
                .map(|(id, d)| json!({ "id": id, "demands": d.rows.len() }))
                .collect();
            json!({ "demand_sets": sets })
        })),
        ("GET", ["demands", id]) => ctl.read(|s| match s.state.demands.get(*id) {
            Some(d) => ok(json!({ "id": id, "spec": d.doc })),
            None => Err(ApiError::not_found(format!("no demand set `{id}`"))),
        }),
        ("PUT", ["demands", id]) => {
            check_id(id)?;
            let (v, n) = ctl.put(id, body::<DemandSet>(req)?)?;
            ok(json!({ "id": id, "state_version": v, "demands": n }))
        }
        ("DELETE", ["demands", id]) => {
            let v = ctl.delete::<DemandSet>(id)?;
            ok(json!({ "id": id, "state_version": v }))
        }
        ("GET", ["jobs"]) => ok(ctl.read(|s| {
            let jobs: Vec<Value> = s
                .state
                .jobs
                .iter()
                .map(|(id, j)| json!({ "id": id, "gpus": j.doc.gpus.len(), "demands": j.rows.len() }))
                .collect();
            json!({ "jobs": jobs })
        })),
        ("GET", ["jobs", id]) => ctl.read(|s| match s.state.jobs.get(*id) {
            Some(j) => ok(json!({ "id": id, "spec": j.doc, "demands": j.rows.len() })),
            None => Err(ApiError::not_found(format!("no job `{id}`"))),
        }),
        ("PUT", ["jobs", id]) => {
            check_id(id)?;
            let (v, n) = ctl.put(id, body::<JobSpec>(req)?)?;
            ok(json!({ "id": id, "state_version": v, "demands": n }))
        }
        ("DELETE", ["jobs", id]) => {
            let v = ctl.delete::<JobSpec>(id)?;
            ok(json!({ "id": id, "state_version": v }))
        }
        ("GET", ["routes"]) => {
            let rv = ctl.routes();
            let switches: Vec<Value> = rv
                .switches
                .iter()
                .map(|t| json!({ "switch": t.switch, "entries": t.entries.len() }))
                .collect();
            ok(json!({
                "version": rv.version,
                "state_version": rv.state_version,
                "solver": rv.solver,
                "demands": rv.demands,
                "local": rv.local,
                "unroutable": rv.unroutable,
                "max_utilization": rv.max_utilization,
                "solver_max_utilization": rv.solver_max_utilization,
                "conflicts": rv.conflicts,
                "switches": switches,
            }))
        }
        // Switch names have slashes (`zone0/rack3/rtsw`): the rest of the path is the name.
        ("GET", ["routes", name @ ..]) => {
            let switch = &name.join("/");
            let rv = ctl.routes();
            let entries = match rv.switches.iter().find(|t| &t.switch == switch) {
                Some(t) => json!(t.entries),
                None if is_switch(ctl, switch) => json!([]),
                None => return Err(ApiError::not_found(format!("no switch `{switch}`"))),
            };
            ok(json!({
                "version": rv.version,
                "state_version": rv.state_version,
                "switch": switch,
                "entries": entries,
            }))
        }
        ("GET", ["utilization"]) => {
            let mut top = usize::MAX;
            for (_, n) in query_pairs(query, &["top"])? {
                top = n.parse().map_err(|_| {
                    ApiError::invalid(format!("top: `{n}` is not a count of links"))
                })?;
            }
            let rv = ctl.routes();
            ok(json!({
                "version": rv.version,
                "state_version": rv.state_version,
                "max_utilization": rv.max_utilization,
                "tiers": rv.tiers,
                "links": rv.links.iter().take(top).collect::<Vec<_>>(),
            }))
        }
        (_, s) if known(s) => Err(ApiError {
            status: 405,
            message: format!("{} is not allowed on {}", req.method, req.url),
        }),
        _ => Err(ApiError::not_found(format!("no endpoint {}", req.url))),
    }
}

/// Whether a path names an endpoint under some method.
fn known(segments: &[&str]) -> bool {
    matches!(
        segments,
        ["healthz"
            | "metrics"
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

fn is_switch(ctl: &Controller, name: &str) -> bool {
    ctl.read(|s| {
        s.state.fabric.as_ref().is_some_and(|f| {
            f.topo
                .node_by_name(name)
                .is_some_and(|n| f.topo.kind(n).is_switch())
        })
    })
}

fn healthz(ctl: &Controller) -> Value {
    let rv = ctl.routes();
    ctl.read(|s| {
        json!({
            "status": "ok",
            "state_version": s.state.version,
            "route_version": rv.version,
            "routes_current": rv.state_version == s.state.version,
            "last_error": s.last_error,
        })
    })
}

fn topology(ctl: &Controller) -> Result<Value, ApiError> {
    ctl.read(|s| {
        let f = s.state.fabric.as_ref().ok_or_else(ApiError::no_fabric)?;
        let down = f.topo.link_ids().filter(|&l| !f.links.is_up(l)).count();
        Ok(json!({
            "spec": f.spec,
            "name": f.topo.name(),
            "gpus": f.topo.gpus().len(),
            "switches": f.topo.switches().count(),
            "links": f.topo.link_count(),
            "links_down": down,
            "state_version": s.state.version,
        }))
    })
}
