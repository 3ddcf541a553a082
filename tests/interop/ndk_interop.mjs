// ndk_interop.mjs: relayd's NIP-77 sync as NDK sees it (npm
// @nostr-dev-kit/ndk with @nostr-dev-kit/sync, unmodified).  NDK's sync
// sends NEG-OPEN with an array of filters, not NIP-77's one object; relayd
// must take it as their union.  Run by tests/interop/run.sh, which starts
// relayd and sets RELAY_URL (ws://127.0.0.1:PORT).
//
// NDK's sync needs a cache adapter and NDK ships none, so the client's
// store is MemoryCache below: NDK's own matchFilter() over a map.  What
// relayd stored is read back over a raw connection (util.mjs).  Every
// wait is bounded.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import NDK, { NDKEvent, matchFilter } from '@nostr-dev-kit/ndk';
import { NDKSync } from '@nostr-dev-kit/sync';
import { RawRelay, freshTag, sortedIds, taggedEvents } from './util.mjs';

// NDK opens its connections with the global WebSocket, which Node.js 20
// lacks.
globalThis.WebSocket ??= WebSocket;

const RELAY_URL = process.env.RELAY_URL;
const WAIT_MS = 5000;
const TEST_MS = 20000;
const KIND_GRASP_LIST = 10317;	// NIP-34 user grasp list: open to anyone

// The smallest NDKCacheAdapter NDK's sync works with: events by id,
// answered synchronously (locking) to the subscriptions that ask.
class MemoryCache {
  constructor() {
    this.locking = true;
    this.ready = true;
    this.events = new Map();
    this.relays = new Map();
  }

  query(sub) {
    const out = [];
    for (const raw of this.events.values())
      if (sub.filters.some((f) => matchFilter(f, raw)))
        out.push(new NDKEvent(sub.ndk, raw));
    return out;
  }

  async setEvent(ev) {
    this.events.set(ev.id, ev.rawEvent());
  }

  getRelayStatus(url) {
    return this.relays.get(url);
  }

  updateRelayStatus(url, info) {
    this.relays.set(url, { ...this.relays.get(url), ...info });
  }
}

let raw = null;
before(async () => {
  assert.ok(RELAY_URL, 'RELAY_URL is not set; run tests/interop/run.sh');
  raw = await RawRelay.open(RELAY_URL, WAIT_MS);
});
after(() => raw?.close());

test('NDK sync of two filters: exactly the relay\'s matching events',
  { timeout: TEST_MS }, async () => {
    const tag = freshTag('ndk-sync');
    const events = taggedEvents(tag, 8);
    const relayOnly = events.slice(0, 3);
    const clientOnly = events.slice(3, 5);
    const shared = events.slice(5);
    // By an author the second filter names, outside the first's tag.
    const [byAuthor] = taggedEvents(freshTag('ndk-other'), 1);
    await raw.publishAll([...relayOnly, ...shared, byAuthor]);
    // The second filter also names events the first one matches: the
    // union counts them once.
    const filters = [
      { kinds: [KIND_GRASP_LIST], '#t': [tag] },
      { kinds: [KIND_GRASP_LIST],
        authors: [byAuthor.pubkey, relayOnly[0].pubkey, shared[0].pubkey] },
    ];

    const cache = new MemoryCache();
    for (const ev of [...clientOnly, ...shared])
      cache.events.set(ev.id, ev);
    // No outbox model: NDK would connect to its default public relays.
    const ndk = new NDK({ explicitRelayUrls: [RELAY_URL],
      enableOutboxModel: false, cacheAdapter: cache });
    const errors = [];
    try {
      await ndk.connect(WAIT_MS);
      const sync = new NDKSync(ndk);
      assert.equal(await sync.checkRelaySupport(
        ndk.pool.relays.values().next().value), true,
      'NDK does not see NIP-77 in NIP-11');
      const result = await sync.sync(filters, {
        timeout: WAIT_MS,
        onRelayError: (_relay, err) => errors.push(err.message),
      });
      assert.deepEqual(errors, [], 'the sync failed');

      const ids = (evs) => sortedIds(evs.map((e) => e.id));
      const relaySet = [...relayOnly, ...shared, byAuthor];
      assert.deepEqual(await raw.ids(...filters), ids(relaySet),
        'what relayd holds for the filters');
      assert.deepEqual(sortedIds([...result.need]),
        ids([...relayOnly, byAuthor]), 'need');
      assert.deepEqual(sortedIds([...result.have]), ids(clientOnly),
        'have');
      assert.deepEqual(ids(result.events), ids([...relayOnly, byAuthor]),
        'events fetched');
      assert.deepEqual(sortedIds([...cache.events.keys()]),
        ids([...relaySet, ...clientOnly]), 'the cache after the sync');
    } finally {
      for (const r of ndk.pool.relays.values()) r.disconnect();
    }
  });
