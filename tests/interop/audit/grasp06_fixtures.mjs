// grasp06_fixtures.mjs: what grasp-audit's GRASP-06 cases build beyond
// fixtures.mjs (the reference's specs/grasp06/fixtures.rs and the cases'
// own helpers): the settings of a graspd with GRASP-06, the NIP-11
// document and its supported_grasps, /prs/ URLs, the coordinate of a
// repository nobody announced, and a local repository of one commit to
// push from; and two helpers the GRASP-01 files of this half share
// (infoRefs, sentRepoUrl).

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { newKeys, tagValue } from './fixtures.mjs';

// The graspd settings (auditSuite's env) that enable GRASP-06.
export const GRASP06_ON = { NGIT_GRASP06_ENABLE: 'true' };

// The git URL of client c's ValidRepoSent repository.
export async function sentRepoUrl(c) {
  return c.cloneUrl(tagValue(await c.validRepoSent(), 'd'));
}

// The answer to a GET of the upload-pack advertisement of git URL url
// (protocol v0: no Git-Protocol header).
export const infoRefs = (url) =>
  fetch(`${url}/info/refs?service=git-upload-pack`);

// The NIP-11 document served at httpUrl, parsed; throws unless it is a
// 200.
export async function nip11Doc(httpUrl) {
  const res = await fetch(`${httpUrl}/`, {
    headers: { Accept: 'application/nostr+json' },
  });
  if (res.status !== 200)
    throw new Error(`NIP-11 answered ${res.status}, not 200`);
  return res.json();
}

// Whether NIP-11 document doc lists grasp (e.g. 'GRASP-06').
export function advertisesGrasp(doc, grasp) {
  return Array.isArray(doc.supported_grasps) &&
    doc.supported_grasps.includes(grasp);
}

// A random 64-hex string: an event or commit id nothing has.
export const randomHex64 = () => newKeys().pk;

// The /prs/ URL of npub's repository id on httpUrl.
export function prsUrl(httpUrl, npub, id) {
  return `${httpUrl}/prs/${npub}/${id}.git`;
}

// A /prs/ URL nobody used: a fresh key's, a random identifier.
export function freshPrsUrl(httpUrl) {
  return prsUrl(httpUrl, newKeys().npub, `audit-probe-${randomUUID()}`);
}

// The announcement-shaped address of a repository nobody announced (a
// random owner, identifier `${prefix}-<uuid>`), for AuditClient.prEvent.
export function unannouncedRepo(prefix = 'audit-grasp06') {
  return { kind: 30617, pubkey: randomHex64(),
    tags: [['d', `${prefix}-${randomUUID()}`]] };
}

// A new repository of client's (branch main, origin remote when given)
// with one commit of a fresh file, message msg: { dir, commit }.
export function workspace(client, remote, msg = 'grasp-audit commit') {
  const dir = join(client.tempDir('ws'), 'repo');
  client.git(client.work, 'init', '-q', '-b', 'main', dir);
  if (remote) client.git(dir, 'remote', 'add', 'origin', remote);
  writeFileSync(join(dir, `test-${randomUUID()}.txt`), `${msg}\n`);
  client.git(dir, 'add', '.');
  client.git(dir, 'commit', '-q', '-m', msg);
  return { dir, commit: client.git(dir, 'rev-parse', 'HEAD') };
}
