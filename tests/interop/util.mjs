// util.mjs: helpers shared by the interop tests: the git client, bounded
// and isolated, a first commit and the state event announcing it, a raw
// WebSocket relay connection with bounded waits (and RawRelay, which
// publishes and reads back over one), tagged events of fresh keys, and a
// stored-events query over nostr-tools' Relay.

import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import WebSocket from 'ws';
import { finalizeEvent, generateSecretKey } from 'nostr-tools/pure';

// A loopback TCP port nobody listened on a moment ago.
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The environment of a graspd or relayd of a test's own, listening on
// domain (127.0.0.1:port) with its data, repositories and run directory
// under dir (made here), and more (NGIT_* settings) added.
export function roleEnv(dir, domain, more) {
  for (const d of ['relay', 'git', 'run'])
    mkdirSync(join(dir, d), { recursive: true });
  return {
    PATH: process.env.PATH,
    NGIT_BIND_ADDRESS: domain,
    NGIT_DOMAIN: domain,
    NGIT_RELAY_DATA_PATH: join(dir, 'relay'),
    NGIT_GIT_DATA_PATH: join(dir, 'git'),
    NGIT_RUN_PATH: join(dir, 'run'),
    NGIT_TEST: '1',
    ...more,
  };
}

// A git runner whose runs use home as HOME, no prompts, no system
// configuration and a fixed author; each run is bounded to 30 s and
// returns its trimmed stdout (it throws on failure, stderr in err.stderr).
export function gitWith(home) {
  return (dir, ...args) => execFileSync('git', args, {
    cwd: dir,
    timeout: 30000,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH,
      HOME: home,
      GIT_TERMINAL_PROMPT: '0',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: 'interop',
      GIT_AUTHOR_EMAIL: 'interop@graspd.invalid',
      GIT_COMMITTER_NAME: 'interop',
      GIT_COMMITTER_EMAIL: 'interop@graspd.invalid',
    },
  }).trim();
}

// The stored events of a nostr-tools Relay that match filter, up to
// EOSE, within ms.
export function query(relay, filter, ms) {
  return new Promise((resolve, reject) => {
    const got = [];
    const timer = setTimeout(() => reject(new Error('no EOSE')), ms);
    const sub = relay.subscribe([filter], {
      onevent: (ev) => got.push(ev),
      oneose: () => {
        clearTimeout(timer);
        sub.close();
        resolve(got);
      },
    });
  });
}

// Makes dir (below parent) a new repository on branch main with one
// commit adding README (text) and returns that commit's id; git is a
// gitWith() runner.
export function firstCommit(git, parent, dir, text) {
  git(parent, 'init', '-q', '-b', 'main', dir);
  writeFileSync(join(dir, 'README'), text);
  git(dir, 'add', 'README');
  git(dir, 'commit', '-q', '-m', 'first');
  return git(dir, 'rev-parse', 'HEAD');
}

// The repository state event (kind 30618) of repository repoId, signed
// with sk at createdAt, whose main branch, also HEAD, is at commit.
export function stateEvent(sk, repoId, commit, createdAt) {
  return finalizeEvent({
    kind: 30618,
    created_at: createdAt,
    tags: [['d', repoId], ['refs/heads/main', commit],
      ['HEAD', 'ref: refs/heads/main']],
    content: '',
  }, sk);
}

// One raw relay connection: a queue of parsed relay messages and waiters;
// waitMs bounds the handshake and, by default, each wait.  The tests
// extend it with their own requests.
export class WsConn {
  constructor(ws, waitMs) {
    this.ws = ws;
    this.waitMs = waitMs;
    this.queue = [];
    this.waiters = new Set();
    this.closed = null;
    ws.on('message', (data) => {
      let msg;
      try {
        msg = JSON.parse(data.toString());
      } catch {
        return;
      }
      if (Array.isArray(msg)) {
        this.queue.push(msg);
        this.wake();
      }
    });
    ws.on('close', (code) => {
      this.closed = `relay closed the connection (code ${code})`;
      this.wake();
    });
    ws.on('error', (err) => {
      this.closed = `connection error: ${err.message}`;
      this.wake();
    });
  }

  // A connection (of the class it is called on) to url.
  static open(url, waitMs) {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { handshakeTimeout: waitMs });
      ws.once('open', () => resolve(new this(ws, waitMs)));
      ws.once('error', (err) =>
        reject(new Error(`cannot connect to ${url}: ${err.message}`)));
    });
  }

  wake() {
    for (const w of [...this.waiters]) w();
  }

  send(msg) {
    this.ws.send(JSON.stringify(msg));
  }

  // The first queued message that pred accepts, waiting at most ms.
  next(pred, what, ms = this.waitMs) {
    return new Promise((resolve, reject) => {
      const check = () => {
        const i = this.queue.findIndex(pred);
        if (i >= 0) {
          done();
          resolve(this.queue.splice(i, 1)[0]);
        } else if (this.closed) {
          done();
          reject(new Error(`${this.closed} while waiting for ${what}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`no ${what} within ${ms} ms`));
      }, ms);
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
      check();
    });
  }
}

// A raw relay connection that publishes and reads back, for the tests of
// other client libraries: what relayd stored, seen without them.
export class RawRelay extends WsConn {
  // relayd's OK for ev: { ok, message }.
  async publish(ev) {
    this.send(['EVENT', ev]);
    const m = await this.next((m) => m[0] === 'OK' && m[1] === ev.id,
      `OK for ${ev.id}`);
    return { ok: m[2], message: m[3] };
  }

  // Publishes every event of events; each must be accepted.
  async publishAll(events) {
    for (const ev of events) {
      const r = await this.publish(ev);
      if (!r.ok) throw new Error(`event ${ev.id} refused: ${r.message}`);
    }
  }

  // The stored events of a new subscription, up to EOSE (CLOSED throws).
  async req(subid, ...filters) {
    this.send(['REQ', subid, ...filters]);
    const events = [];
    for (;;) {
      const m = await this.next((m) => m[1] === subid &&
        ['EVENT', 'EOSE', 'CLOSED'].includes(m[0]), `EOSE of ${subid}`);
      if (m[0] === 'EOSE') {
        this.send(['CLOSE', subid]);
        return events;
      }
      if (m[0] === 'CLOSED') throw new Error(`${subid} CLOSED: ${m[2]}`);
      events.push(m[2]);
    }
  }

  // The sorted ids of the stored events matching filters.
  async ids(...filters) {
    const subid = `ids-${Math.random().toString(36).slice(2, 10)}`;
    return sortedIds((await this.req(subid, ...filters)).map((e) => e.id));
  }

  close() {
    this.ws.terminate();
  }
}

// ids, sorted (and without duplicates), for exact comparisons.
export function sortedIds(ids) {
  return [...new Set(ids)].sort();
}

// n signed kind 10317 events (user grasp lists: relayd's policy takes
// them from anyone, and each author keeps one) by n fresh keys, tagged
// ["t", tag] so that a filter selects one test's events; created_at steps
// back a minute each from now.
export function taggedEvents(tag, n) {
  const now = Math.floor(Date.now() / 1000);
  const events = [];
  for (let i = 0; i < n; i++)
    events.push(finalizeEvent({
      kind: 10317,
      created_at: now - 60 * i,
      tags: [['t', tag], ['g', 'wss://grasp.example']],
      content: '',
    }, generateSecretKey()));
  return events;
}

// A fresh lower-case tag for one test's events.
export function freshTag(prefix) {
  return `${prefix}-${Math.random().toString(36).slice(2, 10)}`;
}
