#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0
// A GreptimeDB gRPC ingest client on @grpc/grpc-js: sends row inserts (or
// columnar inserts) with unary Handle or client-streaming HandleRequests,
// with the standard gRPC retry policy (RESOURCE_EXHAUSTED retryable) in its
// service config.  With --other N, each call is followed, on the same
// connection, by N calls of grpc.health.v1.Health/Check (service
// "rowgate.test") and N of rowgate.test.Other/Handle (a GreptimeRequest to
// a method rowgate does not route).  Prints one JSON line: what it sent and
// how the calls ended.
'use strict';
const path = require('path');
const grpc = require('@grpc/grpc-js');
const loader = require('@grpc/proto-loader');

const opt = { mode: 'unary', calls: 10, perCall: 3, rows: 10, id: 'js',
	      concurrency: 1, retry: true, columnar: false, other: 0, gapMs: 0, staggerMs: 0 };
const usage = require('./args').parseArgs('client.js',
	`usage: client.js --target HOST:PORT --db DB [options]
  --mode unary|stream   Handle per message, or HandleRequests (default unary)
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
--db A,B,... takes the databases in turn, message by message.`, {
	'--target': ['target', 'value'], '--db': ['db', 'value'], '--mode': ['mode', 'value'],
	'--calls': ['calls', 'number'], '--per-call': ['perCall', 'number'],
	'--rows': ['rows', 'number'], '--id': ['id', 'value'],
	'--concurrency': ['concurrency', 'number'], '--columnar': ['columnar', true],
	'--no-retry': ['retry', false], '--gzip': ['gzip', true], '--other': ['other', 'number'],
	'--gap-ms': ['gapMs', 'number'], '--stagger-ms': ['staggerMs', 'number'],
}, opt);
if (!opt.target || !opt.db)
	usage('--target and --db are required');
if (opt.mode !== 'unary' && opt.mode !== 'stream')
	usage(`--mode is unary or stream, got '${opt.mode}'`);

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
if (opt.retry)
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

function oneCall() {
	return new Promise((resolve) => {
		const done = (err, resp, rows) => {
			res.calls++;
			if (err) {
				res.failed++;
				res.codes[err.code] = (res.codes[err.code] || 0) + 1;
				res.last_error = err.details;
				const md = err.metadata ? err.metadata.getMap() : {};
				if (md['x-greptime-err-code'])
					res.err_code = md['x-greptime-err-code'];
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
	const worker = async (w) => { await sleep(w * opt.staggerMs); while (next < opt.calls) { next++; await oneCall(); await otherCalls(); } };
	await Promise.all(Array.from({ length: Math.max(1, opt.concurrency) }, (_, w) => worker(w)));
	res.seconds = Number(process.hrtime.bigint() - t0) / 1e9;
	console.log(JSON.stringify(res));
	client.close();
	process.exit(res.failed || res.other_failed ? 1 : 0);
})();
