/*
 * qbuild.c: turning a REQ filter into SQL, for the event store (store.c).
 * Each index yields the events of one list value newest first, so a
 * filter whose driving list is short becomes one such scan per value
 * ("arm"), merged by SQLite's compound-SELECT merge (UNION, which also
 * drops an event that two arms find) and cut at the limit: only about
 * limit rows are read however many match.  A single arm is read in its
 * index's time order alone, and store.c orders its ties by id and cuts
 * it at the limit.  Long lists fall back to one SELECT with IN lists and
 * a sort; ids to one SELECT whose few rows (one per id at most) are
 * sorted by store.c.  Values are always bound, never written into the
 * SQL text.
 */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "buf.h"
#include "db.h"
#include "filter.h"
#include "log.h"
#include "qbuild.h"

/*
 * Ours, measured at 20k events: the longest list queried as one
 * newest-first scan per value.  Authors and kinds have many events per
 * value, so per-value scans beat sorting every match up to about a
 * hundred values; a tag value usually has few events, so a longer #x list
 * is cheaper sorted (SQLite allows 500 compound arms).
 */
#define STORE_ARMS_MAX 128
#define STORE_ARMS_TAG 16

/* Smallest power of two >= n (n >= 1). */
static size_t
pad_count(size_t n)
{
	size_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/* Records one bound value; returns its parameter number. */
static int
qb_add(struct qbuild *qb, enum qbind_type type, const void *p, size_t len,
    int64_t i)
{
	if (qb->qb_n == qb->qb_cap) {
		qb->qb_cap = qb->qb_cap ? qb->qb_cap * 2 : 64;
		qb->qb_bind =
		    reallocarray(qb->qb_bind, qb->qb_cap, sizeof(*qb->qb_bind));
		if (qb->qb_bind == NULL)
			fatal("reallocarray");
	}
	qb->qb_bind[qb->qb_n].qv_type = type;
	qb->qb_bind[qb->qb_n].qv_p = p;
	qb->qb_bind[qb->qb_n].qv_len = len;
	qb->qb_bind[qb->qb_n].qv_i = i;
	return (int)++qb->qb_n;
}

/*
 * Binds a list.  An IN list is padded to a power of two by repeating its
 * last value, so that few statement shapes exist; a driving list is not
 * padded, since each value costs an arm.
 */
static struct qlist
qb_add_list(struct qbuild *qb, enum qbind_type type, const void *v, size_t n,
    int pad)
{
	struct qlist l = { 0, 0 };
	size_t	     i, k;

	l.ql_n = pad ? pad_count(n) : n;
	for (i = 0; i < l.ql_n; i++) {
		k = i < n ? i : n - 1;
		switch (type) {
		case QB_BLOB:
			l.ql_first = qb_add(qb, type,
			    ((const uint8_t(*)[32])v)[k], 32, 0);
			break;
		case QB_TEXT:
		case QB_TAG:
			l.ql_first =
			    qb_add(qb, type, ((const struct estr *)v)[k].s,
				((const struct estr *)v)[k].len, 0);
			break;
		default:
			l.ql_first =
			    qb_add(qb, type, NULL, 0, ((const uint32_t *)v)[k]);
			break;
		}
	}
	l.ql_first -= (int)l.ql_n - 1;
	return l;
}

static void
qb_list_sql(struct qbuild *qb, struct qlist l)
{
	size_t i;

	/* A list of 16 ids took 16 printf calls: a REQ's costliest text. */
	buf_addc(&qb->qb_sql, '(');
	for (i = 0; i < l.ql_n; i++) {
		buf_adds(&qb->qb_sql, i ? ",?" : "?");
		buf_add_int(&qb->qb_sql, l.ql_first + (long long)i);
	}
	buf_addc(&qb->qb_sql, ')');
}

/* Picks the driving list and binds every value of f. */
void
qb_plan(struct qbuild *qb, const struct filter *f, int64_t now, int64_t limit)
{
	size_t i, na = f->f_nauthors, nk = f->f_nkinds;

	qb->qb_drive = QD_PLAIN;
	if (f->f_has_ids)
		;
	else if (f->f_ntags > 0) {
		for (i = 1; i < f->f_ntags; i++)
			if (f->f_tags[i].ft_n < f->f_tags[qb->qb_dtag].ft_n)
				qb->qb_dtag = i;
		if (f->f_tags[qb->qb_dtag].ft_n <= STORE_ARMS_TAG)
			qb->qb_drive = QD_TAG;
	} else if (f->f_has_authors && f->f_has_kinds &&
	    na * nk <= STORE_ARMS_MAX)
		qb->qb_drive = QD_PAIR;
	else if (f->f_has_authors && na <= STORE_ARMS_MAX)
		qb->qb_drive = QD_AUTHOR;
	else if (f->f_has_kinds && nk <= STORE_ARMS_MAX)
		qb->qb_drive = QD_KIND;
	/*
	 * Without statistics SQLite may scan a common kind rather than the
	 * tag index; ids and tags are the selective members.
	 */
	qb->qb_plus =
	    qb->qb_drive != QD_PLAIN || f->f_has_ids || f->f_ntags > 0;

	if (f->f_has_ids)
		qb->qb_ids = qb_add_list(qb, QB_BLOB, f->f_ids, f->f_nids, 1);
	if (f->f_has_authors)
		qb->qb_authors = qb_add_list(qb, QB_BLOB, f->f_authors, na,
		    qb->qb_drive != QD_AUTHOR && qb->qb_drive != QD_PAIR);
	if (f->f_has_kinds)
		qb->qb_kinds = qb_add_list(qb, QB_INT, f->f_kinds, nk,
		    qb->qb_drive != QD_KIND && qb->qb_drive != QD_PAIR);
	if (f->f_ntags > 0) {
		qb->qb_tags = calloc(f->f_ntags, sizeof(*qb->qb_tags));
		if (qb->qb_tags == NULL)
			fatal("calloc");
	}
	for (i = 0; i < f->f_ntags; i++) {
		char c = f->f_tags[i].ft_name;
		int  name = qb_add(qb, QB_TEXT, db_tag_letter(c), 1, 0);

		qb_add(qb, QB_INT, NULL, 0, db_tag_case(c));
		if (i == 0)
			qb->qb_names = name;
	}
	for (i = 0; i < f->f_ntags; i++)
		qb->qb_tags[i] = qb_add_list(qb, QB_TAG, f->f_tags[i].ft_v,
		    f->f_tags[i].ft_n,
		    !(qb->qb_drive == QD_TAG && i == qb->qb_dtag));
	if (f->f_has_since)
		qb->qb_since = qb_add(qb, QB_INT, NULL, 0, f->f_since);
	if (f->f_has_until)
		qb->qb_until = qb_add(qb, QB_INT, NULL, 0, f->f_until);
	if (qb->qb_cur != NULL && qb->qb_cur->sc_has_pos) {
		memcpy(qb->qb_pos_id, qb->qb_cur->sc_id, sizeof(qb->qb_pos_id));
		qb->qb_at =
		    qb_add(qb, QB_INT, NULL, 0, qb->qb_cur->sc_created_at);
		qb->qb_id = qb_add(qb, QB_BLOB, qb->qb_pos_id,
		    sizeof(qb->qb_pos_id), 0);
	}
	if (qb->qb_cur != NULL && qb->qb_cur->sc_max_seq >= 0)
		qb->qb_seq =
		    qb_add(qb, QB_INT, NULL, 0, qb->qb_cur->sc_max_seq);
	qb->qb_now = qb_add(qb, QB_INT, NULL, 0, now);
	/*
	 * An ids filter matches at most one row per id: sorting those in C
	 * spares SQLite's ORDER BY ... LIMIT, an ephemeral b-tree whose
	 * pages it allocates and zeroes for every query (75,000 of the
	 * 175,000 instructions of a 9-id query).
	 */
	qb->qb_csort = f->f_has_ids && !qb->qb_items;
	/*
	 * One arm of a tag value, an author or a kind, or of an author and
	 * a kind kept without a d value, scans its index newest first.
	 * NIP-01's tie order (the lowest id first) is not the index's, and
	 * SQLite kept that order with a temporary b-tree of every row it
	 * read, each event's text copied in and out (8% of relayd's REQ time
	 * after a 200,000-event load): the rare ties are ordered, and the
	 * limit applied, in C instead.
	 */
	qb->qb_ctie = !qb->qb_items && !qb->qb_csort &&
	    ((qb->qb_drive == QD_TAG && f->f_tags[qb->qb_dtag].ft_n == 1) ||
		(qb->qb_drive == QD_AUTHOR && na == 1) ||
		(qb->qb_drive == QD_KIND && nk == 1) ||
		(qb->qb_drive == QD_PAIR && na == 1 && nk == 1 &&
		    !store_kind_has_d(f->f_kinds[0])));
	if (!qb->qb_csort && !qb->qb_ctie)
		qb->qb_limit = qb_add(qb, QB_INT, NULL, 0, limit);
}

/*
 * Writes one SELECT (an arm, or the whole PLAIN query) fixing the driving
 * values a (author index or tag value index) and k (kind index).
 */
static void
qb_select(struct qbuild *qb, const struct filter *f, size_t a, size_t k)
{
	struct buf *b = &qb->qb_sql;
	const char *plus = qb->qb_plus ? "+" : "";
	const char *when = "e.created_at";
	size_t	    i;

	if (qb->qb_drive == QD_TAG) {
		/* The tag key is ordered by created_at: scan it. */
		buf_printf(b,
		    "SELECT e.seq, %s, t.created_at, e.id"
		    " FROM tags t CROSS JOIN events e ON e.seq = t.event"
		    " WHERE t.letter = ?%d AND t.value = ?%d AND t.cases & ?%d",
		    qb->qb_items ? "NULL" : "e.json",
		    qb->qb_names + 2 * (int)qb->qb_dtag,
		    qb->qb_tags[qb->qb_dtag].ql_first + (int)a,
		    qb->qb_names + 2 * (int)qb->qb_dtag + 1);
		when = "t.created_at";
		plus = "";
	} else {
		/*
		 * A pair's arm scans the author's entries of events_pubkey
		 * newest first and tests the kind each holds (db.c, step 4);
		 * a replaceable or addressable kind's few versions come
		 * straight from the address index instead (the planner,
		 * without statistics, would scan the kind's index).
		 */
		int addr =
		    qb->qb_drive == QD_PAIR && store_kind_has_d(f->f_kinds[k]);

		buf_printf(b,
		    "SELECT e.seq, %s, e.created_at, e.id"
		    " FROM events e%s WHERE 1",
		    qb->qb_items ? "NULL" : "e.json",
		    addr ? " INDEXED BY events_address" : "");
		if (qb->qb_drive == QD_AUTHOR || qb->qb_drive == QD_PAIR)
			buf_printf(b, " AND e.pubkey = ?%d",
			    qb->qb_authors.ql_first + (int)a);
		if (qb->qb_drive == QD_KIND || qb->qb_drive == QD_PAIR)
			buf_printf(b, " AND %se.kind = ?%d%s",
			    qb->qb_drive == QD_PAIR && !addr ? "+" : "",
			    qb->qb_kinds.ql_first + (int)k,
			    addr ? " AND e.d IS NOT NULL" : "");
		if (qb->qb_drive != QD_PLAIN || f->f_ntags == 0)
			plus = "";
	}
	if (f->f_has_ids) {
		buf_adds(b, " AND e.id IN ");
		qb_list_sql(qb, qb->qb_ids);
	}
	if (f->f_has_authors && qb->qb_drive != QD_AUTHOR &&
	    qb->qb_drive != QD_PAIR) {
		buf_printf(b, " AND %se.pubkey IN ", qb->qb_plus ? "+" : "");
		qb_list_sql(qb, qb->qb_authors);
	}
	if (f->f_has_kinds && qb->qb_drive != QD_KIND &&
	    qb->qb_drive != QD_PAIR) {
		buf_printf(b, " AND %se.kind IN ", qb->qb_plus ? "+" : "");
		qb_list_sql(qb, qb->qb_kinds);
	}
	/* The time range narrows the driving index; elsewhere it filters. */
	if (f->f_has_since)
		buf_printf(b, " AND %s%s >= ?%d", plus, when, qb->qb_since);
	if (f->f_has_until)
		buf_printf(b, " AND %s%s <= ?%d", plus, when, qb->qb_until);
	/*
	 * A resumed query starts after the last row it gave, in the ORDER
	 * BY's terms (created_at descending, then id), and sees no event
	 * stored since it began ("+": the seq is no index to scan).
	 */
	if (qb->qb_at != 0)
		buf_printf(b, " AND %s%s <= ?%d AND (%s < ?%d OR +e.id > ?%d)",
		    plus, when, qb->qb_at, when, qb->qb_at, qb->qb_id);
	if (qb->qb_seq != 0)
		buf_printf(b, " AND +e.seq <= ?%d", qb->qb_seq);
	for (i = 0; i < f->f_ntags; i++) {
		if (qb->qb_drive == QD_TAG && i == qb->qb_dtag)
			continue;
		buf_printf(b,
		    " AND e.seq IN (SELECT event FROM tags"
		    " WHERE letter = ?%d AND cases & ?%d AND value IN ",
		    qb->qb_names + 2 * (int)i, qb->qb_names + 2 * (int)i + 1);
		qb_list_sql(qb, qb->qb_tags[i]);
		buf_addc(b, ')');
	}
	buf_printf(b, " AND (e.expiration IS NULL OR e.expiration >= ?%d)",
	    qb->qb_now);
}

/* Writes the whole query for f into qb->qb_sql. */
void
qb_build(struct qbuild *qb, const struct filter *f)
{
	size_t a, k, na = 1, nk = 1, arms = 0;

	switch (qb->qb_drive) {
	case QD_TAG:
		na = f->f_tags[qb->qb_dtag].ft_n;
		break;
	case QD_AUTHOR:
		na = f->f_nauthors;
		break;
	case QD_KIND:
		nk = f->f_nkinds;
		break;
	case QD_PAIR:
		na = f->f_nauthors;
		nk = f->f_nkinds;
		break;
	default:
		break;
	}
	for (a = 0; a < na; a++)
		for (k = 0; k < nk; k++) {
			if (arms++ > 0)
				buf_adds(&qb->qb_sql, " UNION ");
			qb_select(qb, f, a, k);
		}
	if (qb->qb_ctie)
		buf_adds(&qb->qb_sql, " ORDER BY 3 DESC");
	else if (!qb->qb_csort)
		buf_printf(&qb->qb_sql, " ORDER BY 3%s, 4 LIMIT ?%d",
		    qb->qb_items ? "" : " DESC", qb->qb_limit);
}

void
qb_bind(const struct qbuild *qb, sqlite3_stmt *st)
{
	const struct qbind *v;
	size_t		    i;

	for (i = 0; i < qb->qb_n; i++) {
		v = &qb->qb_bind[i];
		switch (v->qv_type) {
		case QB_INT:
			sqlite3_bind_int64(st, (int)i + 1, v->qv_i);
			break;
		case QB_BLOB:
			sqlite3_bind_blob(st, (int)i + 1, v->qv_p,
			    (int)v->qv_len, SQLITE_STATIC);
			break;
		case QB_TEXT:
			sqlite3_bind_text(st, (int)i + 1, v->qv_p,
			    (int)v->qv_len, SQLITE_STATIC);
			break;
		case QB_TAG:
			db_bind_tag_value(st, (int)i + 1, v->qv_p, v->qv_len);
			break;
		}
	}
}
