/*
 * relay_ckpt.c: relayd's WAL checkpoints, on a thread of their own with a
 * connection of their own, so that copying the WAL into the database
 * file and syncing it never holds the loop.
 *
 * In the loop a checkpoint stalled every client: SQLite's automatic one
 * at DB_WAL_AUTOCHECKPOINT frames ran inside a commit (121-149 ms in the
 * ingest benchmark, every 7,000 events), and the idle one 50 ms after
 * the last commit held the REQs that came right after a burst (56-74
 * ms).  A passive checkpoint on another connection takes no lock the
 * writer needs: commits go on while it copies, and the writer's next
 * transaction starts the WAL over once everything in it was copied.
 *
 * After each commit the loop tells the thread how large the WAL is.  Once
 * it holds RELAY_CKPT_MIN_FRAMES, the thread makes a pass each time
 * RELAY_CKPT_STEP_FRAMES more came (one pass for any number of calls
 * meanwhile): a pass copies each page once however often it changed, and
 * back-to-back passes copied nearly every frame.  Under a steady ingest
 * the passes lag the writer and the WAL never starts over by itself, so
 * at RELAY_CKPT_MAX_FRAMES the loop holds its commits (relay_ckpt_hold())
 * from the end of the thread's pass under way (the hold's pass then has
 * the least to copy) until a pass has copied the whole WAL and synced,
 * and the first commit after that starts the WAL over.  The loop goes on serving meanwhile:
 * the writer checkpointing in its own commit, as before, stalled every
 * REQ for the two fsyncs (100-140 ms each time on a 200,000-event load).
 * The last RELAY_CKPT_NEAR_FRAMES before that limit are copied by
 * back-to-back passes, so that little is left when the hold comes.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "db.h"
#include "log.h"
#include "relayd.h"

static pthread_t       ck_thread;
static int	       ck_started;
static pthread_mutex_t ck_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  ck_cond = PTHREAD_COND_INITIALIZER;
static int	       ck_want; /* a pass is due */
static int	       ck_stop;
static int	       ck_hold_wanted;	 /* the WAL reached its limit */
static int	       ck_hold;		 /* the loop holds its commits */
static int	       ck_caught;	 /* a pass under the hold copied all */
static int	       ck_caught_frames; /* of a WAL this long */
static sqlite3	      *ck_db;		 /* the thread's alone */
/* The loop's alone: */
static int	       ck_last;	   /* WAL frames when the last pass was asked */
static int64_t	       ck_hold_ms; /* when the WAL reached its limit */
static int64_t	       ck_held_ms; /* when the loop began to hold, or 0 */
static int64_t	       ck_nholds;  /* holds so far, and */
static int64_t	       ck_hold_sum; /* their ms, for the debug log */

static void *
ckpt_main(void *arg)
{
	struct timespec ts;
	int		rc, hold, nlog, nckpt;

	(void)arg;
	pthread_mutex_lock(&ck_mu);
	for (;;) {
		while (!ck_want && !ck_stop)
			pthread_cond_wait(&ck_cond, &ck_mu);
		if (ck_stop)
			break;
		ck_want = 0;
		hold = ck_hold;
		pthread_mutex_unlock(&ck_mu);
		nlog = nckpt = -1;
		rc = sqlite3_wal_checkpoint_v2(ck_db, NULL,
		    SQLITE_CHECKPOINT_PASSIVE, &nlog, &nckpt);
		/* BUSY: another checkpoint runs; INTERRUPT: stopping. */
		if (rc != SQLITE_OK && rc != SQLITE_BUSY &&
		    rc != SQLITE_INTERRUPT)
			log_warnx("checkpoint: %s", sqlite3_errmsg(ck_db));
		pthread_mutex_lock(&ck_mu);
		/*
		 * The loop asked for a hold: it begins now, right after a
		 * pass, so that the pass under it has the least to copy.
		 */
		if (ck_hold_wanted && !ck_hold) {
			ck_hold = 1;
			ck_caught = 0;
			ck_want = 1;
			continue;
		}
		if (!hold || !ck_hold)
			continue;
		if (rc == SQLITE_OK && nlog >= 0 && nckpt == nlog) {
			ck_caught = 1;
			ck_caught_frames = nlog;
			pthread_mutex_unlock(&ck_mu);
			/* The loop flushes what it held (relay_ws.c). */
			lws_cancel_service(relayd->ctx);
			pthread_mutex_lock(&ck_mu);
			continue;
		}
		/*
		 * A reader's snapshot kept frames back (the roles read for a
		 * moment at a time): try again shortly, not in a spin.
		 */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += RELAY_CKPT_RETRY_US * 1000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (!ck_stop)
			pthread_cond_timedwait(&ck_cond, &ck_mu, &ts);
		ck_want = 1;
	}
	pthread_mutex_unlock(&ck_mu);
	return NULL;
}

int
relay_ckpt_init(const char *path)
{
	sigset_t all, old;
	int	 rc;

	/*
	 * The default VFS, not walbuf's: this connection only reads the
	 * WAL, which walbuf wrote out before each commit became visible.
	 */
	if (sqlite3_open_v2(path, &ck_db,
		SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
		NULL) != SQLITE_OK) {
		log_warnx("checkpoint connection %s: %s", path,
		    ck_db ? sqlite3_errmsg(ck_db) : "out of memory");
		goto fail;
	}
	/* It never writes a page of its own, so it needs no cache. */
	if (sqlite3_exec(ck_db, "PRAGMA cache_size=-64", NULL, NULL, NULL) !=
	    SQLITE_OK) {
		log_warnx("checkpoint connection: %s", sqlite3_errmsg(ck_db));
		goto fail;
	}
	sqlite3_busy_timeout(ck_db, DB_BUSY_TIMEOUT_MS);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&ck_thread, NULL, ckpt_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		log_warnx("cannot start the checkpoint thread: %s",
		    strerror(rc));
		goto fail;
	}
	pthread_setname_np(ck_thread, RELAY_CKPT_THREAD);
	ck_started = 1;
	return 0;
fail:
	sqlite3_close(ck_db);
	ck_db = NULL;
	return -1;
}

/* Asks the thread for a pass; under ck_mu. */
static void
want_pass(void)
{
	if (!ck_want) {
		ck_want = 1;
		pthread_cond_signal(&ck_cond);
	}
}

void
relay_ckpt_kick(int frames)
{
	if (frames < ck_last)
		ck_last = 0; /* the WAL started over */
	if (!ck_started || frames < RELAY_CKPT_MIN_FRAMES ||
	    (frames - ck_last < RELAY_CKPT_STEP_FRAMES &&
		frames < RELAY_CKPT_MAX_FRAMES - RELAY_CKPT_NEAR_FRAMES))
		return;
	ck_last = frames;
	pthread_mutex_lock(&ck_mu);
	want_pass();
	pthread_mutex_unlock(&ck_mu);
}

int
relay_ckpt_hold(int frames)
{
	int64_t now;
	int	held = 0;

	if (!ck_started || (frames < RELAY_CKPT_MAX_FRAMES && !ck_hold_wanted))
		return 0;
	now = relay_now_ms();
	pthread_mutex_lock(&ck_mu);
	if (!ck_hold_wanted) {
		/* Commits go on until the thread's pass under way ends. */
		ck_hold_wanted = 1;
		ck_hold_ms = now;
		want_pass();
	}
	/* A commit that landed during that pass is not copied yet. */
	if (ck_hold && ck_caught && ck_caught_frames < frames) {
		ck_caught = 0;
		want_pass();
	}
	if (ck_hold) {
		held = !ck_caught && now - ck_hold_ms < RELAY_CKPT_HOLD_MAX_MS;
		if (held && ck_held_ms == 0)
			ck_held_ms = now;
	} else if (now - ck_hold_ms >= RELAY_CKPT_HOLD_MAX_MS)
		ck_caught = 0; /* the thread never began: give up too */
	else
		goto done;
	if (!held) {
		if (!ck_caught)
			log_warnx("checkpoint: the WAL was not copied in %d "
				  "ms; committing anyway (%d frames)",
			    RELAY_CKPT_HOLD_MAX_MS, frames);
		ck_hold = ck_hold_wanted = 0;
		ck_nholds++;
		if (ck_held_ms != 0)
			ck_hold_sum += now - ck_held_ms;
		log_debug("checkpoint: commits held %lld ms, %lld ms after the "
			  "limit (%lld holds, %lld ms held in all)",
		    (long long)(ck_held_ms ? now - ck_held_ms : 0),
		    (long long)(now - ck_hold_ms), (long long)ck_nholds,
		    (long long)ck_hold_sum);
		ck_held_ms = 0;
	}
done:
	pthread_mutex_unlock(&ck_mu);
	return held;
}

void
relay_ckpt_stop(void)
{
	if (!ck_started)
		return;
	pthread_mutex_lock(&ck_mu);
	ck_stop = 1;
	pthread_cond_signal(&ck_cond);
	pthread_mutex_unlock(&ck_mu);
	/* A pass under way ends early: the store's close checkpoints. */
	sqlite3_interrupt(ck_db);
	pthread_join(ck_thread, NULL);
	ck_started = 0;
	sqlite3_close(ck_db);
	ck_db = NULL;
}
