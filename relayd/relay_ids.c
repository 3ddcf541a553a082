/*
 * relay_ids.c: which ids relayd certainly does not hold, so that an
 * arriving event goes to the signature thread without a lookup
 * (common/idhint.h).
 *
 * Every arrival's id is looked for in the store before its signature is
 * checked (relay_ingest.c, admit()).  On a large store that lookup reads
 * an index leaf on the read connection, whose cache SQLite drops at each
 * commit: at 200,000 events skipping it saved the loop 2.3-3.6 us of its
 * 38-45 an event (doc/performance.md).  The filter is filled twice over:
 * the writer's store adds each id it inserts from the start on, and a
 * thread adds the ids already stored, a chunk of the id index at a
 * time; only once that thread is done does the filter answer "no".
 * decide() asks the filter again, in the write transaction, before its
 * own lookup: an id it calls new there is inserted without one.  An id
 * stored behind relayd's back after the thread passed it is called new:
 * its signature is checked, and the insert's unique id finds it
 * (store.c answers a duplicate, and the batch goes on).
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "idhint.h"
#include "log.h"
#include "proc.h"
#include "relayd.h"
#include "store.h"

static struct idhint ids;
static struct store *ids_store; /* the thread's */
static pthread_t     ids_thread;
static int	     ids_started;
static int	     ids_stop; /* atomic: the thread stops */

static void
add_cb(const uint8_t *id, void *arg)
{
	idhint_add(arg, id);
}

static void *
ids_main(void *arg)
{
	uint8_t	 after[EVENT_ID_LEN] = { 0 };
	size_t	 afterlen = 0;
	int64_t	 t0 = relay_now_ms();
	uint64_t n = 0;
	int	 r;

	while (!__atomic_load_n(&ids_stop, __ATOMIC_ACQUIRE)) {
		r = store_ids_after(ids_store, after, &afterlen,
		    RELAY_IDS_CHUNK, add_cb, &ids);
		if (r == -1) {
			log_warnx("ids: reading the stored ids failed: every "
				  "arrival is looked up");
			return NULL;
		}
		if (r == 0) {
			idhint_set_ready(&ids);
			log_debug("ids: %llu stored ids in %lld ms (%zu KiB)",
			    (unsigned long long)n,
			    (long long)(relay_now_ms() - t0),
			    (size_t)(ids.ih_nbits / 8 / 1024));
			return NULL;
		}
		n += (uint64_t)r;
	}
	return NULL;
}

void
relay_ids_init(const char *path)
{
	char	err[256];
	int64_t last;
	size_t	cap;
	int	rc;

	if (store_last_seq(relayd->store, &last) == -1)
		last = 0;
	cap = last > RELAY_IDS_MIN / 2 ? (size_t)last * 2 : RELAY_IDS_MIN;
	if (idhint_init(&ids, cap, RELAY_IDS_MAX_BYTES) == -1) {
		log_warnx("ids: no memory for the filter of stored ids");
		return;
	}
	if ((ids_store = store_open(path, 1, err, sizeof(err))) == NULL) {
		log_warnx("ids: %s: %s", path, err);
		idhint_free(&ids);
		return;
	}
	/* Before the thread's first read: no insert falls between. */
	store_set_idhint(relayd->store, &ids);
	if ((rc = proc_thread(&ids_thread, NULL, ids_main, NULL,
		 RELAY_IDS_THREAD)) != 0) {
		log_warnx("ids: cannot start the thread: %s", strerror(rc));
		relay_ids_stop();
		return;
	}
	ids_started = 1;
}

int
relay_ids_maybe(const uint8_t id[EVENT_ID_LEN])
{
	return idhint_maybe(&ids, id);
}

void
relay_ids_stop(void)
{
	if (ids_started) {
		__atomic_store_n(&ids_stop, 1, __ATOMIC_RELEASE);
		pthread_join(ids_thread, NULL);
		ids_started = 0;
	}
	store_close(ids_store);
	ids_store = NULL;
	if (relayd->store != NULL)
		store_set_idhint(relayd->store, NULL);
	idhint_free(&ids);
}
