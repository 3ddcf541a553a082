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
 * After each commit the loop tells the thread how large the WAL is; the
 * thread checkpoints when it is RELAY_CKPT_MIN_FRAMES or more, one pass
 * for any number of calls that came meanwhile.  Under a steady ingest the
 * passes lag the writer and the WAL never starts over, so the writer
 * still checkpoints in its commit at RELAY_CKPT_MAX_FRAMES (relayd.c).
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <pthread.h>
#include <signal.h>
#include <string.h>

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
static sqlite3	      *ck_db; /* the thread's alone */

static void *
ckpt_main(void *arg)
{
	int rc;

	(void)arg;
	pthread_mutex_lock(&ck_mu);
	for (;;) {
		while (!ck_want && !ck_stop)
			pthread_cond_wait(&ck_cond, &ck_mu);
		if (ck_stop)
			break;
		ck_want = 0;
		pthread_mutex_unlock(&ck_mu);
		rc = sqlite3_wal_checkpoint_v2(ck_db, NULL,
		    SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
		/* BUSY: another checkpoint runs; INTERRUPT: stopping. */
		if (rc != SQLITE_OK && rc != SQLITE_BUSY &&
		    rc != SQLITE_INTERRUPT)
			log_warnx("checkpoint: %s", sqlite3_errmsg(ck_db));
		pthread_mutex_lock(&ck_mu);
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

void
relay_ckpt_kick(int frames)
{
	if (!ck_started || frames < RELAY_CKPT_MIN_FRAMES)
		return;
	pthread_mutex_lock(&ck_mu);
	if (!ck_want) {
		ck_want = 1;
		pthread_cond_signal(&ck_cond);
	}
	pthread_mutex_unlock(&ck_mu);
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
