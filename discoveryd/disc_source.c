/*
 * disc_source.c: discoveryd's discovery sources (see discoveryd.h).  A
 * source is a relay some due author is to be asked about: a configured
 * user index or the bootstrap relay for authors without a stored relay
 * list, an author's write/unmarked outbox for authors with one.  A
 * source exists while it has due authors; its connection is taken when
 * its first batch leaves and released when its last batch ends, so an
 * exclusively discovery connection retires once its due work drains.
 *
 * Only one batch (one REQ {"kinds":[0,10002],"authors":[<= 100]}) is in
 * flight in the whole process, so discovery never queues requests behind
 * each other; a maintenance pass admits at most one source that has no
 * connection yet.  Nothing but identity queries is ever sent.
 */
#include <stdlib.h>
#include <string.h>

#include "discoveryd.h"
#include "event.h"
#include "log.h"
#include "mem.h"
#include "policy.h"

int
disc_is_index(const struct discd *dd, const char *key)
{
	return strv_has(dd->dd_index, dd->dd_nindex, key);
}

static struct disc_source *
source_get(struct discd *dd, const char *key)
{
	struct disc_source *s = hmap_get(&dd->dd_sources, key, strlen(key));

	if (s == NULL) {
		if ((s = calloc(1, sizeof(*s))) == NULL ||
		    (s->ds_key = strdup(key)) == NULL)
			fatal("disc_source");
		s->ds_index = disc_is_index(dd, key);
		hmap_put(&dd->dd_sources, key, strlen(key), s);
		log_debug("%s: discovery source%s", key,
		    s->ds_index ? " (index)" : "");
	}
	return s;
}

void
disc_source_add(struct discd *dd, const char *key, struct disc_author *a)
{
	struct disc_source *s = source_get(dd, key);

	hmap_put(&s->ds_pending, a->da_pk, PUBKEY_LEN, a);
}

/* Drops s: its connection is released (it retires unless shared). */
static void
source_retire(struct discd *dd, struct disc_source *s)
{
	hmap_del(&dd->dd_sources, s->ds_key, strlen(s->ds_key));
	if (s->ds_conn != NULL) {
		log_debug("%s: discovery work drained", s->ds_key);
		conn_release(s->ds_conn);
	}
	hmap_free(&s->ds_pending);
	free(s->ds_key);
	free(s);
}

void
disc_source_forget(struct discd *dd, struct disc_author *a)
{
	struct disc_source *s;
	size_t		    it;
	void		   *v;

	for (it = 0; hmap_next(&dd->dd_sources, &it, NULL, NULL, &v);) {
		s = v;
		hmap_del(&s->ds_pending, a->da_pk, PUBKEY_LEN);
	}
}

static void
batch_free(struct disc_batch *b)
{
	hmap_free(&b->db_index);
	free(b);
}

static void
batch_event(void *arg, struct conn_req *req, const struct event *ev)
{
	struct disc_batch *b = arg;
	struct discd	  *dd = b->db_dd;
	void		  *v;

	(void)req;
	if ((v = hmap_get(&b->db_index, ev->pubkey, PUBKEY_LEN)) == NULL ||
	    (ev->kind != KIND_PROFILE && ev->kind != KIND_RELAY_LIST))
		return;
	b->db_events++;
	dd->dd_events++;
	/* What relayd never got, or will refuse as forged, cannot count
	 * as the author's answer. */
	if (!dd->dd_last_ingest_ok)
		return;
	if (!event_check_sig(ev)) {
		b->db_forged++;
		dd->dd_forged++;
		return;
	}
	b->db_got[(uintptr_t)v - 1] |=
	    DISC_GOT_ANY | (ev->kind == KIND_RELAY_LIST ? DISC_GOT_LIST : 0);
}

/* Hands the outcome of batch b (ok: it ended with EOSE) to its authors. */
static void
batch_answer(struct discd *dd, struct disc_batch *b, int ok)
{
	struct disc_author *a;
	size_t		    i;

	for (i = 0; i < b->db_n; i++) {
		if ((a = hmap_get(&dd->dd_authors, b->db_pk[i], PUBKEY_LEN)) ==
		    NULL)
			continue;
		disc_author_answer(dd, a, b->db_round[i], ok, b->db_got[i],
		    b->db_src->ds_index);
	}
	if (ok)
		dd->dd_batches_ok++;
	else {
		dd->dd_batches_failed++;
		b->db_src->ds_failed++;
	}
}

static void
batch_done(void *arg, struct conn_req *req, enum conn_fetch_result res,
    const char *reason, const struct conn_fetch_stats *st)
{
	struct disc_batch  *b = arg;
	struct discd	   *dd = b->db_dd;
	struct disc_source *s = b->db_src;
	/* A list relayd never saw (ingest dropped it) must not read as
	 * "the index has none": that would put the author on fallback. */
	int		    ok = res == FETCH_EOSE && st->cs_dropped == 0;

	(void)req;
	dd->dd_batch = NULL;
	if (res == FETCH_EOSE && !ok)
		reason = "events dropped on the way to relayd";
	if (ok)
		log_debug("%s: identities of %zu authors: %llu events",
		    s->ds_key, b->db_n, (unsigned long long)b->db_events);
	else
		log_info(
		    "%s: identity query for %zu authors failed (%s%s%s); retrying later",
		    s->ds_key, b->db_n, conn_fetch_result_name(res),
		    reason ? ": " : "", reason ? reason : "");
	batch_answer(dd, b, ok);
	batch_free(b);
	if (s->ds_pending.hm_n == 0)
		source_retire(dd, s);
	disc_dispatch(dd);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * Sends one batch to s: its first DISC_BATCH_AUTHORS due authors in
 * pubkey order, taken off its due work.  Returns 0, or -1 when the
 * batch could not leave (its authors have been answered as failed).
 */
static int
send_batch(struct discd *dd, struct disc_source *s)
{
	struct conn_filters  fl = { NULL, 0 };
	struct conn_fetch_cb cb;
	struct disc_batch   *b;
	struct disc_author  *a;
	const char	   **vals = NULL, *why = NULL;
	size_t		     n = 0, i, it;
	void		    *v;

	if ((b = calloc(1, sizeof(*b))) == NULL ||
	    (vals = calloc(s->ds_pending.hm_n, sizeof(*vals))) == NULL)
		fatal("disc_batch");
	b->db_dd = dd;
	b->db_src = s;
	b->db_started_ms = disc_now_ms();
	for (it = 0; hmap_next(&s->ds_pending, &it, NULL, NULL, &v);)
		vals[n++] = ((struct disc_author *)v)->da_hex;
	qsort(vals, n, sizeof(*vals), cmp_str);
	if (n > DISC_BATCH_AUTHORS)
		n = DISC_BATCH_AUTHORS;
	for (i = 0; i < n; i++) {
		if (hex_decode(vals[i], PUBKEY_HEX_LEN, b->db_pk[i],
			PUBKEY_LEN) == -1)
			fatalx("disc_batch: bad author key");
		a = hmap_del(&s->ds_pending, b->db_pk[i], PUBKEY_LEN);
		b->db_round[i] = a->da_round;
		hmap_put(&b->db_index, b->db_pk[i], PUBKEY_LEN,
		    (void *)(uintptr_t)(i + 1));
	}
	b->db_n = n;
	s->ds_batches++;
	/* 100 keys are some 7 kB: one filter, far below the REQ budget. */
	if (conn_pack_filters(DISC_FILTER_BASE, "authors", vals, n,
		CONN_REQ_BUDGET, DISC_BATCH_AUTHORS, &fl, &why) != 1) {
		log_warnx("%s: cannot pack %zu authors: %s", s->ds_key, n,
		    why ? why : "more than one filter");
		goto fail;
	}
	memset(&cb, 0, sizeof(cb));
	cb.event = batch_event;
	cb.done = batch_done;
	cb.arg = b;
	if ((b->db_req = conn_fetch(s->ds_conn, fl.cf_v[0],
		 CONN_PRIO_BACKGROUND, 0, &cb)) == NULL) {
		log_warnx("%s: identity query refused by the connection",
		    s->ds_key);
		goto fail;
	}
	conn_filters_free(&fl);
	free(vals);
	dd->dd_batch = b;
	return 0;
fail:
	conn_filters_free(&fl);
	free(vals);
	batch_answer(dd, b, 0);
	batch_free(b);
	return -1;
}

/* Answers every due author of s as failed, then drops s. */
static void
source_fail(struct discd *dd, struct disc_source *s)
{
	struct disc_author *a;
	size_t		    it;
	void		   *v;

	for (it = 0; hmap_next(&s->ds_pending, &it, NULL, NULL, &v);) {
		a = v;
		disc_author_answer(dd, a, a->da_round, 0, 0, s->ds_index);
	}
	dd->dd_batches_failed++;
	s->ds_failed++;
	source_retire(dd, s);
}

/*
 * A source whose connection cools down after a rate limit would make its
 * batch wait in the connection's queue: admission takes only what can
 * leave now, and the source is tried again on a later pass.
 */
static int
source_ready(const struct disc_source *s)
{
	return s->ds_conn == NULL ||
	    conn_state(s->ds_conn) != CONN_RATE_LIMITED;
}

void
disc_dispatch(struct discd *dd)
{
	struct disc_source *s, *held, *fresh, *empty;
	const char	   *why;
	size_t		    it;
	void		   *v;

	while (dd->dd_enabled && dd->dd_batch == NULL) {
		held = fresh = empty = NULL;
		for (it = 0; hmap_next(&dd->dd_sources, &it, NULL, NULL, &v);) {
			s = v;
			if (s->ds_pending.hm_n == 0) {
				empty = s;
				break;
			}
			if (!source_ready(s))
				continue;
			if (s->ds_conn != NULL) {
				held = s;
				break;
			}
			if (fresh == NULL)
				fresh = s;
		}
		if (empty != NULL) {
			/* Its authors left (no longer eligible). */
			source_retire(dd, empty);
			continue;
		}
		if (held == NULL) {
			/* At most one new source dialled per pass. */
			if (fresh == NULL || dd->dd_dialled)
				return;
			why = NULL;
			fresh->ds_conn = conn_get(dd->dd_conns, fresh->ds_key,
			    fresh->ds_index ? CONN_TRUSTED : 0, &why);
			if (fresh->ds_conn == NULL) {
				log_info("%s: not a discovery source: %s",
				    fresh->ds_key, why ? why : "?");
				source_fail(dd, fresh);
				continue;
			}
			dd->dd_dialled = 1;
			dd->dd_dials++;
			/* Known to the manager and still cooling down. */
			if (!source_ready(fresh))
				continue;
			held = fresh;
		}
		if (send_batch(dd, held) == 0)
			return;
		if (held->ds_pending.hm_n == 0)
			source_retire(dd, held);
	}
}

void
disc_source_free_all(struct discd *dd)
{
	struct disc_source *s;
	size_t		    it;
	void		   *v;

	if (dd->dd_batch != NULL) {
		conn_fetch_cancel(dd->dd_batch->db_req);
		batch_free(dd->dd_batch);
		dd->dd_batch = NULL;
	}
	for (;;) {
		it = 0;
		if (!hmap_next(&dd->dd_sources, &it, NULL, NULL, &v))
			break;
		s = v;
		source_retire(dd, s);
	}
	hmap_free(&dd->dd_sources);
}

void
disc_source_show(struct discd *dd, cJSON *view)
{
	struct disc_batch  *b = dd->dd_batch;
	struct disc_source *s;
	cJSON		   *arr, *o;
	size_t		    it;
	void		   *v;

	if (b == NULL)
		cJSON_AddNullToObject(view, "in_flight");
	else {
		o = cJSON_AddObjectToObject(view, "in_flight");
		cJSON_AddStringToObject(o, "relay", b->db_src->ds_key);
		cJSON_AddBoolToObject(o, "index", b->db_src->ds_index);
		cJSON_AddNumberToObject(o, "authors", (double)b->db_n);
		cJSON_AddNumberToObject(o, "age_ms",
		    (double)(disc_now_ms() - b->db_started_ms));
		cJSON_AddNumberToObject(o, "events", (double)b->db_events);
	}
	arr = cJSON_AddArrayToObject(view, "sources");
	for (it = 0; hmap_next(&dd->dd_sources, &it, NULL, NULL, &v);) {
		s = v;
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "relay", s->ds_key);
		cJSON_AddBoolToObject(o, "index", s->ds_index);
		cJSON_AddNumberToObject(o, "due_authors",
		    (double)s->ds_pending.hm_n);
		cJSON_AddBoolToObject(o, "in_flight",
		    b != NULL && b->db_src == s);
		cJSON_AddStringToObject(o, "state",
		    s->ds_conn ? conn_state_name(conn_state(s->ds_conn)) :
				 "not dialled");
		cJSON_AddNumberToObject(o, "batches", (double)s->ds_batches);
		cJSON_AddNumberToObject(o, "failed", (double)s->ds_failed);
		cJSON_AddItemToArray(arr, o);
	}
}
