//! `fabricsim serve`: the HTTP server around the controller. A few worker threads take requests
//! from one listener; one more thread recomputes routes.

use std::io::Read;
use std::net::ToSocketAddrs;
use std::path::PathBuf;
use std::sync::Arc;

use fabricsim_te::Solver;

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
    pub threads: usize,
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
    let ctl = Arc::new(Controller::open(&cfg.db, cfg.token, cfg.solver)?);
    let server = listen(&cfg.listen)
        .and_then(|l| tiny_http::Server::from_listener(l, None).map_err(|e| e.to_string()))
        .map_err(|error| ServeError::Listen {
            addr: cfg.listen.clone(),
            error,
        })?;
    let addr = server
        .server_addr()
        .to_ip()
        .map_or(cfg.listen.clone(), |a| a.to_string());
    {
        let c = Arc::clone(&ctl);
        std::thread::spawn(move || c.recompute_loop());
    }
    let state = ctl.read(|v| v.state.version);
    println!(
        "fabricsim serve: listening on http://{addr} (database {}, state version {state}, route version {})",
        cfg.db.display(),
        ctl.routes().version
    );
    let server = Arc::new(server);
    let workers: Vec<_> = (0..cfg.threads.max(1))
        .map(|_| {
            let (server, ctl) = (Arc::clone(&server), Arc::clone(&ctl));
            std::thread::spawn(move || {
                while let Ok(rq) = server.recv() {
                    answer(&ctl, rq, cfg.max_body);
                }
            })
        })
        .collect();
    for w in workers {
        let _ = w.join();
    }
    Ok(())
}

/// A listening socket with TCP_NODELAY set.
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
    Ok(socket.into())
}

fn answer(ctl: &Controller, mut rq: tiny_http::Request, max_body: usize) {
    let bearer = rq
        .headers()
        .iter()
        .find(|h| h.field.equiv("Authorization"))
        .and_then(|h| h.value.as_str().strip_prefix("Bearer "))
        .map(|t| t.trim().to_string());
    let (method, url) = (rq.method().as_str().to_string(), rq.url().to_string());
    // An unauthorized write is refused before its body is read: a client without the token
    // cannot hold a worker by sending a body slowly.
    let refused = api::refusal(ctl, &method, bearer.as_deref());
    let mut body = Vec::new();
    let too_large = refused.is_none()
        && (rq.body_length().is_some_and(|n| n > max_body) || {
            let read = rq
                .as_reader()
                .take(max_body as u64 + 1)
                .read_to_end(&mut body);
            read.is_ok() && body.len() > max_body
        });
    let response = if let Some(r) = refused {
        r
    } else if too_large {
        ApiError::too_large(max_body).response()
    } else {
        api::handle(
            ctl,
            &Request {
                method: &method,
                url: &url,
                bearer: bearer.as_deref(),
                body: &body,
            },
        )
    };
    *ctl.counters
        .responses
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(response.status)
        .or_default() += 1;
    let content_type = tiny_http::Header::from_bytes("Content-Type", response.content_type)
        .expect("a valid header");
    let mut reply = tiny_http::Response::from_data(response.body)
        .with_status_code(response.status)
        .with_header(content_type);
    if response.status == 401 {
        reply.add_header(
            tiny_http::Header::from_bytes("WWW-Authenticate", "Bearer").expect("a valid header"),
        );
    }
    // The client may have gone; nothing to do about it.
    let _ = rq.respond(reply);
}
