// repo_creation.test.mjs: grasp-audit's GRASP-01 repository creation
// cases (specs/grasp01/repository_creation.rs) against a whole graspd:
// an accepted announcement (ValidRepoSent) gets a bare repository served
// by smart HTTP at once and a web page at its URL (linking to a git
// nostr client), and a repository nobody announced gets a 404 page.

import assert from 'node:assert/strict';
import { auditSuite } from './fixtures.mjs';
import { infoRefs, sentRepoUrl } from './grasp06_fixtures.mjs';

const suite = auditSuite({ name: 'audit-repo' });

suite.test('test_bare_repo_created_on_announcement', async (c) => {
  const res = await infoRefs(await sentRepoUrl(c));
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '',
    /application\/x-git-upload-pack-advertisement/);
  await res.arrayBuffer();
});

suite.test('test_webpage_served_for_existing_repo', async (c) => {
  const res = await fetch(await sentRepoUrl(c));
  assert.ok(res.ok, `the repository page answered ${res.status}`);
  assert.match(res.headers.get('content-type') ?? '', /text\/html/);
  // Beyond the reference (a 2xx only): GRASP-01 wants the page to link
  // to a git nostr client, i.e. a link off this server or a nostr: one.
  const page = await res.text();
  const here = new URL(c.server.httpUrl).host;
  const links = [...page.matchAll(/href="([^"]+)"/g)].map((m) => m[1]);
  assert.ok(links.some((l) => /^nostr:/.test(l) ||
    (/^https?:\/\//.test(l) && new URL(l).host !== here)),
  'the repository page links to no git nostr client');
});

suite.test('test_404_for_nonexistent_repo', async (c) => {
  await c.validRepoSent();
  const res = await fetch(c.cloneUrl('nonexistent-repo-12345'));
  assert.equal(res.status, 404);
  assert.match(res.headers.get('content-type') ?? '', /text\/html/,
    'the 404 is no page');
  await res.arrayBuffer();
});
