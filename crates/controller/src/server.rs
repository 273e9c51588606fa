//! `fabricsim serve`: the HTTP server around the controller, on hyper and tokio. Each connection
//! is a task, not a thread, so idle or slow clients cost memory, not workers. What bounds them:
//!
//! - **connections**: at most `max_connections` open; more wait in the listen backlog;
//! - **headers**: a request's headers must arrive within `header_timeout` (hyper closes the
//!   connection otherwise);
//! - **the whole request**: answered within `request_timeout`, body included, or 408 (tower-http's
//!   `TimeoutLayer`): a body sent a byte at a time holds a task until then, and nothing else;
//! - **bodies**: a write without the token is refused (401) before its body is read; a body over
//!   `max_body` gets 413, from its `Content-Length` before reading, or as soon as it passes the
//!   limit (http-body-util's `Limited`);
//! - **work**: at most `threads` requests are handled at once, after their bodies have arrived
//!   (a slow client never holds one of those places).
//!
//! Every request is logged (tracing) with a request id (`x-request-id`, returned to the client),
//! its method, path, status and latency; never its headers or body (the token).
//! One more thread recomputes routes.

use std::convert::Infallible;
use std::net::ToSocketAddrs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use fabricsim_te::Solver;
use http::{HeaderValue, Request as HttpRequest, Response as HttpResponse, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::sync::Semaphore;
use tower::ServiceBuilder;
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::{DefaultOnResponse, TraceLayer};

use crate::api::{self, ApiError, Request};
use crate::controller::{Controller, StartError};

pub struct Config {
    /// `ADDR:PORT`; port 0 picks a free one (printed at start).
    pub listen: String,
    pub db: PathBuf,
    pub token: String,
    pub solver: Solver,
    /// Largest request body accepted, in bytes.
    pub max_body: usize,
    /// Requests handled at once (their bodies read), and the runtime's worker threads.
    pub threads: usize,
    /// Connections open at once.
    pub max_connections: usize,
    /// Time for a request's headers to arrive.
    pub header_timeout: Duration,
    /// Time to answer a request, body included.
    pub request_timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Start(#[from] StartError),
    #[error("cannot listen on {addr}: {error}")]
    Listen { addr: String, error: String },
    #[error("the bearer token is empty")]
    NoToken,
}

/// Opens the database, listens, prints `listening on http://ADDR` and serves until killed.
pub fn serve(cfg: Config) -> Result<(), ServeError> {
    if cfg.token.is_empty() {
        return Err(ServeError::NoToken);
    }
    let listen_error = |error: String| ServeError::Listen {
        addr: cfg.listen.clone(),
        error,
    };
    let ctl = Arc::new(Controller::open(&cfg.db, cfg.token.clone(), cfg.solver)?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cfg.threads.max(1))
        .enable_all()
        .build()
        .map_err(|e| listen_error(e.to_string()))?;
    let listener = listen(&cfg.listen)
        .and_then(|l| {
            let _in_runtime = runtime.enter();
            tokio::net::TcpListener::from_std(l).map_err(|e| e.to_string())
        })
        .map_err(listen_error)?;
    let addr = listener
        .local_addr()
        .map_or(cfg.listen.clone(), |a| a.to_string());
    {
        let c = Arc::clone(&ctl);
        std::thread::spawn(move || c.recompute_loop());
    }
    let state = ctl.read(|v| v.state.version);
    println!(
        "fabricsim serve: listening on http://{addr} (database {}, state version {state}, route version {})",
        cfg.db.display(),
        ctl.routes().summary.version
    );
    tracing::info!(%addr, db = %cfg.db.display(), state, "listening");
    runtime.block_on(accept_loop(listener, ctl, &cfg));
    Ok(())
}

async fn accept_loop(listener: tokio::net::TcpListener, ctl: Arc<Controller>, cfg: &Config) {
    let connections = Arc::new(Semaphore::new(cfg.max_connections.max(1)));
    let busy = Arc::new(Semaphore::new(cfg.threads.max(1)));
    let max_body = cfg.max_body;
    let service = ServiceBuilder::new()
        .layer(SetRequestIdLayer::x_request_id(Counter::default()))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|rq: &HttpRequest<Incoming>| {
                    let id = rq
                        .headers()
                        .get("x-request-id")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("");
                    tracing::info_span!("request", id = %id, method = %rq.method(), path = %rq.uri().path())
                })
                .on_request(())
                .on_response(DefaultOnResponse::new().level(tracing::Level::INFO)),
        )
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            cfg.request_timeout,
        ))
        .service_fn(move |rq| answer(Arc::clone(&ctl), Arc::clone(&busy), rq, max_body));
    loop {
        let Ok(permit) = Arc::clone(&connections).acquire_owned().await else {
            return;
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors, most likely: let some connections finish.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(service.clone());
        let header_timeout = cfg.header_timeout;
        tokio::spawn(async move {
            let _permit = permit;
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(TokioIo::new(stream), service);
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "connection ended");
            }
        });
    }
}

/// Request ids: a counter from 1, per server.
#[derive(Clone, Default)]
struct Counter(Arc<AtomicU64>);

impl MakeRequestId for Counter {
    fn make_request_id<B>(&mut self, _: &HttpRequest<B>) -> Option<RequestId> {
        let n = self.0.fetch_add(1, Ordering::Relaxed) + 1;
        HeaderValue::from_str(&n.to_string())
            .ok()
            .map(RequestId::new)
    }
}

/// A listening socket with TCP_NODELAY set, non-blocking for tokio.
fn listen(addr: &str) -> Result<std::net::TcpListener, String> {
    use socket2::{Domain, Socket, Type};
    let io = |e: std::io::Error| e.to_string();
    let addr = addr
        .to_socket_addrs()
        .map_err(io)?
        .next()
        .ok_or("the address resolves to nothing")?;
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None).map_err(io)?;
    socket.set_reuse_address(true).map_err(io)?;
    socket.set_tcp_nodelay(true).map_err(io)?;
    socket.bind(&addr.into()).map_err(io)?;
    socket.listen(1024).map_err(io)?;
    socket.set_nonblocking(true).map_err(io)?;
    Ok(socket.into())
}

async fn answer(
    ctl: Arc<Controller>,
    busy: Arc<Semaphore>,
    rq: HttpRequest<Incoming>,
    max_body: usize,
) -> Result<HttpResponse<Full<Bytes>>, Infallible> {
    let bearer = rq
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| t.trim().to_string());
    let method = rq.method().as_str().to_string();
    let url = rq
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    // An unauthorized write is refused before its body is read.
    let declared = rq
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let response = if let Some(r) = api::refusal(&ctl, &method, bearer.as_deref()) {
        r
    } else if declared.is_some_and(|n| n > max_body as u64) {
        ApiError::too_large(max_body).response()
    } else {
        match Limited::new(rq.into_body(), max_body).collect().await {
            Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                ApiError::too_large(max_body).response()
            }
            Err(e) => {
                ApiError::invalid(format!("the request body could not be read: {e}")).response()
            }
            Ok(body) => {
                let body = body.to_bytes();
                let Ok(_working) = busy.acquire().await else {
                    return Ok(reply(
                        &method,
                        ApiError::internal("shutting down".into()).response(),
                    ));
                };
                let c = Arc::clone(&ctl);
                let m = method.clone();
                tokio::task::spawn_blocking(move || {
                    api::handle(
                        &c,
                        &Request {
                            method: &m,
                            url: &url,
                            bearer: bearer.as_deref(),
                            body: &body,
                        },
                    )
                })
                .await
                .unwrap_or_else(|e| ApiError::internal(e.to_string()).response())
            }
        }
    };
    *ctl.counters
        .responses
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(response.status)
        .or_default() += 1;
    Ok(reply(&method, response))
}

/// The HTTP response for an API response (no body for `HEAD`).
fn reply(method: &str, r: api::Response) -> HttpResponse<Full<Bytes>> {
    let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = if method == "HEAD" {
        Bytes::new()
    } else {
        Bytes::from(r.body)
    };
    let mut out = HttpResponse::new(Full::new(body));
    *out.status_mut() = status;
    out.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(r.content_type),
    );
    if status == StatusCode::UNAUTHORIZED {
        out.headers_mut().insert(
            http::header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer"),
        );
    }
    out
}
