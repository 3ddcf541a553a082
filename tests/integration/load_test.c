/*
 * load_test.c: many websocket clients on one relayd (issue #11, load).
 *
 * Every client holds SUBS subscriptions, each on its own topic (a "t"
 * tag); clients take turns publishing events (kind 10317, a key per event,
 * one topic each) at a steady rate for a while.  Afterwards every
 * subscription must have received exactly the acknowledged events of its
 * topic (count and sum of their sequence numbers), none CLOSED and no
 * connection lost: no dropped subscription.  Printed: OK latency
 * (median, p99, max), relayd's resident memory (now and peak), messages
 * delivered.  A second case: a websocket request beyond max_connections
 * is answered with HTTP 503.  A third: the WAL stays near relayd's
 * checkpoint threshold under a long ingest.  A fourth: a clean stop keeps
 * the WAL file's room for the next start.
 *
 * The size comes from the environment, so "make soak" runs the same
 * program big: GRASPD_LOAD_CLIENTS (default 200; 100 under the
 * sanitizers), GRASPD_LOAD_SUBS (10), GRASPD_LOAD_SECS (5),
 * GRASPD_LOAD_RATE events per second (40; 20 under the sanitizers),
 * GRASPD_LOAD_TOPICS (clients * subs / 40, at least subs).
 */
#include <sys/resource.h>
#include <sys/stat.h>

#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "client.h"
#include "db.h"
#include "event.h"
#include "relayproc.h"
#include "t.h"
#include "tint_prog.h"
#include "wsclient.h"

/* How long to wait for the last OKs and deliveries after publishing. */
#define DRAIN_MS	60000
/* How long every subscription may take to be set up (EOSE). */
#define SETUP_MS	120000
/* EVENTs in flight in the WAL case, and SQLite's page size. */
#define WAL_WINDOW	100
#define WAL_PAGE	4096
/* relayd's backstop (RELAY_CKPT_MAX_FRAMES) and a few commits more. */
#define WAL_MAX_FRAMES	170000
/* What relayd leaves of the WAL file after a quiet period
 * (RELAY_CKPT_KEEP_FRAMES), and how long the case waits for it. */
#define WAL_KEEP_FRAMES 20000
#define WAL_IDLE_MS	10000
/* Events sent one at a time from when relayd begins that truncation
 * (RELAY_CKPT_QUIET_S after the last commit, 5 s under NGIT_TEST), this
 * far apart, and how long each may wait for its OK (a hold's limit, 2 s,
 * and more). */
#define WAL_PAUSE_MS	5100
#define WAL_LATE_EVENTS 100
#define WAL_LATE_GAP_MS 10
#define WAL_LATE_OK_MS	10000

struct sub {
	int	 s_topic;
	int	 s_eose;
	int	 s_closed;
	uint64_t s_got;
	uint64_t s_sum;
};

struct client {
	struct wsc *c_ws;
	struct sub *c_subs;
	long	    c_pending; /* seq of the event awaiting OK, or -1 */
	char	    c_id[EVENT_ID_HEX_LEN + 1];
	int64_t	    c_sent_at;
	int	    c_lost;
	int	    c_challenged; /* NIP-42 AUTH challenges seen */
};

struct load {
	int	       clients, subs, secs, rate, topics;
	struct client *cl;
	uint64_t      *exp_n, *exp_sum; /* per topic, acknowledged */
	long	      *lat;		/* OK latencies, ms */
	size_t	       nlat, lat_cap;
	uint64_t       published, acked, refused, delivered, bad, notices;
	uint64_t       eose;
};

/* Resident and peak resident memory of pid in kB, from /proc. */
static void
rss_of(pid_t pid, long *rss, long *hwm)
{
	char v[64];

	*rss = relayproc_proc_status(pid, "VmRSS", v, sizeof(v)) == 0 ?
	    atol(v) :
	    -1;
	*hwm = relayproc_proc_status(pid, "VmHWM", v, sizeof(v)) == 0 ?
	    atol(v) :
	    -1;
}

static void
lat_add(struct load *L, long ms)
{
	if (L->nlat == L->lat_cap) {
		L->lat_cap = L->lat_cap ? 2 * L->lat_cap : 1024;
		if ((L->lat = realloc(L->lat, L->lat_cap * sizeof(long))) ==
		    NULL)
			abort();
	}
	L->lat[L->nlat++] = ms;
}

/* The quoted string after key in msg, copied into out; 0 or -1. */
static int
field(const char *msg, const char *key, char *out, size_t outlen)
{
	const char *p = strstr(msg, key), *q;

	if (p == NULL)
		return -1;
	p += strlen(key);
	if ((q = strchr(p, '"')) == NULL || (size_t)(q - p) >= outlen)
		return -1;
	memcpy(out, p, (size_t)(q - p));
	out[q - p] = '\0';
	return 0;
}

/* One message from relayd to client c. */
static void
on_message(struct load *L, struct client *c, const char *m)
{
	char num[32];
	int  k;
	long seq;

	if (strncmp(m, "[\"EVENT\",\"", 10) == 0) {
		if (sscanf(m + 10, "s%d\"", &k) != 1 || k < 0 || k >= L->subs ||
		    field(m, "\"content\":\"load ", num, sizeof(num)) == -1) {
			L->bad++;
			return;
		}
		seq = atol(num);
		/* Only events of the subscription's topic may come. */
		if (seq % L->topics != c->c_subs[k].s_topic) {
			L->bad++;
			return;
		}
		c->c_subs[k].s_got++;
		c->c_subs[k].s_sum += (uint64_t)seq;
		L->delivered++;
	} else if (strncmp(m, "[\"OK\",\"", 7) == 0) {
		if (c->c_pending < 0 || strncmp(m + 7, c->c_id, 64) != 0) {
			L->bad++;
			return;
		}
		lat_add(L, (long)(wsc_now_ms() - c->c_sent_at));
		if (strncmp(m + 7 + 64, "\",true", 6) == 0) {
			k = (int)(c->c_pending % L->topics);
			L->exp_n[k]++;
			L->exp_sum[k] += (uint64_t)c->c_pending;
			L->acked++;
		} else {
			printf("# refused: %.200s\n", m);
			L->refused++;
		}
		c->c_pending = -1;
	} else if (strncmp(m, "[\"EOSE\",\"s", 10) == 0) {
		if (sscanf(m + 10, "%d", &k) == 1 && k >= 0 && k < L->subs &&
		    !c->c_subs[k].s_eose) {
			c->c_subs[k].s_eose = 1;
			L->eose++;
		}
	} else if (strncmp(m, "[\"CLOSED\",\"s", 12) == 0) {
		if (sscanf(m + 12, "%d", &k) == 1 && k >= 0 && k < L->subs)
			c->c_subs[k].s_closed = 1;
		printf("# CLOSED: %.200s\n", m);
	} else if (strncmp(m, "[\"AUTH\",\"", 9) == 0) {
		/* NIP-42: one challenge, when the connection opens. */
		if (c->c_challenged++ > 0)
			L->bad++;
	} else if (strncmp(m, "[\"NOTICE\"", 9) == 0) {
		if (L->notices++ < 5)
			printf("# NOTICE: %.200s\n", m);
	} else
		L->bad++;
}

/* Reads whatever the sockets hold for at most timeout_ms. */
static void
pump(struct load *L, struct pollfd *pfd, int timeout_ms)
{
	struct client *c;
	char	      *m;
	int	       i;

	for (i = 0; i < L->clients; i++) {
		pfd[i].fd = L->cl[i].c_ws != NULL ? wsc_fd(L->cl[i].c_ws) : -1;
		pfd[i].events = POLLIN;
		pfd[i].revents = 0;
	}
	if (poll(pfd, (nfds_t)L->clients, timeout_ms) <= 0)
		return;
	for (i = 0; i < L->clients; i++) {
		if (pfd[i].revents == 0)
			continue;
		c = &L->cl[i];
		if (wsc_read_available(c->c_ws) == -1 && !c->c_lost) {
			c->c_lost = 1;
			printf("# client %d lost its connection: %s\n", i,
			    wsc_error(c->c_ws));
		}
		while ((m = wsc_next(c->c_ws, NULL, NULL)) != NULL) {
			on_message(L, c, m);
			free(m);
		}
		if (c->c_lost) {
			wsc_drop(c->c_ws);
			c->c_ws = NULL;
		}
	}
}

/* Sends event number seq from client c; 0 or -1. */
static int
publish(struct load *L, struct client *c, long seq)
{
	struct event *ev;
	struct buf    b = BUF_INIT;
	uint8_t	      sk[SECKEY_LEN];
	char	      tags[64], content[32];
	int	      rc;

	memset(sk, 0, sizeof(sk));
	sk[0] = 0x4c;
	sk[1] = (uint8_t)(seq >> 24);
	sk[2] = (uint8_t)(seq >> 16);
	sk[3] = (uint8_t)(seq >> 8);
	sk[4] = (uint8_t)seq;
	snprintf(tags, sizeof(tags), "[[\"t\",\"topic-%ld\"]]",
	    seq % L->topics);
	snprintf(content, sizeof(content), "load %ld", seq);
	if ((ev = event_new_signed(sk, time(NULL), 10317, tags, content)) ==
	    NULL)
		abort();
	buf_printf(&b, "[\"EVENT\",%s]", ev->json);
	memcpy(c->c_id, ev->id_hex, EVENT_ID_HEX_LEN + 1);
	c->c_pending = seq;
	c->c_sent_at = wsc_now_ms();
	rc = wsc_send_text(c->c_ws, b.b_data, b.b_len);
	buf_free(&b);
	event_destroy(ev);
	L->published++;
	return rc;
}

static void
test_many_clients_no_dropped_subscription(void)
{
	struct load	  L;
	struct relayproc *rp = NULL;
	struct pollfd	 *pfd = NULL;
	struct buf	  req = BUF_INIT;
	char		  maxc[64];
	const char	 *env[] = { maxc, NULL };
	int64_t		  start, next, end, t;
	long		  seq = 0, rss, hwm, since;
	uint64_t	  dropped = 0, lost = 0, wrong = 0, pend;
	int		  i, k, turn = 0, total;

	memset(&L, 0, sizeof(L));
	L.clients =
	    t_env_int("GRASPD_LOAD_CLIENTS", tint_sanitizing() ? 100 : 200);
	L.subs = t_env_int("GRASPD_LOAD_SUBS", 10);
	L.secs = t_env_int("GRASPD_LOAD_SECS", 5);
	L.rate = t_env_int("GRASPD_LOAD_RATE", tint_sanitizing() ? 20 : 40);
	L.topics = t_env_int("GRASPD_LOAD_TOPICS", L.clients * L.subs / 40);
	if (L.topics < L.subs)
		L.topics = L.subs;
	T_ASSERT(L.clients > 0 && L.subs > 0 && L.rate > 0);
	printf("# %d clients x %d subscriptions on %d topics, %d events/s "
	       "for %d s\n",
	    L.clients, L.subs, L.topics, L.rate, L.secs);
	snprintf(maxc, sizeof(maxc), "NGIT_MAX_CONNECTIONS=%d", L.clients + 16);
	T_ASSERT((rp = relayproc_start("relayd", env)) != NULL);
	if ((L.cl = calloc((size_t)L.clients, sizeof(*L.cl))) == NULL ||
	    (pfd = calloc((size_t)L.clients, sizeof(*pfd))) == NULL ||
	    (L.exp_n = calloc((size_t)L.topics, sizeof(uint64_t))) == NULL ||
	    (L.exp_sum = calloc((size_t)L.topics, sizeof(uint64_t))) == NULL)
		abort();

	since = (long)time(NULL) - 5;
	start = wsc_now_ms();
	for (i = 0; i < L.clients; i++) {
		struct client *c = &L.cl[i];

		c->c_pending = -1;
		if ((c->c_subs = calloc((size_t)L.subs, sizeof(*c->c_subs))) ==
		    NULL)
			abort();
		if ((c->c_ws = wsc_connect(relayproc_host(rp),
			 relayproc_port(rp), "/", 10000)) == NULL) {
			printf("# client %d could not connect\n", i);
			T_CHECK(c->c_ws != NULL);
			goto done;
		}
		for (k = 0; k < L.subs; k++) {
			c->c_subs[k].s_topic = (i * L.subs + k) % L.topics;
			buf_reset(&req);
			buf_printf(&req,
			    "[\"REQ\",\"s%d\",{\"kinds\":[10317],"
			    "\"#t\":[\"topic-%d\"],\"since\":%ld}]",
			    k, c->c_subs[k].s_topic, since);
			T_CHECK(
			    wsc_send_text(c->c_ws, req.b_data, req.b_len) == 0);
		}
		/* Keep up with the EOSEs while connecting the rest. */
		pump(&L, pfd, 0);
	}
	total = L.clients * L.subs;
	while (L.eose < (uint64_t)total && wsc_now_ms() - start < SETUP_MS)
		pump(&L, pfd, 50);
	printf("# %d connections and %" PRIu64 " subscriptions set up in "
	       "%" PRId64 " ms\n",
	    L.clients, L.eose, wsc_now_ms() - start);
	T_CHECK(L.eose == (uint64_t)total);

	/* Publishing: one event every 1000/rate ms, clients in turn. */
	start = next = wsc_now_ms();
	end = start + (int64_t)L.secs * 1000;
	while ((t = wsc_now_ms()) < end) {
		while (next <= t) {
			for (k = 0; k < L.clients; k++) {
				struct client *c =
				    &L.cl[(turn + k) % L.clients];

				if (c->c_ws != NULL && c->c_pending < 0) {
					if (publish(&L, c, seq++) == -1)
						c->c_lost = 1;
					break;
				}
			}
			turn = (turn + k + 1) % L.clients;
			next += 1000 / L.rate > 0 ? 1000 / L.rate : 1;
		}
		pump(&L, pfd,
		    (int)(next - t < 10 ? (next - t > 0 ? next - t : 0) : 10));
	}
	/* Drain: every OK back and every subscription complete. */
	t = wsc_now_ms();
	for (;;) {
		for (pend = 0, i = 0; i < L.clients; i++)
			pend += L.cl[i].c_pending >= 0 && L.cl[i].c_ws != NULL;
		wrong = 0;
		for (i = 0; i < L.clients; i++)
			for (k = 0; k < L.subs; k++) {
				struct sub *s = &L.cl[i].c_subs[k];

				wrong += s->s_got != L.exp_n[s->s_topic];
			}
		if ((pend == 0 && wrong == 0) || wsc_now_ms() - t > DRAIN_MS)
			break;
		pump(&L, pfd, 50);
	}

	for (i = 0; i < L.clients; i++) {
		lost += L.cl[i].c_lost;
		for (k = 0; k < L.subs; k++) {
			struct sub *s = &L.cl[i].c_subs[k];

			if (s->s_closed || L.cl[i].c_lost ||
			    s->s_got != L.exp_n[s->s_topic] ||
			    s->s_sum != L.exp_sum[s->s_topic])
				dropped++;
		}
	}
	rss_of(relayproc_pid(rp), &rss, &hwm);
	if (L.nlat > 0)
		qsort(L.lat, L.nlat, sizeof(long), t_cmp_long);
	printf("# published %" PRIu64 ", acknowledged %" PRIu64 ", refused "
	       "%" PRIu64 ", delivered %" PRIu64 " (%.0f/s), unexpected "
	       "messages %" PRIu64 "\n",
	    L.published, L.acked, L.refused, L.delivered,
	    (double)L.delivered * 1000.0 / (double)(wsc_now_ms() - start),
	    L.bad);
	if (L.nlat > 0)
		printf("# OK latency: median %ld ms, p99 %ld ms, max %ld ms\n",
		    L.lat[L.nlat / 2], L.lat[(L.nlat * 99 + 99) / 100 - 1],
		    L.lat[L.nlat - 1]);
	printf("# relayd RSS %ld kB, peak %ld kB\n", rss, hwm);
	printf("# dropped subscriptions: %" PRIu64 " of %d; connections "
	       "lost: %" PRIu64 "\n",
	    dropped, total, lost);
	T_CHECK(L.acked > 0 && L.refused == 0);
	T_CHECK(L.bad == 0);
	T_CHECK(lost == 0);
	T_CHECK(dropped == 0);
done:
	for (i = 0; L.cl != NULL && i < L.clients; i++) {
		if (L.cl[i].c_ws != NULL)
			wsc_drop(L.cl[i].c_ws);
		free(L.cl[i].c_subs);
	}
	relayproc_free(rp);
	free(L.cl);
	free(pfd);
	free(L.exp_n);
	free(L.exp_sum);
	free(L.lat);
	buf_free(&req);
}

/* Sends a websocket upgrade by hand; the whole answer, or NULL. */
static char *
raw_upgrade(const char *host, int port)
{
	static const char req[] =
	    "GET / HTTP/1.1\r\nHost: x\r\n"
	    "Upgrade: websocket\r\nConnection: Upgrade\r\n"
	    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	    "Sec-WebSocket-Version: 13\r\n\r\n";
	struct pollfd p;
	char	     *out;
	size_t	      n = 0, cap = 4096;
	ssize_t	      r;
	int64_t	      deadline = wsc_now_ms() + 5000;
	int	      fd;

	if ((fd = wsc_tcp_connect(host, port, 5000)) == -1)
		return NULL;
	if ((out = malloc(cap)) == NULL)
		abort();
	if (write(fd, req, sizeof(req) - 1) != (ssize_t)(sizeof(req) - 1))
		goto fail;
	/* Until relayd closes: its answer is the whole of it. */
	while (n < cap - 1 && wsc_now_ms() < deadline) {
		p.fd = fd;
		p.events = POLLIN;
		if (poll(&p, 1, 100) <= 0)
			continue;
		if ((r = read(fd, out + n, cap - 1 - n)) <= 0)
			break;
		n += (size_t)r;
	}
	if (n == 0)
		goto fail;
	out[n] = '\0';
	close(fd);
	return out;
fail:
	free(out);
	close(fd);
	return NULL;
}

static void
test_beyond_max_connections_http_503(void)
{
	struct relayproc *rp;
	struct wsc	 *ws[3] = { NULL, NULL, NULL }, *extra;
	const char	 *env[] = { "NGIT_MAX_CONNECTIONS=3", NULL };
	char		 *body = NULL;
	int		  i, status = 0;

	T_ASSERT((rp = relayproc_start("relayd", env)) != NULL);
	for (i = 0; i < 3; i++) {
		ws[i] = wsc_connect(relayproc_host(rp), relayproc_port(rp), "/",
		    5000);
		T_CHECK(ws[i] != NULL);
	}
	extra = wsc_connect_ex(relayproc_host(rp), relayproc_port(rp), "/",
	    NULL, 5000, &status);
	printf("# the fourth websocket got HTTP %d\n", status);
	T_CHECK(extra == NULL);
	T_CHECK(status == 503);
	if (extra != NULL)
		wsc_close(extra);
	/* The answer says why. */
	body = raw_upgrade(relayproc_host(rp), relayproc_port(rp));
	printf("# answer: %.*s\n", body ? (int)strcspn(body, "\r\n") : 6,
	    body ? body : "(none)");
	T_CHECK(body != NULL && strncmp(body, "HTTP/1.", 7) == 0 &&
	    strstr(body, " 503 ") != NULL &&
	    strstr(body, "too many connections") != NULL);
	free(body);
	/* A place freed is taken again. */
	T_CHECK(tint_freed_place_retaken(rp, ws, TINT_N(ws)) == 0);
	relayproc_free(rp);
}

/* The frames the WAL file at path has room for, or -1. */
static long
wal_frames(const char *path)
{
	struct stat st;

	if (stat(path, &st) == -1)
		return -1;
	return (long)(st.st_size / (WAL_PAGE + DB_WAL_FRAME_HDR));
}

/* Sends the WAL case's event number i, built in b; 0 or -1. */
static int
send_wal_event(struct wsc *ws, long i, struct buf *b)
{
	struct event *ev;
	uint8_t sk[SECKEY_LEN] = { 0x57, (uint8_t)(i >> 16), (uint8_t)(i >> 8),
		(uint8_t)i };
	char	content[32];

	/* A key an event: kind 10317 is replaceable. */
	snprintf(content, sizeof(content), "wal %ld", i);
	if ((ev = event_new_signed(sk, time(NULL), 10317, "[[\"t\",\"wal\"]]",
		 content)) == NULL)
		return -1;
	buf_reset(b);
	buf_printf(b, "[\"EVENT\",%s]", ev->json);
	event_destroy(ev);
	return wsc_send_text(ws, b->b_data, b->b_len);
}

/*
 * relayd checkpoints its WAL on a thread of its own (relay_ckpt.c) once
 * a commit leaves RELAY_CKPT_MIN_FRAMES (10,000) frames in it, and at
 * RELAY_CKPT_MAX_FRAMES (160,000), when the thread lags, holds its
 * commits until the thread has copied everything; the WAL then starts
 * over, so under a long ingest it stays below that and one commit.
 * Without the hold the store's last resort checkpoints only at 320,000,
 * and without either it grows with every event: 20,000 events of this
 * shape left 83,000 frames, so the case sends GRASPD_WAL_EVENTS (50,000,
 * about 207,000 frames).  After a quiet period (RELAY_CKPT_QUIET_S)
 * relayd truncates the file.
 */
static void
test_wal_bounded_under_ingest(void)
{
	struct relayproc *rp;
	struct wsc	 *ws = NULL;
	struct buf	  b = BUF_INIT;
	char		  path[1024], *m;
	long n = t_env_int("GRASPD_WAL_EVENTS", 50000), sent, acked = 0,
	     answered = 0, frames, most = 0;
	int64_t deadline, t0, slowest = 0;

	T_ASSERT((rp = relayproc_start("relayd", NULL)) != NULL);
	snprintf(path, sizeof(path), "%s/relay/graspd.db-wal",
	    relayproc_dir(rp));
	T_CHECK((ws = wsc_connect(relayproc_host(rp), relayproc_port(rp), "/",
		     5000)) != NULL);
	if (ws == NULL)
		goto done;
	deadline = wsc_now_ms() + DRAIN_MS;
	for (sent = 0; answered < n && wsc_now_ms() < deadline;) {
		/* At most WAL_WINDOW in flight, as a busy client has. */
		while (sent < n && sent - answered < WAL_WINDOW) {
			T_ASSERT(send_wal_event(ws, sent, &b) == 0);
			sent++;
		}
		if ((m = wsc_recv(ws, 1000, NULL)) == NULL) {
			if (wsc_is_closed(ws))
				break;
			continue;
		}
		if (strncmp(m, "[\"OK\",", 6) == 0) {
			answered++;
			acked += strstr(m, "\",true,") != NULL;
			/* The file only grows while commits go on. */
			if (answered % WAL_WINDOW == 0 &&
			    (frames = wal_frames(path)) > most)
				most = frames;
		}
		free(m);
	}
	printf("# %ld events sent, %ld answered, %ld accepted\n", sent,
	    answered, acked);
	T_CHECK(acked == n);
	if ((frames = wal_frames(path)) > most)
		most = frames;
	printf("# the WAL file reached %ld frames during the ingest\n", most);
	T_CHECK(most > 0 && most <= WAL_MAX_FRAMES);
	/*
	 * A quiet period truncates it, and relayd holds the commits that
	 * come meanwhile: events one at a time from its end on, each
	 * answered before the next, all stored.
	 */
	usleep(WAL_PAUSE_MS * 1000);
	for (; sent < n + WAL_LATE_EVENTS; sent++) {
		t0 = wsc_now_ms();
		T_ASSERT(send_wal_event(ws, sent, &b) == 0);
		m = wsc_recv(ws, WAL_LATE_OK_MS, NULL);
		T_CHECK(m != NULL && strncmp(m, "[\"OK\",", 6) == 0 &&
		    strstr(m, "\",true,") != NULL);
		free(m);
		if (wsc_now_ms() - t0 > slowest)
			slowest = wsc_now_ms() - t0;
		usleep(WAL_LATE_GAP_MS * 1000);
	}
	printf("# %d events during the pause, the slowest OK in %lld ms\n",
	    WAL_LATE_EVENTS, (long long)slowest);
	deadline = wsc_now_ms() + WAL_IDLE_MS;
	while ((frames = wal_frames(path)) > WAL_KEEP_FRAMES &&
	    wsc_now_ms() < deadline)
		usleep(50 * 1000);
	printf("# and %ld frames once commits paused\n", frames);
	T_CHECK(frames >= 0 && frames <= WAL_KEEP_FRAMES);
done:
	buf_free(&b);
	if (ws != NULL)
		wsc_close(ws);
	relayproc_free(rp);
}

/* The room of the stop case (wal_room_mb), its events, and how long
 * relayd may take to write the room. */
#define ROOM_MB	    16
#define ROOM_EVENTS 300
#define ROOM_MS	    10000

/*
 * A clean stop keeps the WAL file and the room relayd wrote in it
 * (wal_room_mb): the WAL starts over at its head first, so the next
 * start reads back a frame or two, finds the room whole and writes none
 * of it again, and every event acknowledged before the stop is there.
 */
static void
test_clean_stop_keeps_the_wal_room(void)
{
	/* ROOM_MB, and the log line that says the room is whole. */
	static const char *const env[] = { "NGIT_WAL_ROOM_MB=16",
		"NGIT_LOG_LEVEL=debug", NULL };
	struct relayproc	*rp;
	struct wsc		*ws = NULL;
	struct buf		 b = BUF_INIT;
	char			 path[1024], *m;
	long long		 room, size = -1;
	int64_t			 end;
	long			 i, acked = 0;

	room = db_wal_room((long long)ROOM_MB << 20, WAL_PAGE);
	T_ASSERT((rp = relayproc_start("relayd", env)) != NULL);
	snprintf(path, sizeof(path), "%s/relay/graspd.db-wal",
	    relayproc_dir(rp));
	/* Said once the room is written and synced. */
	for (end = wsc_now_ms() + ROOM_MS;
	     relayproc_log_count(rp, "the WAL file keeps") == 0 &&
	     wsc_now_ms() < end;)
		relayproc_sleep_ms(50);
	size = wal_frames(path);
	T_CHECK(relayproc_log_count(rp, "the WAL file keeps") == 1 &&
	    size >= 0 &&
	    size * (WAL_PAGE + DB_WAL_FRAME_HDR) + DB_WAL_HDR == room);
	T_CHECK((ws = wsc_connect(relayproc_host(rp), relayproc_port(rp), "/",
		     5000)) != NULL);
	for (i = 0; ws != NULL && i < ROOM_EVENTS; i++) {
		T_ASSERT(send_wal_event(ws, 900000 + i, &b) == 0);
		/* Its OK, past any other message. */
		while ((m = wsc_recv(ws, 5000, NULL)) != NULL &&
		    strncmp(m, "[\"OK\",", 6) != 0)
			free(m);
		if (m == NULL)
			break;
		acked += strstr(m, "\",true,") != NULL;
		free(m);
	}
	T_CHECK(acked == ROOM_EVENTS);
	if (ws != NULL)
		wsc_close(ws);
	T_CHECK(relayproc_stop(rp) == 0);
	T_CHECK(relayproc_log_count(rp, "kept for the next start") == 1);
	size = wal_frames(path);
	printf("# %ld of %d events acknowledged; %lld frames after the stop\n",
	    acked, ROOM_EVENTS, size);
	T_CHECK(size >= 0 &&
	    size * (WAL_PAGE + DB_WAL_FRAME_HDR) + DB_WAL_HDR >= room);
	/* Started again: the room is whole, the events all there. */
	T_ASSERT(relayproc_restart(rp) == 0);
	T_CHECK(client_wait_count(rp, "{\"kinds\":[10317],\"#t\":[\"wal\"]}",
		    ROOM_EVENTS, 10) == ROOM_EVENTS);
	relayproc_sleep_ms(500);
	T_CHECK(relayproc_log_count(rp, "the WAL file keeps") == 1);
	printf("# a WAL file of %ld frames kept across the restart\n",
	    wal_frames(path));
	buf_free(&b);
	relayproc_free(rp);
}

static int
load_setup(void)
{
	struct rlimit rl;

	/* Both ends of every connection: ours and relayd's (inherited). */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	return 0;
}

static const struct t_case cases[] = {
	T_CASE(test_many_clients_no_dropped_subscription),
	T_CASE(test_beyond_max_connections_http_503),
	T_CASE(test_wal_bounded_under_ingest),
	T_CASE(test_clean_stop_keeps_the_wal_room),
};

T_MAIN_WITH(cases, load_setup, NULL, T_IGN_SIGPIPE)
