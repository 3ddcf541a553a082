/*
 * relaylist_fuzz.c: libFuzzer harness for reading a NIP-65 relay list
 * (kind 10002) as discoveryd, syncd and historyd read a participant's
 * mailboxes: the event is parsed (common/event.c), every "r" tag value
 * goes through common/relayurl.c with and without flags, and the event
 * goes through common/relaylist.c's relaylist_parse().
 *
 * Invariants: the parsed event passes fuzz_check_event() (event_check.h)
 * and every r value passes fuzz_check_url() (relayurl_check.h).  Then a
 * naive reading of the list, written here from relaylist.h's rules (exact
 * "read"/"write" or no marker, hygiene as peer input, this relay left
 * out, canonical dedupe with OR'd markers, first spelling's position),
 * must give relaylist_parse()'s keys, markers, counters and every
 * purpose's selection in order: inbox and repo inbox the first read
 * entries, outbox the first write entries, history the first write
 * entries then the first read-only ones, RELAYLIST_PER_PURPOSE each.
 * That is checked with no flags, with RELAYURL_ALLOW_PRIVATE, and with
 * RELAYURL_TRUSTED (which peer input must ignore) plus a self key.  An
 * event of another kind is refused, then read as if it were a 10002.
 */
#include "event_check.h"
#include "policy.h"
#include "relaylist.h"
#include "relayurl_check.h"

/* One distinct relay of the naive reading. */
struct mailbox {
	char	 key[RELAYURL_MAX + 1];
	unsigned flags; /* RELAYLIST_READ | RELAYLIST_WRITE */
};

struct naive {
	struct mailbox *mb;
	size_t		n;
	unsigned	r_tags, bad_marker, refused, duplicates;
};

/*
 * The flags of a tag's marker, 0 for a tag to ignore: relaylist.h's rule
 * (no marker is both; only the exact markers below count), written from
 * the header rather than from relaylist.c so the two can disagree.
 */
static unsigned
marker(const struct event_tag *t)
{
	static const struct {
		const char *name;
		unsigned    flags;
	} known[] = {
		{ "read", RELAYLIST_READ },
		{ "write", RELAYLIST_WRITE },
	};
	size_t i;

	if (t->n < 3)
		return RELAYLIST_READ | RELAYLIST_WRITE;
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (t->v[2].len == strlen(known[i].name) &&
		    memcmp(t->v[2].s, known[i].name, t->v[2].len) == 0)
			return known[i].flags;
	return 0;
}

static void
naive_read(const struct event *ev, unsigned flags, const char *const *self,
    size_t nself, struct naive *nv)
{
	char	 key[RELAYURL_MAX + 1];
	unsigned fl;
	uint32_t i;
	size_t	 j;

	memset(nv, 0, sizeof(*nv));
	for (i = 0; i < ev->ntags; i++) {
		const struct event_tag *t = &ev->tags[i];

		if (t->n < 2 || t->v[0].len != 1 || t->v[0].s[0] != 'r')
			continue;
		nv->r_tags++;
		if ((fl = marker(t)) == 0) {
			nv->bad_marker++;
			continue;
		}
		if (relayurl_canon(t->v[1].s, t->v[1].len, flags, key,
			sizeof(key), NULL) == -1 ||
		    (nself > 0 && relayurl_is_self(key, self, nself))) {
			nv->refused++;
			continue;
		}
		for (j = 0; j < nv->n; j++)
			if (strcmp(nv->mb[j].key, key) == 0)
				break;
		if (j < nv->n) {
			nv->mb[j].flags |= fl;
			nv->duplicates++;
			continue;
		}
		if ((nv->mb = realloc(nv->mb, (nv->n + 1) * sizeof(*nv->mb))) ==
		    NULL)
			abort();
		memcpy(nv->mb[nv->n].key, key, sizeof(key));
		nv->mb[nv->n].flags = fl;
		nv->n++;
	}
}

/*
 * Appends to sel (*nsel entries) the first entries with all of want and
 * none of unwanted, up to RELAYLIST_PER_PURPOSE in all.
 */
static void
naive_select(const struct naive *nv, unsigned want, unsigned unwanted,
    const char **sel, size_t *nsel)
{
	size_t i;

	for (i = 0; i < nv->n && *nsel < RELAYLIST_PER_PURPOSE; i++)
		if ((nv->mb[i].flags & want) == want &&
		    (nv->mb[i].flags & unwanted) == 0)
			sel[(*nsel)++] = nv->mb[i].key;
}

static void
check_purpose(const struct relaylist *rl, enum relaylist_purpose p,
    const char **want, size_t nwant)
{
	size_t i;

	FUZZ_ASSERT(strcmp(relaylist_purpose_name(p), "?") != 0);
	FUZZ_ASSERT(rl->rl_n[p] == nwant);
	for (i = 0; i < nwant; i++) {
		FUZZ_ASSERT(rl->rl_slot[p][i] < rl->rl_nkeys);
		FUZZ_ASSERT(relaylist_get(rl, p, i) != NULL);
		FUZZ_ASSERT(strcmp(relaylist_get(rl, p, i), want[i]) == 0);
	}
	FUZZ_ASSERT(relaylist_get(rl, p, nwant) == NULL);
}

/* Reads ev with relaylist_parse() and compares it with naive_read(). */
static void
compare(const struct event *ev, unsigned flags, const char *const *self,
    size_t nself)
{
	struct relaylist rl;
	struct naive	 nv;
	const char	*sel[RELAYLIST_PER_PURPOSE];
	size_t		 nsel, i, j;
	int		 used;

	FUZZ_ASSERT(relaylist_parse(ev, flags, self, nself, &rl) == 0);
	/* Peer input: RELAYURL_TRUSTED must not widen anything. */
	flags &= ~(unsigned)RELAYURL_TRUSTED;
	naive_read(ev, flags, self, nself, &nv);

	FUZZ_ASSERT(rl.rl_r_tags == nv.r_tags);
	FUZZ_ASSERT(rl.rl_bad_marker == nv.bad_marker);
	FUZZ_ASSERT(rl.rl_refused == nv.refused);
	FUZZ_ASSERT(rl.rl_duplicates == nv.duplicates);
	FUZZ_ASSERT(rl.rl_distinct == nv.n);
	FUZZ_ASSERT(rl.rl_nkeys <= RELAYLIST_MAX_KEYS);
	for (i = 0; i < rl.rl_nkeys; i++) {
		fuzz_check_key(rl.rl_key[i], flags);
		for (j = 0; j < nv.n; j++)
			if (strcmp(nv.mb[j].key, rl.rl_key[i]) == 0)
				break;
		FUZZ_ASSERT(j < nv.n && rl.rl_flags[i] == nv.mb[j].flags);
		for (j = i + 1; j < rl.rl_nkeys; j++)
			FUZZ_ASSERT(strcmp(rl.rl_key[i], rl.rl_key[j]) != 0);
		/* Every kept key is some purpose's. */
		used = 0;
		for (int p = 0; p < RELAYLIST_NPURPOSES; p++)
			for (j = 0; j < rl.rl_n[p]; j++)
				used |= rl.rl_slot[p][j] == i;
		FUZZ_ASSERT(used);
	}

	nsel = 0;
	naive_select(&nv, RELAYLIST_READ, 0, sel, &nsel);
	check_purpose(&rl, RELAYLIST_INBOX, sel, nsel);
	check_purpose(&rl, RELAYLIST_REPO_INBOX, sel, nsel);
	nsel = 0;
	naive_select(&nv, RELAYLIST_WRITE, 0, sel, &nsel);
	check_purpose(&rl, RELAYLIST_OUTBOX, sel, nsel);
	naive_select(&nv, RELAYLIST_READ, RELAYLIST_WRITE, sel, &nsel);
	check_purpose(&rl, RELAYLIST_HISTORY, sel, nsel);
	FUZZ_ASSERT(relaylist_get(&rl, RELAYLIST_NPURPOSES, 0) == NULL);

	relaylist_clear(&rl);
	relaylist_clear(&rl);
	free(nv.mb);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct event	  *ev;
	struct relaylist   rl;
	struct naive	   nv;
	const struct estr *v;
	const char	  *self[1];
	char		   err[256];
	uint32_t	   i;

	fuzz_init_log();
	if ((ev = event_parse((const char *)data, size, err, sizeof(err))) ==
	    NULL)
		return 0;
	fuzz_check_event(ev);
	for (i = 0; i < ev->ntags; i++) {
		if (ev->tags[i].n < 2 || ev->tags[i].v[0].len != 1 ||
		    ev->tags[i].v[0].s[0] != 'r')
			continue;
		v = &ev->tags[i].v[1];
		(void)fuzz_check_url(v->s, v->len);
	}

	if (ev->kind != KIND_RELAY_LIST) {
		memset(&rl, 0xa5, sizeof(rl));
		FUZZ_ASSERT(relaylist_parse(ev, 0, NULL, 0, &rl) == -1);
		FUZZ_ASSERT(rl.rl_nkeys == 0 && rl.rl_r_tags == 0);
		relaylist_clear(&rl);
		/* relaylist_parse() reads only the kind and the tags. */
		ev->kind = KIND_RELAY_LIST;
	}
	compare(ev, 0, NULL, 0);
	compare(ev, RELAYURL_ALLOW_PRIVATE, NULL, 0);
	/* This relay is the first relay of the list, if it has one. */
	naive_read(ev, 0, NULL, 0, &nv);
	self[0] = nv.n > 0 ? nv.mb[0].key : "wss://relay.example.com/";
	compare(ev, RELAYURL_TRUSTED, self, 1);
	free(nv.mb);

	(void)relaylist_deleted_by(ev, ev->id, ev->created_at);
	event_destroy(ev);
	return 0;
}
