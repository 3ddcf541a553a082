// cors.test.mjs: grasp-audit's GRASP-01 CORS cases (specs/grasp01/cors.rs)
// against a whole graspd: the three Access-Control-Allow-* headers on
// every answer, a 404 of the git service included, and 204 with the same
// headers for OPTIONS on the relay root and the git endpoints.

import assert from 'node:assert/strict';
import { auditSuite, newKeys } from './fixtures.mjs';
import { infoRefs, sentRepoUrl } from './grasp06_fixtures.mjs';

const suite = auditSuite({ name: 'audit-cors' });

// A git service path of a repository nobody announced (and no npub).
const MISSING_REPO = '/npub1test/nonexistent.git';

function checkOrigin(res, where) {
  assert.equal(res.headers.get('access-control-allow-origin'), '*',
    `Access-Control-Allow-Origin on ${where}`);
}

function checkMethods(res, where) {
  const v = res.headers.get('access-control-allow-methods');
  assert.ok(v, `no Access-Control-Allow-Methods on ${where}`);
  const methods = v.split(',').map((s) => s.trim());
  for (const m of ['GET', 'POST'])
    assert.ok(methods.includes(m), `${m} missing from "${v}" on ${where}`);
}

function checkHeaders(res, where) {
  const v = res.headers.get('access-control-allow-headers');
  assert.ok(v, `no Access-Control-Allow-Headers on ${where}`);
  assert.match(v, /content-type/i, `Content-Type missing on ${where}`);
}

// GET of server's root and of git endpoints that do not exist, each
// checked by check; beyond the reference, also the NIP-11 document and a
// 405 (POST to the root): "all responses".
async function onRootAndMissingRepo(server, check) {
  const root = await fetch(`${server.httpUrl}/`);
  check(root, 'the root');
  const nip11 = await fetch(`${server.httpUrl}/`,
    { headers: { Accept: 'application/nostr+json' } });
  assert.equal(nip11.status, 200);
  check(nip11, 'the NIP-11 document');
  const post = await fetch(`${server.httpUrl}/`, { method: 'POST' });
  assert.equal(post.status, 405);
  check(post, 'a 405 of the root');
  const missing = await infoRefs(`${server.httpUrl}${MISSING_REPO}`);
  // npub1test is no npub: graspd answers 400, where the reference's own
  // server says 404; the case wants the headers on an error either way.
  assert.ok(missing.status >= 400, `info/refs answered ${missing.status}`);
  check(missing, `a ${missing.status} of info/refs`);
  // And a real 404: a well-formed npub's repository nobody announced.
  const { npub } = newKeys();
  const none = await infoRefs(`${server.httpUrl}/${npub}/nonexistent.git`);
  assert.equal(none.status, 404);
  check(none, 'a 404 of info/refs');
}

suite.test('cors_allow_origin', (_, server) =>
  onRootAndMissingRepo(server, checkOrigin));

suite.test('cors_allow_methods', (_, server) =>
  onRootAndMissingRepo(server, checkMethods));

suite.test('cors_allow_headers', (_, server) =>
  onRootAndMissingRepo(server, checkHeaders));

suite.test('cors_options_preflight', async (_, server) => {
  // The reference's three, then (beyond it) the NIP-11 document's
  // preflight, for its Accept header, and receive-pack's.
  for (const [path, method, headers] of [['/', 'POST'],
    ['/npub1test/test.git/git-upload-pack', 'POST'],
    ['/npub1test/test.git/info/refs', 'GET'],
    ['/', 'GET', 'accept'],
    ['/npub1test/test.git/git-receive-pack', 'POST', 'content-type']]) {
    const res = await fetch(`${server.httpUrl}${path}`, {
      method: 'OPTIONS',
      headers: {
        Origin: 'https://example.com',
        'Access-Control-Request-Method': method,
        ...(headers ? { 'Access-Control-Request-Headers': headers } : {}),
      },
    });
    assert.equal(res.status, 204, `OPTIONS ${path}`);
    checkOrigin(res, `OPTIONS ${path}`);
    checkMethods(res, `OPTIONS ${path}`);
    checkHeaders(res, `OPTIONS ${path}`);
  }
});

// grasp-audit's test_cors_on_real_repo: the same headers on info/refs of
// an announced repository (ValidRepoSent: no git data yet); beyond the
// reference, also on receive-pack's advertisement and an upload-pack
// POST's answer.
suite.test('test_cors_on_real_repo', async (c) => {
  const url = await sentRepoUrl(c);
  for (const [what, res] of [
    ['info/refs', await infoRefs(url)],
    ['receive-pack info/refs',
      await fetch(`${url}/info/refs?service=git-receive-pack`)],
    ['an upload-pack POST', await fetch(`${url}/git-upload-pack`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-git-upload-pack-request' },
      body: '0000',
    })]]) {
    assert.equal(res.status, 200, what);
    checkOrigin(res, what);
    checkMethods(res, what);
    checkHeaders(res, what);
    await res.arrayBuffer();
  }
});
