/*
 * gitserve.c: the git serving benchmark's tool, run by tests/bench/git.sh
 * (a test tool, not a daemon).
 *
 *   gitserve gen DIR COMMITS MIB
 *	makes the bare repository DIR with git fast-import: COMMITS commits
 *	on main, each writing one file of random bytes from a fixed-seed
 *	generator (so the pack does not compress below MIB MiB and the same
 *	arguments give the same repository), and refs/heads/base naming
 *	main~BENCH_GIT_TAIL, what the fetch clients already have.
 *   gitserve announce HOST PORT D OID
 *	publishes the announcement of repository D by the benchmark's owner
 *	key and a state naming OID as main; prints the clone URL.
 *   gitserve pushes HOST PORT D DIR N
 *	in the work tree DIR (a clone of the repository), N times: commits
 *	a small change, publishes a state naming it, pushes main.
 *   gitserve load NAME N PIDS -- ARGV...
 *	runs N copies of ARGV at once ("%d" in an argument becomes the
 *	copy's number) and times each; meanwhile samples the memory of the
 *	server processes: the processes of PIDS (a comma-separated list)
 *	and all their descendants.  Prints NAME_total_s, NAME_p50_s,
 *	NAME_p99_s, NAME_cpu_s (user and system time those processes took
 *	during the run, sampled every 20 ms) and NAME_peak_pss_mb (the
 *	largest sum of their proportional set sizes, every 100 ms).
 *   gitserve metric HOST PORT NAME MIN MS
 *	waits at most MS until /metrics has NAME at MIN or more.
 *
 * Figures go to stdout as "figure value unit" lines.  Only loopback
 * hosts are accepted.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "buf.h"
#include "event.h"
#include "gitutil.h"
#include "log.h"
#include "nip19.h"
#include "nostr.h"
#include "tunit_rng.h"
#include "wsclient.h"

/* Commits the fetch clients lack (the "last 100 commits"). */
#define BENCH_GIT_TAIL	    100
/* Files the commits write in turn, so trees stay small. */
#define BENCH_GIT_FILES	    256
/* Server processes followed at once. */
#define BENCH_GIT_MAXPROCS  4096
/* CPU sampling period, and memory's in periods (PSS is costlier). */
#define BENCH_GIT_SAMPLE_US 20000
#define BENCH_GIT_PSS_EVERY 5
/* What one git command may take here (a 100 MB clone on a busy machine). */
#define BENCH_GIT_MS	    (15 * 60 * 1000)

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr,
	    "usage: gitserve gen DIR COMMITS MIB\n"
	    "       gitserve announce HOST PORT D OID\n"
	    "       gitserve pushes HOST PORT D DIR N\n"
	    "       gitserve load NAME N PIDS -- ARGV...\n"
	    "       gitserve metric HOST PORT NAME MIN MS\n");
	exit(2);
}

static int
cmd_gen(int argc, char **argv)
{
	static uint64_t block[8192];
	const char     *dir;
	char		cmd[1200];
	uint64_t	seed = 44, len, k;
	long		n, mib, i;
	double		t0 = bench_now_s();
	FILE	       *f;

	if (argc != 4)
		usage();
	dir = argv[1];
	n = atol(argv[2]);
	mib = atol(argv[3]);
	if (n <= BENCH_GIT_TAIL || mib <= 0)
		usage();
	/* Blob bytes per commit, a little under MiB * 2^20 / n: the trees
	 * and commits fill the rest. */
	len = (uint64_t)mib * 1024 * 1024 / (uint64_t)n;
	len = len > 600 ? len - 600 : len;
	if (len > sizeof(block))
		len = sizeof(block);
	if (gt_git(NULL, NULL, "init", "-q", "--bare", "-b", "main", dir,
		NULL) != 0)
		return 1;
	snprintf(cmd, sizeof(cmd), "cd '%s' && git fast-import --quiet", dir);
	if ((f = popen(cmd, "w")) == NULL)
		return 1;
	for (i = 0; i < n; i++) {
		for (k = 0; k < (len + 7) / 8; k++)
			block[k] = tunit_rng_next(&seed);
		fprintf(f, "blob\nmark :1\ndata %llu\n",
		    (unsigned long long)len);
		fwrite(block, 1, len, f);
		fprintf(f,
		    "\ncommit refs/heads/main\n"
		    "committer bench <bench@graspd.invalid> %ld +0000\n"
		    "data <<EOF\nbench commit %ld\nEOF\n"
		    "M 100644 :1 d%02ld/f%03ld.bin\n\n",
		    1700000000 + i, i, i % 16, i % BENCH_GIT_FILES);
		if (i == n - 1 - BENCH_GIT_TAIL)
			fprintf(f,
			    "reset refs/heads/base\nfrom refs/heads/main"
			    "\n\n");
	}
	if (pclose(f) != 0)
		return 1;
	printf("gen_commits %ld commits\n", n);
	printf("gen_seconds %.3f s\n", bench_now_s() - t0);
	return 0;
}

static void
owner_key(uint8_t sk[SECKEY_LEN], uint8_t pk[PUBKEY_LEN])
{
	memset(sk, 0x44, SECKEY_LEN);
	if (event_pubkey_of(sk, pk) == -1)
		fatalx("gitserve: cannot derive the owner's key");
}

static struct wsc *
connect_relay(const char *host, int port)
{
	struct wsc *ws;

	bench_loopback_only("gitserve", host);
	if ((ws = wsc_connect(host, port, "/", 10000)) == NULL)
		fatalx("gitserve: cannot connect to %s:%d", host, port);
	return ws;
}

static int
cmd_announce(int argc, char **argv)
{
	struct buf    t = BUF_INIT;
	struct event *ann;
	struct wsc   *ws;
	uint8_t	      sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char	      domain[300], url[600], msg[256];
	int	      port;

	if (argc != 5)
		usage();
	port = atoi(argv[2]);
	owner_key(sk, pk);
	ws = connect_relay(argv[1], port);
	snprintf(domain, sizeof(domain), "%s:%d", argv[1], port);
	gt_url(url, sizeof(url), domain, pk, argv[3]);
	buf_printf(&t,
	    "[[\"d\",\"%s\"],[\"name\",\"%s\"],[\"clone\",\"%s\"],"
	    "[\"relays\",\"ws://%s\"]]",
	    argv[3], argv[3], url, domain);
	if ((ann = event_new_signed(sk, time(NULL) - 10, 30617, t.b_data,
		 "")) == NULL)
		fatalx("gitserve: cannot sign the announcement");
	if (nostr_publish_take(ws, ann, 10000, msg, sizeof(msg)) != 1 ||
	    gt_state(ws, sk, time(NULL) - 5, argv[3], argv[4]) != 0) {
		fprintf(stderr, "gitserve: announcement refused: %s\n", msg);
		return 1;
	}
	wsc_close(ws);
	buf_free(&t);
	printf("%s\n", url);
	return 0;
}

static int
cmd_pushes(int argc, char **argv)
{
	struct wsc *ws;
	uint8_t	    sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char	    domain[300], url[600], oid[41], body[64], *out = NULL;
	long	    n, i;
	int	    port;
	int64_t	    at;
	double	    t0 = bench_now_s();

	if (argc != 6)
		usage();
	port = atoi(argv[2]);
	n = atol(argv[5]);
	owner_key(sk, pk);
	ws = connect_relay(argv[1], port);
	snprintf(domain, sizeof(domain), "%s:%d", argv[1], port);
	gt_url(url, sizeof(url), domain, pk, argv[3]);
	/* Each state needs a created_at newer than the last one's. */
	at = (int64_t)time(NULL) - n - 10;
	for (i = 0; i < n; i++) {
		snprintf(body, sizeof(body), "push %ld\n", i);
		if (gt_commit(argv[4], "pushes.txt", body, body, oid) == -1 ||
		    gt_state(ws, sk, at + i, argv[3], oid) != 0 ||
		    gt_git(argv[4], &out, "push", "-q", url, "main", NULL) !=
			0) {
			fprintf(stderr, "gitserve: push %ld failed: %s\n", i,
			    out ? out : "");
			return 1;
		}
		free(out);
		out = NULL;
	}
	wsc_close(ws);
	printf("pushes_n %ld pushes\n", n);
	printf("pushes_seconds %.3f s\n", bench_now_s() - t0);
	return 0;
}

/* The server tree: the roots and every process whose parent is in it. */
struct tree {
	pid_t p[BENCH_GIT_MAXPROCS];
	int   n;
};

static int
proc_stat(pid_t pid, pid_t *ppid, unsigned long long *ticks)
{
	char		   path[64], line[2048], *s;
	unsigned long long ut, st;
	int		   pp;
	FILE		  *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	s = fgets(line, sizeof(line), f);
	fclose(f);
	if (s == NULL || (s = strrchr(line, ')')) == NULL)
		return -1;
	/* Fields 4 (ppid), 14 and 15 (utime, stime). */
	if (sscanf(s + 2,
		"%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &pp,
		&ut, &st) != 3)
		return -1;
	*ppid = pp;
	*ticks = ut + st;
	return 0;
}

/* Fills t with the roots and their descendants now. */
static void
tree_scan(struct tree *t, const pid_t *roots, int nroots)
{
	static pid_t	   pids[BENCH_GIT_MAXPROCS], ppids[BENCH_GIT_MAXPROCS];
	struct dirent	  *de;
	DIR		  *d;
	int		   n = 0, i, j, grew;
	unsigned long long tk;

	t->n = 0;
	for (i = 0; i < nroots; i++)
		t->p[t->n++] = roots[i];
	if ((d = opendir("/proc")) == NULL)
		return;
	while ((de = readdir(d)) != NULL && n < BENCH_GIT_MAXPROCS)
		if (de->d_name[0] >= '1' && de->d_name[0] <= '9' &&
		    proc_stat(atoi(de->d_name), &ppids[n], &tk) == 0)
			pids[n++] = atoi(de->d_name);
	closedir(d);
	do {
		grew = 0;
		for (i = 0; i < n; i++) {
			if (pids[i] == 0)
				continue;
			for (j = 0; j < t->n; j++)
				if (ppids[i] == t->p[j])
					break;
			if (j < t->n && t->n < BENCH_GIT_MAXPROCS) {
				t->p[t->n++] = pids[i];
				pids[i] = 0;
				grew = 1;
			}
		}
	} while (grew);
}

/*
 * The CPU of every process of the tree seen during a run: its own user
 * and system time when first and last seen.  Sampled, not read from the
 * parents' cutime: fcgiwrap ignores SIGCHLD, so the time of its children
 * reaches no parent; the last sampling period of each process is missed,
 * the same way for both servers.
 */
struct ledger {
	pid_t		   l_pid[BENCH_GIT_MAXPROCS];
	char		   l_comm[BENCH_GIT_MAXPROCS][16];
	unsigned long long l_first[BENCH_GIT_MAXPROCS];
	unsigned long long l_last[BENCH_GIT_MAXPROCS];
	int		   l_n;
};

/* The process's name, letters and digits only ("githttpbacken"). */
static void
proc_comm(pid_t pid, char out[16])
{
	char  path[64], line[64];
	int   i, k = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	out[0] = '\0';
	if ((f = fopen(path, "r")) == NULL)
		return;
	if (fgets(line, sizeof(line), f) != NULL)
		for (i = 0; line[i] != '\0' && k < 15; i++)
			if ((line[i] >= 'a' && line[i] <= 'z') ||
			    (line[i] >= '0' && line[i] <= '9'))
				out[k++] = line[i];
	out[k] = '\0';
	fclose(f);
}

/* Prints NAME_proc_COMM_cpu_s for each process name in l. */
static void
ledger_print(const struct ledger *l, const char *name, long hz)
{
	unsigned long long sum;
	int		   i, j, seen;

	for (i = 0; i < l->l_n; i++) {
		for (seen = 0, j = 0; j < i && !seen; j++)
			seen = strcmp(l->l_comm[j], l->l_comm[i]) == 0;
		if (seen || l->l_comm[i][0] == '\0')
			continue;
		for (sum = 0, j = i; j < l->l_n; j++)
			if (strcmp(l->l_comm[j], l->l_comm[i]) == 0)
				sum += l->l_last[j] - l->l_first[j];
		printf("%s_proc_%s_cpu_s %.2f s\n", name, l->l_comm[i],
		    (double)sum / (double)hz);
	}
}

static void
ledger_sample(struct ledger *l, const struct tree *t, int at_start)
{
	unsigned long long tk;
	pid_t		   pp;
	int		   i, j;

	for (i = 0; i < t->n; i++) {
		if (proc_stat(t->p[i], &pp, &tk) == -1)
			continue;
		for (j = 0; j < l->l_n && l->l_pid[j] != t->p[i]; j++)
			;
		if (j == l->l_n) {
			if (j == BENCH_GIT_MAXPROCS)
				continue;
			l->l_pid[j] = t->p[i];
			l->l_first[j] = at_start ? tk : 0;
			proc_comm(t->p[i], l->l_comm[j]);
			l->l_n++;
		}
		l->l_last[j] = tk;
	}
}

static unsigned long long
ledger_ticks(const struct ledger *l)
{
	unsigned long long sum = 0;
	int		   i;

	for (i = 0; i < l->l_n; i++)
		sum += l->l_last[i] - l->l_first[i];
	return sum;
}

static long
tree_pss_kb(const struct tree *t)
{
	char  path[64], line[256];
	long  sum = 0, v;
	int   i;
	FILE *f;

	for (i = 0; i < t->n; i++) {
		snprintf(path, sizeof(path), "/proc/%d/smaps_rollup",
		    (int)t->p[i]);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		while (fgets(line, sizeof(line), f) != NULL)
			if (sscanf(line, "Pss: %ld", &v) == 1) {
				sum += v;
				break;
			}
		fclose(f);
	}
	return sum;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int
cmd_load(int argc, char **argv)
{
	static struct tree   now;
	static struct ledger cpu;
	pid_t		     roots[64], kids[256], pid;
	double		     t0, start[256], took[256];
	char		   **args, num[16], *s, *copy;
	long		     peak = 0, v, hz = sysconf(_SC_CLK_TCK);
	int		     n, nroots = 0, i, k, left, st, bad = 0, nargs;

	if (argc < 6 || strcmp(argv[4], "--") != 0)
		usage();
	n = atoi(argv[2]);
	if (n < 1 || n > 256)
		usage();
	if ((copy = strdup(argv[3])) == NULL)
		fatal("gitserve");
	for (s = strtok(copy, ","); s != NULL && nroots < 64;
	     s = strtok(NULL, ","))
		roots[nroots++] = atoi(s);
	free(copy);
	nargs = argc - 5;
	tree_scan(&now, roots, nroots);
	ledger_sample(&cpu, &now, 1);
	t0 = bench_now_s();
	for (i = 0; i < n; i++) {
		start[i] = bench_now_s();
		if ((kids[i] = fork()) == -1)
			fatal("fork");
		if (kids[i] == 0) {
			if ((args = calloc((size_t)nargs + 1, sizeof(*args))) ==
			    NULL)
				_exit(127);
			snprintf(num, sizeof(num), "%d", i);
			for (k = 0; k < nargs; k++) {
				const char *a = argv[5 + k];
				char	   *p = strstr(a, "%d");

				if (p == NULL) {
					args[k] = (char *)a;
					continue;
				}
				if ((args[k] = malloc(strlen(a) + 16)) == NULL)
					_exit(127);
				snprintf(args[k], strlen(a) + 16, "%.*s%s%s",
				    (int)(p - a), a, num, p + 2);
			}
			execvp(args[0], args);
			_exit(127);
		}
	}
	for (left = n, k = 0; left > 0; k++) {
		tree_scan(&now, roots, nroots);
		ledger_sample(&cpu, &now, 0);
		if (k % BENCH_GIT_PSS_EVERY == 0 &&
		    (v = tree_pss_kb(&now)) > peak)
			peak = v;
		while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
			for (i = 0; i < n; i++)
				if (kids[i] == pid) {
					took[i] = bench_now_s() - start[i];
					if (!WIFEXITED(st) ||
					    WEXITSTATUS(st) != 0)
						bad++;
					left--;
				}
		if ((bench_now_s() - t0) * 1000 > BENCH_GIT_MS) {
			fprintf(stderr, "gitserve: %s: still running\n",
			    argv[1]);
			for (i = 0; i < n; i++)
				kill(kids[i], SIGKILL);
			return 1;
		}
		if (left > 0)
			usleep(BENCH_GIT_SAMPLE_US);
	}
	v = (long)((bench_now_s() - t0) * 1000);
	/* What the servers still do once the clients are gone. */
	usleep(300000);
	tree_scan(&now, roots, nroots);
	ledger_sample(&cpu, &now, 0);
	if (bad > 0) {
		fprintf(stderr, "gitserve: %s: %d of %d failed\n", argv[1], bad,
		    n);
		return 1;
	}
	qsort(took, (size_t)n, sizeof(took[0]), cmp_double);
	printf("%s_total_s %.3f s\n", argv[1], (double)v / 1000);
	printf("%s_p50_s %.3f s\n", argv[1], took[(n - 1) / 2]);
	printf("%s_p99_s %.3f s\n", argv[1], took[(int)((n - 1) * 0.99 + 0.5)]);
	printf("%s_cpu_s %.2f s\n", argv[1],
	    (double)ledger_ticks(&cpu) / (double)hz);
	ledger_print(&cpu, argv[1], hz);
	printf("%s_peak_pss_mb %.1f MB\n", argv[1], (double)peak / 1024);
	return 0;
}

static int
cmd_metric(int argc, char **argv)
{
	char   cmd[600], line[512];
	double min, v, t0 = bench_now_s();
	long   ms;
	size_t nl;
	FILE  *f;

	if (argc != 6)
		usage();
	bench_loopback_only("gitserve", argv[1]);
	nl = strlen(argv[3]);
	min = atof(argv[4]);
	ms = atol(argv[5]);
	snprintf(cmd, sizeof(cmd), "curl -s http://%s:%s/metrics", argv[1],
	    argv[2]);
	while ((bench_now_s() - t0) * 1000 < ms) {
		if ((f = popen(cmd, "r")) != NULL) {
			v = -1;
			while (fgets(line, sizeof(line), f) != NULL)
				if (strncmp(line, argv[3], nl) == 0 &&
				    line[nl] == ' ')
					v = atof(line + nl + 1);
			pclose(f);
			if (v >= min) {
				printf("%s %g\n", argv[3], v);
				return 0;
			}
		}
		usleep(200000);
	}
	fprintf(stderr, "gitserve: %s not at %s after %ld ms\n", argv[3],
	    argv[4], ms);
	return 1;
}

int
main(int argc, char **argv)
{
	log_init("gitserve", 1);
	if (argc < 2)
		usage();
	if (getenv("HOME") != NULL) {
		char home[600];

		snprintf(home, sizeof(home), "%s", getenv("HOME"));
		if (gt_setup(home) == -1)
			fatalx("gitserve: cannot set up git");
	}
	gt_timeout_ms = BENCH_GIT_MS;
	if (strcmp(argv[1], "gen") == 0)
		return cmd_gen(argc - 1, argv + 1);
	if (strcmp(argv[1], "announce") == 0)
		return cmd_announce(argc - 1, argv + 1);
	if (strcmp(argv[1], "pushes") == 0)
		return cmd_pushes(argc - 1, argv + 1);
	if (strcmp(argv[1], "load") == 0)
		return cmd_load(argc - 1, argv + 1);
	if (strcmp(argv[1], "metric") == 0)
		return cmd_metric(argc - 1, argv + 1);
	usage();
}
