// nip11.test.mjs: grasp-audit's GRASP-01 NIP-11 cases
// (specs/grasp01/nip11_document.rs): the relay information document at
// / for Accept: application/nostr+json, with the NIP-11 basics and the
// GRASP-01 fields supported_grasps, repo_acceptance_criteria and curation.

import assert from 'node:assert/strict';
import { auditSuite } from './fixtures.mjs';
import { nip11Doc } from './grasp06_fixtures.mjs';

const suite = auditSuite({ name: 'audit-nip11' });

suite.test('nip11_document_exists', async (_, server) => {
  const doc = await nip11Doc(server.httpUrl);
  for (const field of ['name', 'description', 'software', 'version'])
    assert.ok(field in doc, `NIP-11 field ${field} missing`);
});

suite.test('nip11_supported_grasps_field', async (_, server) => {
  const { supported_grasps: grasps } = await nip11Doc(server.httpUrl);
  assert.ok(Array.isArray(grasps), 'supported_grasps is not an array');
  assert.ok(grasps.includes('GRASP-01'), `GRASP-01 not in ${grasps}`);
  for (const g of grasps)
    assert.match(g, /^GRASP-\d{2}$/, `malformed entry ${JSON.stringify(g)}`);
});

suite.test('nip11_repo_acceptance_criteria_field', async (_, server) => {
  const { repo_acceptance_criteria: c } = await nip11Doc(server.httpUrl);
  assert.equal(typeof c, 'string', 'repo_acceptance_criteria not a string');
  assert.ok(c.trim().length > 0, 'repo_acceptance_criteria is empty');
});

suite.test('nip11_curation_field', async (_, server) => {
  const doc = await nip11Doc(server.httpUrl);
  // Absent (no curation beyond SPAM prevention) or a non-empty string.
  if ('curation' in doc) {
    assert.equal(typeof doc.curation, 'string', 'curation not a string');
    assert.ok(doc.curation.trim().length > 0, 'curation is empty');
  }
});
