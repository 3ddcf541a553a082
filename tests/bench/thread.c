/*
 * thread.c: the time relayd takes to serve the page of an issue with
 * many replies (relay_web_thread.c; issue 43's target is under 50 ms for
 * 1,000 replies), and the memory relayd holds while it serves it.
 *
 *   thread [REPLIES]
 *
 * Starts relayd on a free loopback port in a temporary directory, stops
 * it, and writes straight into its database through common/store.c (the
 * rows relayd would have written) one repository announcement, its
 * state, an issue, REPLIES NIP-22 comments on it (default
 * BENCH_THREAD_REPLIES, 1,000, each a few lines of Markdown, every tenth
 * answering another comment) by BENCH_THREAD_PEOPLE authors with kind 0
 * profiles, a reaction to the issue and to every fifth comment, and a
 * status history; the repository's directory is made empty, as the page
 * only asks that it exist.  Events are not signed (nothing on the page's
 * path checks them).  Then relayd starts again on that store and the
 * page is asked for BENCH_THREAD_GETS times over HTTP on loopback, each
 * timed from connect to the last byte (the page is rendered each time:
 * thread pages are not cached); the figures are the median and the
 * maximum, the page's size, the last page of replies, and relayd's
 * resident memory (VmRSS) before and after, with its peak (VmHWM).
 * Prints "name value unit" lines (tests/bench/run.sh collects them).
 * Figures only: exits 0 unless something breaks.
 */
#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "buf.h"
#include "event.h"
#include "log.h"
#include "nip19.h"
#include "relayproc.h"
#include "store.h"
#include "tstore.h"
#include "wsclient.h"

/* Ours: the default thread, its authors, and the timed requests. */
#define BENCH_THREAD_REPLIES 1000
#define BENCH_THREAD_PEOPLE  50
#define BENCH_THREAD_GETS    21
/* Replies on one page: relayd.h's RELAY_WEB_REPLIES. */
#define BENCH_THREAD_PAGE    250
#define TMO		     30000

/* Builds, hashes and stores one event; its id into id_hex (or NULL). */
static void
put(struct store *st, const char *pk, uint32_t kind, int64_t at,
    const char *tags, const char *content, char *id_hex)
{
	struct event *ev = tstore_unsigned_event(pk, at, kind, tags, content);
	enum store_result r;

	if ((r = store_put(st, ev, NULL)) != STORE_OK)
		fatalx("thread: event not stored: %s", store_result_message(r));
	if (id_hex != NULL)
		memcpy(id_hex, ev->id_hex, EVENT_ID_HEX_LEN + 1);
	event_destroy(ev);
}

/* The thread of nreplies; the issue's id into issue. */
static void
generate(struct store *st, const char *owner, size_t nreplies,
    const char *domain, char issue[EVENT_ID_HEX_LEN + 1])
{
	char tags[1024], pk[PUBKEY_HEX_LEN + 1], prev[EVENT_ID_HEX_LEN + 1],
	    id[EVENT_ID_HEX_LEN + 1], text[1024];
	int64_t at = (int64_t)time(NULL) - 10 * 86400;
	size_t	i;

	if (store_begin(st) == -1)
		fatalx("thread: cannot begin a transaction");
	snprintf(tags, sizeof(tags),
	    "[[\"d\",\"demo\"],[\"name\",\"Demo\"],[\"clone\",\"http://%s/"
	    "x/demo.git\"],[\"relays\",\"ws://%s\"]]",
	    domain, domain);
	put(st, owner, 30617, at, tags, "", NULL);
	put(st, owner, 30618, at,
	    "[[\"d\",\"demo\"],[\"refs/heads/main\",\""
	    "0123456789012345678901234567890123456789\"]]",
	    "", NULL);
	for (i = 0; i < BENCH_THREAD_PEOPLE; i++) {
		tstore_fake_pubkey(0x5a, (uint32_t)i, pk);
		snprintf(text, sizeof(text),
		    "{\\\"name\\\":\\\"Person %zu\\\"}", i);
		put(st, pk, 0, at, "[]", text, NULL);
	}
	snprintf(tags, sizeof(tags),
	    "[[\"a\",\"30617:%s:demo\"],[\"subject\",\"A busy issue\"],"
	    "[\"t\",\"bug\"]]",
	    owner);
	put(st, owner, 1621, at + 1, tags,
	    "It **crashes**.\\n\\n```\\nsegfault\\n```\\n", issue);
	memcpy(prev, issue, EVENT_ID_HEX_LEN + 1);
	for (i = 0; i < nreplies; i++) {
		tstore_fake_pubkey(0x5a, (uint32_t)(i % BENCH_THREAD_PEOPLE),
		    pk);
		snprintf(tags, sizeof(tags),
		    "[[\"E\",\"%s\"],[\"K\",\"1621\"],[\"e\",\"%s\"],"
		    "[\"k\",\"1111\"]]",
		    issue, i % 10 == 9 ? prev : issue);
		snprintf(text, sizeof(text),
		    "Reply number %zu: I see it too, with *this* config:\\n\\n"
		    "- one\\n- two\\n\\nand [a link](https://example.org/%zu)"
		    " and `code`.",
		    i, i);
		put(st, pk, 1111, at + 2 + (int64_t)i, tags, text, id);
		if (i % 5 == 0) {
			snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", id);
			put(st, owner, 7, at + 3 + (int64_t)i, tags, "+", NULL);
		}
		memcpy(prev, id, EVENT_ID_HEX_LEN + 1);
	}
	snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", issue);
	put(st, owner, 7, at + 2, tags, "+", NULL);
	put(st, owner, 1632, at + 5, tags, "closed", NULL);
	put(st, owner, 1630, at + 6, tags, "reopened", NULL);
	if (store_commit(st) == -1)
		fatalx("thread: commit failed");
}

/*
 * GETs path: the time in ms from connect to the last byte (and the
 * answer's bytes into *len), or -1 if it was not a 200 thread page.
 */
static double
timed_get(struct relayproc *rp, const char *path, size_t *len)
{
	struct buf b = BUF_INIT;
	double	   t;

	t = bench_http_get(relayproc_host(rp), relayproc_port(rp), path, TMO,
	    &b);
	*len = b.b_len;
	if (t >= 0 &&
	    (b.b_data == NULL || strncmp(b.b_data, "HTTP/1.1 200", 12) != 0 ||
		strstr(b.b_data, "class=\"card post reply\"") == NULL)) {
		fprintf(stderr, "thread: GET %s: %.200s\n", path,
		    b.b_data ? b.b_data : "");
		t = -1;
	}
	buf_free(&b);
	return t;
}

/* A field of /proc/<pid>/status in kB, or -1. */
static long
proc_kb(pid_t pid, const char *field)
{
	char  path[64], line[256];
	FILE *f;
	long  v = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, field, strlen(field)) == 0)
			v = strtol(line + strlen(field), NULL, 10);
	fclose(f);
	return v;
}

int
main(int argc, char *argv[])
{
	static const char *env[] = { "NGIT_SYNC_ENABLED=false", NULL };
	struct relayproc  *rp;
	struct store	  *st;
	double		   t[BENCH_THREAD_GETS], last;
	char		   path[1024], err[256], owner[PUBKEY_HEX_LEN + 1],
	    npub[NIP19_KEY_BUFSZ];
	char	issue[EVENT_ID_HEX_LEN + 1], page[700];
	uint8_t opk[PUBKEY_LEN];
	size_t	nreplies = BENCH_THREAD_REPLIES, i, len = 0, lastlen;
	long	rss0, rss1, hwm;

	log_init("thread", 1);
	if (argc > 1)
		nreplies = strtoul(argv[1], NULL, 10);
	if (nreplies < 1 || nreplies > 100000)
		fatalx("thread: REPLIES must be 1 to 100000");
	if ((rp = relayproc_start("relayd", env)) == NULL)
		fatalx("thread: relayd does not start");
	if (relayproc_stop(rp) != 0)
		fatalx("thread: relayd does not stop cleanly");
	snprintf(path, sizeof(path), "%s/relay/graspd.db", relayproc_dir(rp));
	if ((st = store_open(path, 0, err, sizeof(err))) == NULL)
		fatalx("thread: %s", err);
	tstore_fake_pubkey(0x7c, 1, owner);
	generate(st, owner, nreplies, relayproc_domain(rp), issue);
	store_close(st);
	/* The page asks only that the repository's directory exist. */
	if (hex_decode(owner, PUBKEY_HEX_LEN, opk, PUBKEY_LEN) == -1 ||
	    nip19_encode("npub", opk, npub, sizeof(npub)) == -1)
		fatalx("thread: no npub");
	snprintf(path, sizeof(path), "%s/git/%s", relayproc_dir(rp), npub);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/git/%s/demo.git", relayproc_dir(rp),
	    npub);
	if (mkdir(path, 0755) == -1)
		fatalx("thread: mkdir %s", path);
	if (relayproc_restart(rp) != 0)
		fatalx("thread: relayd does not start on the store");
	rss0 = proc_kb(relayproc_pid(rp), "VmRSS:");
	snprintf(page, sizeof(page), "/%s/demo.git/issues/%s", npub, issue);
	for (i = 0; i < BENCH_THREAD_GETS; i++)
		if ((t[i] = timed_get(rp, page, &len)) < 0)
			fatalx("thread: no thread page");
	snprintf(path, sizeof(path), "%s?page=%zu", page,
	    (nreplies + BENCH_THREAD_PAGE - 1) / BENCH_THREAD_PAGE);
	if ((last = timed_get(rp, path, &lastlen)) < 0)
		fatalx("thread: no last page of replies");
	rss1 = proc_kb(relayproc_pid(rp), "VmRSS:");
	hwm = proc_kb(relayproc_pid(rp), "VmHWM:");
	qsort(t, BENCH_THREAD_GETS, sizeof(t[0]), bench_cmp_double);
	printf("thread_replies %zu replies\n", nreplies);
	printf("thread_page_ms %.2f ms\n", t[BENCH_THREAD_GETS / 2]);
	printf("thread_page_max_ms %.2f ms\n", t[BENCH_THREAD_GETS - 1]);
	printf("thread_page_bytes %zu bytes\n", len);
	printf("thread_last_page_ms %.2f ms\n", last);
	printf("thread_relayd_rss_before %ld kB\n", rss0);
	printf("thread_relayd_rss_after %ld kB\n", rss1);
	printf("thread_relayd_rss_peak %ld kB\n", hwm);
	relayproc_free(rp);
	return 0;
}
