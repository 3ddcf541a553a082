// grasp06_fixtures.mjs: what grasp-audit's GRASP-06 cases build besides
// fixtures.mjs's (specs/grasp06/fixtures.rs and the cases' own helpers):
// the NIP-11 document and its supported_grasps, fresh /prs/ URLs, PR events
// (kind 1618) with a, c and clone tags, and a local repository of one
// commit to push from.

import { writeFileSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { finalizeEvent, generateSecretKey, getPublicKey } from
  'nostr-tools/pure';
import { npubEncode } from 'nostr-tools/nip19';

// The NIP-11 document served at http (http://host:port), parsed; throws
// unless it is a 200 with JSON.
export async function nip11Doc(http) {
  const res = await fetch(`${http}/`, {
    headers: { Accept: 'application/nostr+json' },
  });
  assert200(res, 'NIP-11');
  return res.json();
}

function assert200(res, what) {
  if (res.status !== 200)
    throw new Error(`${what} answered ${res.status}, not 200`);
}

// 1 if the NIP-11 document doc lists grasp (e.g. 'GRASP-06').
export function advertisesGrasp(doc, grasp) {
  return Array.isArray(doc.supported_grasps) &&
    doc.supported_grasps.includes(grasp);
}

// A random 64-hex string (an event id or commit id nothing has).
export function randomHex64() {
  return getPublicKey(generateSecretKey());
}

// /prs/ URL of signer npub for identifier id on http.
export function prsUrl(http, npub, id) {
  return `${http}/prs/${npub}/${id}.git`;
}

// A /prs/ URL nobody can have used: fresh key, random identifier.
export function freshPrsUrl(http) {
  return prsUrl(http, npubEncode(getPublicKey(generateSecretKey())),
    `audit-probe-${randomUUID()}`);
}

// A PR event (kind 1618) signed by sk for coordinate a (30617:<hex>:<d>),
// tip commit c, with a clone tag when clone is given; one second old.
export function prEvent(sk, { a, c, clone, content = 'grasp-audit PR' }) {
  const tags = [['a', a], ['c', c]];
  if (clone) tags.push(['clone', clone]);
  return finalizeEvent({
    kind: 1618,
    created_at: Math.floor(Date.now() / 1000) - 1,
    tags,
    content,
  }, sk);
}

// A new repository below parent on branch main, origin remote, with one
// commit of a fresh file (message msg); { dir, commit }.  git is a
// util.mjs gitWith() runner.
export function workspace(git, parent, remote, msg = 'grasp-audit commit') {
  const dir = mkdtempSync(join(parent, 'ws-'));
  git(dir, 'init', '-q', '-b', 'main');
  if (remote) git(dir, 'remote', 'add', 'origin', remote);
  writeFileSync(join(dir, `test-${randomUUID()}.txt`), `${msg}\n`);
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', msg);
  return { dir, commit: git(dir, 'rev-parse', 'HEAD') };
}

// Polls check (async, truthy when done) every 100 ms for up to ms; its
// last value.  The reference sleeps a fixed time instead; polling keeps
// the cases quick and steady under load.
export async function waitFor(check, ms = 5000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}
