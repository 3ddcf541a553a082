/*
 * sync_inv.c: syncd's inventories (see syncd.h): the accepted repository
 * announcements, by address, and the root events (patches, pull requests,
 * issues) whose "a" tag names one of them (design.md, "Storage").  Both
 * are rebuilt from the database at start and grow with the accepted feed;
 * the GRASP-02 sync that will work from them is not written yet.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "event.h"
#include "log.h"
#include "syncd.h"

/* FNV-1a, 64 bits. */
static uint64_t
strset_hash(const char *s, size_t len)
{
	uint64_t	h = 0xcbf29ce484222325ULL;
	size_t		i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* The slot holding s, or the empty slot where it would go. */
static struct strset_ent *
strset_slot(const struct strset *ss, const char *s, size_t len)
{
	size_t			 i = strset_hash(s, len) & (ss->ss_cap - 1);
	struct strset_ent	*e;

	for (;; i = (i + 1) & (ss->ss_cap - 1)) {
		e = &ss->ss_v[i];
		if (e->se_s == NULL || (e->se_len == len &&
		    memcmp(e->se_s, s, len) == 0))
			return e;
	}
}

int
strset_has(const struct strset *ss, const char *s, size_t len)
{
	if (ss->ss_cap == 0)
		return 0;
	return strset_slot(ss, s, len)->se_s != NULL;
}

int
strset_add(struct strset *ss, const char *s, size_t len)
{
	struct strset_ent	*e;
	size_t			 i;

	if (strset_has(ss, s, len))
		return 0;
	/* Keep at least half the slots empty so probes stay short. */
	if ((ss->ss_n + 1) * 2 > ss->ss_cap) {
		struct strset	 bigger;

		bigger.ss_cap = ss->ss_cap ? ss->ss_cap * 2 : 64;
		bigger.ss_n = ss->ss_n;
		if ((bigger.ss_v = calloc(bigger.ss_cap,
		    sizeof(*bigger.ss_v))) == NULL)
			fatal("strset: calloc");
		for (i = 0; i < ss->ss_cap; i++)
			if (ss->ss_v[i].se_s != NULL)
				*strset_slot(&bigger, ss->ss_v[i].se_s,
				    ss->ss_v[i].se_len) = ss->ss_v[i];
		free(ss->ss_v);
		*ss = bigger;
	}
	e = strset_slot(ss, s, len);
	if ((e->se_s = malloc(len + 1)) == NULL)
		fatal("strset: malloc");
	memcpy(e->se_s, s, len);
	e->se_s[len] = '\0';
	e->se_len = len;
	ss->ss_n++;
	return 1;
}

void
strset_free(struct strset *ss)
{
	size_t	i;

	for (i = 0; i < ss->ss_cap; i++)
		free(ss->ss_v[i].se_s);
	free(ss->ss_v);
	memset(ss, 0, sizeof(*ss));
}

int
sync_root_kind_index(uint32_t kind)
{
	switch (kind) {
	case KIND_PATCH:
		return 0;
	case KIND_PR:
		return 1;
	case KIND_ISSUE:
		return 2;
	default:
		return -1;
	}
}

/* 1 if some "a" tag of ev names a repository in the inventory. */
static int
names_known_repo(const struct sync_inv *inv, const struct event *ev)
{
	const struct event_tag	*t;
	uint32_t		 i;

	for (i = 0; i < ev->ntags; i++) {
		t = &ev->tags[i];
		if (t->n >= 2 && t->v[0].len == 1 && t->v[0].s[0] == 'a' &&
		    strset_has(&inv->si_repos, t->v[1].s, t->v[1].len))
			return 1;
	}
	return 0;
}

void
sync_inv_add(struct sync_inv *inv, const struct event *ev)
{
	const struct estr	*d;
	struct buf		 b = BUF_INIT;
	int			 k;

	if (ev->kind == KIND_REPO_ANNOUNCEMENT) {
		inv->si_announcements++;
		d = event_tag_value(ev, "d");
		buf_printf(&b, "%u:%s:", KIND_REPO_ANNOUNCEMENT,
		    ev->pubkey_hex);
		if (d != NULL)
			buf_add(&b, d->s, d->len);
		strset_add(&inv->si_repos, b.b_data, b.b_len);
		buf_free(&b);
		return;
	}
	if ((k = sync_root_kind_index(ev->kind)) == -1)
		return;
	if (!names_known_repo(inv, ev)) {
		inv->si_unlinked++;
		return;
	}
	if (strset_add(&inv->si_roots, ev->id_hex, 64))
		inv->si_roots_by_kind[k]++;
}

void
sync_inv_free(struct sync_inv *inv)
{
	strset_free(&inv->si_repos);
	strset_free(&inv->si_roots);
	memset(inv, 0, sizeof(*inv));
}
