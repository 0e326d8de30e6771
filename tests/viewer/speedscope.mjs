// Loads a Chrome trace into speedscope (the npm package's own release build)
// in headless Chromium, the way a user opens it, and reports what speedscope
// imported: speedscope's own export of the loaded profiles, reduced to
// per-thread and per-function totals.
//
//   node speedscope.mjs TRACE.json [--load-only]  >  totals.json
//
// Exit 3, printing {"warnings": [...], "failed": "..."}, when speedscope could not open it (its
// error message, or the tab crashed).
//
// Output (times in microseconds, as speedscope keeps them):
//   {"warnings": [...speedscope's import warnings...],
//    "profiles": [{"name": "...", "total_us": 12.5,
//                  "functions": {"fib": {"total_us": 10.0, "self_us": 4.0}}}]}
// A function's total counts time it is on the stack once, however deep it
// recurses; self is time at the top of the stack. Frame names lose the
// ` {args}` suffix speedscope adds for events with args.
//
// Chromium is /usr/bin/chromium, or $CHROMIUM. $SPEEDSCOPE_TIMEOUT_MS bounds the load and the
// export, each (default 600000, ten minutes: a safety net for a loaded machine, not a measure).

import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import {fileURLToPath} from 'node:url';
import puppeteer from 'puppeteer-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const release = path.join(here, 'node_modules', 'speedscope', 'dist', 'release');
const trace = process.argv[2];
const timeout = Number(process.env.SPEEDSCOPE_TIMEOUT_MS || 600000);
// `--load-only`: stop once the profile shows, printing {"warnings": [...], "loaded_ms": N,
// "import_ms": M} (M: speedscope's own timing of its import).
const loadOnly = process.argv[3] === '--load-only';
const began = Date.now();
if (!trace) {
  console.error('usage: node speedscope.mjs TRACE.json');
  process.exit(2);
}

// speedscope fetches the profile by URL; serve it and the app from one origin.
const server = http.createServer((req, res) => {
  const url = decodeURIComponent(req.url.split(/[?#]/)[0]);
  const file = url === '/trace.json' ? trace : path.join(release, path.normalize(url).replace(/^(\.\.[/\\])+/, ''));
  fs.readFile(file, (err, data) => {
    if (err) {
      res.writeHead(404);
      res.end();
      return;
    }
    const types = {'.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json'};
    res.writeHead(200, {'Content-Type': types[path.extname(file)] || 'application/octet-stream'});
    res.end(data);
  });
});
await new Promise(resolve => server.listen(0, '127.0.0.1', resolve));
const origin = `http://127.0.0.1:${server.address().port}`;

const downloads = fs.mkdtempSync(path.join(os.tmpdir(), 'speedscope-export-'));
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  // A large trace keeps the page's main thread busy for minutes while speedscope imports it.
  protocolTimeout: timeout,
  // No GPU here: WebGL through SwiftShader. No sandbox: CI runs as root.
  args: ['--no-sandbox', '--disable-dev-shm-usage', '--use-angle=swiftshader', '--enable-unsafe-swiftshader'],
});
const warnings = [];
let importMs = null;
try {
  const page = await browser.newPage();
  page.on('console', m => {
    if (m.type() === 'warn' || m.type() === 'error') warnings.push(m.text());
    // speedscope times its own import: `console.timeEnd('import')`.
    const imported = m.text().match(/^import: ([\d.]+) ms$/);
    if (imported) importMs = Number(imported[1]);
  });
  await page.setViewport({width: 1600, height: 1000});
  const cdp = await page.createCDPSession();
  await cdp.send('Browser.setDownloadBehavior', {behavior: 'allow', downloadPath: downloads});
  await page.goto(`${origin}/index.html#profileURL=${encodeURIComponent(origin + '/trace.json')}`, {
    waitUntil: 'load',
    timeout,
  });
  // Loaded when the toolbar's view modes show; failed when speedscope says so
  // (its import error), or the tab crashes (out of memory).
  const crashed = new Promise(resolve => page.on('error', e => resolve(`the tab crashed: ${e.message}`)));
  const shown = page
    .waitForFunction(
      () => {
        const text = document.body.innerText;
        // The view modes show once a profile is in (a profile selector "(1/N)" only with several).
        if (/Time Order/.test(text) && /Export/.test(text)) return 'loaded';
        const failed = text.match(/Something went wrong[^\n]*|Unrecognized format[^\n]*/);
        return failed ? failed[0] : false;
      },
      {timeout},
    )
    .then(h => h.jsonValue());
  const outcome = await Promise.race([shown, crashed]);
  if (outcome !== 'loaded') {
    process.stdout.write(JSON.stringify({warnings, failed: outcome}) + '\n');
    process.exitCode = 3;
  } else if (loadOnly) {
    process.stdout.write(JSON.stringify({warnings, loaded_ms: Date.now() - began, import_ms: importMs}) + '\n');
  } else {
  // Export: speedscope writes every loaded profile as its own JSON file format.
  // The toolbar's "⤴️Export" item: a div holding an emoji span and the word.
  const exported = await page.evaluateHandle(() =>
    [...document.querySelectorAll('div')].find(e => e.childElementCount === 1 && e.textContent.endsWith('Export')),
  );
  await exported.asElement().click();
  let file = null;
  for (let i = 0; i < timeout / 100 && !file; i++) {
    await new Promise(r => setTimeout(r, 100));
    file = fs.readdirSync(downloads).find(f => f.endsWith('.json'));
  }
  if (!file) throw new Error(`speedscope did not export the profile within ${timeout} ms`);
  const data = JSON.parse(fs.readFileSync(path.join(downloads, file), 'utf8'));
  const frames = data.shared.frames.map(f => f.name.replace(/ \{.*\}$/, ''));
  const profiles = data.profiles.map(p => summarize(p, frames));
  process.stdout.write(JSON.stringify({warnings, profiles}, null, 1) + '\n');
  }
} finally {
  await browser.close();
  server.close();
  fs.rmSync(downloads, {recursive: true, force: true});
}

// Per-function total and self time of one evented profile.
function summarize(profile, frames) {
  if (profile.type !== 'evented') throw new Error(`unexpected profile type ${profile.type}`);
  // No prototype: a function may be called `constructor` (Lua has one).
  const functions = Object.create(null);
  const entry = name => (functions[name] ??= {total_us: 0, self_us: 0});
  const stack = [];
  let last = null;
  let total = 0;
  for (const ev of profile.events) {
    if (last !== null && stack.length > 0) {
      const dt = ev.at - last;
      total += dt;
      entry(frames[stack[stack.length - 1]]).self_us += dt;
      for (const name of new Set(stack.map(f => frames[f]))) entry(name).total_us += dt;
    }
    last = ev.at;
    if (ev.type === 'O') stack.push(ev.frame);
    else stack.pop();
  }
  return {name: profile.name, total_us: total, functions};
}
