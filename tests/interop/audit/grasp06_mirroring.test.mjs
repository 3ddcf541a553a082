// grasp06_mirroring.test.mjs: grasp-audit's GRASP-06 mirroring cases
// (specs/grasp06/mirroring.rs) against a whole graspd with
// NGIT_GRASP06_ENABLE, on a repository announced, stated and pushed here
// (ValidRepoServed): a PR's refs/nostr/<id> pushed to its author's /prs/
// path (before or after the PR event) releases the event and appears in
// the announced repository; a PR ref pushed to the announced repository
// does not appear under /prs/.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { generateSecretKey, getPublicKey } from 'nostr-tools/pure';
import { npubEncode } from 'nostr-tools/nip19';
import { RawRelay, gitWith } from '../util.mjs';
import { startGraspd, validRepoServed } from './_local.mjs';
import { prEvent, prsUrl, waitFor, workspace } from './grasp06_fixtures.mjs';

let server;
let git;
let relay;
before(async () => {
  server = await startGraspd({ NGIT_GRASP06_ENABLE: 'true' });
  git = gitWith(server.home);
  relay = await RawRelay.open(server.url, 5000);
});
after(async () => {
  relay?.close();
  await server?.stop();
});

const served = async (id) => (await relay.ids({ ids: [id] })).length === 1;

// The announced repository, a PR author, the author's /prs/ URL for it, a
// local commit to push there and the PR event naming it (not published).
async function prSetup(msg) {
  const repo = await validRepoServed(server);
  const author = generateSecretKey();
  const url = prsUrl(server.http, npubEncode(getPublicKey(author)), repo.id);
  const ws = workspace(git, server.dir, url, msg);
  const ev = prEvent(author, {
    a: `30617:${repo.event.pubkey}:${repo.id}`,
    c: ws.commit,
    clone: url,
    content: msg,
  });
  return { repo, url, ws, ev, ref: `refs/nostr/${ev.id}` };
}

// Fetches ref from the announced repository's URL into a new repository
// and checks it is commit, object included.
function assertMirrored(cloneUrl, ref, commit) {
  const dir = mkdtempSync(join(server.dir, 'verify-'));
  git(dir, 'init', '-q');
  git(dir, 'fetch', '-q', cloneUrl, `${ref}:${ref}`);
  git(dir, 'cat-file', '-e', commit);
  assert.equal(git(dir, 'rev-parse', ref), commit);
}

// The mirror may trail the release a little: fetch until it is there.
async function mirrored(cloneUrl, ref) {
  return waitFor(() => git(server.dir, 'ls-remote', cloneUrl, ref) !== '');
}

test('prs_push_mirrors_to_announced_repo', async () => {
  const s = await prSetup('PR via /prs/ mirrored to the announced repo');
  const r = await relay.publish(s.ev);
  assert.ok(r.ok, `the PR event was refused: ${r.message}`);
  git(s.ws.dir, 'push', '-q', s.url, `HEAD:${s.ref}`);
  assert.ok(await waitFor(() => served(s.ev.id)),
    'the PR event was not released by its /prs/ push');
  assert.ok(await mirrored(s.repo.cloneUrl, s.ref), 'no mirror');
  assertMirrored(s.repo.cloneUrl, s.ref, s.ws.commit);
});

test('prs_push_then_pr_event_promotes_and_mirrors', async () => {
  const s = await prSetup('git-first PR via /prs/');
  git(s.ws.dir, 'push', '-q', s.url, `HEAD:${s.ref}`);
  const r = await relay.publish(s.ev);
  assert.ok(r.ok, `the PR event was refused: ${r.message}`);
  assert.ok(await waitFor(() => served(s.ev.id)),
    'the PR event, its /prs/ push first, was not served');
  assert.ok(await mirrored(s.repo.cloneUrl, s.ref), 'no mirror');
  assertMirrored(s.repo.cloneUrl, s.ref, s.ws.commit);
});

// PREvent2Served: a PR with no clone tag, held in purgatory, released by
// a push of its root commit to the announced repository's own URL.
test('standard_push_does_not_mirror_to_prs', async () => {
  const repo = await validRepoServed(server);
  const author = generateSecretKey();
  const ws = workspace(git, server.dir, repo.cloneUrl,
    'PR test deterministic commit 2');
  const ev = prEvent(author, {
    a: `30617:${repo.event.pubkey}:${repo.id}`,
    c: ws.commit,
    content: 'Test PR 2',
  });
  const r = await relay.publish(ev);
  assert.ok(r.ok, `the PR event was refused: ${r.message}`);
  assert.equal(await served(ev.id), false, 'served before its git data');
  const ref = `refs/nostr/${ev.id}`;
  git(ws.dir, 'push', '-q', repo.cloneUrl, `HEAD:${ref}`);
  assert.ok(await waitFor(() => served(ev.id)),
    'the PR event was not released by its push');
  const url = prsUrl(server.http, npubEncode(getPublicKey(author)), repo.id);
  assert.equal(git(server.dir, 'ls-remote', url, ref), '',
    'the standard push appeared under /prs/');
});
