// grasp06_event_acceptance.test.mjs: grasp-audit's GRASP-06 event
// acceptance cases (specs/grasp06/event_acceptance.rs) against a whole
// graspd with NGIT_GRASP06_ENABLE: a PR for a repository nobody announced
// here is taken when its clone tag names this server's
// /prs/<signer-npub>/<d>.git, and held in purgatory (not served) until
// its git data comes; with a clone tag elsewhere it is refused.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { generateSecretKey, getPublicKey } from 'nostr-tools/pure';
import { npubEncode } from 'nostr-tools/nip19';
import { RawRelay } from '../util.mjs';
import { startGraspd } from './_local.mjs';
import { prEvent, prsUrl, randomHex64 } from './grasp06_fixtures.mjs';

let server;
let relay;
before(async () => {
  server = await startGraspd({ NGIT_GRASP06_ENABLE: 'true' });
  relay = await RawRelay.open(server.url, 5000);
});
after(async () => {
  relay?.close();
  await server?.stop();
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A PR of a fresh author for a coordinate nobody announced here, its
// clone tag naming host's /prs/ path of the author and identifier.
function orphanPr(host) {
  const author = generateSecretKey();
  const id = `audit-grasp06-${randomUUID()}`;
  return prEvent(author, {
    a: `30617:${randomHex64()}:${id}`,
    c: randomHex64(),
    clone: prsUrl(host, npubEncode(getPublicKey(author)), id),
  });
}

test('pr_event_accepted_when_clone_tag_names_prs_endpoint', async () => {
  const r = await relay.publish(orphanPr(server.http));
  assert.ok(r.ok, `the PR event was refused: ${r.message}`);
});

test('pr_event_accepted_via_relaxation_is_held_in_purgatory', async () => {
  const ev = orphanPr(server.http);
  const r = await relay.publish(ev);
  assert.ok(r.ok, `the PR event was refused: ${r.message}`);
  await sleep(300);
  assert.deepEqual(await relay.ids({ ids: [ev.id] }), [],
    'the PR event was served before its git data');
});

test('pr_event_rejected_when_clone_tag_does_not_name_prs_endpoint',
  async () => {
    // Same /prs/ path shape, on a host that is not this server.
    const r = await relay.publish(
      orphanPr('https://other-relay.example.invalid'));
    assert.equal(r.ok, false, 'a PR naming another host\'s /prs/ was taken');
  });
