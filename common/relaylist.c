/*
 * relaylist.c: a NIP-65 kind 10002 read into GRASP-03's per-purpose relay
 * selections (see relaylist.h).  Linked by discoveryd, syncd and historyd.
 */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "hmap.h"
#include "log.h"
#include "policy.h"
#include "relaylist.h"
#include "relayurl.h"

/* One distinct accepted relay while the tags are read. */
struct cand {
	char	*c_key;
	unsigned c_flags;
	int	 c_out; /* index in rl_key, or -1 */
};

static int
is_tag_r(const struct event_tag *t)
{
	return t->n >= 2 && t->v[0].len == 1 && t->v[0].s[0] == 'r';
}

/* The flags a tag's marker gives, or 0 when the tag must be ignored. */
static unsigned
marker_flags(const struct event_tag *t)
{
	const struct estr *m;

	if (t->n < 3)
		return RELAYLIST_READ | RELAYLIST_WRITE;
	m = &t->v[2];
	if (m->len == 4 && memcmp(m->s, "read", 4) == 0)
		return RELAYLIST_READ;
	if (m->len == 5 && memcmp(m->s, "write", 5) == 0)
		return RELAYLIST_WRITE;
	return 0;
}

/* Gives candidate c a place in out (once) and returns its index. */
static uint8_t
take(struct relaylist *out, struct cand *c)
{
	if (c->c_out == -1) {
		/* At most the first read and the first write entries. */
		if (out->rl_nkeys == RELAYLIST_MAX_KEYS)
			fatalx("relaylist: more selected relays than possible");
		c->c_out = (int)out->rl_nkeys;
		out->rl_key[out->rl_nkeys] = c->c_key;
		out->rl_flags[out->rl_nkeys] = c->c_flags;
		out->rl_nkeys++;
		c->c_key = NULL;
	}
	return (uint8_t)c->c_out;
}

/* Appends the first candidates with all of want and none of unwanted. */
static void
select_into(struct relaylist *out, enum relaylist_purpose p, struct cand *cv,
    size_t n, unsigned want, unsigned unwanted)
{
	size_t i;

	for (i = 0; i < n && out->rl_n[p] < RELAYLIST_PER_PURPOSE; i++) {
		if ((cv[i].c_flags & want) != want ||
		    (cv[i].c_flags & unwanted) != 0)
			continue;
		out->rl_slot[p][out->rl_n[p]++] = take(out, &cv[i]);
	}
}

int
relaylist_parse(const struct event *ev, unsigned urlflags,
    const char *const self_keys[], size_t nself, struct relaylist *out)
{
	struct hmap  seen = HMAP_INIT;
	struct cand *cv = NULL, *c;
	size_t	     n = 0, cap = 0, i;
	char	     key[RELAYURL_MAX + 1];
	unsigned     fl;
	uint32_t     t;
	void	    *v;

	memset(out, 0, sizeof(*out));
	if (ev->kind != KIND_RELAY_LIST)
		return -1;
	/* Peer input: the operator's trust never applies here. */
	urlflags &= ~(unsigned)RELAYURL_TRUSTED;
	for (t = 0; t < ev->ntags; t++) {
		const struct event_tag *tg = &ev->tags[t];

		if (!is_tag_r(tg))
			continue;
		out->rl_r_tags++;
		if ((fl = marker_flags(tg)) == 0) {
			out->rl_bad_marker++;
			continue;
		}
		if (relayurl_canon(tg->v[1].s, tg->v[1].len, urlflags, key,
			sizeof(key), NULL) == -1 ||
		    (nself > 0 && relayurl_is_self(key, self_keys, nself))) {
			out->rl_refused++;
			continue;
		}
		if ((v = hmap_get(&seen, key, strlen(key))) != NULL) {
			cv[(uintptr_t)v - 1].c_flags |= fl;
			out->rl_duplicates++;
			continue;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			if ((c = reallocarray(cv, cap, sizeof(*cv))) == NULL)
				fatal("relaylist_parse");
			cv = c;
		}
		if ((cv[n].c_key = strdup(key)) == NULL)
			fatal("relaylist_parse");
		cv[n].c_flags = fl;
		cv[n].c_out = -1;
		n++;
		hmap_put(&seen, key, strlen(key), (void *)(uintptr_t)n);
	}
	out->rl_distinct = (unsigned)n;

	select_into(out, RELAYLIST_INBOX, cv, n, RELAYLIST_READ, 0);
	select_into(out, RELAYLIST_OUTBOX, cv, n, RELAYLIST_WRITE, 0);
	select_into(out, RELAYLIST_HISTORY, cv, n, RELAYLIST_WRITE, 0);
	select_into(out, RELAYLIST_HISTORY, cv, n, RELAYLIST_READ,
	    RELAYLIST_WRITE);
	select_into(out, RELAYLIST_REPO_INBOX, cv, n, RELAYLIST_READ, 0);

	for (i = 0; i < n; i++)
		free(cv[i].c_key); /* the ones no purpose took */
	free(cv);
	hmap_free(&seen);
	return 0;
}

void
relaylist_clear(struct relaylist *rl)
{
	size_t i;

	for (i = 0; i < rl->rl_nkeys; i++)
		free(rl->rl_key[i]);
	memset(rl, 0, sizeof(*rl));
}

const char *
relaylist_get(const struct relaylist *rl, enum relaylist_purpose p, size_t i)
{
	if ((unsigned)p >= RELAYLIST_NPURPOSES || i >= rl->rl_n[p])
		return NULL;
	return rl->rl_key[rl->rl_slot[p][i]];
}

const char *
relaylist_purpose_name(enum relaylist_purpose p)
{
	switch (p) {
	case RELAYLIST_INBOX:
		return "inbox";
	case RELAYLIST_OUTBOX:
		return "outbox";
	case RELAYLIST_HISTORY:
		return "history";
	case RELAYLIST_REPO_INBOX:
		return "repo_inbox";
	default:
		return "?";
	}
}

int
relaylist_deleted_by(const struct event *ev,
    const uint8_t list_id[EVENT_ID_LEN], int64_t list_at)
{
	char	 addr[80], hex[PUBKEY_HEX_LEN + 1];
	uint8_t	 id[EVENT_ID_LEN];
	uint32_t t;

	hex_encode(ev->pubkey, PUBKEY_LEN, hex);
	snprintf(addr, sizeof(addr), "%u:%s:", KIND_RELAY_LIST, hex);
	for (t = 0; t < ev->ntags; t++) {
		const struct event_tag *tg = &ev->tags[t];

		if (tg->n < 2)
			continue;
		if (strcmp(tg->v[0].s, "e") == 0 &&
		    hex_decode(tg->v[1].s, tg->v[1].len, id, EVENT_ID_LEN) ==
			0 &&
		    memcmp(id, list_id, EVENT_ID_LEN) == 0)
			return 1;
		if (strcmp(tg->v[0].s, "a") == 0 &&
		    tg->v[1].len == strlen(addr) &&
		    strcmp(tg->v[1].s, addr) == 0 && ev->created_at >= list_at)
			return 1;
	}
	return 0;
}
