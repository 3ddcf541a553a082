// archive_interop.mjs: GRASP-05 archive mode as nostr-tools sees it.  A
// repository is announced on the relayd of tests/interop/run.sh
// (RELAY_URL), listing that relay only, and released with a state event
// and a git push.  A graspd in archive mode (NGIT_ARCHIVE_ALL), started
// on a free loopback port by audit/fixtures.mjs's startGraspd with
// RELAY_URL as its bootstrap relay, must sync the announcement and
// state, hunt the git data and serve it, refuse a push, and say GRASP-05
// in NIP-11.  GRASPD_BIN (run.sh sets it) holds graspd and its roles.
// Every wait is bounded.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { generateSecretKey, getPublicKey, finalizeEvent } from
  'nostr-tools/pure';
import { npubEncode } from 'nostr-tools/nip19';
import { Relay, useWebSocketImplementation } from 'nostr-tools/relay';
import { firstCommit, gitWith, query, sleep, stateEvent } from './util.mjs';
import { startGraspd } from './audit/fixtures.mjs';

useWebSocketImplementation(WebSocket);

const RELAY_URL = process.env.RELAY_URL;
const BIN = process.env.GRASPD_BIN;
const WAIT_MS = 5000;
const SYNC_MS = 40000;
const REPO_ID = 'archived';

const work = mkdtempSync(join(tmpdir(), 'graspd-archive-interop-'));
let archive = null;
after(async () => {
  if (archive) await archive.stop();
  if (!process.env.GRASPD_KEEP_TMP)
    rmSync(work, { recursive: true, force: true });
});

const git = gitWith(work);

async function connectWithin(url, ms) {
  const end = Date.now() + ms;
  for (;;) {
    try {
      return await Relay.connect(url, { enableReconnect: false });
    } catch (err) {
      if (Date.now() > end) throw err;
      await sleep(200);
    }
  }
}

const owner = generateSecretKey();
const ownerPk = getPublicKey(owner);
const now = () => Math.floor(Date.now() / 1000);
let announcement = null;
let state = null;
let commit = null;

test('a repository listing only the first relay is released there',
  { timeout: SYNC_MS }, async () => {
    assert.ok(RELAY_URL, 'RELAY_URL is not set; run tests/interop/run.sh');
    const host = new URL(RELAY_URL).host;
    const url = `http://${host}/${npubEncode(ownerPk)}/${REPO_ID}.git`;
    const relay = await Relay.connect(RELAY_URL, { enableReconnect: false });
    relay.publishTimeout = WAIT_MS;
    try {
      announcement = finalizeEvent({
        kind: 30617,
        created_at: now() - 60,
        tags: [['d', REPO_ID], ['clone', url], ['relays', RELAY_URL]],
        content: '',
      }, owner);
      await relay.publish(announcement);
      const dir = join(work, 'src');
      commit = firstCommit(git, work, dir, 'archived by GRASP-05\n');
      state = stateEvent(owner, REPO_ID, commit, now());
      await relay.publish(state);
      git(dir, 'push', '-q', url, 'main');
    } finally {
      relay.close();
    }
  });

test('graspd in archive mode syncs, hunts and serves it read-only',
  { timeout: SYNC_MS * 2 }, async () => {
    assert.ok(announcement && state, 'the release test did not run');
    assert.ok(BIN, 'GRASPD_BIN is not set; run tests/interop/run.sh');
    archive = await startGraspd({ name: 'archive-interop', env: {
      NGIT_ARCHIVE_ALL: 'true',
      NGIT_SYNC_ENABLED: 'true',
      NGIT_SYNC_PLUS_ENABLED: 'true',
      NGIT_SYNC_BOOTSTRAP_RELAY_URL: RELAY_URL,
      NGIT_SYNC_ALLOW_PRIVATE_TARGETS: 'true',
    } });
    const { domain } = archive;
    const tail = () => archive.logTail(20);
    try {
      const relay = await connectWithin(`ws://${domain}`, 10000);
      try {
        let got = [];
        const end = Date.now() + SYNC_MS;
        while (got.length < 2 && Date.now() < end) {
          got = await query(relay, { ids: [announcement.id, state.id] },
            WAIT_MS);
          if (got.length < 2) await sleep(300);
        }
        assert.equal(got.length, 2, 'announcement and state not served');
      } finally {
        relay.close();
      }

      const info = await (await fetch(`http://${domain}/`, {
        headers: { Accept: 'application/nostr+json' },
      })).json();
      assert.ok(info.supported_grasps.includes('GRASP-05'));
      assert.match(info.curation, /read-only/i);

      const url = `http://${domain}/${npubEncode(ownerPk)}/${REPO_ID}.git`;
      const clone = join(work, 'clone');
      git(work, 'clone', '-q', url, clone);
      assert.equal(git(clone, 'rev-parse', 'HEAD'), commit);
      writeFileSync(join(clone, 'MORE'), 'more\n');
      git(clone, 'add', 'MORE');
      git(clone, 'commit', '-q', '-m', 'more');
      assert.throws(() => git(clone, 'push', '-q', url, 'main'),
        (err) => /archived here read-only/.test(String(err.stderr)));
    } catch (err) {
      console.log(tail().replace(/^/gm, '# '));
      throw err;
    }
  });
