// grasp06_prs_endpoint.test.mjs: grasp-audit's GRASP-06 /prs/ endpoint
// cases (specs/grasp06/prs_endpoint.rs) against a whole graspd with
// NGIT_GRASP06_ENABLE: any well-formed /prs/<npub>/<id>.git clones as an
// empty repository, takes a push to refs/nostr/<event-id> and refuses
// any other ref (not with a 404), and a push whose commit is not the c
// tag of its PR event leaves no ref and the event unserved.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { generateSecretKey, getPublicKey } from 'nostr-tools/pure';
import { npubEncode } from 'nostr-tools/nip19';
import { RawRelay, gitWith } from '../util.mjs';
import { startGraspd } from './_local.mjs';
import { freshPrsUrl, prEvent, prsUrl, randomHex64, workspace } from
  './grasp06_fixtures.mjs';

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

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// git push of HEAD to refname at url from dir: { ok, stderr }.
function push(dir, url, refname) {
  try {
    git(dir, 'push', '-q', url, `HEAD:${refname}`);
    return { ok: true, stderr: '' };
  } catch (err) {
    return { ok: false, stderr: String(err.stderr) };
  }
}

test('prs_fetch_unknown_path_serves_empty_repo', () => {
  const dir = join(mkdtempSync(join(server.dir, 'clone-')), 'c');
  git(server.dir, 'clone', '-q', freshPrsUrl(server.http), dir);
  assert.equal(git(dir, 'for-each-ref'), '', 'the clone has refs');
});

test('prs_push_refs_nostr_event_id_accepted', () => {
  const ws = workspace(git, server.dir);
  const url = freshPrsUrl(server.http);
  const ref = `refs/nostr/${randomHex64()}`;
  const r = push(ws.dir, url, ref);
  assert.ok(r.ok, `push of ${ref} refused: ${r.stderr}`);
  assert.match(git(server.dir, 'ls-remote', url, ref), new RegExp(ws.commit));
});

test('prs_push_other_refs_rejected', () => {
  const ws = workspace(git, server.dir);
  for (const ref of ['refs/heads/main', 'refs/nostr/not-a-valid-event-id']) {
    const url = freshPrsUrl(server.http);
    const r = push(ws.dir, url, ref);
    assert.equal(r.ok, false, `push of ${ref} to /prs/ accepted`);
    // Refused by graspd's checks, not because /prs/ is missing.
    assert.doesNotMatch(r.stderr.toLowerCase(), /not found|404/,
      `push of ${ref} failed as if /prs/ did not exist: ${r.stderr}`);
  }
});

test('commit_mismatch_deletes_ref_and_blocks_promotion', async () => {
  const author = generateSecretKey();
  const id = `audit-grasp06-mismatch-${randomUUID()}`;
  const url = prsUrl(server.http, npubEncode(getPublicKey(author)), id);
  const ws = workspace(git, server.dir, url, 'commit A (the pushed one)');
  const ev = prEvent(author, {
    a: `30617:${randomHex64()}:${id}`,
    c: randomHex64(),
    clone: url,
  });
  const ok = await relay.publish(ev);
  assert.ok(ok.ok, `the PR event was refused: ${ok.message}`);
  const ref = `refs/nostr/${ev.id}`;
  // Refused at once or taken and deleted after: either is right.
  push(ws.dir, url, ref);
  await sleep(500);
  assert.equal(git(server.dir, 'ls-remote', url, ref), '',
    'the ref of the mismatched commit is still there');
  assert.deepEqual(await relay.ids({ ids: [ev.id] }), [],
    'the PR event was served despite the mismatch');
});
