// push_auth.test.mjs: grasp-audit's GRASP-01 push authorisation cases
// (specs/grasp01/push_authorization.rs), one test each, named as the
// reference reports them, against a whole graspd of our own.  A push to
// a branch is taken when the latest state of the owner or of someone in
// the owner's recursive maintainer set names exactly what it pushes,
// and refused otherwise; a push to refs/nostr/<id> needs a well-formed
// event id and, once the PR is known, its tip; HEAD follows the state.

import assert from 'node:assert/strict';
import { auditSuite, deterministicCommit, infoRefsHead, newKeys,
  PUSH_REFUSED, tagValue, uniqueCommit, waitFor } from
  './fixtures.mjs';

const suite = auditSuite({ name: 'audit-pushauth' });

// The symref HEAD of the owner's repository repoId once it is want
// (polled: graspd sets HEAD by a git job after the state is stored), or
// the last one seen.
async function headBecomes(c, repoId, want) {
  let head = null;
  await waitFor(async () => {
    head = await infoRefsHead(c.cloneUrl(repoId));
    return head === want;
  }, 5000, 100);
  return head;
}

// The reference commits on the branch its clone of the empty repository
// is on, which is master (graspd's new repositories, as the reference's,
// have HEAD at git's default refs/heads/master), then pushes "main": git
// itself fails ("src refspec main does not match any") and the case
// passes without graspd seeing a push.  Here the commit is pushed to
// main, and the refusal must be graspd's.
suite.test('test_push_rejected_without_state_event', async (c) => {
  const repo = await c.validRepoSent();
  const dir = c.cloneRepo(tagValue(repo, 'd'));
  uniqueCommit(c.git, dir, 'Unauthorized commit');
  const p = c.push(dir, 'HEAD:refs/heads/main');
  assert.ok(!p.ok, 'push with no state accepted');
  assert.match(p.stderr, PUSH_REFUSED);
});

suite.test('test_push_authorized_by_owner_state', async (c) => {
  await c.ownerStateDataPushed();
});

suite.test('test_push_rejected_wrong_commit', async (c) => {
  const state = await c.ownerStateDataPushed();
  const dir = c.cloneRepo(tagValue(state, 'd'));
  c.git(dir, 'checkout', '-q', '-B', 'main');
  uniqueCommit(c.git, dir, 'Unauthorized commit - should be rejected');
  const p = c.push(dir);
  assert.ok(!p.ok, 'push of a commit no state names accepted');
  assert.match(p.stderr, PUSH_REFUSED);
});

suite.test('test_push_authorized_by_maintainer_state_only', async (c) => {
  await c.maintainerStateDataPushed();
});

suite.test('test_push_authorized_by_recursive_maintainer_state',
  async (c) => {
    await c.recursiveMaintainerStateDataPushed();
  });

// Defined in the reference but left out of its run_all; ported all the
// same.
suite.test('test_non_maintainer_state_rejected', async (c) => {
  const state = await c.ownerStateDataPushed();
  const repoId = tagValue(state, 'd');
  const dir = c.cloneRepo(repoId);
  const commit = uniqueCommit(c.git, dir, 'New commit to push');
  const rogue = newKeys();
  // The reference ignores the relay's answer to the rogue state; graspd
  // refuses it ("invalid: author not authorized ...").
  await c.publish(c.stateEvent(repoId, { 'refs/heads/main': commit },
    { keys: rogue, head: null }));
  const p = c.push(dir);
  assert.ok(!p.ok, 'push authorised by a stranger\'s state accepted');
  assert.match(p.stderr, PUSH_REFUSED);
});

suite.test('test_push_to_nostr_ref_with_invalid_event_id_rejected',
  async (c) => {
    const repo = await c.validRepoSent();
    const dir = c.cloneRepo(tagValue(repo, 'd'));
    uniqueCommit(c.git, dir, 'Test commit for invalid refs/nostr push');
    const p = c.pushNostrRef(dir, '123');
    assert.ok(!p.ok, 'push to refs/nostr/123 accepted');
    assert.match(p.stderr, PUSH_REFUSED);
    assert.match(p.stderr, /refs\/nostr\/123/);
  });

suite.test(
  'test_pr_push_to_nostr_ref_with_wrong_commit_accepted_before_event_received',
  async (c) => {
    await c.prWrongCommitPushedBeforeEvent();
  });

suite.test('test_pr_event_published_removes_nostr_ref_at_incorrect_commit',
  async (c) => {
    const pr = await c.prEventSentAfterWrongPush();
    const repo = await c.validRepoServed();
    const dir = c.cloneRepo(tagValue(repo, 'd'));
    const ref = `refs/nostr/${pr.id}`;
    const gone = await waitFor(() =>
      c.git(dir, 'ls-remote', 'origin', ref) === '', 5000, 100);
    assert.ok(gone, `${ref} still at the wrong commit after the PR came`);
  });

suite.test(
  'test_push_to_nostr_ref_with_wrong_commit_after_event_received_rejected',
  async (c) => {
    const pr = await c.prEventSentAfterWrongPush();
    const repo = await c.validRepoServed();
    const dir = c.cloneRepo(tagValue(repo, 'd'));
    uniqueCommit(c.git, dir, 'wrong commit - not the PR test commit');
    const p = c.pushNostrRef(dir, pr.id, { force: true });
    assert.ok(!p.ok, 'push of a commit that is not the PR tip accepted');
    assert.match(p.stderr, PUSH_REFUSED);
  });

// The reference's function name ends "..._accepted_and_event_served".
suite.test(
  'test_push_to_nostr_ref_with_correct_commit_after_event_received_accepted',
  async (c) => {
    const pr = await c.prEventSentAfterWrongPush();
    const repo = await c.validRepoServed();
    const dir = c.cloneRepo(tagValue(repo, 'd'));
    const tip = deterministicCommit(c.git, dir, 'pr', { orphan: true });
    assert.equal(tip, tagValue(pr, 'c'));
    assert.ok(!(await c.served(pr.id)), 'PR served before its tip came');
    const p = c.pushNostrRef(dir, pr.id, { force: true });
    assert.ok(p.ok, `push of the PR tip refused: ${p.stderr}`);
    assert.ok(await c.servedWithin(pr.id), 'PR not served after its tip');
  });

suite.test('test_head_set_after_state_event_with_existing_commit',
  async (c) => {
    await c.headSetToDevelopBranch();
    const repo = await c.validRepoSent();
    const head = await headBecomes(c, tagValue(repo, 'd'),
      'refs/heads/develop');
    assert.equal(head, 'refs/heads/develop');
  });

suite.test('test_head_set_after_git_push_with_required_oids', async (c) => {
  const develop = await c.headSetToDevelopBranch();
  const repo = await c.validRepoSent();
  const repoId = tagValue(repo, 'd');
  const dir = c.cloneRepo(repoId);
  c.git(dir, 'checkout', '-q', '-b', 'develop1');
  const commit = uniqueCommit(c.git, dir, 'Unique develop1 commit');
  const state = c.sign(c.keys, { kind: 30618, tags: [['d', repoId],
    ['HEAD', 'refs/heads/develop1'], ['refs/heads/develop1', commit],
    ['refs/heads/develop', tagValue(develop, 'refs/heads/develop')]] });
  const r = await c.sendNotePurgatory(state, 'develop1 state');
  assert.ok(r.held, 'state of an unpushed branch served at once');
  const p = c.git.try(dir, 'push', 'origin', 'HEAD:refs/heads/develop1');
  assert.ok(p.ok, `push of develop1 refused: ${p.stderr}`);
  const head = await headBecomes(c, repoId, 'refs/heads/develop1');
  assert.equal(head, 'refs/heads/develop1');
});
