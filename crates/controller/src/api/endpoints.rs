//! The endpoints, one function each. Each is annotated with its method, path, parameters, body
//! and responses; [`super::doc`] gathers them into the OpenAPI document, so the document is the
//! code's own description and cannot drift from it. The first line of a function's comment is
//! the operation's summary.

use serde::Serialize;
use utoipa::{ToResponse, ToSchema};

use super::{query_pairs, ApiError};
use crate::controller::{Controller, Registered};
use crate::model::{DemandSet, FabricSpec, JobSpec, LinkEvent};
use crate::routes::{Entry, LinkLoad, RouteSummary};
use fabricsim_te::report::TierUtilization;

/// Every error: `{"error": "..."}` with a 4xx or 5xx status.
#[derive(Serialize, ToSchema)]
#[schema(as = Error)]
pub struct ErrorBody {
    pub error: String,
}

/// A bad document or parameter; nothing changed.
#[derive(ToResponse)]
#[response(description = "A bad document or parameter; nothing changed.")]
pub struct Invalid(#[allow(dead_code)] ErrorBody);

/// No bearer token, or the wrong one.
#[derive(ToResponse)]
#[response(description = "No bearer token, or the wrong one.")]
pub struct Unauthorized(#[allow(dead_code)] ErrorBody);

/// No such endpoint, id or switch.
#[derive(ToResponse)]
#[response(description = "No such endpoint, id or switch.")]
pub struct NotFound(#[allow(dead_code)] ErrorBody);

/// No fabric loaded yet, or a new one was loaded while the request was checked.
#[derive(ToResponse)]
#[response(
    description = "No fabric loaded yet, or a new one was loaded while the request was checked."
)]
pub struct NoFabric(#[allow(dead_code)] ErrorBody);

/// The body is over the size limit.
#[derive(ToResponse)]
#[response(description = "The body is over the size limit (`--max-body`).")]
pub struct TooLarge(#[allow(dead_code)] ErrorBody);

/// Liveness, and whether the routes are those of the current state.
#[derive(Serialize, ToSchema)]
pub struct Health {
    #[schema(example = "ok")]
    pub status: &'static str,
    /// Acknowledged changes.
    pub state_version: u64,
    /// Route versions computed (0 = none yet).
    pub route_version: u64,
    /// The routes were computed for the current state version.
    pub routes_current: bool,
    /// Why the last recomputation failed, if it did.
    pub last_error: Option<String>,
}

/// Liveness, and whether the routes are those of the current state.
#[utoipa::path(get, path = "/healthz", security(()),
    responses((status = 200, description = "Serving.", body = Health)))]
pub fn healthz(ctl: &Controller) -> Health {
    let rv = ctl.routes();
    ctl.read(|s| Health {
        status: "ok",
        state_version: s.state.version,
        route_version: rv.summary.version,
        routes_current: rv.summary.state_version == s.state.version,
        last_error: s.last_error.map(str::to_string),
    })
}

/// The controller's figures in Prometheus text format (0.0.4).
#[utoipa::path(get, path = "/metrics", security(()),
    responses((status = 200, description = "Metrics.", body = String,
        content_type = "text/plain; version=0.0.4")))]
pub fn metrics(ctl: &Controller) -> String {
    crate::metrics::render(ctl)
}

/// This document, in JSON.
#[utoipa::path(get, path = "/openapi.json", security(()),
    responses((status = 200, description = "The OpenAPI document of this API.", body = Object)))]
pub fn openapi() -> String {
    super::doc::json()
}

/// The loaded fabric.
#[derive(Serialize, ToSchema)]
pub struct TopologySummary {
    pub spec: FabricSpec,
    pub name: String,
    pub gpus: usize,
    pub switches: usize,
    /// Directed links.
    pub links: usize,
    /// Directed links down.
    pub links_down: usize,
    pub state_version: u64,
}

/// The loaded fabric.
#[utoipa::path(get, path = "/topology", security(()), responses(
    (status = 200, description = "The fabric.", body = TopologySummary),
    (status = 409, response = NoFabric)))]
pub fn topology(ctl: &Controller) -> Result<TopologySummary, ApiError> {
    ctl.read(|s| {
        let f = s.state.fabric.as_ref().ok_or_else(ApiError::no_fabric)?;
        Ok(TopologySummary {
            spec: f.spec.clone(),
            name: f.topo.name().to_string(),
            gpus: f.topo.gpus().len(),
            switches: f.topo.switches().count(),
            links: f.topo.link_count(),
            links_down: f.topo.link_ids().filter(|&l| !f.links.is_up(l)).count(),
            state_version: s.state.version,
        })
    })
}

/// A fabric loaded.
#[derive(Serialize, ToSchema)]
pub struct Loaded {
    pub state_version: u64,
    pub fabric: String,
    pub gpus: usize,
}

/// Load a fabric. Replaces the old one, and drops its events, demand sets and jobs.
#[utoipa::path(post, path = "/topology", request_body = FabricSpec, responses(
    (status = 200, description = "Loaded.", body = Loaded),
    (status = 400, response = Invalid),
    (status = 401, response = Unauthorized),
    (status = 413, response = TooLarge)))]
pub fn load_topology(ctl: &Controller, spec: FabricSpec) -> Result<Loaded, ApiError> {
    let (state_version, fabric, gpus) = ctl.load_fabric(spec)?;
    Ok(Loaded {
        state_version,
        fabric,
        gpus,
    })
}

/// A link event with its place in the order of events.
#[derive(Serialize, ToSchema)]
pub struct NumberedEvent {
    pub seq: u64,
    #[serde(flatten)]
    pub event: LinkEvent,
}

/// The link events applied since the fabric was loaded.
#[derive(Serialize, ToSchema)]
pub struct Events {
    pub events: Vec<NumberedEvent>,
}

/// The link events applied since the fabric was loaded, in order.
#[utoipa::path(get, path = "/events", security(()),
    responses((status = 200, description = "Events.", body = Events)))]
pub fn events(ctl: &Controller) -> Events {
    ctl.read(|s| Events {
        events: s
            .state
            .events
            .iter()
            .map(|(seq, e)| NumberedEvent {
                seq: *seq,
                event: e.clone(),
            })
            .collect(),
    })
}

/// An event applied.
#[derive(Serialize, ToSchema)]
pub struct Applied {
    pub seq: u64,
    pub state_version: u64,
}

/// Report a link event.
#[utoipa::path(post, path = "/events", request_body = LinkEvent, responses(
    (status = 200, description = "Applied.", body = Applied),
    (status = 400, response = Invalid),
    (status = 401, response = Unauthorized),
    (status = 409, response = NoFabric),
    (status = 413, response = TooLarge)))]
pub fn post_event(ctl: &Controller, event: LinkEvent) -> Result<Applied, ApiError> {
    let (seq, state_version) = ctl.post_event(event)?;
    Ok(Applied { seq, state_version })
}

/// A demand set or a job, with the demands it resolved to.
#[derive(Serialize, ToSchema)]
pub struct Counted {
    pub id: String,
    pub demands: usize,
}

/// The demand sets.
#[derive(Serialize, ToSchema)]
pub struct DemandSets {
    pub demand_sets: Vec<Counted>,
}

/// The demand sets, with their number of demands.
#[utoipa::path(get, path = "/demands", security(()),
    responses((status = 200, description = "Demand sets.", body = DemandSets)))]
pub fn demand_sets(ctl: &Controller) -> DemandSets {
    ctl.read(|s| DemandSets {
        demand_sets: s
            .state
            .demands
            .iter()
            .map(|(id, d)| Counted {
                id: id.clone(),
                demands: d.rows.len(),
            })
            .collect(),
    })
}

/// One demand set as it was sent.
#[derive(Serialize, ToSchema)]
pub struct DemandSetDoc {
    pub id: String,
    pub spec: DemandSet,
}

/// One demand set as it was sent.
#[utoipa::path(get, path = "/demands/{id}", security(()), params(Id), responses(
    (status = 200, description = "The set.", body = DemandSetDoc),
    (status = 404, response = NotFound)))]
pub fn demand_set(ctl: &Controller, id: &str) -> Result<DemandSetDoc, ApiError> {
    ctl.read(|s| match s.state.demands.get(id) {
        Some(d) => Ok(DemandSetDoc {
            id: id.to_string(),
            spec: d.doc.clone(),
        }),
        None => Err(ApiError::not_found(format!("no demand set `{id}`"))),
    })
}

/// A change committed, with the state version it made.
#[derive(Serialize, ToSchema, ToResponse)]
#[response(description = "Committed; the state version it made.")]
pub struct Changed {
    pub id: String,
    pub state_version: u64,
    /// Demands the document resolved to (PUT only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub demands: Option<usize>,
}

/// The id of a demand set or a job.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct Id {
    /// 1 to 64 of A-Z a-z 0-9 . _ -
    #[param(pattern = "^[A-Za-z0-9._-]{1,64}$")]
    #[allow(dead_code)]
    id: String,
}

/// Create or replace a demand set.
#[utoipa::path(put, path = "/demands/{id}", params(Id), request_body = DemandSet, responses(
    (status = 200, response = Changed),
    (status = 400, response = Invalid),
    (status = 401, response = Unauthorized),
    (status = 409, response = NoFabric),
    (status = 413, response = TooLarge)))]
pub fn put_demand_set(ctl: &Controller, id: &str, doc: DemandSet) -> Result<Changed, ApiError> {
    put(ctl, id, doc)
}

/// Remove a demand set.
#[utoipa::path(delete, path = "/demands/{id}", params(Id), responses(
    (status = 200, response = Changed),
    (status = 401, response = Unauthorized),
    (status = 404, response = NotFound)))]
pub fn delete_demand_set(ctl: &Controller, id: &str) -> Result<Changed, ApiError> {
    delete::<DemandSet>(ctl, id)
}

/// A job, counted.
#[derive(Serialize, ToSchema)]
pub struct JobSummary {
    pub id: String,
    /// GPUs placed.
    pub gpus: usize,
    /// Demands derived from its collective.
    pub demands: usize,
}

/// The jobs.
#[derive(Serialize, ToSchema)]
pub struct Jobs {
    pub jobs: Vec<JobSummary>,
}

/// The jobs, with their GPUs and derived demands.
#[utoipa::path(get, path = "/jobs", security(()),
    responses((status = 200, description = "Jobs.", body = Jobs)))]
pub fn jobs(ctl: &Controller) -> Jobs {
    ctl.read(|s| Jobs {
        jobs: s
            .state
            .jobs
            .iter()
            .map(|(id, j)| JobSummary {
                id: id.clone(),
                gpus: j.doc.gpus.len(),
                demands: j.rows.len(),
            })
            .collect(),
    })
}

/// One job as it was sent.
#[derive(Serialize, ToSchema)]
pub struct JobDoc {
    pub id: String,
    pub spec: JobSpec,
    /// Demands derived from its collective.
    pub demands: usize,
}

/// One job as it was sent, with its number of derived demands.
#[utoipa::path(get, path = "/jobs/{id}", security(()), params(Id), responses(
    (status = 200, description = "The job.", body = JobDoc),
    (status = 404, response = NotFound)))]
pub fn job(ctl: &Controller, id: &str) -> Result<JobDoc, ApiError> {
    ctl.read(|s| match s.state.jobs.get(id) {
        Some(j) => Ok(JobDoc {
            id: id.to_string(),
            spec: j.doc.clone(),
            demands: j.rows.len(),
        }),
        None => Err(ApiError::not_found(format!("no job `{id}`"))),
    })
}

/// Register or update a job's placement and collective.
///
/// Its demand is the collective's traffic between hosts, as `fabricsim bench` would run it,
/// scaled so that its busiest GPU sends at line rate.
#[utoipa::path(put, path = "/jobs/{id}", params(Id), request_body = JobSpec, responses(
    (status = 200, response = Changed),
    (status = 400, response = Invalid),
    (status = 401, response = Unauthorized),
    (status = 409, response = NoFabric),
    (status = 413, response = TooLarge)))]
pub fn put_job(ctl: &Controller, id: &str, doc: JobSpec) -> Result<Changed, ApiError> {
    put(ctl, id, doc)
}

/// Remove a job.
#[utoipa::path(delete, path = "/jobs/{id}", params(Id), responses(
    (status = 200, response = Changed),
    (status = 401, response = Unauthorized),
    (status = 404, response = NotFound)))]
pub fn delete_job(ctl: &Controller, id: &str) -> Result<Changed, ApiError> {
    delete::<JobSpec>(ctl, id)
}

/// Stores `doc` under `id` (checked by the dispatcher before the body is read).
fn put<T: Registered>(ctl: &Controller, id: &str, doc: T) -> Result<Changed, ApiError> {
    let (state_version, demands) = ctl.put(id, doc)?;
    Ok(Changed {
        id: id.to_string(),
        state_version,
        demands: Some(demands),
    })
}

fn delete<T: Registered>(ctl: &Controller, id: &str) -> Result<Changed, ApiError> {
    Ok(Changed {
        id: id.to_string(),
        state_version: ctl.delete::<T>(id)?,
        demands: None,
    })
}

/// A programmed switch and its number of entries.
#[derive(Serialize, ToSchema)]
pub struct SwitchSummary {
    pub switch: String,
    pub entries: usize,
}

/// The current route version.
#[derive(Serialize, ToSchema)]
pub struct Routes {
    #[serde(flatten)]
    pub summary: RouteSummary,
    pub switches: Vec<SwitchSummary>,
}

/// The current route version, with each programmed switch's number of entries.
#[utoipa::path(get, path = "/routes", security(()),
    responses((status = 200, description = "The route version.", body = Routes)))]
pub fn routes(ctl: &Controller) -> Routes {
    let rv = ctl.routes();
    Routes {
        summary: rv.summary.clone(),
        switches: rv
            .switches
            .iter()
            .map(|t| SwitchSummary {
                switch: t.switch.clone(),
                entries: t.entries.len(),
            })
            .collect(),
    }
}

/// One switch's next-hop table.
#[derive(Serialize, ToSchema)]
pub struct SwitchRoutes {
    pub version: u64,
    pub state_version: u64,
    pub switch: String,
    pub entries: Vec<Entry>,
}

/// One switch's next-hop table.
///
/// The switch name goes in the path as is, slashes included (`/routes/zone0/rack3/rtsw`).
#[utoipa::path(get, path = "/routes/{switch}", security(()),
    params(("switch" = String, Path, description = "The switch's name.")),
    responses(
        (status = 200, description = "The table (empty for a switch the routes do not use).",
            body = SwitchRoutes),
        (status = 404, response = NotFound)))]
pub fn switch_routes(ctl: &Controller, switch: &str) -> Result<SwitchRoutes, ApiError> {
    let rv = ctl.routes();
    let entries = match rv.switches.iter().find(|t| t.switch == switch) {
        Some(t) => t.entries.clone(),
        None if is_switch(ctl, switch) => Vec::new(),
        None => return Err(ApiError::not_found(format!("no switch `{switch}`"))),
    };
    Ok(SwitchRoutes {
        version: rv.summary.version,
        state_version: rv.summary.state_version,
        switch: switch.to_string(),
        entries,
    })
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

/// Link utilization under the current routes.
#[derive(Serialize, ToSchema)]
pub struct Utilization {
    pub version: u64,
    pub state_version: u64,
    /// Max utilization of the steerable links.
    pub max_utilization: f64,
    pub tiers: Vec<TierUtilization>,
    /// Links with load, busiest first.
    pub links: Vec<LinkLoad>,
}

/// The `top` parameter of `/utilization`.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Top {
    /// Return only the busiest `top` links.
    #[allow(dead_code)]
    top: Option<usize>,
}

/// Link utilization under the current routes, busiest links first.
#[utoipa::path(get, path = "/utilization", security(()), params(Top), responses(
    (status = 200, description = "Utilization.", body = Utilization),
    (status = 400, response = Invalid)))]
pub fn utilization(ctl: &Controller, query: &str) -> Result<Utilization, ApiError> {
    let mut top = usize::MAX;
    for (_, n) in query_pairs(query, &["top"])? {
        top = n
            .parse()
            .map_err(|_| ApiError::invalid(format!("top: `{n}` is not a count of links")))?;
    }
    let rv = ctl.routes();
    Ok(Utilization {
        version: rv.summary.version,
        state_version: rv.summary.state_version,
        max_utilization: rv.summary.max_utilization,
        tiers: rv.tiers.clone(),
        links: rv.links.iter().take(top).cloned().collect(),
    })
}
