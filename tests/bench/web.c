/*
 * web.c: the time relayd takes to render its landing page (relay_web.c)
 * for many hosted repositories (issue #18's figure; its target is under
 * 50 ms for 10,000).
 *
 *   web [REPOS]
 *
 * Starts relayd on a free loopback port in a temporary directory, stops
 * it, and writes straight into its database through common/store.c (so
 * the rows are what relayd would have written) REPOS stored announcements
 * (default BENCH_WEB_REPOS, 10,000), each with a state event, one owner
 * in four with a kind 0 profile, and BENCH_WEB_THREADS issues and PRs
 * spread over them, one in three closed by a status event.  Events are
 * not signed (ids are the NIP-01 hashes, signatures zero): nothing on the
 * page's path checks them.  Then it starts relayd again and times, over
 * HTTP on loopback, from connect to the last byte (a fraction of a
 * millisecond of the figure, as the cached page shows):
 *   - landing: / at pages 1 to BENCH_WEB_PAGES, each a page not cached
 *     yet, so each is rendered (median and maximum);
 *   - landing_cached: the last of them again within the cache's 5 s;
 *   - search: /?q=... matching one repository in a hundred, not cached.
 * Prints "name value unit" lines (tests/bench/run.sh collects them).
 * Figures only: exits 0 unless something breaks (a page that is not 200
 * or lists no repository).  A 503 is relayd's loop-time budget for
 * uncached pages (RELAY_WEB_BUDGET_MS a second) running out on a slow or
 * loaded machine: the page is asked for again in the next second, and
 * the number of such answers is a figure (web_busy).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "buf.h"
#include "event.h"
#include "log.h"
#include "relayproc.h"
#include "store.h"
#include "tstore.h"
#include "wsclient.h"

/* Ours: the default size, issues and PRs in all, pages timed. */
#define BENCH_WEB_REPOS	  10000
#define BENCH_WEB_THREADS 30000
#define BENCH_WEB_PAGES	  9
/* Ours: events per write transaction while generating. */
#define BENCH_WEB_TXN	  20000
#define TMO		  30000

struct gen {
	struct store *st;
	size_t	      intxn;
	int64_t	      at;
};

/* Owner n's pubkey as hex (any 32 bytes do: nothing verifies them). */
static void
owner_hex(size_t n, char out[PUBKEY_HEX_LEN + 1])
{
	tstore_fake_pubkey(0x7c, (uint32_t)n, out);
}

/* Builds, hashes and stores one event; its id into id_hex (or NULL). */
static void
put(struct gen *g, const char *pk, uint32_t kind, int64_t at, const char *tags,
    const char *content, char *id_hex)
{
	struct event *ev = tstore_unsigned_event(pk, at, kind, tags, content);
	enum store_result r;

	if (g->intxn == 0 && store_begin(g->st) == -1)
		fatalx("web: cannot begin a transaction");
	if ((r = store_put(g->st, ev, NULL)) != STORE_OK)
		fatalx("web: event not stored: %s", store_result_message(r));
	if (++g->intxn == BENCH_WEB_TXN) {
		if (store_commit(g->st) == -1)
			fatalx("web: commit failed");
		g->intxn = 0;
	}
	if (id_hex != NULL)
		memcpy(id_hex, ev->id_hex, EVENT_ID_HEX_LEN + 1);
	event_destroy(ev);
}

static void
generate(struct gen *g, size_t nrepos, const char *domain)
{
	char tags[1024], pk[PUBKEY_HEX_LEN + 1], id[EVENT_ID_HEX_LEN + 1],
	    owner[PUBKEY_HEX_LEN + 1];
	size_t i;

	for (i = 0; i < nrepos; i++) {
		owner_hex(i, pk);
		snprintf(tags, sizeof(tags),
		    "[[\"d\",\"repo%zu\"],[\"name\","
		    "\"Repository %zu\"],[\"description\",\"A benchmark "
		    "repository, number %zu of %zu\"],[\"clone\",\"http://%s/"
		    "x/repo%zu.git\"],[\"relays\",\"ws://%s\"]]",
		    i, i, i, nrepos, domain, i, domain);
		put(g, pk, 30617, g->at + (int64_t)i, tags, "", NULL);
		snprintf(tags, sizeof(tags),
		    "[[\"d\",\"repo%zu\"],"
		    "[\"refs/heads/main\",\"%040zu\"],[\"HEAD\","
		    "\"ref: refs/heads/main\"]]",
		    i, i);
		put(g, pk, 30618, g->at + (int64_t)i, tags, "", NULL);
		if (i % 4 == 0)
			put(g, pk, 0, g->at, "[]",
			    "{\\\"name\\\":\\\"Owner "
			    "number\\\"}",
			    NULL);
	}
	for (i = 0; i < BENCH_WEB_THREADS; i++) {
		owner_hex((i * 7) % nrepos, owner);
		owner_hex(nrepos + i % 997, pk);
		snprintf(tags, sizeof(tags),
		    "[[\"a\",\"30617:%s:repo%zu\"],"
		    "[\"subject\",\"thread %zu\"]]",
		    owner, (i * 7) % nrepos, i);
		put(g, pk, i % 2 ? 1621 : 1618,
		    g->at + (int64_t)nrepos + (int64_t)i, tags, "a thread", id);
		if (i % 3 == 0) {
			snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", id);
			put(g, owner, 1632,
			    g->at + (int64_t)nrepos + (int64_t)i + 1, tags, "",
			    NULL);
		}
	}
	if (g->intxn > 0 && store_commit(g->st) == -1)
		fatalx("web: commit failed");
	g->intxn = 0;
}

/*
 * GETs path over a new connection with blocking reads until relayd
 * closes it; the time in ms from connect to the last byte, -2 for a 503,
 * or -1 if the answer was not a 200 page listing repositories.
 */
static double
timed_get(struct relayproc *rp, const char *path)
{
	struct buf b = BUF_INIT;
	double	   t;

	t = bench_http_get(relayproc_host(rp), relayproc_port(rp), path, TMO,
	    &b);
	if (t < 0 || b.b_data == NULL)
		t = -1;
	else if (strncmp(b.b_data, "HTTP/1.1 503", 12) == 0)
		t = -2;
	else if (strncmp(b.b_data, "HTTP/1.1 200", 12) != 0 ||
	    strstr(b.b_data, "class=\"repo\"") == NULL) {
		fprintf(stderr, "web: GET %s: %.80s\n", path, b.b_data);
		t = -1;
	}
	buf_free(&b);
	return t;
}

/* Ours: 503 answers to one page before the benchmark gives up. */
#define WEB_BUSY_TRIES 10

static int busy; /* 503 answers so far */

/* timed_get(), asked again in the next second after a 503. */
static double
page_get(struct relayproc *rp, const char *path)
{
	double t;
	int    i;

	for (i = 0; (t = timed_get(rp, path)) == -2 && i < WEB_BUSY_TRIES;
	     i++) {
		busy++;
		relayproc_sleep_ms(1100);
	}
	if (t == -2)
		fprintf(stderr, "web: GET %s: 503 %d times\n", path, i);
	return t;
}

int
main(int argc, char *argv[])
{
	static const char *env[] = { "NGIT_SYNC_ENABLED=false", NULL };
	struct relayproc  *rp;
	struct gen	   g = { NULL, 0, 0 };
	double		   t[BENCH_WEB_PAGES], t0, cached, search;
	char		   path[256], err[256];
	size_t		   nrepos = BENCH_WEB_REPOS, i;

	log_init("web", 1);
	if (argc > 1)
		nrepos = strtoul(argv[1], NULL, 10);
	if (nrepos < 1 || nrepos > 1000000)
		fatalx("web: REPOS must be 1 to 1000000");
	if ((rp = relayproc_start("relayd", env)) == NULL)
		fatalx("web: relayd does not start");
	if (relayproc_stop(rp) != 0)
		fatalx("web: relayd does not stop cleanly");
	snprintf(path, sizeof(path), "%s/relay/graspd.db", relayproc_dir(rp));
	if ((g.st = store_open(path, 0, err, sizeof(err))) == NULL)
		fatalx("web: %s", err);
	g.at = (int64_t)time(NULL) - 10 * 86400;
	t0 = bench_now_s();
	generate(&g, nrepos, relayproc_domain(rp));
	store_close(g.st);
	printf("web_fill_seconds %.1f s\n", bench_now_s() - t0);
	if (relayproc_restart(rp) != 0)
		fatalx("web: relayd does not start on the store");
	for (i = 0; i < BENCH_WEB_PAGES; i++) {
		snprintf(path, sizeof(path), "/?page=%zu", i + 1);
		if ((t[i] = page_get(rp, path)) < 0)
			fatalx("web: no landing page");
	}
	snprintf(path, sizeof(path), "/?page=%d", BENCH_WEB_PAGES);
	if ((cached = page_get(rp, path)) < 0)
		fatalx("web: no cached landing page");
	if ((search = page_get(rp, "/?q=number+42")) < 0)
		fatalx("web: no search page");
	qsort(t, BENCH_WEB_PAGES, sizeof(t[0]), bench_cmp_double);
	printf("web_repos %zu repositories\n", nrepos);
	printf("web_landing_ms %.2f ms\n", t[BENCH_WEB_PAGES / 2]);
	printf("web_landing_max_ms %.2f ms\n", t[BENCH_WEB_PAGES - 1]);
	printf("web_landing_cached_ms %.2f ms\n", cached);
	printf("web_search_ms %.2f ms\n", search);
	printf("web_busy %d answers\n", busy);
	relayproc_free(rp);
	return 0;
}
