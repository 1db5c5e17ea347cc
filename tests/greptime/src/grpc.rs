// SPDX-License-Identifier: GPL-2.0
//! GreptimeDB's gRPC ingest service (greptime.v1.GreptimeDatabase, Handle
//! and HandleRequests) served as GreptimeDB serves it: tonic on hyper's
//! HTTP/2 and the `h2` crate (docs/grpc.md section 7).  h2c with prior
//! knowledge; gRPC length-prefixed messages; GreptimeRequest decoded by
//! hand from proto/greptime/v1/ingest.proto; the database of every
//! message resolved from its own RequestHeader as greptime_handler.rs
//! create_query_context() does (docs/grpc.md section 2).

use hyper::body::{Bytes, HttpBody};
use hyper::header::{HeaderMap, HeaderValue};
use hyper::{Body, Request, Response};

use crate::{State, DEFAULT_CATALOG, DEFAULT_SCHEMA};

const SERVICE: &str = "/greptime.v1.GreptimeDatabase/";
/// tonic's default max_decoding_message_size
const MAX_MESSAGE: usize = 4 << 20;

/// gRPC status codes answered here
const OK: u32 = 0;
const NOT_FOUND: u32 = 5;
const UNIMPLEMENTED: u32 = 12;
const INTERNAL: u32 = 13;

/// What one GreptimeRequest writes.
#[derive(Debug, Default, PartialEq)]
pub struct Write {
    pub catalog: String,
    pub schema: String,
    /// table -> rows, in message order
    pub tables: Vec<(String, u64)>,
}

struct Reader<'a> {
    b: &'a [u8],
    last: u64,
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for i in 0..10 {
            let (&c, rest) = self.b.split_first().ok_or("truncated varint")?;
            self.b = rest;
            v |= ((c & 0x7f) as u64) << (7 * i);
            if c & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("varint over 10 bytes".into())
    }

    /// The next field: (number, wire type, length-delimited payload); a
    /// varint's value is in `self.last`.
    fn field(&mut self) -> Result<Option<(u64, u8, &'a [u8])>, String> {
        if self.b.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let (num, wt) = (key >> 3, (key & 7) as u8);
        if num == 0 {
            return Err("field number 0".into());
        }
        let take = |r: &mut Self, n: usize| -> Result<&'a [u8], String> {
            if r.b.len() < n {
                return Err("truncated field".into());
            }
            let (v, rest) = r.b.split_at(n);
            r.b = rest;
            Ok(v)
        };
        let payload = match wt {
            0 => {
                self.last = self.varint()?;
                &[][..]
            }
            1 => take(self, 8)?,
            2 => {
                let n = self.varint()?;
                take(self, usize::try_from(n).map_err(|_| "length too large")?)?
            }
            5 => take(self, 4)?,
            3 => {
                self.skip_group(num, 0)?;
                &[][..]
            }
            4 => return Err(format!("end group {} outside a group", num)),
            _ => return Err(format!("wire type {}", wt)),
        };
        Ok(Some((num, wt, payload)))
    }

    fn skip(&mut self, n: u64) -> Result<(), String> {
        let n = usize::try_from(n).map_err(|_| "length too large")?;
        if self.b.len() < n {
            return Err("truncated field".into());
        }
        self.b = &self.b[n..];
        Ok(())
    }

    /// A group's fields up to its end-group key, which must name it: what
    /// prost's skip_field does with an unknown group (nested ones too, to
    /// its recursion limit of 100).
    fn skip_group(&mut self, num: u64, depth: u32) -> Result<(), String> {
        if depth >= 100 {
            return Err("recursion limit reached".into());
        }
        loop {
            if self.b.is_empty() {
                return Err("message ends inside a group".into());
            }
            let key = self.varint()?;
            let (n, wt) = (key >> 3, (key & 7) as u8);
            if n == 0 {
                return Err("field number 0".into());
            }
            match wt {
                0 => {
                    self.varint()?;
                }
                1 => self.skip(8)?,
                2 => {
                    let len = self.varint()?;
                    self.skip(len)?
                }
                3 => self.skip_group(n, depth + 1)?,
                4 if n == num => return Ok(()),
                4 => return Err("unexpected end group tag".into()),
                5 => self.skip(4)?,
                _ => return Err(format!("wire type {}", wt)),
            }
        }
    }
}

fn fields(b: &[u8]) -> Reader<'_> {
    Reader { b, last: 0 }
}

fn string(b: &[u8]) -> Result<String, String> {
    String::from_utf8(b.to_vec()).map_err(|_| "string is not UTF-8".into())
}

/// A length-delimited field must have wire type 2.
fn len_field(num: u64, wt: u8) -> Result<(), String> {
    if wt == 2 {
        Ok(())
    } else {
        Err(format!("field {} has wire type {}", num, wt))
    }
}

/// RowInsertRequests { repeated RowInsertRequest { table_name = 1;
/// Rows rows = 2 { repeated Row rows = 2 } } = 1 }
fn row_inserts(b: &[u8], out: &mut Vec<(String, u64)>) -> Result<(), String> {
    let mut r = fields(b);
    while let Some((num, wt, ins)) = r.field()? {
        if num != 1 {
            continue;
        }
        len_field(num, wt)?;
        let (mut table, mut rows) = (String::new(), 0u64);
        let mut ri = fields(ins);
        while let Some((n, w, v)) = ri.field()? {
            match n {
                1 => {
                    len_field(n, w)?;
                    table = string(v)?;
                }
                2 => {
                    len_field(n, w)?;
                    let mut rr = fields(v);
                    while let Some((m, mw, _)) = rr.field()? {
                        if m == 2 {
                            len_field(m, mw)?;
                            rows += 1;
                        }
                    }
                }
                _ => {}
            }
        }
        out.push((table, rows));
    }
    Ok(())
}

/// InsertRequests { repeated InsertRequest { table_name = 1;
/// row_count = 4 } = 1 }
fn inserts(b: &[u8], out: &mut Vec<(String, u64)>) -> Result<(), String> {
    let mut r = fields(b);
    while let Some((num, wt, ins)) = r.field()? {
        if num != 1 {
            continue;
        }
        len_field(num, wt)?;
        let (mut table, mut rows) = (String::new(), 0u64);
        let mut ri = fields(ins);
        while let Some((n, w, v)) = ri.field()? {
            match n {
                1 => {
                    len_field(n, w)?;
                    table = string(v)?;
                }
                4 if w == 0 => rows = ri.last,
                4 => return Err(format!("field 4 has wire type {}", w)),
                _ => {}
            }
        }
        out.push((table, rows));
    }
    Ok(())
}

/// GreptimeRequest: the header's database and the rows it writes (none
/// for deletes).  A oneof seen twice keeps the last, as protobuf does.
pub fn decode(msg: &[u8]) -> Result<Write, String> {
    let (mut catalog, mut schema, mut dbname) = (String::new(), String::new(), String::new());
    let mut body: Option<(u64, &[u8])> = None;
    let mut r = fields(msg);
    while let Some((num, wt, v)) = r.field()? {
        match num {
            1 => {
                len_field(num, wt)?;
                let mut h = fields(v);
                while let Some((n, w, s)) = h.field()? {
                    match n {
                        1 | 2 | 4 => {
                            len_field(n, w)?;
                            let s = string(s)?;
                            match n {
                                1 => catalog = s,
                                2 => schema = s,
                                _ => dbname = s,
                            }
                        }
                        _ => {}
                    }
                }
            }
            2 | 5 | 6 | 7 => {
                len_field(num, wt)?;
                body = Some((num, v));
            }
            _ => {}
        }
    }
    let mut w = Write::default();
    // create_query_context(): dbname split at its first '-' as it is, else
    // catalog and schema lower-cased, each with its default
    if !dbname.is_empty() {
        match dbname.split_once('-') {
            Some((c, s)) => (w.catalog, w.schema) = (c.into(), s.into()),
            None => (w.catalog, w.schema) = (DEFAULT_CATALOG.into(), dbname),
        }
    } else {
        w.catalog = if catalog.is_empty() {
            DEFAULT_CATALOG.into()
        } else {
            catalog.to_lowercase()
        };
        w.schema = if schema.is_empty() {
            DEFAULT_SCHEMA.into()
        } else {
            schema.to_lowercase()
        };
    }
    match body {
        Some((2, b)) => inserts(b, &mut w.tables)?,
        Some((6, b)) => row_inserts(b, &mut w.tables)?,
        _ => {}
    }
    Ok(w)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// GreptimeResponse { header { status { status_code 0 } },
/// affected_rows { value } }, length-prefixed.
pub fn response(affected: u32) -> Vec<u8> {
    let mut msg = vec![0x0a, 0x02, 0x0a, 0x00];
    let mut ar = vec![0x08];
    put_varint(&mut ar, affected as u64);
    msg.push(0x12);
    put_varint(&mut msg, ar.len() as u64);
    msg.extend_from_slice(&ar);
    let mut out = vec![0];
    out.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    out.extend_from_slice(&msg);
    out
}

/// Splits length-prefixed messages off the front of buf.
fn next_message(buf: &mut Vec<u8>) -> Result<Option<Vec<u8>>, (u32, String)> {
    if buf.len() < 5 {
        return Ok(None);
    }
    if buf[0] != 0 {
        return Err((
            INTERNAL,
            "compressed message: no grpc-encoding accepted".into(),
        ));
    }
    let n = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
    if n > MAX_MESSAGE {
        return Err((INTERNAL, format!("message of {} bytes over the limit", n)));
    }
    if buf.len() < 5 + n {
        return Ok(None);
    }
    let msg = buf[5..5 + n].to_vec();
    buf.drain(..5 + n);
    Ok(Some(msg))
}

fn status_headers(h: &mut HeaderMap, code: u32, msg: &str) {
    h.insert("grpc-status", HeaderValue::from(code));
    if !msg.is_empty() {
        // grpc-message is percent-encoded; these messages are plain ASCII
        let enc: String = msg
            .bytes()
            .map(|c| {
                if (0x20..0x7f).contains(&c) && c != b'%' {
                    (c as char).to_string()
                } else {
                    format!("%{:02X}", c)
                }
            })
            .collect();
        if let Ok(v) = HeaderValue::from_str(&enc) {
            h.insert("grpc-message", v);
        }
    }
}

/// Trailers-only: the status in the response's HEADERS, END_STREAM.
fn trailers_only(code: u32, msg: &str) -> Response<Body> {
    let mut r = Response::new(Body::empty());
    r.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/grpc"));
    status_headers(r.headers_mut(), code, msg);
    r
}

fn ok_response(affected: u32) -> Response<Body> {
    let (mut tx, body) = Body::channel();
    let data = Bytes::from(response(affected));
    tokio::spawn(async move {
        let mut t = HeaderMap::new();
        status_headers(&mut t, OK, "");
        if tx.send_data(data).await.is_ok() {
            let _ = tx.send_trailers(t).await;
        }
    });
    let mut r = Response::new(body);
    r.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/grpc"));
    r
}

/// Counts a stream open while it lives.
struct Open<'a>(&'a State);

impl<'a> Open<'a> {
    fn new(state: &'a State) -> Self {
        let mut st = state.stats.lock().unwrap();
        st.grpc_streams += 1;
        st.grpc_streams_open += 1;
        st.grpc_streams_open_max = st.grpc_streams_open_max.max(st.grpc_streams_open);
        Open(state)
    }
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.0.stats.lock().unwrap().grpc_streams_open -= 1;
    }
}

/// Stores one decoded message; an unknown database stores nothing.
fn store(state: &State, w: &Write) -> Result<u64, (u32, String)> {
    if w.catalog != DEFAULT_CATALOG || !state.schemas.contains(&w.schema) {
        return Err((
            NOT_FOUND,
            format!("Database not found: {}-{}", w.catalog, w.schema),
        ));
    }
    let mut st = state.stats.lock().unwrap();
    st.grpc_messages += 1;
    let per = st.rows.entry(w.schema.clone()).or_default();
    let mut n = 0;
    for (t, rows) in &w.tables {
        *per.entry(t.clone()).or_insert(0) += rows;
        n += rows;
    }
    Ok(n)
}

/// One call: Handle takes exactly one message, HandleRequests any number.
/// A call counts as handled where tonic would call GreptimeDB's handler:
/// at its first complete message.
async fn call(state: &State, req: Request<Body>, unary: bool) -> Result<u64, (u32, String)> {
    let mut body = req.into_body();
    let mut buf: Vec<u8> = Vec::new();
    let (mut msgs, mut affected) = (0u64, 0u64);
    let mut ended = false;
    loop {
        while let Some(m) = next_message(&mut buf)? {
            if msgs == 0 {
                state.stats.lock().unwrap().calls += 1;
            }
            msgs += 1;
            if unary && msgs > 1 {
                return Err((UNIMPLEMENTED, "Handle takes one message".into()));
            }
            let w = decode(&m)
                .map_err(|e| (INTERNAL, format!("failed to decode GreptimeRequest: {}", e)))?;
            affected += store(state, &w)?;
        }
        if ended {
            break;
        }
        match body.data().await {
            Some(Ok(chunk)) => buf.extend_from_slice(&chunk),
            Some(Err(e)) => {
                // the client reset the stream (a refusal's RST_STREAM)
                let mut st = state.stats.lock().unwrap();
                st.grpc_resets += 1;
                st.grpc_last_reset = e.to_string();
                return Err((INTERNAL, format!("body: {}", e)));
            }
            None => ended = true,
        }
    }
    if !buf.is_empty() {
        return Err((INTERNAL, "stream ended inside a message".into()));
    }
    if unary && msgs == 0 {
        return Err((INTERNAL, "Handle: no message".into()));
    }
    Ok(affected)
}

pub async fn handle(state: &State, req: Request<Body>) -> Response<Body> {
    let _open = Open::new(state);
    let method = req
        .uri()
        .path()
        .strip_prefix(SERVICE)
        .unwrap_or("")
        .to_string();
    let unary = match (req.method() == hyper::Method::POST, method.as_str()) {
        (true, "Handle") => true,
        (true, "HandleRequests") => false,
        _ => {
            let p = req.uri().path().to_string();
            state.stats.lock().unwrap().grpc_errors += 1;
            // read the request to its end: answering first makes h2 reset
            // a stream the client is still sending on
            let mut body = req.into_body();
            let mut n = 0;
            while let Some(Ok(c)) = body.data().await {
                n += c.len();
                if n > MAX_MESSAGE {
                    break;
                }
            }
            return trailers_only(UNIMPLEMENTED, &format!("unknown method {}", p));
        }
    };
    match call(state, req, unary).await {
        Ok(n) => ok_response(n.min(u32::MAX as u64) as u32),
        Err((code, msg)) => {
            state.stats.lock().unwrap().grpc_errors += 1;
            trailers_only(code, &msg)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ld(num: u8, v: &[u8]) -> Vec<u8> {
        let mut o = vec![(num << 3) | 2];
        put_varint(&mut o, v.len() as u64);
        o.extend_from_slice(v);
        o
    }

    fn header(dbname: &str, catalog: &str, schema: &str) -> Vec<u8> {
        let mut h = Vec::new();
        if !catalog.is_empty() {
            h.extend(ld(1, catalog.as_bytes()));
        }
        if !schema.is_empty() {
            h.extend(ld(2, schema.as_bytes()));
        }
        if !dbname.is_empty() {
            h.extend(ld(4, dbname.as_bytes()));
        }
        ld(1, &h)
    }

    fn row_insert(table: &str, rows: usize) -> Vec<u8> {
        let mut r = ld(1, &ld(1, b"host"));
        for _ in 0..rows {
            r.extend(ld(2, &ld(1, &[0x20, 0x07])));
        }
        let mut ins = ld(1, table.as_bytes());
        ins.extend(ld(2, &r));
        ld(1, &ins)
    }

    #[test]
    fn row_inserts_per_table() {
        let mut m = header("t", "", "");
        let mut ri = row_insert("cpu", 3);
        ri.extend(row_insert("mem", 2));
        m.extend(ld(6, &ri));
        let w = decode(&m).unwrap();
        assert_eq!((w.catalog.as_str(), w.schema.as_str()), ("greptime", "t"));
        assert_eq!(w.tables, vec![("cpu".into(), 3), ("mem".into(), 2)]);
    }

    #[test]
    fn inserts_row_count_and_database_rules() {
        let mut ins = ld(1, b"cpu");
        ins.extend([0x20, 0xac, 0x02]); // row_count = 300
        let mut m = header("", "Greptime", "PUB");
        m.extend(ld(2, &ld(1, &ins)));
        let w = decode(&m).unwrap();
        assert_eq!((w.catalog.as_str(), w.schema.as_str()), ("greptime", "pub"));
        assert_eq!(w.tables, vec![("cpu".into(), 300)]);
        let w = decode(&header("a-B-c", "x", "y")).unwrap();
        assert_eq!((w.catalog.as_str(), w.schema.as_str()), ("a", "B-c"));
        let w = decode(&[]).unwrap();
        assert_eq!(
            (w.catalog.as_str(), w.schema.as_str(), w.tables.len()),
            ("greptime", "public", 0)
        );
    }

    #[test]
    fn malformed() {
        assert!(decode(&[0x0a, 0x05, 0x01]).is_err());
        assert!(decode(&[0x0b]).is_err());
        assert!(decode(&[0x08, 0x01]).is_err());
        let mut b = vec![1, 0, 0, 0, 0];
        assert!(next_message(&mut b).is_err());
        let mut b = vec![0, 0, 0, 0, 2, 0x08];
        assert_eq!(next_message(&mut b).unwrap(), None);
    }

    #[test]
    fn response_bytes() {
        assert_eq!(
            response(300),
            vec![0, 0, 0, 0, 9, 0x0a, 0x02, 0x0a, 0x00, 0x12, 0x03, 0x08, 0xac, 0x02]
        );
    }
}
