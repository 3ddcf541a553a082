// git.test.mjs: grasp-audit's GRASP-01 git clone and filter cases
// (specs/grasp01/git_clone.rs and git_filter.rs) against a whole graspd,
// each on a freshly announced repository with no git data yet
// (ValidRepoSent), as the reference builds them: clone, the URL shape,
// the allow-*-sha1-in-want and filter capabilities of the upload-pack
// advertisement, a --filter=blob:none clone and a --filter=tree:0 fetch.

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { auditSuite, tagValue } from './fixtures.mjs';
import { infoRefs, sentRepoUrl } from './grasp06_fixtures.mjs';

const suite = auditSuite({ name: 'audit-git' });

// A new directory path to clone into.
const cloneDir = (c) => join(c.tempDir('clone'), 'repo');

// The git URL of client c's announced repository repo.
const urlOf = (c, repo) => c.cloneUrl(tagValue(repo, 'd'));

// The v0 upload-pack advertisement of url (what a client without
// Git-Protocol: version=2 reads).
async function advertisement(url) {
  const res = await infoRefs(url);
  assert.equal(res.status, 200, 'info/refs');
  return res.text();
}

suite.test('test_basic_git_clone', async (c) => {
  const dir = cloneDir(c);
  c.git(c.work, 'clone', '-q', await sentRepoUrl(c), dir);
  assert.ok(existsSync(join(dir, '.git')), 'the clone has no .git');
});

suite.test('test_clone_url_format', async (c, server) => {
  const repo = await c.validRepoSent();
  const url = urlOf(c, repo);
  assert.equal(url,
    `${server.httpUrl}/${c.keys.npub}/${tagValue(repo, 'd')}.git`);
  c.git(c.work, 'ls-remote', url);
  const bad = c.git.try(c.work, 'clone', '-q',
    `${server.httpUrl}/invalid/path`, cloneDir(c));
  assert.equal(bad.ok, false, 'a clone of /invalid/path succeeded');
});

// Divergence: the reference checks the advertisement of a repository
// with no git data (ValidRepoSent).  Before git 2.41, upload-pack's v0
// advertisement of an empty repository is a bare flush, with no
// capabilities line at all (git 2.41 added "capabilities^{}" there), and
// graspd runs the system's git (Debian's 2.39): no capability can be
// checked on it.  With no ref there is no oid to want either, so the
// GRASP-01 rule is checked where it applies: a repository with data
// (ValidRepoServed).
suite.test('test_sha1_capabilities_advertised', async (c) => {
  const body = await advertisement(urlOf(c, await c.validRepoServed()));
  assert.match(body, /allow-reachable-sha1-in-want/);
  assert.match(body, /allow-tip-sha1-in-want/);
});

// The same divergence as test_sha1_capabilities_advertised.
suite.test('test_filter_capability_advertised', async (c) => {
  const body = await advertisement(urlOf(c, await c.validRepoServed()));
  assert.match(body, /\bfilter\b/);
});

suite.test('test_filtered_clone_succeeds', async (c) => {
  const dir = cloneDir(c);
  c.git(c.work, 'clone', '-q', '--filter=blob:none',
    await sentRepoUrl(c), dir);
  assert.ok(existsSync(join(dir, '.git')), 'the clone has no .git');
});

suite.test('test_filtered_fetch_succeeds', async (c) => {
  const dir = cloneDir(c);
  c.git(c.work, 'clone', '-q', '--depth=1',
    await sentRepoUrl(c), dir);
  c.git(dir, 'fetch', '-q', '--filter=tree:0', 'origin');
});
