/*
 * inventory.c: the start-up cost of the GRASP-03 inventory (issue #7's
 * closing figure; issue #10's target is a rebuild in at most 2 s).
 *
 *   inventory [ROOTS DESCENDANTS AUTHORS]
 *
 * Generates, straight into a temporary database through common/store.c
 * (so the schema and rows are what relayd would have written), BENCH_REPOS
 * accepted announcements, ROOTS roots (1617/1618/1621 naming one of them;
 * default 100,000) and DESCENDANTS descendants (default 1,000,000: NIP-22
 * comments and reactions, half naming the root, half the previous
 * descendant, so chains reach BENCH_CHAIN hops) written by AUTHORS
 * distinct authors (default 50,000).  Events are not signed: ids are the
 * real NIP-01 hashes, signatures a constant, since nothing on the
 * rebuild path checks them (relayd did, before storing).  The file is
 * written out (fsync) before anything is timed.
 *
 * Then, on a read-only connection as the roles open it, it times
 *   - scan: every stored event read in seq order and parsed in full
 *     (feed_scan() with a callback that does nothing), which also warms
 *     SQLite's and the kernel's caches; the per-event path the roles used
 *     before inv_rebuild();
 *   - scan_tags: the same read as the inventory reads it (feed_scan_tags()
 *     with a callback that does nothing);
 *   - rebuild: inv_rebuild(), what relayd, syncd and historyd each did
 *     at start before the inventory moved into the database;
 *   - tables: invdb_build() on a read-write connection, what the first
 *     relayd of a version with the tables (schema step 7) does once on
 *     an older database, with the memory it kept and the database's
 *     growth; then what a start costs now (invdb_built(): one row);
 * each as wall time and as the process's CPU time;
 * and reads the resident memory (VmRSS of /proc/self/status) before and
 * after the rebuild.  With BENCH_INV_DB set to a file name the database
 * is kept there, and reused (not generated again) when it exists, with
 * the sizes it was made with.  It checks that the inventory holds every root,
 * descendant and eligible author it generated.  Prints "name value unit"
 * lines (tests/bench/run.sh collects them).  Figures only: exits 0 unless
 * something breaks.
 */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "buf.h"
#include "config.h"
#include "event.h"
#include "feed.h"
#include "inventory.h"
#include "invdb.h"
#include "log.h"
#include "store.h"
#include "tstore.h"

/* Ours: repositories the roots are spread over, and maintainers each. */
#define BENCH_REPOS	  100
#define BENCH_MAINTAINERS 2
/* Ours: descendants per root alternate between naming the root and the
 * previous descendant; this many per root at most name their parent. */
#define BENCH_CHAIN	  8
/* Ours: events per write transaction while generating. */
#define BENCH_TXN	  20000
/* Authors whose roots and eligibility the reader figures time. */
#define BENCH_READS	  1000

struct gen {
	struct store *st;
	size_t	      intxn;
	int64_t	      at; /* created_at, one second apart */
	size_t	      nauthors;
	uint64_t      stored;
};

/* Seconds on clock (wall: CLOCK_MONOTONIC; CPU: the process's). */
static double
clock_s(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double
now_s(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

static double
cpu_s(void)
{
	return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

/* One timed phase: its wall-clock and CPU seconds. */
struct phase {
	double ph_t0, ph_c0;
	double ph_wall, ph_cpu;
};

static void
phase_start(struct phase *ph)
{
	ph->ph_t0 = now_s();
	ph->ph_c0 = cpu_s();
}

static void
phase_stop(struct phase *ph)
{
	ph->ph_wall = now_s() - ph->ph_t0;
	ph->ph_cpu = cpu_s() - ph->ph_c0;
}

/* VmRSS in KiB, or -1. */
static long
rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char  line[256];
	long  kib = -1;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "VmRSS:", 6) == 0)
			kib = strtol(line + 6, NULL, 10);
	fclose(f);
	return kib;
}

/* Author n's pubkey (any 32 bytes do: nothing verifies them here). */
static void
author_hex(size_t n, char out[PUBKEY_HEX_LEN + 1])
{
	tstore_fake_pubkey(0xb5, (uint32_t)n, out);
}

/* Builds, hashes and stores one event; its id in id_hex (65 bytes). */
static void
put(struct gen *g, size_t author, uint32_t kind, const char *tags,
    const char *content, char *id_hex)
{
	struct event	 *ev;
	enum store_result r;
	char		  pk[PUBKEY_HEX_LEN + 1];

	author_hex(author, pk);
	ev = tstore_unsigned_event(pk, g->at++, kind, tags, content);
	if (g->intxn == 0 && store_begin(g->st) == -1)
		fatalx("inventory: cannot begin a transaction");
	if ((r = store_put(g->st, ev, NULL)) != STORE_OK)
		fatalx("inventory: event not stored: %s",
		    store_result_message(r));
	if (++g->intxn == BENCH_TXN) {
		if (store_commit(g->st) == -1)
			fatalx("inventory: commit failed");
		g->intxn = 0;
	}
	g->stored++;
	if (id_hex != NULL)
		memcpy(id_hex, ev->id_hex, EVENT_ID_HEX_LEN + 1);
	event_destroy(ev);
}

static void
generate(struct gen *g, size_t nroots, size_t ndesc)
{
	char coord[BENCH_REPOS][100], tags[1024], owner[PUBKEY_HEX_LEN + 1],
	    m[2][65];
	char root[EVENT_ID_HEX_LEN + 1], parent[EVENT_ID_HEX_LEN + 1],
	    id[EVENT_ID_HEX_LEN + 1];
	size_t		      i, j, per, extra, d = 0, a;
	static const uint32_t root_kinds[3] = { 1617, 1618, 1621 };

	for (i = 0; i < BENCH_REPOS; i++) {
		a = i * (g->nauthors / BENCH_REPOS);
		author_hex(a, owner);
		author_hex((a + 1) % g->nauthors, m[0]);
		author_hex((a + 2) % g->nauthors, m[1]);
		snprintf(coord[i], sizeof(coord[i]), "30617:%s:repo%zu", owner,
		    i);
		snprintf(tags, sizeof(tags),
		    "[[\"d\",\"repo%zu\"],[\"relays\","
		    "\"wss://relay%zu.example.com\"],[\"clone\",\"https://"
		    "git%zu.example.com/repo%zu.git\"],[\"maintainers\",\"%s\","
		    "\"%s\"]]",
		    i, i % 10, i % 10, i, m[0], m[1]);
		put(g, a, 30617, tags, "a benchmark repository", NULL);
	}
	per = nroots ? ndesc / nroots : 0;
	extra = nroots ? ndesc % nroots : 0;
	for (i = 0; i < nroots; i++) {
		uint32_t kind = root_kinds[i % 3];

		snprintf(tags, sizeof(tags),
		    "[[\"a\",\"%s\"],[\"subject\","
		    "\"root %zu\"]]",
		    coord[i % BENCH_REPOS], i);
		put(g, (i * 7) % g->nauthors, kind, tags, "a root", root);
		memcpy(parent, root, sizeof(parent));
		for (j = 0; j < per + (i < extra); j++, d++) {
			a = (i * 13 + j * 101 + d) % g->nauthors;
			if (j % 5 == 4) {
				/* A reaction naming only its parent. */
				snprintf(tags, sizeof(tags),
				    "[[\"e\",\"%s\"],"
				    "[\"k\",\"%u\"]]",
				    parent, kind);
				put(g, a, 7, tags, "+", NULL);
				continue;
			}
			snprintf(tags, sizeof(tags),
			    "[[\"E\",\"%s\"],[\"K\","
			    "\"%u\"],[\"e\",\"%s\"],[\"k\",\"%u\"]]",
			    root, kind, parent, j ? 1111 : kind);
			put(g, a, 1111, tags, "a comment", id);
			/* Every other comment answers the previous one. */
			if (j % 2 == 1 && j < BENCH_CHAIN)
				memcpy(parent, id, sizeof(parent));
			else
				memcpy(parent, root, sizeof(parent));
		}
	}
	if (g->intxn > 0 && store_commit(g->st) == -1)
		fatalx("inventory: commit failed");
	g->intxn = 0;
}

static void
noop(void *arg, int64_t seq, const struct event *ev)
{
	(void)seq;
	(void)ev;
	(*(uint64_t *)arg)++;
}

static void
count_eligible(void *arg, const uint8_t pk[PUBKEY_LEN])
{
	(void)pk;
	(*(size_t *)arg)++;
}

/* Counts the roots of an author (invdb_author_roots()). */
static void
count_root(void *arg, const struct invdb_root *rt)
{
	(void)rt;
	(*(size_t *)arg)++;
}

/*
 * What the roles ask the tables per author, timed over BENCH_READS
 * authors spread over all of them: historyd's roots of an author and
 * relayd's eligibility question.  Prints the mean of each in us; fails
 * if an author takes part in no root (each wrote descendants).
 */
static void
time_reads(struct store *st, size_t nauthors)
{
	char	hex[PUBKEY_HEX_LEN + 1];
	uint8_t pk[PUBKEY_LEN];
	size_t	i, n, roots = 0;
	double	t_roots = 0, t_elig = 0, t;
	int	e;

	n = nauthors < BENCH_READS ? nauthors : BENCH_READS;
	for (i = 0; i < n; i++) {
		author_hex(i * (nauthors / n), hex);
		if (hex_decode(hex, PUBKEY_HEX_LEN, pk, PUBKEY_LEN) == -1)
			fatalx("inventory: bad author key");
		t = now_s();
		if (invdb_author_roots(st, pk, count_root, &roots) == -1)
			fatalx("inventory: author roots failed");
		t_roots += now_s() - t;
		t = now_s();
		if ((e = invdb_eligible(st, pk)) == -1)
			fatalx("inventory: eligibility failed");
		t_elig += now_s() - t;
	}
	if (roots < n)
		fatalx("inventory: %zu authors take part in %zu roots", n,
		    roots);
	printf("inventory_author_roots_us %.1f us\n", t_roots / n * 1e6);
	printf("inventory_eligible_us %.1f us\n", t_elig / n * 1e6);
}

static size_t
arg(int argc, char **argv, int i, size_t dflt)
{
	char *end;
	long  v;

	if (argc <= i)
		return dflt;
	v = strtol(argv[i], &end, 10);
	if (*end != '\0' || v < 0)
		fatalx("usage: inventory [ROOTS DESCENDANTS AUTHORS]");
	return (size_t)v;
}

/* The size of the database file and its WAL, in MiB. */
static double
file_mib(const char *path)
{
	char	    wal[320];
	struct stat sb;
	double	    n = 0;

	if (stat(path, &sb) == 0)
		n += (double)sb.st_size;
	snprintf(wal, sizeof(wal), "%s-wal", path);
	if (stat(wal, &sb) == 0)
		n += (double)sb.st_size;
	return n / (1024 * 1024);
}

int
main(int argc, char **argv)
{
	struct config	  cfg;
	struct gen	  g;
	struct store	 *st;
	struct inventory *iv;
	struct inv_root	 *rt;
	char		  dir[256], path[300], err[256], cmd[400];
	const char	 *keep;
	size_t		  nroots, ndesc, it, roots = 0, desc = 0;
	size_t		  eligible = 0;
	uint64_t	  scanned = 0, scanned_tags = 0;
	struct phase	  scan, tags, rebuild, tables, each;
	double		  t, t_gen;
	int		  fed, fd;
	long		  rss0, rss1;
	struct invdb	 *w;
	size_t		  eligible_t;
	double		  size0;

	log_init("inventory", 1);
	nroots = arg(argc, argv, 1, 100000);
	ndesc = arg(argc, argv, 2, 1000000);
	memset(&g, 0, sizeof(g));
	g.nauthors = arg(argc, argv, 3, 50000);
	if (g.nauthors < BENCH_REPOS * 3 || nroots == 0)
		fatalx("inventory: at least %d authors and one root",
		    BENCH_REPOS * 3);
	dir[0] = '\0';
	if ((keep = getenv("BENCH_INV_DB")) != NULL && *keep != '\0')
		snprintf(path, sizeof(path), "%s", keep);
	else {
		keep = NULL;
		snprintf(dir, sizeof(dir), "%s/graspd-invbench.XXXXXX",
		    getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		if (mkdtemp(dir) == NULL)
			fatal("inventory: mkdtemp");
		snprintf(path, sizeof(path), "%s/graspd.db", dir);
	}

	t = now_s();
	if (keep == NULL || access(path, F_OK) == -1) {
		if ((g.st = store_open(path, 0, err, sizeof(err))) == NULL)
			fatalx("inventory: %s", err);
		/* Setting up a benchmark: a crash only loses the run. */
		if (sqlite3_exec(store_sqlite(g.st), "PRAGMA synchronous=OFF",
			NULL, NULL, NULL) != SQLITE_OK)
			fatalx("inventory: cannot set the pragmas");
		g.at = (int64_t)time(NULL) - 30 * 86400;
		generate(&g, nroots, ndesc);
		store_close(g.st);
		/* Written out before anything is timed: the kernel's
		 * writeback of 1.3 GB would run beside the rebuild. */
		if ((fd = open(path, O_RDONLY)) == -1 || fsync(fd) == -1)
			fatal("inventory: fsync %s", path);
		close(fd);
	} else {
		/* Kept by an older build: migrated to this one's schema, as
		 * relayd would, before the read-only connection needs it. */
		if ((g.st = store_open(path, 0, err, sizeof(err))) == NULL)
			fatalx("inventory: %s", err);
		store_close(g.st);
		g.stored = BENCH_REPOS + nroots + ndesc;
	}
	t_gen = now_s() - t;

	memset(&cfg, 0, sizeof(cfg));
	if ((st = store_open(path, 1, err, sizeof(err))) == NULL)
		fatalx("inventory: %s", err);
	phase_start(&scan);
	if (feed_scan(st, 0, INT64_MAX, noop, &scanned, NULL) == -1)
		fatalx("inventory: scan failed");
	phase_stop(&scan);
	phase_start(&tags);
	if (feed_scan_tags(st, 0, INT64_MAX, noop, &scanned_tags, NULL) == -1)
		fatalx("inventory: tag scan failed");
	phase_stop(&tags);
	rss0 = rss_kib();
	phase_start(&rebuild);
	iv = inv_new(&cfg);
	if ((fed = inv_rebuild(iv, st, INT64_MAX)) == -1)
		fatalx("inventory: rebuild failed");
	phase_stop(&rebuild);
	rss1 = rss_kib();

	for (it = 0; (rt = inv_root_next(iv, &it)) != NULL;) {
		roots += rt->rt_repo != NULL && !rt->rt_deleted;
		desc += rt->rt_ndesc;
	}
	inv_eligible_each(iv, count_eligible, &eligible);
	if (scanned != g.stored || scanned_tags != g.stored ||
	    (uint64_t)fed != g.stored || roots != nroots || desc != ndesc ||
	    eligible > g.nauthors ||
	    (ndesc >= g.nauthors * 2 && eligible != g.nauthors))
		fatalx("inventory: built %zu roots, %zu descendants, %zu "
		       "eligible authors from %llu events; generated %zu, %zu, "
		       "%zu, %llu",
		    roots, desc, eligible, (unsigned long long)scanned, nroots,
		    ndesc, g.nauthors, (unsigned long long)g.stored);

	printf("inventory_events %llu events\n", (unsigned long long)scanned);
	printf("inventory_roots %zu roots\n", roots);
	printf("inventory_descendants %zu events\n", desc);
	printf("inventory_authors %zu authors\n", eligible);
	printf("inventory_generate_s %.1f s\n", t_gen);
	printf("inventory_scan_s %.2f s\n", scan.ph_wall);
	printf("inventory_scan_tags_s %.2f s\n", tags.ph_wall);
	printf("inventory_rebuild_s %.2f s\n", rebuild.ph_wall);
	/* CPU time: what a busy machine's wall clock hides. */
	printf("inventory_scan_cpu_s %.2f s\n", scan.ph_cpu);
	printf("inventory_scan_tags_cpu_s %.2f s\n", tags.ph_cpu);
	printf("inventory_rebuild_cpu_s %.2f s\n", rebuild.ph_cpu);
	printf("inventory_rss_mib %.1f MiB\n", (double)(rss1 - rss0) / 1024);
	printf("inventory_rss_total_mib %.1f MiB\n", (double)rss1 / 1024);

	inv_free(iv);
	store_close(st);

	/* The tables relayd keeps instead (invdb.h): built once, by the
	 * first relayd of this version on an older database. */
	if ((st = store_open(path, 0, err, sizeof(err))) == NULL)
		fatalx("inventory: %s", err);
	size0 = file_mib(path);
	w = invdb_new(st, &cfg);
	rss0 = rss_kib();
	phase_start(&tables);
	if ((fed = invdb_build(w)) == -1)
		fatalx("inventory: building the tables failed");
	phase_stop(&tables);
	rss1 = rss_kib();
	eligible_t = 0;
	phase_start(&each);
	if (invdb_eligible_each(st, count_eligible, &eligible_t) == -1 ||
	    (uint64_t)fed != g.stored || eligible_t != eligible)
		fatalx("inventory: the tables hold %zu eligible authors from "
		       "%d events; the inventory %zu from %llu",
		    eligible_t, fed, eligible, (unsigned long long)g.stored);
	phase_stop(&each);
	time_reads(st, g.nauthors);
	invdb_free(w);
	/* What a start costs now: one row. */
	phase_start(&scan);
	if (invdb_built(st) != 1)
		fatalx("inventory: the tables are not marked built");
	phase_stop(&scan);
	store_close(st);
	printf("inventory_tables_build_s %.2f s\n", tables.ph_wall);
	printf("inventory_tables_build_cpu_s %.2f s\n", tables.ph_cpu);
	printf("inventory_tables_start_ms %.3f ms\n", scan.ph_wall * 1e3);
	printf("inventory_tables_rss_mib %.1f MiB\n",
	    (double)(rss1 - rss0) / 1024);
	printf("inventory_tables_disk_mib %.1f MiB\n", file_mib(path) - size0);
	printf("inventory_eligible_each_s %.2f s\n", each.ph_wall);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (dir[0] != '\0' && system(cmd) != 0)
		log_warnx("inventory: could not remove %s", dir);
	return 0;
}
