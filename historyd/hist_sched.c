/*
 * hist_sched.c: the history-probe scheduler of historyd (see historyd.h).
 * Pure: no loop, no network; the caller passes the clock, starts fetches
 * through ops->start and reports their end with hist_sched_done().
 *
 * GRASP-03: "A maintenance pass admits at most one new due history
 * relay, while each admitted relay may have at most one worker in flight
 * and drains its own filter cursor without returning to a global
 * round-robin between successful groups.  Up to 32 relay workers may run
 * at once"; "A successful group immediately starts that relay's next
 * group until the cycle completes; a failed group advances the cursor
 * but releases the worker for the five-minute retry delay"; "A
 * successful complete rotation refreshes after 24 hours"; "a failed
 * group advances the cursor after a five-minute delay and is retried on
 * a later rotation".  A failed group is remembered by its filter text
 * and, once the rotation is over, retried by itself after the retry
 * delay (a retry pass of the failed groups only, again after the delay
 * while it keeps failing); the groups that succeeded wait for the 24 h
 * refresh.
 */
#include <stdlib.h>
#include <string.h>

#include "historyd.h"
#include "log.h"

void
hist_sched_init(struct hist_sched *s, const struct hist_sched_ops *ops,
    void *arg, int64_t refresh_ms, int64_t retry_ms)
{
	memset(s, 0, sizeof(*s));
	s->hs_ops = ops;
	s->hs_arg = arg;
	s->hs_refresh_ms = refresh_ms;
	s->hs_retry_ms = retry_ms;
	s->hs_max_workers = HIST_MAX_WORKERS;
}

static void
relay_free(struct hist_relay *r)
{
	conn_filters_free(&r->hr_filters);
	hmap_free(&r->hr_threads);
	hmap_free(&r->hr_failed);
	free(r->hr_group);
	free(r->hr_key);
	free(r);
}

static void
release(struct hist_sched *s, struct hist_relay *r)
{
	if (!r->hr_active)
		return;
	r->hr_active = 0;
	s->hs_nactive--;
	if (s->hs_ops->release)
		s->hs_ops->release(s->hs_arg, r);
}

void
hist_sched_free(struct hist_sched *s)
{
	size_t it;
	void  *v;

	for (it = 0; hmap_next(&s->hs_relays, &it, NULL, NULL, &v);) {
		release(s, v);
		relay_free(v);
	}
	hmap_free(&s->hs_relays);
}

void
hist_sched_unmark(struct hist_sched *s)
{
	size_t it;
	void  *v;

	for (it = 0; hmap_next(&s->hs_relays, &it, NULL, NULL, &v);) {
		((struct hist_relay *)v)->hr_mark = 0;
		((struct hist_relay *)v)->hr_purposes = 0;
	}
}

struct hist_relay *
hist_sched_want(struct hist_sched *s, const char *key, unsigned purposes,
    int trusted)
{
	struct hist_relay *r = hmap_get(&s->hs_relays, key, strlen(key));

	if (r == NULL) {
		if ((r = calloc(1, sizeof(*r))) == NULL ||
		    (r->hr_key = strdup(key)) == NULL)
			fatal("hist_sched_want");
		hmap_put(&s->hs_relays, r->hr_key, strlen(r->hr_key), r);
	}
	r->hr_mark = 1;
	r->hr_purposes |= purposes;
	if (trusted)
		r->hr_trusted = 1;
	return r;
}

static int
same_filters(const struct conn_filters *a, const struct conn_filters *b)
{
	size_t i;

	if (a->cf_n != b->cf_n)
		return 0;
	for (i = 0; i < a->cf_n; i++)
		if (strcmp(a->cf_v[i], b->cf_v[i]) != 0)
			return 0;
	return 1;
}

/* The index of filter text in r's set, or r's size. */
static size_t
filter_index(const struct hist_relay *r, const char *text)
{
	size_t i;

	for (i = 0; i < r->hr_filters.cf_n; i++)
		if (strcmp(r->hr_filters.cf_v[i], text) == 0)
			break;
	return i;
}

/* Forgets failed groups that are no longer in r's filter set. */
static void
prune_failed(struct hist_relay *r)
{
	struct hmap now = HMAP_INIT;
	const void *k;
	size_t	    it, i, len;
	int	    gone;

	for (i = 0; i < r->hr_filters.cf_n; i++)
		hmap_put(&now, r->hr_filters.cf_v[i],
		    strlen(r->hr_filters.cf_v[i]), (void *)1);
	do {
		gone = 0;
		for (it = 0; hmap_next(&r->hr_failed, &it, &k, &len, NULL);)
			if (hmap_get(&now, k, len) == NULL) {
				hmap_del(&r->hr_failed, k, len);
				gone = 1;
				break;
			}
	} while (gone);
	hmap_free(&now);
}

void
hist_sched_set_filters(struct hist_sched *s, struct hist_relay *r,
    struct conn_filters *f)
{
	(void)s;
	if (same_filters(&r->hr_filters, f)) {
		conn_filters_free(f);
		return;
	}
	conn_filters_free(&r->hr_filters);
	r->hr_filters = *f;
	f->cf_v = NULL;
	f->cf_n = 0;
	/* GRASP-03: "Inventory changes keep the cursor modulo the new
	 * stable-sorted filter set". */
	if (r->hr_filters.cf_n == 0) {
		r->hr_cursor = 0;
		r->hr_rot_left = 0;
		r->hr_retry_pos = 0;
	} else {
		r->hr_cursor %= r->hr_filters.cf_n;
		r->hr_retry_pos %= r->hr_filters.cf_n;
		if (r->hr_rot_left > r->hr_filters.cf_n)
			r->hr_rot_left = r->hr_filters.cf_n;
	}
	prune_failed(r);
}

void
hist_sched_sweep(struct hist_sched *s)
{
	struct hist_relay **gone;
	size_t		    it, n = 0, i;
	void		   *v;

	if ((gone = calloc(s->hs_relays.hm_n + 1, sizeof(*gone))) == NULL)
		fatal("hist_sched_sweep");
	for (it = 0; hmap_next(&s->hs_relays, &it, NULL, NULL, &v);) {
		struct hist_relay *r = v;

		r->hr_desired = r->hr_mark && r->hr_filters.cf_n > 0;
		if (!r->hr_desired && !r->hr_inflight)
			gone[n++] = r;
	}
	for (i = 0; i < n; i++) {
		release(s, gone[i]);
		hmap_del(&s->hs_relays, gone[i]->hr_key,
		    strlen(gone[i]->hr_key));
		relay_free(gone[i]);
	}
	free(gone);
}

void
hist_sched_added(struct hist_sched *s, struct hist_relay *r)
{
	(void)s;
	if (r->hr_rot_left > 0)
		r->hr_added = 1;
	/* Idle, waiting to go on, or retrying failed groups (a new
	 * rotation follows the retry pass). */
	if (!r->hr_active || r->hr_rot_left == 0)
		r->hr_due_ms = 0;
}

int64_t
hist_relay_due(const struct hist_relay *r)
{
	if (r->hr_rot_left == 0 && r->hr_failed.hm_n > 0 &&
	    r->hr_retry_ms < r->hr_due_ms)
		return r->hr_retry_ms;
	return r->hr_due_ms;
}

/*
 * The index of r's first failed group at or after from (wrapping), or
 * r's size if none.
 */
static size_t
next_failed(const struct hist_relay *r, size_t from)
{
	size_t i, n = r->hr_filters.cf_n, j;

	for (i = 0; i < n; i++) {
		j = (from + i) % n;
		if (hmap_get(&r->hr_failed, r->hr_filters.cf_v[j],
			strlen(r->hr_filters.cf_v[j])) != NULL)
			return j;
	}
	return n;
}

/* Starts r's group i; a start that fails counts as a failed group
 * (which releases the worker, so this never loops). */
static void
start_group(struct hist_sched *s, struct hist_relay *r, size_t i, int64_t now)
{
	free(r->hr_group);
	if ((r->hr_group = strdup(r->hr_filters.cf_v[i])) == NULL)
		fatal("start_group");
	r->hr_inflight = 1;
	if (s->hs_ops->start(s->hs_arg, r, r->hr_group) == -1)
		hist_sched_done(s, r, 0, now);
}

int
hist_sched_pass(struct hist_sched *s, int64_t now)
{
	struct hist_relay *r, *best = NULL;
	size_t		   it, i = 0;
	void		  *v;
	int		   retry;

	s->hs_passes++;
	if (s->hs_nactive >= s->hs_max_workers)
		return 0;
	for (it = 0; hmap_next(&s->hs_relays, &it, NULL, NULL, &v);) {
		r = v;
		if (!r->hr_desired || r->hr_active || r->hr_inflight ||
		    hist_relay_due(r) > now)
			continue;
		/* The longest due first; the key breaks ties. */
		if (best == NULL || hist_relay_due(r) < hist_relay_due(best) ||
		    (hist_relay_due(r) == hist_relay_due(best) &&
			strcmp(r->hr_key, best->hr_key) < 0))
			best = r;
	}
	if (best == NULL)
		return 0;
	retry = best->hr_rot_left == 0 && best->hr_due_ms > now;
	/* prune_failed() keeps the failed groups within the set; were one
	 * not, nothing is left to retry. */
	if (retry &&
	    (i = next_failed(best, best->hr_retry_pos)) ==
		best->hr_filters.cf_n) {
		hmap_free(&best->hr_failed);
		return 0;
	}
	best->hr_active = 1;
	s->hs_nactive++;
	s->hs_admitted++;
	if (retry) {
		/* Only the failed groups are due: each by itself. */
		best->hr_retrying = 1;
		start_group(s, best, i, now);
		return 1;
	}
	if (best->hr_rot_left == 0)
		best->hr_rot_left = best->hr_filters.cf_n;
	start_group(s, best, best->hr_cursor, now);
	return 1;
}

/* Ends r's retry pass after its group i (ok or not). */
static void
retry_done(struct hist_sched *s, struct hist_relay *r, size_t i, int ok,
    int64_t now)
{
	size_t n = r->hr_filters.cf_n, next;

	if (i < n)
		r->hr_retry_pos = (i + 1) % n;
	if (ok && (next = next_failed(r, r->hr_retry_pos)) < n) {
		start_group(s, r, next, now);
		return;
	}
	/* Every failed group retried, or one failed again: the rest wait
	 * for the retry delay. */
	r->hr_retrying = 0;
	r->hr_retry_ms = now + s->hs_retry_ms;
	release(s, r);
}

void
hist_sched_done(struct hist_sched *s, struct hist_relay *r, int ok, int64_t now)
{
	char  *group = r->hr_group;
	size_t i = group ? filter_index(r, group) : r->hr_filters.cf_n;

	r->hr_inflight = 0;
	r->hr_req = NULL;
	r->hr_group = NULL;
	r->hr_last = ok ? "ok" : "failed";
	if (ok)
		r->hr_groups_ok++;
	else
		r->hr_groups_failed++;
	/* A group dropped from the set meanwhile is not remembered. */
	if (group != NULL && ok)
		hmap_del(&r->hr_failed, group, strlen(group));
	else if (group != NULL && i < r->hr_filters.cf_n)
		hmap_put(&r->hr_failed, group, strlen(group), (void *)1);
	free(group);
	if (!r->hr_desired) {
		/* Removed while in flight: no further group. */
		release(s, r);
		hmap_del(&s->hs_relays, r->hr_key, strlen(r->hr_key));
		relay_free(r);
		return;
	}
	if (r->hr_retrying) {
		retry_done(s, r, i, ok, now);
		return;
	}
	/* Ok or not, the cursor advances. */
	r->hr_cursor = (r->hr_cursor + 1) % r->hr_filters.cf_n;
	if (r->hr_rot_left > 0)
		r->hr_rot_left--;
	if (r->hr_rot_left == 0) {
		/* A thread added mid-rotation (hist_sched_added()) makes
		 * the successor due at once; failed groups are retried by
		 * themselves after the retry delay. */
		r->hr_rotations++;
		r->hr_due_ms = now + (r->hr_added ? 0 : s->hs_refresh_ms);
		r->hr_added = 0;
		r->hr_retry_ms = now + s->hs_retry_ms;
		r->hr_retry_pos = r->hr_cursor;
		release(s, r);
		return;
	}
	if (!ok) {
		r->hr_due_ms = now + s->hs_retry_ms;
		release(s, r);
		return;
	}
	start_group(s, r, r->hr_cursor, now);
}

const char *
hist_relay_state(const struct hist_relay *r, int64_t now)
{
	if (r->hr_inflight)
		return "in_flight";
	if (r->hr_active)
		return "active";
	if (r->hr_desired && hist_relay_due(r) <= now)
		return "waiting";
	return "idle";
}
