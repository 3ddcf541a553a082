/*
 * ssrf_test.c: relay URLs from the network never make graspd dial a
 * private address (issue #11, SSRF), seen from outside: loopback
 * listeners that must see no connection.
 *
 *  - An accepted repository whose announcement lists, in its relays tag,
 *    every URL the shared hygiene vectors refuse plus loopback spellings
 *    (localhost, 127.0.0.1, 127.1, 0x7f000001, 2130706433, 0177.0.0.1,
 *    [::1], [::ffff:127.0.0.1], x.localhost) of a listener's port, and
 *    its owner's kind 10002 listing the same: syncd, discoveryd and
 *    historyd run over them and the listeners (127.0.0.1 and ::1) see
 *    zero connections (with private targets allowed the same set-up sees
 *    dozens, so the case fails if the guard goes).
 *  - The same set-up with private targets allowed
 *    (NGIT_SYNC_ALLOW_PRIVATE_TARGETS, as the other tests run) dials a
 *    loopback relay, which answers the websocket handshake with an HTTP
 *    302 to another loopback listener: the first is dialled (so the
 *    first case can see a dial), the redirect is never followed.
 *
 * Private clone URLs (git) are covered by hunt_test; the resolve-time
 * check of names by conn_live_test and relayurl_test.
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "ctl.h"
#include "event.h"
#include "gdproc.h"
#include "gitutil.h"
#include "nostr.h"
#include "relayproc.h"
#include "t.h"
#include "tdir.h"
#include "tuser.h"
#include "wsclient.h"

/* The fill byte of this test's users' keys (tuser.h). */
#define KEYS 0x51

/* How long the roles get to act on the events (NGIT_TEST timing). */
#define SETTLE_MS 5000
/* How long the allowed relay may take to be dialled. */
#define DIAL_MS	  20000

/* Loopback listeners counting connections; one may answer with 302. */
struct listener {
	int	     l_fd[2];
	int	     l_nfd;
	int	     l_port;
	const char  *l_redirect; /* Location, or NULL: just close */
	volatile int l_stop;
	int	     l_count;
	pthread_t    l_thread;
};

static char		tmpdir[256];
static struct tdir_prog tp = { tmpdir, sizeof(tmpdir), "graspd-ssrf" };
static int		ndirs;

static int
listen_on(const char *host, int port)
{
	struct addrinfo hints, *ai;
	char		serv[16];
	int		fd, one = 1;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	snprintf(serv, sizeof(serv), "%d", port);
	if (getaddrinfo(host, serv, &hints, &ai) != 0)
		return -1;
	if ((fd = socket(ai->ai_family, SOCK_STREAM, 0)) == -1)
		goto done;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ai->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) == -1 ||
	    listen(fd, 16) == -1) {
		close(fd);
		fd = -1;
	}
done:
	freeaddrinfo(ai);
	return fd;
}

static void *
listener_loop(void *arg)
{
	struct listener *l = arg;
	struct pollfd	 p[2];
	char		 req[4096], ans[512];
	size_t		 n;
	ssize_t		 r;
	int		 i, fd;

	while (!l->l_stop) {
		for (i = 0; i < l->l_nfd; i++) {
			p[i].fd = l->l_fd[i];
			p[i].events = POLLIN;
		}
		if (poll(p, (nfds_t)l->l_nfd, 100) <= 0)
			continue;
		for (i = 0; i < l->l_nfd; i++) {
			if (!(p[i].revents & POLLIN) ||
			    (fd = accept(l->l_fd[i], NULL, NULL)) == -1)
				continue;
			__atomic_add_fetch(&l->l_count, 1, __ATOMIC_SEQ_CST);
			if (l->l_redirect != NULL) {
				struct pollfd q = { fd, POLLIN, 0 };

				/* The request head, then the redirect. */
				for (n = 0; n < sizeof(req) - 1 &&
				     poll(&q, 1, 2000) > 0;) {
					if ((r = read(fd, req + n,
						 sizeof(req) - 1 - n)) <= 0)
						break;
					n += (size_t)r;
					req[n] = '\0';
					if (strstr(req, "\r\n\r\n") != NULL)
						break;
				}
				snprintf(ans, sizeof(ans),
				    "HTTP/1.1 302 Found"
				    "\r\nLocation: %s\r\nContent-Length: 0\r\n"
				    "Connection: close\r\n\r\n",
				    l->l_redirect);
				if (write(fd, ans, strlen(ans)) == -1)
					(void)0;
			}
			close(fd);
		}
	}
	return NULL;
}

/* Listens on 127.0.0.1 (and ::1 when both) on a free port. */
static int
listener_start(struct listener *l, int both, const char *redirect)
{
	int tries;

	memset(l, 0, sizeof(*l));
	l->l_redirect = redirect;
	for (tries = 0; tries < 20; tries++) {
		if ((l->l_port = relayproc_free_port("127.0.0.1")) == -1)
			return -1;
		if ((l->l_fd[0] = listen_on("127.0.0.1", l->l_port)) == -1)
			continue;
		l->l_nfd = 1;
		if (!both)
			break;
		if ((l->l_fd[1] = listen_on("::1", l->l_port)) != -1) {
			l->l_nfd = 2;
			break;
		}
		close(l->l_fd[0]);
		l->l_nfd = 0;
	}
	if (l->l_nfd == 0)
		return -1;
	return pthread_create(&l->l_thread, NULL, listener_loop, l) == 0 ? 0 :
									   -1;
}

static int
listener_stop(struct listener *l)
{
	int i;

	l->l_stop = 1;
	pthread_join(l->l_thread, NULL);
	for (i = 0; i < l->l_nfd; i++)
		close(l->l_fd[i]);
	return __atomic_load_n(&l->l_count, __ATOMIC_SEQ_CST);
}

/* Loopback spellings of port, JSON strings, comma-separated. */
static void
loopback_urls(struct buf *out, int port)
{
	static const char *const hosts[] = { "localhost", "127.0.0.1", "127.1",
		"0x7f000001", "2130706433", "0177.0.0.1", "[::1]",
		"[::ffff:127.0.0.1]", "x.localhost", "localhost." };
	size_t			 i;

	for (i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++)
		buf_printf(out, ",\"ws://%s:%d\",\"wss://%s:%d/\"", hosts[i],
		    port, hosts[i], port);
}

/*
 * Announces repository d of owner on g with relays (JSON strings after a
 * comma) besides g's own URL, and releases it with a push.  0 or -1.
 */
static int
announce_and_release(struct gdproc *g, int owner, const char *d,
    const char *relays)
{
	struct event *e;
	uint8_t	      sk[SECKEY_LEN];
	char	      dir[600];

	tuser_sk(KEYS, owner, sk);
	snprintf(dir, sizeof(dir), "%s/repo%d", tmpdir, ndirs++);
	if ((e = gd_host_repo(g, sk, d, relays, dir, NULL)) == NULL)
		return -1;
	event_destroy(e);
	return 0;
}

static void
test_hygiene_vectors_and_loopback_never_dialled(void)
{
	struct listener l;
	struct gdproc  *g = NULL;
	struct buf	relays = BUF_INIT, r = BUF_INIT;
	struct event   *e = NULL;
	uint8_t		sk[SECKEY_LEN];
	const char     *p;
	int		nvec = 0, seen;
	double		refused;

	T_ASSERT(listener_start(&l, 1, NULL) == 0);
	T_ASSERT((nvec = gd_refused_urls(&relays, "", "")) > 30);
	loopback_urls(&relays, l.l_port);
	printf("# %d refused vectors and 20 loopback URLs of port %d\n", nvec,
	    l.l_port);
	g = gd_start(NULL);
	if (g == NULL) {
		listener_stop(&l);
		T_ASSERT(g != NULL);
	}
	T_CHECK(announce_and_release(g, 1, "ssrf", relays.b_data) == 0);
	/* The owner's relay list: the same URLs, read and write. */
	buf_adds(&r, "[");
	for (p = relays.b_data + 1; *p != '\0';) {
		size_t len = 0;
		int    esc = 0;

		/* One JSON string: up to its closing quote. */
		while (p[1 + len] != '\0' && (esc || p[1 + len] != '"')) {
			esc = !esc && p[1 + len] == '\\';
			len++;
		}
		buf_printf(&r, "%s[\"r\",%.*s]", r.b_len > 1 ? "," : "",
		    (int)len + 2, p);
		p += len + 2;
		if (*p == ',')
			p++;
	}
	buf_adds(&r, "]");
	tuser_sk(KEYS, 1, sk);
	T_ASSERT((e = event_new_signed(sk, time(NULL), 10002, r.b_data, "")) !=
	    NULL);
	T_CHECK(gd_publish(g, e) == 0);
	usleep(SETTLE_MS * 1000);
	seen = listener_stop(&l);
	printf("# connections to the loopback listener: %d\n", seen);
	T_EQ_INT(seen, 0);
	/* Refused and counted: syncd reports the announcement's refused
	 * relay URLs (every vector; loopback names fail at connect). */
	refused = ctl_metric_at("127.0.0.1", gd_port(g),
	    "graspd_syncd_repo_relays_refused{role=\"syncd\"}");
	printf("# syncd: %.0f relay URLs refused\n", refused);
	T_CHECK(refused >= nvec);
	/* Every role still up, none restarted by the hostile URLs. */
	{
		char states[GD_NROLES][16];
		long pids[GD_NROLES];
		int  i;

		T_CHECK(gd_roles_now(g, states, pids) == 0);
		for (i = 0; i < GD_NROLES; i++)
			T_CHECK(strcmp(states[i], "running") == 0);
	}
	event_destroy(e);
	gd_free(g);
	buf_free(&relays);
	buf_free(&r);
}

static void
test_allowed_relay_dialled_redirect_not_followed(void)
{
	struct listener target, redir;
	struct gdproc  *g = NULL;
	char		loc[64], relays[128];
	const char *env[] = { "NGIT_SYNC_ALLOW_PRIVATE_TARGETS=true", NULL };
	int64_t	    deadline;
	int	    dialled, followed;

	T_ASSERT(listener_start(&target, 0, NULL) == 0);
	snprintf(loc, sizeof(loc), "ws://127.0.0.1:%d/", target.l_port);
	if (listener_start(&redir, 0, loc) == -1) {
		listener_stop(&target);
		T_ASSERT(!"listener");
	}
	snprintf(relays, sizeof(relays), ",\"ws://127.0.0.1:%d\"",
	    redir.l_port);
	g = gd_start(env);
	if (g == NULL ||
	    announce_and_release(g, 2, "redirected", relays) == -1) {
		listener_stop(&target);
		listener_stop(&redir);
		gd_free(g);
		T_ASSERT(!"graspd with an announcement");
	}
	deadline = wsc_now_ms() + DIAL_MS;
	while (__atomic_load_n(&redir.l_count, __ATOMIC_SEQ_CST) == 0 &&
	    wsc_now_ms() < deadline)
		usleep(100000);
	/* Time for a redirect to be followed, and for retries. */
	usleep(3000000);
	dialled = listener_stop(&redir);
	followed = listener_stop(&target);
	printf("# the redirecting relay was dialled %d times; its target %d "
	       "times\n",
	    dialled, followed);
	T_CHECK(dialled > 0);
	T_EQ_INT(followed, 0);
	gd_free(g);
}

static const struct t_case cases[] = {
	T_CASE(test_hygiene_vectors_and_loopback_never_dialled),
	T_CASE(test_allowed_relay_dialled_redirect_not_followed),
};

T_MAIN_FIXTURE(cases, &gt_fixture, &tp, T_IGN_SIGPIPE)
