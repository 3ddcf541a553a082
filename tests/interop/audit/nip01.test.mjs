// nip01.test.mjs: grasp-audit's NIP-01 smoke cases
// (specs/grasp01/nip01_smoke.rs) against a whole graspd: the WebSocket at
// /, an accepted repository read back by id and by subscription, CLOSE,
// and events refused for a wrong signature or a wrong id.  The events
// of the refusal cases are ones graspd takes from anyone (kind 10317) so
// that only the broken signature or id can be the reason.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startGraspd, validRepoServed } from './_local.mjs';
import { RawRelay, freshTag, taggedEvents } from '../util.mjs';
import { finalizeEvent, generateSecretKey } from 'nostr-tools/pure';

const WAIT_MS = 5000;

let server;
let relay;
before(async () => {
  server = await startGraspd();
  relay = await RawRelay.open(server.url, WAIT_MS);
});
after(async () => {
  relay?.close();
  await server?.stop();
});

test('websocket_connection', async () => {
  const c = await RawRelay.open(server.url, WAIT_MS);
  assert.equal(c.ws.readyState, c.ws.OPEN);
  c.close();
});

test('send_receive_event', async () => {
  const repo = await validRepoServed(server);
  const got = await relay.req('srv', { kinds: [30617], ids: [repo.event.id] });
  assert.deepEqual(got.map((e) => e.id), [repo.event.id]);
});

test('create_subscription', async () => {
  const repo = await validRepoServed(server);
  const got = await relay.req('sub',
    { kinds: [30617], authors: [repo.event.pubkey] });
  assert.ok(got.some((e) => e.id === repo.event.id),
    'the announcement is not among the subscription\'s events');
});

// The reference only opens a subscription here; this also checks that
// after CLOSE a new matching event is not sent to it.
test('close_subscription', async () => {
  const tag = freshTag('close');
  relay.send(['REQ', 'closing', { kinds: [10317], '#t': [tag] }]);
  await relay.next((m) => m[0] === 'EOSE' && m[1] === 'closing', 'EOSE');
  relay.send(['CLOSE', 'closing']);
  const other = await RawRelay.open(server.url, WAIT_MS);
  try {
    await other.publishAll(taggedEvents(tag, 1));
  } finally {
    other.close();
  }
  await assert.rejects(relay.next((m) => m[1] === 'closing' &&
    m[0] === 'EVENT', 'an EVENT after CLOSE', 500), /no an EVENT/);
});

test('reject_invalid_signature', async () => {
  const [ev] = taggedEvents(freshTag('badsig'), 1);
  const wrong = finalizeEvent({ ...ev, tags: ev.tags }, generateSecretKey());
  const bad = { ...ev, sig: wrong.sig };
  const r = await relay.publish(bad);
  assert.equal(r.ok, false, 'an event with a wrong signature was accepted');
  assert.match(r.message, /^invalid:/);
  assert.deepEqual(await relay.ids({ ids: [ev.id] }), []);
});

test('reject_invalid_event_id', async () => {
  const [ev] = taggedEvents(freshTag('badid'), 1);
  const bad = { ...ev, id: '0'.repeat(64) };
  const r = await relay.publish(bad);
  assert.equal(r.ok, false, 'an event with a wrong id was accepted');
  assert.match(r.message, /^invalid:/);
});
