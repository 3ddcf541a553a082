/*
 * purg.c: the purgatory tables of graspd's database (see purg.h; schema
 * in db.c).  relayd writes them inside its batched transactions; syncd
 * may read them.  Each statement is prepared once, on first use.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "event.h"
#include "log.h"
#include "purg.h"
#include "store.h"

enum purg_stmt {
	PS_ANN_PUT,
	PS_ANN_GET,
	PS_ANN_BY_ID,
	PS_ANN_LIST_D,
	PS_ANN_DELETE,
	PS_ANN_SET_EXPIRY,
	PS_ANN_DUE,
	PS_EV_PUT,
	PS_WANT_PUT,
	PS_EV_GET,
	PS_EV_LIST_D,
	PS_EV_LIST_D_KIND,
	PS_EV_LIST_KIND,
	PS_EV_DELETE,
	PS_EV_EXTEND_D,
	PS_EV_DUE,
	PS_PH_PUT,
	PS_PH_LIST_ID,
	PS_PH_DELETE_ID,
	PS_PH_SWEEP,
	PS_PH_DUE,
	PS_EXP_ADD,
	PS_EXP_HAS,
	PS_EXP_SWEEP,
	PS_NEXT_DEADLINE,
	PS_COUNT,
	PS_NSTMT,
};

#define ANN_COLS \
	"pubkey, id, d, json, relays, created_at, expires_at," \
	" soft_expired"
#define EV_COLS "id, pubkey, kind, created_at, d, json, remote, expires_at"
#define PH_COLS "id, owner, d, oid, expires_at"

static const char *const purg_sql[PS_NSTMT] = {
	[PS_ANN_PUT] = "INSERT OR REPLACE INTO purgatory_announcements"
		       " (pubkey, d, id, created_at, json, relays, entered_at,"
		       " expires_at, soft_expired)"
		       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0)",
	[PS_ANN_GET] = "SELECT " ANN_COLS " FROM purgatory_announcements"
		       " WHERE pubkey = ?1 AND d = ?2",
	[PS_ANN_BY_ID] = "SELECT " ANN_COLS " FROM purgatory_announcements"
			 " WHERE id = ?1",
	[PS_ANN_LIST_D] = "SELECT " ANN_COLS " FROM purgatory_announcements"
			  " WHERE d = ?1 ORDER BY created_at, id",
	[PS_ANN_DELETE] = "DELETE FROM purgatory_announcements"
			  " WHERE pubkey = ?1 AND d = ?2",
	[PS_ANN_SET_EXPIRY] = "UPDATE purgatory_announcements"
			      " SET expires_at = ?3, soft_expired = ?4"
			      " WHERE pubkey = ?1 AND d = ?2",
	[PS_ANN_DUE] = "SELECT " ANN_COLS " FROM purgatory_announcements"
		       " WHERE expires_at <= ?1 ORDER BY expires_at",
	[PS_EV_PUT] =
	    "INSERT OR REPLACE INTO purgatory_events"
	    " (id, pubkey, kind, created_at, d, json, remote, entered_at,"
	    " expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
	[PS_WANT_PUT] = "INSERT OR IGNORE INTO purgatory_wants (event, oid)"
			" VALUES (?1, ?2)",
	[PS_EV_GET] = "SELECT " EV_COLS " FROM purgatory_events WHERE id = ?1",
	[PS_EV_LIST_D] = "SELECT " EV_COLS " FROM purgatory_events"
			 " WHERE d = ?1 ORDER BY created_at, id",
	[PS_EV_LIST_D_KIND] =
	    "SELECT " EV_COLS " FROM purgatory_events"
	    " WHERE d = ?1 AND kind = ?2 ORDER BY created_at, id",
	[PS_EV_LIST_KIND] = "SELECT " EV_COLS " FROM purgatory_events"
			    " WHERE kind = ?1 ORDER BY created_at, id",
	[PS_EV_DELETE] = "DELETE FROM purgatory_events WHERE id = ?1",
	[PS_EV_EXTEND_D] = "UPDATE purgatory_events SET expires_at ="
			   " max(expires_at, ?2) WHERE d = ?1 AND kind = 30618",
	[PS_EV_DUE] = "SELECT " EV_COLS " FROM purgatory_events"
		      " WHERE expires_at <= ?1 ORDER BY expires_at",
	[PS_PH_PUT] =
	    "INSERT OR REPLACE INTO purgatory_placeholders"
	    " (id, owner, d, oid, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)",
	[PS_PH_LIST_ID] = "SELECT " PH_COLS " FROM purgatory_placeholders"
			  " WHERE id = ?1",
	[PS_PH_DELETE_ID] = "DELETE FROM purgatory_placeholders WHERE id = ?1",
	[PS_PH_SWEEP] = "DELETE FROM purgatory_placeholders"
			" WHERE expires_at <= ?1",
	[PS_PH_DUE] = "SELECT " PH_COLS " FROM purgatory_placeholders"
		      " WHERE expires_at <= ?1",
	[PS_EXP_ADD] = "INSERT OR REPLACE INTO purgatory_expired"
		       " (id, expired_at) VALUES (?1, ?2)",
	[PS_EXP_HAS] = "SELECT 1 FROM purgatory_expired WHERE id = ?1",
	[PS_EXP_SWEEP] = "DELETE FROM purgatory_expired"
			 " WHERE expired_at <= ?1",
	[PS_NEXT_DEADLINE] =
	    "SELECT min(t) FROM ("
	    " SELECT min(expires_at) AS t FROM purgatory_announcements"
	    " UNION ALL SELECT min(expires_at) FROM purgatory_events"
	    " UNION ALL SELECT min(expires_at) FROM purgatory_placeholders)",
	[PS_COUNT] =
	    "SELECT"
	    " (SELECT count(*) FROM purgatory_announcements"
	    "  WHERE soft_expired = 0),"
	    " (SELECT count(*) FROM purgatory_announcements"
	    "  WHERE soft_expired = 1),"
	    " (SELECT count(*) FROM purgatory_events WHERE kind = 30618),"
	    " (SELECT count(*) FROM purgatory_events WHERE kind <> 30618),"
	    " (SELECT count(*) FROM purgatory_placeholders),"
	    " (SELECT count(*) FROM purgatory_expired)",
};

struct purg {
	sqlite3	     *p_db;
	sqlite3_stmt *p_stmt[PS_NSTMT];
};

struct purg *
purg_open(struct store *st)
{
	struct purg *p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		fatal("purg_open");
	p->p_db = store_sqlite(st);
	return p;
}

void
purg_close(struct purg *p)
{
	size_t i;

	if (p == NULL)
		return;
	for (i = 0; i < PS_NSTMT; i++)
		sqlite3_finalize(p->p_stmt[i]);
	free(p);
}

static void
purg_sqlerr(struct purg *p, enum purg_stmt which)
{
	log_warnx("purgatory: %s: %s", purg_sql[which],
	    sqlite3_errmsg(p->p_db));
}

/* The cached statement, reset and with no bindings; NULL after logging. */
static sqlite3_stmt *
stmt(struct purg *p, enum purg_stmt which)
{
	sqlite3_stmt *st = p->p_stmt[which];

	if (st != NULL) {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		return st;
	}
	if (sqlite3_prepare_v3(p->p_db, purg_sql[which], -1,
		SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
		purg_sqlerr(p, which);
		return NULL;
	}
	p->p_stmt[which] = st;
	return st;
}

/* Steps a statement that returns no rows; 0 or -1 after logging. */
static int
run(struct purg *p, enum purg_stmt which, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		purg_sqlerr(p, which);
		return -1;
	}
	return 0;
}

static char *
col_str(sqlite3_stmt *st, int i)
{
	const unsigned char *s = sqlite3_column_text(st, i);
	char		    *d;

	if ((d = strdup(s ? (const char *)s : "")) == NULL)
		fatal("purgatory: strdup");
	return d;
}

static void
col_blob32(sqlite3_stmt *st, int i, uint8_t out[32])
{
	if (sqlite3_column_bytes(st, i) == 32)
		memcpy(out, sqlite3_column_blob(st, i), 32);
	else
		memset(out, 0, 32);
}

static void
read_ann(sqlite3_stmt *st, struct purg_ann *a)
{
	memset(a, 0, sizeof(*a));
	col_blob32(st, 0, a->pa_pubkey);
	col_blob32(st, 1, a->pa_id);
	a->pa_d = col_str(st, 2);
	a->pa_json = col_str(st, 3);
	a->pa_relays = col_str(st, 4);
	a->pa_created_at = sqlite3_column_int64(st, 5);
	a->pa_expires_at = sqlite3_column_int64(st, 6);
	a->pa_soft_expired = sqlite3_column_int(st, 7) != 0;
}

static void
read_ev(sqlite3_stmt *st, struct purg_ev *e)
{
	memset(e, 0, sizeof(*e));
	col_blob32(st, 0, e->pe_id);
	col_blob32(st, 1, e->pe_pubkey);
	e->pe_kind = (uint32_t)sqlite3_column_int64(st, 2);
	e->pe_created_at = sqlite3_column_int64(st, 3);
	e->pe_d = col_str(st, 4);
	e->pe_json = col_str(st, 5);
	e->pe_remote = sqlite3_column_int(st, 6) != 0;
	e->pe_expires_at = sqlite3_column_int64(st, 7);
}

static void
read_ph(sqlite3_stmt *st, struct purg_placeholder *ph)
{
	const unsigned char *oid;

	memset(ph, 0, sizeof(*ph));
	col_blob32(st, 0, ph->pp_id);
	col_blob32(st, 1, ph->pp_owner);
	ph->pp_d = col_str(st, 2);
	oid = sqlite3_column_text(st, 3);
	snprintf(ph->pp_oid, sizeof(ph->pp_oid), "%s",
	    oid ? (const char *)oid : "");
	ph->pp_expires_at = sqlite3_column_int64(st, 4);
}

void
purg_ann_clear(struct purg_ann *a)
{
	if (a == NULL)
		return;
	free(a->pa_d);
	free(a->pa_json);
	free(a->pa_relays);
	memset(a, 0, sizeof(*a));
}

void
purg_ev_clear(struct purg_ev *e)
{
	if (e == NULL)
		return;
	free(e->pe_d);
	free(e->pe_json);
	memset(e, 0, sizeof(*e));
}

void
purg_placeholder_clear(struct purg_placeholder *ph)
{
	if (ph == NULL)
		return;
	free(ph->pp_d);
	memset(ph, 0, sizeof(*ph));
}

void
purg_ann_free_list(struct purg_ann *v, size_t n)
{
	size_t i;

	for (i = 0; v != NULL && i < n; i++)
		purg_ann_clear(&v[i]);
	free(v);
}

void
purg_ev_free_list(struct purg_ev *v, size_t n)
{
	size_t i;

	for (i = 0; v != NULL && i < n; i++)
		purg_ev_clear(&v[i]);
	free(v);
}

void
purg_placeholder_free_list(struct purg_placeholder *v, size_t n)
{
	size_t i;

	for (i = 0; v != NULL && i < n; i++)
		purg_placeholder_clear(&v[i]);
	free(v);
}

/*
 * Steps a bound query, reading each row with read (of size bytes) into a
 * growing array.  Returns 0 with the array in *out and its length in *n,
 * or -1 (nothing returned).
 */
static int
collect(struct purg *p, enum purg_stmt which, sqlite3_stmt *st,
    void (*read)(sqlite3_stmt *, void *), size_t size, void **out, size_t *n)
{
	char  *v = NULL;
	size_t cap = 0, k = 0;
	int    rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (k == cap) {
			cap = cap ? cap * 2 : 8;
			if ((v = reallocarray(v, cap, size)) == NULL)
				fatal("purgatory: reallocarray");
		}
		read(st, v + k * size);
		k++;
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		purg_sqlerr(p, which);
		*out = v;
		*n = k;
		return -1;
	}
	*out = v;
	*n = k;
	return 0;
}

static void
read_ann_v(sqlite3_stmt *st, void *a)
{
	read_ann(st, a);
}

static void
read_ev_v(sqlite3_stmt *st, void *e)
{
	read_ev(st, e);
}

static void
read_ph_v(sqlite3_stmt *st, void *ph)
{
	read_ph(st, ph);
}

static int
ann_list(struct purg *p, enum purg_stmt which, sqlite3_stmt *st,
    struct purg_ann **out, size_t *n)
{
	void *v;

	if (collect(p, which, st, read_ann_v, sizeof(**out), &v, n) == -1) {
		purg_ann_free_list(v, *n);
		*out = NULL;
		*n = 0;
		return -1;
	}
	*out = v;
	return 0;
}

static int
ev_list(struct purg *p, enum purg_stmt which, sqlite3_stmt *st,
    struct purg_ev **out, size_t *n)
{
	void *v;

	if (collect(p, which, st, read_ev_v, sizeof(**out), &v, n) == -1) {
		purg_ev_free_list(v, *n);
		*out = NULL;
		*n = 0;
		return -1;
	}
	*out = v;
	return 0;
}

/* Steps a single-row query: 1 with the row read by read, 0, or -1. */
static int
get_one(struct purg *p, enum purg_stmt which, sqlite3_stmt *st,
    void (*read)(sqlite3_stmt *, void *), void *out)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW) {
		read(st, out);
		sqlite3_reset(st);
		return 1;
	}
	sqlite3_reset(st);
	if (rc == SQLITE_DONE)
		return 0;
	purg_sqlerr(p, which);
	return -1;
}

int
purg_ann_put(struct purg *p, const struct event *ev, const char *d,
    const char *relays_json, int64_t now, int64_t expires_at)
{
	sqlite3_stmt *st;

	if ((st = stmt(p, PS_ANN_PUT)) == NULL)
		return -1;
	sqlite3_bind_blob(st, 1, ev->pubkey, PUBKEY_LEN, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, d, -1, SQLITE_STATIC);
	sqlite3_bind_blob(st, 3, ev->id, EVENT_ID_LEN, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, ev->created_at);
	sqlite3_bind_text(st, 5, ev->json, (int)ev->json_len, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, relays_json, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 7, now);
	sqlite3_bind_int64(st, 8, expires_at);
	return run(p, PS_ANN_PUT, st);
}

int
purg_ann_get(struct purg *p, const uint8_t pubkey[PUBKEY_LEN], const char *d,
    struct purg_ann *out)
{
	sqlite3_stmt *st;

	if ((st = stmt(p, PS_ANN_GET)) == NULL)
		return -1;
	sqlite3_bind_blob(st, 1, pubkey, PUBKEY_LEN, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, d, -1, SQLITE_STATIC);
	return get_one(p, PS_ANN_GET, st, read_ann_v, out);
}

int
purg_ann_by_id(struct purg *p, const uint8_t id[EVENT_ID_LEN],
    struct purg_ann *out)
{
	sqlite3_stmt *st;

	if ((st = stmt(p, PS_ANN_BY_ID)) == NULL)
		return -1;
	sqlite3_bind_blob(st, 1, id, EVENT_ID_LEN, SQLITE_STATIC);
	return get_one(p, PS_ANN_BY_ID, st, read_ann_v, out);
}

int
purg_ann_list_d(struct purg *p, const char *d, struct purg_ann **out, size_t *n)
{
	sqlite3_stmt *st;

	*out = NULL;
	*n = 0;
	if ((st = stmt(p, PS_ANN_LIST_D)) == NULL)
		return -1;
	sqlite3_bind_text(st, 1, d, -1, SQLITE_STATIC);
	return ann_list(p, PS_ANN_LIST_D, st, out, n);
}

int
purg_ann_delete(struct purg *p, const uint8_t pubkey[PUBKEY_LEN], const char *d)
{
	sqlite3_stmt *st;

	if ((st = stmt(p, PS_ANN_DELETE)) == NULL)
		return -1;
	sqlite3_bind_blob(st, 1, pubkey, PUBKEY_LEN, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, d, -1, SQLITE_STATIC);
	return run(p, PS_ANN_DELETE, st);
}

int
purg_ann_set_expiry(struct purg *p, const uint8_t pubkey[PUBKEY_LEN],
    const char *d, int64_t expires_at, int soft_expired)
{
	sqlite3_stmt *st;

	if ((st = stmt(p, PS_ANN_SET_EXPIRY)) == NULL)
		return -1;
	sqlite3_bind_blob(st, 1, pubkey, PUBKEY_LEN, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, d, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, expires_at);
	sqlite3_bind_int(st, 4, soft_expired != 0);
	return run(p, PS_ANN_SET_EXPIRY, st);
}

int
purg_ann_due(struct purg *p, int64_t now, struct purg_ann **out, size_t *n)
{
	sqlite3_stmt *st;

	*out = NULL;
	*n = 0;
	if ((st = stmt(p, PS_ANN_DUE)) == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, now);
	return ann_list(p, PS_ANN_DUE, st, out, n);
}

int
purg_ev_put(struct purg *p, const struct event *ev, const char *d, int remote,
    int64_t now, int64_t expires_at, const char *const *wants, size_t nwants)
{
	sqlite3_stmt *st;
	size_t	      i;

	if ((st = stmt(p, PS_EV_PUT)) == NULL)
		return -1;
	sqlite3_bind_blob(st, 1, ev->id, EVENT_ID_LEN, SQLITE_STATIC);
	sqlite3_bind_blob(st, 2, ev->pubkey, PUBKEY_LEN, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, ev->kind);
	sqlite3_bind_int64(st, 4, ev->created_at);
	sqlite3_bind_text(st, 5, d, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, ev->json, (int)ev->json_len, SQLITE_STATIC);
	sqlite3_bind_int(st, 7, remote != 0);
	sqlite3_bind_int64(st, 8, now);
	sqlite3_bind_int64(st, 9, expires_at);
	if (run(p, PS_EV_PUT, st) == -1)
		return -1;
	for (i = 0; i < nwants; i++) {
		if ((st = stmt(p, PS_WANT_PUT)) == NULL)
			return -1;
		sqlite3_bind_blob(st, 1, ev->id, EVENT_ID_LEN, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, wants[i], -1, SQLITE_STATIC);
		if (run(p, PS_WANT_PUT, st) == -1)
			return -1;
	}
	return 0;
}

int
purg_ev_get(struct purg *p, const uint8_t id[EVENT_ID_LEN], struct purg_ev *out)
{
	sqlite3_stmt *st;

	if ((st = stmt(p, PS_EV_GET)) == NULL)
		return -1;
	sqlite3_bind_blob(st, 1, id, EVENT_ID_LEN, SQLITE_STATIC);
	return get_one(p, PS_EV_GET, st, read_ev_v, out);
}

int
purg_ev_list_d(struct purg *p, const char *d, uint32_t kind,
    struct purg_ev **out, size_t *n)
{
	enum purg_stmt which = kind ? PS_EV_LIST_D_KIND : PS_EV_LIST_D;
	sqlite3_stmt  *st;

	*out = NULL;
	*n = 0;
	if ((st = stmt(p, which)) == NULL)
		return -1;
	sqlite3_bind_text(st, 1, d, -1, SQLITE_STATIC);
	if (kind)
		sqlite3_bind_int64(st, 2, kind);
	return ev_list(p, which, st, out, n);
}

int
purg_ev_list_kind(struct purg *p, uint32_t kind, struct purg_ev **out,
    size_t *n)
{
	sqlite3_stmt *st;

	*out = NULL;
	*n = 0;
	if ((st = stmt(p, PS_EV_LIST_KIND)) == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, kind);
	return ev_list(p, PS_EV_LIST_KIND, st, out, n);
}

int
purg_ev_delete(struct purg *p, const uint8_t id[EVENT_ID_LEN])
{
	sqlite3_stmt *st;

	if ((st = stmt(p, PS_EV_DELETE)) == NULL)
		return -1;
	sqlite3_bind_blob(st, 1, id, EVENT_ID_LEN, SQLITE_STATIC);
	return run(p, PS_EV_DELETE, st);
}

int
purg_ev_extend_d(struct purg *p, const char *d, int64_t expires_at)
{
	sqlite3_stmt *st;

	if ((st = stmt(p, PS_EV_EXTEND_D)) == NULL)
		return -1;
	sqlite3_bind_text(st, 1, d, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, expires_at);
	return run(p, PS_EV_EXTEND_D, st);
}

int
purg_ev_due(struct purg *p, int64_t now, struct purg_ev **out, size_t *n)
{
	sqlite3_stmt *st;

	*out = NULL;
	*n = 0;
	if ((st = stmt(p, PS_EV_DUE)) == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, now);
	return ev_list(p, PS_EV_DUE, st, out, n);
}

int
purg_placeholder_put(struct purg *p, const uint8_t id[EVENT_ID_LEN],
    const uint8_t owner[PUBKEY_LEN], const char *d, const char *oid,
    int64_t expires_at)
{
	sqlite3_stmt *st;

	if ((st = stmt(p, PS_PH_PUT)) == NULL)
		return -1;
	sqlite3_bind_blob(st, 1, id, EVENT_ID_LEN, SQLITE_STATIC);
	sqlite3_bind_blob(st, 2, owner, PUBKEY_LEN, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, d, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, oid, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, expires_at);
	return run(p, PS_PH_PUT, st);
}

int
purg_placeholder_list_id(struct purg *p, const uint8_t id[EVENT_ID_LEN],
    struct purg_placeholder **out, size_t *n)
{
	sqlite3_stmt *st;
	void	     *v;

	*out = NULL;
	*n = 0;
	if ((st = stmt(p, PS_PH_LIST_ID)) == NULL)
		return -1;
	sqlite3_bind_blob(st, 1, id, EVENT_ID_LEN, SQLITE_STATIC);
	if (collect(p, PS_PH_LIST_ID, st, read_ph_v, sizeof(**out), &v, n) ==
	    -1) {
		purg_placeholder_free_list(v, *n);
		*n = 0;
		return -1;
	}
	*out = v;
	return 0;
}

int
purg_placeholder_due(struct purg *p, int64_t now, struct purg_placeholder **out,
    size_t *n)
{
	sqlite3_stmt *st;
	void	     *v;

	*out = NULL;
	*n = 0;
	if ((st = stmt(p, PS_PH_DUE)) == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, now);
	if (collect(p, PS_PH_DUE, st, read_ph_v, sizeof(**out), &v, n) == -1) {
		purg_placeholder_free_list(v, *n);
		*n = 0;
		return -1;
	}
	*out = v;
	return 0;
}

int
purg_placeholder_delete_id(struct purg *p, const uint8_t id[EVENT_ID_LEN])
{
	sqlite3_stmt *st;

	if ((st = stmt(p, PS_PH_DELETE_ID)) == NULL)
		return -1;
	sqlite3_bind_blob(st, 1, id, EVENT_ID_LEN, SQLITE_STATIC);
	return run(p, PS_PH_DELETE_ID, st);
}

int
purg_placeholder_sweep(struct purg *p, int64_t now)
{
	sqlite3_stmt *st;

	if ((st = stmt(p, PS_PH_SWEEP)) == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, now);
	if (run(p, PS_PH_SWEEP, st) == -1)
		return -1;
	return sqlite3_changes(p->p_db);
}

int
purg_expired_add(struct purg *p, const uint8_t id[EVENT_ID_LEN], int64_t at)
{
	sqlite3_stmt *st;

	if ((st = stmt(p, PS_EXP_ADD)) == NULL)
		return -1;
	sqlite3_bind_blob(st, 1, id, EVENT_ID_LEN, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, at);
	return run(p, PS_EXP_ADD, st);
}

int
purg_expired_has(struct purg *p, const uint8_t id[EVENT_ID_LEN])
{
	sqlite3_stmt *st;
	int	      rc;

	if ((st = stmt(p, PS_EXP_HAS)) == NULL)
		return -1;
	sqlite3_bind_blob(st, 1, id, EVENT_ID_LEN, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE)
		return 0;
	purg_sqlerr(p, PS_EXP_HAS);
	return -1;
}

int
purg_expired_sweep(struct purg *p, int64_t before)
{
	sqlite3_stmt *st;

	if ((st = stmt(p, PS_EXP_SWEEP)) == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, before);
	if (run(p, PS_EXP_SWEEP, st) == -1)
		return -1;
	return sqlite3_changes(p->p_db);
}

int
purg_next_deadline(struct purg *p, int64_t *out)
{
	sqlite3_stmt *st;
	int	      rc;

	*out = INT64_MAX;
	if ((st = stmt(p, PS_NEXT_DEADLINE)) == NULL)
		return -1;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		*out = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		purg_sqlerr(p, PS_NEXT_DEADLINE);
		return -1;
	}
	return 0;
}

int
purg_count(struct purg *p, struct purg_counts *out)
{
	sqlite3_stmt *st;
	int	      rc;

	memset(out, 0, sizeof(*out));
	if ((st = stmt(p, PS_COUNT)) == NULL)
		return -1;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		out->announcements = sqlite3_column_int64(st, 0);
		out->soft_expired = sqlite3_column_int64(st, 1);
		out->states = sqlite3_column_int64(st, 2);
		out->prs = sqlite3_column_int64(st, 3);
		out->placeholders = sqlite3_column_int64(st, 4);
		out->expired = sqlite3_column_int64(st, 5);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_ROW) {
		purg_sqlerr(p, PS_COUNT);
		return -1;
	}
	return 0;
}
