#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0
// OpenTelemetry's own OTLP/gRPC metric exporter (npm
// @opentelemetry/exporter-metrics-otlp-grpc on @grpc/grpc-js, with the
// SDK's MeterProvider): EXPORTS exports of POINTS counter data points each
// (delta temporality, a new attribute set per point), with
// x-greptime-db-name DB, gzip with --gzip.  The exporter's own retry policy
// applies (RESOURCE_EXHAUSTED is retried with backoff).  Prints JSON: ok,
// failed (export results), errors (their messages).
'use strict';
const grpc = require('@grpc/grpc-js');
const { MeterProvider, PeriodicExportingMetricReader, AggregationTemporality } =
	require('@opentelemetry/sdk-metrics');
const { OTLPMetricExporter } = require('@opentelemetry/exporter-metrics-otlp-grpc');

function arg(name, dflt) {
	const i = process.argv.indexOf('--' + name);
	return i > 0 ? process.argv[i + 1] : dflt;
}

async function main() {
	const target = arg('target');
	const db = arg('db');
	const exports = Number(arg('exports', '1'));
	const points = Number(arg('points', '10'));
	const gzip = process.argv.includes('--gzip');
	if (!target) {
		console.error('usage: otlp_js.js --target HOST:PORT [--db DB] [--exports N] [--points N] [--gzip]');
		process.exit(2);
	}
	const md = new grpc.Metadata();
	if (db)
		md.set('x-greptime-db-name', db);
	const exporter = new OTLPMetricExporter({
		url: `http://${target}`,
		metadata: md,
		compression: gzip ? 'gzip' : 'none',
		temporalityPreference: AggregationTemporality.DELTA,
		timeoutMillis: 30000,
	});
	const out = { ok: 0, failed: 0, errors: [] };
	const exportOne = exporter.export.bind(exporter);
	exporter.export = (metrics, done) => exportOne(metrics, (r) => {
		if (r.code === 0) {
			out.ok++;
		} else {
			out.failed++;
			const m = r.error ? String(r.error.message || r.error) : 'failed';
			if (!out.errors.includes(m))
				out.errors.push(m);
		}
		done(r);
	});
	const reader = new PeriodicExportingMetricReader({
		exporter, exportIntervalMillis: 3600000, exportTimeoutMillis: 60000,
	});
	const provider = new MeterProvider({ readers: [reader] });
	const counter = provider.getMeter('rowgate-test').createCounter('rg_otlp_js');
	for (let e = 0; e < exports; e++) {
		for (let i = 0; i < points; i++)
			counter.add(1, { export: e, i });
		await reader.forceFlush();
	}
	await provider.shutdown();
	console.log(JSON.stringify(out));
}

main().catch((e) => { console.error(e); process.exit(1); });
