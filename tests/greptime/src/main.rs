// SPDX-License-Identifier: GPL-2.0
//! rg-greptime: a GreptimeDB-compatible InfluxDB line-protocol ingest server
//! for the differential e2e suite (docs/server-profiles.md#greptimedb-server).
//!
//! HTTP/1 framing is hyper's own; on top of it the request is read with
//! GreptimeDB's rules (src/servers/src/http.rs, http/authorize.rs,
//! http/influxdb.rs, influxdb.rs): axum's exact raw-path routes, POST only,
//! the database from `X-Greptime-DB-Name` (`to_str()`), else the raw query's
//! first `db=` pair (`bucket=` next on v2 paths), split at its first `-`
//! into catalog and schema, default `public`; the handler's own
//! `Query<HashMap>` (serde_urlencoded) for `precision`; the body as UTF-8
//! text after gzip/deflate decompression; one row per line that the
//! influxdb_line_protocol parser yields, and a request with one line it
//! refuses stores nothing.  It stores no data: GET /stats returns the rows
//! per schema and measurement, and the requests it answered.
//!
//! With `--grpc-port` it also serves GreptimeDB's gRPC ingest service on
//! hyper's HTTP/2 (the `h2` crate, as tonic does): grpc.rs.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::convert::Infallible;
use std::io::Read;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use hyper::service::{make_service_fn, service_fn};
use hyper::{Body, Method, Request, Response, Server, StatusCode};

mod grpc;
mod lp;

/// GreptimeDB's `[http] body_limit` default (http.rs DEFAULT_BODY_LIMIT).
const BODY_LIMIT_BYTES: usize = 64 << 20;
const DEFAULT_CATALOG: &str = "greptime";
const DEFAULT_SCHEMA: &str = "public";
const DB_HEADER: &str = "x-greptime-db-name";

#[derive(Default)]
struct Stats {
    /// schema -> measurement -> rows stored
    rows: BTreeMap<String, BTreeMap<String, u64>>,
    requests: u64,
    writes: u64,
    refused: u64,
    /// gRPC: calls that reached the handler (a first complete message),
    /// messages stored, connections accepted, streams begun / open now /
    /// most open at once, calls answered with an error status
    calls: u64,
    grpc_messages: u64,
    grpc_conns: u64,
    grpc_streams: u64,
    grpc_streams_open: u64,
    grpc_streams_open_max: u64,
    grpc_errors: u64,
    /// streams whose request body ended in an error (a client's or the
    /// kernel's RST_STREAM), and the last such error as hyper words it
    grpc_resets: u64,
    grpc_last_reset: String,
    /// connections that ended in an error, by hyper's error (an h2
    /// GOAWAY it sent shows as GoAway(.., reason, Library))
    grpc_conn_errors: BTreeMap<String, u64>,
}

struct State {
    schemas: HashSet<String>,
    stats: Mutex<Stats>,
}

fn answer(code: StatusCode, msg: &str) -> Response<Body> {
    let mut r = Response::new(Body::from(format!("{{\"error\":{:?}}}\n", msg)));
    *r.status_mut() = code;
    r
}

/// http/authorize.rs extract_param_from_query: the first raw `name=` pair,
/// an empty value meaning none, no decoding.
fn raw_param<'a>(query: &'a str, name: &str) -> Option<&'a str> {
    for pair in query.split('&') {
        if let Some(v) = pair.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
            return if v.is_empty() { None } else { Some(v) };
        }
    }
    None
}

/// http/authorize.rs extract_catalog_and_schema, then
/// common/catalog parse_catalog_and_schema_from_db_string.
fn catalog_and_schema(req: &Request<Body>) -> (String, String) {
    let query = req.uri().query().unwrap_or_default();
    let v2 = req.uri().path().contains("influxdb/api/v2");
    let db = req
        .headers()
        .get(DB_HEADER)
        .and_then(|h| h.to_str().ok())
        .or_else(|| {
            let db = raw_param(query, "db");
            if v2 {
                db.or_else(|| raw_param(query, "bucket"))
            } else {
                db
            }
        })
        .unwrap_or(DEFAULT_SCHEMA);
    match db.split_once('-') {
        Some((catalog, schema)) => (catalog.to_string(), schema.to_string()),
        None => (DEFAULT_CATALOG.to_string(), db.to_string()),
    }
}

/// http/influxdb.rs parse_time_precision.
fn precision_ok(v: &str) -> bool {
    matches!(v, "n" | "ns" | "u" | "us" | "ms" | "s" | "m" | "h")
}

/// tower-http's RequestDecompressionLayer with pass_through_unaccepted:
/// the codings it decodes, anything else passes as sent.  br and zstd are
/// decoded by GreptimeDB but not here (no Debian crate): refused as
/// unmodelled, so a test never mistakes them for a server verdict.
fn decompress(coding: Option<&[u8]>, body: Vec<u8>) -> Result<Vec<u8>, (StatusCode, String)> {
    let mut out = Vec::new();
    let res = match coding {
        Some(b"gzip") => flate2::read::GzDecoder::new(&body[..]).read_to_end(&mut out),
        Some(b"deflate") => flate2::read::ZlibDecoder::new(&body[..]).read_to_end(&mut out),
        Some(b"br") | Some(b"zstd") => {
            return Err((StatusCode::NOT_IMPLEMENTED, "coding not modelled".into()))
        }
        _ => return Ok(body),
    };
    match res {
        Ok(_) if out.len() <= BODY_LIMIT_BYTES => Ok(out),
        Ok(_) => Err((StatusCode::PAYLOAD_TOO_LARGE, "body over the limit".into())),
        Err(e) => Err((StatusCode::BAD_REQUEST, format!("decompression: {}", e))),
    }
}

async fn read_body(body: Body) -> Result<Vec<u8>, (StatusCode, String)> {
    use hyper::body::HttpBody;
    let mut body = body;
    let mut out = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(|e| (StatusCode::BAD_REQUEST, format!("body: {}", e)))?;
        if out.len() + chunk.len() > BODY_LIMIT_BYTES {
            return Err((StatusCode::PAYLOAD_TOO_LARGE, "body over the limit".into()));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

async fn write(state: &State, req: Request<Body>) -> Response<Body> {
    let (catalog, schema) = catalog_and_schema(&req);
    // axum's Query<HashMap<String, String>>: decoded pairs, the last wins
    let params: HashMap<String, String> =
        match serde_urlencoded::from_str(req.uri().query().unwrap_or_default()) {
            Ok(p) => p,
            Err(e) => return answer(StatusCode::BAD_REQUEST, &format!("query: {}", e)),
        };
    let coding = req
        .headers()
        .get(hyper::header::CONTENT_ENCODING)
        .map(|v| v.as_bytes().to_vec());
    if let Some(n) = req
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
    {
        if n > BODY_LIMIT_BYTES as u64 {
            return answer(StatusCode::PAYLOAD_TOO_LARGE, "body over the limit");
        }
    }
    let raw = match read_body(req.into_body()).await {
        Ok(b) => b,
        Err((code, msg)) => return answer(code, &msg),
    };
    let raw = match decompress(coding.as_deref(), raw) {
        Ok(b) => b,
        Err((code, msg)) => return answer(code, &msg),
    };
    // axum's String extractor
    let text = match String::from_utf8(raw) {
        Ok(t) => t,
        Err(_) => return answer(StatusCode::BAD_REQUEST, "body is not UTF-8"),
    };
    if let Some(p) = params.get("precision") {
        if !precision_ok(p) {
            return answer(StatusCode::BAD_REQUEST, "invalid precision");
        }
    }
    let rows = match lp::rows_by_measurement(&text) {
        Ok(r) => r,
        Err(e) => return answer(StatusCode::BAD_REQUEST, &format!("line protocol: {}", e)),
    };
    if catalog != DEFAULT_CATALOG || !state.schemas.contains(&schema) {
        return answer(
            StatusCode::NOT_FOUND,
            &format!("database {}-{} not found", catalog, schema),
        );
    }
    let mut st = state.stats.lock().unwrap();
    st.writes += 1;
    let per = st.rows.entry(schema).or_default();
    for (m, n) in rows {
        *per.entry(m).or_insert(0) += n;
    }
    Response::builder()
        .status(StatusCode::NO_CONTENT)
        .body(Body::empty())
        .unwrap()
}

fn stats_json(st: &Stats) -> String {
    let mut s = format!(
        "{{\"requests\":{},\"writes\":{},\"refused\":{},\"calls\":{},\"messages\":{},\
         \"conns\":{},\"streams\":{},\"streams_open\":{},\"streams_open_max\":{},\
         \"grpc_errors\":{},\"resets\":{},\"last_reset\":{:?},\
         \"conn_errors\":{{{}}},\"rows\":{{",
        st.requests,
        st.writes,
        st.refused,
        st.calls,
        st.grpc_messages,
        st.grpc_conns,
        st.grpc_streams,
        st.grpc_streams_open,
        st.grpc_streams_open_max,
        st.grpc_errors,
        st.grpc_resets,
        st.grpc_last_reset,
        st.grpc_conn_errors
            .iter()
            .map(|(e, n)| format!("{:?}:{}", e, n))
            .collect::<Vec<_>>()
            .join(",")
    );
    for (i, (db, per)) in st.rows.iter().enumerate() {
        s += &format!("{}{:?}:{{", if i > 0 { "," } else { "" }, db);
        for (j, (m, n)) in per.iter().enumerate() {
            s += &format!("{}{:?}:{}", if j > 0 { "," } else { "" }, m, n);
        }
        s += "}";
    }
    s + "}}\n"
}

async fn handle(state: Arc<State>, req: Request<Body>) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_string();
    let is_write = path == "/v1/influxdb/write" || path == "/v1/influxdb/api/v2/write";
    let resp = match (req.method(), path.as_str()) {
        (&Method::POST, _) if is_write => write(&state, req).await,
        (_, _) if is_write => answer(StatusCode::METHOD_NOT_ALLOWED, "method not allowed"),
        (&Method::GET, "/v1/influxdb/ping") => answer(StatusCode::NO_CONTENT, ""),
        (&Method::GET, "/v1/influxdb/health") | (&Method::GET, "/health") => {
            answer(StatusCode::OK, "")
        }
        (&Method::GET, "/stats") => {
            // not counted: the suite reads it between cases
            let st = state.stats.lock().unwrap();
            return Ok(Response::new(Body::from(stats_json(&st))));
        }
        _ => answer(StatusCode::NOT_FOUND, "not found"),
    };
    let mut st = state.stats.lock().unwrap();
    st.requests += 1;
    if is_write && resp.status() != StatusCode::NO_CONTENT {
        st.refused += 1;
    }
    Ok(resp)
}

const USAGE: &str = "usage: rg-greptime --port PORT [--databases LIST]
                   [--grpc-port PORT [--grpc-max-streams N]]

Serves GreptimeDB's InfluxDB write endpoints (/v1/influxdb/write,
/v1/influxdb/api/v2/write) on 127.0.0.1:PORT with hyper's HTTP/1 and
GreptimeDB's database and row rules, storing only counts: GET /stats.

  --port PORT         TCP port on 127.0.0.1 (required)
  --databases LIST    comma-separated schemas of catalog greptime that
                      exist (default: public); writes to others fail
  --grpc-port PORT    also serve greptime.v1.GreptimeDatabase/Handle and
                      /HandleRequests on 127.0.0.1:PORT: h2c with prior
                      knowledge, hyper's HTTP/2 on the h2 crate (default:
                      off); rows go to the same /stats counters, plus
                      calls, messages, conns, streams, streams_open(_max),
                      resets and conn_errors (by hyper's error)
  --grpc-max-streams N
                      SETTINGS_MAX_CONCURRENT_STREAMS on the gRPC port
                      (default: 100)

EXAMPLES
  rg-greptime --port 4000 --databases public,t,free
  curl -XPOST --data-binary 'm v=1' 'http://127.0.0.1:4000/v1/influxdb/write?db=t'
  rg-greptime --port 4000 --grpc-port 4001 --databases public,t
";

fn main() {
    let mut port: Option<u16> = None;
    let mut grpc_port: Option<u16> = None;
    let mut max_streams: u32 = 100;
    let mut schemas: HashSet<String> = [DEFAULT_SCHEMA.to_string()].into_iter().collect();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--port" => {
                let v = args.next().unwrap_or_default();
                match v.parse::<u16>() {
                    Ok(p) if p > 0 => port = Some(p),
                    _ => die(&format!("--port: not a TCP port: {:?}", v)),
                }
            }
            "--grpc-port" => {
                let v = args.next().unwrap_or_default();
                match v.parse::<u16>() {
                    Ok(p) if p > 0 => grpc_port = Some(p),
                    _ => die(&format!("--grpc-port: not a TCP port: {:?}", v)),
                }
            }
            "--grpc-max-streams" => {
                let v = args.next().unwrap_or_default();
                match v.parse::<u32>() {
                    Ok(n) if n > 0 => max_streams = n,
                    _ => die(&format!(
                        "--grpc-max-streams: not a positive number: {:?}",
                        v
                    )),
                }
            }
            "--databases" => {
                let v = args.next().unwrap_or_default();
                schemas = v.split(',').filter(|s| !s.is_empty()).map(String::from).collect();
                if schemas.is_empty() {
                    die("--databases: empty list");
                }
            }
            "-h" | "--help" => {
                print!("{}", USAGE);
                return;
            }
            _ => die(&format!("unknown argument {:?}", a)),
        }
    }
    let port = port.unwrap_or_else(|| die("--port is required"));
    if grpc_port == Some(port) {
        die("--grpc-port: the same port as --port");
    }
    let state = Arc::new(State {
        schemas,
        stats: Mutex::new(Stats::default()),
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| die(&format!("tokio: {}", e)));
    let gstate = state.clone();
    rt.block_on(async move {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let make = make_service_fn(move |_| {
            let state = state.clone();
            async move { Ok::<_, Infallible>(service_fn(move |req| handle(state.clone(), req))) }
        });
        let server = match Server::try_bind(&addr) {
            Ok(b) => b.serve(make),
            Err(e) => die(&format!("cannot listen on {}: {}", addr, e)),
        };
        let gport = match grpc_port {
            Some(p) => p,
            None => {
                if let Err(e) = server.await {
                    die(&format!("server: {}", e));
                }
                return;
            }
        };
        let gaddr = SocketAddr::from(([127, 0, 0, 1], gport));
        let listener = match std::net::TcpListener::bind(gaddr)
            .and_then(|l| l.set_nonblocking(true).map(|_| l))
            .and_then(tokio::net::TcpListener::from_std)
        {
            Ok(l) => l,
            Err(e) => die(&format!("cannot listen on {}: {}", gaddr, e)),
        };
        tokio::select! {
            r = server => if let Err(e) = r { die(&format!("server: {}", e)) },
            e = grpc_serve(listener, gstate, max_streams) => die(&format!("gRPC server: {}", e)),
        }
    });
}

/// The gRPC port: one hyper HTTP/2 connection per accepted socket, each
/// one's end recorded in /stats (how h2 ended it, if not cleanly).
async fn grpc_serve(
    listener: tokio::net::TcpListener,
    state: Arc<State>,
    max_streams: u32,
) -> std::io::Error {
    let mut http = hyper::server::conn::Http::new();
    http.http2_only(true)
        .http2_max_concurrent_streams(max_streams);
    loop {
        let (sock, _) = match listener.accept().await {
            Ok(a) => a,
            Err(e) => return e,
        };
        state.stats.lock().unwrap().grpc_conns += 1;
        let st = state.clone();
        let svc = service_fn(move |req| {
            let st = st.clone();
            async move { Ok::<_, Infallible>(grpc::handle(&st, req).await) }
        });
        let conn = http.serve_connection(sock, svc);
        let st = state.clone();
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                let mut s = st.stats.lock().unwrap();
                *s.grpc_conn_errors.entry(format!("{:?}", e)).or_insert(0) += 1;
            }
        });
    }
}

fn die(msg: &str) -> ! {
    eprintln!("rg-greptime: {}\n{}", msg, USAGE);
    std::process::exit(2);
}
