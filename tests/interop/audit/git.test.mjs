// git.test.mjs: grasp-audit's GRASP-01 git clone and filter cases
// (specs/grasp01/git_clone.rs and git_filter.rs) against a whole graspd,
// each on a freshly announced repository with no git data yet
// (ValidRepoSent), as the reference builds them: clone, the URL shape,
// the allow-*-sha1-in-want and filter capabilities of the upload-pack
// advertisement, a --filter=blob:none clone and a --filter=tree:0 fetch.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { gitWith } from '../util.mjs';
import { startGraspd, validRepoSent, validRepoServed } from './_local.mjs';

let server;
let git;
before(async () => {
  server = await startGraspd();
  git = gitWith(server.home);
});
after(async () => { await server?.stop(); });

// A new empty directory to clone into.
const cloneDir = () => join(mkdtempSync(join(server.dir, 'clone-')), 'c');

// The v0 upload-pack advertisement of repo (what a client without
// Git-Protocol: version=2 reads).
async function advertisement(repo) {
  const res = await fetch(`${repo.cloneUrl}/info/refs?service=git-upload-pack`);
  assert.equal(res.status, 200, 'info/refs');
  return res.text();
}

test('test_basic_git_clone', async () => {
  const repo = await validRepoSent(server);
  const dir = cloneDir();
  git(server.dir, 'clone', '-q', repo.cloneUrl, dir);
  assert.ok(existsSync(join(dir, '.git')), 'the clone has no .git');
});

test('test_clone_url_format', async () => {
  const repo = await validRepoSent(server);
  assert.equal(repo.cloneUrl, `${server.http}/${repo.npub}/${repo.id}.git`);
  git(server.dir, 'ls-remote', repo.cloneUrl);
  assert.throws(() => git(server.dir, 'clone', '-q',
    `${server.http}/invalid/path`, cloneDir()),
  'a clone of /invalid/path succeeded');
});

// Divergence: the reference checks the advertisement of a repository
// with no git data (ValidRepoSent).  Before git 2.41, upload-pack's v0
// advertisement of an empty repository is a bare flush, with no
// capabilities line at all (git 2.41 added "capabilities^{}" there), and
// graspd runs the system's git (Debian's 2.39): no capability can be
// checked on it.  With no ref there is no oid to want either, so the
// GRASP-01 rule is checked where it applies: a repository with data
// (ValidRepoServed).
test('test_sha1_capabilities_advertised', async () => {
  const body = await advertisement(await validRepoServed(server));
  assert.match(body, /allow-reachable-sha1-in-want/);
  assert.match(body, /allow-tip-sha1-in-want/);
});

// The same divergence as test_sha1_capabilities_advertised.
test('test_filter_capability_advertised', async () => {
  const body = await advertisement(await validRepoServed(server));
  assert.match(body, /\bfilter\b/);
});

test('test_filtered_clone_succeeds', async () => {
  const repo = await validRepoSent(server);
  const dir = cloneDir();
  git(server.dir, 'clone', '-q', '--filter=blob:none', repo.cloneUrl, dir);
  assert.ok(existsSync(join(dir, '.git')), 'the clone has no .git');
});

test('test_filtered_fetch_succeeds', async () => {
  const repo = await validRepoSent(server);
  const dir = cloneDir();
  git(server.dir, 'clone', '-q', '--depth=1', repo.cloneUrl, dir);
  git(dir, 'fetch', '-q', '--filter=tree:0', 'origin');
});
