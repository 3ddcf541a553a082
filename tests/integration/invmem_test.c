/*
 * invmem_test.c: syncd and historyd keep no copy of the repository
 * inventory (issue 44; doc/architecture.md, "Memory").  Each used to
 * build one from the whole store at start, 110 to 130 bytes per stored
 * event; they now read the tables relayd keeps (invdb.h).
 *
 * A whole graspd runs on a store of one repository and a handful of
 * thread events, then, stopped, gets BIG_EVENTS more (issues and NIP-22
 * comments on them, as tests/bench/ingest.c's "fill" makes them) written
 * straight into its database, its inventory's tables marked unbuilt so
 * that relayd builds them at start as it does on a store older than them
 * (invdb_built()).  The anonymous memory of syncd and historyd after the
 * second start stays within MAX_GROWTH_KB of the first's.  The
 * repository names no relay and nobody has a relay list, so that neither
 * role has targets: what they hold for those (wanted ids, scopes) grows
 * with what they sync, not with the store, and is not what this pins.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "event.h"
#include "gdproc.h"
#include "relayproc.h"
#include "store.h"
#include "t.h"
#include "tstore.h"

/* Thread events in the big store: at 110 bytes each a copy of the
 * inventory is 6.6 MB, well past MAX_GROWTH_KB. */
#define BIG_EVENTS    60000
/* ... and in the small one. */
#define SMALL_EVENTS  20
/* Authors of the thread events. */
#define AUTHORS	      256
/* Growth of a role's anonymous memory we call "does not grow with the
 * store": SQLite's read-only page cache (DB_RO_CACHE_KIB, 1 MiB) filled
 * by the role's reads, and as much again for the allocator's noise. */
#define MAX_GROWTH_KB 3072
/* How long the roles may settle after a start (their first
 * reconciliation, a stats period, syncd's malloc_trim). */
#define SETTLE_MS     3000
/* The repository's identifier. */
#define REPO_D	      "invmem"

static char owner[65];
static char authors[AUTHORS][65];
static char (*issues)[65]; /* root ids, hex */
static size_t nissues;

/* Anonymous memory of pid in kB (smaps_rollup), or -1. */
static long
anon_kb(long pid)
{
	char  path[64], line[256];
	FILE *f;
	long  kb = -1;

	snprintf(path, sizeof(path), "/proc/%ld/smaps_rollup", pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "Anonymous: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static int
put(struct store *st, struct event *ev)
{
	int rc = store_put(st, ev, NULL) == STORE_OK ? 0 : -1;

	event_destroy(ev);
	return rc;
}

/*
 * Writes thread events from..to (the announcement first, if from is 0)
 * into g's stopped database in one transaction, and marks the
 * inventory's tables unbuilt so that relayd builds them at start.
 */
static int
fill(struct gdproc *g, size_t from, size_t to)
{
	struct store *st;
	struct event *ev;
	char	      err[256], tags[512], content[64];
	int64_t	      now = (int64_t)time(NULL) - 3600;
	size_t	      i;
	int	      rc = -1;

	if ((st = store_open(gd_db_path(g), 0, err, sizeof(err))) == NULL) {
		printf("# store_open: %s\n", err);
		return -1;
	}
	if (sqlite3_exec(store_sqlite(st), "PRAGMA synchronous=OFF", NULL, NULL,
		NULL) != SQLITE_OK ||
	    store_begin(st) == -1)
		goto done;
	if (from == 0 &&
	    put(st,
		tstore_unsigned_event(owner, now, KIND_REPO_ANNOUNCEMENT,
		    "[[\"d\",\"" REPO_D "\"],[\"name\",\"" REPO_D "\"]]",
		    "")) == -1)
		goto done;
	for (i = from; i < to; i++) {
		const char *pk = authors[i % AUTHORS];

		snprintf(content, sizeof(content), "event %zu", i);
		if (nissues == 0 || i % 4 == 0) {
			snprintf(tags, sizeof(tags),
			    "[[\"a\",\"30617:%s:" REPO_D "\"],[\"p\",\"%s\"]]",
			    owner, owner);
			ev = tstore_unsigned_event(pk, now + (int64_t)i,
			    KIND_ISSUE, tags, content);
			memcpy(issues[nissues++], ev->id_hex, 65);
		} else {
			const char *root = issues[(i * 7 + 1) % nissues];

			snprintf(tags, sizeof(tags),
			    "[[\"E\",\"%s\"],[\"K\",\"1621\"],"
			    "[\"e\",\"%s\"],[\"k\",\"1621\"]]",
			    root, root);
			ev = tstore_unsigned_event(pk, now + (int64_t)i, 1111,
			    tags, content);
		}
		if (put(st, ev) == -1)
			goto done;
	}
	if (store_commit(st) == -1 ||
	    sqlite3_exec(store_sqlite(st),
		"UPDATE inv_state SET built = 0 WHERE id = 1", NULL, NULL,
		NULL) != SQLITE_OK)
		goto done;
	rc = 0;
done:
	if (rc == -1)
		printf("# fill %zu..%zu failed\n", from, to);
	store_close(st);
	return rc;
}

/* syncd's and historyd's anonymous memory once they settled. */
static int
measure(struct gdproc *g, long *sync_kb, long *hist_kb)
{
	char states[GD_NROLES][16];
	long pids[GD_NROLES];
	int  s = gd_role_index("syncd"), h = gd_role_index("historyd");

	relayproc_sleep_ms(SETTLE_MS);
	if (s < 0 || h < 0 || gd_roles_now(g, states, pids) == -1 ||
	    pids[s] <= 0 || pids[h] <= 0)
		return -1;
	*sync_kb = anon_kb(pids[s]);
	*hist_kb = anon_kb(pids[h]);
	return *sync_kb > 0 && *hist_kb > 0 ? 0 : -1;
}

static void
test_roles_memory_does_not_grow_with_the_store(void)
{
	struct gdproc *g;
	long	       s0, h0, s1, h1;
	size_t	       i;

	tstore_fake_pubkey(0x0a, 0, owner);
	for (i = 0; i < AUTHORS; i++)
		tstore_fake_pubkey(0x0b, (uint32_t)i, authors[i]);
	if ((issues = calloc(SMALL_EVENTS + BIG_EVENTS, 65)) == NULL)
		abort();
	T_ASSERT((g = gd_start(NULL)) != NULL);
	gd_kill_group(g);
	T_ASSERT(fill(g, 0, SMALL_EVENTS) == 0);
	T_ASSERT(gd_restart(g) == 0);
	T_ASSERT(measure(g, &s0, &h0) == 0);
	gd_kill_group(g);
	T_ASSERT(fill(g, SMALL_EVENTS, SMALL_EVENTS + BIG_EVENTS) == 0);
	T_ASSERT(gd_restart(g) == 0);
	T_ASSERT(measure(g, &s1, &h1) == 0);
	printf("# anonymous memory, %d then %d thread events: syncd %ld -> "
	       "%ld kB, historyd %ld -> %ld kB\n",
	    SMALL_EVENTS, SMALL_EVENTS + BIG_EVENTS, s0, s1, h0, h1);
#if defined(__SANITIZE_ADDRESS__)
	/* Shadow memory and the quarantine of freed blocks: no figure of
	 * the allocator's means anything here. */
	printf("# not compared under AddressSanitizer\n");
#else
	T_CHECK(s1 - s0 < MAX_GROWTH_KB);
	T_CHECK(h1 - h0 < MAX_GROWTH_KB);
#endif
	gd_free(g);
	free(issues);
}

static const struct t_case cases[] = {
	T_CASE(test_roles_memory_does_not_grow_with_the_store),
};

T_MAIN(cases)
