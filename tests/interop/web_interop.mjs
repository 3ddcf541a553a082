// web_interop.mjs: relayd's web front as Chromium sees it (issue 43).
// A relayd of its own (GRASPD_BIN) is filled as people fill one:
// repositories pushed with the git CLI, kind 0 profiles, issues with
// NIP-22 comments, reactions, labels and statuses, a patch made by
// `git format-patch`, a pull request whose tip is pushed to
// refs/nostr/<id>, all signed with nostr-tools, and peer text full of
// <script>, event handlers and javascript: URLs.  Then headless Chromium
// (Debian's /usr/bin/chromium, or $CHROMIUM), driven over the DevTools
// protocol with `ws`, loads each page type; every link from / is crawled
// and answers 200 (links to other hosts are checked for their form,
// never fetched); every page's DOM holds no script element, no event
// handler attribute and no javascript: URL, and no dialog opens; the
// feeds parse as Atom with Chromium's DOMParser.  Chromium resolves no
// name but loopback (--host-resolver-rules) and every request it makes
// is checked to go to the relayd.  With GRASPD_SCREENSHOT_DIR set, a
// PNG of each page type is written there (doc/screenshots/ in the
// README).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, openSync, rmSync,
  writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { finalizeEvent, generateSecretKey, getPublicKey }
  from 'nostr-tools/pure';
import { npubEncode } from 'nostr-tools/nip19';
import { freePort, gitWith, RawRelay, roleEnv, sleep } from './util.mjs';

const BIN = process.env.GRASPD_BIN;
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const SHOTS = process.env.GRASPD_SCREENSHOT_DIR;
const WAIT_MS = 10000;
// The tallest screenshot, in pixels.
const SHOT_MAX_H = 1300;
// The crawl's bound: pages fetched at most.
const CRAWL_MAX = 400;
const EVIL = '<script>alert("x")</script><img src=x onerror=alert(1)>' +
  '<a href="javascript:alert(2)">j</a><svg onload=alert(3)></svg>' +
  '[md](javascript:alert(4)) <iframe src="javascript:alert(5)"></iframe>';

// Characters XML 1.0 does not allow, which the feeds must not carry.
const CONTROLS = '\u0001\u0008\u001b\ufffe\uffff';

const work = mkdtempSync(join(tmpdir(), 'graspd-web-interop-'));
const git = gitWith(join(work, 'home'));
let relayd = null;
let chromium = null;
let base = '';
let domain = '';
const pages = {};	// page type -> path

async function waitHttp(url, ms) {
  const end = Date.now() + ms;
  for (;;) {
    try {
      await fetch(url);
      return;
    } catch (err) {
      if (Date.now() > end) throw err;
      await sleep(100);
    }
  }
}

// The people: an owner, two contributors and a hostile one.
const people = {
  owner: generateSecretKey(),
  alice: generateSecretKey(),
  bob: generateSecretKey(),
  evil: generateSecretKey(),
};
const pk = (who) => getPublicKey(people[who]);
let clock = Math.floor(Date.now() / 1000) - 3600;
const sign = (who, kind, tags, content) => finalizeEvent({
  kind, created_at: clock++, tags, content,
}, people[who]);

async function fill() {
  const relay = await RawRelay.open(`ws://${domain}`, WAIT_MS);
  try {
    const owner = pk('owner');
    const npub = npubEncode(owner);
    const repoUrl = (d) => `http://${domain}/${npub}/${d}.git`;
    const announce = (d, name, desc) => sign('owner', 30617, [
      ['d', d], ['name', name], ['description', desc],
      ['clone', repoUrl(d)], ['relays', `ws://${domain}`],
      ['web', 'javascript:alert(6)'], ['maintainers', pk('bob')],
    ], '');
    // Two repositories pushed with the git CLI, one named by an attacker.
    const commits = {};
    for (const [d, name, desc, readme] of [
      ['demo', 'Demo project', 'A project to read in a browser',
        '# Demo\n\nRead the **docs**. ' + EVIL + '\n'],
      ['evil', EVIL, EVIL, EVIL],
    ]) {
      await relay.publishAll([announce(d, name, desc)]);
      const dir = join(work, d);
      git(work, 'init', '-q', '-b', 'main', dir);
      writeFileSync(join(dir, 'README.md'), readme);
      git(dir, 'add', 'README.md');
      git(dir, 'commit', '-q', '-m', `first commit of ${d} ${EVIL}`);
      writeFileSync(join(dir, 'main.c'), 'int\nmain(void)\n{\n\treturn 0;\n}\n');
      git(dir, 'add', 'main.c');
      git(dir, 'commit', '-q', '-m', 'add main.c');
      commits[d] = git(dir, 'rev-parse', 'HEAD');
      await relay.publishAll([sign('owner', 30618, [['d', d],
        ['refs/heads/main', commits[d]], ['HEAD', 'ref: refs/heads/main']],
      '')]);
      git(dir, 'push', '-q', repoUrl(d), 'main');
    }
    const a = ['a', `30617:${owner}:demo`];
    // An issue with labels, replies, reactions and a status history.
    const issue = sign('alice', 1621, [a, ['p', owner],
      ['subject', 'Crash when the config is empty'], ['t', 'bug'],
      ['t', EVIL]],
    'Steps:\n\n1. start with an empty config\n2. see it **crash**\n\n' +
      '```\nsegfault\n```\n' + EVIL);
    await relay.publishAll([issue]);
    const c1 = sign('bob', 1111, [['E', issue.id, '', pk('alice')],
      ['K', '1621'], ['P', pk('alice')], ['e', issue.id, '', pk('alice')],
      ['k', '1621'], ['p', pk('alice')]], 'I can reproduce it. ' + EVIL);
    await relay.publishAll([c1]);
    await relay.publishAll([
      sign('owner', 1111, [['E', issue.id, '', pk('alice')], ['K', '1621'],
        ['P', pk('alice')], ['e', c1.id, '', pk('bob')], ['k', '1111'],
        ['p', pk('bob')]], 'Fixed on main, thanks.'),
      sign('evil', 1111, [['E', issue.id], ['K', '1621'], ['e', issue.id],
        ['k', '1621']], EVIL),
      sign('bob', 7, [['e', issue.id], ['p', pk('alice')]], '+'),
      sign('owner', 7, [['e', issue.id], ['p', pk('alice')]], '+'),
      sign('evil', 7, [['e', c1.id], ['p', pk('bob')]], EVIL),
      sign('owner', 1632, [['e', issue.id, '', 'root'], a],
        'closed: fixed on main'),
      sign('alice', 1630, [['e', issue.id, '', 'root'], a], 'still there'),
      sign('evil', 1631, [['e', issue.id, '', 'root'], a], EVIL),
    ]);
    // A patch from git format-patch.
    const dir = join(work, 'demo');
    writeFileSync(join(dir, 'main.c'),
      'int\nmain(void)\n{\n\t/* <script>alert(8)</script> */\n\treturn 1;\n}\n');
    git(dir, 'commit', '-q', '-am', 'main: return 1 <b>now</b>');
    const patchText = git(dir, 'format-patch', '-1', '--stdout') + '\n';
    git(dir, 'reset', '-q', '--hard', 'HEAD~1');
    const patch = sign('alice', 1617, [a, ['t', 'root'], ['p', owner],
      ['commit', git(dir, 'rev-parse', 'HEAD')]], patchText);
    await relay.publishAll([patch]);
    await relay.publishAll([sign('bob', 1111, [['E', patch.id],
      ['K', '1617'], ['e', patch.id], ['k', '1617']], 'Looks good.')]);
    // A pull request whose tip is pushed to refs/nostr/<id>.
    git(dir, 'checkout', '-q', '-b', 'feature');
    writeFileSync(join(dir, 'FEATURE'), 'a feature\n');
    git(dir, 'add', 'FEATURE');
    git(dir, 'commit', '-q', '-m', 'add a feature');
    const tip = git(dir, 'rev-parse', 'HEAD');
    const pr = sign('bob', 1618, [a, ['p', owner], ['c', tip],
      ['subject', 'Add a feature'], ['branch-name', 'feature'],
      ['clone', repoUrl('demo')]], 'This adds a **feature**. ' + EVIL);
    relay.send(['EVENT', pr]);
    git(dir, 'push', '-q', repoUrl('demo'), `HEAD:refs/nostr/${pr.id}`);
    await relay.publishAll([sign('owner', 1631,
      [['e', pr.id, '', 'root'], a], 'merged')]);
    // An attacker's issue; then everyone's profile (GRASP-03 takes
    // those of owners, maintainers and thread authors only).
    await relay.publishAll([
      sign('evil', 1621, [a, ['subject', EVIL + CONTROLS], ['t', EVIL]],
        EVIL + CONTROLS),
      sign('owner', 0, [], JSON.stringify({ name: 'Olga Owner' })),
      sign('alice', 0, [], JSON.stringify({ name: 'Alice' })),
      sign('evil', 0, [], JSON.stringify({ name: EVIL, display_name: EVIL,
        picture: 'javascript:alert(7)' })),
    ]);
    const r = `/${npub}/demo.git`;
    // The PR is served once its tip arrived.
    const end = Date.now() + WAIT_MS;
    while ((await fetch(`${base}${r}/prs/${pr.id}`)).status !== 200) {
      assert.ok(Date.now() < end, 'the PR was not released by its push');
      await sleep(100);
    }
    pages.landing = '/';
    pages.repository = r;
    pages.issue = `${r}/issues/${issue.id}`;
    pages.patch = `${r}/patches/${patch.id}`;
    pages.pr = `${r}/prs/${pr.id}`;
    pages.notfound = `${r}/issues/${'0'.repeat(64)}`;
    pages.feed = `${r}/feed.atom`;
  } finally {
    relay.close();
  }
}

// One DevTools protocol connection to the browser, with flat sessions.
class Cdp {
  constructor(ws) {
    this.ws = ws;
    this.n = 0;
    this.calls = new Map();
    this.listeners = [];
    ws.on('message', (data) => {
      const m = JSON.parse(data.toString());
      if (m.id && this.calls.has(m.id)) {
        const { resolve, reject } = this.calls.get(m.id);
        this.calls.delete(m.id);
        if (m.error) reject(new Error(JSON.stringify(m.error)));
        else resolve(m.result);
      } else if (m.method) {
        for (const l of this.listeners) l(m);
      }
    });
  }

  send(method, params = {}, sessionId) {
    const id = ++this.n;
    this.ws.send(JSON.stringify({ id, method, params, sessionId }));
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => {
        this.calls.delete(id);
        reject(new Error(`${method}: no answer`));
      }, WAIT_MS);
      this.calls.set(id, {
        resolve: (v) => { clearTimeout(t); resolve(v); },
        reject: (e) => { clearTimeout(t); reject(e); },
      });
    });
  }

  once(method, sessionId) {
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no ${method}`)),
        WAIT_MS);
      const l = (m) => {
        if (m.method === method && m.sessionId === sessionId) {
          clearTimeout(t);
          this.listeners.splice(this.listeners.indexOf(l), 1);
          resolve(m.params);
        }
      };
      this.listeners.push(l);
    });
  }
}

let cdp = null;
let session = null;
const requests = [];	// every URL the page asked for
const dialogs = [];	// alert() and the like: none may open
const exceptions = [];	// script errors: none may run

async function startChromium() {
  const profile = join(work, 'chromium');
  mkdirSync(profile);
  chromium = spawn(CHROMIUM, [
    '--headless=new', '--no-sandbox', '--disable-gpu',
    `--user-data-dir=${profile}`, '--remote-debugging-port=0',
    // No name resolves but loopback's, so nothing else is contacted.
    '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
    '--no-proxy-server', '--disable-background-networking',
    '--disable-component-update', '--disable-default-apps',
    '--disable-sync', '--disable-extensions', '--no-first-run',
    '--disable-domain-reliability', '--disable-breakpad',
    '--disable-client-side-phishing-detection', '--metrics-recording-only',
    '--hide-scrollbars', '--mute-audio', '--window-size=1000,800',
    'about:blank',
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  const url = await new Promise((resolve, reject) => {
    let err = '';
    const t = setTimeout(() => reject(new Error(
      `chromium printed no DevTools URL: ${err.slice(-2000)}`)), 20000);
    chromium.stderr.on('data', (d) => {
      err += d;
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(err);
      if (m) {
        clearTimeout(t);
        resolve(m[1]);
      }
    });
    chromium.on('exit', (code) => reject(new Error(
      `chromium exited (${code}): ${err.slice(-2000)}`)));
  });
  const ws = new WebSocket(url, { perMessageDeflate: false });
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  cdp = new Cdp(ws);
  const { targetId } = await cdp.send('Target.createTarget',
    { url: 'about:blank' });
  ({ sessionId: session } = await cdp.send('Target.attachToTarget',
    { targetId, flatten: true }));
  cdp.listeners.push((m) => {
    if (m.sessionId !== session) return;
    if (m.method === 'Network.requestWillBeSent')
      requests.push(m.params.request.url);
    if (m.method === 'Page.javascriptDialogOpening') {
      dialogs.push(m.params.message);
      cdp.send('Page.handleJavaScriptDialog', { accept: true }, session)
        .catch(() => {});
    }
    if (m.method === 'Runtime.exceptionThrown')
      exceptions.push(m.params.exceptionDetails.text);
  });
  for (const d of ['Page', 'Runtime', 'Network'])
    await cdp.send(`${d}.enable`, {}, session);
  await cdp.send('Emulation.setDeviceMetricsOverride', {
    width: 1000, height: 800, deviceScaleFactor: 1, mobile: false,
  }, session);
}

// Loads path in the tab; resolves once it has loaded.
async function load(path) {
  const loaded = cdp.once('Page.loadEventFired', session);
  const nav = await cdp.send('Page.navigate', { url: base + path },
    session);
  assert.ok(!nav.errorText, `${path}: ${nav.errorText}`);
  await loaded;
}

async function evaluate(expr) {
  const r = await cdp.send('Runtime.evaluate',
    { expression: expr, returnByValue: true }, session);
  if (r.exceptionDetails)
    throw new Error(`evaluate: ${JSON.stringify(r.exceptionDetails)}`);
  return r.result.value;
}

// What the loaded page holds that could run: script elements, event
// handler attributes, javascript: URLs, frames and objects.
const RISKS = `(() => {
  const out = [];
  for (const e of document.querySelectorAll('*')) {
    const tag = e.tagName.toLowerCase();
    if (['script', 'iframe', 'object', 'embed', 'frame'].includes(tag))
      out.push('<' + tag + '>');
    for (const a of e.attributes) {
      if (/^on/i.test(a.name)) out.push(tag + ' ' + a.name);
      if (/^\\s*javascript:/i.test(a.value)) out.push(tag + ' ' + a.name +
        '=' + a.value);
    }
  }
  return out;
})()`;

async function shot(name) {
  if (!SHOTS) return;
  // The page's top, down to SHOT_MAX_H pixels.
  const h = Math.min(SHOT_MAX_H,
    await evaluate('document.documentElement.scrollHeight'));
  const { data } = await cdp.send('Page.captureScreenshot',
    { format: 'png', captureBeyondViewport: true,
      clip: { x: 0, y: 0, width: 1000, height: h, scale: 1 } }, session);
  mkdirSync(SHOTS, { recursive: true });
  writeFileSync(join(SHOTS, `web-${name}.png`), Buffer.from(data, 'base64'));
}

before(async () => {
  assert.ok(BIN, 'GRASPD_BIN is not set; run tests/interop/run.sh');
  assert.ok(existsSync(CHROMIUM),
    `${CHROMIUM} is missing: sh scripts/deps.sh --test installs chromium`);
  const port = await freePort();
  domain = `127.0.0.1:${port}`;
  base = `http://${domain}`;
  const dir = join(work, 'relayd');
  mkdirSync(dir);
  const log = openSync(join(dir, 'relayd.log'), 'w');
  relayd = spawn(join(BIN, 'relayd'), [], {
    cwd: dir,
    stdio: ['ignore', log, log],
    env: roleEnv(dir, domain, {
      NGIT_RELAY_NAME: 'graspd demo',
      NGIT_RELAY_DESCRIPTION: 'git repositories and their collaboration',
      NGIT_MAX_EVENTS_PER_MINUTE: '0',
      NGIT_MAX_CONNECTIONS_PER_IP: '0',
      NGIT_MAX_EVENTS_PER_MINUTE_PER_IP: '0',
    }),
  });
  // Not /, whose page relayd would cache empty for a few seconds.
  await waitHttp(base + '/icon.png', WAIT_MS);
  await fill();
  await startChromium();
});

after(async () => {
  if (chromium && chromium.exitCode === null) {
    const gone = new Promise((r) => chromium.on('exit', r));
    chromium.kill('SIGKILL');
    await gone;
  }
  if (relayd) {
    relayd.kill('SIGTERM');
    await new Promise((r) => {
      const t = setTimeout(() => { relayd.kill('SIGKILL'); r(); }, 5000);
      relayd.on('exit', () => { clearTimeout(t); r(); });
    });
  }
  if (!process.env.GRASPD_KEEP_TMP)
    rmSync(work, { recursive: true, force: true });
});

test('each page type loads in Chromium, inert, loading only from relayd',
  async () => {
    const want = {
      landing: ['Demo project', 'Olga Owner'],
      repository: ['Crash when the config is empty', 'Add a feature',
        'Branches and tags'],
      issue: ['I can reproduce it.', 'Fixed on main, thanks.', 'Alice',
        'Status history', 'nevent1', 'naddr1', 'UTC'],
      patch: ['main: return 1', 'main.c', 'Looks good.'],
      pr: ['Add a feature', 'feature', 'merged'],
      notfound: ['Not found', '0000000000'],
    };
    for (const [type, path] of Object.entries(pages)) {
      if (type === 'feed') continue;
      requests.length = 0;
      await load(path);
      const text = await evaluate('document.body.innerText');
      for (const w of want[type])
        assert.ok(text.includes(w), `${type}: "${w}" not shown`);
      assert.deepEqual(await evaluate(RISKS), [], `${type}: risky DOM`);
      for (const u of requests)
        assert.ok(u.startsWith(base + '/') || u.startsWith('data:'),
          `${type} asked for ${u}`);
      await shot(type);
    }
    // The issue's status: reopened by its author after a maintainer
    // closed it; the stranger's "merged" does not count.
    await load(pages.issue);
    assert.equal(await evaluate(
      'document.getElementById("status").textContent'), 'open');
    // The stranger's reaction to Bob's reply is counted under it.
    assert.match(await evaluate(
      'document.querySelector(".reply .rx").textContent'), /alert.* 1$/);
    assert.deepEqual(dialogs, [], 'a dialog opened');
    assert.deepEqual(exceptions, [], 'a script ran and failed');
  });

// The links of the page at url (HTML or Atom), absolute.
function links(body, url, xml) {
  const out = [];
  const re = xml ? /<link\b[^>]*\bhref="([^"]*)"/g
    : /<(?:a|link)\b[^>]*\bhref="([^"]*)"/g;
  for (const m of body.matchAll(re)) {
    const href = m[1].replace(/&amp;/g, '&').replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>');
    out.push(new URL(href, url).href);
  }
  return out;
}

test('a crawl of every link from / answers 200', async () => {
  const seen = new Set();
  const queue = [base + '/'];
  const external = new Set();
  let fetched = 0;
  while (queue.length > 0) {
    const url = queue.shift().replace(/#.*/, '');
    if (seen.has(url)) continue;
    seen.add(url);
    const u = new URL(url);
    if (u.host !== domain) {
      external.add(url);
      continue;
    }
    assert.ok(++fetched <= CRAWL_MAX, 'the crawl does not end');
    const res = await fetch(url, { redirect: 'manual' });
    assert.equal(res.status, 200, `${url} answered ${res.status}`);
    const type = res.headers.get('content-type') || '';
    const csp = res.headers.get('content-security-policy') || '';
    if (type.startsWith('text/html') || type.includes('atom')) {
      assert.match(csp, /default-src 'none'/, `${url}: no CSP`);
      assert.doesNotMatch(csp, /script-src/, `${url}: CSP runs scripts`);
      const body = await res.text();
      queue.push(...links(body, url, type.includes('atom')));
    } else {
      await res.arrayBuffer();
    }
  }
  assert.ok(fetched >= 8, `only ${fetched} pages crawled`);
  // Pages of every type were reached from /.
  for (const t of ['repository', 'issue', 'patch', 'pr', 'feed'])
    assert.ok(seen.has(base + pages[t]), `${t} not linked`);
  // The PR page links its commits and diff (the git pages).
  assert.ok(seen.has(base + pages.pr.replace('/prs/', '/pr/') + '/diff'),
    'the PR diff is not linked');
  // Other hosts: checked for form, never fetched.
  for (const url of external) {
    const u = new URL(url);
    assert.ok(['https:', 'mailto:'].includes(u.protocol), `link ${url}`);
    if (u.host === 'gitworkshop.dev')
      assert.match(u.pathname,
        /^\/npub1[02-9ac-hj-np-z]{58}\/[^/]+(\/(issues|prs)\/nevent1[02-9ac-hj-np-z]+)?$/,
        `gitworkshop link ${url}`);
  }
  assert.ok([...external].some((u) => u.includes('/issues/nevent1')),
    'no gitworkshop.dev link to a thread');
});

test('the feeds are well-formed Atom (Chromium\'s DOMParser)', async () => {
  await load('/');
  for (const path of ['/feed.atom', pages.feed]) {
    const res = await fetch(base + path);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^application\/atom\+xml/);
    const text = await res.text();
    // No character XML 1.0 refuses (some parsers take them anyway).
    assert.doesNotMatch(text, /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/,
      `${path}: a character XML does not allow`);
    const r = await evaluate(`(() => {
      const ns = 'http://www.w3.org/2005/Atom';
      const doc = new DOMParser().parseFromString(${JSON.stringify(text)},
        'application/xml');
      if (doc.getElementsByTagName('parsererror').length)
        return ['not well-formed: ' +
          doc.getElementsByTagName('parsererror')[0].textContent];
      const bad = [];
      const f = doc.documentElement;
      if (f.localName !== 'feed' || f.namespaceURI !== ns)
        bad.push('root is not an Atom feed');
      const one = (el, name) =>
        [...el.children].filter((c) => c.localName === name &&
          c.namespaceURI === ns);
      const date = /^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ$/;
      for (const n of ['id', 'title', 'updated'])
        if (one(f, n).length !== 1) bad.push('feed ' + n);
      if (!date.test(one(f, 'updated')[0]?.textContent)) bad.push('date');
      const entries = one(f, 'entry');
      for (const e of entries) {
        for (const n of ['id', 'title', 'updated'])
          if (one(e, n).length !== 1) bad.push('entry ' + n);
        if (!date.test(one(e, 'updated')[0]?.textContent))
          bad.push('entry date');
        if (!/^[a-z][a-z0-9+.-]*:/.test(one(e, 'id')[0]?.textContent))
          bad.push('entry id is no IRI');
        if (one(e, 'author').length === 0 && one(f, 'author').length === 0)
          bad.push('no author');
        if (one(e, 'link').length === 0) bad.push('entry link');
      }
      return bad.length ? bad : ['ok ' + entries.length];
    })()`);
    assert.equal(r.length, 1, `${path}: ${r.join(', ')}`);
    assert.match(r[0], /^ok [1-9]/, `${path}: ${r[0]}`);
  }
  // The repository feed names what happened: threads, statuses, pushes.
  const text = await (await fetch(base + pages.feed)).text();
  for (const w of ['New issue: Crash', 'New patch: main: return 1',
    'New pull request: Add a feature', 'Status: closed', 'Pushed:'])
    assert.ok(text.includes(w), `feed lacks "${w}"`);
  // And the browser shows it raw, running nothing.
  await load(pages.feed);
  assert.deepEqual(await evaluate(RISKS), [], 'feed: risky DOM');
  assert.deepEqual(dialogs, []);
});

test('pages answer 304 to their validators', async () => {
  // The page says how long ago each event came ("just now", "1 min
  // ago"), so its text and ETag change when an age crosses a minute:
  // a 200 between the two requests must then carry a new ETag, and
  // that one must validate.
  let etag;
  for (let i = 0; i < 2; i++) {
    const res = await fetch(base + pages.issue,
      etag ? { headers: { 'If-None-Match': etag } } : {});
    await res.text();
    if (res.status === 304) return;
    assert.equal(res.status, 200);
    const next = res.headers.get('etag');
    assert.ok(next);
    assert.notEqual(next, etag, 'a 200 to a matching If-None-Match');
    etag = next;
  }
  const again = await fetch(base + pages.issue,
    { headers: { 'If-None-Match': etag } });
  assert.equal(again.status, 304);
});
