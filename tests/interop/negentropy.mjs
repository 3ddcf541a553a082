// negentropy.mjs: relayd's NIP-77 negentropy sync as nostr-tools' nip77
// client sees it.  Run by tests/interop/run.sh beside relay_interop.mjs,
// with RELAY_URL set to a fresh relayd.
//
// Each case seeds relayd with its own kind 10317 events (user grasp
// lists: always accepted, replaceable per author, so every event has its
// own key), tagged ["t", <case>] so that a NEG-OPEN filter selects only
// that case's events.  The client side holds some of those events and
// ids the relay never saw; after the sync, "have" must be exactly the
// client's extra ids and "need" exactly the relay's.  Events are signed
// with nostr-tools' WebAssembly signer and published over several
// connections, so the 20,000-event cases take seconds.  Every wait is
// bounded.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { nip77 } from 'nostr-tools';
import { Relay as NtRelay, useWebSocketImplementation } from
  'nostr-tools/relay';
import { setNostrWasm, finalizeEvent, generateSecretKey } from
  'nostr-tools/wasm';
import { initNostrWasm } from 'nostr-wasm';
import { WsConn } from './util.mjs';

const { Negentropy, NegentropyStorageVector, NegentropySync } = nip77;

const RELAY_URL = process.env.RELAY_URL;
const WAIT_MS = 10000;
const FRAME_LIMIT = 60000;	// relayd's NEG_FRAME_DEFAULT
const PUBLISH_CONNS = 4;
const PUBLISH_WINDOW = 400;
const NOW = Math.floor(Date.now() / 1000);

useWebSocketImplementation(WebSocket);

// A raw relay connection with NEG-MSG waits.
class Conn extends WsConn {
  // The NEG-MSG or NEG-ERR answering subid.
  negAnswer(subid) {
    return this.next((m) => (m[0] === 'NEG-MSG' || m[0] === 'NEG-ERR') &&
      m[1] === subid, `NEG-MSG or NEG-ERR for ${subid}`);
  }

  close() {
    this.ws.close();
  }
}

// n signed kind 10317 events of case tag, by n fresh keys, with many
// equal timestamps.
function signEvents(tag, n) {
  const events = [];
  for (let i = 0; i < n; i++)
    events.push(finalizeEvent({
      kind: 10317,
      created_at: NOW - 60 * (i % 37),
      tags: [['t', tag], ['g', 'ws://127.0.0.1:1']],
      content: '',
    }, generateSecretKey()));
  return events;
}

// Ids the relay never saw, as [created_at, id] items.
function strangerItems(n) {
  const items = [];
  for (let i = 0; i < n; i++)
    items.push([NOW - 60 * (i % 37), randomBytes(32).toString('hex')]);
  return items;
}

const itemsOf = (events) => events.map((e) => [e.created_at, e.id]);

// Publishes events over PUBLISH_CONNS connections, PUBLISH_WINDOW in
// flight on each; every one must be accepted.
async function publish(events) {
  const conns = await Promise.all(
    Array.from({ length: PUBLISH_CONNS }, () => Conn.open(RELAY_URL, WAIT_MS)));
  try {
    await Promise.all(conns.map(async (c, k) => {
      const mine = events.filter((_, i) => i % PUBLISH_CONNS === k);
      for (let i = 0; i < mine.length; i += PUBLISH_WINDOW) {
        const batch = mine.slice(i, i + PUBLISH_WINDOW);
        const want = new Set(batch.map((e) => e.id));
        for (const e of batch) c.send(['EVENT', e]);
        while (want.size > 0) {
          const m = await c.next((m) => m[0] === 'OK' && want.has(m[1]),
            `OK for ${want.size} events`);
          want.delete(m[1]);
          assert.equal(m[2], true, `event refused: ${m[3]}`);
        }
      }
    }));
  } finally {
    for (const c of conns) c.close();
  }
}

// Runs nostr-tools' Negentropy (the client) against relayd over conn.
async function sync(conn, subid, filter, items) {
  const storage = new NegentropyStorageVector();
  for (const [ts, id] of items) storage.insert(ts, id);
  storage.seal();
  const neg = new Negentropy(storage, FRAME_LIMIT);
  const have = new Set();
  const need = new Set();
  let rounds = 0;
  let largest = 0;
  conn.send(['NEG-OPEN', subid, filter, neg.initiate()]);
  for (;;) {
    const m = await conn.negAnswer(subid);
    if (m[0] === 'NEG-ERR') throw new Error(`NEG-ERR ${m[2]}`);
    rounds++;
    assert.ok(m[2].length / 2 <= FRAME_LIMIT,
      `a NEG-MSG of ${m[2].length / 2} bytes`);
    largest = Math.max(largest, m[2].length / 2);
    const next = neg.reconcile(m[2], (id) => have.add(id),
      (id) => need.add(id));
    if (next === null) break;
    conn.send(['NEG-MSG', subid, next]);
  }
  conn.send(['NEG-CLOSE', subid]);
  // largest: the bytes of the biggest answer (binary, not hex).
  return { have, need, rounds, largest };
}

function assertSameIds(got, want, what) {
  const w = new Set(want);
  assert.equal(got.size, w.size, `${what}: ${got.size} ids, want ${w.size}`);
  for (const id of got) assert.ok(w.has(id), `${what}: unexpected ${id}`);
}

const filterFor = (tag) => ({ kinds: [10317], '#t': [tag] });

let conn;
const seeded = {};

before(async () => {
  assert.ok(RELAY_URL, 'RELAY_URL is not set (run tests/interop/run.sh)');
  setNostrWasm(await initNostrWasm());
  seeded.one = signEvents('neg-one', 1);
  seeded.equal = signEvents('neg-equal', 2000);
  seeded.disjoint = signEvents('neg-disjoint', 500);
  seeded.big = signEvents('neg-big', 20000);
  await publish([...seeded.one, ...seeded.equal, ...seeded.disjoint,
    ...seeded.big]);
  conn = await Conn.open(RELAY_URL, WAIT_MS);
});

after(() => conn?.close());

test('relayd advertises NIP-77 in NIP-11', async () => {
  const res = await fetch(RELAY_URL.replace(/^ws/, 'http'),
    { headers: { Accept: 'application/nostr+json' } });
  const doc = await res.json();
  assert.ok(doc.supported_nips.includes(77), JSON.stringify(doc));
});

test('empty store, empty client: nothing to exchange', async () => {
  const r = await sync(conn, 'e0', filterFor('neg-none'), []);
  assert.equal(r.have.size + r.need.size, 0);
});

test('empty store: the client has everything', async () => {
  const mine = strangerItems(300);
  const r = await sync(conn, 'e1', filterFor('neg-none'), mine);
  assertSameIds(r.have, mine.map((i) => i[1]), 'have');
  assertSameIds(r.need, [], 'need');
});

test('empty client: it needs the relay\'s one event', async () => {
  const r = await sync(conn, 'one', filterFor('neg-one'), []);
  assertSameIds(r.have, [], 'have');
  assertSameIds(r.need, [seeded.one[0].id], 'need');
});

test('equal sets of 2,000: one round, nothing to exchange', async () => {
  const r = await sync(conn, 'eq', filterFor('neg-equal'),
    itemsOf(seeded.equal));
  assert.equal(r.have.size + r.need.size, 0);
  assert.equal(r.rounds, 1);
});

// A case whose client holds n ids the relay never saw and none of the
// relay's seeded[key] events (tagged tag): it has all n, needs them all.
const disjoint = (subid, tag, n, key) => async () => {
  const mine = strangerItems(n);
  const r = await sync(conn, subid, filterFor(tag), mine);
  assertSameIds(r.have, mine.map((i) => i[1]), 'have');
  assertSameIds(r.need, seeded[key].map((e) => e.id), 'need');
};

test('disjoint sets: 700 have, 500 need',
  disjoint('dj', 'neg-disjoint', 700, 'disjoint'));

test('overlapping sets of 20,000: 1,000 have, 1,000 need', async () => {
  const shared = seeded.big.slice(1000);
  const mine = strangerItems(1000);
  const r = await sync(conn, 'big', filterFor('neg-big'),
    [...itemsOf(shared), ...mine]);
  assertSameIds(r.have, mine.map((i) => i[1]), 'have');
  assertSameIds(r.need, seeded.big.slice(0, 1000).map((e) => e.id),
    'need');
  // Differences spread over the set make relayd's answers id lists cut
  // at the frame limit: the cut stays exercised.
  assert.ok(r.largest > 50000, `largest answer ${r.largest} bytes`);
});

test('equal sets of 20,000: nothing to exchange', async () => {
  const r = await sync(conn, 'eqbig', filterFor('neg-big'),
    itemsOf(seeded.big));
  assert.equal(r.have.size, 0);
  assert.equal(r.need.size, 0);
});

test('disjoint sets of 20,000: 20,000 have, 20,000 need',
  disjoint('djbig', 'neg-big', 20000, 'big'));

test('nostr-tools NegentropySync over its own Relay agrees', async () => {
  const relay = await NtRelay.connect(RELAY_URL);
  try {
    const storage = new NegentropyStorageVector();
    const mine = strangerItems(50);
    for (const [ts, id] of [...itemsOf(seeded.big.slice(10)), ...mine])
      storage.insert(ts, id);
    storage.seal();
    const have = [];
    const need = [];
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('sync timed out')),
        WAIT_MS * 3);
      const s = new NegentropySync(relay, storage, filterFor('neg-big'), {
        onhave: (id) => have.push(id),
        onneed: (id) => need.push(id),
        onclose: (err) => {
          clearTimeout(timer);
          if (err) reject(new Error(err));
          else resolve();
        },
      });
      s.start();
    });
    assertSameIds(new Set(have), mine.map((i) => i[1]), 'have');
    assertSameIds(new Set(need), seeded.big.slice(0, 10).map((e) => e.id),
      'need');
  } finally {
    relay.close();
  }
});

test('NEG-MSG for an unknown session gets NEG-ERR closed:', async () => {
  conn.send(['NEG-MSG', 'nobody', '61']);
  const m = await conn.negAnswer('nobody');
  assert.equal(m[0], 'NEG-ERR');
  assert.match(m[2], /^closed: /);
});

test('a closed session is gone', async () => {
  const neg = new Negentropy(new NegentropyStorageVector(), FRAME_LIMIT);
  neg.storage.seal();
  conn.send(['NEG-OPEN', 'gone', filterFor('neg-one'), neg.initiate()]);
  assert.equal((await conn.negAnswer('gone'))[0], 'NEG-MSG');
  conn.send(['NEG-CLOSE', 'gone']);
  conn.send(['NEG-MSG', 'gone', '61']);
  assert.match((await conn.negAnswer('gone'))[2], /^closed: /);
});

test('bad messages and filters get NEG-ERR invalid:', async () => {
  conn.send(['NEG-OPEN', 'x1', filterFor('neg-one'), 'zz']);
  assert.match((await conn.negAnswer('x1'))[2], /^invalid: /);
  conn.send(['NEG-OPEN', 'x2', filterFor('neg-one'), '6100']);
  assert.match((await conn.negAnswer('x2'))[2], /^invalid: /);
  conn.send(['NEG-OPEN', 'x3', { kinds: 'no' }, '61']);
  assert.match((await conn.negAnswer('x3'))[2], /^invalid: /);
  conn.send(['NEG-OPEN', 'x4', filterFor('neg-one'), '7f']);
  assert.match((await conn.negAnswer('x4'))[2], /^invalid: /);
  conn.send(['NEG-OPEN', 'x5', filterFor('neg-one')]);
  assert.match((await conn.negAnswer('x5'))[2], /^invalid: /);
});

test('an unsupported version gets the version message "61"', async () => {
  conn.send(['NEG-OPEN', 'v2', filterFor('neg-one'), '62']);
  const m = await conn.negAnswer('v2');
  assert.deepEqual(m, ['NEG-MSG', 'v2', '61']);
  conn.send(['NEG-CLOSE', 'v2']);
});

test('sessions per connection are capped', async () => {
  const c = await Conn.open(RELAY_URL, WAIT_MS);
  try {
    let blocked = null;
    for (let i = 0; i < 20 && !blocked; i++) {
      const neg = new Negentropy(new NegentropyStorageVector(),
        FRAME_LIMIT);
      neg.storage.seal();
      c.send(['NEG-OPEN', `s${i}`, filterFor('neg-one'), neg.initiate()]);
      const m = await c.negAnswer(`s${i}`);
      if (m[0] === 'NEG-ERR') blocked = m[2];
    }
    assert.match(blocked ?? 'never blocked', /^blocked: /);
  } finally {
    c.close();
  }
});
