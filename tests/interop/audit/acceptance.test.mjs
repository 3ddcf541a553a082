// acceptance.test.mjs: grasp-audit's GRASP-01 event acceptance policy
// cases (specs/grasp01/event_acceptance_policy.rs), one test each, named
// as the reference reports them, against a whole graspd of our own.
// Which announcements graspd takes (listing this service in `clone` and
// `relays`, or by a maintainer of a repository here), and which other
// events: those that tag an accepted repository or event, or that an
// accepted event tags, and no others.

import assert from 'node:assert/strict';
import { auditSuite, aTagOf, tagValue } from './fixtures.mjs';

const suite = auditSuite({ name: 'audit-accept' });

// ---- repository announcements ----

suite.test('accept_valid_repo_announcement', async (c, server) => {
  const ev = await c.validRepoServed();
  const got = await c.query({ kinds: [30617], authors: [c.keys.pk],
    '#d': [tagValue(ev, 'd')] });
  const stored = got.find((e) => e.id === ev.id);
  assert.ok(stored, `announcement ${ev.id} not served`);
  assert.ok(stored.tags.some((t) => t[0] === 'clone' &&
    t.slice(1).some((u) => u.includes(server.httpUrl))),
  'stored announcement lost its clone tag');
  assert.ok(stored.tags.some((t) => t[0] === 'relays' &&
    t.slice(1).includes(server.wsUrl)),
  'stored announcement lost its relays tag');
});

suite.test('reject_repo_announcement_missing_clone_tag', async (c, server) => {
  const id = c.newRepoId('no-clone');
  const ev = c.announcement(id, {
    clone: ['https://github.com/user/repo.git'],
    relays: [server.wsUrl] });
  const r = await c.sendRejected(ev, 'announcement cloned elsewhere');
  assert.equal(r.ok, false, `answered OK true: ${r.message}`);
  const got = await c.query({ kinds: [30617], authors: [c.keys.pk],
    '#d': [id] });
  assert.equal(got.length, 0);
});

suite.test('reject_repo_announcement_missing_relays_tag',
  async (c, server) => {
    const id = c.newRepoId('no-relays');
    // The reference's clone URL names the hex key and another
    // identifier; what matters is that it is ours and relays is not.
    const ev = c.announcement(id, {
      clone: [`${server.httpUrl}/${c.keys.pk}/test-repo.git`],
      relays: ['wss://relay.damus.io'] });
    const r = await c.sendRejected(ev, 'announcement relayed elsewhere');
    assert.equal(r.ok, false, `answered OK true: ${r.message}`);
    const got = await c.query({ kinds: [30617], authors: [c.keys.pk],
      '#d': [id] });
    assert.equal(got.length, 0);
  });

// The reference's test_accept_maintainer_announcement_without_service_listed.
suite.test('accept_recursive_maintainer_announcement_without_service',
  async (c) => {
    const r = await c.recursiveMaintainerStateDataPushed();
    const repoId = tagValue(r.event, 'd');
    const ev = c.announcement(repoId, { keys: c.recursiveKeys,
      clone: [`https://another-grasp-server.com/${c.recursiveKeys.npub}/${
        repoId}.git`],
      relays: ['wss://relay.damus.io'],
      content: `Recursive maintainer announcement for ${repoId}` });
    await c.sendAccepted(ev, 'recursive maintainer announcement');
    const got = await c.query({ kinds: [30617],
      authors: [c.recursiveKeys.pk], '#d': [repoId] });
    assert.ok(got.some((e) => e.id === ev.id));
  });

// ---- group 1: events tagging an accepted repository ----

suite.test('accept_issue_via_a_tag', async (c) => {
  const repo = await c.validRepoServed();
  await c.sendAccepted(c.issue(repo, 'Test Issue 1'), 'issue via a');
});

suite.test('accept_comment_via_A_tag', async (c) => {
  const repo = await c.validRepoServed();
  const ev = c.sign(c.keys, { kind: 1111, content: 'Comment on repo',
    tags: [['A', aTagOf(repo), '', 'root'], ['K', '30617'],
      ['p', repo.pubkey]] });
  await c.sendAccepted(ev, 'comment via A');
});

suite.test('accept_kind1_via_q_tag', async (c) => {
  const repo = await c.validRepoServed();
  const ev = c.sign(c.keys, { kind: 1, content: 'Mentioning this repo',
    tags: [['q', aTagOf(repo)]] });
  await c.sendAccepted(ev, 'kind 1 via q');
});

// ---- group 2: events tagging an accepted event (transitive) ----

suite.test('accept_issue_quoting_issue_via_q', async (c) => {
  const issueA = await c.repoWithIssue();
  // Repository B is never published: issue B is accepted for quoting
  // issue A only.
  const repoB = c.announcement(c.newRepoId('repo-b'),
    { maintainers: [c.maintainerKeys.pk] });
  const issueB = c.issue(repoB, 'Issue B', 'issue content',
    { tags: [['q', issueA.id]] });
  await c.sendAccepted(issueB, 'issue B quoting issue A');
});

suite.test('accept_comment_via_E_tag', async (c) => {
  const issue = await c.repoWithIssue();
  await c.sendAccepted(c.comment(issue, 'Comment content'), 'comment via E');
});

suite.test('accept_kind1_via_e_tag', async (c) => {
  const repo = await c.validRepoServed();
  const a = c.sign(c.keys, { kind: 1, content: 'Note A about repo',
    tags: [['q', aTagOf(repo)]] });
  await c.sendAccepted(a, 'kind 1 A quoting the repository');
  const b = c.sign(c.keys, { kind: 1, content: 'Reply to Note A',
    tags: [['e', a.id]] });
  await c.sendAccepted(b, 'kind 1 B replying to A');
});

// ---- group 3: events an accepted event tags (forward references) ----

suite.test('accept_kind1_referenced_in_issue', async (c) => {
  const repo = await c.validRepoServed();
  const note = c.sign(c.keys, { kind: 1,
    content: 'Note to be referenced' });
  const issue = c.issue(repo, 'Issue referencing kind1', 'issue content',
    { tags: [['q', note.id]] });
  await c.sendAccepted(issue, 'issue quoting an unsent note');
  await c.sendAccepted(note, 'note quoted by the accepted issue');
});

suite.test('accept_comment_referenced_in_comment', async (c) => {
  const issue = await c.repoWithIssue();
  const commentA = c.comment(issue, 'Comment A');
  const commentB = c.comment(issue, 'Comment B quoting Comment A',
    { tags: [['q', commentA.id]] });
  await c.sendAccepted(commentB, 'comment B quoting unsent comment A');
  await c.sendAccepted(commentA, 'comment A quoted by accepted comment B');
});

suite.test('accept_kind1_referenced_in_kind1', async (c) => {
  const repo = await c.validRepoServed();
  const a = c.sign(c.keys, { kind: 1, content: 'Note A to be referenced' });
  const b = c.sign(c.keys, { kind: 1, content: 'Note B mentioning Note A',
    tags: [['q', aTagOf(repo)], ['e', a.id]] });
  await c.sendAccepted(b, 'kind 1 B naming unsent A');
  await c.sendAccepted(a, 'kind 1 A named by accepted B');
});

// ---- group 4: unrelated events are refused ----

suite.test('reject_orphan_issue', async (c) => {
  const repo = c.announcement(c.newRepoId('unaccepted-repo-1'),
    { maintainers: [c.maintainerKeys.pk] });
  const r = await c.sendRejected(c.issue(repo, 'Orphan Issue'),
    'issue on an unpublished repository');
  assert.equal(r.ok, false, `answered OK true: ${r.message}`);
});

suite.test('reject_orphan_kind1', async (c) => {
  const ev = c.sign(c.keys, { kind: 1, content: 'Just a random note' });
  const r = await c.sendRejected(ev, 'kind 1 with no references');
  assert.equal(r.ok, false, `answered OK true: ${r.message}`);
});

suite.test('reject_comment_quoting_other_repo', async (c) => {
  await c.validRepoServed();
  const repoB = c.announcement(c.newRepoId('unaccepted-repo-b'),
    { maintainers: [c.maintainerKeys.pk] });
  const ev = c.sign(c.keys, { kind: 1111,
    content: 'Comment on unaccepted repo',
    tags: [['A', aTagOf(repoB), '', 'root'], ['K', '30617'],
      ['p', repoB.pubkey]] });
  const r = await c.sendRejected(ev, 'comment on an unpublished repository');
  assert.equal(r.ok, false, `answered OK true: ${r.message}`);
});
