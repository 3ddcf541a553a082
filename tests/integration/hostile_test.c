/*
 * hostile_test.c: hostile relays around one graspd (issue #11, hostile
 * peers), end to end.  graspd (private targets allowed, as every test
 * dials loopback) hosts a repository whose relays tag names
 *
 *   - an honest peer holding the repository's issues;
 *   - a peer in every hostile mode at once: forged signatures, garbage
 *     frames, floods of unasked events, oversized frames, never EOSE,
 *     NOTICE and CLOSED rate-limit storms; it alone holds a forged issue;
 *   - a raw websocket server here that drips a frame one byte at a time
 *     (slow drip), and one that breaks off in the middle of a frame
 *     (mid-frame disconnect);
 *   - 1,000 more relays on a counting listener plus every URL the shared
 *     hygiene vectors refuse;
 *
 * and the owner publishes a kind 10002 listing 1,000 relays on another
 * counting listener plus every refused vector.  Asserted: relayd never
 * restarts (pid unchanged); no role is restarted but the one talking to
 * a peer (none, here); the forged issue is not stored; honest sync goes
 * on (an issue seeded on the honest peer afterwards arrives live); the
 * repository's relays dialled stay within inventory.h's cap and the
 * relay list's within relaylist.h's; the slow and broken servers are
 * dialled and never hold more than a few connections at once; the
 * roles' memory and descriptors stay bounded.
 */
#define _GNU_SOURCE /* strcasestr */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "client.h"
#include "event.h"
#include "gdproc.h"
#include "gitutil.h"
#include "inventory.h"
#include "nostr.h"
#include "relaylist.h"
#include "relayproc.h"
#include "t.h"
#include "tdir.h"
#include "tproc_dir.h"
#include "tuser.h"
#include "wsclient.h"

/* The fill byte of this test's users' keys (tuser.h). */
#define KEYS 0x48

/* Relays in the hostile announcement and relay list, on listeners. */
#define MANY_RELAYS 1000
/* How long graspd spends among the hostile relays. */
#define EXPOSURE_MS 6000
/* Connections one raw server may hold at once from one graspd. */
#define MAX_HELD    8
/* Growth of a role's resident memory we call bounded, kB.  Under
 * AddressSanitizer freed memory waits in a quarantine of up to 256 MB
 * (its default quarantine_size_mb on 64-bit) before it is reused, so a
 * busy role's RSS grows by that much without any leak. */
#if defined(__SANITIZE_ADDRESS__)
#define MAX_RSS_GROWTH_KB ((200 + 256) * 1024)
#else
#define MAX_RSS_GROWTH_KB (200 * 1024)
#endif
/* Open descriptors of a role we call bounded. */
#define MAX_FDS	    512
/* Drip: one byte per this many ms. */
#define DRIP_MS	    200
/* Clients one raw server keeps track of. */
#define MAX_CLIENTS 64
/* Distinct request paths one counting listener records. */
#define MAX_PATHS   (MANY_RELAYS + 16)

enum raw_mode {
	RAW_COUNT,    /* records the request path, answers 404 */
	RAW_DRIP,     /* 101, then a frame one byte every DRIP_MS */
	RAW_MIDFRAME, /* 101, then half a frame, then close */
};

struct raw_client {
	int	rc_fd;
	char	rc_req[4096];
	size_t	rc_reqlen;
	int	rc_upgraded;
	size_t	rc_sent;
	int64_t rc_next;
};

/* A loopback TCP server of this test, on its own thread. */
struct raw {
	enum raw_mode	  r_mode;
	int		  r_lfd;
	int		  r_port;
	volatile int	  r_stop;
	pthread_t	  r_thread;
	struct raw_client r_cl[MAX_CLIENTS];
	int		  r_accepted, r_held, r_max_held;
	char		 *r_paths[MAX_PATHS];
	int		  r_npaths;
	struct buf	  r_frame; /* what drip and midframe send */
};

static char		tmpdir[256];
static struct tdir_prog tp = { tmpdir, sizeof(tmpdir), "graspd-hostile" };

static void
raw_path(struct raw *r, const char *req)
{
	char path[256];
	int  i;

	if (sscanf(req, "GET %255s ", path) != 1)
		return;
	for (i = 0; i < r->r_npaths; i++)
		if (strcmp(r->r_paths[i], path) == 0)
			return;
	if (r->r_npaths < MAX_PATHS &&
	    (r->r_paths[r->r_npaths] = strdup(path)) != NULL)
		r->r_npaths++;
}

static void
raw_drop(struct raw *r, struct raw_client *c)
{
	close(c->rc_fd);
	c->rc_fd = -1;
	r->r_held--;
}

/* The request head is in: answer as the mode says. */
static void
raw_answer(struct raw *r, struct raw_client *c)
{
	struct buf b = BUF_INIT;

	if (r->r_mode == RAW_COUNT) {
		raw_path(r, c->rc_req);
		buf_adds(&b,
		    "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
		    "Connection: close\r\n\r\n");
		if (write(c->rc_fd, b.b_data, b.b_len) == -1)
			(void)0;
		buf_free(&b);
		raw_drop(r, c);
		return;
	}
	client_ws_accept(&b, c->rc_req);
	if (write(c->rc_fd, b.b_data, b.b_len) != (ssize_t)b.b_len) {
		buf_free(&b);
		raw_drop(r, c);
		return;
	}
	buf_free(&b);
	c->rc_upgraded = 1;
	if (r->r_mode == RAW_MIDFRAME) {
		/* The header and half of the payload, then nothing. */
		if (write(c->rc_fd, r->r_frame.b_data, r->r_frame.b_len / 2) ==
		    -1)
			(void)0;
		raw_drop(r, c);
	}
}

static void *
raw_loop(void *arg)
{
	struct raw	  *r = arg;
	struct pollfd	   p[MAX_CLIENTS + 1];
	struct raw_client *c;
	ssize_t		   n;
	int64_t		   now;
	int		   i, fd, np, idx[MAX_CLIENTS + 1];

	while (!r->r_stop) {
		p[0].fd = r->r_lfd;
		p[0].events = POLLIN;
		for (np = 1, i = 0; i < MAX_CLIENTS; i++)
			if (r->r_cl[i].rc_fd != -1 && !r->r_cl[i].rc_upgraded) {
				p[np].fd = r->r_cl[i].rc_fd;
				p[np].events = POLLIN;
				idx[np++] = i;
			}
		poll(p, (nfds_t)np, 20);
		if (p[0].revents & POLLIN &&
		    (fd = accept(r->r_lfd, NULL, NULL)) != -1) {
			r->r_accepted++;
			for (i = 0; i < MAX_CLIENTS && r->r_cl[i].rc_fd != -1;
			     i++)
				;
			if (i == MAX_CLIENTS)
				close(fd);
			else {
				memset(&r->r_cl[i], 0, sizeof(r->r_cl[i]));
				r->r_cl[i].rc_fd = fd;
				if (++r->r_held > r->r_max_held)
					r->r_max_held = r->r_held;
			}
		}
		for (i = 1; i < np; i++) {
			c = &r->r_cl[idx[i]];
			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(c->rc_fd, c->rc_req + c->rc_reqlen,
			    sizeof(c->rc_req) - 1 - c->rc_reqlen);
			if (n <= 0) {
				raw_drop(r, c);
				continue;
			}
			c->rc_reqlen += (size_t)n;
			c->rc_req[c->rc_reqlen] = '\0';
			if (strstr(c->rc_req, "\r\n\r\n") != NULL)
				raw_answer(r, c);
			else if (c->rc_reqlen == sizeof(c->rc_req) - 1)
				raw_drop(r, c);
		}
		/* Drip: one byte each, and notice who has gone. */
		now = wsc_now_ms();
		for (i = 0; i < MAX_CLIENTS; i++) {
			char b;

			c = &r->r_cl[i];
			if (c->rc_fd == -1 || !c->rc_upgraded ||
			    now < c->rc_next)
				continue;
			if (recv(c->rc_fd, &b, 1, MSG_DONTWAIT | MSG_PEEK) ==
			    0) {
				raw_drop(r, c);
				continue;
			}
			if (c->rc_sent < r->r_frame.b_len &&
			    send(c->rc_fd, r->r_frame.b_data + c->rc_sent, 1,
				MSG_NOSIGNAL | MSG_DONTWAIT) == 1)
				c->rc_sent++;
			c->rc_next = now + DRIP_MS;
		}
	}
	for (i = 0; i < MAX_CLIENTS; i++)
		if (r->r_cl[i].rc_fd != -1)
			close(r->r_cl[i].rc_fd);
	return NULL;
}

static int
raw_start(struct raw *r, enum raw_mode mode)
{
	struct sockaddr_in sa;
	socklen_t	   len = sizeof(sa);
	const char	  *msg = "[\"EVENT\",\"x\",{\"id\":\"never "
				 "finished\"}]";
	int		   i;

	memset(r, 0, sizeof(*r));
	r->r_mode = mode;
	for (i = 0; i < MAX_CLIENTS; i++)
		r->r_cl[i].rc_fd = -1;
	wsc_frame_encode(&r->r_frame, WS_OP_TEXT, 1, NULL, msg, strlen(msg));
	if ((r->r_lfd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(r->r_lfd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
	    listen(r->r_lfd, 64) == -1 ||
	    getsockname(r->r_lfd, (struct sockaddr *)&sa, &len) == -1)
		return -1;
	r->r_port = ntohs(sa.sin_port);
	return pthread_create(&r->r_thread, NULL, raw_loop, r) == 0 ? 0 : -1;
}

static void
raw_stop(struct raw *r)
{
	int i;

	r->r_stop = 1;
	pthread_join(r->r_thread, NULL);
	close(r->r_lfd);
	for (i = 0; i < r->r_npaths; i++)
		free(r->r_paths[i]);
	buf_free(&r->r_frame);
}

static int
peer_post(struct relayproc *rp, const char *path, const char *body)
{
	return relayproc_post(rp, path, body, strlen(body));
}

/* REQs the peer saw, from its log; -1 on error. */
static int
peer_reqs(struct relayproc *rp)
{
	char  *body = NULL;
	int    status = 0, n = -1;
	cJSON *j;

	if (http_get(relayproc_host(rp), relayproc_port(rp), "/log", NULL,
		10000, &status, NULL, &body) == 0 &&
	    status == 200 && (j = cJSON_Parse(body)) != NULL) {
		n = cJSON_GetArraySize(cJSON_GetObjectItem(j, "reqs"));
		cJSON_Delete(j);
	}
	free(body);
	printf("# the hostile peer saw %d REQs\n", n);
	return n;
}

static int
wait_stored(struct gdproc *g, const char *id, int ms)
{
	int64_t deadline = wsc_now_ms() + ms;
	int	r;

	while ((r = gd_has_event(g, id)) != 1 && wsc_now_ms() < deadline)
		usleep(200000);
	return r;
}

static long
rss_kb(long pid)
{
	char v[64];

	return relayproc_proc_status(pid, "VmRSS", v, sizeof(v)) == 0 ?
	    atol(v) :
	    -1;
}

static int
nfds(long pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
	return tproc_dir_count(path, NULL);
}

static struct event *
issue(int author, const char *coord, const char *content)
{
	uint8_t sk[SECKEY_LEN];
	char	tags[256];

	tuser_sk(KEYS, author, sk);
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", coord);
	return event_new_signed(sk, time(NULL), 1621, tags, content);
}

static void
test_hostile_relays_confined(void)
{
	const char *env[] = { "NGIT_SYNC_ALLOW_PRIVATE_TARGETS=true", NULL };
	struct relayproc *honest = NULL, *bad = NULL;
	struct raw	  drip, mid, repo_many, list_many;
	struct gdproc	 *g = NULL;
	struct buf	  t = BUF_INIT, body = BUF_INIT;
	struct event *ann = NULL, *first = NULL, *forged = NULL, *live = NULL,
		     *rl = NULL;
	struct wsc *ws = NULL;
	uint8_t	    sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char	    domain[64], url[512], coord[200], pkhex[PUBKEY_HEX_LEN + 1],
	    dir[600];
	char states[GD_NROLES][16];
	long before[GD_NROLES], after[GD_NROLES], rss0[GD_NROLES];
	long rss;
	int  i, fds, nvec;

	T_ASSERT(raw_start(&drip, RAW_DRIP) == 0);
	T_ASSERT(raw_start(&mid, RAW_MIDFRAME) == 0);
	T_ASSERT(raw_start(&repo_many, RAW_COUNT) == 0);
	T_ASSERT(raw_start(&list_many, RAW_COUNT) == 0);
	honest = relayproc_start_peer(NULL);
	bad = relayproc_start_peer(NULL);
	g = gd_start(env);
	if (honest == NULL || bad == NULL || g == NULL)
		goto done;

	tuser_sk(KEYS, 1, sk);
	event_pubkey_of(sk, pk);
	hex_encode(pk, PUBKEY_LEN, pkhex);
	snprintf(domain, sizeof(domain), "127.0.0.1:%d", gd_port(g));
	snprintf(coord, sizeof(coord), "30617:%s:besieged", pkhex);
	first = issue(2, coord, "honest issue");
	forged = issue(3, coord, "forged issue");
	T_ASSERT(first != NULL && forged != NULL);
	buf_printf(&body, "%s\n", first->json);
	T_CHECK(peer_post(honest, "/events", body.b_data) == 0);
	buf_reset(&body);
	buf_printf(&body, "%s\n%s\n", first->json, forged->json);
	T_CHECK(peer_post(bad, "/events", body.b_data) == 0);
	T_CHECK(
	    peer_post(bad, "/config",
		"{\"forge\":true,\"garbage\":true,"
		"\"flood\":200,\"oversized_bytes\":3000000,\"drop_eose\":true,"
		"\"notice_rate_limit\":true,\"closed_rate_limited\":true}") ==
	    0);

	/* The announcement: honest first, the hostile ones, then many. */
	gt_url(url, sizeof(url), domain, pk, "besieged");
	buf_printf(&t,
	    "[[\"d\",\"besieged\"],[\"name\",\"besieged\"],"
	    "[\"clone\",\"%s\"],[\"relays\",\"ws://%s\",\"%s\",\"%s\","
	    "\"ws://127.0.0.1:%d\",\"ws://127.0.0.1:%d\"",
	    url, domain, relayproc_url(honest), relayproc_url(bad), drip.r_port,
	    mid.r_port);
	for (i = 0; i < MANY_RELAYS; i++)
		buf_printf(&t, ",\"ws://127.0.0.1:%d/a%d\"", repo_many.r_port,
		    i);
	T_ASSERT((nvec = gd_refused_urls(&t, "", "")) > 30);
	buf_adds(&t, "]]");
	T_ASSERT((ann = event_new_signed(sk, time(NULL), 30617, t.b_data,
		      "")) != NULL);
	T_ASSERT(gd_publish(g, ann) == 0);
	snprintf(dir, sizeof(dir), "%s/besieged", tmpdir);
	T_ASSERT(
	    (ws = wsc_connect("127.0.0.1", gd_port(g), "/", 5000)) != NULL);
	T_ASSERT(gt_release(ws, sk, domain, "besieged", dir, NULL) == 0);
	wsc_close(ws);
	ws = NULL;

	/* The owner's relay list: 1,000 relays and every bad URL. */
	buf_reset(&t);
	buf_adds(&t, "[");
	for (i = 0; i < MANY_RELAYS; i++)
		buf_printf(&t, "%s[\"r\",\"ws://127.0.0.1:%d/r%d\"]",
		    i ? "," : "", list_many.r_port, i);
	T_ASSERT(gd_refused_urls(&t, "[\"r\",", "]") == nvec);
	buf_adds(&t, "]");
	T_ASSERT((rl = event_new_signed(sk, time(NULL), 10002, t.b_data, "")) !=
	    NULL);
	T_CHECK(gd_publish(g, rl) == 0);

	T_ASSERT(gd_roles_now(g, states, before) == 0);
	for (i = 0; i < GD_NROLES; i++)
		rss0[i] = rss_kb(before[i]);
	/* Honest sync despite everything. */
	T_CHECK(wait_stored(g, first->id_hex, EXPOSURE_MS) == 1);
	usleep(EXPOSURE_MS * 1000);
	live = issue(4, coord, "live honest issue");
	T_ASSERT(live != NULL);
	buf_reset(&body);
	buf_printf(&body, "%s\n", live->json);
	T_CHECK(peer_post(honest, "/events", body.b_data) == 0);
	T_CHECK(wait_stored(g, live->id_hex, EXPOSURE_MS) == 1);

	T_CHECK(gd_has_event(g, forged->id_hex) == 0);
	T_ASSERT(gd_roles_now(g, states, after) == 0);
	for (i = 0; i < GD_NROLES; i++) {
		rss = rss_kb(after[i]);
		fds = nfds(after[i]);
		printf("# %s: pid %ld -> %ld, %s, RSS %ld -> %ld kB, %d fds\n",
		    gd_roles[i], before[i], after[i], states[i], rss0[i], rss,
		    fds);
		T_CHECK(after[i] == before[i]);
		T_CHECK(strcmp(states[i], "running") == 0);
		T_CHECK(rss - rss0[i] < MAX_RSS_GROWTH_KB);
		T_CHECK(fds >= 0 && fds < MAX_FDS);
	}
	printf("# drip server: %d connections, at most %d at once; mid-frame "
	       "server: %d connections, at most %d at once\n",
	    drip.r_accepted, drip.r_max_held, mid.r_accepted, mid.r_max_held);
	printf("# announcement's 1,000 relays: %d dialled (cap %d); relay "
	       "list's 1,000: %d dialled (cap %d)\n",
	    repo_many.r_npaths, INV_MAX_REPO_RELAYS, list_many.r_npaths,
	    RELAYLIST_MAX_KEYS);
	/* Every hostile relay was talked to. */
	T_CHECK(peer_reqs(bad) > 0);
	T_CHECK(drip.r_accepted > 0 && mid.r_accepted > 0);
	T_CHECK(drip.r_max_held <= MAX_HELD && mid.r_max_held <= MAX_HELD);
	T_CHECK(repo_many.r_npaths > 0);
	T_CHECK(repo_many.r_npaths <= INV_MAX_REPO_RELAYS);
	T_CHECK(list_many.r_npaths <= RELAYLIST_MAX_KEYS);
done:
	T_CHECK(honest != NULL && bad != NULL && g != NULL);
	gd_free(g);
	relayproc_free(honest);
	relayproc_free(bad);
	raw_stop(&drip);
	raw_stop(&mid);
	raw_stop(&repo_many);
	raw_stop(&list_many);
	event_destroy(ann);
	event_destroy(first);
	event_destroy(forged);
	event_destroy(live);
	event_destroy(rl);
	buf_free(&t);
	buf_free(&body);
}

static const struct t_case cases[] = {
	T_CASE(test_hostile_relays_confined),
};

T_MAIN_FIXTURE(cases, &gt_fixture, &tp, T_IGN_SIGPIPE)
