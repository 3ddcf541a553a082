/*
 * scale.c: syncd with many hosted repositories and many remote relays
 * (issue #44 item 5), run by tests/bench/run.sh.
 *
 *   scale [REPOS]
 *
 * Starts BENCH_SCALE_PEERS (100) test peers (tests/peer, NIP-77 on, as
 * GRASP relays speak it) on loopback, and a full graspd with production
 * timing (NGIT_TEST off) and NGIT_SYNC_ALLOW_PRIVATE_TARGETS, so that
 * loopback relays are targets.  Stops it and writes straight into its
 * database (common/store.c, unsigned events as web.c does) REPOS
 * (BENCH_SCALE_REPOS, 10,000) announcements, each listing graspd and
 * BENCH_SCALE_PER_REPO (3) of the peers in its relays and clone tags
 * (peers i, i+1, i+2 mod the count: every peer in 3 x REPOS / PEERS
 * repositories), each with a state event and BENCH_SCALE_ISSUES (2)
 * issues.  Then starts graspd again and waits until every peer holds a
 * live subscription and no peer got a REQ or NEG-OPEN for
 * SCALE_QUIET_MS.  Figures:
 *   - scale_live_ms: from the start to the last live subscription that
 *     is still open being opened (the peers' clocks: CLOCK_MONOTONIC);
 *     scale_quiet_ms: to the last REQ or NEG-OPEN (the history fetched);
 *   - scale_syncd_sockets: syncd's TCP connections to the peers (its
 *     socket inodes in /proc/net/tcp), scale_peer_conns_open: the
 *     websocket connections the peers hold from all of graspd;
 *   - scale_live_subs_{min,median,max}: live subscriptions open per
 *     relay, scale_subs_open: all subscriptions open at the peers,
 *     scale_reqs_per_relay / scale_negs_per_relay: REQs and NEG-OPENs
 *     each got during the start (medians), scale_rotating_filters:
 *     filters syncd polls because they did not fit live;
 *   - scale_syncd_{rss,pss,private}: syncd's memory, settled;
 *     scale_syncd_cpu_ms: its CPU from the start until settled;
 *   - adding one repository (announcement, state, push through graspd,
 *     listing 3 of the peers): scale_add_req_ms, from the push's end to
 *     the first REQ or NEG-OPEN naming its coordinate at one of them,
 *     scale_add_all_ms to the last of the three, and
 *     scale_add_syncd_cpu_ms, syncd's CPU for it (until quiet again),
 *     with scale_add_reconciles, the passes it ran meanwhile.
 * Prints "name value unit" lines.  Figures only: exits 0 unless
 * something breaks or does not settle within SCALE_SETTLE_MS.
 */
#include <sys/types.h>

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "ctl.h"
#include "event.h"
#include "gdproc.h"
#include "gitutil.h"
#include "log.h"
#include "peerctl.h"
#include "relayproc.h"
#include "store.h"
#include "tstore.h"
#include "wsclient.h"

/* Ours: the default sizes (issue #44: 10,000 repositories, 100 relays). */
#define SCALE_REPOS	10000
#define SCALE_PEERS	100
#define SCALE_PER_REPO	3
#define SCALE_ISSUES	2
#define SCALE_MAX_PEERS 1000
/* Ours: events per write transaction while generating. */
#define SCALE_TXN	20000
/* Ours: no REQ nor NEG-OPEN at any peer this long: settled. */
#define SCALE_QUIET_MS	5000
/* Ours: the peers are asked this often while waiting. */
#define SCALE_POLL_MS	500
/* Ours: how long the start and the addition may take to settle. */
#define SCALE_SETTLE_MS 240000
#define SCALE_HTTP_MS	10000
/* The new repository's identifier. */
#define SCALE_NEW_D	"scale-added"

struct peer_stats {
	long	connections, open, subs, live, reqs, negs;
	int64_t live_last_ms, last_ms;
};

static struct relayproc **peers;
static int		  npeers;

static int
env_int(const char *name, int def, int min, int max)
{
	const char *s = getenv(name);
	int	    v;

	if (s == NULL || *s == '\0')
		return def;
	v = atoi(s);
	if (v < min || v > max)
		fatalx("scale: %s must be %d to %d", name, min, max);
	return v;
}

static void
put(struct store *st, size_t *intxn, const char *pk, uint32_t kind, int64_t at,
    const char *tags, char *id_hex)
{
	struct event	 *ev = tstore_unsigned_event(pk, at, kind, tags, "");
	enum store_result r;

	if (*intxn == 0 && store_begin(st) == -1)
		fatalx("scale: cannot begin a transaction");
	if ((r = store_put(st, ev, NULL)) != STORE_OK)
		fatalx("scale: event not stored: %s", store_result_message(r));
	if (++*intxn == SCALE_TXN) {
		if (store_commit(st) == -1)
			fatalx("scale: commit failed");
		*intxn = 0;
	}
	if (id_hex != NULL)
		memcpy(id_hex, ev->id_hex, EVENT_ID_HEX_LEN + 1);
	event_destroy(ev);
}

/* REPOS announcements, states and issues into the store at path. */
static void
generate(const char *path, const char *domain, int nrepos, int per_repo,
    int issues)
{
	struct store *st;
	struct buf    t = BUF_INIT;
	char	      pk[PUBKEY_HEX_LEN + 1], err[256];
	size_t	      intxn = 0;
	int64_t	      at = (int64_t)time(NULL) - 10 * 86400;
	int	      i, k;

	if ((st = store_open(path, 0, err, sizeof(err))) == NULL)
		fatalx("scale: %s", err);
	for (i = 0; i < nrepos; i++) {
		tstore_fake_pubkey(0x5c, (uint32_t)i, pk);
		buf_reset(&t);
		buf_printf(&t,
		    "[[\"d\",\"repo%d\"],[\"name\",\"Repository %d\"],"
		    "[\"clone\",\"http://%s/x/repo%d.git\"",
		    i, i, domain, i);
		for (k = 0; k < per_repo; k++)
			buf_printf(&t, ",\"http://%s/x/repo%d.git\"",
			    relayproc_domain(peers[(i + k) % npeers]), i);
		buf_printf(&t, "],[\"relays\",\"ws://%s\"", domain);
		for (k = 0; k < per_repo; k++)
			buf_printf(&t, ",\"%s\"",
			    relayproc_url(peers[(i + k) % npeers]));
		buf_adds(&t, "]]");
		put(st, &intxn, pk, 30617, at + i, t.b_data, NULL);
		buf_reset(&t);
		buf_printf(&t,
		    "[[\"d\",\"repo%d\"],[\"refs/heads/main\",\"%040d\"],"
		    "[\"HEAD\",\"ref: refs/heads/main\"]]",
		    i, i);
		put(st, &intxn, pk, 30618, at + i, t.b_data, NULL);
	}
	for (i = 0; i < nrepos * issues; i++) {
		char owner[PUBKEY_HEX_LEN + 1];

		tstore_fake_pubkey(0x5c, (uint32_t)(i % nrepos), owner);
		tstore_fake_pubkey(0x6d, (uint32_t)(i % 997), pk);
		buf_reset(&t);
		buf_printf(&t,
		    "[[\"a\",\"30617:%s:repo%d\"],[\"subject\",\"issue %d\"]]",
		    owner, i % nrepos, i);
		put(st, &intxn, pk, 1621, at + nrepos + i, t.b_data, NULL);
	}
	if (intxn > 0 && store_commit(st) == -1)
		fatalx("scale: commit failed");
	store_close(st);
	buf_free(&t);
}

static int
peer_stats(struct relayproc *p, struct peer_stats *s)
{
	char  *body = NULL;
	cJSON *j;
	int    status = 0;

	if (http_get(relayproc_host(p), relayproc_port(p), "/stats", NULL,
		SCALE_HTTP_MS, &status, NULL, &body) == -1 ||
	    status != 200 || (j = cJSON_Parse(body)) == NULL) {
		free(body);
		return -1;
	}
	free(body);
	s->connections = (long)ctl_num(j, "connections");
	s->open = (long)ctl_num(j, "open");
	s->subs = (long)ctl_num(j, "subs");
	s->live = (long)ctl_num(j, "live");
	s->reqs = (long)ctl_num(j, "reqs");
	s->negs = (long)ctl_num(j, "negs");
	s->live_last_ms = (int64_t)ctl_num(j, "live_last_ms");
	s->last_ms = (int64_t)ctl_num(j, "last_ms");
	cJSON_Delete(j);
	return 0;
}

static void
all_stats(struct peer_stats *s)
{
	int i;

	for (i = 0; i < npeers; i++)
		if (peer_stats(peers[i], &s[i]) == -1)
			fatalx("scale: peer %d does not answer /stats", i);
}

/*
 * Waits until every peer holds a live subscription (when need_live), some
 * peer got a REQ or NEG-OPEN after after_ms, and none got one for
 * SCALE_QUIET_MS; the stats then in s.
 */
static void
settle(struct peer_stats *s, int need_live, int64_t after_ms, const char *what)
{
	int64_t start = wsc_now_ms(), last = 0, now;
	int	i, live;

	for (;;) {
		all_stats(s);
		now = wsc_now_ms();
		for (i = 0, live = 1; i < npeers; i++) {
			live &= s[i].live > 0;
			if (s[i].last_ms > last)
				last = s[i].last_ms;
		}
		if ((live || !need_live) && last > after_ms &&
		    now - last >= SCALE_QUIET_MS)
			return;
		if (now - start > SCALE_SETTLE_MS)
			fatalx("scale: %s not settled after %d s", what,
			    SCALE_SETTLE_MS / 1000);
		relayproc_sleep_ms(SCALE_POLL_MS);
	}
}

static long
syncd_pid(struct gdproc *g)
{
	char states[GD_NROLES][16];
	long pids[GD_NROLES];

	if (gd_roles_now(g, states, pids) == -1)
		fatalx("scale: graspctl status failed");
	return pids[gd_role_index("syncd")];
}

/* Nanoseconds pid has run (its main thread: syncd has no other). */
static double
cpu_ms(long pid)
{
	char		   path[64];
	unsigned long long ns = 0;
	FILE		  *f;

	snprintf(path, sizeof(path), "/proc/%ld/schedstat", pid);
	if ((f = fopen(path, "r")) == NULL || fscanf(f, "%llu", &ns) != 1)
		fatalx("scale: cannot read %s", path);
	fclose(f);
	return (double)ns / 1e6;
}

/* A kB field of /proc/pid/smaps_rollup ("Rss", "Pss", "Private_Dirty"). */
static long
rollup_kb(long pid, const char *field)
{
	char   path[64], line[256];
	long   kb = 0, v;
	size_t n = strlen(field);
	FILE  *f;

	snprintf(path, sizeof(path), "/proc/%ld/smaps_rollup", pid);
	if ((f = fopen(path, "r")) == NULL)
		fatalx("scale: cannot read %s", path);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, field, n) == 0 && line[n] == ':' &&
		    sscanf(line + n + 1, "%ld", &v) == 1)
			kb += v;
	fclose(f);
	return kb;
}

static int
is_peer_port(int port)
{
	int i;

	for (i = 0; i < npeers; i++)
		if (relayproc_port(peers[i]) == port)
			return 1;
	return 0;
}

/* pid's established TCP connections to a peer's port. */
static int
sockets_to_peers(long pid)
{
	char	       path[PATH_MAX], link[128], line[512];
	unsigned long *inodes = NULL, ino;
	size_t	       n = 0, cap = 0, i;
	struct dirent *de;
	DIR	      *d;
	FILE	      *f;
	unsigned       rport, st;
	int	       count = 0;
	ssize_t	       len;

	snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
	if ((d = opendir(path)) == NULL)
		fatalx("scale: cannot list %s", path);
	while ((de = readdir(d)) != NULL) {
		snprintf(path, sizeof(path), "/proc/%ld/fd/%s", pid,
		    de->d_name);
		if ((len = readlink(path, link, sizeof(link) - 1)) <= 0)
			continue;
		link[len] = '\0';
		if (sscanf(link, "socket:[%lu]", &ino) != 1)
			continue;
		if (n == cap &&
		    (inodes = reallocarray(inodes, cap = cap ? 2 * cap : 64,
			 sizeof(*inodes))) == NULL)
			fatal("scale");
		inodes[n++] = ino;
	}
	closedir(d);
	if ((f = fopen("/proc/net/tcp", "r")) == NULL)
		fatalx("scale: cannot read /proc/net/tcp");
	while (fgets(line, sizeof(line), f) != NULL) {
		/* sl local rem:port st tx:rx tr:when retrnsmt uid timeout
		 * inode */
		if (sscanf(line, " %*s %*s %*x:%x %x %*s %*s %*s %*s %*s %lu",
			&rport, &st, &ino) != 3 ||
		    st != 1 || !is_peer_port((int)rport))
			continue;
		for (i = 0; i < n; i++)
			if (inodes[i] == ino) {
				count++;
				break;
			}
	}
	fclose(f);
	free(inodes);
	return count;
}

static int
cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

/* The median of v[0..n) (sorts it). */
static long
median(long *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_long);
	return v[n / 2];
}

/* The sum of "rotating_filters" of syncd's relays (graspctl show). */
static long
rotating(struct gdproc *g, long *tracked)
{
	const char *bin = getenv("GRASPD_BIN");
	char	    cmd[PATH_MAX + 128], *out = NULL;
	cJSON	   *j, *arr, *o;
	long	    sum = 0;

	snprintf(cmd, sizeof(cmd), "'%s/graspctl' -j -r '%s/run' show syncd",
	    bin && *bin ? bin : "bin", gd_dir(g));
	*tracked = -1;
	if (ctl_run(cmd, &out) != 0 || (j = cJSON_Parse(out)) == NULL) {
		free(out);
		return -1;
	}
	free(out);
	arr = ctl_view_list(j, "relays");
	*tracked = cJSON_GetArraySize(arr);
	cJSON_ArrayForEach(o, arr)
		sum += (long)ctl_num(o, "rotating_filters");
	cJSON_Delete(j);
	return sum;
}

/* When peer p first got a REQ or NEG-OPEN after since naming s; 0: not. */
static int64_t
first_mention(struct relayproc *p, int64_t since, const char *s)
{
	cJSON	   *log, *e;
	const char *lists[] = { "reqs", "negs" };
	int64_t	    first = 0, at;
	size_t	    i;
	char	   *txt;

	if ((log = peerctl_log(p)) == NULL)
		fatalx("scale: no peer log");
	for (i = 0; i < 2; i++) {
		cJSON_ArrayForEach(e, cJSON_GetObjectItem(log, lists[i])) {
			at = (int64_t)ctl_num(e, "at_ms");
			if (at < since || (first && at >= first))
				continue;
			if ((txt = cJSON_PrintUnformatted(e)) == NULL)
				fatal("scale");
			if (strstr(txt, s) != NULL)
				first = at;
			free(txt);
		}
	}
	cJSON_Delete(log);
	return first;
}

int
main(int argc, char *argv[])
{
	static const char *env[] = { "NGIT_TEST=false",
		"NGIT_SYNC_ALLOW_PRIVATE_TARGETS=true", NULL };
	struct peer_stats *s;
	struct gdproc	  *g;
	struct buf	   extra = BUF_INIT;
	struct event	  *ann;
	uint8_t		   sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char		   domain[64], home[PATH_MAX], oid[41], coord[128];
	char		   hex[65];
	long		  *v, sp, tracked, rot;
	int64_t t0, live_last = 0, last = 0, ta, tb, m, first = 0, last_add = 0;
	double	c0, c1, r0, r1;
	int	nrepos, per_repo, issues, i, k;

	log_init("scale", 1);
	nrepos = argc > 1 ?
	    atoi(argv[1]) :
	    env_int("BENCH_SCALE_REPOS", SCALE_REPOS, 1, 1000000);
	if (nrepos < 1 || nrepos > 1000000)
		fatalx("scale: REPOS must be 1 to 1000000");
	npeers = env_int("BENCH_SCALE_PEERS", SCALE_PEERS, 3, SCALE_MAX_PEERS);
	per_repo = env_int("BENCH_SCALE_PER_REPO", SCALE_PER_REPO, 1,
	    npeers < 16 ? npeers : 16);
	issues = env_int("BENCH_SCALE_ISSUES", SCALE_ISSUES, 0, 100);

	if ((peers = calloc((size_t)npeers, sizeof(*peers))) == NULL ||
	    (s = calloc((size_t)npeers, sizeof(*s))) == NULL ||
	    (v = calloc((size_t)npeers, sizeof(*v))) == NULL)
		fatal("scale");
	for (i = 0; i < npeers; i++)
		if ((peers[i] = relayproc_start_peer(NULL)) == NULL ||
		    peerctl_config(peers[i], "{\"neg\":true}") == -1)
			fatalx("scale: peer %d does not start", i);
	if ((g = gd_start(env)) == NULL)
		fatalx("scale: graspd does not start");
	snprintf(home, sizeof(home), "%s/home", gd_dir(g));
	if (gt_setup(home) == -1)
		fatalx("scale: git setup failed");
	snprintf(domain, sizeof(domain), "127.0.0.1:%d", gd_port(g));
	gd_kill_group(g);
	t0 = wsc_now_ms();
	generate(gd_db_path(g), domain, nrepos, per_repo, issues);
	printf("scale_fill_seconds %.1f s\n",
	    (double)(wsc_now_ms() - t0) / 1e3);
	printf("scale_repos %d repositories\n", nrepos);
	printf("scale_relays %d relays\n", npeers);
	printf("scale_relays_per_repo %d relays\n", per_repo);
	printf("scale_issues %d events\n", nrepos * issues);

	t0 = wsc_now_ms();
	if (gd_restart(g) == -1)
		fatalx("scale: graspd does not start on the store");
	sp = syncd_pid(g);
	settle(s, 1, t0, "the start");
	c0 = cpu_ms(sp);
	for (i = 0; i < npeers; i++) {
		if (s[i].live_last_ms > live_last)
			live_last = s[i].live_last_ms;
		if (s[i].last_ms > last)
			last = s[i].last_ms;
	}
	printf("scale_live_ms %lld ms\n", (long long)(live_last - t0));
	printf("scale_quiet_ms %lld ms\n", (long long)(last - t0));
	printf("scale_syncd_cpu_ms %.0f ms\n", c0);
	printf("scale_syncd_sockets %d sockets\n", sockets_to_peers(sp));
	for (i = 0, k = 0; i < npeers; i++)
		k += (int)s[i].open;
	printf("scale_peer_conns_open %d connections\n", k);
	for (i = 0; i < npeers; i++)
		v[i] = s[i].live;
	printf("scale_live_subs_min %ld subscriptions\n",
	    (median(v, npeers), v[0]));
	printf("scale_live_subs_median %ld subscriptions\n", v[npeers / 2]);
	printf("scale_live_subs_max %ld subscriptions\n", v[npeers - 1]);
	for (i = 0, k = 0; i < npeers; i++)
		k += (int)s[i].subs;
	printf("scale_subs_open %d subscriptions\n", k);
	for (i = 0; i < npeers; i++)
		v[i] = s[i].reqs;
	printf("scale_reqs_per_relay %ld reqs\n", median(v, npeers));
	for (i = 0; i < npeers; i++)
		v[i] = s[i].negs;
	printf("scale_negs_per_relay %ld negs\n", median(v, npeers));
	rot = rotating(g, &tracked);
	printf("scale_relays_tracked %ld relays\n", tracked);
	printf("scale_rotating_filters %ld filters\n", rot);
	printf("scale_syncd_rss %ld kB\n", rollup_kb(sp, "Rss"));
	printf("scale_syncd_pss %ld kB\n", rollup_kb(sp, "Pss"));
	printf("scale_syncd_private %ld kB\n",
	    rollup_kb(sp, "Private_Clean") + rollup_kb(sp, "Private_Dirty"));
	fflush(stdout);

	/* One repository more, on peers 0, 1 and 2. */
	for (i = 0; i < 32; i++)
		sk[i] = (uint8_t)(0x31 + i);
	event_pubkey_of(sk, pk);
	hex_encode(pk, PUBKEY_LEN, hex);
	snprintf(coord, sizeof(coord), "30617:%s:%s", hex, SCALE_NEW_D);
	for (k = 0; k < 3; k++)
		buf_printf(&extra, ",\"%s\"", relayproc_url(peers[k]));
	snprintf(home, sizeof(home), "%s/added", gd_dir(g));
	r0 = ctl_metric_at("127.0.0.1", gd_port(g),
	    "graspd_syncd_reconciles_total{role=\"syncd\"}");
	ta = wsc_now_ms();
	if ((ann = gd_host_repo(g, sk, SCALE_NEW_D, extra.b_data, home, oid)) ==
	    NULL)
		fatalx("scale: the added repository is not served");
	tb = wsc_now_ms();
	event_destroy(ann);
	buf_free(&extra);
	settle(s, 0, tb, "the addition");
	c1 = cpu_ms(sp);
	r1 = ctl_metric_at("127.0.0.1", gd_port(g),
	    "graspd_syncd_reconciles_total{role=\"syncd\"}");
	for (k = 0; k < 3; k++) {
		if ((m = first_mention(peers[k], ta, coord)) == 0)
			fatalx("scale: peer %d was never asked for %s", k,
			    coord);
		if (first == 0 || m < first)
			first = m;
		if (m > last_add)
			last_add = m;
	}
	printf("scale_add_push_ms %lld ms\n", (long long)(tb - ta));
	printf("scale_add_req_ms %lld ms\n", (long long)(first - tb));
	printf("scale_add_all_ms %lld ms\n", (long long)(last_add - tb));
	printf("scale_add_syncd_cpu_ms %.1f ms\n", c1 - c0);
	printf("scale_add_reconciles %.0f passes\n", r1 - r0);

	gd_free(g);
	for (i = 0; i < npeers; i++)
		relayproc_free(peers[i]);
	free(peers);
	free(s);
	free(v);
	return 0;
}
