// nip01.test.mjs: grasp-audit's NIP-01 smoke cases
// (specs/grasp01/nip01_smoke.rs) against a whole graspd: the WebSocket at
// /, an accepted repository (ValidRepoServed) read back by id and by
// subscription, CLOSE, and events refused for a wrong signature or a
// wrong id.  The events of the refusal cases are ones graspd takes from
// anyone (kind 10317 grasp lists) so that only the broken signature or id
// can be the reason.

import assert from 'node:assert/strict';
import { auditSuite, Conn, newKeys, randomId, signEvent } from
  './fixtures.mjs';

const suite = auditSuite({ name: 'audit-nip01' });

// A user grasp list (10317) of fresh keys tagged t.
const graspList = (t) => signEvent(newKeys(), { kind: 10317,
  tags: [['t', t], ['g', 'wss://grasp.example']] });

suite.test('websocket_connection', async (_, server) => {
  const c = await Conn.open(server.wsUrl);
  assert.equal(c.ws.readyState, c.ws.OPEN);
  c.close();
});

suite.test('send_receive_event', async (c) => {
  const repo = await c.validRepoServed();
  const got = await c.query({ kinds: [30617], ids: [repo.id] });
  assert.deepEqual(got.map((e) => e.id), [repo.id]);
});

suite.test('create_subscription', async (c) => {
  const repo = await c.validRepoServed();
  const got = await c.query({ kinds: [30617], authors: [repo.pubkey] });
  assert.ok(got.some((e) => e.id === repo.id),
    'the announcement is not among the subscription\'s events');
});

// The reference only opens a subscription here; this also checks that
// after CLOSE a new matching event is not sent to it.
suite.test('close_subscription', async (c, server) => {
  const tag = `close-${randomId()}`;
  c.conn.send(['REQ', 'closing', { kinds: [10317], '#t': [tag] }]);
  await c.conn.next((m) => m[0] === 'EOSE' && m[1] === 'closing', 'EOSE');
  c.conn.send(['CLOSE', 'closing']);
  const other = await Conn.open(server.wsUrl);
  try {
    const r = await other.publish(graspList(tag));
    assert.ok(r.ok, `the grasp list was refused: ${r.message}`);
  } finally {
    other.close();
  }
  await assert.rejects(c.conn.next((m) => m[1] === 'closing' &&
    m[0] === 'EVENT', 'EVENT after CLOSE', 500), /no EVENT after CLOSE/);
});

suite.test('reject_invalid_signature', async (c) => {
  const ev = graspList(`badsig-${randomId()}`);
  const other = signEvent(newKeys(), { kind: ev.kind, tags: ev.tags });
  const r = await c.publish({ ...ev, sig: other.sig });
  assert.equal(r.ok, false, 'an event with a wrong signature was accepted');
  assert.match(r.message, /^invalid:/);
  assert.equal(await c.served(ev.id), false);
});

suite.test('reject_invalid_event_id', async (c) => {
  const ev = graspList(`badid-${randomId()}`);
  const r = await c.publish({ ...ev, id: '0'.repeat(64) });
  assert.equal(r.ok, false, 'an event with a wrong id was accepted');
  assert.match(r.message, /^invalid:/);
});
