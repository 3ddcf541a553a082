/*
 * qbuild.h: a REQ filter as one SQL SELECT over the event store, for
 * store.c (qbuild.c).  Private to the store: nothing else builds queries.
 */
#ifndef GRASPD_QBUILD_H
#define GRASPD_QBUILD_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "buf.h"
#include "filter.h"
#include "store.h"

enum qdrive {
	QD_PLAIN,  /* one SELECT; SQLite picks the index */
	QD_TAG,	   /* one arm per value of the shortest #x list */
	QD_AUTHOR, /* one arm per author */
	QD_KIND,   /* one arm per kind */
	QD_PAIR,   /* one arm per (author, kind) */
};

enum qbind_type {
	QB_INT,
	QB_BLOB,
	QB_TEXT,
	QB_TAG, /* a tag value, bound in its tag-row form (db.h) */
};

struct qbind {
	enum qbind_type qv_type;
	const void     *qv_p;
	size_t		qv_len;
	int64_t		qv_i;
};

/* A list bound to parameters ?first .. ?first+n-1. */
struct qlist {
	int    ql_first;
	size_t ql_n;
};

struct qbuild {
	struct buf    qb_sql;
	struct qbind *qb_bind;
	size_t	      qb_n;
	size_t	      qb_cap;
	enum qdrive   qb_drive;
	size_t	      qb_dtag; /* driving #x (QD_TAG) */
	int	      qb_plus; /* "+": other columns off indexes */
	struct qlist  qb_ids, qb_authors, qb_kinds, *qb_tags;
	int	      qb_names; /* first tag letter; its case flag follows */
	int	      qb_since, qb_until, qb_now, qb_limit;
	int	      qb_items; /* (created_at, id) only, ascending */
	/* A resumed query: after (qb_at, qb_id) and up to seq qb_seq. */
	const struct store_cursor *qb_cur;
	int			   qb_at, qb_id, qb_seq;
	uint8_t qb_pos_id[EVENT_ID_LEN]; /* bound: cur moves */
	int	qb_csort; /* ids: sorted and cut by deliver_sorted() */
	int	qb_ctie;  /* one arm in created_at order: ties by id and the
			     limit in C (deliver_sorted()) */
};

/* 1 if events of kind are kept under a d value (store_event_d(),
 * store.c). */
int  store_kind_has_d(uint32_t kind);
/* Picks the driving list and binds every value of f. */
void qb_plan(struct qbuild *qb, const struct filter *f, int64_t now,
    int64_t limit);
/* Writes the whole query for f into qb->qb_sql. */
void qb_build(struct qbuild *qb, const struct filter *f);
/* Binds qb's values to st, the statement prepared from qb->qb_sql. */
void qb_bind(const struct qbuild *qb, sqlite3_stmt *st);

#endif
