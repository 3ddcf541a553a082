/*
 * relay_sync.c: relayd's commits reach stable storage on a thread of
 * their own, so that the loop never waits for the disk.
 *
 * With durability full an OK means that the event survives a power cut
 * (db.h, "Durability").  SQLite gave that by syncing the WAL inside each
 * commit (synchronous FULL), on the loop: 9 to 15% of the loop's time
 * under load went to waiting in fdatasync, and every REQ that came
 * meanwhile waited with it.  The writer now commits under NORMAL, which
 * writes the frames and syncs nothing, and asks this thread for a sync
 * (relay_sync_ask()); the batch's OKs, fan-out and completions wait in
 * relay_ingest.c until the thread reports that sync done, while the loop
 * reads, answers REQs and decides the next batch.  One sync covers every
 * commit before it, so requests that come while one runs share the next.
 *
 * The sync goes to the WAL file of the VFS under walbuf (the default
 * VFS, or the recording one of common/powercut.h in a power-cut test),
 * never to walbuf's own, which belongs to the loop.  A WAL restarted
 * after a checkpoint needs nothing more: the checkpoint thread's
 * connection syncs the WAL and then the database file (FULL), and the
 * restart writes through the same file.  A failed sync is fatal: the
 * frames it should have made durable are in the page cache, and an OK
 * for them could be a lie; the supervisor starts relayd again, and what
 * SQLite recovers from the WAL is what clients may have to send again.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "log.h"
#include "relayd.h"
#include "walbuf.h"

static pthread_t       sy_thread;
static int	       sy_started;
static pthread_mutex_t sy_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  sy_cond = PTHREAD_COND_INITIALIZER; /* asked */
static pthread_cond_t  sy_done_cond = PTHREAD_COND_INITIALIZER;
static sqlite3_file   *sy_wal;		  /* the real WAL file */
static uint64_t	       sy_asked, sy_done; /* sync generations */
static int	       sy_stop;
static int	       sy_err;	    /* SQLite's code of a failed sync */
static int	       sy_delay_ms; /* test timing: before each sync */

static void *
sync_main(void *arg)
{
	sqlite3_file *wal;
	uint64_t      target;
	int	      rc;

	(void)arg;
	pthread_mutex_lock(&sy_mu);
	for (;;) {
		while (sy_done == sy_asked && !sy_stop)
			pthread_cond_wait(&sy_cond, &sy_mu);
		if (sy_done == sy_asked)
			break;
		target = sy_asked;
		wal = sy_wal;
		pthread_mutex_unlock(&sy_mu);
		if (sy_delay_ms > 0) {
			struct timespec ts = { sy_delay_ms / 1000,
				(sy_delay_ms % 1000) * 1000000L };

			nanosleep(&ts, NULL);
		}
		rc = wal->pMethods->xSync(wal, SQLITE_SYNC_NORMAL);
		pthread_mutex_lock(&sy_mu);
		if (rc != SQLITE_OK && sy_err == 0)
			sy_err = rc;
		sy_done = target;
		pthread_cond_broadcast(&sy_done_cond);
		pthread_mutex_unlock(&sy_mu);
		lws_cancel_service(relayd->ctx);
		pthread_mutex_lock(&sy_mu);
	}
	pthread_mutex_unlock(&sy_mu);
	return NULL;
}

int
relay_sync_init(void)
{
	const char *v;
	int	    rc;

	/* The writer's connection opened its WAL with the schema's reads. */
	if ((sy_wal = walbuf_wal_real(store_sqlite(relayd->store))) == NULL)
		return -1;
	if (config_test_mode(&relayd->cfg) &&
	    (v = getenv(CONFIG_TEST_SYNC_DELAY_ENV)) != NULL)
		sy_delay_ms = atoi(v);
	if ((rc = proc_thread(&sy_thread, NULL, sync_main, NULL,
		 RELAY_SYNC_THREAD)) != 0)
		fatalx("cannot start the sync thread: %s", strerror(rc));
	sy_started = 1;
	return 0;
}

uint64_t
relay_sync_ask(void)
{
	uint64_t g;

	if (!sy_started)
		return 0;
	pthread_mutex_lock(&sy_mu);
	g = ++sy_asked;
	pthread_cond_signal(&sy_cond);
	pthread_mutex_unlock(&sy_mu);
	return g;
}

uint64_t
relay_sync_asked(void)
{
	uint64_t g;

	pthread_mutex_lock(&sy_mu);
	g = sy_asked;
	pthread_mutex_unlock(&sy_mu);
	return g;
}

/* The generation synced so far; fatal once a sync failed. */
static uint64_t
synced(int wait)
{
	uint64_t g;
	int	 err;

	pthread_mutex_lock(&sy_mu);
	while (wait && sy_started && sy_done != sy_asked)
		pthread_cond_wait(&sy_done_cond, &sy_mu);
	g = sy_done;
	err = sy_err;
	pthread_mutex_unlock(&sy_mu);
	if (err != 0)
		fatalx("cannot sync the database's WAL: %s",
		    sqlite3_errstr(err));
	return g;
}

uint64_t
relay_sync_done(void)
{
	return synced(0);
}

uint64_t
relay_sync_wait(void)
{
	return synced(1);
}

void
relay_sync_stop(void)
{
	if (!sy_started)
		return;
	pthread_mutex_lock(&sy_mu);
	sy_stop = 1;
	pthread_cond_signal(&sy_cond);
	pthread_mutex_unlock(&sy_mu);
	pthread_join(sy_thread, NULL);
	sy_started = 0;
	(void)synced(0);
}
