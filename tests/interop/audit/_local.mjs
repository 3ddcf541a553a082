// _local.mjs: TEMPORARY stand-in for fixtures.mjs (audit1's) until it is
// merged: starts a whole graspd from GRASPD_BIN on a free loopback port.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from
  'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WsConn, RawRelay } from '../util.mjs';

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function startGraspd(env = {}) {
  const bin = process.env.GRASPD_BIN;
  if (!bin) throw new Error('GRASPD_BIN is not set');
  const port = await freePort();
  const domain = `127.0.0.1:${port}`;
  const dir = mkdtempSync(join(tmpdir(), 'graspd-audit-'));
  for (const d of ['relay', 'git', 'run', 'home'])
    mkdirSync(join(dir, d), { recursive: true });
  const log = openSync(join(dir, 'graspd.log'), 'w');
  const proc = spawn(join(bin, 'graspd'), ['-d'], {
    cwd: dir,
    stdio: ['ignore', log, log],
    env: {
      PATH: process.env.PATH,
      NGIT_BIND_ADDRESS: domain,
      NGIT_DOMAIN: domain,
      NGIT_RELAY_DATA_PATH: join(dir, 'relay'),
      NGIT_GIT_DATA_PATH: join(dir, 'git'),
      NGIT_RUN_PATH: join(dir, 'run'),
      NGIT_TEST: '1',
      NGIT_MAX_EVENTS_PER_MINUTE: '0',
      NGIT_MAX_CONNECTIONS_PER_IP: '0',
      NGIT_MAX_EVENTS_PER_MINUTE_PER_IP: '0',
      ...env,
    },
  });
  const end = Date.now() + 15000;
  for (;;) {
    try {
      const c = await RawRelay.open(`ws://${domain}`, 2000);
      c.close();
      break;
    } catch (err) {
      if (proc.exitCode !== null || Date.now() > end)
        throw new Error(`graspd did not start: ${err.message}\n` +
          readFileSync(join(dir, 'graspd.log'), 'utf8'));
      await sleep(100);
    }
  }
  return {
    domain,
    url: `ws://${domain}`,
    http: `http://${domain}`,
    dir,
    home: join(dir, 'home'),
    async stop() {
      if (proc.exitCode === null) {
        proc.kill('SIGTERM');
        await new Promise((r) => {
          const t = setTimeout(() => { proc.kill('SIGKILL'); r(); }, 5000);
          proc.once('exit', () => { clearTimeout(t); r(); });
        });
      }
      if (!process.env.GRASPD_KEEP_TMP)
        rmSync(dir, { recursive: true, force: true });
    },
  };
}
export { WsConn };

import { finalizeEvent, generateSecretKey, getPublicKey } from
  'nostr-tools/pure';
import { npubEncode } from 'nostr-tools/nip19';
import { gitWith } from '../util.mjs';
import { writeFileSync } from 'node:fs';

// ValidRepoSent: an announcement listing the server in clone and relays.
export async function validRepoSent(server, sk = generateSecretKey()) {
  const id = `fixture-${Math.random().toString(36).slice(2, 10)}`;
  const npub = npubEncode(getPublicKey(sk));
  const ev = finalizeEvent({
    kind: 30617,
    created_at: Math.floor(Date.now() / 1000) - 20,
    tags: [['d', id], ['name', id],
      ['clone', `${server.http}/${npub}/${id}.git`],
      ['relays', server.url],
      ['maintainers', getPublicKey(generateSecretKey())]],
    content: '',
  }, sk);
  const r = await RawRelay.open(server.url, 5000);
  try {
    const ok = await r.publish(ev);
    if (!ok.ok) throw new Error(`announcement refused: ${ok.message}`);
  } finally {
    r.close();
  }
  return { sk, event: ev, id, npub, cloneUrl: `${server.http}/${npub}/${id}.git` };
}

// ValidRepoServed: ValidRepoSent, a state event and its git push.
export async function validRepoServed(server) {
  const repo = await validRepoSent(server);
  const git = gitWith(server.home);
  const dir = mkdtempSync(join(server.dir, 'src-'));
  git(dir, 'init', '-q', '-b', 'main');
  writeFileSync(join(dir, 'test.txt'), 'Initial commit\n');
  git(dir, 'add', 'test.txt');
  git(dir, 'commit', '-q', '-m', 'Initial commit');
  const commit = git(dir, 'rev-parse', 'HEAD');
  const state = finalizeEvent({
    kind: 30618,
    created_at: Math.floor(Date.now() / 1000) - 10,
    tags: [['d', repo.id], ['refs/heads/main', commit],
      ['HEAD', 'ref: refs/heads/main']],
    content: '',
  }, repo.sk);
  const r = await RawRelay.open(server.url, 5000);
  try {
    const ok = await r.publish(state);
    if (!ok.ok) throw new Error(`state refused: ${ok.message}`);
  } finally {
    r.close();
  }
  git(dir, 'push', '-q', repo.cloneUrl, 'main');
  return { ...repo, state, commit };
}
