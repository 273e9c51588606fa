//! The controller: state behind one lock, changes made durable before they are acknowledged,
//! and route versions recomputed on their own thread and published whole.
//!
//! A change is resolved against the fabric without the lock (a bad document changes nothing;
//! a job's resolution plans its collective), then committed to the store in one transaction and
//! applied in memory under the state lock, provided the fabric is still the one it was resolved
//! against (409 otherwise); the state version it makes is what the client gets back. The recompute thread wakes on a new state
//! version, snapshots the state under the lock, solves without it, persists the route version
//! and swaps it in. Readers clone an `Arc` of the current route version, so they never see a
//! half-built one, and never wait for a solve.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::time::Instant;

use fabricsim_te::solve::SolveOptions;
use fabricsim_te::Solver;
use fabricsim_topology::Topology;

use crate::api::ApiError;
use crate::model::{DemandSet, FabricSpec, JobSpec, LinkEvent, Row};
use crate::routes::{self, RouteVersion};
use crate::state::{Resolved, State};
use crate::store::{Change, Saved, Store, StoreError};

/// Why the controller could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("database: stored {what} no longer resolves: {error}")]
    Stored { what: String, error: String },
}

struct Inner {
    state: State,
    store: Store,
    /// The last state version a recomputation started from.
    routed: u64,
    last_error: Option<String>,
}

/// Counters behind `GET /metrics`.
#[derive(Default)]
pub struct Counters {
    pub recomputes: AtomicU64,
    pub recompute_errors: AtomicU64,
    pub last_recompute_us: AtomicU64,
    /// Responses by status code.
    pub responses: Mutex<std::collections::BTreeMap<u16, u64>>,
}

pub struct Controller {
    inner: Mutex<Inner>,
    wake: Condvar,
    routes: RwLock<Arc<RouteVersion>>,
    /// A second connection, for the recompute thread: writing a route version (megabytes on a
    /// full cluster) must not hold the state lock that readers and writers take.
    route_store: Mutex<Store>,
    token: String,
    solver: Solver,
    opts: SolveOptions,
    pub counters: Counters,
}

/// A read-only view of the state, for the API's `GET`s.
pub struct View<'a> {
    pub state: &'a State,
    pub last_error: Option<&'a str>,
}

impl Controller {
    /// Opens (or creates) the database and rebuilds the state it holds.
    pub fn open(db: &Path, token: String, solver: Solver) -> Result<Controller, StartError> {
        let store = Store::open(db)?;
        let saved = store.load()?;
        let (state, routes) = rebuild(&saved)?;
        let routed = routes.summary.state_version;
        let route_store = Mutex::new(Store::open(db)?);
        Ok(Controller {
            inner: Mutex::new(Inner {
                state,
                store,
                routed,
                last_error: None,
            }),
            wake: Condvar::new(),
            routes: RwLock::new(Arc::new(routes)),
            route_store,
            token,
            solver,
            opts: SolveOptions::default(),
            counters: Counters::default(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // State changes are applied after their commit in steps that cannot fail, so a panic
        // elsewhere never leaves the state half-changed: carry on.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current route version.
    pub fn routes(&self) -> Arc<RouteVersion> {
        Arc::clone(&self.routes.read().unwrap_or_else(|e| e.into_inner()))
    }

    pub fn read<T>(&self, f: impl FnOnce(View<'_>) -> T) -> T {
        let g = self.lock();
        f(View {
            state: &g.state,
            last_error: g.last_error.as_deref(),
        })
    }

    /// Whether `presented` is the controller's token (compared in constant time).
    pub fn authorized(&self, presented: Option<&str>) -> bool {
        let Some(p) = presented else { return false };
        let (a, b) = (p.as_bytes(), self.token.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }

    /// The current fabric, to resolve a document against without holding the lock (a job's
    /// resolution plans its collective).
    fn topo(&self) -> Result<Arc<Topology>, ApiError> {
        self.lock().state.topo().ok_or_else(ApiError::no_fabric)
    }

    /// The lock, provided the fabric is still the one a document was resolved against.
    fn lock_for(&self, topo: &Arc<Topology>) -> Result<MutexGuard<'_, Inner>, ApiError> {
        let g = self.lock();
        match g.state.topo() {
            Some(t) if Arc::ptr_eq(&t, topo) => Ok(g),
            _ => Err(ApiError {
                status: 409,
                message: "the fabric changed while the request was checked: send it again".into(),
            }),
        }
    }

    fn commit(&self, g: &mut Inner, change: &Change<'_>) -> Result<u64, ApiError> {
        let version = g.state.version + 1;
        g.store
            .commit(change, version)
            .map_err(|e| ApiError::internal(e.to_string()))?;
        g.state.version = version;
        self.wake.notify_all();
        Ok(version)
    }

    pub fn load_fabric(&self, spec: FabricSpec) -> Result<(u64, String, usize), ApiError> {
        let topo = spec.build().map_err(ApiError::invalid)?;
        let doc = to_json(&spec);
        let mut g = self.lock();
        let version = self.commit(&mut g, &Change::Fabric(&doc))?;
        let (name, gpus) = (topo.name().to_string(), topo.gpus().len());
        g.state.set_fabric(spec, topo);
        Ok((version, name, gpus))
    }

    pub fn post_event(&self, event: LinkEvent) -> Result<(u64, u64), ApiError> {
        let topo = self.topo()?;
        let resolved = event.resolve(&topo).map_err(ApiError::invalid)?;
        let mut g = self.lock_for(&topo)?;
        let seq = g.state.next_event_seq();
        let version = self.commit(&mut g, &Change::Event(seq, &to_json(&event)))?;
        g.state.apply_event(seq, event, resolved);
        Ok((seq, version))
    }

    /// Creates or replaces a demand set or a job; returns the state version and its demands.
    pub fn put<T: Registered>(&self, id: &str, doc: T) -> Result<(u64, usize), ApiError> {
        let topo = self.topo()?;
        let rows = doc.resolve(&topo).map_err(ApiError::invalid)?;
        let mut g = self.lock_for(&topo)?;
        let version = self.commit(&mut g, &T::put(id, &to_json(&doc)))?;
        let n = rows.len();
        T::registry(&mut g.state).insert(id.to_string(), Resolved { doc, rows });
        Ok((version, n))
    }

    pub fn delete<T: Registered>(&self, id: &str) -> Result<u64, ApiError> {
        let mut g = self.lock();
        if !T::registry(&mut g.state).contains_key(id) {
            return Err(ApiError::not_found(format!("no {} `{id}`", T::WHAT)));
        }
        let version = self.commit(&mut g, &T::delete(id))?;
        T::registry(&mut g.state).remove(id);
        Ok(version)
    }

    /// Recomputes routes whenever the state moves past the last recomputation; never returns.
    pub fn recompute_loop(&self) -> ! {
        loop {
            self.recompute_next();
        }
    }

    /// Waits for the state to move past the last recomputation, then recomputes once.
    fn recompute_next(&self) {
        let snap = {
            let mut g = self.lock();
            while g.routed >= g.state.version {
                g = self.wake.wait(g).unwrap_or_else(|e| e.into_inner());
            }
            g.routed = g.state.version;
            g.state.snapshot()
        };
        // Every change needs a fabric, so a state past version 0 has one.
        let Some(snap) = snap else { return };
        let started = Instant::now();
        let result = routes::compute(&snap, self.solver, &self.opts).and_then(|mut rv| {
            rv.summary.version = self.routes().summary.version + 1;
            let doc = serde_json::to_string(&rv).map_err(|e| e.to_string())?;
            self.route_store
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .save_routes(&doc)
                .map_err(|e| e.to_string())?;
            Ok(rv)
        });
        let c = &self.counters;
        c.last_recompute_us
            .store(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        match result {
            Ok(rv) => {
                c.recomputes.fetch_add(1, Ordering::Relaxed);
                let old = std::mem::replace(
                    &mut *self.routes.write().unwrap_or_else(|e| e.into_inner()),
                    Arc::new(rv),
                );
                // Freeing a full cluster's tables takes a while: not under the lock.
                drop(old);
                self.lock().last_error = None;
            }
            Err(e) => {
                c.recompute_errors.fetch_add(1, Ordering::Relaxed);
                eprintln!(
                    "fabricsim serve: routes for state version {}: {e}",
                    snap.state_version
                );
                self.lock().last_error = Some(e);
            }
        }
    }
}

/// The documents kept by id that resolve to demands: demand sets and jobs.
pub trait Registered: serde::Serialize + Sized {
    /// What one is called in messages.
    const WHAT: &'static str;
    fn resolve(&self, topo: &Topology) -> Result<Vec<Row>, String>;
    fn registry(state: &mut State) -> &mut BTreeMap<String, Resolved<Self>>;
    fn put<'a>(id: &'a str, doc: &'a str) -> Change<'a>;
    fn delete(id: &str) -> Change<'_>;
}

impl Registered for DemandSet {
    const WHAT: &'static str = "demand set";
    fn resolve(&self, topo: &Topology) -> Result<Vec<Row>, String> {
        DemandSet::resolve(self, topo)
    }
    fn registry(state: &mut State) -> &mut BTreeMap<String, Resolved<Self>> {
        &mut state.demands
    }
    fn put<'a>(id: &'a str, doc: &'a str) -> Change<'a> {
        Change::PutDemands(id, doc)
    }
    fn delete(id: &str) -> Change<'_> {
        Change::DeleteDemands(id)
    }
}

impl Registered for JobSpec {
    const WHAT: &'static str = "job";
    fn resolve(&self, topo: &Topology) -> Result<Vec<Row>, String> {
        JobSpec::resolve(self, topo)
    }
    fn registry(state: &mut State) -> &mut BTreeMap<String, Resolved<Self>> {
        &mut state.jobs
    }
    fn put<'a>(id: &'a str, doc: &'a str) -> Change<'a> {
        Change::PutJob(id, doc)
    }
    fn delete(id: &str) -> Change<'_> {
        Change::DeleteJob(id)
    }
}

fn to_json<T: serde::Serialize>(doc: &T) -> String {
    serde_json::to_string(doc).expect("API documents serialize")
}

/// The state and route version a database holds, each document resolved again.
fn rebuild(saved: &Saved) -> Result<(State, RouteVersion), StartError> {
    let mut state = State::default();
    if let Some(doc) = &saved.fabric {
        let spec: FabricSpec = stored_doc("fabric", doc)?;
        let topo = spec.build().map_err(|e| stored("fabric", e))?;
        state.set_fabric(spec, topo);
    }
    let topo = state.topo();
    let topo_for = |what: &str| {
        topo.as_deref()
            .ok_or_else(|| stored(what, "no fabric is stored".into()))
    };
    for (seq, doc) in &saved.events {
        let what = format!("event {seq}");
        let event: LinkEvent = stored_doc(&what, doc)?;
        let resolved = event
            .resolve(topo_for(&what)?)
            .map_err(|e| stored(&what, e))?;
        state.apply_event(*seq, event, resolved);
    }
    restore::<DemandSet>(&mut state, topo.as_deref(), &saved.demands)?;
    restore::<JobSpec>(&mut state, topo.as_deref(), &saved.jobs)?;
    state.version = saved.state_version;
    // A route version that does not parse is recomputed rather than refused: routes are derived.
    let routes = saved
        .routes
        .as_deref()
        .and_then(|doc| serde_json::from_str::<RouteVersion>(doc).ok())
        .unwrap_or_default();
    Ok((state, routes))
}

fn restore<T: Registered + serde::de::DeserializeOwned>(
    state: &mut State,
    topo: Option<&Topology>,
    saved: &[(String, String)],
) -> Result<(), StartError> {
    for (id, doc) in saved {
        let what = format!("{} `{id}`", T::WHAT);
        let topo = topo.ok_or_else(|| stored(&what, "no fabric is stored".into()))?;
        let doc: T = stored_doc(&what, doc)?;
        let rows = doc.resolve(topo).map_err(|e| stored(&what, e))?;
        T::registry(state).insert(id.clone(), Resolved { doc, rows });
    }
    Ok(())
}

fn stored(what: &str, error: String) -> StartError {
    StartError::Stored {
        what: what.to_string(),
        error,
    }
}

fn stored_doc<T: serde::de::DeserializeOwned>(what: &str, doc: &str) -> Result<T, StartError> {
    serde_json::from_str(doc).map_err(|e| stored(what, e.to_string()))
}
