// grasp06_mirroring.test.mjs: grasp-audit's GRASP-06 mirroring cases
// (specs/grasp06/mirroring.rs) against a whole graspd with
// NGIT_GRASP06_ENABLE, on a repository announced, stated and pushed here
// (ValidRepoServed): a PR's refs/nostr/<id> pushed to its author's /prs/
// path (before or after the PR event) releases the event and appears in
// the announced repository; a PR ref pushed to the announced repository
// (PREvent2Served) does not appear under /prs/.

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { auditSuite, deterministicCommit, tagValue, waitFor } from
  './fixtures.mjs';
import { GRASP06_ON, prsUrl, workspace } from './grasp06_fixtures.mjs';

const suite = auditSuite({ name: 'audit-g06mir', env: GRASP06_ON });

// c's served repository, its PR author's /prs/ URL for it, a local
// commit to push there and the PR event naming it (not published).
async function prSetup(c, msg) {
  const repo = await c.validRepoServed();
  const id = tagValue(repo, 'd');
  const url = prsUrl(c.server.httpUrl, c.prAuthorKeys.npub, id);
  const ws = workspace(c, url, msg);
  const ev = c.prEvent(repo, ws.commit, { tags: [['clone', url]] });
  return { cloneUrl: c.cloneUrl(id), url, ws, ev, ref: `refs/nostr/${ev.id}` };
}

// Waits for ref at the announced repository (the mirror may trail the
// release a little), then fetches it into a new repository: it must be
// commit, object included.
async function assertMirrored(c, cloneUrl, ref, commit) {
  assert.ok(await waitFor(() =>
    c.git(c.work, 'ls-remote', cloneUrl, ref) !== ''), `no ${ref} mirrored`);
  const dir = join(c.tempDir('verify'), 'repo');
  c.git(c.work, 'init', '-q', dir);
  c.git(dir, 'fetch', '-q', cloneUrl, `${ref}:${ref}`);
  c.git(dir, 'cat-file', '-e', commit);
  assert.equal(c.git(dir, 'rev-parse', ref), commit);
}

suite.test('prs_push_mirrors_to_announced_repo', async (c) => {
  const s = await prSetup(c, 'PR via /prs/ mirrored to the announced repo');
  await c.publishOk(s.ev, 'the PR event');
  c.git(s.ws.dir, 'push', '-q', 'origin', `HEAD:${s.ref}`);
  assert.ok(await c.servedWithin(s.ev.id),
    'the PR event was not released by its /prs/ push');
  await assertMirrored(c, s.cloneUrl, s.ref, s.ws.commit);
});

suite.test('prs_push_then_pr_event_promotes_and_mirrors', async (c) => {
  const s = await prSetup(c, 'git-first PR via /prs/');
  c.git(s.ws.dir, 'push', '-q', 'origin', `HEAD:${s.ref}`);
  await c.publishOk(s.ev, 'the PR event');
  assert.ok(await c.servedWithin(s.ev.id),
    'the PR event, its /prs/ push first, was not served');
  await assertMirrored(c, s.cloneUrl, s.ref, s.ws.commit);
});

// PREvent2Served: a PR with no clone tag, tip the pr2 deterministic root
// commit, held in purgatory and released by a push of that commit to the
// announced repository's own URL.
suite.test('standard_push_does_not_mirror_to_prs', async (c, server) => {
  const repo = await c.validRepoServed();
  const id = tagValue(repo, 'd');
  const dir = c.cloneRepo(id);
  const commit = deterministicCommit(c.git, dir, 'pr2', { orphan: true });
  const ev = c.prEvent(repo, commit);
  const sent = await c.sendNotePurgatory(ev, 'PR event 2');
  assert.ok(sent.held, 'PR event 2 was served before its git data');
  const ref = `refs/nostr/${ev.id}`;
  c.git(dir, 'push', '-q', 'origin', `main:${ref}`);
  assert.ok(await c.servedWithin(ev.id),
    'PR event 2 was not released by its push');
  const r = c.git.try(c.work, 'ls-remote',
    prsUrl(server.httpUrl, c.prAuthorKeys.npub, id), ref);
  assert.ok(r.ok, `ls-remote of /prs/ failed: ${r.stderr}`);
  assert.equal(r.stdout, '', 'the standard push appeared under /prs/');
});
