// Load time of HTML summary report pages in headless Chromium over file://, for
// choosing how pages store their evidence (`tvir summarize --html-evidence`).
//
//   node --experimental-websocket scripts/page_load_bench.mjs SUMMARY_DIR [PAGES] [PORT]
//
// Starts Chromium (CHROMIUM, else `chromium`) with a DevTools port, opens PAGES report
// pages of SUMMARY_DIR (default 40, spread over the folder; each opened twice, the
// first a warm-up) and prints, per page and as medians: bytes on disk, time until
// the load event, time until the units table is in the DOM (the page's
// `data-evidence` flag for packed pages; the load event for plain ones) and the
// number of unit rows shown. Ends Chromium.
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { spawn } from 'node:child_process';

const [dir, pagesArg, portArg] = process.argv.slice(2);
if (!dir) { console.error('usage: page_load_bench.mjs SUMMARY_DIR [PAGES] [PORT]'); process.exit(2); }
const want = Number(pagesArg || 40);
const port = Number(portArg || 9333);
const all = [];
(function walk(d) {
  for (const e of fs.readdirSync(d, { withFileTypes: true })) {
    const p = path.join(d, e.name);
    if (e.isDirectory()) walk(p); else if (p.endsWith('.html')) all.push(p);
  }
})(path.join(dir, 'reports'));
all.sort();
const step = Math.max(1, Math.floor(all.length / want));
const pages = all.filter((_, i) => i % step === 0).slice(0, want);
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'tvir-page-bench-'));
const chrome = spawn(process.env.CHROMIUM || 'chromium', ['--headless=new', '--no-sandbox',
  '--disable-gpu', `--remote-debugging-port=${port}`, `--user-data-dir=${profile}`,
  '--allow-file-access-from-files', 'about:blank'], { stdio: 'ignore' });
let targets;
for (let i = 0; i < 100; i++) {
  try { targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json(); break; }
  catch { await new Promise(r => setTimeout(r, 100)); }
}
const page = targets.find(t => t.type === 'page');
const ws = new WebSocket(page.webSocketDebuggerUrl);
let id = 0; const pending = new Map(); let loaded = null;
ws.onmessage = ev => { const m = JSON.parse(ev.data);
  if (m.id && pending.has(m.id)) { pending.get(m.id)(m); pending.delete(m.id); }
  else if (m.method === 'Page.loadEventFired' && loaded) loaded(); };
await new Promise(r => ws.onopen = r);
const send = (method, params = {}) => new Promise(r => { const i = ++id; pending.set(i, r); ws.send(JSON.stringify({ id: i, method, params })); });
await send('Page.enable');
const evaluate = async expr => (await send('Runtime.evaluate', { expression: expr, returnByValue: true })).result.result.value;
const rows = [];
for (const p of pages) {
  let r;
  for (const round of [0, 1]) {
    await send('Page.navigate', { url: 'about:blank' });
    const t0 = performance.now();
    const onload = new Promise(res => loaded = res);
    await send('Page.navigate', { url: 'file://' + path.resolve(p) });
    await onload;
    const tLoad = performance.now() - t0;
    let state;
    for (let k = 0; k < 500; k++) {
      state = await evaluate(`document.documentElement.getAttribute('data-evidence') || (document.querySelector('script[type="application/x-tvir-evidence"]') ? 'packed' : 'plain')`);
      if (state !== 'packed') break;
      await new Promise(res => setTimeout(res, 2));
    }
    const tShown = performance.now() - t0;
    const units = await evaluate(`document.querySelectorAll('tr.unit').length`);
    r = { page: path.relative(dir, p), bytes: fs.statSync(p).size, load_ms: tLoad, shown_ms: tShown, units, state };
  }
  rows.push(r);
}
ws.close(); chrome.kill();
fs.rmSync(profile, { recursive: true, force: true });
const med = k => { const v = rows.map(r => r[k]).sort((a, b) => a - b); return v[Math.floor(v.length / 2)]; };
for (const r of rows) console.log(`${r.page}\t${r.bytes} B\tload ${r.load_ms.toFixed(1)} ms\tunits shown ${r.shown_ms.toFixed(1)} ms\t${r.units} units\t${r.state}`);
const total = rows.reduce((s, r) => s + r.bytes, 0);
console.log(`pages ${rows.length}: median ${med('bytes')} B (total ${total} B), load ${med('load_ms').toFixed(1)} ms, units shown ${med('shown_ms').toFixed(1)} ms; max shown ${Math.max(...rows.map(r => r.shown_ms)).toFixed(1)} ms`);
if (rows.some(r => r.state === 'failed')) process.exit(1);
