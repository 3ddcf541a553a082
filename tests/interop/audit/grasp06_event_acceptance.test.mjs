// grasp06_event_acceptance.test.mjs: grasp-audit's GRASP-06 event
// acceptance cases (specs/grasp06/event_acceptance.rs) against a whole
// graspd with NGIT_GRASP06_ENABLE: a PR for a repository nobody announced
// here is taken when its clone tag names this server's
// /prs/<signer-npub>/<d>.git, and held in purgatory (not served) until
// its git data comes; with a clone tag elsewhere it is refused.

import assert from 'node:assert/strict';
import { auditSuite, sleep, tagValue } from './fixtures.mjs';
import { GRASP06_ON, prsUrl, randomHex64, unannouncedRepo } from
  './grasp06_fixtures.mjs';

const suite = auditSuite({ name: 'audit-g06acc', env: GRASP06_ON });

// A PR by c's PR author for a repository nobody announced, its clone tag
// naming host's /prs/ path of the author and the repository's identifier.
function orphanPr(c, host) {
  const repo = unannouncedRepo();
  const url = prsUrl(host, c.prAuthorKeys.npub, tagValue(repo, 'd'));
  return c.prEvent(repo, randomHex64(), { tags: [['clone', url]] });
}

suite.test('pr_event_accepted_when_clone_tag_names_prs_endpoint',
  async (c, server) => {
    await c.publishOk(orphanPr(c, server.httpUrl), 'the PR event');
  });

suite.test('pr_event_accepted_via_relaxation_is_held_in_purgatory',
  async (c, server) => {
    const ev = orphanPr(c, server.httpUrl);
    const r = await c.sendNotePurgatory(ev, 'the PR event');
    assert.match(r.message, /^purgatory: /);
    // Still unserved a moment later (the reference looks after 300 ms).
    await sleep(300);
    assert.ok(r.held && !(await c.served(ev.id)),
      'the PR event was served before its git data');
  });

suite.test('pr_event_rejected_when_clone_tag_does_not_name_prs_endpoint',
  async (c) => {
    // Same /prs/ path shape, on a host that is not this server.
    const r = await c.publish(
      orphanPr(c, 'https://other-relay.example.invalid'));
    assert.equal(r.ok, false, 'a PR naming another host\'s /prs/ was taken');
  });
