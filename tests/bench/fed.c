/*
 * fed.c: federation latency (issue #44 item 6), run by tests/bench/run.sh:
 * one repository served by three graspd, as users run a repository on
 * several GRASP servers, and how long what reaches one takes to be served
 * by the other two.
 *
 *   fed [N]
 *
 * Starts graspd A, B and C on loopback with production timing (NGIT_TEST
 * off: batch windows, REQ pacing, the git hunt's delays as shipped) and
 * NGIT_SYNC_ALLOW_PRIVATE_TARGETS (else loopback relays are never
 * dialled); gdproc's rate limits stay off (this client publishes from one
 * address; nothing in the sync path reads them).  The owner publishes one
 * announcement listing all three in its relays and clone tags to each,
 * and releases the repository on each (state, push).  Once every syncd
 * has live subscriptions to the other two and no historic request in
 * flight, N (BENCH_FED_N, 20) times, the origin turning A, B, C:
 *   - event: an issue (kind 1621) is published to the origin; from its
 *     OK until a live subscription on each of the other two delivers it
 *     (which they do once stored);
 *   - push: the owner commits, publishes the new state to the origin and
 *     pushes there; from the push's end until `git ls-remote` on each of
 *     the other two shows the new commit (asked as soon as a live
 *     subscription there delivers the new state, then every
 *     FED_LS_POLL_MS).
 * Prints p50, p99 and max of the time until both others serve it
 * (fed_event_*, fed_push_*) and the p50 until the first does.  Figures
 * only: exits 0 unless something breaks or waits past FED_TIMEOUT_MS.
 */
#include <sys/types.h>

#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "bench.h"
#include "buf.h"
#include "ctl.h"
#include "event.h"
#include "gdproc.h"
#include "gitutil.h"
#include "log.h"
#include "nostr.h"
#include "relayproc.h"
#include "wsclient.h"

/* Ours: rounds by default, and the most. */
#define FED_N	       20
#define FED_MAX_N      1000
/* Ours: how long one event or push may take to reach both others. */
#define FED_TIMEOUT_MS 120000
/* Ours: how long the three may take to subscribe to each other. */
#define FED_SETTLE_MS  120000
/* Ours: git ls-remote is asked again this often until it shows it. */
#define FED_LS_POLL_MS 20
#define FED_D	       "fed"

static struct gdproc *gd[3];
static struct wsc    *sub[3];
static char	      domain[3][64];

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Milliseconds on the monotonic clock, with their fractions. */
static double
now_ms(void)
{
	return bench_now_s() * 1e3;
}

/* The nearest-rank percentile p of v[0..n), sorted. */
static double
pct(const double *v, int n, double p)
{
	int k = (int)(p * n + 0.999999);

	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

static void
report(const char *name, double *both, double *first, int n)
{
	qsort(both, (size_t)n, sizeof(*both), cmp_double);
	qsort(first, (size_t)n, sizeof(*first), cmp_double);
	printf("fed_%s_p50_ms %.2f ms\n", name, pct(both, n, 0.5));
	printf("fed_%s_p99_ms %.2f ms\n", name, pct(both, n, 0.99));
	printf("fed_%s_max_ms %.2f ms\n", name, both[n - 1]);
	printf("fed_%s_first_p50_ms %.2f ms\n", name, pct(first, n, 0.5));
}

/* Takes what sub[i] holds now; 1 if a message contained needle. */
static int
drain(int i, const char *needle)
{
	char *m;
	int   hit = 0;

	if (wsc_read_available(sub[i]) == -1 && wsc_is_closed(sub[i]))
		fatalx("fed: subscription on %s closed: %s", domain[i],
		    wsc_error(sub[i]));
	while ((m = wsc_next(sub[i], NULL, NULL)) != NULL) {
		if (needle != NULL && strncmp(m, "[\"EVENT\"", 8) == 0 &&
		    strstr(m, needle) != NULL)
			hit = 1;
		free(m);
	}
	return hit;
}

/*
 * Waits until the subscriptions of the two servers other than origin
 * deliver a message containing needle; their arrival times (now_ms())
 * in at[].  Calls seen(i) as each arrives, when not NULL.
 */
static void
wait_others(int origin, const char *needle, double at[3],
    void (*seen)(int, const char *), const char *arg)
{
	struct pollfd pf[3];
	int64_t	      start = wsc_now_ms();
	int	      i, left = 2;

	at[0] = at[1] = at[2] = 0;
	while (left > 0) {
		for (i = 0; i < 3; i++) {
			pf[i].fd = wsc_fd(sub[i]);
			pf[i].events = POLLIN;
			pf[i].revents = 0;
		}
		if (poll(pf, 3, 100) == -1)
			fatal("fed: poll");
		for (i = 0; i < 3; i++) {
			if (!drain(i, i == origin ? NULL : needle) ||
			    at[i] != 0)
				continue;
			at[i] = now_ms();
			left--;
			if (seen != NULL)
				seen(i, arg);
		}
		if (wsc_now_ms() - start > FED_TIMEOUT_MS)
			fatalx("fed: %s not served by the others after %d s",
			    needle, FED_TIMEOUT_MS / 1000);
	}
}

/* The earliest and the latest of t[] but t[origin]. */
static double
first_of(const double t[3], int origin)
{
	double m = 1e300;
	int    i;

	for (i = 0; i < 3; i++)
		if (i != origin && t[i] < m)
			m = t[i];
	return m;
}

static double
last_of(const double t[3], int origin)
{
	double m = 0;
	int    i;

	for (i = 0; i < 3; i++)
		if (i != origin && t[i] > m)
			m = t[i];
	return m;
}

static uint8_t sk[SECKEY_LEN];
static double  ls_at[3];

/* git ls-remote on server i until main is oid; the time into ls_at[i]. */
static void
ls_until(int i, const char *oid)
{
	uint8_t pk[PUBKEY_LEN];
	char	url[512], *out;
	int64_t start = wsc_now_ms();

	event_pubkey_of(sk, pk);
	gt_url(url, sizeof(url), domain[i], pk, FED_D);
	for (;;) {
		out = NULL;
		if (gt_git(NULL, &out, "ls-remote", url, "refs/heads/main",
			NULL) == 0 &&
		    out != NULL && strncmp(out, oid, 40) == 0) {
			free(out);
			ls_at[i] = now_ms();
			return;
		}
		free(out);
		if (wsc_now_ms() - start > FED_TIMEOUT_MS)
			fatalx("fed: %s never shows %s", url, oid);
		relayproc_sleep_ms(FED_LS_POLL_MS);
	}
}

/* 1 once server i's syncd has live subscriptions to both others and no
 * historic request in flight. */
static int
subscribed(int i)
{
	const char *bin = getenv("GRASPD_BIN");
	char	    cmd[PATH_MAX + 128], *out = NULL, url[256];
	cJSON	   *j, *arr, *o;
	int	    k, ok = 1;

	snprintf(cmd, sizeof(cmd), "'%s/graspctl' -j -r '%s/run' show syncd",
	    bin && *bin ? bin : "bin", gd_dir(gd[i]));
	if (ctl_run(cmd, &out) != 0 || (j = cJSON_Parse(out)) == NULL) {
		free(out);
		return 0;
	}
	free(out);
	arr = ctl_view_list(j, "relays");
	for (k = 0; k < 3 && ok; k++) {
		if (k == i)
			continue;
		snprintf(url, sizeof(url), "ws://%s", domain[k]);
		o = ctl_by_relay(arr, url);
		ok = o != NULL && ctl_num(o, "live_subscriptions") > 0 &&
		    ctl_num(o, "historic_in_flight") == 0 &&
		    strcmp(ctl_str(o, "state"), "connected") == 0;
	}
	cJSON_Delete(j);
	return ok;
}

int
main(int argc, char *argv[])
{
	static const char *env[] = { "NGIT_TEST=false",
		"NGIT_SYNC_ALLOW_PRIVATE_TARGETS=true", NULL };
	struct buf	   t = BUF_INIT;
	struct event	  *ann, *ev;
	struct wsc	  *pub[3];
	uint8_t		   pk[PUBKEY_LEN];
	char		   home[PATH_MAX], dir[PATH_MAX], url[512], oid[41];
	char pkhex[PUBKEY_HEX_LEN + 1], coord[128], needle[128], filter[512],
	    *out;
	double *ev_both, *ev_first, *push_both, *push_first;
	double	at[3], now;
	int64_t t0, last_at = 0, at_s;
	int	n, i, k, o;

	log_init("fed", 1);
	n = argc > 1		  ? atoi(argv[1]) :
	    getenv("BENCH_FED_N") ? atoi(getenv("BENCH_FED_N")) :
				    FED_N;
	if (n < 1 || n > FED_MAX_N)
		fatalx("fed: N must be 1 to %d", FED_MAX_N);
	if ((ev_both = calloc((size_t)n, sizeof(double))) == NULL ||
	    (ev_first = calloc((size_t)n, sizeof(double))) == NULL ||
	    (push_both = calloc((size_t)n, sizeof(double))) == NULL ||
	    (push_first = calloc((size_t)n, sizeof(double))) == NULL)
		fatal("fed");
	for (i = 0; i < 3; i++) {
		if ((gd[i] = gd_start(env)) == NULL)
			fatalx("fed: graspd %c does not start", 'A' + i);
		snprintf(domain[i], sizeof(domain[i]), "127.0.0.1:%d",
		    gd_port(gd[i]));
	}
	snprintf(home, sizeof(home), "%s/home", gd_dir(gd[0]));
	snprintf(dir, sizeof(dir), "%s/src", gd_dir(gd[0]));
	if (gt_setup(home) == -1 || gt_init(dir) == -1 ||
	    gt_commit(dir, "README", "fed", "first commit", oid) == -1)
		fatalx("fed: cannot make the local repository");

	/* The announcement, on all three; the first state and push. */
	for (i = 0; i < 32; i++)
		sk[i] = (uint8_t)(0x41 + i);
	event_pubkey_of(sk, pk);
	hex_encode(pk, PUBKEY_LEN, pkhex);
	snprintf(coord, sizeof(coord), "30617:%s:%s", pkhex, FED_D);
	buf_printf(&t, "[[\"d\",\"%s\"],[\"name\",\"%s\"],[\"clone\"", FED_D,
	    FED_D);
	for (i = 0; i < 3; i++) {
		gt_url(url, sizeof(url), domain[i], pk, FED_D);
		buf_printf(&t, ",\"%s\"", url);
	}
	buf_adds(&t, "],[\"relays\"");
	for (i = 0; i < 3; i++)
		buf_printf(&t, ",\"ws://%s\"", domain[i]);
	buf_adds(&t, "]]");
	last_at = (int64_t)time(NULL);
	if ((ann = event_new_signed(sk, last_at, 30617, t.b_data, "")) == NULL)
		fatalx("fed: cannot sign the announcement");
	buf_free(&t);
	for (i = 0; i < 3; i++) {
		if ((pub[i] = wsc_connect("127.0.0.1", gd_port(gd[i]), "/",
			 5000)) == NULL ||
		    (sub[i] = wsc_connect("127.0.0.1", gd_port(gd[i]), "/",
			 5000)) == NULL)
			fatalx("fed: no websocket to %s", domain[i]);
		if (gd_publish(gd[i], ann) == -1 ||
		    gt_state(pub[i], sk, last_at, FED_D, oid) == -1)
			fatalx("fed: announcement or state refused by %s",
			    domain[i]);
		out = NULL;
		gt_url(url, sizeof(url), domain[i], pk, FED_D);
		if (gt_git(dir, &out, "push", "-q", url, "main", NULL) != 0)
			fatalx("fed: push to %s failed: %s", domain[i],
			    out ? out : "");
		free(out);
	}
	event_destroy(ann);
	t0 = wsc_now_ms();
	for (i = 0; i < 3; i++)
		while (!subscribed(i)) {
			if (wsc_now_ms() - t0 > FED_SETTLE_MS)
				fatalx("fed: %s never subscribed to the others",
				    domain[i]);
			relayproc_sleep_ms(200);
		}
	printf("fed_settle_ms %lld ms\n", (long long)(wsc_now_ms() - t0));
	snprintf(filter, sizeof(filter),
	    "[\"REQ\",\"f\",{\"kinds\":[1621],\"#a\":[\"%s\"],\"limit\":0},"
	    "{\"kinds\":[30618],\"authors\":[\"%s\"],\"#d\":[\"%s\"],"
	    "\"limit\":0}]",
	    coord, pkhex, FED_D);
	for (i = 0; i < 3; i++) {
		if (wsc_send_text(sub[i], filter, strlen(filter)) == -1 ||
		    (out = nostr_wait_msg(sub[i], "EOSE", 5000)) == NULL)
			fatalx("fed: no subscription on %s", domain[i]);
		free(out);
	}

	/* Events: from OK on the origin to delivered by both others. */
	for (k = 0; k < n; k++) {
		int  okv = 0;
		char tags[256];

		o = k % 3;
		snprintf(tags, sizeof(tags),
		    "[[\"a\",\"%s\"],[\"p\",\"%s\"],[\"subject\","
		    "\"issue %d\"]]",
		    coord, pkhex, k);
		if ((ev = event_new_signed(sk, (int64_t)time(NULL), 1621, tags,
			 "federation latency")) == NULL)
			fatalx("fed: cannot sign an issue");
		if (nostr_publish(pub[o], ev, 10000, &okv, NULL) == -1 || !okv)
			fatalx("fed: issue refused by %s", domain[o]);
		now = now_ms();
		wait_others(o, ev->id_hex, at, NULL, NULL);
		ev_first[k] = first_of(at, o) - now;
		ev_both[k] = last_of(at, o) - now;
		event_destroy(ev);
	}

	/* Pushes: from the push's end to ls-remote on both others. */
	for (k = 0; k < n; k++) {
		char file[32];

		o = k % 3;
		snprintf(file, sizeof(file), "f%d", k);
		if (gt_commit(dir, file, file, file, oid) == -1)
			fatalx("fed: commit failed");
		/* States are replaceable: each newer than the last. */
		at_s = (int64_t)time(NULL);
		last_at = at_s > last_at ? at_s : last_at + 1;
		if (gt_state(pub[o], sk, last_at, FED_D, oid) == -1)
			fatalx("fed: state refused by %s", domain[o]);
		gt_url(url, sizeof(url), domain[o], pk, FED_D);
		out = NULL;
		if (gt_git(dir, &out, "push", "-q", url, "main", NULL) != 0)
			fatalx("fed: push to %s failed: %s", domain[o],
			    out ? out : "");
		free(out);
		now = now_ms();
		snprintf(needle, sizeof(needle), "\"%s\"", oid);
		ls_at[0] = ls_at[1] = ls_at[2] = 0;
		wait_others(o, needle, at, ls_until, oid);
		push_first[k] = first_of(ls_at, o) - now;
		push_both[k] = last_of(ls_at, o) - now;
	}
	printf("fed_rounds %d rounds\n", n);
	report("event", ev_both, ev_first, n);
	report("push", push_both, push_first, n);

	for (i = 0; i < 3; i++) {
		wsc_close(pub[i]);
		wsc_close(sub[i]);
		gd_free(gd[i]);
	}
	free(ev_both);
	free(ev_first);
	free(push_both);
	free(push_first);
	return 0;
}
