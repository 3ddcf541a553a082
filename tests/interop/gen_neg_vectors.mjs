// gen_neg_vectors.mjs: writes tests/unit/vectors/negentropy.json, the
// Negentropy (NIP-77) vectors that tests/unit/negentropy_test.c checks our
// C implementation against, computed with nostr-tools' nip77 module (the
// version pinned in package-lock.json, exported as `nip77`).
// Deterministic: run it again and the file does not change.
//
//   cd tests/interop && node gen_neg_vectors.mjs [OUTPUT]
//
// Item sets are described, not listed: a part {seed, count, base, spread}
// holds, for i in 0..count-1, the id sha256("<seed>:<i>") and the
// timestamp base + ((id[0] * 256 + id[1]) % spread).  A small spread gives
// many equal timestamps, so bounds need id prefixes.  A set is the union
// of its parts.
//
// nostr-tools' Negentropy has no initiator flag: as a responder it treats
// an incoming id list as the initiator does (notes have/need, answers
// nothing), where the reference implementation answers with its own ids.
// So a conversation is recorded only up to the first client message that
// holds an id list; up to there both behave as the reference does, and so
// must ours.  nostr-tools also returns null for a bare version byte where
// the reference server sends it: recorded as "61".

import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nip77 } from 'nostr-tools';

const { Negentropy, NegentropyStorageVector } = nip77;

const here = dirname(fileURLToPath(import.meta.url));
const out = process.argv[2] ??
  join(here, '..', 'unit', 'vectors', 'negentropy.json');
const ntVersion = JSON.parse(readFileSync(
  join(here, 'node_modules', 'nostr-tools', 'package.json'))).version;

const BASE = 1700000000;

function partItems({ seed, count, base, spread }) {
  const items = [];
  for (let i = 0; i < count; i++) {
    const id = createHash('sha256').update(`${seed}:${i}`).digest();
    items.push([base + ((id[0] * 256 + id[1]) % spread), id.toString('hex')]);
  }
  return items;
}

function setItems(parts) {
  const seen = new Set();
  const items = [];
  for (const p of parts)
    for (const it of partItems(p)) {
      if (seen.has(it[1])) continue;
      seen.add(it[1]);
      items.push(it);
    }
  return items;
}

function storage(items) {
  const s = new NegentropyStorageVector();
  for (const [ts, id] of items) s.insert(ts, id);
  s.seal();
  return s;
}

// Our own minimal reader, used only to pick vectors: does a message hold
// an id list range?
function hasIdList(hex) {
  const b = Buffer.from(hex, 'hex');
  let p = 1;
  const varint = () => {
    let v = 0;
    for (;;) {
      if (p >= b.length) throw new Error('truncated varint');
      const c = b[p++];
      v = v * 128 + (c & 0x7f);
      if (!(c & 0x80)) return v;
    }
  };
  while (p < b.length) {
    varint();
    const len = varint();
    p += len;
    const mode = varint();
    if (mode === 2) return true;
    if (mode === 1) p += 16;
  }
  return false;
}

const sortUnique = (a) => [...new Set(a)].sort();

function conversation(name, frameLimit, clientParts, serverParts) {
  const client = new Negentropy(storage(setItems(clientParts)), frameLimit);
  const server = new Negentropy(storage(setItems(serverParts)), frameLimit);
  const steps = [];
  let msg = client.initiate();
  for (let round = 0; round < 50; round++) {
    if (hasIdList(msg)) break;
    const answer = server.reconcile(msg) ?? '61';
    steps.push({ role: 'server', in: msg, out: answer });
    const have = [];
    const need = [];
    const next = client.reconcile(answer, (id) => have.push(id),
      (id) => need.push(id));
    steps.push({ role: 'client', in: answer, out: next,
      have: sortUnique(have), need: sortUnique(need) });
    if (next === null) break;
    msg = next;
  }
  return { name, frame_limit: frameLimit, client: clientParts,
    server: serverParts, steps };
}

const part = (seed, count, spread = 100000, base = BASE) =>
  ({ seed, count, base, spread });

const fingerprintSets = [
  [],
  [part('fp1', 1)],
  [part('fp2', 2)],
  [part('fp31', 31, 3)],
  [part('fp200', 200, 10)],
  [part('fp20k', 20000, 500)],
];

const explicitFingerprints = [
  // Sums that carry across every 64-bit limb, and wrap past 2^256.
  [[1, 'ff'.repeat(32)], [2, '01' + '00'.repeat(31)]],
  [[5, 'ff'.repeat(32)], [5, 'fe' + 'ff'.repeat(31)],
    [6, '00'.repeat(31) + '80']],
  [[0, '00'.repeat(32)]],
];

const vectors = {
  about: 'Negentropy v1 vectors computed by tests/interop/gen_neg_vectors.mjs ' +
    `with nostr-tools ${ntVersion} (the nip77 module of nostr-tools); checked by ` +
    'tests/unit/negentropy_test.c.  Do not edit: regenerate.',
  item_rule: 'part {seed,count,base,spread}: for i < count, id = ' +
    'sha256(utf8("<seed>:<i>")), timestamp = base + ((id[0]*256 + id[1]) ' +
    '% spread); a set is the union of its parts',
  fingerprints: [],
  initiate: [],
  conversations: [],
};

for (const parts of fingerprintSets) {
  const items = setItems(parts);
  const s = storage(items);
  vectors.fingerprints.push({ set: parts,
    fingerprint: Buffer.from(s.fingerprint(0, items.length)).toString('hex') });
}
for (const items of explicitFingerprints) {
  const s = storage(items);
  vectors.fingerprints.push({ items,
    fingerprint: Buffer.from(s.fingerprint(0, items.length)).toString('hex') });
}

for (const parts of [[], [part('i1', 1)], [part('i31', 31, 2)],
  [part('i32', 32, 2)], [part('i33', 33)], [part('i1000', 1000, 7)],
  [part('i20k', 20000, 300)]]) {
  const n = new Negentropy(storage(setItems(parts)));
  vectors.initiate.push({ set: parts, message: n.initiate() });
}

const common = (n, spread) => part('common', n, spread);
const convs = [
  ['equal sets', 60000, [common(500, 50)], [common(500, 50)]],
  ['client only', 60000, [part('a', 300, 40)], []],
  ['server small', 60000, [part('a', 2000, 40)],
    [part('b', 20, 40), common(10, 40)]],
  ['few differences in 20000', 60000,
    [common(20000, 2000), part('a', 2, 2000)],
    [common(20000, 2000), part('b', 3, 2000)]],
  ['overlap, 4096-byte frames', 4096,
    [common(6000, 100), part('a', 150, 100)],
    [common(6000, 100), part('b', 250, 100)]],
  ['disjoint, 4096-byte frames', 4096, [part('a', 3000, 20)],
    [part('b', 4000, 20)]],
  ['one timestamp', 60000, [common(3000, 1), part('a', 5, 1)],
    [common(3000, 1), part('b', 5, 1)]],
];
for (const [name, limit, c, s] of convs) {
  vectors.conversations.push(conversation(name, limit, c, s));
}

writeFileSync(out, JSON.stringify(vectors, null, 1) + '\n');
console.log(`wrote ${out}`);
