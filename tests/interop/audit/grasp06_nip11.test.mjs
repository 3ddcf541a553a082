// grasp06_nip11.test.mjs: grasp-audit's GRASP-06 discovery cases
// (specs/grasp06/nip11.rs and the gate of prs_endpoint.rs): a graspd with
// NGIT_GRASP06_ENABLE lists GRASP-06 in NIP-11; one without does not, and
// its /prs/ namespace is a 404.

import assert from 'node:assert/strict';
import { auditSuite } from './fixtures.mjs';
import { advertisesGrasp, freshPrsUrl, GRASP06_ON, infoRefs, nip11Doc }
  from './grasp06_fixtures.mjs';

const on = auditSuite({ name: 'audit-g06on', env: GRASP06_ON });
const off = auditSuite({ name: 'audit-g06off' });

on.test('nip11_advertises_grasp_06_when_enabled', async (_, server) => {
  assert.ok(advertisesGrasp(await nip11Doc(server.httpUrl), 'GRASP-06'),
    'GRASP-06 enabled but not in supported_grasps');
});

// The reference passes this case at once on a relay that advertises
// GRASP-06, so it is run here on the graspd without it, where the gate
// applies.
off.test('prs_namespace_404_when_grasp06_not_advertised',
  async (_, server) => {
    assert.equal(advertisesGrasp(await nip11Doc(server.httpUrl), 'GRASP-06'),
      false, 'GRASP-06 advertised though not enabled');
    const res = await infoRefs(freshPrsUrl(server.httpUrl));
    assert.equal(res.status, 404);
    await res.arrayBuffer();
  });
