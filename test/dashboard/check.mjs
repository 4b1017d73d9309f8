// test/dashboard/check.mjs -- drive Debian's chromium (headless, through
// puppeteer-core, which downloads no browser) against the live dashboard and
// check that what the page shows equals what the views return in SQL.
// Run by test/integration/dashboard_browser.sh; environment:
//   CHROMIUM     the browser executable (/usr/bin/chromium)
//   PAGE_URL     the page, with ?api=<PostgREST URL>
//   SCREENSHOT   where to write the PNG
//   BROWSER_PID  file to write the browser's pid into (the caller kills it
//                if this script is killed)
//   PG*          the database (psql is run for the SQL side)
// Every wait is bounded; any console error, failed request or error answer
// fails the check.  Exit 0 = passed, 1 = failed.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import puppeteer from 'puppeteer-core';

const env = (k) => { if (!process.env[k]) throw new Error(`${k} is not set`); return process.env[k]; };
const CHECKS = 2;

let failures = 0;
const fail = (msg) => { failures++; console.error(`ASSERTION FAILED: ${msg}`); };
const ok = (msg) => console.log(`ok: ${msg}`);

// Monotone numbers of the pipeline, read in SQL (one snapshot).
function snapshot() {
	const sql = `
SELECT json_build_object(
  'top', (SELECT coalesce(json_object_agg(shop, orders), '{}') FROM live_top_shops),
  'perMinute', (SELECT coalesce(json_object_agg(shop || '@' || extract(epoch FROM minute)::bigint, orders), '{}')
                  FROM live_orders_per_minute),
  'messages', (SELECT messages FROM stream_ext.source_status WHERE source = 'live_orders_src'),
  'dead', (SELECT dead_letters FROM stream_ext.source_status WHERE source = 'live_orders_src'),
  'viewRows', (SELECT sum(rows_in) FROM stream_ext.view_stats
                WHERE view IN ('live_orders_per_minute'::regclass, 'live_top_shops'::regclass)))`;
	const out = execFileSync('psql', ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-c', sql],
		{ encoding: 'utf8', timeout: 20000 });
	return JSON.parse(out);
}

// lo <= v <= hi: the page's value lies between SQL before and after the refresh
function within(what, v, lo, hi) {
	if (typeof v !== 'number' || Number.isNaN(v) || v < lo || v > hi) {
		fail(`${what}: the page shows ${v}, SQL says between ${lo} and ${hi}`);
		return false;
	}
	return true;
}

const num = (text) => (text === '–' ? null : Number(text.replace(/,/g, '')));

const problems = [];   // console errors, failed requests, error answers

async function main() {
	const browser = await puppeteer.launch({
		executablePath: env('CHROMIUM'),
		headless: true,
		args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
			'--disable-extensions', '--disable-background-networking', '--disable-component-update'],
		timeout: 120000,	/* a loaded CI machine starts Chromium slowly */
		protocolTimeout: 30000,
	});
	writeFileSync(env('BROWSER_PID'), String(browser.process().pid));
	try {
		const page = await browser.newPage();
		await page.setViewport({ width: 1300, height: 760 });
		page.setDefaultTimeout(20000);
		page.on('console', (m) => { if (m.type() === 'error') problems.push(`console error: ${m.text()}`); });
		page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
		page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
		page.on('response', (r) => { if (r.status() >= 400) problems.push(`HTTP ${r.status()} for ${r.url()}`); });

		await page.goto(env('PAGE_URL'), { waitUntil: 'load', timeout: 20000 });
		await page.waitForFunction(() => window.dashboard && window.dashboard.refreshes >= 1, { timeout: 20000 });
		ok('the page loaded and refreshed');

		let lastMessages = -1;
		for (let c = 1; c <= CHECKS; c++) {
			const s0 = snapshot();
			const r0 = await page.evaluate(() => window.dashboard.refreshes);
			// two refreshes: the second one started after s0 was read
			await page.waitForFunction((r) => window.dashboard.refreshes >= r + 2, { timeout: 20000 }, r0);
			const shown = await page.evaluate(() => ({
				top: [...document.querySelectorAll('#top tbody tr')].map((tr) => ({
					shop: tr.dataset.shop, orders: tr.querySelector('.orders').textContent })),
				messages: document.getElementById('h-messages').textContent,
				dead: document.getElementById('h-dead').textContent,
				lag: document.getElementById('h-lag').textContent,
				rate: document.getElementById('h-rate').textContent,
				views: document.getElementById('h-views').textContent,
				state: document.getElementById('h-state').textContent,
				line: { labels: window.dashboard.line.series.slice(1).map((s) => s.label),
					data: window.dashboard.line.data },
				bars: window.dashboard.bars.data[1],
				error: document.getElementById('error').hidden ? null : document.getElementById('error').textContent,
			}));
			const s1 = snapshot();
			console.log(`check ${c}: page after refresh ${r0 + 2}: messages ${shown.messages}, rows/s ${shown.rate}, ` +
				`lag ${shown.lag}, dead letters ${shown.dead}, top ${shown.top.map((t) => `${t.shop}=${t.orders}`).join(' ')}`);
			if (shown.error) fail(`the page shows an error: ${shown.error}`);

			// top shops table and bar chart
			const nShops = Object.keys(s1.top).length;
			if (nShops === 0) fail('no shops in SQL: the pipeline carries nothing');
			if (shown.top.length !== Math.min(6, nShops)) fail(`top table has ${shown.top.length} rows, SQL has ${nShops} shops`);
			let good = true;
			shown.top.forEach((t, i) => {
				const v = num(t.orders);
				good = within(`top shops: ${t.shop}`, v, s0.top[t.shop] ?? 0, s1.top[t.shop] ?? 0) && good;
				if (shown.bars[i] !== v) { good = false; fail(`bar ${i} (${t.shop}) = ${shown.bars[i]}, table says ${v}`); }
			});
			const ordered = shown.top.every((t, i) => i === 0 || num(shown.top[i - 1].orders) >= num(t.orders));
			if (!ordered) { good = false; fail('top shops not in descending order'); }
			if (good) ok(`top shops table and bars (${shown.top.length}) within SQL before/after`);

			// line chart: every (shop, minute) point in the window
			good = true;
			let points = 0, sum = 0;
			const xs = shown.line.data[0];
			shown.line.labels.forEach((shop, si) => {
				xs.forEach((x, xi) => {
					const k = `${shop}@${x}`;
					const v = shown.line.data[si + 1][xi];
					points++; sum += v;
					good = within(`line chart ${k}`, v, s0.perMinute[k] ?? 0, s1.perMinute[k] ?? 0) && good;
				});
			});
			// and no shop/minute of SQL inside the window is missing from the chart
			for (const [k, v] of Object.entries(s0.perMinute)) {
				const [shop, x] = k.split('@');
				if (Number(x) >= xs[0] && Number(x) <= xs[xs.length - 1] && !shown.line.labels.includes(shop)) {
					good = false; fail(`line chart lacks ${shop} (${v} orders at ${x} in SQL)`);
				}
			}
			if (sum === 0) { good = false; fail('the line chart is all zeros'); }
			if (good) ok(`line chart: ${points} points (${shown.line.labels.length} shops x ${xs.length} minutes) within SQL before/after`);

			// health
			good = within('messages', num(shown.messages), s0.messages, s1.messages);
			good = within('dead letters', num(shown.dead), s0.dead, s1.dead) && good;
			good = within('rows into views', num(shown.views), s0.viewRows, s1.viewRows) && good;
			if (!(num(shown.lag) >= 0)) { good = false; fail(`lag shown: ${shown.lag}`); }
			if (!(num(shown.rate) >= 0)) { good = false; fail(`rows/s shown: ${shown.rate}`); }
			if (shown.state !== 'running') { good = false; fail(`source state shown: ${shown.state}`); }
			if (good) ok('health tiles (messages, dead letters, rows into views) within SQL before/after; lag and rows/s shown');

			if (num(shown.messages) <= lastMessages) fail(`the page did not move: messages ${lastMessages} -> ${shown.messages}`);
			lastMessages = num(shown.messages);
		}
		if (num(String(lastMessages)) > 0) ok('the page moved between the checks');

		await page.screenshot({ path: env('SCREENSHOT'), fullPage: true });
		ok(`screenshot: ${env('SCREENSHOT')}`);
		await page.close();
	} finally {
		await browser.close().catch(() => browser.process()?.kill('SIGKILL'));
	}
	for (const p of problems) fail(p);
	if (problems.length === 0) ok('no console errors, failed requests or error answers');
}

const guard = setTimeout(() => {
	console.error('check.mjs: overall timeout (120 s)');
	for (const p of problems.slice(0, 10)) console.error(`  the page logged: ${p}`);
	process.exit(1);
}, 120000);
main().then(() => {
	clearTimeout(guard);
	if (failures > 0) { console.error(`${failures} dashboard check(s) failed`); process.exit(1); }
	console.log('all dashboard checks passed');
}, (e) => {
	clearTimeout(guard);
	console.error(`check.mjs: ${e.stack || e}`);
	for (const p of problems.slice(0, 10)) console.error(`  the page also logged: ${p}`);
	process.exit(1);
});
