// util.mjs: helpers shared by the interop tests: the git client, bounded
// and isolated, and a stored-events query over nostr-tools' Relay.

import { execFileSync } from 'node:child_process';

// A git runner whose runs use home as HOME, no prompts, no system
// configuration and a fixed author; each run is bounded to 30 s and
// returns its trimmed stdout (it throws on failure, stderr in err.stderr).
export function gitWith(home) {
  return (dir, ...args) => execFileSync('git', args, {
    cwd: dir,
    timeout: 30000,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH,
      HOME: home,
      GIT_TERMINAL_PROMPT: '0',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: 'interop',
      GIT_AUTHOR_EMAIL: 'interop@graspd.invalid',
      GIT_COMMITTER_NAME: 'interop',
      GIT_COMMITTER_EMAIL: 'interop@graspd.invalid',
    },
  }).trim();
}

// The stored events of a nostr-tools Relay that match filter, up to
// EOSE, within ms.
export function query(relay, filter, ms) {
  return new Promise((resolve, reject) => {
    const got = [];
    const timer = setTimeout(() => reject(new Error('no EOSE')), ms);
    const sub = relay.subscribe([filter], {
      onevent: (ev) => got.push(ev),
      oneose: () => {
        clearTimeout(timer);
        sub.close();
        resolve(got);
      },
    });
  });
}
