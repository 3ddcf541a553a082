// auth_interop.mjs: NIP-42 AUTH and NIP-70 protected events on relayd,
// as nostr-tools' own Relay does them (its AUTH event is nip42's
// makeAuthEvent, signed with finalizeEvent).  Run by tests/interop/run.sh,
// which starts relayd and sets RELAY_URL (ws://127.0.0.1:PORT).  Every
// wait is bounded.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { generateSecretKey, finalizeEvent } from 'nostr-tools/pure';
import { makeAuthEvent } from 'nostr-tools/nip42';
import { Relay, useWebSocketImplementation } from 'nostr-tools/relay';
import { query } from './util.mjs';

useWebSocketImplementation(WebSocket);

const RELAY_URL = process.env.RELAY_URL;
const WAIT_MS = 5000;
const TEST_MS = 20000;

// A kind 10317 (user grasp list, which relayd's policy takes from
// anyone) carrying NIP-70's ["-"].
function protectedEvent(sk) {
  return finalizeEvent({
    kind: 10317,
    created_at: Math.floor(Date.now() / 1000),
    tags: [['-'], ['g', 'wss://grasp.example']],
    content: '',
  }, sk);
}

async function connect() {
  const relay = await Relay.connect(RELAY_URL, { enableReconnect: false });
  relay.publishTimeout = WAIT_MS;
  // relayd sends its challenge on connect; Relay keeps it.
  const end = Date.now() + WAIT_MS;
  while (!relay.challenge && Date.now() < end)
    await new Promise((r) => setTimeout(r, 20));
  assert.ok(relay.challenge, 'no AUTH challenge within 5 s of connecting');
  return relay;
}

async function refusal(promise) {
  try {
    await promise;
  } catch (err) {
    return String(err.message ?? err);
  }
  return null;
}

test('protected event: auth-required, then accepted after AUTH',
  { timeout: TEST_MS }, async () => {
    const sk = generateSecretKey();
    const relay = await connect();
    try {
      const ev = protectedEvent(sk);
      const why = await refusal(relay.publish(ev));
      assert.match(why ?? 'accepted', /^auth-required: /);
      assert.equal((await query(relay, { ids: [ev.id] }, WAIT_MS)).length,
        0);
      // makeAuthEvent names relay.url, the normalized RELAY_URL.
      await relay.auth(async (t) => finalizeEvent(t, sk));
      await relay.publish(ev);
      const back = await query(relay, { ids: [ev.id] }, WAIT_MS);
      assert.equal(back.length, 1);
      assert.deepEqual(back[0].tags, ev.tags);
    } finally {
      relay.close();
    }
  });

test('protected event of another key: restricted', { timeout: TEST_MS },
  async () => {
    const me = generateSecretKey();
    const relay = await connect();
    try {
      await relay.auth(async (t) => finalizeEvent(t, me));
      const why = await refusal(relay.publish(protectedEvent(
        generateSecretKey())));
      assert.match(why ?? 'accepted', /^restricted: /);
    } finally {
      relay.close();
    }
  });

test('AUTH with a wrong challenge or relay is refused',
  { timeout: TEST_MS }, async () => {
    const sk = generateSecretKey();
    const ws = new WebSocket(RELAY_URL, { handshakeTimeout: WAIT_MS });
    const queue = [];
    let wake = () => {};
    ws.on('message', (d) => {
      queue.push(JSON.parse(d.toString()));
      wake();
    });
    await new Promise((res, rej) => {
      ws.once('open', res);
      ws.once('error', rej);
    });
    const next = (pred) => new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('timed out')),
        WAIT_MS);
      const check = () => {
        const i = queue.findIndex(pred);
        if (i >= 0) {
          clearTimeout(timer);
          resolve(queue.splice(i, 1)[0]);
        }
      };
      wake = check;
      check();
    });
    try {
      const [, challenge] = await next((m) => m[0] === 'AUTH');
      const cases = [
        [makeAuthEvent(RELAY_URL, 'not-the-challenge'),
          /^invalid: the challenge/],
        [makeAuthEvent('wss://relay.example/', challenge),
          /^invalid: the relay/],
        [makeAuthEvent(RELAY_URL, challenge), /^$/],
      ];
      for (const [t, want] of cases) {
        const ev = finalizeEvent(t, sk);
        ws.send(JSON.stringify(['AUTH', ev]));
        const ok = await next((m) => m[0] === 'OK' && m[1] === ev.id);
        assert.equal(ok[2], want.source === '^$', `OK for ${ok[3]}`);
        assert.match(ok[3], want);
      }
    } finally {
      ws.terminate();
    }
  });
