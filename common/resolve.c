/*
 * resolve.c: host name lookups on threads, answers on the loop (see
 * resolve.h), for syncd, discoveryd and historyd.
 *
 * One mutex guards everything the threads share.  A lookup (struct rq)
 * is in rs_all from resolve_start() until it is delivered or cancelled;
 * while no thread has taken it, it is in rs_wait too.  Its state says
 * who owns it: QUEUED and DONE ones belong to the loop; a RUNNING one to
 * its thread, and if the loop gave up on it (timeout, cancel) it is
 * marked abandoned, taken out of rs_all and freed by that thread when
 * getaddrinfo returns.  So no pointer the loop frees is ever used by a
 * thread, and no callback runs for a lookup that was given up.
 *
 * Threads are started as lookups wait with no thread idle, up to
 * RESOLVE_THREADS, and run until the process exits; they block every
 * signal, so the loop keeps receiving them.
 */
#include <sys/queue.h>
#include <sys/socket.h>

#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "proc.h"
#include "relayurl.h"
#include "resolve.h"

enum rq_state {
	RQ_QUEUED,  /* in rs_wait */
	RQ_RUNNING, /* a thread runs getaddrinfo */
	RQ_DONE,    /* answered, not delivered */
};

struct rq {
	TAILQ_ENTRY(rq)	 q_all;
	TAILQ_ENTRY(rq)	 q_wait;
	uint64_t	 q_id;
	enum rq_state	 q_state;
	int		 q_abandoned;
	char		 q_host[RELAYURL_MAX + 1];
	char		 q_port[8];
	struct addrinfo	 q_hints;
	unsigned	 q_flags;
	int64_t		 q_deadline_ms;
	resolve_done_fn *q_done;
	void		*q_arg;
	int		 q_gai_rc;
	struct addrinfo *q_res;
};

TAILQ_HEAD(rq_list, rq);

static pthread_mutex_t	      rs_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t	      rs_work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t	      rs_woke = PTHREAD_COND_INITIALIZER;
static struct rq_list	      rs_all = TAILQ_HEAD_INITIALIZER(rs_all);
static struct rq_list	      rs_wait = TAILQ_HEAD_INITIALIZER(rs_wait);
/* rs_nall, rs_next_id and rs_sul are the loop's own. */
static unsigned		      rs_nall, rs_nwait, rs_nthreads, rs_idle;
static unsigned		      rs_waking; /* threads in lws_cancel_service */
static uint64_t		      rs_next_id;
static struct lws_context    *rs_ctx;
static lws_sorted_usec_list_t rs_sul;

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
rq_free(struct rq *q)
{
	if (q->q_res != NULL)
		freeaddrinfo(q->q_res);
	free(q);
}

static void *
rs_worker(void *unused)
{
	struct rq	   *q;
	struct addrinfo	   *res;
	struct lws_context *ctx;
	int		    rc;

	(void)unused;
	pthread_mutex_lock(&rs_mu);
	for (;;) {
		while ((q = TAILQ_FIRST(&rs_wait)) == NULL) {
			rs_idle++;
			pthread_cond_wait(&rs_work, &rs_mu);
			rs_idle--;
		}
		TAILQ_REMOVE(&rs_wait, q, q_wait);
		rs_nwait--;
		q->q_state = RQ_RUNNING;
		pthread_mutex_unlock(&rs_mu);

		res = NULL;
		rc = getaddrinfo(q->q_host, q->q_port, &q->q_hints, &res);
		if (rc != 0 && res != NULL) {
			freeaddrinfo(res);
			res = NULL;
		}

		pthread_mutex_lock(&rs_mu);
		if (q->q_abandoned) {
			q->q_res = res;
			rq_free(q);
			continue;
		}
		q->q_gai_rc = rc;
		q->q_res = res;
		q->q_state = RQ_DONE;
		/* Not under our lock (lws may take its own), but counted:
		 * resolve_shutdown() waits for rs_waking before the context
		 * goes. */
		if ((ctx = rs_ctx) != NULL) {
			rs_waking++;
			pthread_mutex_unlock(&rs_mu);
			lws_cancel_service(ctx);
			pthread_mutex_lock(&rs_mu);
			if (--rs_waking == 0)
				pthread_cond_broadcast(&rs_woke);
		}
	}
	return NULL;
}

/* Starts one more thread; 0, or -1. */
static int
rs_spawn(void)
{
	pthread_attr_t attr;
	pthread_t      t;
	int	       rc;

	if (pthread_attr_init(&attr) != 0)
		return -1;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = proc_thread(&t, &attr, rs_worker, NULL, NULL);
	pthread_attr_destroy(&attr);
	if (rc != 0)
		return -1;
	rs_nthreads++;
	return 0;
}

static void
rs_sul_cb(lws_sorted_usec_list_t *sul)
{
	(void)sul;
	resolve_poll();
}

/* Sets the timer for the earliest deadline; under the lock. */
static void
rs_arm(void)
{
	struct rq *q;
	int64_t	   next = INT64_MAX, now;

	if (rs_ctx == NULL)
		return;
	TAILQ_FOREACH(q, &rs_all, q_all)
		if (q->q_deadline_ms < next)
			next = q->q_deadline_ms;
	if (next == INT64_MAX) {
		lws_sul_cancel(&rs_sul);
		return;
	}
	now = now_ms();
	lws_sul_schedule(rs_ctx, 0, &rs_sul, rs_sul_cb,
	    next > now ? (lws_usec_t)(next - now) * LWS_US_PER_MS : 0);
}

uint64_t
resolve_start(struct lws_context *ctx, const char *key, unsigned flags,
    double timeout, resolve_done_fn *done, void *arg, const char **why)
{
	struct relayurl ru;
	struct rq      *q;
	const char     *dummy;

	if (why == NULL)
		why = &dummy;
	if (rs_nall >= RESOLVE_QUEUE_MAX) {
		*why = "too many lookups";
		return 0;
	}
	if ((q = calloc(1, sizeof(*q))) == NULL)
		fatal("resolve_start");
	if (relayurl_resolve_hints(key, &ru, &q->q_hints, q->q_port,
		sizeof(q->q_port), why) == -1) {
		free(q);
		return 0;
	}
	snprintf(q->q_host, sizeof(q->q_host), "%s", ru.ru_host);
	q->q_flags = flags;
	q->q_deadline_ms = now_ms() + (int64_t)(timeout * 1000);
	q->q_done = done;
	q->q_arg = arg;
	q->q_state = RQ_QUEUED;

	pthread_mutex_lock(&rs_mu);
	if (ctx != NULL)
		rs_ctx = ctx;
	if (rs_nwait + 1 > rs_idle && rs_nthreads < RESOLVE_THREADS &&
	    rs_spawn() == -1 && rs_nthreads == 0) {
		pthread_mutex_unlock(&rs_mu);
		log_warnx("resolve: cannot start a lookup thread");
		free(q);
		*why = "cannot start a lookup thread";
		return 0;
	}
	q->q_id = ++rs_next_id;
	TAILQ_INSERT_TAIL(&rs_all, q, q_all);
	rs_nall++;
	TAILQ_INSERT_TAIL(&rs_wait, q, q_wait);
	rs_nwait++;
	pthread_cond_signal(&rs_work);
	rs_arm();
	pthread_mutex_unlock(&rs_mu);
	return q->q_id;
}

/*
 * Takes q out of rs_all; under the lock.  Returns q if the loop now owns
 * it (to free), or NULL if its thread does (abandoned).
 */
static struct rq *
rs_unlink(struct rq *q)
{
	TAILQ_REMOVE(&rs_all, q, q_all);
	rs_nall--;
	switch (q->q_state) {
	case RQ_QUEUED:
		TAILQ_REMOVE(&rs_wait, q, q_wait);
		rs_nwait--;
		return q;
	case RQ_RUNNING:
		q->q_abandoned = 1;
		return NULL;
	default:
		return q;
	}
}

void
resolve_cancel(uint64_t id)
{
	struct rq *q;

	if (id == 0)
		return;
	pthread_mutex_lock(&rs_mu);
	TAILQ_FOREACH(q, &rs_all, q_all)
		if (q->q_id == id)
			break;
	if (q != NULL) {
		q = rs_unlink(q);
		rs_arm();
	}
	pthread_mutex_unlock(&rs_mu);
	if (q != NULL)
		rq_free(q);
}

void
resolve_poll(void)
{
	struct sockaddr_storage ss;
	socklen_t		sl = 0;
	struct rq	       *q, *own;
	resolve_done_fn	       *done;
	void		       *arg;
	const char	       *why;
	int64_t			now;
	int			rc;

	if (rs_nall == 0)
		return;
	for (;;) {
		now = now_ms();
		pthread_mutex_lock(&rs_mu);
		TAILQ_FOREACH(q, &rs_all, q_all)
			if (q->q_state == RQ_DONE || now >= q->q_deadline_ms)
				break;
		if (q == NULL) {
			rs_arm();
			pthread_mutex_unlock(&rs_mu);
			return;
		}
		done = q->q_done;
		arg = q->q_arg;
		if (q->q_state == RQ_DONE) {
			own = rs_unlink(q);
			pthread_mutex_unlock(&rs_mu);
			why = NULL;
			rc = relayurl_vet_addrinfo(own->q_gai_rc, own->q_res,
			    own->q_flags, &ss, &sl, &why);
			rq_free(own);
			done(arg, rc, rc == 0 ? &ss : NULL, rc == 0 ? sl : 0,
			    why != NULL ? why : "no address");
			continue;
		}
		/* Past its deadline: a late answer is dropped. */
		own = rs_unlink(q);
		pthread_mutex_unlock(&rs_mu);
		if (own != NULL)
			rq_free(own);
		done(arg, -2, NULL, 0, "timed out");
	}
}

unsigned
resolve_pending(void)
{
	return rs_nall;
}

unsigned
resolve_threads(void)
{
	unsigned n;

	pthread_mutex_lock(&rs_mu);
	n = rs_nthreads;
	pthread_mutex_unlock(&rs_mu);
	return n;
}

void
resolve_shutdown(void)
{
	struct rq *q;

	pthread_mutex_lock(&rs_mu);
	while ((q = TAILQ_FIRST(&rs_all)) != NULL) {
		q = rs_unlink(q);
		if (q != NULL)
			rq_free(q);
	}
	if (rs_ctx != NULL)
		lws_sul_cancel(&rs_sul);
	rs_ctx = NULL;
	while (rs_waking > 0)
		pthread_cond_wait(&rs_woke, &rs_mu);
	pthread_mutex_unlock(&rs_mu);
}
