// SPDX-License-Identifier: GPL-2.0
// The command line of the test clients (client.js, flight_js.js).
'use strict';

// Parse process.argv into opt.  spec maps each option to [field, kind]:
// kind 'value' takes the next argument, 'number' a non-negative integer,
// anything else is the value the flag sets.  Errors print usageText and
// exit 2; returns the usage function for the caller's own checks.
function parseArgs(prog, usageText, spec, opt) {
	const usage = (msg) => {
		if (msg)
			console.error(`${prog}: ${msg}`);
		console.error(usageText);
		process.exit(2);
	};
	const argv = process.argv.slice(2);
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		if (a === '-h' || a === '--help')
			usage();
		if (!Object.prototype.hasOwnProperty.call(spec, a))
			usage(`unknown option '${a}'`);
		const [field, kind] = spec[a];
		if (kind !== 'value' && kind !== 'number') {
			opt[field] = kind;
			continue;
		}
		if (i + 1 >= argv.length)
			usage(`${a} wants a value`);
		const v = argv[++i];
		if (kind === 'number' && !/^\d+$/.test(v))
			usage(`${a} wants a number, got '${v}'`);
		opt[field] = kind === 'number' ? Number(v) : v;
	}
	return usage;
}

module.exports = { parseArgs };
