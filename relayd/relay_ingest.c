/*
 * relay_ingest.c: relayd's event pipeline.  parse -> limits -> id ->
 * stored copy (one read transaction per loop turn) -> signature (on a
 * thread of its own, in arrival order) -> expiry ->
 * (batch) duplicate and deletion checks -> write policy ->
 * purgatory (relay_purg.c: hold until git data arrives, or store) ->
 * store -> commit -> sync -> OK -> fan-out.  The events verified while
 * a batch runs are decided in the next one, in one transaction, a few at
 * a time (batch_step()) so that the loop answers REQs in between; OK is
 * sent only after the commit, so an acknowledged event is never lost:
 * with durability full (db.h) only once the sync thread synced the WAL
 * (relay_sync.c), one sync for the whole batch, so not even to a power
 * cut; with durability normal, not to a killed process.  While a batch
 * waits for its sync the next one is decided.  Other
 * writers of the database (purgatory releases after a push, the expiry
 * sweep) queue tasks that run inside the same batched transactions, and
 * the events a task stores are fanned out and published after the commit
 * like any accepted event.  A client's NIP-42 AUTH event takes the signature
 * path too, in order, so that an EVENT sent after it sees its result.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/timerfd.h>

#include "auth.h"
#include "db.h"
#include "event.h"
#include "json.h"
#include "log.h"
#include "nip01.h"
#include "relayd.h"
#include "walbuf.h"

struct pending {
	STAILQ_ENTRY(pending) p_entry;
	struct event	     *p_ev;	/* NULL for a task */
	struct relay_conn    *p_conn;	/* NULL once it went away */
	int		      p_remote; /* fetched by another role */
	int		      p_auth;	/* a NIP-42 AUTH, not stored */
	int		      p_ok;
	int		      p_fanout;
	int		      p_stored; /* by store_put() just now */
	int		      p_sig;	/* -1 unchecked, 0 bad, 1 good */
	int		      p_check;	/* look for a stored copy first */
	enum role	      p_origin; /* p_remote: the role and */
	char		     *p_url;	/* the relay it fetched from */
	int64_t		      p_seq;	/* when stored */
	int64_t		      p_t0;	/* EVENT arrival, ms */
	char		      p_msg[512];
	/* A task: run inside the transaction, done after it. */
	void (*p_run)(void *);
	void (*p_done)(void *, int);
	void *p_arg;
};

STAILQ_HEAD(pending_list, pending);

/* Work for after the commit of the open transaction. */
struct deferred {
	STAILQ_ENTRY(deferred) df_entry;
	struct event	      *df_ev; /* released: fan out */
	int64_t		       df_seq;
	void (*df_fn)(void *, int);
	void *df_arg;
};

/*
 * Events parsed in this turn of the loop, in arrival order, waiting for
 * admit(): the stored-copy lookups of a turn share one read transaction.
 */
static struct pending_list arrived = STAILQ_HEAD_INITIALIZER(arrived);
static struct pending_list pending = STAILQ_HEAD_INITIALIZER(pending);
STAILQ_HEAD(deferred_list, deferred);
static struct deferred_list deferred = STAILQ_HEAD_INITIALIZER(deferred);

/*
 * A committed batch waiting for its sync (relay_sync.c): its answers,
 * fan-out and completions, in the order of the commits.
 */
struct unsynced {
	STAILQ_ENTRY(unsynced) us_entry;
	uint64_t	       us_gen; /* the sync that makes it durable */
	int		       us_committed;
	struct pending_list    us_items;
	struct deferred_list   us_deferred;
	size_t		       us_n, us_bytes; /* items, their JSON */
};
static STAILQ_HEAD(, unsynced) unsynced = STAILQ_HEAD_INITIALIZER(unsynced);
static size_t		   unsynced_n, unsynced_bytes; /* of them all */
/*
 * The open batch: one write transaction, decided RELAY_BATCH_STEP_US at
 * a time (batch_step()), so that the loop reads and answers clients
 * between the steps; its answers go out after its commit.  What
 * arrives meanwhile waits in `pending' for the next batch.  in_txn is
 * set only while a step runs: code outside a step reads the last commit
 * (relay_reader()).
 */
static struct pending_list batch_todo = STAILQ_HEAD_INITIALIZER(batch_todo);
static struct pending_list batch_decided =
    STAILQ_HEAD_INITIALIZER(batch_decided);
static int		      batch_open;
static int		      step_yield;   /* relay_ingest_yield() */
static int		      step_yielded; /* the last step_cb() did */
static lws_sorted_usec_list_t step_sul;
static int		      in_txn;
static int		      stopping; /* the last flush: no hold */
static int		      held;	/* commits held for a checkpoint */
static lws_sorted_usec_list_t hold_sul; /* ends a hold by time */
static lws_sorted_usec_list_t flush_sul;
static int		      flush_scheduled;
/*
 * The batch wait under load (schedule_flush()) runs on a timerfd in the
 * loop's poll set, not on a lws timer: lws 4.1 polls with the time to its
 * next timer floored to whole milliseconds, so the last millisecond
 * before a timer is a poll(0) spin; with one 1 ms wait per commit that
 * was 3.4 to 5.3 empty polls per event and 11% of the loop's CPU
 * (doc/performance.md).  -1 until relay_ingest_timer_init().
 */
static int		      batch_tfd = -1;
static size_t		      last_batch; /* events in the last commit */
static lws_sorted_usec_list_t trim_sul, wal_sul;

/*
 * Signature checks, the costliest step before the store, run on one
 * thread beside the loop, so that they overlap with parsing, commits and
 * sending.  The loop owns `verifying' (events handed over, in arrival
 * order); the thread takes them from the ring, in the same order, and
 * writes only p_sig.  Both sides touch the ring and p_sig under vmu.
 * One thread keeps the order: an event and its deletion are decided in
 * the order they came.
 */
static struct pending_list    verifying = STAILQ_HEAD_INITIALIZER(verifying);
static pthread_t	      vthread;
static int		      vstarted;
static pthread_mutex_t	      vmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t	      vwork = PTHREAD_COND_INITIALIZER;
static pthread_cond_t	      vspace = PTHREAD_COND_INITIALIZER;
static struct pending	     *vring[RELAY_VERIFY_QUEUE];
static size_t		      vhead, vcount; /* the thread's next, queued */
static size_t		      vbytes;	     /* their JSON */
static int		      vwoken;	     /* the loop was woken */
static int		      vstop;
static lws_sorted_usec_list_t admit_sul; /* runs admit() */
static int		      admit_scheduled;

static void flush_cb(lws_sorted_usec_list_t *);
static void answer_after_sync(struct pending_list *);
static void step_cb(lws_sorted_usec_list_t *);
static void hold_cb(lws_sorted_usec_list_t *);

static void *
verify_main(void *arg)
{
	struct event_keycache *kc = event_keycache_new();
	struct pending	      *p;
	int		       ok, wake;

	(void)arg;
	pthread_mutex_lock(&vmu);
	for (;;) {
		while (vcount == 0 && !vstop)
			pthread_cond_wait(&vwork, &vmu);
		if (vcount == 0)
			break;
		p = vring[vhead];
		pthread_mutex_unlock(&vmu);
		ok = event_check_sig_cached(p->p_ev, kc);
		pthread_mutex_lock(&vmu);
		p->p_sig = ok;
		vhead = (vhead + 1) % RELAY_VERIFY_QUEUE;
		vcount--;
		vbytes -= p->p_ev->json_len;
		pthread_cond_signal(&vspace);
		/* One wake-up for a run of results: the loop takes them all. */
		wake = !vwoken;
		vwoken = 1;
		if (wake) {
			pthread_mutex_unlock(&vmu);
			lws_cancel_service(relayd->ctx);
			pthread_mutex_lock(&vmu);
		}
	}
	pthread_mutex_unlock(&vmu);
	event_keycache_free(kc);
	return NULL;
}

void
relay_ingest_init(void)
{
	int rc;

	memset(&flush_sul, 0, sizeof(flush_sul));
	memset(&trim_sul, 0, sizeof(trim_sul));
	memset(&wal_sul, 0, sizeof(wal_sul));
	memset(&admit_sul, 0, sizeof(admit_sul));
	memset(&hold_sul, 0, sizeof(hold_sul));
	memset(&step_sul, 0, sizeof(step_sul));
	/*
	 * OK true is sent after the commit of its batch (flush_now()); with
	 * durability full (db_open()'s default) that commit syncs the WAL,
	 * once for the whole batch, so the OK means stable storage.
	 */
	/*
	 * With durability full the sync thread syncs the WAL after each
	 * commit (relay_sync.c), so SQLite syncs nothing in it; where the
	 * thread cannot (a writer not on walbuf's VFS), SQLite's commit
	 * keeps syncing.
	 */
	if (relayd->cfg.durability == CFG_DURABILITY_NORMAL)
		log_info(
		    "durability normal: a power cut may lose the last acknowledged events and pushes");
	if ((relayd->cfg.durability == CFG_DURABILITY_NORMAL ||
		relay_sync_init() == 0) &&
	    db_set_durability(store_sqlite(relayd->store), 0) == -1)
		fatalx("cannot set the database's durability");
	if ((rc = proc_thread(&vthread, NULL, verify_main, NULL,
		 RELAY_SIG_THREAD)) != 0)
		fatalx("cannot start the signature thread: %s", strerror(rc));
	vstarted = 1;
}

/* Hands p to the signature thread; waits while the ring is full (in
 * events or bytes). */
static void
verify_submit(struct pending *p)
{
	p->p_sig = -1;
	STAILQ_INSERT_TAIL(&verifying, p, p_entry);
	pthread_mutex_lock(&vmu);
	while (vcount == RELAY_VERIFY_QUEUE ||
	    (vcount > 0 &&
		vbytes + p->p_ev->json_len > RELAY_VERIFY_QUEUE_BYTES)) {
		/* What fills the ring waits for the thread: wake it. */
		pthread_cond_signal(&vwork);
		pthread_cond_wait(&vspace, &vmu);
	}
	vring[(vhead + vcount) % RELAY_VERIFY_QUEUE] = p;
	vcount++;
	vbytes += p->p_ev->json_len;
	pthread_mutex_unlock(&vmu);
}

/* relay_send_ok() for an EVENT or AUTH that arrived at t0 (ms). */
static void
send_ok(struct relay_conn *c, const char *id_hex, int ok, const char *msg,
    int64_t t0)
{
	relay_send_ok(c, id_hex, ok, msg);
	relay_hist_observe(&relayd->stats.ok_latency, relay_now_ms() - t0);
}

/* p's answer for the store's result r; a duplicate is counted here. */
static void
pending_result(struct pending *p, enum store_result r)
{
	p->p_ok = store_result_ok(r);
	snprintf(p->p_msg, sizeof(p->p_msg), "%s", store_result_message(r));
	relayd->stats.events_duplicate += r == STORE_DUPLICATE;
}

/*
 * The events that arrived in one turn of the loop, in their order: those
 * stored already (in the last commit, read on relayd->rstore: never a
 * batch still open) are answered without a signature check, which costs
 * more than the lookup (a second fetch of an event, a client sending to
 * every relay it knows), once that commit is synced; the rest go to the
 * signature thread, woken once for all of them.  The lookups share one
 * read transaction: one each took and released the WAL read lock, 6 of a
 * lookup's 7 us.  Copies still in the pipeline are caught by decide().  Runs from a 0 us timer, after
 * the service pass that parsed them and before the loop polls again.
 */
static void
admit(void)
{
	static uint8_t(*ids)[EVENT_ID_LEN];
	static int	   *have;
	static size_t	    cap;
	struct pending	   *p;
	size_t		    n = 0, k = 0;
	struct pending_list dups;

	STAILQ_FOREACH(p, &arrived, p_entry) {
		/* Certainly new (relay_ids.c): nothing to look up. */
		if (p->p_check && !relay_ids_maybe(p->p_ev->id)) {
			p->p_check = 0;
			relayd->stats.arrivals_new_by_hint++;
		}
		n += p->p_check;
	}
	relayd->stats.arrivals_looked_up += n;
	if (n > cap) {
		cap = n * 2;
		if ((ids = reallocarray(ids, cap, sizeof(*ids))) == NULL ||
		    (have = reallocarray(have, cap, sizeof(*have))) == NULL)
			fatal("admit");
	}
	STAILQ_FOREACH(p, &arrived, p_entry)
		if (p->p_check)
			memcpy(ids[k++], p->p_ev->id, EVENT_ID_LEN);
	/* On an error each is checked: the batch looks again anyway. */
	if (n > 0 &&
	    store_has_ids(relayd->rstore, (const uint8_t(*)[EVENT_ID_LEN])ids,
		n, have) == -1)
		memset(have, 0, n * sizeof(*have));
	STAILQ_INIT(&dups);
	for (k = 0; (p = STAILQ_FIRST(&arrived)) != NULL;) {
		STAILQ_REMOVE_HEAD(&arrived, p_entry);
		if (!p->p_check || have[k++] != 1) {
			verify_submit(p);
			continue;
		}
		pending_result(p, STORE_DUPLICATE);
		STAILQ_INSERT_TAIL(&dups, p, p_entry);
	}
	/* The copy they found may be committed but not yet synced. */
	if (!STAILQ_EMPTY(&dups))
		answer_after_sync(&dups);
	pthread_mutex_lock(&vmu);
	pthread_cond_signal(&vwork);
	pthread_mutex_unlock(&vmu);
}

static void
admit_cb(lws_sorted_usec_list_t *sul)
{
	(void)sul;
	admit_scheduled = 0;
	admit();
}

/* Queues p for admit() at the end of this turn of the loop. */
static void
arrive(struct pending *p)
{
	STAILQ_INSERT_TAIL(&arrived, p, p_entry);
	if (!admit_scheduled) {
		admit_scheduled = 1;
		lws_sul_schedule(relayd->ctx, 0, &admit_sul, admit_cb, 0);
	}
}

/* The items of l from connection c answer no one any more. */
static void
forget_in(struct pending_list *l, const struct relay_conn *c)
{
	struct pending *p;

	STAILQ_FOREACH(p, l, p_entry)
		if (p->p_conn == c)
			p->p_conn = NULL;
}

void
relay_ingest_forget(struct relay_conn *c)
{
	struct unsynced *u;

	forget_in(&arrived, c);
	forget_in(&pending, c);
	forget_in(&verifying, c);
	forget_in(&batch_todo, c);
	forget_in(&batch_decided, c);
	STAILQ_FOREACH(u, &unsynced, us_entry)
		forget_in(&u->us_items, c);
}

/* 1 if the connection authenticated as pubkey (NIP-42). */
static int
conn_authed_as(const struct relay_conn *c, const uint8_t pubkey[PUBKEY_LEN])
{
	int i;

	for (i = 0; i < c->rc_nauth; i++)
		if (memcmp(c->rc_auth[i], pubkey, PUBKEY_LEN) == 0)
			return 1;
	return 0;
}

/*
 * Checks after the signature's, for p's connection as it stands after
 * the AUTHs that came before p.  Returns 0, or -1 with the OK message.
 */
static int
check_signed_event(const struct pending *p, char *msg, size_t msglen)
{
	const struct event *ev = p->p_ev;
	int64_t		    now = (int64_t)time(NULL), exp;

	if ((exp = event_expiration(ev)) != 0 && exp <= now) {
		snprintf(msg, msglen, "blocked: event is expired");
		return -1;
	}
	if (!auth_protected(ev))
		return 0;
	/*
	 * NIP-70: only its author, authenticated on this connection, may
	 * publish it; never a copy fetched from another relay (nips.md 1.9).
	 */
	if (p->p_remote || p->p_conn == NULL) {
		snprintf(msg, msglen, "blocked: event marked as protected");
		return -1;
	}
	/* graspctl import, the operator's act (graspctl(8)). */
	if (p->p_conn->rc_import)
		return 0;
	if (conn_authed_as(p->p_conn, ev->pubkey))
		return 0;
	if (p->p_conn->rc_nauth == 0)
		snprintf(msg, msglen,
		    NIP01_AUTH_REQUIRED
		    " this event is marked as protected: authenticate as its author first");
	else
		snprintf(msg, msglen,
		    "restricted: this event is marked as protected and may be published only by its author, who has not authenticated on this connection");
	return -1;
}

/*
 * No commit for RELAY_TRIM_IDLE_US: a burst is over.  What it left in
 * buffers and the allocator's free lists goes back to the system.
 */
static void
trim_cb(lws_sorted_usec_list_t *sul)
{
	(void)sul;
	walbuf_trim();
	malloc_trim(0);
}

/* No commit for RELAY_CKPT_QUIET_S: a burst's large WAL file may go. */
static void
wal_cb(lws_sorted_usec_list_t *sul)
{
	(void)sul;
	relay_ckpt_idle();
}

static void
schedule_flush(void)
{
	if (flush_scheduled)
		return;
	flush_scheduled = 1;
	/*
	 * Runs after the current service pass: one commit per loop turn.
	 * Under load (the last commit carried several events) wait a little
	 * longer so that more events share a commit: a commit costs far more
	 * than an event, and queueing dominates latency then anyway.  The
	 * loop sleeps in poll meanwhile, woken by the timerfd or by clients.
	 */
	if (last_batch >= RELAY_BATCH_BUSY && batch_tfd != -1) {
		struct itimerspec its;

		memset(&its, 0, sizeof(its));
		its.it_value.tv_nsec = RELAY_BATCH_WAIT_US * 1000L;
		if (timerfd_settime(batch_tfd, 0, &its, NULL) == 0)
			return;
		log_warn("timerfd_settime");
	}
	lws_sul_schedule(relayd->ctx, 0, &flush_sul, flush_cb, 1);
}

void
relay_ingest_timer_init(void)
{
	if ((batch_tfd = timerfd_create(CLOCK_MONOTONIC,
		 TFD_NONBLOCK | TFD_CLOEXEC)) == -1)
		fatal("timerfd_create");
	proc_adopt(relayd->vhost, batch_tfd, "batch", 0, "batch timer");
}

/*
 * The raw-file protocol callback of the batch timerfd: the wait is over.
 * A flush that ran meanwhile (flush_scheduled is 0) leaves nothing to do.
 */
int
relay_ingest_timer_callback(struct lws *wsi, enum lws_callback_reasons reason,
    void *user, void *in, size_t len)
{
	uint64_t expirations;

	(void)wsi;
	(void)user;
	(void)in;
	(void)len;
	if (reason != LWS_CALLBACK_RAW_RX_FILE)
		return 0;
	/* Empties the timerfd, so that poll stops reporting it. */
	if (read(batch_tfd, &expirations, sizeof(expirations)) == -1)
		return 0;
	if (flush_scheduled)
		relay_ingest_flush_now();
	return 0;
}

static int
rate_ok(struct relay_conn *c)
{
	double	per_min = relayd->cfg.max_events_per_minute;
	int64_t now;

	if (per_min <= 0)
		return 1;
	now = relay_now_ms();
	c->rc_tokens += (double)(now - c->rc_tokens_at) * per_min / 60000.0;
	if (c->rc_tokens > per_min)
		c->rc_tokens = per_min;
	c->rc_tokens_at = now;
	if (c->rc_tokens < 1.0)
		return 0;
	c->rc_tokens -= 1.0;
	return 1;
}

/*
 * A client's EVENT, or with auth its AUTH (NIP-42): rate limit, parse,
 * the checks that need no signature, then the signature thread.  Each
 * costs a signature check, so AUTH shares the EVENT rate bucket.
 */
static void
client_submit(struct relay_conn *c, const struct json *evj, int auth)
{
	struct event   *ev;
	struct pending *p;
	const char     *limited = NULL;
	char		id[EVENT_ID_HEX_LEN + 1], msg[512];
	int64_t		t0 = relay_now_ms();

	if (!rate_ok(c))
		limited = "rate-limited: slow down";
	else if (!relay_addr_event_ok(c))
		limited = "rate-limited: too many events from your address";
	else if (!auth && relay_disk_low()) {
		limited = RELAY_DISK_MSG;
		relay_disk_refused(0);
	}
	if (limited != NULL) {
		relay_proto_okid(evj, id);
		send_ok(c, id, 0, limited, t0);
		if (auth)
			relayd->stats.auth[0]++;
		else
			relayd->stats.events_refused++;
		return;
	}
	if ((ev = relay_proto_event(evj, auth ? c->rc_challenge : NULL,
		 &relayd->policy, (int64_t)time(NULL),
		 (size_t)relayd->cfg.max_event_size, id, msg, sizeof(msg))) ==
	    NULL) {
		send_ok(c, id, 0, msg, t0);
		if (auth)
			relayd->stats.auth[0]++;
		else
			relayd->stats.events_invalid++;
		return;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL)
		fatal("client_submit");
	p->p_ev = ev;
	p->p_conn = c;
	p->p_t0 = t0;
	p->p_auth = auth;
	p->p_check = !auth;
	arrive(p);
}

void
relay_ingest_client(struct relay_conn *c, const struct json *evj)
{
	client_submit(c, evj, 0);
}

void
relay_ingest_auth(struct relay_conn *c, const struct json *evj)
{
	client_submit(c, evj, 1);
}

/* An AUTH event whose signature was checked (ok): the answer. */
static void
auth_verified(struct pending *p, int ok)
{
	struct relay_conn *c = p->p_conn;
	const char	  *msg = "";

	if (c == NULL)
		return;
	if (!ok)
		msg = "invalid: bad signature";
	else if (!conn_authed_as(c, p->p_ev->pubkey)) {
		if (c->rc_nauth < RELAY_MAX_AUTH)
			memcpy(c->rc_auth[c->rc_nauth++], p->p_ev->pubkey,
			    PUBKEY_LEN);
		else {
			ok = 0;
			msg = "blocked: too many authenticated keys on this "
			      "connection";
		}
	}
	relayd->stats.auth[ok]++;
	send_ok(c, p->p_ev->id_hex, ok, msg, p->p_t0);
}

void
relay_ingest_remote(enum role origin, const char *url, size_t urllen,
    const char *json, size_t len)
{
	struct event   *ev;
	struct pending *p;
	char		msg[512];

	relayd->stats.ingested[origin]++;
	/* The fetching role finds it again once space returns. */
	if (relay_disk_low()) {
		relay_disk_refused(0);
		return;
	}
	if ((ev = event_parse(json, len, msg, sizeof(msg))) == NULL ||
	    relay_proto_check_event(ev, (int64_t)time(NULL),
		(size_t)relayd->cfg.max_event_size, msg, sizeof(msg)) == -1) {
		log_debug("%s via %.*s: %s", role_name(origin), (int)urllen,
		    url, msg);
		relayd->stats.events_invalid++;
		event_destroy(ev);
		return;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL ||
	    (p->p_url = strndup(url, urllen)) == NULL)
		fatal("relay_ingest_remote");
	p->p_ev = ev;
	p->p_remote = 1;
	p->p_origin = origin;
	p->p_check = 1;
	arrive(p);
}

/*
 * Takes the events whose signature the thread checked, in arrival order,
 * into the next commit, or answers them.  Runs when the thread wakes the
 * loop, and before every commit.
 */
void
relay_ingest_verified(void)
{
	struct pending *p;
	char		msg[512];
	int		ok;

	for (;;) {
		if ((p = STAILQ_FIRST(&verifying)) == NULL)
			break;
		pthread_mutex_lock(&vmu);
		if ((ok = p->p_sig) == -1)
			vwoken = 0;
		pthread_mutex_unlock(&vmu);
		if (ok == -1)
			break;
		STAILQ_REMOVE_HEAD(&verifying, p_entry);
		if (p->p_auth) {
			auth_verified(p, ok);
			event_destroy(p->p_ev);
			free(p);
			continue;
		}
		if (!ok)
			snprintf(msg, sizeof(msg), "invalid: bad signature");
		if (!ok || check_signed_event(p, msg, sizeof(msg)) == -1) {
			if (p->p_remote)
				log_debug("%s via %s: %s",
				    role_name(p->p_origin), p->p_url, msg);
			else if (p->p_conn != NULL)
				send_ok(p->p_conn, p->p_ev->id_hex, 0, msg,
				    p->p_t0);
			relayd->stats.events_invalid++;
			event_destroy(p->p_ev);
			free(p->p_url);
			free(p);
			continue;
		}
		STAILQ_INSERT_TAIL(&pending, p, p_entry);
		schedule_flush();
	}
	if (STAILQ_EMPTY(&verifying)) {
		pthread_mutex_lock(&vmu);
		vwoken = 0;
		pthread_mutex_unlock(&vmu);
	}
}

void
relay_ingest_resume(void)
{
	if (held) {
		held = 0;
		schedule_flush();
	}
}

static void
hold_cb(lws_sorted_usec_list_t *sul)
{
	(void)sul;
	relay_ingest_resume();
}

/* Lets the thread finish what it holds, and takes the results. */
void
relay_ingest_stop(void)
{
	if (!vstarted)
		return;
	/* The last flush commits whatever the WAL holds. */
	stopping = 1;
	admit();
	pthread_mutex_lock(&vmu);
	vstop = 1;
	pthread_cond_signal(&vwork);
	pthread_mutex_unlock(&vmu);
	pthread_join(vthread, NULL);
	vstarted = 0;
	relay_ingest_verified();
}

void
relay_ingest_task(void (*fn)(void *), void (*done)(void *, int), void *arg)
{
	struct pending *p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		fatal("relay_ingest_task");
	p->p_run = fn;
	p->p_done = done;
	p->p_arg = arg;
	STAILQ_INSERT_TAIL(&pending, p, p_entry);
	schedule_flush();
}

static struct deferred *
deferred_new(void)
{
	struct deferred *df;

	if (!in_txn)
		fatalx("deferred work outside a transaction");
	if ((df = calloc(1, sizeof(*df))) == NULL)
		fatal("deferred_new");
	STAILQ_INSERT_TAIL(&deferred, df, df_entry);
	return df;
}

void
relay_ingest_released(struct event *ev, int64_t seq)
{
	struct deferred *df = deferred_new();

	df->df_ev = ev;
	df->df_seq = seq;
	relay_inv_add(ev, seq);
	relayd->stats.purg_released++;
}

void
relay_ingest_defer(void (*fn)(void *, int), void *arg)
{
	struct deferred *df = deferred_new();

	df->df_fn = fn;
	df->df_arg = arg;
}

struct store *
relay_reader(void)
{
	return in_txn ? relayd->store : relayd->rstore;
}

/* Decides one pending event inside the open transaction. */
static void
decide(struct pending *p)
{
	struct store	 *st = relayd->store;
	struct event	 *ev = p->p_ev;
	enum store_result r;
	int64_t		  seq;
	int		  rc;

	/* An id the filter of stored ids calls new needs no lookup: the
	 * writer adds each id it inserts before its commit (relay_ids.c). */
	if (relay_ids_maybe(ev->id) && (rc = store_has_id(st, ev->id)) != 0) {
		pending_result(p, rc == 1 ? STORE_DUPLICATE : STORE_ERROR);
		return;
	}
	if ((rc = store_is_deleted(st, ev->id, ev->pubkey)) != 0) {
		pending_result(p, rc == 1 ? STORE_DELETED : STORE_ERROR);
		return;
	}
	if (relay_purg_held(ev, p->p_msg, sizeof(p->p_msg))) {
		p->p_ok = 1;
		relayd->stats.events_duplicate++;
		return;
	}
	rc = policy_check(&relayd->policy, st, ev, p->p_msg, sizeof(p->p_msg));
	switch (
	    relay_purg_route(ev, rc, p->p_remote, p->p_msg, sizeof(p->p_msg))) {
	case PURG_HELD:
		p->p_ok = 1;
		relayd->stats.purg_held++;
		return;
	case PURG_REFUSE:
		p->p_ok = 0;
		relayd->stats.events_refused++;
		return;
	case PURG_STORE:
		break;
	}
	if (event_kind_class(ev->kind) == KIND_EPHEMERAL) {
		p->p_ok = 1;
		p->p_fanout = 1;
		relayd->stats.events_ephemeral++;
		return;
	}
	/* Its id is neither stored nor deleted: checked above.  A duplicate
	 * here is a copy another process stored after the filter of stored
	 * ids was filled, found by the insert. */
	r = store_put_new(st, ev, &seq);
	pending_result(p, r);
	if (r == STORE_OK) {
		p->p_fanout = 1;
		p->p_seq = seq;
		relay_inv_add(ev, seq);
		relay_purg_stored(ev);
	}
}

/* After the commit (or its failure): released events and hooks. */
static void
run_deferred(struct unsynced *u)
{
	struct deferred *df;
	int		 committed = u->us_committed;

	while ((df = STAILQ_FIRST(&u->us_deferred)) != NULL) {
		STAILQ_REMOVE_HEAD(&u->us_deferred, df_entry);
		if (df->df_ev != NULL && committed) {
			relayd->stats.events_accepted++;
			relay_fanout(df->df_ev);
			relay_chan_publish(df->df_seq, df->df_ev);
		}
		if (df->df_fn != NULL)
			df->df_fn(df->df_arg, committed);
		event_destroy(df->df_ev);
		free(df);
	}
}

/*
 * Sends the answers of a batch whose commit was tried (committed: it
 * held, and is on stable storage), fans out and publishes what it
 * stored, then runs the tasks' completions.
 */
static void
batch_answer(struct unsynced *u)
{
	struct pending *p;
	STAILQ_HEAD(, pending) tasks;
	int committed = u->us_committed;

	STAILQ_INIT(&tasks);
	while ((p = STAILQ_FIRST(&u->us_items)) != NULL) {
		STAILQ_REMOVE_HEAD(&u->us_items, p_entry);
		if (p->p_run != NULL) {
			STAILQ_INSERT_TAIL(&tasks, p, p_entry);
			continue;
		}
		if (!committed) {
			p->p_ok = 0;
			p->p_fanout = 0;
			snprintf(p->p_msg, sizeof(p->p_msg), "%s",
			    relay_disk_low() ?
				RELAY_DISK_MSG :
				store_result_message(STORE_ERROR));
		}
		if (p->p_ok && p->p_fanout &&
		    event_kind_class(p->p_ev->kind) != KIND_EPHEMERAL)
			relayd->stats.events_accepted++;
		if (p->p_conn)
			send_ok(p->p_conn, p->p_ev->id_hex, p->p_ok, p->p_msg,
			    p->p_t0);
		if (p->p_fanout)
			relay_fanout(p->p_ev);
		if (p->p_fanout && p->p_seq > 0)
			relay_chan_publish(p->p_seq, p->p_ev);
		event_destroy(p->p_ev);
		free(p->p_url);
		free(p);
	}
	run_deferred(u);
	relay_chan_send();
	/* Task completions last: they see every event of the batch out. */
	for (p = STAILQ_FIRST(&tasks); p != NULL; p = STAILQ_FIRST(&tasks)) {
		STAILQ_REMOVE_HEAD(&tasks, p_entry);
		if (p->p_done != NULL)
			p->p_done(p->p_arg, committed);
		free(p);
	}
}

void
relay_ingest_synced(void)
{
	struct unsynced *u;
	uint64_t	 done;

	if (STAILQ_EMPTY(&unsynced))
		return;
	done = stopping ? relay_sync_wait() : relay_sync_done();
	while ((u = STAILQ_FIRST(&unsynced)) != NULL && u->us_gen <= done) {
		STAILQ_REMOVE_HEAD(&unsynced, us_entry);
		unsynced_n -= u->us_n;
		unsynced_bytes -= u->us_bytes;
		batch_answer(u);
		free(u);
	}
}

/*
 * Queues items and deferred work (emptied) to be answered once sync gen
 * is done, after what is queued already; answers what it can now.
 */
static void
unsynced_push(int committed, uint64_t gen, struct pending_list *items,
    struct deferred_list *dfs)
{
	struct unsynced *u;
	struct pending	*p;

	if ((u = calloc(1, sizeof(*u))) == NULL)
		fatal("unsynced_push");
	u->us_committed = committed;
	u->us_gen = gen;
	STAILQ_INIT(&u->us_items);
	STAILQ_INIT(&u->us_deferred);
	STAILQ_CONCAT(&u->us_items, items);
	if (dfs != NULL)
		STAILQ_CONCAT(&u->us_deferred, dfs);
	STAILQ_FOREACH(p, &u->us_items, p_entry) {
		u->us_n++;
		u->us_bytes += p->p_ev != NULL ? p->p_ev->json_len : 0;
	}
	unsynced_n += u->us_n;
	unsynced_bytes += u->us_bytes;
	STAILQ_INSERT_TAIL(&unsynced, u, us_entry);
	relay_ingest_synced();
}

/*
 * Answers decided items (no task, nothing to fan out) once every commit
 * so far is synced: now if it is.
 */
static void
answer_after_sync(struct pending_list *items)
{
	unsynced_push(1, relay_sync_asked(), items, NULL);
}

/*
 * The open batch's decided items and deferred work, moved to the queue
 * of batches waiting for their sync: a commit that held asks for one; a
 * failed one waits for the syncs before it, so that answers keep the
 * order of the commits.
 */
static void
batch_queue(int committed)
{
	unsynced_push(committed,
	    committed ? relay_sync_ask() : relay_sync_asked(), &batch_decided,
	    &deferred);
}

/* Commits the open batch once all of it was decided, and queues it. */
static void
batch_commit(void)
{
	int committed;

	committed = relay_inv_flush() == 0 && store_commit(relayd->store) == 0;
	relayd->stats.commits++;
	relay_ckpt_kick(store_wal_frames(relayd->store));
	/* Moved on by every commit: it runs once they pause. */
	lws_sul_schedule(relayd->ctx, 0, &trim_sul, trim_cb,
	    RELAY_TRIM_IDLE_US);
	lws_sul_schedule(relayd->ctx, 0, &wal_sul, wal_cb,
	    (lws_usec_t)(cfg_scale_delay(&relayd->cfg, RELAY_CKPT_QUIET_S) *
		LWS_US_PER_SEC));
	if (!committed) {
		log_warnx("commit failed; refusing a batch");
		relay_disk_recheck();
		store_rollback(relayd->store);
		relay_inv_rollback();
	}
	batch_open = 0;
	batch_queue(committed);
	/* What came meanwhile is the next batch. */
	if (!STAILQ_EMPTY(&pending))
		schedule_flush();
}

/* A monotonic clock in microseconds, for the batch's steps. */
static int64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/*
 * Decides items of the open batch, in their order, inside its
 * transaction, for at most budget_us (at least one item); commits it
 * when none is left.
 */
static void
batch_step(int64_t budget_us)
{
	struct pending *p;
	int64_t		end = now_us() + budget_us;

	in_txn = 1;
	while ((p = STAILQ_FIRST(&batch_todo)) != NULL) {
		STAILQ_REMOVE_HEAD(&batch_todo, p_entry);
		if (p->p_run != NULL)
			p->p_run(p->p_arg);
		else {
			decide(p);
			relayd->stats.committed_events++;
		}
		STAILQ_INSERT_TAIL(&batch_decided, p, p_entry);
		if (budget_us != INT64_MAX && now_us() >= end)
			break;
	}
	in_txn = 0;
	if (STAILQ_EMPTY(&batch_todo))
		batch_commit();
	else
		lws_sul_schedule(relayd->ctx, 0, &step_sul, step_cb, 0);
}

static void
step_cb(lws_sorted_usec_list_t *sul)
{
	(void)sul;
	if (!batch_open)
		return;
	/*
	 * A REQ or COUNT was answered since the last step: the loop
	 * writes the answer first, once in a row, so that readers cannot
	 * hold the batch.  1 us, not 0, so that lws polls before it runs
	 * this again.
	 */
	if (step_yield && !step_yielded) {
		step_yield = 0;
		step_yielded = 1;
		lws_sul_schedule(relayd->ctx, 0, &step_sul, step_cb, 1);
		return;
	}
	step_yield = step_yielded = 0;
	batch_step(RELAY_BATCH_STEP_US);
}

void
relay_ingest_yield(void)
{
	step_yield = batch_open;
}

void
relay_ingest_flush_now(void)
{
	struct pending *p;

	/* What the signature thread finished meanwhile joins this commit. */
	relay_ingest_verified();
	flush_scheduled = 0;
	if (batch_open) {
		/* step_cb() carries it on; the last flush ends it now. */
		if (!stopping)
			return;
		batch_step(INT64_MAX);
	}
	if (STAILQ_EMPTY(&pending)) {
		/* The last flush also waits for the last sync. */
		if (stopping)
			relay_ingest_synced();
		return;
	}
	/*
	 * The checkpoint thread wakes the loop when the WAL is copied
	 * (relay_ingest_resume()); meanwhile nothing reschedules a flush
	 * but new work.
	 */
	if (!stopping && relay_ckpt_hold(store_wal_frames(relayd->store))) {
		/* If the thread never gets there, the hold ends by time. */
		if (!held)
			lws_sul_schedule(relayd->ctx, 0, &hold_sul, hold_cb,
			    (RELAY_CKPT_HOLD_MAX_MS + 1) * LWS_US_PER_MS);
		held = 1;
		return;
	}
	/*
	 * A slow disk: past RELAY_UNSYNCED_MAX items or _BYTES of events
	 * waiting for their sync, the loop waits for it, as it waited
	 * inside each commit before, so that clients queue in their
	 * sockets, not in relayd's memory.
	 */
	if (unsynced_n >= RELAY_UNSYNCED_MAX ||
	    unsynced_bytes >= RELAY_UNSYNCED_MAX_BYTES) {
		relayd->stats.sync_waits++;
		relay_sync_wait();
		relay_ingest_synced();
	}
	STAILQ_CONCAT(&batch_todo, &pending);
	last_batch = 0;
	STAILQ_FOREACH(p, &batch_todo, p_entry)
		last_batch++;
	if (store_begin(relayd->store) == -1) {
		log_warnx("cannot begin a transaction");
		STAILQ_CONCAT(&batch_decided, &batch_todo);
		batch_queue(0);
		return;
	}
	batch_open = 1;
	batch_step(stopping ? INT64_MAX : RELAY_BATCH_STEP_US);
}

static void
flush_cb(lws_sorted_usec_list_t *sul)
{
	(void)sul;
	relay_ingest_flush_now();
}
