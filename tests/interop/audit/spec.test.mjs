// spec.test.mjs: grasp-audit's requirement tables
// (specs/grasp01/spec_requirements.rs, specs/grasp06/spec_requirements.rs)
// and their unit cases, as a coverage map of this port: every GRASP-01
// and GRASP-06 requirement the reference audits, by its reference string
// ("GRASP-01:<section>:<line>"), with the reference's cases that check it.
// Besides the reference's own table checks (count, unique references,
// section order, line parsing), each case named here must be a test of
// the port file of its reference module -- so a case dropped from a file
// fails here.  A module whose port file is not in this tree (the other
// half of the port, before it is merged) is skipped, with its name.  No
// graspd is needed.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));

// The port file of each reference module (specs/grasp0N/<module>.rs).
const PORT_FILE = {
  cors: 'cors.test.mjs',
  event_acceptance_policy: 'acceptance.test.mjs',
  git_clone: 'git.test.mjs',
  git_filter: 'git.test.mjs',
  nip01_smoke: 'nip01.test.mjs',
  nip11_document: 'nip11.test.mjs',
  purgatory: 'purgatory.test.mjs',
  push_authorization: 'push_auth.test.mjs',
  repository_creation: 'repo_creation.test.mjs',
  g06_event_acceptance: 'grasp06_event_acceptance.test.mjs',
  g06_mirroring: 'grasp06_mirroring.test.mjs',
  g06_nip11: 'grasp06_nip11.test.mjs',
  g06_prs_endpoint: 'grasp06_prs_endpoint.test.mjs',
};

// GRASP-01 as the reference audits it (its spec commit 1fdb8f7): the
// reference string, section, level, what is required (in brief), and
// the cases checking it, by reference module.
const GRASP01 = [
  ['GRASP-01:nostr-relay:7', 'Nostr Relay', 'MUST',
    'a NIP-01 relay at / taking announcements and states', {
      nip01_smoke: ['websocket_connection', 'send_receive_event',
        'create_subscription', 'close_subscription',
        'reject_invalid_signature', 'reject_invalid_event_id'],
      event_acceptance_policy: ['accept_valid_repo_announcement'],
    }],
  ['GRASP-01:nostr-relay:9', 'Nostr Relay', 'MUST',
    'refuse announcements not listing this service in clone and relays', {
      event_acceptance_policy: ['reject_repo_announcement_missing_clone_tag',
        'reject_repo_announcement_missing_relays_tag',
        'accept_recursive_maintainer_announcement_without_service'],
    }],
  ['GRASP-01:nostr-relay:11', 'Nostr Relay', 'MAY',
    'refuse announcements on other criteria', {}],
  ['GRASP-01:nostr-relay:13', 'Nostr Relay', 'MUST',
    'take events tagging or tagged by accepted repositories or issues', {
      event_acceptance_policy: ['accept_issue_via_a_tag',
        'accept_comment_via_A_tag', 'accept_kind1_via_q_tag',
        'accept_issue_quoting_issue_via_q', 'accept_comment_via_E_tag',
        'accept_kind1_via_e_tag', 'accept_kind1_referenced_in_issue',
        'accept_comment_referenced_in_comment',
        'accept_kind1_referenced_in_kind1'],
    }],
  ['GRASP-01:nostr-relay:18', 'Nostr Relay', 'MAY',
    'refuse or delete events for SPAM or curation', {
      event_acceptance_policy: ['reject_orphan_issue', 'reject_orphan_kind1',
        'reject_comment_quoting_other_repo'],
    }],
  ['GRASP-01:purgatory:22', 'Purgatory', 'SHOULD',
    'hold new announcements, states and PRs unserved until their git data', {
      purgatory: ['announcement_not_served_before_git_data',
        'announcement_served_after_git_push',
        'state_event_accepted_for_purgatory_announcement',
        'state_event_not_served_before_git_data',
        'state_event_served_after_git_push',
        'pr_event_accepted_into_purgatory',
        'pr_event_in_purgatory_git_push_accepted',
        'pr_event_served_after_git_push',
        'deletion_by_event_id_removes_purgatory_state_event',
        'deletion_by_coordinate_removes_purgatory_state_event'],
    }],
  ['GRASP-01:nip-11:26', 'NIP-11', 'MUST', 'serve a NIP-11 document',
    { nip11_document: ['nip11_document_exists'] }],
  ['GRASP-01:nip-11:28', 'NIP-11', 'MUST',
    'supported_grasps, an array of GRASP-XX',
    { nip11_document: ['nip11_supported_grasps_field'] }],
  ['GRASP-01:nip-11:29', 'NIP-11', 'MUST',
    'repo_acceptance_criteria, a human readable string',
    { nip11_document: ['nip11_repo_acceptance_criteria_field'] }],
  ['GRASP-01:nip-11:30', 'NIP-11', 'MUST',
    'curation only when curating beyond SPAM prevention',
    { nip11_document: ['nip11_curation_field'] }],
  ['GRASP-01:git-http:34', 'Git Smart HTTP Service', 'MUST',
    'unauthenticated smart HTTP at /<npub>/<identifier>.git', {
      git_clone: ['test_basic_git_clone', 'test_clone_url_format'],
      repository_creation: ['test_bare_repo_created_on_announcement'],
      purgatory: ['bare_repo_exists_for_purgatory_announcement'],
    }],
  ['GRASP-01:git-http:36', 'Git Smart HTTP Service', 'MUST',
    'take pushes aligning the repository with an authorised state', {
      push_authorization: ['test_push_rejected_without_state_event',
        'test_push_authorized_by_owner_state',
        'test_push_rejected_wrong_commit',
        'test_push_authorized_by_maintainer_state_only',
        'test_push_authorized_by_recursive_maintainer_state',
        'test_non_maintainer_state_rejected'],
    }],
  ['GRASP-01:git-http:39', 'Git Smart HTTP Service', 'MUST',
    'after receive-pack: release, align HEAD, sync other repositories', {
      push_authorization: ['test_head_set_after_state_event_with_existing_commit',
        'test_head_set_after_git_push_with_required_oids'],
    }],
  ['GRASP-01:git-http:45', 'Git Smart HTTP Service', 'MUST',
    'take pushes to refs/nostr/<event-id>', {
      push_authorization: [
        'test_push_to_nostr_ref_with_invalid_event_id_rejected',
        'test_pr_push_to_nostr_ref_with_wrong_commit_accepted_before_event_received',
        'test_pr_event_published_removes_nostr_ref_at_incorrect_commit',
        'test_push_to_nostr_ref_with_wrong_commit_after_event_received_rejected',
        'test_push_to_nostr_ref_with_correct_commit_after_event_received_accepted'],
    }],
  ['GRASP-01:git-http:56', 'Git Smart HTTP Service', 'MUST',
    'advertise allow-reachable- and allow-tip-sha1-in-want (and filter)', {
      git_clone: ['test_sha1_capabilities_advertised'],
      git_filter: ['test_filter_capability_advertised',
        'test_filtered_clone_succeeds', 'test_filtered_fetch_succeeds'],
    }],
  ['GRASP-01:git-http:58', 'Git Smart HTTP Service', 'SHOULD',
    'a web page at the repository URL, a 404 page for others', {
      repository_creation: ['test_webpage_served_for_existing_repo',
        'test_404_for_nonexistent_repo'],
    }],
  ['GRASP-01:cors:64', 'CORS Support', 'MUST',
    'Access-Control-Allow-Origin: * on every answer',
    { cors: ['cors_allow_origin', 'test_cors_on_real_repo'] }],
  ['GRASP-01:cors:65', 'CORS Support', 'MUST',
    'Access-Control-Allow-Methods: GET, POST on every answer',
    { cors: ['cors_allow_methods', 'test_cors_on_real_repo'] }],
  ['GRASP-01:cors:66', 'CORS Support', 'MUST',
    'Access-Control-Allow-Headers: Content-Type on every answer',
    { cors: ['cors_allow_headers', 'test_cors_on_real_repo'] }],
  ['GRASP-01:cors:67', 'CORS Support', 'MUST',
    '204 No Content for OPTIONS', { cors: ['cors_options_preflight'] }],
];

// GRASP-06 as the reference audits it (a draft): lines of 06.md, two
// audit-derived discovery rules (negative lines) and three of its design
// document ("design").
const GRASP06 = [
  ['GRASP-06:nip-11-discovery:-1', 'NIP-11 Discovery', 'MUST',
    '/prs/ is a 404 unless NIP-11 lists GRASP-06',
    // A prs_endpoint.rs case, ported with the other discovery case: it
    // needs a graspd without GRASP-06.
    { g06_nip11: ['prs_namespace_404_when_grasp06_not_advertised'] }],
  ['GRASP-06:nip-11-discovery:-2', 'NIP-11 Discovery', 'MUST',
    'NIP-11 lists GRASP-06 when it is enabled',
    { g06_nip11: ['nip11_advertises_grasp_06_when_enabled'] }],
  ['GRASP-06:git-http:13', 'Git Smart HTTP Service', 'MUST',
    'any well-formed /prs/ path fetches as an empty repository',
    { g06_prs_endpoint: ['prs_fetch_unknown_path_serves_empty_repo'] }],
  ['GRASP-06:git-http-accept:15', 'Git Smart HTTP Service', 'MUST',
    'take pushes to refs/nostr/<event-id> under /prs/',
    { g06_prs_endpoint: ['prs_push_refs_nostr_event_id_accepted'] }],
  ['GRASP-06:git-http-reject:15', 'Git Smart HTTP Service', 'MUST',
    'refuse pushes to any other ref under /prs/',
    { g06_prs_endpoint: ['prs_push_other_refs_rejected'] }],
  ['GRASP-06:event-acceptance:21', 'Event Acceptance', 'MUST',
    'take PRs for unannounced repositories whose clone tag names our /prs/', {
      g06_event_acceptance: [
        'pr_event_accepted_when_clone_tag_names_prs_endpoint',
        'pr_event_accepted_via_relaxation_is_held_in_purgatory'],
    }],
  ['GRASP-06:event-acceptance:23', 'Event Acceptance', 'MUST',
    'no relaxation when the clone tag names another service', {
      g06_event_acceptance: [
        'pr_event_rejected_when_clone_tag_does_not_name_prs_endpoint'],
    }],
  ['GRASP-06:mirror-forward:design', 'Cross-Service Mirror', 'MUST',
    'refs taken under /prs/ are mirrored into announced repositories', {
      g06_mirroring: ['prs_push_mirrors_to_announced_repo',
        'prs_push_then_pr_event_promotes_and_mirrors'],
    }],
  ['GRASP-06:mirror-reverse:design', 'Cross-Service Mirror', 'MUST',
    'pushes to /<npub>/<id>.git are not mirrored under /prs/',
    { g06_mirroring: ['standard_push_does_not_mirror_to_prs'] }],
  ['GRASP-06:commit-mismatch:design', 'Push Validation', 'MUST',
    'a /prs/ push not at its PR\'s c tag is deleted, the PR not released',
    { g06_prs_endpoint: ['commit_mismatch_deletes_ref_and_blocks_promotion'] }],
];

// The line number of a GRASP-06 reference string, or null for another
// GRASP's (the reference's parse_spec_line).
function grasp06Line(ref) {
  const m = /^GRASP-06:[^:]+:(-?\d+)$/.exec(ref);
  return m ? Number(m[1]) : null;
}

// Sections of table in first-seen order.
const sections = (table) => [...new Set(table.map((r) => r[1]))];

// The test names of port file f ("test('name'" and "suite.test('name'").
function casesOf(f) {
  const names = new Set();
  const src = readFileSync(join(here, f), 'utf8');
  for (const m of src.matchAll(/\btest\(\s*'([^']+)'/g)) names.add(m[1]);
  return names;
}

// Checks that each case of table is a test of its module's port file;
// modules whose file is absent are reported through t.diagnostic.
function checkCovered(t, table) {
  const missing = new Set();
  for (const [ref, , , , byModule] of table)
    for (const [mod, cases] of Object.entries(byModule)) {
      const f = PORT_FILE[mod];
      assert.ok(f, `no port file for module ${mod}`);
      if (!existsSync(join(here, f))) {
        missing.add(f);
        continue;
      }
      const have = casesOf(f);
      for (const c of cases)
        assert.ok(have.has(c), `${ref}: case ${c} is not a test of ${f}`);
    }
  for (const f of missing) t.diagnostic(`${f} not in this tree: not checked`);
}

test('test_get_requirement', () => {
  const byLine = new Map(GRASP01.map((r) =>
    [Number(r[0].split(':')[2]), r]));
  assert.equal(byLine.size, GRASP01.length, 'two requirements on one line');
  const r = byLine.get(7);
  assert.equal(r[1], 'Nostr Relay');
  assert.match(r[3], /NIP-01/);
});

test('test_get_requirement_by_ref', () => {
  const r = GRASP01.find((x) => x[0] === 'GRASP-01:nostr-relay:7');
  assert.ok(r);
  assert.equal(Number(r[0].split(':')[2]), 7);
});

test('test_get_sections', () => {
  assert.deepEqual(sections(GRASP01), ['Nostr Relay', 'Purgatory', 'NIP-11',
    'Git Smart HTTP Service', 'CORS Support']);
});

test('test_requirement_count', () => {
  assert.equal(GRASP01.length, 20);
  for (const r of GRASP01) assert.match(r[2], /^(MUST|SHOULD|MAY)$/);
});

test('test_spec_ref_unique', () => {
  for (const table of [GRASP01, GRASP06])
    assert.equal(new Set(table.map((r) => r[0])).size, table.length);
});

test('test_parse_spec_line_real', () => {
  assert.equal(grasp06Line('GRASP-06:git-http:13'), 13);
  assert.equal(grasp06Line('GRASP-06:git-http:15'), 15);
});

test('test_parse_spec_line_synthetic', () => {
  assert.equal(grasp06Line('GRASP-06:nip-11-discovery:-1'), -1);
});

test('test_parse_spec_line_non_grasp06', () => {
  assert.equal(grasp06Line('GRASP-01:nostr-relay:7'), null);
  assert.equal(grasp06Line('NIP-01:basic:1'), null);
});

test('test_sections_order', () => {
  const s = sections(GRASP06);
  assert.equal(s[0], 'NIP-11 Discovery');
  for (const x of ['Git Smart HTTP Service', 'Event Acceptance',
    'Cross-Service Mirror', 'Push Validation'])
    assert.ok(s.includes(x), `section ${x} missing`);
});

// Not a reference case: the port keeps every case the table names.
test('every GRASP-01 case of the table is ported', (t) =>
  checkCovered(t, GRASP01));

test('every GRASP-06 case of the table is ported', (t) =>
  checkCovered(t, GRASP06));
