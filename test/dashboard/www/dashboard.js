// test/dashboard/www/dashboard.js -- stream_ext's demo dashboard.
//
// Every second it GETs, through PostgREST as the anonymous role, only what
// the demo published in the API schema (docs/postgrest.md):
//   /live_orders_per_minute?minute=gte.T   orders per minute per shop (line chart)
//   /live_top_shops?order=orders.desc      the top shops (bar chart + table)
//   /pipeline_health                        the Kafka source and the views
// and draws them with uPlot.  window.dashboard exposes the state for the
// browser test (test/integration/dashboard_browser.sh): refreshes counts
// the completed refreshes, data holds what the last one fetched.
'use strict';

const params = new URLSearchParams(location.search);
const API = (params.get('api') || 'http://127.0.0.1:3000').replace(/\/+$/, '');
const MINUTES = Math.max(1, Math.min(120, parseInt(params.get('minutes') || '10', 10) || 10));
const INTERVAL_MS = 1000;
const TOP = 6;
const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];

const dashboard = window.dashboard = { refreshes: 0, errors: 0, data: null, line: null, bars: null };
const $ = (id) => document.getElementById(id);
const fmt = (n) => (n === null || n === undefined) ? '–' : Number(n).toLocaleString('en-US');

async function get(path) {
	const res = await fetch(API + path, { headers: { Accept: 'application/json' }, cache: 'no-store' });
	if (!res.ok) {
		throw new Error(`GET ${path}: HTTP ${res.status} ${await res.text()}`);
	}
	return res.json();
}

function shopColor(shop) {
	const m = /(\d+)$/.exec(shop);
	return COLORS[(m ? parseInt(m[1], 10) : shop.length) % COLORS.length];
}

// ---- line chart: orders per minute per shop ----------------------------------
function lineData(rows, fromSec, toSec) {
	const xs = [];
	for (let t = fromSec; t <= toSec; t += 60) xs.push(t);
	const shops = [...new Set(rows.map((r) => r.shop))].sort();
	const series = shops.map((shop) => {
		const by = new Map(rows.filter((r) => r.shop === shop)
			.map((r) => [Math.round(Date.parse(r.minute) / 1000), r.orders]));
		return xs.map((t) => by.get(t) ?? 0);
	});
	return { shops, data: [xs, ...series] };
}

function drawLine(shops, data) {
	const el = $('line');
	const same = dashboard.line && dashboard.line.series.length === shops.length + 1 &&
		shops.every((s, i) => dashboard.line.series[i + 1].label === s);
	if (same) {
		dashboard.line.setData(data);
	} else {
		if (dashboard.line) dashboard.line.destroy();
		dashboard.line = new uPlot({
			width: Math.max(480, Math.min(860, window.innerWidth - 540)),
			tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
			height: 320,
			scales: { y: { range: (u, min, max) => [0, Math.max(10, max * 1.1)] } },
			axes: [{}, { label: 'orders / minute', size: 60 }],
			series: [{ label: 'minute (UTC)', value: '{YYYY}-{MM}-{DD} {HH}:{mm}' },
				...shops.map((s) => ({ label: s, stroke: shopColor(s), width: 2, points: { size: 6 } }))],
		}, data, el);
	}
	// the legend shows the latest minute's numbers when the cursor is away
	dashboard.line.setLegend({ idx: data[0].length - 1 });
}

// ---- bar chart: top shops -------------------------------------------------------
function drawBars(top) {
	const names = top.map((r) => r.shop);
	const data = [names.map((_, i) => i), top.map((r) => r.orders)];
	const same = dashboard.bars && dashboard.bars.names.length === names.length &&
		names.every((n, i) => dashboard.bars.names[i] === n);
	if (same) {
		dashboard.bars.setData(data);
		return;
	}
	if (dashboard.bars) dashboard.bars.destroy();
	const bars = uPlot.paths.bars({ size: [0.6, 80] });
	dashboard.bars = new uPlot({
		width: 400,
		height: 240,
		legend: { show: false },
		cursor: { show: false },
		scales: { x: { time: false, range: [-0.5, names.length - 0.5] },
			y: { range: (u, min, max) => [0, Math.max(10, max * 1.1)] } },
		axes: [{ values: (u, splits) => splits.map((i) => names[i] ?? ''), splits: () => names.map((_, i) => i) },
			{ size: 60 }],
		series: [{}, { label: 'orders', fill: '#1f77b4aa', stroke: '#1f77b4', paths: bars, points: { show: false } }],
	}, data, $('bars'));
	dashboard.bars.names = names;
}

function drawTable(top) {
	const body = $('top').tBodies[0];
	body.replaceChildren(...top.map((r) => {
		const tr = document.createElement('tr');
		tr.dataset.shop = r.shop;
		for (const [v, cls] of [[r.shop, 'shop'], [fmt(r.orders), 'orders'], [fmt(Math.round(r.revenue)), 'revenue']]) {
			const td = document.createElement('td');
			td.className = cls;
			td.textContent = v;
			tr.appendChild(td);
		}
		return tr;
	}));
}

// ---- health tiles -----------------------------------------------------------------
function drawHealth(health) {
	const src = health.find((h) => h.kind === 'source');
	const views = health.filter((h) => h.kind === 'view');
	$('h-state').textContent = src ? src.state : 'no source';
	$('h-messages').textContent = fmt(src && src.rows_in);
	$('h-rate').textContent = src ? fmt(Math.round(src.rows_per_second)) : '–';
	$('h-lag').textContent = fmt(src && src.lag);
	$('h-dead').textContent = fmt(src && src.dead_letters);
	$('h-views').textContent = fmt(views.reduce((s, v) => s + v.rows_in, 0));
	$('h-views').title = views.map((v) => `${v.name}: ${v.rows_in}`).join('\n');
}

let busy = false;
async function refresh() {
	if (busy) return;          // a slow answer: skip a tick rather than pile up
	busy = true;
	try {
		const now = Date.now();
		const toSec = Math.floor(now / 60000) * 60;
		const fromSec = toSec - (MINUTES - 1) * 60;
		const from = new Date(fromSec * 1000).toISOString();
		const [perMinute, top, health] = await Promise.all([
			get(`/live_orders_per_minute?select=shop,minute,orders&minute=gte.${encodeURIComponent(from)}&order=minute,shop`),
			get(`/live_top_shops?select=shop,orders,revenue&order=orders.desc,shop&limit=${TOP}`),
			get('/pipeline_health'),
		]);
		const { shops, data } = lineData(perMinute, fromSec, toSec);
		drawLine(shops, data);
		drawBars(top);
		drawTable(top);
		drawHealth(health);
		dashboard.data = { perMinute, top, health, fromSec, toSec };
		dashboard.refreshes++;
		$('error').hidden = true;
		$('status').textContent = `refresh ${dashboard.refreshes} at ${new Date().toISOString().slice(11, 19)} UTC from ${API}`;
	} catch (e) {
		dashboard.errors++;
		$('error').hidden = false;
		$('error').textContent = `cannot read the API: ${e.message}`;
		console.error('dashboard refresh failed:', e);
	} finally {
		busy = false;
	}
}

$('minutes').textContent = MINUTES;
refresh();
setInterval(refresh, INTERVAL_MS);
