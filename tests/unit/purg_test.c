/*
 * purg_test.c: the purgatory tables (purg.c, schema step 2 in db.c):
 * announcements by (owner, d) with their two-phase expiry, held events
 * with the objects they wait for, placeholders, expired ids, the earliest
 * deadline, counts, survival across reopening, read-only access, and the
 * repo_sync_levels view that tells syncd Full from StateOnly.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "event.h"
#include "log.h"
#include "purg.h"
#include "store.h"
#include "t.h"
#include "tdir.h"

static const uint8_t sk1[SECKEY_LEN] = { [0 ... 31] = 0x11 };
static const uint8_t sk2[SECKEY_LEN] = { [0 ... 31] = 0x22 };

static char		tmpdir[64];
static struct tdir_prog tp = { tmpdir, sizeof(tmpdir), "purg_test" };
static char		path[128];
static int		dbcount;

static struct store *
fresh(void)
{
	char	      err[256];
	struct store *s;

	snprintf(path, sizeof(path), "%s/db%d/graspd.db", tmpdir, ++dbcount);
	if ((s = store_open(path, 0, err, sizeof(err))) == NULL)
		printf("# store_open: %s\n", err);
	return s;
}

/* A purgatory on a fresh store, the store in *sp; NULL if it won't open. */
static struct purg *
fresh_purg(struct store **sp)
{
	return (*sp = fresh()) == NULL ? NULL : purg_open(*sp);
}

/* Closes p and then its store s. */
static void
close_purg(struct purg *p, struct store *s)
{
	purg_close(p);
	store_close(s);
}

/* The rows of s's purgatory_wants (the objects syncd hunts), or -1. */
static int
count_wants(struct store *s)
{
	sqlite3_stmt *q;
	int	      k = -1;

	if (sqlite3_prepare_v2(store_sqlite(s),
		"SELECT count(*) FROM "
		"purgatory_wants",
		-1, &q, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(q) == SQLITE_ROW)
		k = sqlite3_column_int(q, 0);
	sqlite3_finalize(q);
	return k;
}

static struct event *
ann(const uint8_t *sk, int64_t t, const char *d)
{
	char tags[256];

	snprintf(tags, sizeof(tags),
	    "[[\"d\",\"%s\"],[\"relays\","
	    "\"wss://a.example\"]]",
	    d);
	return event_new_signed(sk, t, 30617, tags, "");
}

static void
announcements_put_get_replace_expire(void)
{
	struct store   *s;
	struct purg    *p;
	struct event   *a1, *a2, *b;
	struct purg_ann pa, *list = NULL;
	size_t		n = 0;

	T_ASSERT((p = fresh_purg(&s)) != NULL);
	a1 = ann(sk1, 100, "repo");
	a2 = ann(sk1, 200, "repo");
	b = ann(sk2, 150, "repo");
	T_EQ_INT(purg_ann_get(p, a1->pubkey, "repo", &pa), 0);
	T_EQ_INT(
	    purg_ann_put(p, a1, "repo", "[\"wss://a.example\"]", 1000, 2800),
	    0);
	T_EQ_INT(purg_ann_get(p, a1->pubkey, "repo", &pa), 1);
	T_CHECK(memcmp(pa.pa_id, a1->id, EVENT_ID_LEN) == 0);
	T_EQ_STR(pa.pa_relays, "[\"wss://a.example\"]");
	T_EQ_INT(pa.pa_expires_at, 2800);
	T_EQ_INT(pa.pa_soft_expired, 0);
	T_CHECK(strcmp(pa.pa_json, a1->json) == 0);
	purg_ann_clear(&pa);
	/* (owner, d) holds one: a newer version replaces it. */
	T_EQ_INT(purg_ann_put(p, a2, "repo", "[]", 1100, 2900), 0);
	T_EQ_INT(purg_ann_by_id(p, a1->id, &pa), 0);
	T_EQ_INT(purg_ann_by_id(p, a2->id, &pa), 1);
	purg_ann_clear(&pa);
	T_EQ_INT(purg_ann_put(p, b, "repo", "[]", 1100, 3000), 0);
	T_EQ_INT(purg_ann_list_d(p, "repo", &list, &n), 0);
	T_EQ_INT(n, 2);
	T_CHECK(list[0].pa_created_at == 150 && list[1].pa_created_at == 200);
	purg_ann_free_list(list, n);
	/* Due at 2900: a2 only; soft expiry moves it to phase two. */
	T_EQ_INT(purg_ann_due(p, 2900, &list, &n), 0);
	T_EQ_INT(n, 1);
	T_CHECK(memcmp(list[0].pa_id, a2->id, EVENT_ID_LEN) == 0);
	purg_ann_free_list(list, n);
	T_EQ_INT(purg_ann_set_expiry(p, a2->pubkey, "repo", 90000, 1), 0);
	T_EQ_INT(purg_ann_get(p, a2->pubkey, "repo", &pa), 1);
	T_EQ_INT(pa.pa_soft_expired, 1);
	T_EQ_INT(pa.pa_expires_at, 90000);
	purg_ann_clear(&pa);
	T_EQ_INT(purg_ann_delete(p, b->pubkey, "repo"), 0);
	T_EQ_INT(purg_ann_get(p, b->pubkey, "repo", &pa), 0);
	event_destroy(a1);
	event_destroy(a2);
	event_destroy(b);
	close_purg(p, s);
}

static void
events_wants_order_extend_and_due(void)
{
	struct store  *s;
	struct purg   *p;
	struct event  *st1, *st2, *pr;
	struct purg_ev pe, *list = NULL;
	const char    *wants[] = {
		   "0123456789abcdef0123456789abcdef01234567",
		   "1123456789abcdef0123456789abcdef01234567",
	};
	size_t n = 0;

	T_ASSERT((p = fresh_purg(&s)) != NULL);
	st1 = event_new_signed(sk1, 300, 30618, "[[\"d\",\"r\"]]", "");
	st2 = event_new_signed(sk2, 200, 30618, "[[\"d\",\"r\"]]", "");
	pr = event_new_signed(sk2, 250, 1618, "[[\"c\",\"x\"]]", "");
	T_EQ_INT(purg_ev_put(p, st1, "r", 0, 1000, 2800, wants, 2), 0);
	T_EQ_INT(purg_ev_put(p, st2, "r", 1, 1000, 2800, wants, 1), 0);
	T_EQ_INT(purg_ev_put(p, pr, "r", 0, 1000, 2000, wants + 1, 1), 0);
	T_EQ_INT(purg_ev_get(p, st2->id, &pe), 1);
	T_EQ_INT(pe.pe_kind, 30618);
	T_EQ_INT(pe.pe_remote, 1);
	T_EQ_STR(pe.pe_d, "r");
	purg_ev_clear(&pe);
	/* Oldest first; by kind. */
	T_EQ_INT(purg_ev_list_d(p, "r", 0, &list, &n), 0);
	T_EQ_INT(n, 3);
	T_CHECK(list[0].pe_created_at == 200 && list[2].pe_created_at == 300);
	purg_ev_free_list(list, n);
	T_EQ_INT(purg_ev_list_d(p, "r", 30618, &list, &n), 0);
	T_EQ_INT(n, 2);
	purg_ev_free_list(list, n);
	T_EQ_INT(purg_ev_list_kind(p, 1618, &list, &n), 0);
	T_EQ_INT(n, 1);
	purg_ev_free_list(list, n);
	/* What syncd's hunt reads: the wanted objects. */
	T_EQ_INT(count_wants(s), 4);
	/* Extending d's states leaves the PR alone. */
	T_EQ_INT(purg_ev_extend_d(p, "r", 5000), 0);
	T_EQ_INT(purg_ev_due(p, 2500, &list, &n), 0);
	T_EQ_INT(n, 1);
	T_CHECK(memcmp(list[0].pe_id, pr->id, EVENT_ID_LEN) == 0);
	purg_ev_free_list(list, n);
	/* Deleting an event drops what it wanted. */
	T_EQ_INT(purg_ev_delete(p, st1->id), 0);
	T_EQ_INT(count_wants(s), 2);
	event_destroy(st1);
	event_destroy(st2);
	event_destroy(pr);
	close_purg(p, s);
}

static void
placeholders_expired_deadline_and_counts(void)
{
	struct store		*s;
	struct purg		*p;
	struct purg_placeholder *ph = NULL;
	struct purg_counts	 c;
	struct event		*a;
	uint8_t			 id[EVENT_ID_LEN], owner[PUBKEY_LEN];
	int64_t			 next;
	size_t			 n = 0;

	T_ASSERT((p = fresh_purg(&s)) != NULL);
	T_EQ_INT(purg_next_deadline(p, &next), 0);
	T_CHECK(next == INT64_MAX);
	memset(id, 0xab, EVENT_ID_LEN);
	memset(owner, 0xcd, PUBKEY_LEN);
	T_EQ_INT(purg_placeholder_put(p, id, owner, "r",
		     "0123456789abcdef0123456789abcdef01234567", 700),
	    0);
	T_EQ_INT(purg_placeholder_list_id(p, id, &ph, &n), 0);
	T_EQ_INT(n, 1);
	T_EQ_STR(ph[0].pp_oid, "0123456789abcdef0123456789abcdef01234567");
	T_EQ_STR(ph[0].pp_d, "r");
	purg_placeholder_free_list(ph, n);
	a = ann(sk1, 100, "r");
	T_EQ_INT(purg_ann_put(p, a, "r", "[]", 0, 900), 0);
	T_EQ_INT(purg_next_deadline(p, &next), 0);
	T_EQ_INT(next, 700);
	T_EQ_INT(purg_placeholder_sweep(p, 700), 1);
	T_EQ_INT(purg_next_deadline(p, &next), 0);
	T_EQ_INT(next, 900);
	T_EQ_INT(purg_expired_has(p, id), 0);
	T_EQ_INT(purg_expired_add(p, id, 1000), 0);
	T_EQ_INT(purg_expired_has(p, id), 1);
	T_EQ_INT(purg_count(p, &c), 0);
	T_EQ_INT(c.announcements, 1);
	T_EQ_INT(c.placeholders, 0);
	T_EQ_INT(c.expired, 1);
	T_EQ_INT(purg_expired_sweep(p, 999), 0);
	T_EQ_INT(purg_expired_sweep(p, 1000), 1);
	T_EQ_INT(purg_expired_has(p, id), 0);
	event_destroy(a);
	close_purg(p, s);
}

static int
level_of(struct store *s, const char *d, const uint8_t pk[PUBKEY_LEN],
    char *out, size_t outlen)
{
	sqlite3_stmt *q;
	int	      rc = 0;

	out[0] = '\0';
	if (sqlite3_prepare_v2(store_sqlite(s),
		"SELECT level FROM "
		"repo_sync_levels WHERE d = ?1 AND pubkey = ?2",
		-1, &q, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(q, 1, d, -1, SQLITE_STATIC);
	sqlite3_bind_blob(q, 2, pk, PUBKEY_LEN, SQLITE_STATIC);
	while (sqlite3_step(q) == SQLITE_ROW) {
		snprintf(out, outlen, "%s", sqlite3_column_text(q, 0));
		rc++;
	}
	sqlite3_finalize(q);
	return rc;
}

static void
sync_levels_persist_and_read_only(void)
{
	struct store   *s, *ro;
	struct purg    *p;
	struct event   *a, *b;
	struct purg_ann pa;
	char		level[32], err[256];

	T_ASSERT((p = fresh_purg(&s)) != NULL);
	a = ann(sk1, 100, "held");
	b = ann(sk2, 100, "served");
	T_EQ_INT(purg_ann_put(p, a, "held", "[\"wss://a.example\"]", 0, 900),
	    0);
	T_EQ_INT(store_put(s, b, NULL), STORE_OK);
	T_EQ_INT(level_of(s, "held", a->pubkey, level, sizeof(level)), 1);
	T_EQ_STR(level, "state_only");
	T_EQ_INT(level_of(s, "served", b->pubkey, level, sizeof(level)), 1);
	T_EQ_STR(level, "full");
	/* Promoted: stored, and the held row gone: one row, full. */
	T_EQ_INT(store_put(s, a, NULL), STORE_OK);
	T_EQ_INT(level_of(s, "held", a->pubkey, level, sizeof(level)), 1);
	T_EQ_STR(level, "full");
	T_EQ_INT(purg_ann_delete(p, a->pubkey, "held"), 0);
	close_purg(p, s);
	/* Reopened: still there; read-only readers see the same. */
	event_destroy(a);
	a = ann(sk1, 300, "again");
	s = store_open(path, 0, err, sizeof(err));
	T_ASSERT(s != NULL);
	p = purg_open(s);
	T_EQ_INT(purg_ann_put(p, a, "again", "[]", 0, 900), 0);
	close_purg(p, s);
	ro = store_open(path, 1, err, sizeof(err));
	T_ASSERT(ro != NULL);
	p = purg_open(ro);
	T_EQ_INT(purg_ann_get(p, a->pubkey, "again", &pa), 1);
	purg_ann_clear(&pa);
	T_EQ_INT(level_of(ro, "again", a->pubkey, level, sizeof(level)), 1);
	T_EQ_STR(level, "state_only");
	close_purg(p, ro);
	event_destroy(a);
	event_destroy(b);
}

static const struct t_case cases[] = {
	T_CASE(announcements_put_get_replace_expire),
	T_CASE(events_wants_order_extend_and_due),
	T_CASE(placeholders_expired_deadline_and_counts),
	T_CASE(sync_levels_persist_and_read_only),
};

T_MAIN_FIXTURE(cases, &tdir_log_fixture, &tp, 0)
