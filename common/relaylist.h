/*
 * relaylist.h: a NIP-65 relay list (kind 10002) read as GRASP-03 reads an
 * author's mailboxes.  Used by discoveryd (identity-refresh outboxes), and
 * by syncd and historyd for inbox and history mailbox coverage.
 *
 * A kind 10002 is untrusted peer input.  Its "r" tags become per-purpose
 * relay selections by these rules (GRASP-03 text, "Kind 10002 lists are
 * untrusted peer input ..."; reference/nips.md sections 4 and 6.2):
 *   - a tag counts only when its marker is absent (read and write),
 *     exactly "read" or exactly "write"; any other marker, the empty
 *     string included, makes the tag ignored (nips.md 6.2 rule 19);
 *   - every URL passes single-URL target hygiene (relayurl_canon(), as
 *     untrusted input) and is not this relay itself (rule 21) before it
 *     can occupy any slot;
 *   - accepted URLs are canonicalized and deduplicated: spelling variants
 *     of one relay (root slash, default port, case, ...) are one entry
 *     whose read and write flags are OR'd, at the position of its first
 *     spelling;
 *   - each purpose takes at most RELAYLIST_PER_PURPOSE entries, in
 *     published tag order.
 * Nothing here exits except on allocation failure (fatal).
 */
#ifndef GRASPD_RELAYLIST_H
#define GRASPD_RELAYLIST_H

#include <stddef.h>
#include <stdint.h>

#include "nip01.h"

struct event;

/*
 * GRASP-03 text: "Each author contributes at most four relays per
 * purpose, taken in published tag order"; a hard internal constant, not
 * a configuration option.
 */
#define RELAYLIST_PER_PURPOSE 4

/* The GRASP-03 purposes of an author's relays, in the text's order. */
enum relaylist_purpose {
	/* Read/unmarked relays: live inbox coverage (root authors). */
	RELAYLIST_INBOX,
	/* Write/unmarked relays: identity-refresh sources (discovery). */
	RELAYLIST_OUTBOX,
	/* History mailboxes: write/unmarked relays first, read-only relays
	 * filling any remaining slots (participants' history probes). */
	RELAYLIST_HISTORY,
	/* Read/unmarked inboxes: owner/maintainer repository coverage. */
	RELAYLIST_REPO_INBOX,
	RELAYLIST_NPURPOSES
};

/* NIP-65 markers of an entry: "read", "write", or both when unmarked. */
#define RELAYLIST_READ	0x01
#define RELAYLIST_WRITE 0x02

/*
 * Distinct relays the selections can name together: the inbox purposes
 * take the first read entries, the outboxes the first write entries, and
 * the history mailboxes a subset of both (their read-only fill comes from
 * the first read entries).
 */
#define RELAYLIST_MAX_KEYS (2 * RELAYLIST_PER_PURPOSE)

struct relaylist {
	/* The relays some purpose selected: canonical keys, owned. */
	char	*rl_key[RELAYLIST_MAX_KEYS];
	unsigned rl_flags[RELAYLIST_MAX_KEYS]; /* RELAYLIST_READ... */
	size_t	 rl_nkeys;
	/* Per purpose, indexes into rl_key, in published tag order. */
	uint8_t	 rl_slot[RELAYLIST_NPURPOSES][RELAYLIST_PER_PURPOSE];
	size_t	 rl_n[RELAYLIST_NPURPOSES];
	/* What the parse saw (views and tests). */
	unsigned rl_r_tags;	/* "r" tags with a value */
	unsigned rl_bad_marker; /* ignored for their marker */
	unsigned rl_refused;	/* failed hygiene, or this relay */
	unsigned rl_duplicates; /* merged into an earlier spelling */
	unsigned rl_distinct;	/* distinct accepted relays */
};

/*
 * Reads the relay list ev (kind 10002) into out, which it overwrites
 * (clear an earlier list first).  urlflags are relayurl_canon() flags:
 * 0, or RELAYURL_ALLOW_PRIVATE under NGIT_SYNC_ALLOW_PRIVATE_TARGETS, but
 * never RELAYURL_TRUSTED (peer input).  self_keys (n canonical keys, see
 * relayurl_self_keys(); NULL when n is 0) name this relay, which never
 * takes a slot.  Returns 0, or -1 if ev is not a kind 10002 (out is then
 * empty).  Free with relaylist_clear().
 */
int relaylist_parse(const struct event *ev, unsigned urlflags,
    const char *const self_keys[], size_t n, struct relaylist *out);

/* Releases what the list owns and empties it.  Idempotent. */
void relaylist_clear(struct relaylist *);
/*
 * 1 if ev, a kind 5 by the list's author, withdraws the stored kind 10002
 * list_id of created_at list_at (NIP-09: by id, or by its address with a
 * created_at not older); else 0.  The caller checks the author.
 */
int  relaylist_deleted_by(const struct event *ev,
     const uint8_t list_id[EVENT_ID_LEN], int64_t list_at);

/*
 * The i-th relay (canonical key, owned by the list) of purpose p, or NULL
 * when i >= rl_n[p].
 */
const char *relaylist_get(const struct relaylist *, enum relaylist_purpose p,
    size_t i);

/* "inbox", "outbox", "history", "repo_inbox"; "?" for anything else. */
const char *relaylist_purpose_name(enum relaylist_purpose);

#endif
