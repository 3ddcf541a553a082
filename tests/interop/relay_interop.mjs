// relay_interop.mjs: relayd as seen by nostr-tools and ws, the libraries
// most Nostr clients are built on.  Run by tests/interop/run.sh, which
// starts relayd and sets RELAY_URL (ws://127.0.0.1:PORT) and C_EVENT_FILE
// (events signed by graspd's C code, one JSON a line).
//
// The tests share one repository and run in order: announce (held in
// purgatory, GRASP-01), publish a state event and push its commit with the
// git client (which releases the announcement), open an issue, read both
// back, follow the repository live, and check that nostr-tools accepts
// what our C code signs.  Every wait is bounded.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  generateSecretKey,
  getPublicKey,
  finalizeEvent,
  verifyEvent,
  getEventHash,
} from 'nostr-tools/pure';
import { npubEncode } from 'nostr-tools/nip19';
import { firstCommit, gitWith, stateEvent, WsConn } from './util.mjs';

const RELAY_URL = process.env.RELAY_URL;
const WAIT_MS = 5000;
const TEST_MS = 20000;
const REPO_ID = 'interop';

// A raw relay connection that publishes and queries.
class Relay extends WsConn {
  async publish(ev) {
    this.send(['EVENT', ev]);
    const m = await this.next((m) => m[0] === 'OK' && m[1] === ev.id,
      `OK for ${ev.id}`);
    return { ok: m[2], message: m[3] };
  }

  // Stored events of a new subscription, up to EOSE (CLOSED throws).
  async req(subid, ...filters) {
    this.send(['REQ', subid, ...filters]);
    const events = [];
    for (;;) {
      const m = await this.next((m) => m[1] === subid &&
        ['EVENT', 'EOSE', 'CLOSED'].includes(m[0]), `EOSE of ${subid}`);
      if (m[0] === 'EOSE') return events;
      if (m[0] === 'CLOSED') throw new Error(`${subid} CLOSED: ${m[2]}`);
      events.push(m[2]);
    }
  }

  close() {
    this.ws.terminate();
  }
}

// The git client, bounded, in dir, with its own HOME and no prompts.
const gitHome = mkdtempSync(join(tmpdir(), 'graspd-interop-git-'));
after(() => rmSync(gitHome, { recursive: true, force: true }));
const git = gitWith(gitHome);

const conns = [];
async function connect() {
  assert.ok(RELAY_URL, 'RELAY_URL is not set; run tests/interop/run.sh');
  const r = await Relay.open(RELAY_URL, WAIT_MS);
  conns.push(r);
  return r;
}
after(() => conns.forEach((r) => r.close()));

const hostport = RELAY_URL ? new URL(RELAY_URL).host : '127.0.0.1:0';
const owner = generateSecretKey();
const ownerPk = getPublicKey(owner);
const address = `30617:${ownerPk}:${REPO_ID}`;
const reporter = generateSecretKey();
const now = () => Math.floor(Date.now() / 1000);
let relay = null;
let announcement = null;
let issue = null;

function newIssue(subject, content) {
  return finalizeEvent({
    kind: 1621,
    created_at: now(),
    tags: [['a', address], ['p', ownerPk], ['subject', subject]],
    content,
  }, reporter);
}

test('a repository announcement listing this relay is held in purgatory',
  { timeout: TEST_MS }, async () => {
    relay = await connect();
    announcement = finalizeEvent({
      kind: 30617,
      created_at: now(),
      tags: [
        ['d', REPO_ID],
        ['name', 'interop'],
        ['description', 'graspd interop test repository'],
        ['clone', `http://${hostport}/${npubEncode(ownerPk)}/${REPO_ID}.git`],
        ['relays', `ws://${hostport}`],
      ],
      content: '',
    }, owner);
    const r = await relay.publish(announcement);
    assert.equal(r.ok, true, `OK false: ${r.message}`);
    assert.equal(r.message,
      "purgatory: won't be served until git data arrives");
    assert.deepEqual(await relay.req('held', { ids: [announcement.id] }), []);
    relay.send(['CLOSE', 'held']);
  });

test('a state event and a git push release the repository',
  { timeout: TEST_MS }, async () => {
    assert.ok(relay && announcement, 'the announcement test did not run');
    const dir = join(gitHome, 'work');
    const commit = firstCommit(git, gitHome, dir, 'graspd interop\n');
    const state = stateEvent(owner, REPO_ID, commit, now());
    const r = await relay.publish(state);
    assert.equal(r.ok, true, `OK false: ${r.message}`);
    git(dir, 'push', '-q',
      `http://${hostport}/${npubEncode(ownerPk)}/${REPO_ID}.git`, 'main');
    // relayd answers the push once the release is committed.
    const got = await relay.req('released', { ids: [announcement.id] });
    assert.equal(got.length, 1, 'the announcement is not served');
    relay.send(['CLOSE', 'released']);
  });

test('an issue tagging the announcement gets OK true',
  { timeout: TEST_MS }, async () => {
    assert.ok(relay && announcement, 'the announcement test did not run');
    // Escapes, a control character, DEL and non-ASCII: the relay must
    // serve the event byte-for-byte as signed.
    issue = newIssue('interop issue',
      'opened by nostr-tools: "quotes", \\ backslash, \t tab,\nnewline, ' +
      '\u0001 control, \u007f del, é, 🚀');
    const r = await relay.publish(issue);
    assert.equal(r.ok, true, `OK false: ${r.message}`);
  });

test('a REQ returns both, verified by nostr-tools, as published',
  { timeout: TEST_MS }, async () => {
    assert.ok(relay && announcement && issue, 'earlier tests did not run');
    const got = await relay.req('both',
      { kinds: [30617], authors: [ownerPk], '#d': [REPO_ID] },
      { kinds: [1621], '#a': [address] });
    const byId = new Map(got.map((e) => [e.id, e]));
    assert.deepEqual([...byId.keys()].sort(),
      [announcement.id, issue.id].sort());
    for (const sent of [announcement, issue]) {
      const e = byId.get(sent.id);
      assert.equal(getEventHash(e), sent.id, 'served id is not its hash');
      assert.equal(verifyEvent(e), true, `bad signature on ${e.id}`);
      for (const k of ['pubkey', 'created_at', 'kind', 'tags', 'content',
        'sig'])
        assert.deepEqual(e[k], sent[k], `${k} of ${e.id} changed`);
    }
    relay.send(['CLOSE', 'both']);
  });

test('a live subscription to the repository receives a later issue',
  { timeout: TEST_MS }, async () => {
    assert.ok(relay && announcement, 'the announcement test did not run');
    const watcher = await connect();
    await watcher.req('live', { '#a': [address] });
    const later = newIssue('live issue', 'published after EOSE');
    const r = await relay.publish(later);
    assert.equal(r.ok, true, `OK false: ${r.message}`);
    const m = await watcher.next((m) => m[0] === 'EVENT' &&
      m[1] === 'live' && m[2]?.id === later.id, 'the live issue');
    assert.equal(verifyEvent(m[2]), true);
    assert.deepEqual(m[2].tags, later.tags);
    watcher.send(['CLOSE', 'live']);
  });

test('events signed by graspd C code verify with nostr-tools',
  { timeout: TEST_MS }, (t) => {
    const file = process.env.C_EVENT_FILE;
    if (!file) {
      t.skip('C_EVENT_FILE not set');
      return;
    }
    const lines = readFileSync(file, 'utf8').split('\n').filter((l) => l);
    assert.ok(lines.length > 0, `${file} holds no event`);
    for (const line of lines) {
      const e = JSON.parse(line);
      assert.equal(getEventHash(e), e.id, `id of ${e.id} is not its hash`);
      assert.equal(verifyEvent(e), true, `bad signature on ${e.id}`);
    }
  });
