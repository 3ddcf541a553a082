/*
 * filter_fuzz.c: libFuzzer harness for common/filter.c: filter_parse() on
 * a REQ filter object and filter_match() of events against it.
 *
 * Input: a JSON filter object, or an array [filter, event, event...].
 * The filter is matched against those events, a few built-in ones and an
 * event made from the filter's own first values (which must match unless
 * the filter cannot match anything).  Invariants: a refusal says
 * "invalid: ..." or "unsupported: ..."; a parsed filter's lists are
 * sorted, unique and within FILTER_MAX_VALUES; and filter_match() agrees
 * with a naive NIP-01 matcher that reads the JSON filter directly.
 */
#include "event_check.h"
#include "filter.h"
#include "json.h"

/* 32 and 64 bytes of hex, written out. */
#define H16(c)	 c c c c c c c c c c c c c c c c
#define HEX32(c) H16(c) H16(c) H16(c) H16(c)
#define ZERO32	 HEX32("0")
#define ZERO64	 ZERO32 ZERO32
#define PUBKEY \
	"2a2546babe6ed577cc03584e083982e4ec8a7e7d625d5a3dd430c49138adf3ea"

/* Events every filter is matched against (ids need not verify). */
static const char *const builtin_events[] = {
	"{\"id\":\"" H16("0") H16("0") H16(
	    "0") "0000000000000001"
		 "\",\"pubkey\":\"" PUBKEY
		 "\",\"created_at\":1790000000,\"kind\":1621,\"tags\":[[\"a\","
		 "\"30617:" H16("ab") H16(
		     "ab") ":repo\"],"
			   "[\"e\",\"" H16("0") H16("0") H16(
			       "0") "0000000000000002\"],"
				    "[\"p\",\"" PUBKEY "\"],"
				    "[\"t\",\"\"],[\"t\"],[\"T\",\"x\\u0000y\"],[\"subject\",\"s\"]],"
				    "\"content\":\"hello\",\"sig\":\"" ZERO64
				    "\"}",
	"{\"id\":\"" HEX32(
	    "f") "\",\"pubkey\":\"" ZERO32
		 "\",\"created_at\":0,\"kind\":0,\"tags\":[],\"content\":\"\","
		 "\"sig\":\"" ZERO64 "\"}",
	"{\"id\":\"8" H16("0") H16("0") H16(
	    "0") "000000000000000"
		 "\",\"pubkey\":\"" HEX32(
		     "f") "\",\"created_at\":9223372036854775807,\"kind\":65535,\"tags\":"
			  "[[\"d\",\"repo\"],[\"d\",\"other\"],"
			  "[\"r\",\"wss://relay.example.com\"]],"
			  "\"content\":\"\",\"sig\":\"" ZERO64 "\"}",
};
#define NBUILTIN	 (sizeof(builtin_events) / sizeof(builtin_events[0]))
/* Events taken from one input at most, to bound the work. */
#define MAX_INPUT_EVENTS 8

static struct event *builtin[NBUILTIN];

static int
estr_eq(const struct estr *e, const struct json *v)
{
	return e->len == v->len && memcmp(e->s, v->s, v->len) == 0;
}

/* NIP-01 matching, read straight off the filter object fj. */
static int
ref_match(const struct json *fj, const struct event *ev)
{
	const struct json *m, *v;
	uint32_t	   i;
	int		   any;

	for (m = fj->child; m; m = m->next) {
		any = 0;
		if (strcmp(m->key, "limit") == 0)
			continue;
		if (strcmp(m->key, "since") == 0) {
			if (ev->created_at < m->i)
				return 0;
			continue;
		}
		if (strcmp(m->key, "until") == 0) {
			if (ev->created_at > m->i)
				return 0;
			continue;
		}
		for (v = m->child; v && !any; v = v->next) {
			if (strcmp(m->key, "ids") == 0)
				any = memcmp(v->s, ev->id_hex,
					  EVENT_ID_HEX_LEN) == 0;
			else if (strcmp(m->key, "authors") == 0)
				any = memcmp(v->s, ev->pubkey_hex,
					  PUBKEY_HEX_LEN) == 0;
			else if (strcmp(m->key, "kinds") == 0)
				any = v->i == (int64_t)ev->kind;
			else
				for (i = 0; i < ev->ntags && !any; i++)
					any = ev->tags[i].n >= 2 &&
					    ev->tags[i].v[0].len == 1 &&
					    ev->tags[i].v[0].s[0] ==
						m->key[1] &&
					    estr_eq(&ev->tags[i].v[1], v);
		}
		if (!any)
			return 0;
	}
	return 1;
}

static int
cmp_estr(const struct estr *a, const struct estr *b)
{
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	return memcmp(a->s, b->s, a->len);
}

static void
check_filter(const struct filter *f)
{
	size_t i, j;

	FUZZ_ASSERT(f->f_nids <= FILTER_MAX_VALUES &&
	    f->f_nauthors <= FILTER_MAX_VALUES &&
	    f->f_nkinds <= FILTER_MAX_VALUES);
	for (i = 1; i < f->f_nids; i++)
		FUZZ_ASSERT(
		    memcmp(f->f_ids[i - 1], f->f_ids[i], EVENT_ID_LEN) < 0);
	for (i = 1; i < f->f_nauthors; i++)
		FUZZ_ASSERT(memcmp(f->f_authors[i - 1], f->f_authors[i],
				PUBKEY_LEN) < 0);
	for (i = 1; i < f->f_nkinds; i++)
		FUZZ_ASSERT(f->f_kinds[i - 1] < f->f_kinds[i]);
	for (i = 0; i < f->f_nkinds; i++)
		FUZZ_ASSERT(f->f_kinds[i] <= EVENT_KIND_MAX);
	for (i = 0; i < f->f_ntags; i++) {
		const struct filter_tag *t = &f->f_tags[i];

		if (i > 0)
			FUZZ_ASSERT((unsigned char)f->f_tags[i - 1].ft_name <
			    (unsigned char)t->ft_name);
		FUZZ_ASSERT((t->ft_name >= 'a' && t->ft_name <= 'z') ||
		    (t->ft_name >= 'A' && t->ft_name <= 'Z'));
		FUZZ_ASSERT(t->ft_n <= FILTER_MAX_VALUES);
		for (j = 0; j < t->ft_n; j++) {
			FUZZ_ASSERT(t->ft_v[j].s[t->ft_v[j].len] == '\0');
			if (j > 0)
				FUZZ_ASSERT(
				    cmp_estr(&t->ft_v[j - 1], &t->ft_v[j]) < 0);
		}
	}
	FUZZ_ASSERT(!f->f_has_since || f->f_since >= 0);
	FUZZ_ASSERT(!f->f_has_until || f->f_until >= 0);
	FUZZ_ASSERT(!f->f_has_limit || f->f_limit >= 0);
}

/*
 * Builds the event the filter fj asks for with the first value of each
 * list; NULL if the filter is one that matches nothing by construction.
 */
static struct event *
wanted_event(const struct json *fj, int *must_match)
{
	const struct json *m, *v;
	const char	  *id = NULL, *author = NULL;
	struct buf	   b = BUF_INIT;
	struct event	  *ev;
	int64_t		   created = 1, since = -1, until = -1;
	int64_t		   kind = 1;
	char		   err[256];
	int		   first = 1;

	*must_match = 1;
	for (m = fj->child; m; m = m->next) {
		if (strcmp(m->key, "since") == 0)
			since = m->i;
		else if (strcmp(m->key, "until") == 0)
			until = m->i;
		else if (strcmp(m->key, "limit") != 0 && m->n == 0)
			*must_match = 0;
		else if (strcmp(m->key, "ids") == 0)
			id = m->child->s;
		else if (strcmp(m->key, "authors") == 0)
			author = m->child->s;
		else if (strcmp(m->key, "kinds") == 0)
			kind = m->child->i;
	}
	if (since >= 0)
		created = since;
	else if (until >= 0)
		created = until;
	if (since >= 0 && until >= 0 && since > until)
		*must_match = 0;

	buf_printf(&b,
	    "{\"id\":\"%.64s\",\"pubkey\":\"%.64s\","
	    "\"created_at\":%lld,\"kind\":%lld,\"tags\":[",
	    id ? id : ZERO32, author ? author : ZERO32, (long long)created,
	    (long long)kind);
	for (m = fj->child; m; m = m->next) {
		if (m->key[0] != '#' || m->n == 0)
			continue;
		v = m->child;
		buf_adds(&b, first ? "[" : ",[");
		first = 0;
		fuzz_jstr(&b, m->key + 1, 1);
		buf_addc(&b, ',');
		fuzz_jstr(&b, v->s, v->len);
		buf_addc(&b, ']');
	}
	buf_adds(&b, "],\"content\":\"\",\"sig\":\"");
	for (int i = 0; i < 128; i++)
		buf_addc(&b, '0');
	buf_adds(&b, "\"}");
	ev = event_parse(b.b_data, b.b_len, err, sizeof(err));
	if (ev == NULL) {
		fprintf(stderr, "wanted event does not parse: %s\n%.300s\n",
		    err, b.b_data);
		FUZZ_ASSERT(ev != NULL);
	}
	buf_free(&b);
	return ev;
}

static void
match_one(const struct json *fj, const struct filter *f, const struct event *ev)
{
	int m = filter_match(f, ev);

	FUZZ_ASSERT(m == 0 || m == 1);
	FUZZ_ASSERT(m == ref_match(fj, ev));
	FUZZ_ASSERT(filter_match_any(f, 1, ev) == m);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_doc	  *doc;
	const struct json *root, *fj, *ej;
	struct event	  *ev, *events[MAX_INPUT_EVENTS];
	struct filter	   f;
	size_t		   i, nev = 0;
	char		   err[256];
	int		   rc, must;

	fuzz_init_log();
	if (builtin[0] == NULL)
		for (i = 0; i < NBUILTIN; i++) {
			builtin[i] = event_parse(builtin_events[i],
			    strlen(builtin_events[i]), err, sizeof(err));
			FUZZ_ASSERT(builtin[i] != NULL);
		}
	root = json_parse((const char *)data, size, &doc, err, sizeof(err));
	if (root == NULL)
		return 0;
	fj = root;
	if (root->type == JSON_ARRAY) {
		fj = json_at(root, 0);
		for (ej = fj ? fj->next : NULL; ej && nev < MAX_INPUT_EVENTS;
		     ej = ej->next)
			if ((ev = event_from_json(ej, err, sizeof(err))) !=
			    NULL)
				events[nev++] = ev;
	}

	err[0] = '\0';
	rc = filter_parse(fj, &f, err, sizeof(err));
	if (rc == -1) {
		FUZZ_ASSERT(strncmp(err, "invalid: ", 9) == 0 ||
		    strncmp(err, "unsupported: ", 13) == 0);
		/* A refused filter is left empty. */
		FUZZ_ASSERT(f.f_ids == NULL && f.f_authors == NULL &&
		    f.f_kinds == NULL && f.f_tags == NULL && f.f_ntags == 0);
		filter_free(&f);
		goto done;
	}
	FUZZ_ASSERT(rc == 0);
	check_filter(&f);
	for (i = 0; i < NBUILTIN; i++)
		match_one(fj, &f, builtin[i]);
	for (i = 0; i < nev; i++)
		match_one(fj, &f, events[i]);
	ev = wanted_event(fj, &must);
	match_one(fj, &f, ev);
	if (must)
		FUZZ_ASSERT(filter_match(&f, ev) == 1);
	event_destroy(ev);
	filter_free(&f);
	filter_free(&f);
done:
	for (i = 0; i < nev; i++)
		event_destroy(events[i]);
	json_free(doc);
	return 0;
}
