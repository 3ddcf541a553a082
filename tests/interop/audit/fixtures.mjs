// fixtures.mjs: the shared fixtures of graspd's port of grasp-audit, the
// reference GRASP conformance suite (ngit-grasp's grasp-audit, its
// fixtures.rs and client.rs), written anew for node --test and the git
// CLI.  A test file starts one whole graspd on a free loopback port
// (startGraspd), and each test makes an AuditClient of fresh keys on it
// (as each of the reference's cases runs with a client of its own), then
// builds what it needs: a repository announcement (30617) listing our
// relay in `relays` and our git URL in `clone`, a state (30618), the
// git data pushed with the git CLI over http, maintainers' states and
// announcements, issues, comments and PRs.  Every wait is bounded;
// nothing dials a non-loopback address (git runs with no system or user
// configuration and only the http and file protocols allowed).
//
// Exports (kept compatible: add, do not rename):
//   startGraspd, Server        a graspd of our own, stopped by stop()
//   AuditClient                keys, a relay connection, fixtures; its
//                              events carry the reference's audit tags
//   Conn                       a raw relay connection (publish, query)
//   newKeys, signEvent, now    keys and events
//   makeGit, gitConfigEnv      the bounded, isolated git runner
//   COMMIT_VARIANTS, deterministicCommit   reproducible commits
//   tagValue, aTagOf, waitFor, sleep, randomId   small helpers
//   auditSuite                 one graspd per file, one client per case
//   PUSH_REFUSED               git's words for a push graspd refused
//   uniqueCommit, infoRefsHead git helpers of the cases

import { test, before, after } from 'node:test';
import { spawn, execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, readFileSync, rmSync,
  writeFileSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { finalizeEvent, generateSecretKey, getPublicKey } from
  'nostr-tools/pure';
import { npubEncode } from 'nostr-tools/nip19';
import { RawRelay, freePort, roleEnv, sleep } from '../util.mjs';

// How long one relay answer (OK, EOSE) may take.
export const WAIT_MS = 5000;
// How long a git command may run.
export const GIT_TIMEOUT_MS = 30000;

// What git prints when graspd refuses a push for want of authority
// (relayd/relay_git.c: "ERR authorisation failed: <reason>").
export const PUSH_REFUSED = /authori[sz]ation failed/i;

// Unix time now, in seconds.
export const now = () => Math.floor(Date.now() / 1000);

// A promise resolved after ms (util.mjs's).
export { sleep };

// A short random lower-case id, for repository identifiers and file names.
export function randomId(n = 8) {
  let s = '';
  while (s.length < n) s += Math.random().toString(36).slice(2);
  return s.slice(0, n);
}

// Polls fn (sync or async) every stepMs until it returns a truthy value,
// which it returns; after ms it returns the last (falsy) value.
export async function waitFor(fn, ms = WAIT_MS, stepMs = 50) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v || Date.now() >= end) return v;
    await sleep(stepMs);
  }
}

// Fresh keys: { sk (Uint8Array), pk (hex), npub }.
export function newKeys() {
  const sk = generateSecretKey();
  const pk = getPublicKey(sk);
  return { sk, pk, npub: npubEncode(pk) };
}

// The event { kind, tags, content, created_at } signed by keys (created_at
// defaults to now).
export function signEvent(keys, { kind, tags = [], content = '',
  created_at = now() }) {
  return finalizeEvent({ kind, tags, content, created_at }, keys.sk);
}

// The first value of ev's tag named name, or undefined.
export function tagValue(ev, name) {
  const t = ev.tags.find((x) => x[0] === name);
  return t ? t[1] : undefined;
}

// The NIP-33 address "30617:<pubkey>:<d>" of repository announcement ev.
export function aTagOf(ev) {
  return `${ev.kind}:${ev.pubkey}:${tagValue(ev, 'd')}`;
}

function probe(port) {
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}`,
      { handshakeTimeout: 500 });
    ws.once('open', () => { ws.terminate(); resolve(true); });
    ws.once('error', () => resolve(false));
  });
}

// The environment git runs with: HOME at home, no system or global
// configuration, no prompts, a fixed identity, and only the http and
// file protocols (the tests' graspd and local directories).
export function gitConfigEnv(home) {
  const cfg = [
    ['protocol.allow', 'never'],
    ['protocol.http.allow', 'always'],
    ['protocol.file.allow', 'always'],
    ['init.defaultBranch', 'main'],
    ['commit.gpgsign', 'false'],
    ['advice.detachedHead', 'false'],
    ['http.lowSpeedLimit', '1'],
    ['http.lowSpeedTime', '20'],
  ];
  const env = {
    PATH: process.env.PATH,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: 'true',
    GIT_AUTHOR_NAME: 'grasp audit',
    GIT_AUTHOR_EMAIL: 'audit@graspd.invalid',
    GIT_COMMITTER_NAME: 'grasp audit',
    GIT_COMMITTER_EMAIL: 'audit@graspd.invalid',
    GIT_CONFIG_COUNT: String(cfg.length),
  };
  cfg.forEach(([k, v], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = k;
    env[`GIT_CONFIG_VALUE_${i}`] = v;
  });
  return env;
}

// A git runner over gitConfigEnv(home).  git(dir, ...args) runs git in
// dir, bounded to GIT_TIMEOUT_MS, and returns its trimmed stdout or
// throws (err.stderr holds git's words); git.try(dir, ...args) never
// throws and returns { ok, status, stdout, stderr }; git.env(extra) is a
// runner whose runs add the variables of extra.
export function makeGit(home, extra = {}) {
  const env = { ...gitConfigEnv(home), ...extra };
  const git = (dir, ...args) => execFileSync('git', args, {
    cwd: dir,
    timeout: GIT_TIMEOUT_MS,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  }).trim();
  git.try = (dir, ...args) => {
    const r = spawnSync('git', args, {
      cwd: dir,
      timeout: GIT_TIMEOUT_MS,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      env,
    });
    return { ok: r.status === 0, status: r.status,
      stdout: (r.stdout || '').trim(),
      stderr: (r.stderr || '') + (r.error ? String(r.error) : '') };
  };
  git.env = (more) => makeGit(home, { ...extra, ...more });
  return git;
}

// The reproducible commits of the fixtures, one per role, as the
// reference makes them: a file test.txt of the variant's text and a
// commit of its message, dated 2024-01-01 UTC by a fixed identity, so
// that each variant's root commit has the same id in every run.
export const COMMIT_VARIANTS = {
  owner: { text: 'Initial commit\n', msg: 'Initial commit' },
  maintainer: { text: 'Maintainer initial commit\n',
    msg: 'Maintainer initial commit' },
  recursive: { text: 'Recursive maintainer initial commit\n',
    msg: 'Recursive maintainer initial commit' },
  pr: { text: 'PR test deterministic commit\n',
    msg: 'PR test deterministic commit' },
  pr2: { text: 'PR test deterministic commit 2\n',
    msg: 'PR test deterministic commit 2' },
};

// Commits COMMIT_VARIANTS[variant] in work tree dir (on whatever HEAD
// is) and returns the commit id; with orphan, first starts a fresh
// orphan branch named branch (default main; an old one is dropped), so
// the commit is a root commit whose id depends on the variant only.
export function deterministicCommit(git, dir, variant = 'owner',
  { orphan = false, branch = 'main' } = {}) {
  const v = COMMIT_VARIANTS[variant];
  if (!v) throw new Error(`no commit variant ${variant}`);
  const g = git.env({
    GIT_AUTHOR_DATE: '2024-01-01T00:00:00Z',
    GIT_COMMITTER_DATE: '2024-01-01T00:00:00Z',
  });
  if (orphan) {
    g(dir, 'checkout', '-q', '--orphan', 'audit-orphan');
    g.try(dir, 'rm', '-rfq', '--cached', '.');
  }
  writeFileSync(join(dir, 'test.txt'), v.text);
  g(dir, 'add', 'test.txt');
  g(dir, 'commit', '-q', '-m', v.msg);
  if (orphan) {
    g.try(dir, 'branch', '-D', branch);
    g(dir, 'branch', '-m', branch);
  }
  return g(dir, 'rev-parse', 'HEAD');
}

// The reference's create_commit: a new file of a unique name holding
// message, committed on top of dir's HEAD; returns the commit id.
export function uniqueCommit(git, dir, message) {
  const file = `test-${randomId(12)}.txt`;
  writeFileSync(join(dir, file), message);
  git(dir, 'add', file);
  git(dir, 'commit', '-q', '-m', message);
  return git(dir, 'rev-parse', 'HEAD');
}

// The symref HEAD names in the upload-pack advertisement of url (a
// repository's git URL), e.g. "refs/heads/main", or null when none is
// advertised; throws on an HTTP error.
export async function infoRefsHead(url) {
  const res = await fetch(`${url}/info/refs?service=git-upload-pack`,
    { signal: AbortSignal.timeout(WAIT_MS) });
  if (!res.ok) throw new Error(`info/refs of ${url}: HTTP ${res.status}`);
  const body = await res.text();
  const m = /symref=HEAD:(\S+)/.exec(body);
  return m ? m[1].replace(/\0.*$/, '') : null;
}

// A graspd the tests started: its port, domain (127.0.0.1:port), wsUrl,
// httpUrl, directory and log; cloneUrl(npub, id) is a repository's git
// URL here; logTail(n) the last lines of its log; stop() ends it.
export class Server {
  constructor(proc, port, dir, logPath) {
    this.proc = proc;
    this.port = port;
    this.domain = `127.0.0.1:${port}`;
    this.wsUrl = `ws://${this.domain}`;
    this.httpUrl = `http://${this.domain}`;
    this.dir = dir;
    this.logPath = logPath;
  }

  cloneUrl(npub, repoId) {
    return `${this.httpUrl}/${npub}/${repoId}.git`;
  }

  // The git data path of repository repoId of npub (a bare repository).
  repoPath(npub, repoId) {
    return join(this.dir, 'git', npub, `${repoId}.git`);
  }

  logTail(n = 30) {
    try {
      return readFileSync(this.logPath, 'utf8').split('\n').slice(-n)
        .join('\n');
    } catch {
      return '';
    }
  }

  // SIGTERM, then SIGKILL after 5 s; resolves once graspd has exited.
  async stop() {
    const p = this.proc;
    if (p.exitCode !== null || p.signalCode !== null) return;
    const gone = new Promise((r) => p.once('exit', r));
    p.kill('SIGTERM');
    const t = setTimeout(() => p.kill('SIGKILL'), 5000);
    await gone;
    clearTimeout(t);
  }
}

// The graspd processes started and not yet stopped.  Should this
// process end before their stop() (a timeout, node --test-force-exit,
// SIGTERM or SIGINT), they are sent SIGTERM so that none outlives it.
const live = new Set();
function endLive() {
  for (const p of live) {
    try {
      p.kill('SIGTERM');
    } catch {
      // already gone
    }
  }
  live.clear();
}
let hooked = false;
function hookExit() {
  if (hooked) return;
  hooked = true;
  process.once('exit', endLive);
  for (const [sig, n] of [['SIGTERM', 15], ['SIGINT', 2]])
    process.once(sig, () => {
      endLive();
      process.exit(128 + n);
    });
}

// Starts graspd ($GRASPD_BIN/graspd, default bin/ of the checkout) on a
// free loopback port, in a new temporary directory, with test timing
// (NGIT_TEST: periodic work every 200 ms, the purgatory's 30 minutes
// become 30 s), the client rate limits off, and sync off (no dialling
// out); env adds or overrides NGIT_* settings.  Resolves once it answers
// a websocket handshake (10 s at most) to a Server.  The directory is
// removed by stop() unless GRASPD_KEEP_TMP is set.
export async function startGraspd({ env = {}, name = 'audit' } = {}) {
  const bin = process.env.GRASPD_BIN ||
    new URL('../../../bin', import.meta.url).pathname;
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), `graspd-${name}-`));
  mkdirSync(join(dir, 'home'), { recursive: true });
  const logPath = join(dir, 'graspd.log');
  const log = openSync(logPath, 'w');
  const domain = `127.0.0.1:${port}`;
  const proc = spawn(join(bin, 'graspd'), ['-d'], {
    cwd: dir,
    stdio: ['ignore', log, log],
    env: roleEnv(dir, domain, {
      NGIT_SYNC_ENABLED: 'false',
      NGIT_SYNC_PLUS_ENABLED: 'false',
      NGIT_MAX_EVENTS_PER_MINUTE: '0',
      NGIT_MAX_EVENTS_PER_MINUTE_PER_IP: '0',
      NGIT_MAX_CONNECTIONS_PER_IP: '0',
      NGIT_MAX_GIT_REQUESTS_PER_IP: '0',
      ...env,
    }),
  });
  closeSync(log);
  hookExit();
  live.add(proc);
  const server = new Server(proc, port, dir, logPath);
  const origStop = server.stop.bind(server);
  server.stop = async () => {
    await origStop();
    live.delete(proc);
    if (!process.env.GRASPD_KEEP_TMP)
      rmSync(dir, { recursive: true, force: true });
  };
  const end = Date.now() + 10000;
  for (;;) {
    if (proc.exitCode !== null)
      throw new Error(`graspd exited at start:\n${server.logTail()}`);
    if (await probe(port)) return server;
    if (Date.now() > end) {
      await server.stop();
      throw new Error(`graspd not listening on ${domain} after 10 s`);
    }
    await sleep(100);
  }
}

// One raw relay connection (util.mjs's RawRelay: publish awaiting the
// OK, req up to EOSE, every wait bounded by WAIT_MS by default).
export class Conn extends RawRelay {
  // A connection to url (a handshake of ms at most).
  static open(url, ms = WAIT_MS) {
    return super.open(url, ms);
  }

  // Sends ev and resolves to the relay's OK: { ok, message }.
  async publish(ev) {
    const r = await super.publish(ev);
    return { ok: r.ok === true, message: String(r.message ?? '') };
  }

  // The stored events matching filters, up to EOSE (CLOSED throws).
  query(...filters) {
    return this.req(`q${randomId(10)}`, ...filters);
  }

  // Whether the relay serves the event of id now.
  async served(id) {
    return (await this.query({ ids: [id] })).length > 0;
  }
}

// The reference's audit client, one per test: the owner's keys (keys),
// a maintainer's, a recursive maintainer's (listed by the maintainer
// only) and a PR author's, one relay connection (conn) to server, a
// temporary directory (work) and a git runner (git) whose HOME is in it.
// close() ends the connection and removes the directory.
export class AuditClient {
  constructor(server, conn, name, { isolated = true } = {}) {
    this.server = server;
    this.conn = conn;
    this.name = name;
    this.isolated = isolated;
    this.runId = `${isolated ? 'isolated' : 'audit'}-${randomId()}`;
    this.cleanupAfter = now() + 3600;
    this.keys = newKeys();
    this.maintainerKeys = newKeys();
    this.recursiveKeys = newKeys();
    this.prAuthorKeys = newKeys();
    this.work = mkdtempSync(join(server.dir, 'client-'));
    mkdirSync(join(this.work, 'home'));
    this.git = makeGit(join(this.work, 'home'));
    this.cache = new Map();
  }

  // A client of fresh keys connected to server; name labels its
  // repositories (the reference names them after the test).  An
  // isolated client (the default) sees only its own run's events in
  // query(); options.isolated false sees all.
  static async create(server, name = 'audit', options = {}) {
    return new AuditClient(server, await Conn.open(server.wsUrl), name,
      options);
  }

  // The reference's audit tags, appended to every event a client signs:
  // `t` tags marking audit events, this run, and when they may be
  // cleaned up.
  auditTags() {
    return [['t', 'grasp-audit-test-event'], ['t', `audit-${this.runId}`],
      ['t', `audit-cleanup-after-${this.cleanupAfter}`]];
  }

  // signEvent() of ev by keys with the audit tags appended.
  sign(keys, ev) {
    return signEvent(keys, { ...ev,
      tags: [...(ev.tags || []), ...this.auditTags()] });
  }

  close() {
    this.conn.close();
    if (!process.env.GRASPD_KEEP_TMP)
      rmSync(this.work, { recursive: true, force: true });
  }

  // Publishes ev; resolves to { ok, message }.
  publish(ev) {
    return this.conn.publish(ev);
  }

  // Publishes ev and throws unless the relay said OK true.
  async publishOk(ev, what = `event ${ev.id}`) {
    const r = await this.publish(ev);
    if (!r.ok) throw new Error(`${what} refused: ${r.message}`);
    return r;
  }

  // The stored events matching filters; an isolated client asks only
  // for its run's (a `#t` of the audit tags), as the reference's does.
  query(...filters) {
    if (!this.isolated) return this.conn.query(...filters);
    const t = ['grasp-audit-test-event', `audit-${this.runId}`];
    return this.conn.query(...filters.map((f) => ({ ...f, '#t': t })));
  }

  // Whether the relay serves the event of id now.
  served(id) {
    return this.conn.served(id);
  }

  // Whether the event of id is served within ms (polled).
  async servedWithin(id, ms = WAIT_MS) {
    return !!(await waitFor(() => this.served(id), ms, 100));
  }

  // Whether query() finds the event of id.
  async found(id) {
    return (await this.query({ ids: [id] })).length > 0;
  }

  // The reference's send_and_verify_accepted: publishes ev, which must
  // be answered OK true and then found by query(); throws with the
  // relay's words otherwise.
  async sendAccepted(ev, what = `event ${ev.id}`) {
    const r = await this.publish(ev);
    if (!r.ok) throw new Error(`${what}: refused: ${r.message}`);
    if (!(await waitFor(() => this.found(ev.id), 2000, 100)))
      throw new Error(`${what}: answered OK (${r.message}) but not served`);
    return r;
  }

  // The reference's send_and_verify_rejected: publishes ev, which must
  // not be served afterwards (an OK false or a silent drop); returns the
  // relay's answer.
  async sendRejected(ev, what = `event ${ev.id}`) {
    const r = await this.publish(ev);
    if (await this.served(ev.id))
      throw new Error(`${what}: served (OK ${r.ok}: ${r.message})`);
    return r;
  }

  // The reference's send_event_and_note_purgatory: publishes ev, which
  // must be answered OK true; resolves to { ok, message, held } where
  // held says the relay does not serve it (purgatory).
  async sendNotePurgatory(ev, what = `event ${ev.id}`) {
    const r = await this.publishOk(ev, what);
    return { ...r, held: !(await this.served(ev.id)) };
  }

  // A new repository identifier: `${name}-<random>`.
  newRepoId(name = this.name) {
    return `${name}-${randomId()}`;
  }

  // This server's git URL of repository repoId of keys (default owner).
  cloneUrl(repoId, keys = this.keys) {
    return this.server.cloneUrl(keys.npub, repoId);
  }

  // A repository announcement (30617) by keys (default the owner) of
  // repoId listing this server in `clone` and `relays`, with tags name
  // and description and, when maintainers is not empty, `maintainers`.
  // Options override: clone (a list of URLs), relays (a list), tags
  // (added), createdAt, content.
  announcement(repoId, { keys = this.keys, maintainers = [],
    clone = [this.server.cloneUrl(keys.npub, repoId)],
    relays = [this.server.wsUrl], tags = [], createdAt = now(),
    content = `Test repository ${repoId}` } = {}) {
    const t = [['d', repoId], ['name', repoId],
      ['description', `Repository ${repoId} of the GRASP audit`]];
    if (clone) t.push(['clone', ...clone]);
    if (relays) t.push(['relays', ...relays]);
    if (maintainers.length) t.push(['maintainers', ...maintainers]);
    return this.sign(keys, { kind: 30617, tags: [...t, ...tags],
      content, created_at: createdAt });
  }

  // A repository state (30618) by keys of repoId: refs maps ref names
  // (refs/heads/main) to values (commit ids), head is HEAD's target
  // (default refs/heads/main, null for none) written "ref: <head>", or
  // headRaw the HEAD tag's value as given; createdAt defaults to now.
  stateEvent(repoId, refs, { keys = this.keys, head = 'refs/heads/main',
    headRaw = null, createdAt = now(), tags = [] } = {}) {
    const t = [['d', repoId]];
    for (const [ref, val] of Object.entries(refs)) t.push([ref, val]);
    if (headRaw) t.push(['HEAD', headRaw]);
    else if (head) t.push(['HEAD', `ref: ${head}`]);
    return this.sign(keys, { kind: 30618, tags: [...t, ...tags],
      created_at: createdAt });
  }

  // An issue (1621) by keys (default the owner) on announcement repo:
  // its `a` and `subject` tags, then tags.
  issue(repo, title, content = 'Issue content for testing',
    { keys = this.keys, tags = [] } = {}) {
    return this.sign(keys, { kind: 1621,
      tags: [['a', aTagOf(repo)], ['subject', title], ...tags], content });
  }

  // A NIP-22 comment (1111) by keys (default the owner) on event ev, as
  // its root.
  comment(ev, content = 'Test comment', { keys = this.keys, tags = [] } =
  {}) {
    return this.sign(keys, { kind: 1111,
      tags: [['E', ev.id, '', 'root'], ['e', ev.id],
        ['K', String(ev.kind)], ['p', ev.pubkey], ...tags], content });
  }

  // A PR (1618) by keys (default the PR author) of repository repo
  // whose tip is commit: its `a` and `c` tags, then tags; one second in
  // the past.
  prEvent(repo, commit, { keys = this.prAuthorKeys, tags = [],
    content = 'Test PR for GRASP validation' } = {}) {
    return this.sign(keys, { kind: 1618,
      tags: [['a', aTagOf(repo)], ['c', commit], ...tags],
      content, created_at: now() - 1 });
  }

  // A fresh directory below this client's work directory.
  tempDir(prefix = 'git') {
    return mkdtempSync(join(this.work, `${prefix}-`));
  }

  // Clones repository repoId of owner keys (default ours) from this
  // server into a new directory and returns its path (throws on
  // failure).
  cloneRepo(repoId, keys = this.keys) {
    const dir = join(this.tempDir('clone'), 'repo');
    this.git(this.work, 'clone', '-q', this.cloneUrl(repoId, keys), dir);
    return dir;
  }

  // A new local repository (branch main) whose origin is repository
  // repoId of keys here, with no commit; returns its path.
  initRepo(repoId, keys = this.keys) {
    const dir = join(this.tempDir('init'), 'repo');
    this.git(this.work, 'init', '-q', '-b', 'main', dir);
    this.git(dir, 'remote', 'add', 'origin', this.cloneUrl(repoId, keys));
    return dir;
  }

  // git push of dir's refspecs (default "main") to origin with
  // --force; resolves to { ok, stdout, stderr } (never throws).
  push(dir, ...refspecs) {
    if (!refspecs.length) refspecs = ['main'];
    return this.git.try(dir, 'push', '--force', 'origin', ...refspecs);
  }

  // git push of src (default HEAD) of dir to refs/nostr/<id> on origin,
  // with --force when force; { ok, stdout, stderr } (never throws).
  pushNostrRef(dir, id, { src = 'HEAD', force = false } = {}) {
    const args = ['push', 'origin', `${src}:refs/nostr/${id}`];
    if (force) args.splice(1, 0, '--force');
    return this.git.try(dir, ...args);
  }

  // ---- fixtures (FixtureKind of the reference), cached per client ----

  async cached(key, build) {
    if (!this.cache.has(key)) this.cache.set(key, await build());
    return this.cache.get(key);
  }

  // ValidRepoSent: the owner's announcement, listing the maintainer,
  // published (OK true: graspd holds it until the git data arrives).
  validRepoSent() {
    return this.cached('ValidRepoSent', async () => {
      const repoId = this.newRepoId(`fixture-${this.name}`);
      const ev = this.announcement(repoId,
        { maintainers: [this.maintainerKeys.pk] });
      await this.publishOk(ev, 'owner announcement');
      return ev;
    });
  }

  // OwnerRepoStateSent: the owner's state (10 s in the past) of the
  // ValidRepoSent repository, main at the owner's deterministic commit
  // (computed here), published; { event, commit, held }.
  ownerRepoStateSent() {
    return this.cached('OwnerRepoStateSent', async () => {
      const repo = await this.validRepoSent();
      const commit = this.variantCommit('owner');
      const event = this.stateEvent(tagValue(repo, 'd'),
        { 'refs/heads/main': commit }, { createdAt: now() - 10 });
      const r = await this.sendNotePurgatory(event, 'owner state');
      return { event, commit, held: r.held, message: r.message };
    });
  }

  // The id the deterministic commit of variant has (made once in a
  // scratch repository).
  variantCommit(variant) {
    const key = `commit:${variant}`;
    if (!this.cache.has(key)) {
      const dir = join(this.tempDir('scratch'), 'repo');
      this.git(this.work, 'init', '-q', '-b', 'main', dir);
      this.cache.set(key, deterministicCommit(this.git, dir, variant));
    }
    return this.cache.get(key);
  }

  // OwnerStateDataPushed: the owner's state released by a push of its
  // commit to main over http (clone, commit, push); throws when the push
  // is refused or the state is not served after it.  Resolves to the
  // state event; the announcement is then served too (ValidRepoServed).
  ownerStateDataPushed() {
    return this.cached('OwnerStateDataPushed', async () => {
      const repo = await this.validRepoSent();
      const { event } = await this.ownerRepoStateSent();
      await this.pushVariantFor(tagValue(repo, 'd'), event, 'owner',
        'owner');
      return event;
    });
  }

  // ValidRepoServed: the owner's announcement once OwnerStateDataPushed
  // has released it.
  async validRepoServed() {
    await this.ownerStateDataPushed();
    const repo = await this.validRepoSent();
    if (!(await this.servedWithin(repo.id)))
      throw new Error('announcement not served after the push');
    return repo;
  }

  // RepoWithIssue: an issue by the owner on the served repository,
  // accepted and served.
  repoWithIssue() {
    return this.cached('RepoWithIssue', async () => {
      const repo = await this.validRepoServed();
      const ev = this.issue(repo, 'Test Issue');
      await this.sendAccepted(ev, 'fixture issue');
      return ev;
    });
  }

  // RepoWithComment: a comment on the RepoWithIssue issue, served.
  repoWithComment() {
    return this.cached('RepoWithComment', async () => {
      const issue = await this.repoWithIssue();
      const ev = this.comment(issue);
      await this.sendAccepted(ev, 'fixture comment');
      return ev;
    });
  }

  // Pushes the deterministic root commit of variant to main of the
  // owner's repository repoId (clone, orphan commit, force push) after
  // publishing state (signed by someone the owner trusts); throws unless
  // the push is accepted and state is then served.  Returns the commit.
  async pushVariantFor(repoId, state, variant, who) {
    const dir = this.cloneRepo(repoId);
    const commit = deterministicCommit(this.git, dir, variant,
      { orphan: true });
    const p = this.push(dir);
    if (!p.ok) throw new Error(`${who} push refused: ${p.stderr}`);
    if (!(await this.servedWithin(state.id)))
      throw new Error(`${who} state not released after the push`);
    return commit;
  }

  // MaintainerStateDataPushed: after OwnerStateDataPushed, the
  // maintainer (listed by the owner, with no announcement of its own)
  // publishes a state (5 s in the past) with main at its deterministic
  // commit, which it force-pushes; resolves to { event, commit, held }.
  maintainerStateDataPushed() {
    return this.cached('MaintainerStateDataPushed', async () => {
      const owner = await this.ownerStateDataPushed();
      const repoId = tagValue(owner, 'd');
      const commit = this.variantCommit('maintainer');
      const event = this.stateEvent(repoId, { 'refs/heads/main': commit },
        { keys: this.maintainerKeys, createdAt: now() - 5 });
      const r = await this.sendNotePurgatory(event, 'maintainer state');
      await this.pushVariantFor(repoId, event, 'maintainer', 'maintainer');
      return { event, commit, held: r.held };
    });
  }

  // The maintainer's own announcement of the owner's repository repoId,
  // listing this server and the recursive maintainer.
  maintainerAnnouncement(repoId) {
    return this.announcement(repoId, { keys: this.maintainerKeys,
      maintainers: [this.recursiveKeys.pk],
      content: `Maintainer announcement for ${repoId}` });
  }

  // RecursiveMaintainerStateDataPushed: after MaintainerStateDataPushed,
  // the maintainer's announcement (listing the recursive maintainer) is
  // published, then the recursive maintainer's state (2 s in the past),
  // and its deterministic commit force-pushed to the owner's repository;
  // resolves to { event, commit, held, maintainerAnnouncement }.
  recursiveMaintainerStateDataPushed() {
    return this.cached('RecursiveMaintainerStateDataPushed', async () => {
      const m = await this.maintainerStateDataPushed();
      const repoId = tagValue(m.event, 'd');
      const ann = this.maintainerAnnouncement(repoId);
      await this.publishOk(ann, 'maintainer announcement');
      const commit = this.variantCommit('recursive');
      const event = this.stateEvent(repoId, { 'refs/heads/main': commit },
        { keys: this.recursiveKeys, createdAt: now() - 2 });
      const r = await this.sendNotePurgatory(event,
        'recursive maintainer state');
      await this.pushVariantFor(repoId, event, 'recursive',
        'recursive maintainer');
      return { event, commit, held: r.held, maintainerAnnouncement: ann };
    });
  }

  // PurgatoryValidRepoSent: a repository of its own for the purgatory
  // cases (no maintainers), its announcement published and held.
  purgatoryValidRepoSent() {
    return this.cached('PurgatoryValidRepoSent', async () => {
      const ev = this.announcement(this.newRepoId('fixture-purgatory'));
      await this.publishOk(ev, 'purgatory announcement');
      return ev;
    });
  }

  // PurgatoryOwnerStateDataPushed: the owner's state of the
  // PurgatoryValidRepoSent repository, then the git push that releases
  // both; resolves to { event, commit, repo }.
  purgatoryOwnerStateDataPushed() {
    return this.cached('PurgatoryOwnerStateDataPushed', async () => {
      const repo = await this.purgatoryValidRepoSent();
      const repoId = tagValue(repo, 'd');
      const commit = this.variantCommit('owner');
      const event = this.stateEvent(repoId, { 'refs/heads/main': commit },
        { createdAt: now() - 10 });
      await this.sendNotePurgatory(event, 'purgatory owner state');
      await this.pushVariantFor(repoId, event, 'owner', 'owner');
      return { event, commit, repo };
    });
  }

  // PREventGenerated: a PR by the PR author on the served repository
  // whose tip is the 'pr' deterministic commit; not published.
  prEventGenerated() {
    return this.cached('PREventGenerated', async () => {
      const repo = await this.validRepoServed();
      return this.prEvent(repo, this.variantCommit('pr'));
    });
  }

  // PRWrongCommitPushedBeforeEvent: before the PR is published, a commit
  // that is not its tip is pushed to refs/nostr/<PR id> of the owner's
  // repository (which must accept it); resolves to the unpublished PR.
  prWrongCommitPushedBeforeEvent() {
    return this.cached('PRWrongCommitPushedBeforeEvent', async () => {
      const pr = await this.prEventGenerated();
      const repo = await this.validRepoServed();
      const dir = this.cloneRepo(tagValue(repo, 'd'));
      const wrong = uniqueCommit(this.git, dir,
        'wrong commit - not the PR test commit');
      if (wrong === tagValue(pr, 'c')) throw new Error('wrong == PR tip');
      const p = this.pushNostrRef(dir, pr.id);
      if (!p.ok)
        throw new Error(`push to refs/nostr/${pr.id} refused: ${p.stderr}`);
      return pr;
    });
  }

  // PREventSentAfterWrongPush: the PR of PRWrongCommitPushedBeforeEvent
  // published (OK true); resolves to it.
  prEventSentAfterWrongPush() {
    return this.cached('PREventSentAfterWrongPush', async () => {
      const pr = await this.prWrongCommitPushedBeforeEvent();
      await this.publishOk(pr, 'PR event');
      return pr;
    });
  }

  // PREvent2Generated: a second PR on the served repository, its tip the
  // 'pr2' deterministic commit; not published.
  prEvent2Generated() {
    return this.cached('PREvent2Generated', async () => {
      const repo = await this.validRepoServed();
      return this.prEvent(repo, this.variantCommit('pr2'),
        { content: 'Test PR 2 for GRASP validation' });
    });
  }

  // PREvent2Sent: the second PR published; it must be answered OK and
  // held (not served) since its tip is nowhere here.
  prEvent2Sent() {
    return this.cached('PREvent2Sent', async () => {
      const pr = await this.prEvent2Generated();
      const r = await this.sendNotePurgatory(pr, 'PR event 2');
      if (!r.held) throw new Error('PR event 2 served at once');
      return pr;
    });
  }

  // PREvent2GitDataPushed: the second PR's tip (a root commit) pushed
  // to refs/nostr/<PR id>, which must be accepted.
  prEvent2GitDataPushed() {
    return this.cached('PREvent2GitDataPushed', async () => {
      const pr = await this.prEvent2Sent();
      const repo = await this.validRepoServed();
      const dir = this.cloneRepo(tagValue(repo, 'd'));
      const tip = deterministicCommit(this.git, dir, 'pr2',
        { orphan: true, branch: 'pr-branch' });
      if (tip !== tagValue(pr, 'c')) throw new Error(`tip ${tip} differs`);
      const p = this.pushNostrRef(dir, pr.id, { src: 'pr-branch' });
      if (!p.ok)
        throw new Error(`push to refs/nostr/${pr.id} refused: ${p.stderr}`);
      return pr;
    });
  }

  // PREvent2Served: the second PR, served after its push.
  prEvent2Served() {
    return this.cached('PREvent2Served', async () => {
      const pr = await this.prEvent2GitDataPushed();
      if (!(await this.servedWithin(pr.id)))
        throw new Error('PR event 2 not released after its push');
      return pr;
    });
  }

  // HeadSetToDevelopBranch: after RecursiveMaintainerStateDataPushed, a
  // state by the maintainer (1 s in the past) whose only branch is
  // develop, at the recursive maintainer's commit (already here), and
  // HEAD "refs/heads/develop" (no "ref: " prefix); published OK.
  headSetToDevelopBranch() {
    return this.cached('HeadSetToDevelopBranch', async () => {
      const r = await this.recursiveMaintainerStateDataPushed();
      const repoId = tagValue(r.event, 'd');
      const ev = this.stateEvent(repoId, { 'refs/heads/develop': r.commit },
        { keys: this.maintainerKeys, headRaw: 'refs/heads/develop',
          createdAt: now() - 1 });
      await this.publishOk(ev, 'develop state');
      return ev;
    });
  }
}

// One graspd for a test file and one AuditClient per case, the way the
// reference runs each case with a client of its own (cargo test's
// isolated mode).  With opts.shared, or GRASP_AUDIT_SHARED=1 in the
// environment, one client serves every case of the file instead, its
// fixtures built once and reused, the way the reference's command-line
// audit runs its cases one after another.  Registers before and after
// hooks; returns { server() (the Server), test(name, fn, options) }
// where fn(client, server) is the case; a failing case shows the last
// lines of graspd's log.  opts go to startGraspd; opts.caseMs bounds one
// case (default 60 s).
export function auditSuite(opts = {}) {
  const shared = opts.shared ?? process.env.GRASP_AUDIT_SHARED === '1';
  let server = null;
  let sharedClient = null;
  before(async () => {
    server = await startGraspd(opts);
    if (shared)
      sharedClient = await AuditClient.create(server, 'shared',
        { isolated: false });
  });
  after(async () => {
    if (sharedClient) sharedClient.close();
    if (server) await server.stop();
  });
  const caseMs = opts.caseMs ?? 60000;
  return {
    server: () => server,
    test(name, fn, options = {}) {
      test(name, { timeout: caseMs, ...options }, async () => {
        if (!server) throw new Error('graspd did not start');
        const label = name.replace(/^test_/, '').slice(0, 40)
          .replace(/[^a-z0-9]+/gi, '-');
        const client = sharedClient ??
          await AuditClient.create(server, label);
        try {
          await fn(client, server);
        } catch (err) {
          err.message += `\n# last lines of graspd's log:\n${
            server.logTail(20).replace(/^/gm, '# ')}`;
          throw err;
        } finally {
          if (!sharedClient) client.close();
        }
      });
    },
  };
}
