#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0
// A GreptimeDB gRPC ingest client on @grpc/grpc-js: sends row inserts (or
// columnar inserts) with unary Handle or client-streaming HandleRequests,
// with the standard gRPC retry policy (RESOURCE_EXHAUSTED retryable) in its
// service config.  With --other N, each call is followed, on the same
// connection, by N calls of grpc.health.v1.Health/Check (service
// "rowgate.test") and N of rowgate.test.Other/Handle (a GreptimeRequest to
// a method rowgate does not route).  --mode writer is GreptimeDB's
// streaming writer: one HandleRequests call held open (writer()).  Prints
// one JSON line: what it sent and how the calls ended.
'use strict';
const path = require('path');
const grpc = require('@grpc/grpc-js');
const loader = require('@grpc/proto-loader');

const opt = { mode: 'unary', calls: 10, perCall: 3, rows: 10, id: 'js',
	      concurrency: 1, retry: true, columnar: false, other: 0, gapMs: 0, staggerMs: 0,
	      rate: 10, seconds: 10, resend: false, drainSeconds: 30, backoffMs: 100,
	      maxBackoffMs: 2000, callMessages: 0 };
const usage = require('./args').parseArgs('client.js',
	`usage: client.js --target HOST:PORT --db DB [options]
  --mode unary|stream|writer
                        Handle per message, HandleRequests, or one
                        HandleRequests call held open (default unary)
  --calls N             calls to make (default 10)
  --per-call N          messages per HandleRequests call (default 3)
  --rows N              rows per message (default 10)
  --columnar            send InsertRequests (row_count) instead of row inserts
  --id NAME             prefix of the unique table names (default js)
  --concurrency N       calls in flight at once (default 1)
  --no-retry            no retry policy in the service config
  --gzip                compress messages (grpc-encoding: gzip)
  --other N             Health/Check and Other/Handle calls after each call (default 0)
  --gap-ms N            pause between a HandleRequests call's messages (default 0)
  --stagger-ms N        start worker i of --concurrency i times N ms late (default 0)
  --rate N              writer: messages a second (default 10)
  --seconds N           writer: how long to write new messages (default 10)
  --resend              writer: send a failed call's messages again
  --drain-seconds N     writer --resend: how long to go on resending (default 30)
  --backoff-ms N        writer: pause before a failed call is reopened,
                        doubling (default 100)
  --max-backoff-ms N    writer: the longest pause (default 2000)
  --call-messages N     writer: close each call after N messages (default 0:
                        one call)
--db A,B,... takes the databases in turn, message by message.`, {
	'--target': ['target', 'value'], '--db': ['db', 'value'], '--mode': ['mode', 'value'],
	'--calls': ['calls', 'number'], '--per-call': ['perCall', 'number'],
	'--rows': ['rows', 'number'], '--id': ['id', 'value'],
	'--concurrency': ['concurrency', 'number'], '--columnar': ['columnar', true],
	'--no-retry': ['retry', false], '--gzip': ['gzip', true], '--other': ['other', 'number'],
	'--gap-ms': ['gapMs', 'number'], '--stagger-ms': ['staggerMs', 'number'],
	'--rate': ['rate', 'number'], '--seconds': ['seconds', 'number'], '--resend': ['resend', true],
	'--drain-seconds': ['drainSeconds', 'number'], '--backoff-ms': ['backoffMs', 'number'],
	'--max-backoff-ms': ['maxBackoffMs', 'number'], '--call-messages': ['callMessages', 'number'],
}, opt);
if (!opt.target || !opt.db)
	usage('--target and --db are required');
if (opt.mode !== 'unary' && opt.mode !== 'stream' && opt.mode !== 'writer')
	usage(`--mode is unary, stream or writer, got '${opt.mode}'`);
if (opt.mode === 'writer' && !opt.rate)
	usage('--rate must be above 0');

const protoDir = path.join(__dirname, '..', '..', 'proto');
const def = loader.loadSync('greptime/v1/ingest.proto',
	{ includeDirs: [protoDir], keepCase: true, longs: String, defaults: false });
const GreptimeDatabase = grpc.loadPackageDefinition(def).greptime.v1.GreptimeDatabase;

const serviceConfig = { methodConfig: [{
	name: [{ service: 'greptime.v1.GreptimeDatabase' }],
	retryPolicy: {
		maxAttempts: 5, initialBackoff: '0.05s', maxBackoff: '0.5s',
		backoffMultiplier: 2, retryableStatusCodes: ['RESOURCE_EXHAUSTED'],
	},
}] };
const channelOptions = {};
if (opt.retry && opt.mode !== 'writer') /* a writer retries its calls itself */
	channelOptions['grpc.service_config'] = JSON.stringify(serviceConfig);
if (opt.gzip)
	channelOptions['grpc.default_compression_algorithm'] = 2; /* gzip */
const client = new GreptimeDatabase(opt.target, grpc.credentials.createInsecure(), channelOptions);

let seq = 0;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
function message() {
	const dbs = opt.db.split(',');
	const header = { dbname: dbs[seq % dbs.length] };
	const table = `${opt.id}_${seq++}`;
	if (opt.columnar) {
		const ts = [], v = [];
		for (let r = 0; r < opt.rows; r++) { ts.push(String(1700000000000 + r)); v.push(r * 0.5); }
		return { header, inserts: { inserts: [{ table_name: table, row_count: opt.rows, columns: [
			{ column_name: 'ts', semantic_type: 'TIMESTAMP', datatype: 'TIMESTAMP_MILLISECOND',
			  values: { timestamp_millisecond_values: ts } },
			{ column_name: 'v', semantic_type: 'FIELD', datatype: 'FLOAT64', values: { f64_values: v } },
		] }] } };
	}
	const rows = [];
	for (let r = 0; r < opt.rows; r++)
		rows.push({ values: [{ timestamp_millisecond_value: String(1700000000000 + r) }, { f64_value: r * 0.5 }] });
	return { header, row_inserts: { inserts: [{ table_name: table, rows: {
		schema: [{ column_name: 'ts', datatype: 'TIMESTAMP_MILLISECOND', semantic_type: 'TIMESTAMP' },
			 { column_name: 'v', datatype: 'FLOAT64', semantic_type: 'FIELD' }],
		rows } }] } };
}

const res = { impl: 'grpc-js', version: require('@grpc/grpc-js/package.json').version,
	      mode: opt.mode, db: opt.db, calls: 0, ok: 0, failed: 0,
	      rows_sent: 0, rows_acked: 0, codes: {},
	      health_ok: 0, other_ok: 0, other_failed: 0, other_rows_acked: 0 };

// HealthCheckRequest{service: "rowgate.test"}; SERVING is 08 01
const healthReq = Buffer.concat([Buffer.from([0x0a, 12]), Buffer.from('rowgate.test')]);
const handleDef = GreptimeDatabase.service.Handle;

function unary(path, ser, de, arg) {
	return new Promise((resolve) => client.makeUnaryRequest(path, ser, de, arg,
		(err, resp) => resolve({ err, resp })));
}

async function otherCalls() {
	for (let i = 0; i < opt.other; i++) {
		const h = await unary('/grpc.health.v1.Health/Check', (b) => b, (b) => b, healthReq);
		if (!h.err && h.resp.equals(Buffer.from([0x08, 0x01]))) {
			res.health_ok++;
		} else {
			res.other_failed++;
			res.other_error = `health: ${h.err ? h.err.details : h.resp.toString('hex')}`;
		}
		const o = await unary('/rowgate.test.Other/Handle', handleDef.requestSerialize,
			handleDef.responseDeserialize, message());
		if (!o.err) {
			res.other_ok++;
			res.other_rows_acked += o.resp.affected_rows ? o.resp.affected_rows.value : 0;
		} else {
			res.other_failed++;
			res.other_error = `other: ${o.err.details}`;
		}
	}
}

// The fields of a protobuf message: [field number, wire type, value], a
// varint as a Number, a length-delimited field as a Buffer.
function pbFields(buf) {
	const out = [];
	let off = 0;
	const varint = () => {
		let v = 0, mul = 1, c;
		do {
			if (off >= buf.length)
				throw new Error('truncated varint');
			c = buf[off++];
			v += (c & 0x7f) * mul;
			mul *= 128;
		} while (c & 0x80);
		return v;
	};
	while (off < buf.length) {
		const key = varint(), wt = key % 8;
		if (wt === 0) {
			out.push([Math.floor(key / 8), wt, varint()]);
		} else if (wt === 2) {
			const n = varint();
			out.push([Math.floor(key / 8), wt, buf.subarray(off, off + n)]);
			off += n;
		} else {
			throw new Error(`wire type ${wt}`);
		}
	}
	return out;
}

// google.rpc.RetryInfo's retry_delay seconds in a grpc-status-details-bin
// Status, -1 without one.
function retryDelay(statusBin) {
	for (const [f, wt, any] of pbFields(statusBin)) {
		if (f !== 3 || wt !== 2)
			continue;
		const parts = pbFields(any);
		const url = parts.find((p) => p[0] === 1);
		const value = parts.find((p) => p[0] === 2);
		if (!url || !value || !url[2].toString().endsWith('/google.rpc.RetryInfo'))
			continue;
		for (const [g, , delay] of pbFields(value[2]))
			if (g === 1)
				for (const [h, , secs] of pbFields(delay))
					if (h === 1)
						return secs;
		return 0;
	}
	return -1;
}

// Count a failed call's status in res.
function noteError(err) {
	res.failed++;
	res.codes[err.code] = (res.codes[err.code] || 0) + 1;
	res.last_error = err.details;
	const md = err.metadata ? err.metadata.getMap() : {};
	if (md['x-greptime-err-code'])
		res.err_code = md['x-greptime-err-code'];
	if (err.code === grpc.status.RESOURCE_EXHAUSTED && res.retry_delay_s === undefined) {
		const bin = md['grpc-status-details-bin'];
		res.retry_delay_s = Buffer.isBuffer(bin) ? retryDelay(bin) : -1;
	}
}

// GreptimeDB's streaming writer: one HandleRequests call held open,
// --rate messages a second for --seconds (or --call-messages a call).  A
// call that fails (the server's limiter, or rowgate's, ends it at the
// message it refuses, after storing the earlier ones) is reopened after a
// backoff, doubling from --backoff-ms to --max-backoff-ms; with --resend the
// failed call's messages are sent again first, since the client cannot
// know which of them were stored, until none is left or --drain-seconds
// pass.
async function writer() {
	const interval = 1000 / opt.rate;
	const stop = Date.now() + opt.seconds * 1000, end = stop + opt.drainSeconds * 1000;
	let queue = [], next = Date.now(), backoff = opt.backoffMs;
	Object.assign(res, { messages: 0, sends: 0, resent: 0, pending: 0 });
	for (;;) {
		const now = Date.now();
		if (now >= stop && (!opt.resend || !queue.length || now >= end))
			break;
		const inCall = [];
		let ended = null;
		const finished = new Promise((resolve) => {
			const call = client.HandleRequests((err, resp) => { ended = { err, resp }; resolve(); });
			(async () => {
				while (!ended && (!opt.callMessages || inCall.length < opt.callMessages)) {
					const t = Date.now();
					let m = null;
					if (t >= end)
						break;
					if (queue.length) {
						m = queue.shift();
						res.resent++;
					} else if (t < stop) {
						m = message();
						res.messages++;
					} else {
						break;
					}
					if (next > t)
						await sleep(next - t);
					next += interval;
					if (next < Date.now() - 1000) /* no burst to catch up after a stall */
						next = Date.now();
					if (ended) {
						queue.unshift(m);
						break;
					}
					inCall.push(m);
					res.sends++;
					call.write(m);
				}
				if (!ended)
					call.end();
			})();
		});
		await finished;
		res.calls++;
		if (!ended.err) {
			res.ok++;
			res.rows_sent += inCall.length * opt.rows;
			res.rows_acked += ended.resp.affected_rows ? Number(ended.resp.affected_rows.value) : 0;
			backoff = opt.backoffMs;
			continue;
		}
		noteError(ended.err);
		if (opt.resend)
			queue = inCall.concat(queue);
		else
			res.pending += inCall.length;
		await sleep(backoff);
		backoff = Math.min(backoff * 2, opt.maxBackoffMs);
	}
	res.pending += queue.length;
}

function oneCall() {
	return new Promise((resolve) => {
		const done = (err, resp, rows) => {
			res.calls++;
			if (err) {
				noteError(err);
			} else {
				res.ok++;
				res.rows_sent += rows;
				res.rows_acked += resp.affected_rows ? resp.affected_rows.value : 0;
			}
			resolve();
		};
		if (opt.mode === 'unary') {
			client.Handle(message(), (err, resp) => done(err, resp, opt.rows));
		} else {
			const call = client.HandleRequests((err, resp) => done(err, resp, opt.rows * opt.perCall));
			(async () => {
				for (let m = 0; m < opt.perCall; m++) {
					if (m > 0 && opt.gapMs)
						await sleep(opt.gapMs);
					call.write(message());
				}
				call.end();
			})();
		}
	});
}

(async () => {
	let next = 0;
	const t0 = process.hrtime.bigint();
	if (opt.mode === 'writer') {
		await writer();
		res.seconds = Number(process.hrtime.bigint() - t0) / 1e9;
		console.log(JSON.stringify(res));
		client.close();
		/* refusals are the writer's normal life: it fails on anything
		 * else or, resending, on a message never stored */
		process.exit(res.failed > (res.codes[8] || 0) || (opt.resend && res.pending) ? 1 : 0);
	}
	const worker = async (w) => { await sleep(w * opt.staggerMs); while (next < opt.calls) { next++; await oneCall(); await otherCalls(); } };
	await Promise.all(Array.from({ length: Math.max(1, opt.concurrency) }, (_, w) => worker(w)));
	res.seconds = Number(process.hrtime.bigint() - t0) / 1e9;
	console.log(JSON.stringify(res));
	client.close();
	process.exit(res.failed || res.other_failed ? 1 : 0);
})();
