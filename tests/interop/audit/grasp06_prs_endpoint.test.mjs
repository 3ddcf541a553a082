// grasp06_prs_endpoint.test.mjs: grasp-audit's GRASP-06 /prs/ endpoint
// cases (specs/grasp06/prs_endpoint.rs) against a whole graspd with
// NGIT_GRASP06_ENABLE: any well-formed /prs/<npub>/<id>.git clones as an
// empty repository, takes a push to refs/nostr/<event-id> and refuses
// any other ref (not with a 404), and a push whose commit is not the c
// tag of its PR event leaves no ref and the event unserved.

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { auditSuite, sleep, tagValue } from './fixtures.mjs';
import { freshPrsUrl, GRASP06_ON, prsUrl, randomHex64, unannouncedRepo,
  workspace } from './grasp06_fixtures.mjs';

const suite = auditSuite({ name: 'audit-g06prs', env: GRASP06_ON });

suite.test('prs_fetch_unknown_path_serves_empty_repo', async (c, server) => {
  const dir = join(c.tempDir('clone'), 'repo');
  c.git(c.work, 'clone', '-q', freshPrsUrl(server.httpUrl), dir);
  assert.equal(c.git(dir, 'for-each-ref'), '', 'the clone has refs');
});

suite.test('prs_push_refs_nostr_event_id_accepted', async (c, server) => {
  const ws = workspace(c);
  const url = freshPrsUrl(server.httpUrl);
  const ref = `refs/nostr/${randomHex64()}`;
  const r = c.git.try(ws.dir, 'push', url, `HEAD:${ref}`);
  assert.ok(r.ok, `push of ${ref} refused: ${r.stderr}`);
  assert.match(c.git(c.work, 'ls-remote', url, ref), new RegExp(ws.commit));
});

suite.test('prs_push_other_refs_rejected', async (c, server) => {
  const ws = workspace(c);
  for (const ref of ['refs/heads/main', 'refs/nostr/not-a-valid-event-id']) {
    const r = c.git.try(ws.dir, 'push', freshPrsUrl(server.httpUrl),
      `HEAD:${ref}`);
    assert.equal(r.ok, false, `push of ${ref} to /prs/ accepted`);
    // Refused by graspd's checks, not because /prs/ is missing.  The
    // URLs git quotes are left out: a port such as 40431 holds "404".
    const said = r.stderr.replace(/https?:\/\/\S+/g, '<url>').toLowerCase();
    assert.doesNotMatch(said, /not found|\b404\b/,
      `push of ${ref} failed as if /prs/ did not exist: ${r.stderr}`);
  }
});

suite.test('commit_mismatch_deletes_ref_and_blocks_promotion',
  async (c, server) => {
    const repo = unannouncedRepo('audit-grasp06-mismatch');
    const url = prsUrl(server.httpUrl, c.prAuthorKeys.npub,
      tagValue(repo, 'd'));
    const ws = workspace(c, url, 'commit A (the pushed one)');
    // The c tag names commit B, which nobody has.
    const ev = c.prEvent(repo, randomHex64(), { tags: [['clone', url]] });
    await c.publishOk(ev, 'the PR event');
    const ref = `refs/nostr/${ev.id}`;
    // Refused at once or taken and deleted after: either is right.
    c.git.try(ws.dir, 'push', 'origin', `HEAD:${ref}`);
    await sleep(500);
    assert.equal(c.git(c.work, 'ls-remote', url, ref), '',
      'the ref of the mismatched commit is still there');
    assert.equal(await c.served(ev.id), false,
      'the PR event was served despite the mismatch');
  });
