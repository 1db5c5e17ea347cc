#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0
// Arrow Flight DoPut bulk writes as GreptimeDB serves them, on @grpc/grpc-js
// with Arrow IPC from npm apache-arrow (its RecordBatchStreamWriter, not
// hand-built): STREAMS DoPut calls one after the other, each of BATCHES
// record batches of ROWS rows (ts Timestamp(ms), host Utf8, value Float64)
// into TABLE, with x-greptime-db-name DB, gzip with --gzip.  The IPC stream
// is cut into its messages, one FlightData each: the Schema first with the
// PATH descriptor, then each RecordBatch with app_metadata
// {"request_id": N} (N = 1, 2, ... in each stream).  --dump FILE writes one
// stream's FlightData (serialized, each after its length as a big-endian
// u32) to FILE for flight_client.py and exits without connecting.  Prints
// JSON: ok, failed (streams), codes (count per final status code), errors
// (the first few distinct details), acked_rows (affected_rows of the
// PutResults), rows_sent (rows of the batches written).
'use strict';
const fs = require('fs');
const path = require('path');
const grpc = require('@grpc/grpc-js');
const loader = require('@grpc/proto-loader');
const arrow = require('apache-arrow');

const opt = { table: 'rg_flight', streams: 1, batches: 3, rows: 100, interval: 0, deadline: 60 };
const usage = require('./args').parseArgs('flight_js.js',
	`usage: flight_js.js --target HOST:PORT [options] | --dump FILE [options]
  --db NAME         x-greptime-db-name (default: none, GreptimeDB's public)
  --table NAME      table in the flight descriptor (default rg_flight)
  --streams N       DoPut calls, one after the other (default 1)
  --batches N       record batches per stream (default 3)
  --rows N          rows per record batch (default 100)
  --interval MS     pause between batches (default 0)
  --gzip            compress messages (grpc-encoding: gzip)
  --deadline SEC    each DoPut call's deadline (default 60)
  --dump FILE       write one stream's FlightData to FILE, do not connect`, {
	'--target': ['target', 'value'], '--db': ['db', 'value'], '--table': ['table', 'value'],
	'--streams': ['streams', 'number'], '--batches': ['batches', 'number'],
	'--rows': ['rows', 'number'], '--interval': ['interval', 'number'],
	'--gzip': ['gzip', true], '--dump': ['dump', 'value'],
	'--deadline': ['deadline', 'number'],
}, opt);
if (!opt.target && !opt.dump)
	usage('--target or --dump is required');
if (opt.batches < 1 || opt.rows < 1)
	usage('--batches and --rows must be at least 1');

const protoDir = path.join(__dirname, '..', '..', 'proto');
const def = loader.loadSync('flight.proto',
	{ includeDirs: [protoDir], keepCase: true, longs: String, enums: String, defaults: false });
const FlightService = grpc.loadPackageDefinition(def).arrow.flight.protocol.FlightService;
const doPut = FlightService.service.DoPut;

// One stream's Arrow IPC: a table of BATCHES record batches (concat keeps
// them apart), in the IPC streaming format.
function ipcStream(stream) {
	let table = null;
	for (let b = 0; b < opt.batches; b++) {
		const base = 1700000000000 + (stream * opt.batches + b) * opt.rows;
		const t = arrow.makeTable({
			ts: arrow.vectorFromArray(Array.from({ length: opt.rows }, (_, i) => base + i),
				new arrow.TimestampMillisecond()),
			host: arrow.vectorFromArray(Array.from({ length: opt.rows }, (_, i) => `host-${i % 16}`),
				new arrow.Utf8()),
			value: arrow.vectorFromArray(Float64Array.from({ length: opt.rows }, (_, i) => i * 0.5),
				new arrow.Float64()),
		});
		table = table ? table.concat(t) : t;
	}
	const w = new arrow.RecordBatchStreamWriter();
	w.write(table);
	w.finish();
	return Buffer.from(w.toUint8Array(true));
}

// The IPC stream's messages: [0xFFFFFFFF] int32 metadata length, the
// flatbuffer Message (padded to 8 bytes; the padding is kept, a flatbuffer
// reader ignores what follows the table), then bodyLength bytes of body;
// length 0 is the end of stream.  Pre-0.15 streams lack the 0xFFFFFFFF.
function ipcMessages(buf) {
	const out = [];
	let o = 0;
	while (o + 4 <= buf.length) {
		let len = buf.readInt32LE(o);
		o += 4;
		if (len === -1) {
			len = buf.readInt32LE(o);
			o += 4;
		}
		if (len === 0)
			break;
		const header = buf.subarray(o, o + len);
		o += len;
		const body = buf.subarray(o, o + bodyLength(header));
		o += body.length;
		out.push({ header, body, type: headerType(header) });
	}
	return out;
}

// Message fields (format/Message.fbs): 1 header_type (ubyte), 3 bodyLength
// (long); read from the flatbuffer directly to cut the stream.
function fbField(buf, i) {
	const root = buf.readUInt32LE(0);
	const vt = root - buf.readInt32LE(root);
	const slot = 4 + 2 * i;
	const o = slot + 2 <= buf.readUInt16LE(vt) ? buf.readUInt16LE(vt + slot) : 0;
	return o ? root + o : 0;
}
const headerType = (h) => { const f = fbField(h, 1); return f ? h[f] : 0; };
const bodyLength = (h) => { const f = fbField(h, 3); return f ? Number(h.readBigInt64LE(f)) : 0; };

// FlightData of one stream: the descriptor rides on the Schema message,
// request_id on each RecordBatch (as GreptimeDB's own bulk client does).
function flightData(stream) {
	let rid = 0;
	return ipcMessages(ipcStream(stream)).map((m, i) => {
		const fd = { data_header: m.header, data_body: m.body };
		if (i === 0)
			fd.flight_descriptor = { type: 'PATH', path: [opt.table] };
		if (m.type === 3 /* RecordBatch */)
			fd.app_metadata = Buffer.from(JSON.stringify({ request_id: ++rid }));
		return fd;
	});
}

if (opt.dump) {
	const parts = [];
	for (const fd of flightData(0)) {
		const b = doPut.requestSerialize(fd);
		const len = Buffer.alloc(4);
		len.writeUInt32BE(b.length);
		parts.push(len, b);
	}
	fs.writeFileSync(opt.dump, Buffer.concat(parts));
	process.exit(0);
}

const channelOptions = {};
if (opt.gzip)
	channelOptions['grpc.default_compression_algorithm'] = 2; /* gzip */
const client = new FlightService(opt.target, grpc.credentials.createInsecure(), channelOptions);
const md = new grpc.Metadata();
if (opt.db)
	md.set('x-greptime-db-name', opt.db);

const res = { ok: 0, failed: 0, codes: {}, errors: [], acked_rows: 0, rows_sent: 0 };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function oneStream(s) {
	const msgs = flightData(s);
	return new Promise((resolve) => {
		const call = client.DoPut(md, { deadline: Date.now() + opt.deadline * 1000 });
		let acks = 0;
		call.on('data', (r) => {
			const a = JSON.parse(Buffer.from(r.app_metadata).toString());
			acks++;
			res.acked_rows += Number(a.affected_rows);
		});
		call.on('error', () => {}); // the status below says it all
		call.on('status', (st) => {
			res.codes[st.code] = (res.codes[st.code] || 0) + 1;
			if (st.code === grpc.status.OK && acks === opt.batches + 1) {
				res.ok++;
			} else {
				res.failed++;
				const d = st.code === grpc.status.OK ? `${acks} PutResults for ${opt.batches} batches`
					: st.details;
				if (res.errors.length < 5 && !res.errors.includes(d))
					res.errors.push(d);
			}
			resolve();
		});
		(async () => {
			for (let i = 0; i < msgs.length; i++) {
				if (i > 1 && opt.interval)
					await sleep(opt.interval);
				// wait for room rather than buffer a whole stream in memory
				if (!call.write(msgs[i]))
					await new Promise((r) => call.once('drain', r));
				if (msgs[i].app_metadata)
					res.rows_sent += opt.rows;
			}
			call.end();
		})().catch(() => call.end());
	});
}

(async () => {
	for (let s = 0; s < opt.streams; s++)
		await oneStream(s);
	client.close();
	console.log(JSON.stringify(res));
	process.exit(res.failed ? 1 : 0);
})();
