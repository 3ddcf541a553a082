// grasp06_nip11.test.mjs: grasp-audit's GRASP-06 discovery cases
// (specs/grasp06/nip11.rs and the gate of prs_endpoint.rs): a graspd with
// NGIT_GRASP06_ENABLE lists GRASP-06 in NIP-11; one without does not, and
// its /prs/ namespace is a 404.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startGraspd } from './fixtures.mjs';
import { advertisesGrasp, freshPrsUrl, nip11Doc, startGrasp06 } from
  './grasp06_fixtures.mjs';

let on;
let off;
before(async () => {
  [on, off] = await Promise.all([
    startGrasp06('g06on'),
    startGraspd({ name: 'g06off' })]);
});
after(async () => { await Promise.all([on?.stop(), off?.stop()]); });

test('nip11_advertises_grasp_06_when_enabled', async () => {
  assert.ok(advertisesGrasp(await nip11Doc(on.httpUrl), 'GRASP-06'),
    'GRASP-06 enabled but not in supported_grasps');
});

// The reference passes this case at once on a relay that advertises
// GRASP-06, so it is run here on the graspd without it, where the gate
// applies.
test('prs_namespace_404_when_grasp06_not_advertised', async () => {
  assert.equal(advertisesGrasp(await nip11Doc(off.httpUrl), 'GRASP-06'),
    false, 'GRASP-06 advertised though not enabled');
  const res = await fetch(`${freshPrsUrl(off.httpUrl)}/info/refs` +
    '?service=git-upload-pack');
  assert.equal(res.status, 404);
  await res.arrayBuffer();
});
