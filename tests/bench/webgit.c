/*
 * webgit.c: the time relayd takes to serve its git pages
 * (relay_web_git.c) on large inputs, and its memory while it does
 * (issue 43's figures; its targets are under 50 ms each).
 *
 *   webgit
 *
 * Starts relayd on a free loopback port in a temporary directory and
 * pushes to it with the git CLI a repository whose second commit
 * rewrites the 2,500 lines of one file (a diff of 5,000 lines) and whose
 * third adds a directory of 10,000 files (made with git mktree).  Then
 * it times, over HTTP on loopback from connect to the last byte,
 * BENCH_WEBGIT_RUNS times each after one warm-up:
 *   - webgit_diff: the commit page of the 5,000-line diff (git show, its
 *     output through "head", the render);
 *   - webgit_tree: the tree page of the 10,000 entries (git cat-file,
 *     git ls-tree, the render);
 *   - webgit_diff_render: relay_web_diff() alone, in this process, on
 *     the same commit as git format-patch writes it (a patch event's
 *     content, as a patch thread renders it);
 * medians and maxima, with the page sizes, and relayd's resident memory
 * before and after and its peak (VmHWM).  Prints "name value unit"
 * lines (tests/bench/run.sh collects them).  Figures only: exits 0
 * unless something breaks (a page that is not 200 or not what was
 * asked).
 */
#include <sys/stat.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../relayd/relay_web_diff.c"
#include "buf.h"
#include "event.h"
#include "gitutil.h"
#include "log.h"
#include "nip19.h"
#include "nostr.h"
#include "relayproc.h"
#include "tdir.h"
#include "wsclient.h"

/* Ours: lines of the rewritten file (its diff has twice as many). */
#define BENCH_WEBGIT_LINES   2500
/* Ours: files of the large directory. */
#define BENCH_WEBGIT_ENTRIES 10000
/* Ours: timed requests of each page. */
#define BENCH_WEBGIT_RUNS    21
#define TMO		     30000

static struct relayproc *rp;
static char		 tmp[256], work[300];

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* A kB figure of relayd's /proc/<pid>/status ("VmRSS:", "VmHWM:"). */
static long
proc_kb(const char *field)
{
	char  path[64], line[256];
	FILE *f;
	long  kb = -1;

	snprintf(path, sizeof(path), "/proc/%ld/status",
	    (long)relayproc_pid(rp));
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, field, strlen(field)) == 0)
			kb = strtol(line + strlen(field), NULL, 10);
	fclose(f);
	return kb;
}

/* Runs a shell command line in work; 0 or -1. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
sh(const char *fmt, ...)
{
	char	cmd[2048], line[2400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	snprintf(line, sizeof(line), "cd '%s' && %s", work, cmd);
	return system(line) == 0 ? 0 : -1;
}

static int
write_lines(const char *name, const char *what)
{
	char  path[400];
	FILE *f;
	int   i;

	snprintf(path, sizeof(path), "%s/%s", work, name);
	if ((f = fopen(path, "w")) == NULL)
		return -1;
	for (i = 0; i < BENCH_WEBGIT_LINES; i++)
		fprintf(f, "line %d of the %s version <&>\n", i, what);
	return fclose(f);
}

/*
 * Times path BENCH_WEBGIT_RUNS times; median and maximum into t, the
 * page's size into *size.  -1 unless each answer is 200 holding want.
 */
static int
timed(const char *path, const char *want, double t[2], size_t *size)
{
	double v[BENCH_WEBGIT_RUNS], t0;
	char  *body;
	size_t len;
	int    i, st;

	for (i = -1; i < BENCH_WEBGIT_RUNS; i++) {
		body = NULL;
		t0 = now_ms();
		if (http_request(relayproc_host(rp), relayproc_port(rp), "GET",
			path, NULL, NULL, 0, TMO, &st, NULL, &body,
			&len) == -1 ||
		    st != 200 || strstr(body, want) == NULL) {
			fprintf(stderr, "webgit: GET %s: %d\n", path, st);
			free(body);
			return -1;
		}
		if (i >= 0)
			v[i] = now_ms() - t0;
		*size = len;
		free(body);
	}
	qsort(v, BENCH_WEBGIT_RUNS, sizeof(v[0]), cmp_double);
	t[0] = v[BENCH_WEBGIT_RUNS / 2];
	t[1] = v[BENCH_WEBGIT_RUNS - 1];
	return 0;
}

int
main(void)
{
	static const char *env[] = { "NGIT_SYNC_ENABLED=false", NULL };
	struct wsc	  *ws;
	struct buf	   b = BUF_INIT, html = BUF_INIT;
	uint8_t		   sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char		   npub[NIP19_MAX_LEN + 1], url[600], path[1024];
	char		   c2[41], c3[41], home[300], *patch = NULL;
	double		   t[2], v[BENCH_WEBGIT_RUNS], t0;
	size_t		   size, i;
	long		   rss0;

	log_init("webgit", 1);
	snprintf(tmp, sizeof(tmp), "/tmp/webgit_bench.XXXXXX");
	if (mkdtemp(tmp) == NULL)
		fatal("webgit: mkdtemp");
	snprintf(home, sizeof(home), "%s/home", tmp);
	snprintf(work, sizeof(work), "%s/work", tmp);
	if (gt_setup(home) == -1 || gt_init(work) == -1)
		fatalx("webgit: git set-up");
	if ((rp = relayproc_start("relayd", env)) == NULL)
		fatalx("webgit: relayd does not start");
	if ((ws = wsc_connect(relayproc_host(rp), relayproc_port(rp), "/",
		 TMO)) == NULL)
		fatalx("webgit: no websocket");
	memset(sk, 0, SECKEY_LEN);
	sk[0] = 0x7b;
	sk[31] = 1;
	event_pubkey_of(sk, pk);
	nip19_encode("npub", pk, npub, sizeof(npub));
	snprintf(url, sizeof(url), "http://%s/%s/bench.git",
	    relayproc_domain(rp), npub);
	buf_printf(&b,
	    "[[\"d\",\"bench\"],[\"clone\",\"%s\"],[\"relays\","
	    "\"ws://%s\"]]",
	    url, relayproc_domain(rp));
	if (nostr_publish_take(ws,
		event_new_signed(sk, time(NULL), 30617, b.b_data, ""), TMO,
		NULL, 0) != 1)
		fatalx("webgit: announcement refused");

	/* c2 rewrites every line of c1's file; c3 adds the directory. */
	if (write_lines("big.txt", "first") == -1 ||
	    sh("git add -A && git commit -qm first") == -1 ||
	    write_lines("big.txt", "second") == -1 ||
	    sh("git commit -qam 'rewrite every line'") == -1 ||
	    gt_rev(work, "HEAD", c2) == -1)
		fatalx("webgit: commits");
	if (sh("b=$(echo x | git hash-object -w --stdin) && "
	       "i=0; while [ $i -lt %d ]; do printf '100644 blob %%s\\tf%%05d\\n'"
	       " $b $i; i=$((i+1)); done > ../many.txt && "
	       "m=$(git mktree < ../many.txt) && "
	       "r=$( (git ls-tree HEAD; printf '040000 tree %%s\\tmany\\n' $m)"
	       " | git mktree) && "
	       "c=$(git commit-tree -p HEAD -m many $r) && "
	       "git update-ref refs/heads/main $c",
		BENCH_WEBGIT_ENTRIES) == -1 ||
	    gt_rev(work, "main", c3) == -1)
		fatalx("webgit: the large directory");
	if (gt_state(ws, sk, time(NULL), "bench", c3) == -1 ||
	    gt_git(work, NULL, "push", "-q", url, "main", NULL) != 0)
		fatalx("webgit: push");
	wsc_close(ws);
	relayproc_sleep_ms(500);
	rss0 = proc_kb("VmRSS:");

	snprintf(path, sizeof(path), "/%s/bench.git/commit/%s", npub, c2);
	if (timed(path, "<tr class=\"da\">", t, &size) == -1)
		fatalx("webgit: no diff page");
	printf("webgit_diff_lines %d lines\n", 2 * BENCH_WEBGIT_LINES);
	printf("webgit_diff_ms %.2f ms\n", t[0]);
	printf("webgit_diff_max_ms %.2f ms\n", t[1]);
	printf("webgit_diff_bytes %zu bytes\n", size);
	snprintf(path, sizeof(path), "/%s/bench.git/tree/main/many", npub);
	if (timed(path, "f09999", t, &size) == -1)
		fatalx("webgit: no tree page");
	printf("webgit_tree_entries %d entries\n", BENCH_WEBGIT_ENTRIES);
	printf("webgit_tree_ms %.2f ms\n", t[0]);
	printf("webgit_tree_max_ms %.2f ms\n", t[1]);
	printf("webgit_tree_bytes %zu bytes\n", size);
	printf("webgit_relayd_rss_before %ld kB\n", rss0);
	printf("webgit_relayd_rss_after %ld kB\n", proc_kb("VmRSS:"));
	printf("webgit_relayd_hwm %ld kB\n", proc_kb("VmHWM:"));

	/* The same commit as a patch event's content, rendered here. */
	if (gt_git(work, &patch, "format-patch", "--stdout", "-1", c2, NULL) !=
		0 ||
	    patch == NULL)
		fatalx("webgit: format-patch");
	for (i = 0; i < BENCH_WEBGIT_RUNS; i++) {
		buf_reset(&html);
		t0 = now_ms();
		relay_web_diff(&html, patch, strlen(patch), NULL, NULL);
		v[i] = now_ms() - t0;
	}
	qsort(v, BENCH_WEBGIT_RUNS, sizeof(v[0]), cmp_double);
	printf("webgit_diff_render_ms %.2f ms\n", v[BENCH_WEBGIT_RUNS / 2]);
	printf("webgit_diff_render_bytes %zu bytes\n", html.b_len);
	free(patch);
	buf_free(&html);
	buf_free(&b);
	relayproc_free(rp);
	tdir_remove(tmp);
	return 0;
}
