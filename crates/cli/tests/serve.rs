//! `fabricsim serve`: the real binary on loopback, driven over raw HTTP/1.1.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const TOKEN: &str = "t0ken-for-tests";

struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(db: &Path, extra: &[&str]) -> Server {
        let cmd = Command::new(env!("CARGO_BIN_EXE_fabricsim"));
        Server::start_with(cmd, db, &[&["--token", TOKEN], extra].concat())
    }

    fn start_with(mut cmd: Command, db: &Path, extra: &[&str]) -> Server {
        let mut child = cmd
            .args(["serve", "--listen", "127.0.0.1:0", "--db"])
            .arg(db)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .env("RUST_LOG", "warn")
            .spawn()
            .expect("fabricsim starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped stdout"))
            .read_line(&mut line)
            .expect("a first line");
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        Server { child, addr }
    }

    /// kill -9: no chance to flush or close anything.
    fn kill(mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reaped");
    }

    /// Sends raw bytes, returns (status, body).
    fn raw(&self, bytes: &[u8]) -> (u16, String) {
        let mut s = TcpStream::connect(&self.addr).expect("connects");
        s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
        // The server may answer (413) and close before it has read all of a large body.
        let _ = s.write_all(bytes);
        let mut reply = Vec::new();
        let _ = s.read_to_end(&mut reply);
        let text = String::from_utf8_lossy(&reply).to_string();
        let status = text
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("no status in {text:?}"));
        let body = text.split_once("\r\n\r\n").map_or("", |b| b.1).to_string();
        (status, body)
    }

    fn call(&self, method: &str, path: &str, token: Option<&str>, body: &str) -> (u16, Value) {
        let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
        let req = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let (status, text) = self.raw(req.as_bytes());
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value)
    }

    fn get(&self, path: &str) -> Value {
        let (status, v) = self.call("GET", path, None, "");
        assert_eq!(status, 200, "GET {path}: {v}");
        v
    }

    fn send(&self, method: &str, path: &str, body: Value) -> Value {
        let (status, v) = self.call(method, path, Some(TOKEN), &body.to_string());
        assert_eq!(status, 200, "{method} {path}: {v}");
        v
    }

    /// Waits until the routes are those of the current state.
    fn routes_current(&self) -> Value {
        let start = Instant::now();
        loop {
            let h = self.get("/healthz");
            if h["routes_current"] == json!(true) {
                return self.get("/routes");
            }
            assert!(
                start.elapsed() < Duration::from_secs(300),
                "routes never caught up: {h}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn zone() -> Value {
    json!({ "preset": "meta-ai-zone", "set": { "racks": 8, "uplinks": "1:1" } })
}

/// Rack r's first GPU sends to rack r+1's, around 8 racks: 8 demands over the spine.
fn ring_demands(gbps: f64) -> Value {
    let demands: Vec<Value> = (0..8)
        .map(|r| {
            json!({ "src": format!("host{}/gpu0", 2 * r), "dst": format!("host{}/gpu0", 2 * ((r + 1) % 8)), "gbps": gbps })
        })
        .collect();
    json!({ "demands": demands })
}

#[test]
fn routes_follow_demands_and_link_events() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("c.db"), &[]);
    assert_eq!(s.get("/healthz")["status"], "ok");
    let (status, _) = s.call("GET", "/topology", None, "");
    assert_eq!(status, 409, "no fabric yet");

    let loaded = s.send("POST", "/topology", zone());
    assert_eq!(loaded["gpus"], 128);
    assert_eq!(
        s.send("PUT", "/demands/ring", ring_demands(300.0))["demands"],
        8
    );
    let job = json!({ "gpus": ["host0/gpu1", "host2/gpu1", "host4/gpu1", "host6/gpu1"], "collective": "all-reduce", "algo": "ring" });
    assert_eq!(s.send("PUT", "/jobs/train-1", job)["demands"], 4);

    let routes = s.routes_current();
    assert_eq!(routes["demands"], 12, "{routes}");
    assert_eq!(
        routes["conflicts"], 0,
        "a two-tier zone has no conflicting entries"
    );
    let util = |s: &Server| s.get("/utilization")["max_utilization"].as_f64().unwrap();
    let before = util(&s);
    assert!(before > 0.0 && before <= 1.0 + 1e-9, "{before}");

    // Rack 0's RTSW has one entry per demand it forwards up: one per source port and prefix.
    let table = s.get("/routes/zone0/rack0/rtsw");
    let entries = table["entries"].as_array().unwrap();
    assert!(!entries.is_empty(), "{table}");
    let up: Vec<&Value> = entries
        .iter()
        .filter(|e| e["ingress_peer"] == "host0/nic0")
        .collect();
    assert_eq!(
        up.len(),
        1,
        "one destination for host0/gpu0's traffic: {table}"
    );
    let ctsw = up[0]["next_hop"].as_str().unwrap().to_string();
    assert!(ctsw.contains("ctsw"), "{ctsw}");
    assert_eq!(up[0]["prefix"], "host2/nic0");

    // Take that uplink down: the next version routes around it.
    let cable = format!("zone0/rack0/rtsw--{ctsw}");
    let ev = s.send(
        "POST",
        "/events",
        json!({ "target": cable, "state": "down" }),
    );
    assert_eq!(ev["seq"], 1);
    s.routes_current();
    let table = s.get("/routes/zone0/rack0/rtsw");
    for e in table["entries"].as_array().unwrap() {
        assert_ne!(e["next_hop"], json!(ctsw), "routed over a down cable: {e}");
    }
    let links = s.get("/utilization")["links"].clone();
    assert!(
        links.as_array().unwrap().iter().all(|l| !l["link"]
            .as_str()
            .unwrap()
            .contains(&format!("rack0/rtsw->{ctsw}"))),
        "{links}"
    );
    assert_eq!(s.get("/topology")["links_down"], 2);
    assert_eq!(s.get("/events")["events"][0]["target"], json!(cable));

    // Derate every uplink of rack 1 to 100G: its busiest demand, the job's ring at line rate
    // (400G from host2/gpu1), fills one at 4x.
    for c in 0..16 {
        let target = format!("zone0/rack1/rtsw--zone0/ctsw{c}");
        s.send(
            "POST",
            "/events",
            json!({ "target": target, "state": "derate", "gbps": 100 }),
        );
    }
    s.routes_current();
    let after = util(&s);
    assert!(
        (after - 4.0).abs() < 1e-9,
        "400G over a 100G uplink: {after}"
    );

    // Removing everything leaves empty tables.
    s.send("DELETE", "/demands/ring", json!({}));
    s.send("DELETE", "/jobs/train-1", json!({}));
    let routes = s.routes_current();
    assert_eq!(routes["demands"], 0);
    assert_eq!(s.get("/routes/zone0/rack0/rtsw")["entries"], json!([]));

    let metrics = s.call("GET", "/metrics", None, "").1;
    let text = metrics.as_str().unwrap();
    for line in [
        "# TYPE fabricsim_state_version gauge",
        "fabricsim_links_down 2\n",
        "fabricsim_jobs 0\n",
        "fabricsim_http_responses_total{code=\"200\"}",
    ] {
        assert!(text.contains(line), "no {line:?} in\n{text}");
    }
}

#[test]
fn kill_9_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let s = Server::start(&db, &[]);
    s.send("POST", "/topology", zone());
    s.send("PUT", "/demands/a", ring_demands(100.0));
    let first = s.routes_current();
    s.send("PUT", "/demands/b", ring_demands(50.0));
    s.send(
        "POST",
        "/events",
        json!({ "target": "zone0/rack3/rtsw--zone0/ctsw5", "state": "down" }),
    );
    let last = s.send(
        "PUT",
        "/jobs/j",
        json!({ "gpus": ["host0/gpu3", "host9/gpu3"] }),
    );
    let acknowledged = last["state_version"].as_u64().unwrap();
    let before = (s.get("/demands"), s.get("/events"), s.get("/jobs/j"));
    s.kill();

    let s = Server::start(&db, &[]);
    let h = s.get("/healthz");
    assert_eq!(h["state_version"].as_u64(), Some(acknowledged), "{h}");
    assert!(h["route_version"].as_u64() >= first["version"].as_u64());
    assert_eq!(
        (s.get("/demands"), s.get("/events"), s.get("/jobs/j")),
        before
    );
    let routes = s.routes_current();
    // Sets a and b name the same 8 pairs (their rates add up); the job's all-reduce of two
    // GPUs is one demand each way.
    assert_eq!(routes["demands"], 10, "{routes}");

    // A clean restart with nothing new serves the same route version, not a new one.
    let version = routes["version"].clone();
    let tables = s.get("/routes/zone0/rack3/rtsw");
    s.kill();
    let s = Server::start(&db, &[]);
    assert_eq!(s.get("/routes")["version"], version);
    assert_eq!(s.get("/routes/zone0/rack3/rtsw"), tables);
}

/// A PUT that may meet a killed server: its status, or `None` if no answer came.
fn try_put(addr: &str, path: &str, body: &str) -> Option<u16> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let req = format!(
        "PUT {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut reply = String::new();
    s.read_to_string(&mut reply).ok()?;
    reply.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn twenty_kills_during_writes_lose_nothing_acknowledged() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    Server::start(&db, &[]).send("POST", "/topology", zone());
    let acknowledged: Arc<Mutex<Vec<(String, f64)>>> = Arc::default();
    let mut next = 0u32;
    for kill in 0..20 {
        let server = Server::start(&db, &[]);
        let (count, stop) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let writer = {
            let (addr, acked) = (server.addr.clone(), Arc::clone(&acknowledged));
            let (count, stop) = (Arc::clone(&count), Arc::clone(&stop));
            let first = next;
            std::thread::spawn(move || {
                for i in first.. {
                    if stop.load(Ordering::SeqCst) {
                        return i;
                    }
                    let (id, gbps) = (format!("w{i}"), f64::from(1 + i % 400));
                    let body = ring_demands(gbps).to_string();
                    match try_put(&addr, &format!("/demands/{id}"), &body) {
                        Some(200) => {
                            acked.lock().unwrap().push((id, gbps));
                            count.fetch_add(1, Ordering::SeqCst);
                        }
                        Some(status) => panic!("PUT /demands/{id}: {status}"),
                        None => return i + 1, // killed mid-request: not acknowledged
                    }
                }
                unreachable!()
            })
        };
        // Kill it after a few acknowledged writes, while the writer keeps writing.
        while count.load(Ordering::SeqCst) < 3 + kill % 5 {
            std::thread::sleep(Duration::from_millis(1));
        }
        server.kill();
        stop.store(true, Ordering::SeqCst);
        next = writer.join().unwrap();
    }
    let server = Server::start(&db, &[]);
    let acked = acknowledged.lock().unwrap();
    assert!(acked.len() >= 20 * 3, "{} writes acknowledged", acked.len());
    for (id, gbps) in acked.iter() {
        let set = server.get(&format!("/demands/{id}"));
        assert_eq!(
            set["spec"]["demands"][0]["gbps"],
            json!(gbps),
            "{id}: {set}"
        );
    }
}

#[test]
fn bad_requests_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("c.db"), &["--max-body", "4096"]);
    s.send("POST", "/topology", zone());
    let version = || s.get("/healthz")["state_version"].clone();
    let v0 = version();

    let refused = |method: &str, path: &str, token: Option<&str>, body: &str, want: u16| {
        let (status, v) = s.call(method, path, token, body);
        assert_eq!(status, want, "{method} {path} {body:.80}: {v}");
        v["error"].as_str().unwrap_or_default().to_string()
    };
    // Unauthenticated or wrongly authenticated writes.
    refused(
        "PUT",
        "/demands/x",
        None,
        &ring_demands(1.0).to_string(),
        401,
    );
    refused(
        "PUT",
        "/demands/x",
        Some("guess"),
        &ring_demands(1.0).to_string(),
        401,
    );
    refused("POST", "/topology", None, &zone().to_string(), 401);
    // Malformed bodies.
    let t = Some(TOKEN);
    refused("PUT", "/demands/x", t, "{\"demands\": [", 400);
    refused("PUT", "/demands/x", t, "", 400);
    let e = refused(
        "PUT",
        "/demands/x",
        t,
        r#"{"demands": [], "extra": 1}"#,
        400,
    );
    assert!(e.contains("extra"), "{e}");
    let e = refused(
        "PUT",
        "/demands/x",
        t,
        r#"{"demands": [{"src": "host0/gpu0", "dst": "host99/gpu0", "gbps": 10}]}"#,
        400,
    );
    assert!(
        e.contains("demands[0].dst") && e.contains("host99/gpu0"),
        "{e}"
    );
    // An absurd rate (it used to be accepted, and every utilization became null).
    let e = refused(
        "PUT",
        "/demands/x",
        t,
        &ring_demands(1.7e308).to_string(),
        400,
    );
    assert!(
        e.contains("demands[0].gbps") && e.contains("at most"),
        "{e}"
    );
    let e = refused(
        "PUT",
        "/demands/x",
        t,
        r#"{"demands": [{"src": "host0/gpu0", "dst": "host1/gpu0", "gbps": -1}]}"#,
        400,
    );
    assert!(e.contains("gbps"), "{e}");
    refused(
        "PUT",
        "/demands/bad%20id",
        t,
        &ring_demands(1.0).to_string(),
        400,
    );
    let e = refused(
        "POST",
        "/events",
        t,
        r#"{"target": "nowhere", "state": "down"}"#,
        400,
    );
    assert!(e.contains("nowhere"), "{e}");
    refused(
        "POST",
        "/events",
        t,
        r#"{"target": "zone0/ctsw0", "state": "derate"}"#,
        400,
    );
    let e = refused(
        "POST",
        "/events",
        t,
        r#"{"target": "zone0/ctsw0", "state": "derate", "gbps": 800}"#,
        400,
    );
    assert!(e.contains("above the 400 Gbit/s cabled"), "{e}");
    refused(
        "PUT",
        "/jobs/j",
        t,
        r#"{"gpus": ["host0/gpu0"], "collective": "all-reduce"}"#,
        400,
    );
    refused(
        "PUT",
        "/jobs/j",
        t,
        r#"{"gpus": ["host0/gpu0", "host1/gpu0"], "collective": "gossip"}"#,
        400,
    );
    refused(
        "POST",
        "/topology",
        t,
        r#"{"preset": "no-such-fabric"}"#,
        400,
    );
    refused(
        "POST",
        "/topology",
        t,
        r#"{"preset": "meta-ai-zone", "set": {"racks": 0}}"#,
        400,
    );
    // Oversized: by Content-Length, and chunked with no length.
    let big = format!("{{\"demands\": [], \"pad\": \"{}\"}}", "x".repeat(8192));
    refused("PUT", "/demands/x", t, &big, 413);
    let chunked = format!(
        "PUT /demands/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{big}\r\n0\r\n\r\n",
        big.len()
    );
    assert_eq!(s.raw(chunked.as_bytes()).0, 413);
    // Unknown endpoints and methods.
    refused("GET", "/nothing", None, "", 404);
    refused("DELETE", "/topology", t, "", 405);
    refused("DELETE", "/demands/never-made", t, "", 404);
    refused("GET", "/routes/no-such-switch", None, "", 404);
    refused("GET", "/utilization?top=many", None, "", 400);
    // Garbage that is not HTTP.
    let _ = s.raw(b"\x00\x01garbage\r\n\r\n");

    assert_eq!(version(), v0, "a refused request changed the state");
    assert_eq!(s.get("/demands")["demand_sets"], json!([]));
    assert_eq!(s.get("/healthz")["status"], "ok", "still serving");
}

#[test]
fn concurrent_clients_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    // The token from the environment this time.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fabricsim"));
    cmd.env("FABRICSIM_TOKEN", TOKEN);
    let s = Server::start_with(cmd, &db, &["--threads", "4"]);
    s.send("POST", "/topology", zone());
    let (clients, each) = (8, 6);
    std::thread::scope(|scope| {
        for c in 0..clients {
            let s = &s;
            scope.spawn(move || {
                for i in 0..each {
                    let src = format!("host{}/gpu{}", 2 * c, i);
                    let dst = format!("host{}/gpu{}", 2 * ((c + 1) % 8), i);
                    let body = json!({ "demands": [{ "src": src, "dst": dst, "gbps": 100 }] });
                    s.send("PUT", &format!("/demands/c{c}-{i}"), body);
                    let r = s.get("/routes");
                    assert!(r["version"].is_u64());
                }
            });
        }
    });
    let sets = s.get("/demands")["demand_sets"].as_array().unwrap().len();
    assert_eq!(sets, clients * each);
    let routes = s.routes_current();
    assert_eq!(routes["demands"].as_u64(), Some((clients * each) as u64));
    assert_eq!(
        routes["state_version"].as_u64(),
        Some(1 + (clients * each) as u64)
    );
}

#[test]
fn serve_refuses_to_start_without_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fabricsim"))
        .args(["serve", "--listen", "127.0.0.1:0", "--db"])
        .arg(dir.path().join("c.db"))
        .env_remove("FABRICSIM_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("FABRICSIM_TOKEN"), "{err}");
}

/// A token with whitespace (which no client sends as it is) is refused at start, as is an empty
/// one; a token file is read without its end of line; the database is created 0600.
#[test]
fn tokens_are_checked_at_start_and_the_database_is_private() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    for token in [" s3cret", "s3cret ", "s3 cret", ""] {
        let out = Command::new(env!("CARGO_BIN_EXE_fabricsim"))
            .args(["serve", "--listen", "127.0.0.1:0", "--token", token, "--db"])
            .arg(&db)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{token:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("whitespace"), "{token:?}: {err}");
        assert!(!db.exists(), "nothing is created when the token is refused");
    }
    let file = dir.path().join("token");
    std::fs::write(&file, format!("{TOKEN}\n")).unwrap();
    let cmd = Command::new(env!("CARGO_BIN_EXE_fabricsim"));
    let s = Server::start_with(cmd, &db, &["--token-file", file.to_str().unwrap()]);
    s.send("POST", "/topology", zone());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&db).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{mode:o}");
    }
}

/// HEAD reads as GET does; query strings split on `&` with unknown keys refused; a write
/// without the token is refused before its body is read (a body that never comes cannot hold
/// the worker).
#[test]
fn head_queries_and_early_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("c.db"), &[]);
    s.send("POST", "/topology", zone());
    let (status, _) = s.raw(b"HEAD /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(status, 200);
    let (status, v) = s.call("GET", "/utilization?top=1&x=2", None, "");
    assert_eq!(status, 400, "{v}");
    assert!(v["error"].as_str().unwrap().contains("`x`"), "{v}");
    let (status, v) = s.call("GET", "/utilization?top=1&", None, "");
    assert_eq!(status, 200, "{v}");
    // Headers announce a megabyte that is never sent: the 401 comes at once.
    let mut c = TcpStream::connect(&s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    c.write_all(b"PUT /demands/x HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n{")
        .unwrap();
    let mut reply = [0u8; 12];
    c.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b"HTTP/1.1 401");
}

#[test]
fn the_shipped_openapi_document_is_the_one_the_code_generates() {
    let shipped = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/api/openapi.yaml"
    ))
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fabricsim"))
        .args(["serve", "--openapi"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        String::from_utf8(out.stdout).unwrap() == shipped,
        "docs/api/openapi.yaml is stale: fabricsim serve --openapi > docs/api/openapi.yaml"
    );
}

#[test]
fn every_documented_operation_is_served_and_every_served_path_documented() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("te.db"), &[]);
    server.send("POST", "/topology", zone());
    let doc = server.get("/openapi.json");
    let paths = doc["paths"].as_object().expect("paths");
    let mut documented = Vec::new();
    for (path, ops) in paths {
        let concrete = path
            .replace("{id}", "x")
            .replace("{switch}", "zone0/rack0/rtsw");
        for (method, op) in ops.as_object().unwrap() {
            let method = method.to_uppercase();
            let open = op["security"] == json!([{}]);
            let token = (!open).then_some(TOKEN);
            let body = if method == "PUT" || method == "POST" {
                "{}"
            } else {
                ""
            };
            let (status, v) = server.call(&method, &concrete, token, body);
            // Served: whatever the answer, it is not "no such endpoint" or "not allowed",
            // and every status it gives is documented.
            let unknown = v["error"]
                .as_str()
                .is_some_and(|e| e.starts_with("no endpoint"));
            assert!(status != 405 && !unknown, "{method} {path}: {status} {v}");
            assert!(
                op["responses"].get(status.to_string()).is_some(),
                "{method} {path} answered {status}, which it does not document: {v}"
            );
            // Writes are documented as needing the token, and refused without it.
            if !open {
                assert_eq!(server.call(&method, &concrete, None, body).0, 401);
            }
            documented.push(format!("{method} {path}"));
        }
    }
    documented.sort();
    // The endpoints the server answers, each one documented.
    let served = [
        "DELETE /demands/{id}",
        "DELETE /jobs/{id}",
        "GET /demands",
        "GET /demands/{id}",
        "GET /events",
        "GET /healthz",
        "GET /jobs",
        "GET /jobs/{id}",
        "GET /metrics",
        "GET /openapi.json",
        "GET /routes",
        "GET /routes/{switch}",
        "GET /topology",
        "GET /utilization",
        "POST /events",
        "POST /topology",
        "PUT /demands/{id}",
        "PUT /jobs/{id}",
    ];
    assert_eq!(documented, served);
    // A method the document does not give a path is refused as not allowed.
    let (status, _) = server.call("DELETE", "/healthz", Some(TOKEN), "");
    assert_eq!(status, 405);
}

#[test]
fn slow_and_idle_clients_do_not_stall_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("te.db"), &[]);
    // 200 writers holding the token that send one byte of a 1,000-byte body and stop, and
    // 1,000 connections that send nothing: each held by the server as a task, none as a worker.
    let mut held = Vec::new();
    for _ in 0..200 {
        let mut s = TcpStream::connect(&server.addr).expect("connects");
        write!(
            s,
            "PUT /demands/slow HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 1000\r\n\r\n{{"
        )
        .unwrap();
        held.push(s);
    }
    for _ in 0..1000 {
        held.push(TcpStream::connect(&server.addr).expect("connects"));
    }
    let mut times = Vec::new();
    for _ in 0..100 {
        let start = Instant::now();
        assert_eq!(server.get("/healthz")["status"], json!("ok"));
        times.push(start.elapsed());
    }
    times.sort();
    eprintln!(
        "/healthz beside 200 stalled bodies and 1,000 idle connections: p50 {:?}, p99 {:?}",
        times[49], times[98]
    );
    // The stalled writes changed nothing.
    assert_eq!(server.get("/demands")["demand_sets"], json!([]));
    // A connection is a task, not a thread (a thread per connection made 8,206 threads of
    // 8,187 idle connections): the server's threads stay its workers and a few more.
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.child.id()));
    if let Ok(status) = status {
        let threads: usize = status
            .lines()
            .find_map(|l| l.strip_prefix("Threads:"))
            .and_then(|n| n.trim().parse().ok())
            .expect("a thread count");
        assert!(threads < 100, "{threads} threads for 1,200 connections");
    }
    drop(held);
}
