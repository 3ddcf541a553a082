// applesauce_interop.mjs: relayd's NIP-45 COUNT as applesauce-relay's
// Relay.count() asks it (npm applesauce-relay, unmodified): one filter,
// two whose matches overlap (their union, each event once), and one that
// matches nothing.  Run by tests/interop/run.sh, which starts relayd and
// sets RELAY_URL (ws://127.0.0.1:PORT).  A relay that does not answer
// COUNT leaves count() waiting for ever, so every wait here is bounded.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { Relay } from 'applesauce-relay';
import { RawRelay, freshTag, taggedEvents } from './util.mjs';

const RELAY_URL = process.env.RELAY_URL;
const WAIT_MS = 5000;
const TEST_MS = 20000;
const KIND_GRASP_LIST = 10317;	// NIP-34 user grasp list: open to anyone

let raw = null;
let relay = null;
const tag = freshTag('as-count');
const other = freshTag('as-other');
let events = [];
let others = [];

before(async () => {
  assert.ok(RELAY_URL, 'RELAY_URL is not set; run tests/interop/run.sh');
  raw = await RawRelay.open(RELAY_URL, WAIT_MS);
  events = taggedEvents(tag, 5);
  others = taggedEvents(other, 2);
  await raw.publishAll([...events, ...others]);
  relay = new Relay(RELAY_URL, { WebSocket });
});
after(() => {
  relay?.close();
  raw?.close();
});

// The first answer of relay.count(filters), within WAIT_MS.
function count(filters) {
  return new Promise((resolve, reject) => {
    let sub = null;
    const timer = setTimeout(() => {
      sub?.unsubscribe();
      reject(new Error(`no COUNT answer within ${WAIT_MS} ms`));
    }, WAIT_MS);
    sub = relay.count(filters).subscribe({
      next: (r) => {
        clearTimeout(timer);
        resolve(r);
      },
      error: (err) => {
        clearTimeout(timer);
        reject(err);
      },
    });
  });
}

test('count() of one filter', { timeout: TEST_MS }, async () => {
  const r = await count({ kinds: [KIND_GRASP_LIST], '#t': [tag] });
  assert.deepEqual(r, { count: events.length });
});

test('count() of two filters counts their union once',
  { timeout: TEST_MS }, async () => {
    // The second filter names two of the first one's authors and one
    // author of the other tag's events.
    const r = await count([
      { kinds: [KIND_GRASP_LIST], '#t': [tag] },
      { kinds: [KIND_GRASP_LIST],
        authors: [events[0].pubkey, events[1].pubkey, others[0].pubkey] },
    ]);
    assert.deepEqual(r, { count: events.length + 1 });
  });

test('count() of a filter that matches nothing', { timeout: TEST_MS },
  async () => {
    const r = await count({ kinds: [KIND_GRASP_LIST],
      '#t': [freshTag('as-none')] });
    assert.deepEqual(r, { count: 0 });
  });
