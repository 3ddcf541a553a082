/*
 * ingest.c: the ingest and query benchmark of relayd, run by
 * tests/bench/run.sh (a test tool, not a daemon).
 *
 *   ingest gen N FILE --domain HOST:PORT [--repo-owner-seckey HEX]
 *       [--authors K] [--git-dir DIR]
 *	pre-signs N GRASP-valid events into FILE, one event JSON a line: a
 *	kind 30617 announcement listing ws://DOMAIN and
 *	http://DOMAIN/<npub>/bench.git, then kind 1621 issues tagging it and
 *	kind 1111 comments on earlier issues, by K authors whose keys are
 *	derived from their number (the same N gives the same events, but for
 *	created_at and the signatures' randomness).  With --git-dir, a git
 *	repository with one commit is made in DIR and the second line is the
 *	owner's state event naming it: relayd holds a new announcement in
 *	purgatory until git data arrives (GRASP-01), and the push of that
 *	commit releases it.
 *   ingest publish HOST PORT FILE [--conns 4] [--inflight 50] [--serial N]
 *       [--stall-ms MS] [--push DIR] [--probes FILE [--probe-gap-us US]]
 *	publishes the first line alone (the announcement; with --push, the
 *	second too, the state, then pushes DIR's main branch to the
 *	repository and waits until the announcement is served), then all lines
 *	but the last N over several connections with that many EVENTs in
 *	flight on each (timing each EVENT -> OK), then the last N one at a
 *	time to measure OK latency.  With --probes, a FILE of "NAME FILTER"
 *	lines, a child process on its own connection issues REQs of those
 *	filters in turn, one every US microseconds (BENCH_PROBE_GAP_US; 0:
 *	each as soon as the last one's EOSE came) while the load runs and
 *	for BENCH_AFTER_MS after its last OK, and times each REQ -> EOSE
 *	from the time it was due.  A fixed pace gives every relay the same
 *	queries to answer: back to back, a relay that answers faster is
 *	asked more during its load, and its max is taken over more of them.
 *   ingest fill N DB --domain HOST:PORT [--authors K]
 *	the same events as gen (without the state event), stored straight
 *	into the graspd database DB through common/store.c in large
 *	transactions, for the queries of a large store; the relay must not
 *	be running.
 *   ingest verify FILE [--seconds S]
 *	the single-core libsecp256k1 verification rate: the events of FILE
 *	(at most BENCH_VERIFY_MAX) parsed once, then their signatures
 *	checked in a loop for S seconds (2) on this one thread.
 *   ingest req HOST PORT --filter JSON [--n 1000] [--name LABEL]
 *	times N sequential REQ -> EOSE round trips.
 *   ingest fanout HOST PORT --a COORD [--subs 1000] [--events 30]
 *	opens that many subscriber connections, each with a live REQ for
 *	kind 1621 tagged "t" BENCH_FANOUT_TAG, then publishes that many
 *	issues of the repository COORD one after another on another
 *	connection and times, per event, until every subscriber has it.
 *   ingest freeport		prints a free loopback port
 *   ingest waitport HOST PORT [MS]	waits until the port accepts
 *
 * Figures go to stdout as "figure value unit" lines.  Nothing depends on
 * how fast the machine is: the tool fails only when the relay breaks the
 * protocol, drops the connection, or answers nothing for --stall-ms.
 * Only loopback hosts are accepted.
 */
#include <sys/types.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/sha.h>
#include <sqlite3.h>

#include "bench.h"
#include "buf.h"
#include "event.h"
#include "gitutil.h"
#include "json.h"
#include "log.h"
#include "nip19.h"
#include "nostr.h"
#include "relayproc.h"
#include "store.h"
#include "wsclient.h"

#define BENCH_REPO_ID	     "bench"
#define BENCH_TIMEOUT_MS     30000 /* one answer, default stall limit */
#define BENCH_CONNECT_MS     5000
/*
 * A comment refers to an issue at least this many lines earlier, so the
 * issue is stored before the comment arrives even with every connection's
 * window in flight (4 x 50 by default).
 */
#define BENCH_DEP_GAP	     1000
#define BENCH_MAX_CONNS	     64
/* Distinct OK false messages echoed on stderr. */
#define BENCH_REASONS_SHOWN  5
/* Events per transaction of fill, and its page cache. */
#define BENCH_FILL_TXN	     20000
#define BENCH_FILL_CACHE_KIB "1048576"
/* Events whose signatures verify checks in its loop. */
#define BENCH_VERIFY_MAX     20000
#define BENCH_FANOUT_TAG     "bench-fanout"
#define BENCH_FANOUT_MAX     20000
/* How long the probes go on after the load's last OK. */
#define BENCH_AFTER_MS	     3000
/* Probe round trips kept per phase; probe filters. */
#define BENCH_PROBE_MAX	     200000
#define BENCH_PROBE_FILTERS  16
/*
 * The probes' pace: 200 REQs a second.  strfry, asked back to back on
 * one connection during its own load, answered about 500 a second on the
 * 2-core machine of doc/performance.md, and fell behind a pace of 500
 * (its p50 went to 60 ms): at 200 neither relay is measured saturated.
 */
#define BENCH_PROBE_GAP_US   "5000"
/* Pause between two fan-out events, so that each is timed alone. */
#define BENCH_FANOUT_GAP_US  20000

static long req_round(struct wsc *, const char *, const char *, int);

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr,
	    "usage: ingest gen N FILE --domain HOST:PORT "
	    "[--repo-owner-seckey HEX] [--authors K] [--git-dir DIR]\n"
	    "       ingest publish HOST PORT FILE [--conns C] [--inflight I] "
	    "[--serial N] [--stall-ms MS] [--push DIR]\n"
	    "           [--probes FILE [--probe-gap-us US]]\n"
	    "       ingest fill N DB --domain HOST:PORT [--authors K]\n"
	    "       ingest verify FILE [--seconds S]\n"
	    "       ingest req HOST PORT --filter JSON [--n N] "
	    "[--name LABEL]\n"
	    "       ingest fanout HOST PORT --a COORD [--subs N] "
	    "[--events N]\n"
	    "       ingest freeport\n"
	    "       ingest waitport HOST PORT [MS]\n");
	exit(2);
}

static long
num_arg(const char *s, long min, long max)
{
	char *ep;
	long  v;

	errno = 0;
	v = strtol(s, &ep, 10);
	if (errno != 0 || *s == '\0' || *ep != '\0' || v < min || v > max) {
		fprintf(stderr, "ingest: bad number %s\n", s);
		usage();
	}
	return v;
}

/* HOST PORT of a command that talks to the relay: loopback only. */
static int
host_port(int argc, char **argv, const char **host)
{
	if (argc < 3)
		usage();
	*host = argv[1];
	bench_loopback_only("ingest", *host);
	return (int)num_arg(argv[2], 1, 65535);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile q (0..1] of v[0..n), sorted in place. */
static double
percentile(double *v, size_t n, double q)
{
	size_t r;

	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	r = (size_t)ceil(q * (double)n);
	return v[r > 0 ? r - 1 : 0];
}

/* A secret key derived from a label: sha256 until it is a valid key. */
static void
derive_key(const char *label, unsigned n, uint8_t sk[SECKEY_LEN])
{
	char s[128];

	snprintf(s, sizeof(s), "graspd bench %s %u", label, n);
	SHA256((const unsigned char *)s, strlen(s), sk);
	while (!key_seckey_valid(sk))
		SHA256(sk, 32, sk);
}

/* Deterministic spread of i over 0..n-1. */
static size_t
spread(size_t i, size_t n)
{
	uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ULL;

	x ^= x >> 31;
	return (size_t)(x % n);
}

/* Where gen puts its events: lines of a file, or a store (fill). */
struct sink {
	FILE	     *f;
	struct store *st;
	size_t	      intxn; /* events in the open transaction */
};

static void
sink_put(struct sink *k, const struct event *ev)
{
	enum store_result r;

	if (k->f != NULL) {
		fwrite(ev->json, 1, ev->json_len, k->f);
		fputc('\n', k->f);
		return;
	}
	if (k->intxn == 0 && store_begin(k->st) == -1)
		fatalx("ingest fill: cannot begin a transaction");
	if ((r = store_put(k->st, ev, NULL)) != STORE_OK)
		fatalx("ingest fill: event %s not stored: %s", ev->id_hex,
		    store_result_message(r));
	if (++k->intxn == BENCH_FILL_TXN) {
		if (store_commit(k->st) == -1)
			fatalx("ingest fill: commit failed");
		k->intxn = 0;
	}
}

static void
sink_close(struct sink *k, const char *name)
{
	if (k->f != NULL && fclose(k->f) == EOF)
		fatal("ingest gen: %s", name);
	if (k->st != NULL) {
		if (k->intxn > 0 && store_commit(k->st) == -1)
			fatalx("ingest fill: commit failed");
		store_close(k->st);
	}
}

struct issue {
	size_t line;
	char   id[EVENT_ID_HEX_LEN + 1];
	char   author[PUBKEY_HEX_LEN + 1];
};

/* gen, and fill (fill 1): the same events into a store. */
static int
cmd_gen(int argc, char **argv, int fill)
{
	const char   *domain, *skhex, *file, *gitdir = NULL;
	const char   *px = fill ? "fill" : "gen"; /* figure names */
	struct buf    tags = BUF_INIT, url = BUF_INIT, content = BUF_INIT;
	struct event *ev;
	struct issue *issues;
	uint8_t owner_sk[SECKEY_LEN], owner_pk[PUBKEY_LEN], (*sks)[SECKEY_LEN];
	char	owner_hex[PUBKEY_HEX_LEN + 1], npub[NIP19_KEY_BUFSZ];
	char(*pks)[PUBKEY_HEX_LEN + 1];
	size_t	    n, i, nauth, nissues = 0, eligible = 0, ncomments = 0;
	size_t	    first = 1;
	int64_t	    now, created;
	double	    t0 = bench_now_s();
	struct sink sk;
	struct buf  ids = BUF_INIT;
	char	    err[256];

	if (argc < 3)
		usage();
	n = (size_t)num_arg(argv[1], 1, 10000000);
	file = argv[2];
	if ((domain = bench_opt(argc, argv, "--domain")) == NULL) {
		fprintf(stderr, "ingest gen: --domain HOST:PORT is needed\n");
		usage();
	}
	nauth = (size_t)num_arg(bench_opt(argc, argv, "--authors") ?
		bench_opt(argc, argv, "--authors") :
		"256",
	    1, 1000000);
	if ((skhex = bench_opt(argc, argv, "--repo-owner-seckey")) != NULL) {
		if (key_parse_seckey(skhex, owner_sk) == -1) {
			fprintf(stderr, "ingest gen: bad owner secret key\n");
			return 2;
		}
	} else
		derive_key("owner", 0, owner_sk);
	if (event_pubkey_of(owner_sk, owner_pk) == -1 ||
	    nip19_encode("npub", owner_pk, npub, sizeof(npub)) == -1)
		fatalx("ingest gen: cannot derive the owner's keys");
	hex_encode(owner_pk, PUBKEY_LEN, owner_hex);

	sks = calloc(nauth, sizeof(*sks));
	pks = calloc(nauth, sizeof(*pks));
	issues = calloc(n, sizeof(*issues));
	if (sks == NULL || pks == NULL || issues == NULL)
		fatal("ingest gen: calloc");
	for (i = 0; i < nauth; i++) {
		uint8_t pk[PUBKEY_LEN];

		derive_key("author", (unsigned)i, sks[i]);
		if (event_pubkey_of(sks[i], pk) == -1)
			fatalx("ingest gen: cannot derive author %zu", i);
		hex_encode(pk, PUBKEY_LEN, pks[i]);
	}
	memset(&sk, 0, sizeof(sk));
	if (!fill && (sk.f = fopen(file, "w")) == NULL)
		fatal("ingest gen: %s", file);
	if (fill && (sk.st = store_open(file, 0, err, sizeof(err))) == NULL)
		fatalx("ingest fill: %s: %s", file, err);
	/*
	 * Setting up a benchmark, not serving: a crash here only loses the
	 * run, so no syncs, and a cache that holds the indexes.
	 */
	if (fill &&
	    sqlite3_exec(store_sqlite(sk.st),
		"PRAGMA synchronous="
		"OFF; PRAGMA cache_size=-" BENCH_FILL_CACHE_KIB,
		NULL, NULL, NULL) != SQLITE_OK)
		fatalx("ingest fill: %s: cannot set the pragmas", file);

	/* Spread over the last hour: in the past, and inside any window. */
	now = (int64_t)time(NULL);
	buf_printf(&url, "http://%s/%s/" BENCH_REPO_ID ".git", domain, npub);
	buf_adds(&tags,
	    "[[\"d\",\"" BENCH_REPO_ID "\"],[\"name\",\"" BENCH_REPO_ID
	    "\"],[\"clone\",");
	buf_add_jstr(&tags, url.b_data, url.b_len);
	buf_reset(&url);
	buf_printf(&url, "ws://%s", domain);
	buf_adds(&tags, "],[\"relays\",");
	buf_add_jstr(&tags, url.b_data, url.b_len);
	buf_adds(&tags, "]]");
	ev = event_new_signed(owner_sk, now - 3600, 30617, tags.b_data,
	    "Repository of the graspd ingest benchmark.");
	if (ev == NULL)
		fatalx("ingest gen: cannot sign the announcement");
	sink_put(&sk, ev);
	event_destroy(ev);

	if (!fill && (gitdir = bench_opt(argc, argv, "--git-dir")) != NULL) {
		char home[4096], oid[41];

		snprintf(home, sizeof(home), "%s.home", gitdir);
		if (n < 2 || gt_setup(home) == -1 || gt_init(gitdir) == -1 ||
		    gt_commit(gitdir, "README", "graspd ingest benchmark\n",
			"bench", oid) == -1)
			fatalx("ingest gen: cannot make the git repository in "
			       "%s",
			    gitdir);
		buf_reset(&tags);
		buf_printf(&tags,
		    "[[\"d\",\"" BENCH_REPO_ID "\"],"
		    "[\"refs/heads/main\",\"%s\"],[\"HEAD\","
		    "\"ref: refs/heads/main\"]]",
		    oid);
		if ((ev = event_new_signed(owner_sk, now - 3600, 30618,
			 tags.b_data, "")) == NULL)
			fatalx("ingest gen: cannot sign the state event");
		sink_put(&sk, ev);
		event_destroy(ev);
		first = 2;
	}

	for (i = first; i < n; i++) {
		size_t a = spread(i, nauth), k;

		created = now - 3600 + (int64_t)(i * 3600 / n);
		while (eligible < nissues &&
		    issues[eligible].line + BENCH_DEP_GAP <= i)
			eligible++;
		buf_reset(&tags);
		buf_reset(&content);
		if (eligible == 0 || i % 4 == 0) {
			buf_printf(&tags,
			    "[[\"a\",\"30617:%s:" BENCH_REPO_ID
			    "\"],[\"p\",\"%s\"],[\"subject\",\"bench issue "
			    "%zu\"],[\"t\",\"bench\"]]",
			    owner_hex, owner_hex, i);
			buf_printf(&content,
			    "Issue %zu of the ingest "
			    "benchmark.\n\nSteps to reproduce: publish many "
			    "events at once and watch the OK latency.",
			    i);
			ev = event_new_signed(sks[a], created, 1621,
			    tags.b_data, content.b_data);
			if (ev == NULL)
				fatalx("ingest gen: cannot sign issue %zu", i);
			issues[nissues].line = i;
			memcpy(issues[nissues].id, ev->id_hex,
			    EVENT_ID_HEX_LEN + 1);
			memcpy(issues[nissues].author, pks[a],
			    PUBKEY_HEX_LEN + 1);
			nissues++;
		} else {
			k = spread(i * 7 + 1, eligible);
			buf_printf(&tags,
			    "[[\"E\",\"%s\",\"\",\"%s\"],"
			    "[\"K\",\"1621\"],[\"P\",\"%s\"],"
			    "[\"e\",\"%s\",\"\",\"%s\"],[\"k\",\"1621\"],"
			    "[\"p\",\"%s\"]]",
			    issues[k].id, issues[k].author, issues[k].author,
			    issues[k].id, issues[k].author, issues[k].author);
			buf_printf(&content,
			    "Comment %zu: confirmed here, "
			    "it happens with %zu events too.",
			    i, i * 3);
			ev = event_new_signed(sks[a], created, 1111,
			    tags.b_data, content.b_data);
			if (ev == NULL)
				fatalx("ingest gen: cannot sign comment %zu",
				    i);
			ncomments++;
		}
		if (i % (n / 10 + 1) == 0) {
			if (ids.b_len > 0)
				buf_addc(&ids, ',');
			buf_adds(&ids, ev->id_hex);
		}
		sink_put(&sk, ev);
		event_destroy(ev);
	}
	sink_close(&sk, file);

	printf("%s_events %zu events\n", px, n);
	if (first == 2)
		printf("%s_git_dir %s path\n", px, gitdir);
	printf("%s_issues %zu events\n", px, nissues);
	printf("%s_comments %zu events\n", px, ncomments);
	printf("%s_seconds %.3f s\n", px, bench_now_s() - t0);
	printf("%s_owner %s pubkey\n", px, owner_hex);
	printf("%s_sample_author %s pubkey\n", px, pks[spread(1, nauth)]);
	printf("%s_sample_issue %s id\n", px, nissues ? issues[0].id : "-");
	printf("%s_sample_ids %s ids\n", px, ids.b_len ? ids.b_data : "-");
	buf_free(&tags);
	buf_free(&url);
	buf_free(&content);
	buf_free(&ids);
	free(sks);
	free(pks);
	free(issues);
	return 0;
}

struct lines {
	char **l;
	size_t n;
};

static void
read_lines(const char *file, struct lines *ls)
{
	FILE   *f;
	char   *line = NULL;
	size_t	cap = 0, lcap = 0;
	ssize_t r;

	if ((f = fopen(file, "r")) == NULL)
		fatal("ingest: %s", file);
	memset(ls, 0, sizeof(*ls));
	while ((r = getline(&line, &cap, f)) != -1) {
		while (r > 0 && (line[r - 1] == '\n' || line[r - 1] == '\r'))
			line[--r] = '\0';
		if (r == 0)
			continue;
		if (ls->n == lcap) {
			lcap = lcap ? lcap * 2 : 1024;
			ls->l = reallocarray(ls->l, lcap, sizeof(*ls->l));
			if (ls->l == NULL)
				fatal("ingest: reallocarray");
		}
		if ((ls->l[ls->n++] = strdup(line)) == NULL)
			fatal("ingest: strdup");
	}
	free(line);
	fclose(f);
}

/* The "id" of an event JSON line into out; 0 or -1. */
static int
line_id(const char *line, char out[EVENT_ID_HEX_LEN + 1])
{
	struct json_doc *doc = NULL;
	struct json	*root, *id;
	char		 err[64];
	int		 rc = -1;

	root = json_parse(line, strlen(line), &doc, err, sizeof(err));
	if (root != NULL && (id = json_get(root, "id")) != NULL &&
	    id->type == JSON_STRING && id->len == EVENT_ID_HEX_LEN) {
		memcpy(out, id->s, EVENT_ID_HEX_LEN);
		out[EVENT_ID_HEX_LEN] = '\0';
		rc = 0;
	}
	json_free(doc);
	return rc;
}

struct okcount {
	size_t ok_true, ok_false;
	char  *reasons[BENCH_REASONS_SHOWN];
	size_t nreasons;
};

static void
count_ok(struct okcount *c, int ok, const char *msg)
{
	size_t i;

	if (ok) {
		c->ok_true++;
		return;
	}
	c->ok_false++;
	for (i = 0; i < c->nreasons; i++)
		if (strcmp(c->reasons[i], msg ? msg : "") == 0)
			return;
	if (c->nreasons < BENCH_REASONS_SHOWN) {
		c->reasons[c->nreasons++] = strdup(msg ? msg : "");
		fprintf(stderr, "# OK false: %s\n", msg ? msg : "");
	}
}

/* Publishes one line and waits for its OK; latency in ms, or -1. */
static double
publish_one(struct wsc *w, const char *line, struct okcount *c, int stall_ms)
{
	char   id[EVENT_ID_HEX_LEN + 1], *msg = NULL;
	double t0;
	int    ok = 0;

	if (line_id(line, id) == -1) {
		fprintf(stderr, "ingest: a line without an id: %.80s\n", line);
		return -1;
	}
	t0 = bench_now_s();
	if (nostr_publish_json(w, line, id, stall_ms, &ok, &msg) == -1) {
		fprintf(stderr, "ingest: no OK for %s within %d ms (%s)\n", id,
		    stall_ms, wsc_error(w));
		return -1;
	}
	count_ok(c, ok, msg);
	free(msg);
	return (bench_now_s() - t0) * 1000;
}

/*
 * Send times of the EVENTs in flight, found by id when their OK comes:
 * an open-addressing table of line numbers keyed by the id.
 */
struct oktimes {
	char (*id)[EVENT_ID_HEX_LEN + 1]; /* per line */
	double *sent;			  /* per line, 0 until sent */
	size_t *slot;			  /* line + 1, or 0 */
	size_t	mask;
	double *lat; /* EVENT -> OK, ms */
	size_t	nlat;
};

static size_t
ok_hash(const char *id, size_t mask)
{
	uint64_t h = 0;
	int	 i;

	for (i = 0; i < 16; i++)
		h = h * 16 +
		    (uint64_t)(id[i] <= '9' ? id[i] - '0' :
					      (id[i] | 0x20) - 'a' + 10);
	return (size_t)(h * 0x9e3779b97f4a7c15ULL) & mask;
}

static void
ok_init(struct oktimes *t, const struct lines *ls, size_t from, size_t to)
{
	size_t i, h, cap = 1;

	while (cap < 2 * ls->n)
		cap *= 2;
	t->mask = cap - 1;
	t->id = calloc(ls->n, sizeof(*t->id));
	t->sent = calloc(ls->n, sizeof(*t->sent));
	t->slot = calloc(cap, sizeof(*t->slot));
	t->lat = calloc(ls->n, sizeof(*t->lat));
	t->nlat = 0;
	if (t->id == NULL || t->sent == NULL || t->slot == NULL ||
	    t->lat == NULL)
		fatal("ingest: calloc");
	for (i = from; i < to; i++) {
		if (line_id(ls->l[i], t->id[i]) == -1)
			fatalx("ingest: line %zu has no id", i + 1);
		for (h = ok_hash(t->id[i], t->mask); t->slot[h] != 0;
		     h = (h + 1) & t->mask)
			;
		t->slot[h] = i + 1;
	}
}

/* Notes the OK of id: its latency since the EVENT was sent. */
static void
ok_seen(struct oktimes *t, const char *id, size_t len)
{
	size_t h, l;

	if (len != 64)
		return;
	for (h = ok_hash(id, t->mask); (l = t->slot[h]) != 0;
	     h = (h + 1) & t->mask)
		if (memcmp(t->id[l - 1], id, EVENT_ID_HEX_LEN) == 0) {
			if (t->sent[l - 1] > 0) {
				t->lat[t->nlat++] =
				    (bench_now_s() - t->sent[l - 1]) * 1000;
				t->sent[l - 1] = 0;
			}
			return;
		}
}

static void
ok_free(struct oktimes *t)
{
	free(t->id);
	free(t->sent);
	free(t->slot);
	free(t->lat);
}

/*
 * Handles the messages buffered on one connection: every OK ends one
 * EVENT in flight (timed in t).  Returns the number of OKs, or -1 if the
 * connection ended.
 */
static long
drain_oks(struct wsc *w, struct okcount *c, struct oktimes *t)
{
	struct json_doc *doc;
	struct json	*m, *st;
	char		*text, err[64];
	size_t		 len;
	long		 n = 0;

	while ((text = wsc_next(w, &len, NULL)) != NULL) {
		doc = NULL;
		m = json_parse(text, len, &doc, err, sizeof(err));
		if (m != NULL && m->type == JSON_ARRAY && m->child != NULL &&
		    m->child->type == JSON_STRING &&
		    strcmp(m->child->s, "OK") == 0 &&
		    (st = json_at(m, 2)) != NULL) {
			struct json *msg = json_at(m, 3);
			struct json *id = json_at(m, 1);

			count_ok(c, st->type == JSON_TRUE,
			    msg && msg->type == JSON_STRING ? msg->s : "");
			if (id != NULL && id->type == JSON_STRING)
				ok_seen(t, id->s, id->len);
			n++;
		}
		json_free(doc);
		free(text);
	}
	return wsc_is_closed(w) ? -1 : n;
}

/* REQ filters the probes issue in turn, from "NAME FILTER" lines. */
struct probes {
	char  *name[BENCH_PROBE_FILTERS];
	char  *filter[BENCH_PROBE_FILTERS];
	size_t n;
};

static void
probes_read(const char *file, struct probes *pr)
{
	struct lines ls;
	char	    *sp;
	size_t	     i;

	read_lines(file, &ls);
	memset(pr, 0, sizeof(*pr));
	for (i = 0; i < ls.n; i++) {
		if ((sp = strchr(ls.l[i], ' ')) == NULL ||
		    pr->n == BENCH_PROBE_FILTERS)
			fatalx("ingest: %s: want at most %d \"NAME FILTER\" "
			       "lines",
			    file, BENCH_PROBE_FILTERS);
		*sp = '\0';
		pr->name[pr->n] = ls.l[i];
		pr->filter[pr->n++] = sp + 1;
	}
	free(ls.l);
	if (pr->n == 0)
		fatalx("ingest: %s has no probe filter", file);
}

/*
 * Round trips of one phase of the probes, overall and per filter (fk[i]
 * is the filter of lat[i]).
 */
struct probephase {
	double	      *lat;
	unsigned char *fk;
	size_t	       n;
	double	       max[BENCH_PROBE_FILTERS];
};

/*
 * Prints the phase's figures: per filter its p50 and p99 (before the
 * overall ones, whose sort loses which filter each round trip was), then
 * the overall p50, p99 and max and each filter's max.
 */
static void
probe_print(const char *phase, struct probephase *ph, const struct probes *pr)
{
	double *v;
	size_t	i, j, m;

	printf("req_%s_reqs %zu reqs\n", phase, ph->n);
	if (ph->n == 0)
		return;
	if ((v = calloc(ph->n, sizeof(*v))) == NULL)
		fatal("ingest: calloc");
	for (i = 0; i < pr->n; i++) {
		for (j = m = 0; j < ph->n; j++)
			if (ph->fk[j] == i)
				v[m++] = ph->lat[j];
		if (m == 0)
			continue;
		printf("req_%s_p50_%s %.3f ms\n", phase, pr->name[i],
		    percentile(v, m, 0.50));
		printf("req_%s_p99_%s %.3f ms\n", phase, pr->name[i],
		    percentile(v, m, 0.99));
	}
	free(v);
	printf("req_%s_p50 %.3f ms\n", phase, percentile(ph->lat, ph->n, 0.50));
	printf("req_%s_p99 %.3f ms\n", phase, percentile(ph->lat, ph->n, 0.99));
	printf("req_%s_max %.3f ms\n", phase, ph->lat[ph->n - 1]);
	for (i = 0; i < pr->n; i++)
		printf("req_%s_max_%s %.3f ms\n", phase, pr->name[i],
		    ph->max[i]);
}

/*
 * The probes' child process: on its own connection, writes a byte to
 * readyfd, then issues REQs of the filters in turn, one after another,
 * until stopfd has a byte (the load's last OK), then for BENCH_AFTER_MS
 * more; prints the figures of both phases and exits, 1 if the relay
 * failed a REQ.
 */
static void __attribute__((noreturn)) probe_child(const char *host, int port,
    const struct probes *pr, long gap_us, int readyfd, int stopfd)
{
	struct probephase ph[2], *cur = &ph[0];
	struct pollfd	  pfd;
	struct wsc	 *w;
	char		  subid[32], close[64], c = 'r';
	double		  t0, t, stop_at = 0, due, now;
	size_t		  i, k;
	long		  r;
	int		  rc = 1;

	memset(ph, 0, sizeof(ph));
	if ((ph[0].lat = calloc(BENCH_PROBE_MAX, sizeof(double))) == NULL ||
	    (ph[1].lat = calloc(BENCH_PROBE_MAX, sizeof(double))) == NULL ||
	    (ph[0].fk = calloc(BENCH_PROBE_MAX, 1)) == NULL ||
	    (ph[1].fk = calloc(BENCH_PROBE_MAX, 1)) == NULL)
		fatal("ingest: calloc");
	if ((w = wsc_connect(host, port, "/", BENCH_CONNECT_MS)) == NULL ||
	    write(readyfd, &c, 1) != 1)
		_exit(1);
	due = bench_now_s();
	for (i = 0;; i++) {
		pfd.fd = stopfd;
		pfd.events = POLLIN;
		if (cur == &ph[0] && poll(&pfd, 1, 0) == 1) {
			cur = &ph[1];
			stop_at = due = bench_now_s();
		}
		if (cur == &ph[1] &&
		    (bench_now_s() - stop_at) * 1000 > BENCH_AFTER_MS)
			break;
		k = i % pr->n;
		snprintf(subid, sizeof(subid), "probe-%zu", i);
		/*
		 * A REQ that is late because the one before it took long is
		 * timed from when it was due, so that the wait counts (no
		 * coordinated omission); one on time from when it is sent,
		 * so that the client's own sleep does not.
		 */
		t0 = now = bench_now_s();
		if (gap_us > 0 && now < due) {
			usleep((useconds_t)((due - now) * 1e6));
			t0 = bench_now_s();
		} else if (gap_us > 0)
			t0 = due;
		due += (double)gap_us / 1e6;
		r = req_round(w, subid, pr->filter[k], 1);
		t = (bench_now_s() - t0) * 1000;
		if (r < 0) {
			fprintf(stderr,
			    "ingest: probe REQ %s (%s) failed "
			    "(%s)\n",
			    subid, pr->name[k], wsc_error(w));
			goto done;
		}
		snprintf(close, sizeof(close), "[\"CLOSE\",\"%s\"]", subid);
		if (wsc_send_text(w, close, strlen(close)) == -1)
			goto done;
		if (cur->n < BENCH_PROBE_MAX) {
			cur->fk[cur->n] = (unsigned char)k;
			cur->lat[cur->n++] = t;
		}
		if (t > cur->max[k])
			cur->max[k] = t;
	}
	probe_print("during", &ph[0], pr);
	probe_print("after", &ph[1], pr);
	rc = 0;
done:
	fflush(stdout);
	wsc_close(w);
	_exit(rc);
}

/* Starts the probe child; its pid, with the write end of its stop pipe
 * in *stopfd. */
static pid_t
probe_start(const char *host, int port, const struct probes *pr, long gap_us,
    int *stopfd)
{
	int   ready[2], stop[2];
	pid_t pid;
	char  c;

	if (pipe(ready) == -1 || pipe(stop) == -1)
		fatal("ingest: pipe");
	fflush(stdout);
	if ((pid = fork()) == -1)
		fatal("ingest: fork");
	if (pid == 0) {
		close(ready[0]);
		close(stop[1]);
		probe_child(host, port, pr, gap_us, ready[1], stop[0]);
	}
	close(ready[1]);
	close(stop[0]);
	if (read(ready[0], &c, 1) != 1)
		fatalx("ingest: the probe process cannot connect");
	close(ready[0]);
	*stopfd = stop[1];
	return pid;
}

/* Tells the probe child that the load is over and waits for it; 0 if it
 * measured everything. */
static int
probe_finish(pid_t pid, int stopfd)
{
	int  status;
	char c = 's';

	if (write(stopfd, &c, 1) != 1)
		fatal("ingest: write to the probe process");
	if (waitpid(pid, &status, 0) == -1)
		fatal("ingest: waitpid");
	close(stopfd);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/*
 * Pushes dir's main branch to the repository of the announcement line
 * ann on host:port, then waits until the announcement is served.
 * 0 or -1.
 */
static int
release(struct wsc *w, const char *host, int port, const char *ann,
    const char *dir, int stall_ms)
{
	struct event	  *ev;
	const struct estr *d;
	char		   url[1024], npub[NIP19_KEY_BUFSZ], err[128], f[128];
	char		  *out = NULL, **evs = NULL;
	size_t		   n = 0;
	double		   t0 = bench_now_s();
	int		   rc = -1;

	if ((ev = event_parse(ann, strlen(ann), err, sizeof(err))) == NULL ||
	    (d = event_tag_value(ev, "d")) == NULL) {
		fprintf(stderr, "ingest: the first line is no announcement\n");
		event_destroy(ev);
		return -1;
	}
	nip19_encode("npub", ev->pubkey, npub, sizeof(npub));
	snprintf(url, sizeof(url), "http://%s:%d/%s/%s.git", host, port, npub,
	    d->s);
	snprintf(err, sizeof(err), "%.100s.home", dir);
	if (gt_setup(err) == -1)
		goto done;
	if (gt_git(dir, &out, "push", "-q", url, "main", NULL) != 0) {
		fprintf(stderr, "ingest: git push to %s failed: %s\n", url,
		    out ? out : "");
		goto done;
	}
	snprintf(f, sizeof(f), "{\"ids\":[\"%s\"]}", ev->id_hex);
	while ((bench_now_s() - t0) * 1000 < stall_ms) {
		nostr_events_free(evs);
		evs = NULL;
		if (nostr_req(w, "release", f, stall_ms, &evs, &n, NULL) == 0 &&
		    n == 1) {
			rc = 0;
			break;
		}
		nostr_close_sub(w, "release");
		usleep(100000);
	}
	if (rc == -1)
		fprintf(stderr,
		    "ingest: the announcement is not served after "
		    "the push\n");
	printf("release_seconds %.3f s\n", bench_now_s() - t0);
done:
	nostr_close_sub(w, "release");
	nostr_events_free(evs);
	free(out);
	event_destroy(ev);
	return rc;
}

static int
cmd_publish(int argc, char **argv)
{
	struct wsc    *w[BENCH_MAX_CONNS];
	struct pollfd  pfd[BENCH_MAX_CONNS];
	struct lines   ls;
	struct okcount ac, oc, sc;
	struct oktimes ot;
	struct probes  pr;
	struct buf     msg = BUF_INIT;
	const char    *host, *v, *pushdir, *probes;
	size_t	       conns, inflight, serial = 0, i, next, end, done, head;
	size_t	       busy[BENCH_MAX_CONNS];
	double	       t0, t1, last_ok, *lat;
	long	       got;
	int	       port, stall_ms = BENCH_TIMEOUT_MS, rc = 1, stopfd = -1;
	long	       gap_us;
	pid_t	       probe = -1;

	if (argc < 4)
		usage();
	port = host_port(argc, argv, &host);
	v = bench_opt(argc, argv, "--conns");
	conns = (size_t)num_arg(v ? v : "4", 1, BENCH_MAX_CONNS);
	v = bench_opt(argc, argv, "--inflight");
	inflight = (size_t)num_arg(v ? v : "50", 1, 100000);
	if ((v = bench_opt(argc, argv, "--serial")) != NULL)
		serial = (size_t)num_arg(v, 0, 10000000);
	if ((v = bench_opt(argc, argv, "--stall-ms")) != NULL)
		stall_ms = (int)num_arg(v, 100, 3600000);
	pushdir = bench_opt(argc, argv, "--push");
	if ((probes = bench_opt(argc, argv, "--probes")) != NULL)
		probes_read(probes, &pr);
	v = bench_opt(argc, argv, "--probe-gap-us");
	gap_us = num_arg(v ? v : BENCH_PROBE_GAP_US, 0, 1000000);
	head = pushdir ? 2 : 1;
	read_lines(argv[3], &ls);
	if (ls.n < head + serial) {
		fprintf(stderr,
		    "ingest: %s has %zu events, fewer than %zu + "
		    "--serial %zu\n",
		    argv[3], ls.n, head, serial);
		return 2;
	}
	ok_init(&ot, &ls, head, ls.n - serial);
	memset(&ac, 0, sizeof(ac));
	memset(&oc, 0, sizeof(oc));
	memset(&sc, 0, sizeof(sc));
	memset(w, 0, sizeof(w));
	for (i = 0; i < conns; i++) {
		if ((w[i] = wsc_connect(host, port, "/", BENCH_CONNECT_MS)) ==
		    NULL) {
			fprintf(stderr,
			    "ingest: cannot open connection %zu "
			    "to %s port %d\n",
			    i, host, port);
			goto done;
		}
		busy[i] = 0;
	}

	/* The announcement first: everything else refers to it.  It is
	 * held in purgatory until its state and git data arrive. */
	for (i = 0; i < head; i++)
		if (publish_one(w[0], ls.l[i], &ac, stall_ms) < 0)
			goto done;
	if (pushdir != NULL &&
	    release(w[0], host, port, ls.l[0], pushdir, stall_ms) == -1)
		goto done;
	printf("announce_ok_true %zu events\n", ac.ok_true);

	if (probes != NULL) {
		printf("req_gap %ld us\n", gap_us);
		probe = probe_start(host, port, &pr, gap_us, &stopfd);
	}
	next = head;
	end = ls.n - serial;
	done = 0;
	t0 = last_ok = bench_now_s();
	while (next < end || done < end - head) {
		for (i = 0; i < conns; i++) {
			while (busy[i] < inflight && next < end) {
				buf_reset(&msg);
				buf_adds(&msg, "[\"EVENT\",");
				buf_adds(&msg, ls.l[next]);
				buf_addc(&msg, ']');
				if (wsc_send_text(w[i], msg.b_data,
					msg.b_len) == -1) {
					fprintf(stderr,
					    "ingest: send failed "
					    "on connection %zu: %s\n",
					    i, wsc_error(w[i]));
					goto done;
				}
				ot.sent[next] = bench_now_s();
				busy[i]++;
				next++;
			}
			pfd[i].fd = wsc_fd(w[i]);
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
		}
		if (poll(pfd, conns, 200) == -1 && errno != EINTR)
			fatal("ingest: poll");
		for (i = 0; i < conns; i++) {
			if (pfd[i].revents == 0)
				continue;
			wsc_read_available(w[i]);
			if ((got = drain_oks(w[i], &oc, &ot)) == -1) {
				fprintf(stderr,
				    "ingest: connection %zu ended: "
				    "%s\n",
				    i, wsc_error(w[i]));
				goto done;
			}
			if (got > 0) {
				busy[i] -= (size_t)got > busy[i] ? busy[i] :
								   (size_t)got;
				done += (size_t)got;
				last_ok = bench_now_s();
			}
		}
		if ((bench_now_s() - last_ok) * 1000 > stall_ms) {
			fprintf(stderr,
			    "ingest: no OK for %d ms with %zu of "
			    "%zu answered; giving up\n",
			    stall_ms, done, end - head);
			goto done;
		}
	}
	t1 = bench_now_s();
	if (probe != -1) {
		rc = probe_finish(probe, stopfd);
		probe = -1;
		if (rc == -1)
			goto done;
		rc = 1;
	}
	printf("publish_events %zu events\n", end - head);
	printf("publish_conns %zu conns\n", conns);
	printf("publish_inflight %zu events\n", inflight);
	printf("publish_ok_true %zu events\n", oc.ok_true);
	printf("publish_ok_false %zu events\n", oc.ok_false);
	printf("publish_seconds %.3f s\n", t1 - t0);
	printf("publish_rate %.1f events/s\n",
	    t1 > t0 ? (double)(end - head) / (t1 - t0) : 0.0);
	if (ot.nlat > 0) {
		printf("publish_ok_p50 %.3f ms\n",
		    percentile(ot.lat, ot.nlat, 0.50));
		printf("publish_ok_p99 %.3f ms\n",
		    percentile(ot.lat, ot.nlat, 0.99));
		printf("publish_ok_max %.3f ms\n", ot.lat[ot.nlat - 1]);
	}
	fflush(stdout);

	if (serial > 0) {
		if ((lat = calloc(serial, sizeof(*lat))) == NULL)
			fatal("ingest: calloc");
		for (i = 0; i < serial; i++)
			if ((lat[i] = publish_one(w[0], ls.l[end + i], &sc,
				 stall_ms)) < 0) {
				free(lat);
				goto done;
			}
		printf("serial_events %zu events\n", serial);
		printf("serial_ok_true %zu events\n", sc.ok_true);
		printf("serial_ok_false %zu events\n", sc.ok_false);
		printf("serial_ok_p50 %.3f ms\n",
		    percentile(lat, serial, 0.50));
		printf("serial_ok_p99 %.3f ms\n",
		    percentile(lat, serial, 0.99));
		free(lat);
	}
	rc = 0;
done:
	if (probe != -1) {
		kill(probe, SIGTERM);
		waitpid(probe, NULL, 0);
	}
	ok_free(&ot);
	if (probes != NULL)
		for (i = 0; i < pr.n; i++)
			free(pr.name[i]);
	for (i = 0; i < conns; i++)
		wsc_close(w[i]);
	for (i = 0; i < ls.n; i++)
		free(ls.l[i]);
	free(ls.l);
	for (i = 0; i < ac.nreasons; i++)
		free(ac.reasons[i]);
	for (i = 0; i < oc.nreasons; i++)
		free(oc.reasons[i]);
	for (i = 0; i < sc.nreasons; i++)
		free(sc.reasons[i]);
	buf_free(&msg);
	return rc;
}

/*
 * One REQ -> EOSE round trip of subscription subid, read without parsing
 * (the relay's own answers, recognised by their prefix), so that the
 * figure is the relay's time rather than this client's JSON work.
 * Returns the events before EOSE, -2 after CLOSED (its text to stderr
 * when report is set), -1 on timeout or a closed connection.
 */
static long
req_round(struct wsc *w, const char *subid, const char *filter, int report)
{
	struct buf  b = BUF_INIT, ev = BUF_INIT, eose = BUF_INIT;
	struct buf  closed = BUF_INIT;
	int64_t	    deadline = wsc_now_ms() + BENCH_TIMEOUT_MS, left;
	const char *f = filter, *end;
	char	   *m;
	size_t	    len;
	long	    n = 0, rc = -1;

	buf_printf(&b, "[\"REQ\",\"%s\",", subid);
	if (*f == '[' && (end = strrchr(f, ']')) != NULL)
		buf_add(&b, f + 1, (size_t)(end - f - 1));
	else
		buf_adds(&b, f);
	buf_addc(&b, ']');
	buf_printf(&ev, "[\"EVENT\",\"%s\",", subid);
	buf_printf(&eose, "[\"EOSE\",\"%s\"]", subid);
	buf_printf(&closed, "[\"CLOSED\",\"%s\",", subid);
	if (wsc_send_text(w, b.b_data, b.b_len) == -1)
		goto done;
	while ((left = deadline - wsc_now_ms()) > 0 &&
	    (m = wsc_recv(w, (int)left, &len)) != NULL) {
		if (len > ev.b_len && memcmp(m, ev.b_data, ev.b_len) == 0)
			n++;
		else if (len == eose.b_len && memcmp(m, eose.b_data, len) == 0)
			rc = n;
		else if (len > closed.b_len &&
		    memcmp(m, closed.b_data, closed.b_len) == 0) {
			if (report)
				fprintf(stderr, "# REQ %s: %s\n", subid, m);
			rc = -2;
		}
		free(m);
		if (rc != -1)
			break;
	}
done:
	buf_free(&b);
	buf_free(&ev);
	buf_free(&eose);
	buf_free(&closed);
	return rc;
}

static int
cmd_req(int argc, char **argv)
{
	struct wsc *w;
	const char *host, *filter, *name, *v;
	char	    subid[32], close[64];
	size_t	    n, i, first = 0, nclosed = 0;
	double	    t0, *lat;
	long	    r;
	int	    port, rc = 1;

	port = host_port(argc, argv, &host);
	if ((filter = bench_opt(argc, argv, "--filter")) == NULL)
		usage();
	n = (size_t)num_arg((v = bench_opt(argc, argv, "--n")) ? v : "1000", 1,
	    10000000);
	name = (v = bench_opt(argc, argv, "--name")) ? v : "req";
	if ((lat = calloc(n, sizeof(*lat))) == NULL)
		fatal("ingest: calloc");
	if ((w = wsc_connect(host, port, "/", BENCH_CONNECT_MS)) == NULL)
		goto done;
	for (i = 0; i < n; i++) {
		snprintf(subid, sizeof(subid), "bench-%zu", i);
		t0 = bench_now_s();
		r = req_round(w, subid, filter, nclosed == 0);
		lat[i] = (bench_now_s() - t0) * 1000;
		if (r == -1) {
			fprintf(stderr,
			    "ingest: REQ %s got no EOSE within %d "
			    "ms (%s)\n",
			    subid, BENCH_TIMEOUT_MS, wsc_error(w));
			goto done;
		}
		if (r == -2)
			nclosed++;
		else {
			snprintf(close, sizeof(close), "[\"CLOSE\",\"%s\"]",
			    subid);
			if (wsc_send_text(w, close, strlen(close)) == -1)
				goto done;
		}
		if (i == 0)
			first = r < 0 ? 0 : (size_t)r;
	}
	printf("req_%s_events %zu events\n", name, first);
	if (nclosed > 0)
		printf("req_%s_closed %zu reqs\n", name, nclosed);
	printf("req_%s_p50 %.3f ms\n", name, percentile(lat, n, 0.50));
	printf("req_%s_p99 %.3f ms\n", name, percentile(lat, n, 0.99));
	rc = 0;
done:
	wsc_close(w);
	free(lat);
	return rc;
}

static int
cmd_verify(int argc, char **argv)
{
	struct lines   ls;
	struct event **evs;
	const char    *v;
	char	       err[128];
	size_t	       i, n = 0, checks = 0;
	double	       secs, t0, t;

	if (argc < 2)
		usage();
	v = bench_opt(argc, argv, "--seconds");
	secs = (double)num_arg(v ? v : "2", 1, 600);
	read_lines(argv[1], &ls);
	if ((evs = calloc(BENCH_VERIFY_MAX, sizeof(*evs))) == NULL)
		fatal("ingest verify: calloc");
	for (i = 0; i < ls.n && n < BENCH_VERIFY_MAX; i++)
		if ((evs[n] = event_parse(ls.l[i], strlen(ls.l[i]), err,
			 sizeof(err))) != NULL)
			n++;
	if (n == 0) {
		fprintf(stderr, "ingest verify: no event in %s\n", argv[1]);
		return 1;
	}
	/* Whole passes over the events until the time is up. */
	t0 = bench_now_s();
	do {
		for (i = 0; i < n; i++)
			if (!event_check_sig(evs[i]))
				fatalx("ingest verify: bad signature on %s",
				    evs[i]->id_hex);
		checks += n;
	} while ((t = bench_now_s()) - t0 < secs);
	printf("verify_rate %.1f events/s\n", (double)checks / (t - t0));
	for (i = 0; i < n; i++)
		event_destroy(evs[i]);
	free(evs);
	for (i = 0; i < ls.n; i++)
		free(ls.l[i]);
	free(ls.l);
	return 0;
}

/* Opens one subscriber: a live REQ for the fan-out tag, past its EOSE. */
static struct wsc *
fanout_sub(const char *host, int port)
{
	static const char req[] =
	    "[\"REQ\",\"fan\",{\"kinds\":[1621],"
	    "\"#t\":[\"" BENCH_FANOUT_TAG "\"],\"limit\":0}]";
	struct wsc *w;
	char	   *m;

	if ((w = wsc_connect(host, port, "/", BENCH_CONNECT_MS)) == NULL)
		return NULL;
	if (wsc_send_text(w, req, sizeof(req) - 1) == -1 ||
	    (m = nostr_wait_msg(w, "EOSE", BENCH_TIMEOUT_MS)) == NULL) {
		wsc_close(w);
		return NULL;
	}
	free(m);
	return w;
}

static int
cmd_fanout(int argc, char **argv)
{
	struct wsc	  **w = NULL, *pub = NULL;
	struct epoll_event *ready = NULL, ee;
	struct event	   *ev = NULL;
	struct buf	    tags = BUF_INIT;
	const char	   *host, *coord, *v;
	uint8_t		    sk[SECKEY_LEN];
	size_t		    nsub, nev, i, e, left, *got = NULL;
	double		   *all = NULL, *each = NULL, t0, t;
	char		   *text;
	size_t		    len, neach = 0;
	int		    port, rc = 1, ok, ep = -1, nready, r;

	port = host_port(argc, argv, &host);
	if ((coord = bench_opt(argc, argv, "--a")) == NULL)
		usage();
	v = bench_opt(argc, argv, "--subs");
	nsub = (size_t)num_arg(v ? v : "1000", 1, BENCH_FANOUT_MAX);
	v = bench_opt(argc, argv, "--events");
	nev = (size_t)num_arg(v ? v : "30", 1, 100000);
	w = calloc(nsub, sizeof(*w));
	ready = calloc(nsub, sizeof(*ready));
	got = calloc(nsub, sizeof(*got));
	all = calloc(nev, sizeof(*all));
	each = calloc(nev * nsub, sizeof(*each));
	if (w == NULL || ready == NULL || got == NULL || all == NULL ||
	    each == NULL)
		fatal("ingest fanout: calloc");
	for (i = 0; i < nsub; i++)
		if ((w[i] = fanout_sub(host, port)) == NULL) {
			fprintf(stderr,
			    "ingest: subscriber %zu cannot "
			    "subscribe on %s port %d\n",
			    i, host, port);
			goto done;
		}
	/* epoll: a poll(2) of every subscriber per wake-up would time the
	 * client's scans of a thousand descriptors, not the relay. */
	if ((ep = epoll_create1(0)) == -1)
		fatal("ingest fanout: epoll_create1");
	for (i = 0; i < nsub; i++) {
		memset(&ee, 0, sizeof(ee));
		ee.events = EPOLLIN;
		ee.data.u64 = i;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, wsc_fd(w[i]), &ee) == -1)
			fatal("ingest fanout: epoll_ctl");
	}
	if ((pub = wsc_connect(host, port, "/", BENCH_CONNECT_MS)) == NULL)
		goto done;
	derive_key("fanout", 0, sk);
	buf_printf(&tags,
	    "[[\"a\",\"%s\"],[\"subject\",\"fan-out\"],"
	    "[\"t\",\"" BENCH_FANOUT_TAG "\"]]",
	    coord);

	for (e = 0; e < nev; e++) {
		char *msg, content[128];

		/* Distinct content: events of one second differ in id. */
		snprintf(content, sizeof(content),
		    "Fan-out issue %zu: every "
		    "subscriber waits for it.",
		    e);
		if ((ev = event_new_signed(sk, (int64_t)time(NULL), 1621,
			 tags.b_data, content)) == NULL ||
		    (msg = nostr_event_msg(ev)) == NULL)
			fatalx("ingest fanout: cannot sign event %zu", e);
		memset(got, 0, nsub * sizeof(*got));
		left = nsub;
		t0 = bench_now_s();
		if (wsc_send_text(pub, msg, strlen(msg)) == -1) {
			free(msg);
			goto done;
		}
		free(msg);
		while (left > 0) {
			if ((nready = epoll_wait(ep, ready, (int)nsub,
				 BENCH_TIMEOUT_MS)) <= 0) {
				text = nostr_wait_msg(pub, "OK", 0);
				fprintf(stderr,
				    "ingest: %zu of %zu "
				    "subscribers got nothing for %d ms (the "
				    "relay said %s)\n",
				    left, nsub, BENCH_TIMEOUT_MS,
				    text ? text : "nothing");
				free(text);
				goto done;
			}
			t = bench_now_s();
			for (r = 0; r < nready; r++) {
				i = (size_t)ready[r].data.u64;
				if (wsc_read_available(w[i]) == -1 &&
				    wsc_is_closed(w[i])) {
					fprintf(stderr,
					    "ingest: subscriber "
					    "%zu dropped: %s\n",
					    i, wsc_error(w[i]));
					goto done;
				}
				while ((text = wsc_next(w[i], &len, NULL)) !=
				    NULL) {
					if (!got[i] &&
					    strncmp(text, "[\"EVENT\",\"fan\",",
						15) == 0 &&
					    strstr(text, ev->id_hex) != NULL) {
						got[i] = 1;
						left--;
						each[neach++] = (t - t0) * 1000;
					}
					free(text);
				}
			}
		}
		all[e] = (bench_now_s() - t0) * 1000;
		text = nostr_wait_msg(pub, "OK", BENCH_TIMEOUT_MS);
		ok = text != NULL && strstr(text, ev->id_hex) != NULL &&
		    strstr(text, "true") != NULL;
		free(text);
		if (!ok) {
			fprintf(stderr,
			    "ingest: fan-out event %zu not "
			    "accepted\n",
			    e);
			goto done;
		}
		event_destroy(ev);
		ev = NULL;
		usleep(BENCH_FANOUT_GAP_US);
	}
	printf("fanout_subs %zu conns\n", nsub);
	printf("fanout_events %zu events\n", nev);
	printf("fanout_each_p50 %.3f ms\n", percentile(each, neach, 0.50));
	printf("fanout_all_p50 %.3f ms\n", percentile(all, nev, 0.50));
	printf("fanout_all_p99 %.3f ms\n", percentile(all, nev, 0.99));
	printf("fanout_all_max %.3f ms\n", all[nev - 1]);
	rc = 0;
done:
	for (i = 0; i < nsub; i++)
		wsc_close(w[i]);
	wsc_close(pub);
	event_destroy(ev);
	buf_free(&tags);
	free(w);
	free(ready);
	if (ep != -1)
		close(ep);
	free(got);
	free(all);
	free(each);
	return rc;
}

int
main(int argc, char **argv)
{
	int port;

	log_init("ingest", 1);
	if (argc < 2)
		usage();
	if (strcmp(argv[1], "gen") == 0)
		return cmd_gen(argc - 1, argv + 1, 0);
	if (strcmp(argv[1], "fill") == 0)
		return cmd_gen(argc - 1, argv + 1, 1);
	if (strcmp(argv[1], "verify") == 0)
		return cmd_verify(argc - 1, argv + 1);
	if (strcmp(argv[1], "fanout") == 0)
		return cmd_fanout(argc - 1, argv + 1);
	if (strcmp(argv[1], "publish") == 0)
		return cmd_publish(argc - 1, argv + 1);
	if (strcmp(argv[1], "req") == 0)
		return cmd_req(argc - 1, argv + 1);
	if (strcmp(argv[1], "freeport") == 0) {
		if ((port = relayproc_free_port("127.0.0.1")) == -1)
			return 1;
		printf("%d\n", port);
		return 0;
	}
	if (strcmp(argv[1], "waitport") == 0 && argc >= 4) {
		bench_loopback_only("ingest", argv[2]);
		return relayproc_wait_port(argv[2],
			   (int)num_arg(argv[3], 1, 65535),
			   argc > 4 ? (int)num_arg(argv[4], 0, 600000) :
				      10000) == 0 ?
		    0 :
		    1;
	}
	usage();
}
