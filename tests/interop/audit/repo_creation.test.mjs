// repo_creation.test.mjs: grasp-audit's GRASP-01 repository creation
// cases (specs/grasp01/repository_creation.rs) against a whole graspd:
// an accepted announcement gets a bare repository served by smart HTTP
// at once, a web page at its URL, and a repository nobody announced a
// 404 page.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startGraspd, validRepoSent } from './_local.mjs';

let server;
before(async () => { server = await startGraspd(); });
after(async () => { await server?.stop(); });

test('test_bare_repo_created_on_announcement', async () => {
  const repo = await validRepoSent(server);
  const res = await fetch(`${repo.cloneUrl}/info/refs?service=git-upload-pack`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '',
    /application\/x-git-upload-pack-advertisement/);
  await res.arrayBuffer();
});

test('test_webpage_served_for_existing_repo', async () => {
  const repo = await validRepoSent(server);
  const res = await fetch(repo.cloneUrl);
  assert.ok(res.ok, `the repository page answered ${res.status}`);
  assert.match(res.headers.get('content-type') ?? '', /text\/html/);
  await res.arrayBuffer();
});

test('test_404_for_nonexistent_repo', async () => {
  const repo = await validRepoSent(server);
  const res = await fetch(`${server.http}/${repo.npub}/nonexistent-repo-12345.git`);
  assert.equal(res.status, 404);
  await res.arrayBuffer();
});
