/*
 * slowloris_test.c: relayd's connection layer against clients that hold
 * connections without finishing anything (issue #39, items 1, 7, 8),
 * written as the attacks with raw sockets:
 *
 *   - 300 connections from 127.0.0.1 that send "GET / HTTP/1.1\r\n" and
 *     nothing more, reopened as they close, while NIP-11 requests from
 *     127.0.0.2 (Linux routes all of 127/8 to lo, so a client socket
 *     bound there is a second address) are answered; once the attack
 *     stops, 127.0.0.1 itself is answered after header_timeout;
 *   - a websocket that stays silent is pinged after ws_ping_interval and
 *     closed ws_pong_timeout later, while one that answers pings stays;
 *   - a websocket stopped halfway through a frame header, or a payload,
 *     is closed after ws_frame_timeout, while one sending whole frames
 *     slowly stays;
 *   - an unmasked client frame (RFC 6455 5.1) gets close 1002 and is
 *     not processed.
 *
 * The timeouts are set to a second or two through the settings.  The
 * /64 keying of IPv6 addresses is tests/unit/addrkey_test.c's.
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "ctl.h"
#include "relayproc.h"
#include "t.h"
#include "wsclient.h"

/* The attack of the issue: partial requests held from one address. */
#define PARTIALS     300
#define PARTIAL_LINE "GET / HTTP/1.1\r\n"
/* The longest the attacker keeps its partials up, and its pace. */
#define ATTACK_MS    30000
#define ATTACK_ROUND 100
/* A legitimate request's whole time, well under the old 10 s hold. */
#define LEGIT_TMO    3000
/* The settings the cases run relayd with. */
#define HEADER_SECS  2
#define PENDING_CAP  8

static void
ms_sleep(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* A TCP connection from src (an address of lo) to port; -1 on failure. */
static int
connect_from(const char *src, int port)
{
	struct sockaddr_in sa;
	int		   fd;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	inet_pton(AF_INET, src, &sa.sin_addr);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1)
		goto fail;
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	sa.sin_port = htons((uint16_t)port);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1)
		goto fail;
	return fd;
fail:
	close(fd);
	return -1;
}

/* Reads fd until end of stream or deadline into b; 0 at end, -1 else. */
static int
read_all(int fd, struct buf *b, int64_t deadline)
{
	struct pollfd pfd = { fd, POLLIN, 0 };
	char	      tmp[4096];
	ssize_t	      n;
	int	      left;

	for (;;) {
		if ((left = (int)(deadline - wsc_now_ms())) <= 0)
			return -1;
		if (poll(&pfd, 1, left) <= 0)
			continue;
		if ((n = read(fd, tmp, sizeof(tmp))) == 0)
			return 0;
		if (n < 0)
			return errno == EINTR ? 0 : -1;
		buf_add(b, tmp, (size_t)n);
	}
}

/* A NIP-11 request from src, answered 200 with the document in time. */
static int
nip11_from(const char *src, int port)
{
	struct buf b = BUF_INIT;
	char	   req[256];
	int64_t	   t0 = wsc_now_ms();
	int	   fd, ok = 0, n;

	if ((fd = connect_from(src, port)) == -1)
		return 0;
	n = snprintf(req, sizeof(req),
	    "GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
	    "Accept: application/nostr+json\r\nConnection: close\r\n\r\n",
	    port);
	if (write(fd, req, (size_t)n) == n &&
	    read_all(fd, &b, t0 + LEGIT_TMO) == 0) {
		buf_add(&b, "", 1);
		ok = strncmp(b.b_data, "HTTP/1.1 200", 12) == 0 &&
		    strstr(b.b_data, "supported_nips") != NULL;
	}
	printf("# NIP-11 from %s: %s in %lld ms\n", src, ok ? "200" : "failed",
	    (long long)(wsc_now_ms() - t0));
	close(fd);
	buf_free(&b);
	return ok;
}

/*
 * The attacker: PARTIALS partial requests from 127.0.0.1, each reopened
 * when relayd closes it, for ms milliseconds.  Runs in a child.
 */
static void
attack(int port, int ms)
{
	struct pollfd pfd[PARTIALS];
	int64_t	      end = wsc_now_ms() + ms;
	char	      tmp[512];
	int	      i;

	for (i = 0; i < PARTIALS; i++)
		pfd[i].fd = -1;
	while (wsc_now_ms() < end) {
		for (i = 0; i < PARTIALS; i++) {
			if (pfd[i].fd != -1)
				continue;
			pfd[i].fd = connect_from("127.0.0.1", port);
			pfd[i].events = POLLIN;
			if (pfd[i].fd != -1 &&
			    write(pfd[i].fd, PARTIAL_LINE,
				strlen(PARTIAL_LINE)) < 0) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
			}
		}
		if (poll(pfd, PARTIALS, ATTACK_ROUND) <= 0)
			continue;
		for (i = 0; i < PARTIALS; i++)
			if (pfd[i].fd != -1 && pfd[i].revents != 0 &&
			    read(pfd[i].fd, tmp, sizeof(tmp)) <= 0) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
			}
		/* The pace of the attack, not a busy loop. */
		ms_sleep(ATTACK_ROUND);
	}
	for (i = 0; i < PARTIALS; i++)
		if (pfd[i].fd != -1)
			close(pfd[i].fd);
}

static struct relayproc *
start(const char *const extra[])
{
	const char *env[16];
	char	    hdr[64], cap[64];
	int	    n = 0;

	snprintf(hdr, sizeof(hdr), "NGIT_HEADER_TIMEOUT=%d", HEADER_SECS);
	snprintf(cap, sizeof(cap), "NGIT_MAX_PENDING_PER_IP=%d", PENDING_CAP);
	env[n++] = hdr;
	env[n++] = cap;
	while (extra != NULL && *extra != NULL && n < 15)
		env[n++] = *extra++;
	env[n] = NULL;
	return relayproc_start("relayd", env);
}

static void
test_partial_requests_from_one_address_do_not_block_others(void)
{
	struct relayproc *rp;
	pid_t		  pid;
	int		  i, ok = 0, fd, status;
	double		  refused;
	int64_t		  t0;
	char		  c;

	T_ASSERT((rp = start(NULL)) != NULL);
	if ((pid = fork()) == 0) {
		attack(relayproc_port(rp), ATTACK_MS);
		_exit(0);
	}
	T_ASSERT(pid > 0);
	/* The attack is up: its 300 partials were all tried by now. */
	ms_sleep(1500);
	for (i = 0; i < 4; i++) {
		ok += nip11_from("127.0.0.2", relayproc_port(rp));
		ms_sleep(500);
	}
	printf("# %d of 4 NIP-11 requests from 127.0.0.2 answered\n", ok);
	T_EQ_INT(ok, 4);
	/* 127.0.0.1 itself has no room while the attack lasts. */
	T_CHECK(!nip11_from("127.0.0.1", relayproc_port(rp)));
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);

	/* The attack over, its partials go by the header timeout. */
	ms_sleep((HEADER_SECS + 1) * 1000);
	T_CHECK(nip11_from("127.0.0.1", relayproc_port(rp)));
	refused = ctl_metric(rp,
	    "graspd_relay_connections_refused_total"
	    "{role=\"relayd\",reason=\"pending_per_ip\"}");
	printf("# connections closed at the accept: %.0f\n", refused);
	T_CHECK(refused >= PARTIALS - PENDING_CAP);

	/* One partial request alone is closed after header_timeout. */
	T_ASSERT((fd = connect_from("127.0.0.3", relayproc_port(rp))) != -1);
	T_CHECK(write(fd, PARTIAL_LINE, strlen(PARTIAL_LINE)) > 0);
	t0 = wsc_now_ms();
	{
		struct pollfd pfd = { fd, POLLIN, 0 };

		T_CHECK(poll(&pfd, 1, (HEADER_SECS + 3) * 1000) == 1 &&
		    read(fd, &c, 1) <= 0);
	}
	printf("# a lone partial request closed after %lld ms\n",
	    (long long)(wsc_now_ms() - t0));
	T_CHECK(wsc_now_ms() - t0 >= (HEADER_SECS - 1) * 1000);
	close(fd);
	relayproc_free(rp);
}

/*
 * A raw websocket from src: the handshake done, the rest in *rx; extra
 * (extralen bytes, or NULL) is sent in the same write as the request.
 */
static int
raw_ws_with(const char *src, int port, struct buf *rx, const void *extra,
    size_t extralen)
{
	char	      req[512], tmp[4096], *eoh;
	int64_t	      deadline = wsc_now_ms() + 5000;
	ssize_t	      n;
	int	      fd, len;
	struct pollfd pfd;

	if ((fd = connect_from(src, port)) == -1)
		return -1;
	len = snprintf(req, sizeof(req),
	    "GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
	    "Connection: Upgrade\r\n"
	    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	    "Sec-WebSocket-Version: 13\r\n\r\n",
	    port);
	if (extra != NULL && (size_t)len + extralen < sizeof(req)) {
		memcpy(req + len, extra, extralen);
		len += (int)extralen;
	}
	if (write(fd, req, (size_t)len) != len)
		goto fail;
	buf_reset(rx);
	pfd.fd = fd;
	pfd.events = POLLIN;
	while (wsc_now_ms() < deadline) {
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		if ((n = read(fd, tmp, sizeof(tmp))) <= 0)
			goto fail;
		buf_add(rx, tmp, (size_t)n);
		buf_add(rx, "", 1);
		rx->b_len--;
		if ((eoh = strstr(rx->b_data, "\r\n\r\n")) == NULL)
			continue;
		if (strncmp(rx->b_data, "HTTP/1.1 101", 12) != 0)
			goto fail;
		n = eoh + 4 - rx->b_data;
		memmove(rx->b_data, eoh + 4, rx->b_len - (size_t)n);
		rx->b_len -= (size_t)n;
		return fd;
	}
fail:
	close(fd);
	return -1;
}

/* The payload of the last frame next_frame() returned, NUL-terminated. */
static struct buf last = BUF_INIT;

static int
raw_ws(const char *src, int port, struct buf *rx)
{
	return raw_ws_with(src, port, rx, NULL, 0);
}

/*
 * Reads frames from fd (rx holding what came already) until deadline:
 * the opcode of the first frame of opcode want (or close), -1 on end of
 * stream, 0 at the deadline.  *close_code gets a close frame's status.
 */
static int
next_frame(int fd, struct buf *rx, int want, int64_t deadline, int *close_code)
{
	struct ws_frame f;
	struct pollfd	pfd = { fd, POLLIN, 0 };
	char		tmp[4096];
	ssize_t		n;
	int		left;

	for (;;) {
		while (wsc_frame_parse((uint8_t *)rx->b_data, rx->b_len, &f) ==
			1 &&
		    rx->b_len >= f.hdrlen + f.len) {
			int op = f.opcode;

			if (op == WS_OP_CLOSE && close_code != NULL)
				*close_code = f.len >= 2 ?
				    ((uint8_t)rx->b_data[f.hdrlen] << 8) |
					(uint8_t)rx->b_data[f.hdrlen + 1] :
				    1005;
			buf_reset(&last);
			buf_add(&last, rx->b_data + f.hdrlen, (size_t)f.len);
			buf_add(&last, "", 1);
			memmove(rx->b_data, rx->b_data + f.hdrlen + f.len,
			    rx->b_len - f.hdrlen - f.len);
			rx->b_len -= f.hdrlen + f.len;
			if (op == want || op == WS_OP_CLOSE)
				return op;
		}
		if ((left = (int)(deadline - wsc_now_ms())) <= 0)
			return 0;
		if (poll(&pfd, 1, left) <= 0)
			continue;
		if ((n = read(fd, tmp, sizeof(tmp))) <= 0)
			return -1;
		buf_add(rx, tmp, (size_t)n);
	}
}

/* Waits until fd's peer closes (a close frame or end of stream). */
static int
closed_within(int fd, struct buf *rx, int ms, int *close_code)
{
	int op = next_frame(fd, rx, -1, wsc_now_ms() + ms, close_code);

	return op == WS_OP_CLOSE || op == -1;
}

static void
test_idle_websocket_is_pinged_then_closed(void)
{
	const char	 *env[] = { "NGIT_WS_PING_INTERVAL=1",
		      "NGIT_WS_PONG_TIMEOUT=2", NULL };
	struct relayproc *rp;
	struct buf	  rx = BUF_INIT;
	struct wsc	 *ws;
	const char	 *req = "[\"REQ\",\"s\",{\"limit\":1}]";
	char		 *msg;
	int64_t		  t0;
	int		  fd, op, code = 0;

	T_ASSERT((rp = start(env)) != NULL);
	T_ASSERT((fd = raw_ws("127.0.0.1", relayproc_port(rp), &rx)) != -1);
	t0 = wsc_now_ms();
	op = next_frame(fd, &rx, WS_OP_PING, t0 + 4000, &code);
	printf("# silent websocket: opcode %d after %lld ms\n", op,
	    (long long)(wsc_now_ms() - t0));
	T_EQ_INT(op, WS_OP_PING);
	/* Not answered: closed a pong timeout later. */
	T_CHECK(closed_within(fd, &rx, 4000, &code));
	printf("# closed %lld ms after the upgrade\n",
	    (long long)(wsc_now_ms() - t0));
	close(fd);

	/* A client that answers pings (wsc does) stays open. */
	T_ASSERT((ws = wsc_connect(relayproc_host(rp), relayproc_port(rp), "/",
		      5000)) != NULL);
	free(wsc_recv(ws, 500, NULL)); /* the AUTH challenge */
	T_CHECK(wsc_recv(ws, 3500, NULL) == NULL && !wsc_is_closed(ws));
	T_CHECK(wsc_send_text(ws, req, strlen(req)) == 0);
	T_CHECK((msg = wsc_recv(ws, 3000, NULL)) != NULL &&
	    strstr(msg, "EOSE") != NULL);
	free(msg);
	wsc_close(ws);
	buf_free(&rx);
	relayproc_free(rp);
}

static void
test_frame_stopped_halfway_is_closed(void)
{
	const char	    *env[] = { "NGIT_WS_FRAME_TIMEOUT=1",
			 "NGIT_WS_PING_INTERVAL=60", NULL };
	/* FIN and text, then "masked, a 16-bit length follows". */
	static const uint8_t head[] = { 0x81, 0x80 | 126 };
	static const uint8_t mask[4] = { 1, 2, 3, 4 };
	struct relayproc    *rp;
	struct buf	     rx = BUF_INIT, fr = BUF_INIT;
	struct wsc	    *ws;
	const char	    *req = "[\"REQ\",\"s\",{\"limit\":1}]";
	char		    *msg;
	int64_t		     t0;
	int		     fd, code = 0, i, ok = 1;

	T_ASSERT((rp = start(env)) != NULL);
	/* Two bytes of a header, then nothing. */
	T_ASSERT((fd = raw_ws("127.0.0.1", relayproc_port(rp), &rx)) != -1);
	T_CHECK(write(fd, head, sizeof(head)) == (ssize_t)sizeof(head));
	t0 = wsc_now_ms();
	T_CHECK(closed_within(fd, &rx, 5000, &code));
	printf("# stopped in a frame header: closed after %lld ms, %d\n",
	    (long long)(wsc_now_ms() - t0), code);
	T_CHECK(wsc_now_ms() - t0 >= 900);
	T_EQ_INT(code, 1008);
	close(fd);

	/* The header whole, the payload half sent. */
	T_ASSERT((fd = raw_ws("127.0.0.1", relayproc_port(rp), &rx)) != -1);
	wsc_frame_encode(&fr, WS_OP_TEXT, 1, mask, req, strlen(req));
	T_CHECK(write(fd, fr.b_data, fr.b_len / 2) > 0);
	t0 = wsc_now_ms();
	code = 0;
	T_CHECK(closed_within(fd, &rx, 5000, &code));
	printf("# stopped in a payload: closed after %lld ms, %d\n",
	    (long long)(wsc_now_ms() - t0), code);
	T_EQ_INT(code, 1008);
	close(fd);
	T_CHECK(ctl_metric(rp,
		    "graspd_relay_websockets_closed_total"
		    "{role=\"relayd\",reason=\"frame_timeout\"}") == 2);

	/* Whole frames, slowly, are not a stalled frame. */
	T_ASSERT((ws = wsc_connect(relayproc_host(rp), relayproc_port(rp), "/",
		      5000)) != NULL);
	free(wsc_recv(ws, 500, NULL));
	for (i = 0; i < 5 && ok; i++) {
		ms_sleep(600);
		ok = wsc_send_text(ws, req, strlen(req)) == 0 &&
		    (msg = wsc_recv(ws, 3000, NULL)) != NULL;
		if (ok)
			free(msg);
	}
	T_CHECK(ok && !wsc_is_closed(ws));
	wsc_close(ws);
	buf_free(&fr);
	buf_free(&rx);
	relayproc_free(rp);
}

static void
test_unmasked_frame_is_closed_1002(void)
{
	static const uint8_t ping[] = { 0x80 | WS_OP_PING, 0 };
	const char	    *env[] = { "NGIT_WS_FRAME_TIMEOUT=0", NULL };
	struct relayproc    *rp;
	struct buf	     rx = BUF_INIT, fr = BUF_INIT;
	const char	    *req = "[\"REQ\",\"u\",{\"limit\":1}]";
	int		     fd, code = 0, op;

	/* No frame-timeout sweep: the close may not wait for one. */
	T_ASSERT((rp = start(env)) != NULL);
	T_ASSERT((fd = raw_ws("127.0.0.1", relayproc_port(rp), &rx)) != -1);
	/* A REQ in a frame without a mask, as a server would send it. */
	wsc_frame_encode(&fr, WS_OP_TEXT, 1, NULL, req, strlen(req));
	T_CHECK(write(fd, fr.b_data, fr.b_len) == (ssize_t)fr.b_len);
	/* Its EOSE would be a text frame before the close. */
	while ((op = next_frame(fd, &rx, WS_OP_TEXT, wsc_now_ms() + 3000,
		    &code)) == WS_OP_TEXT) {
		T_CHECK(strstr(last.b_data, "EOSE") == NULL);
	}
	printf("# unmasked REQ: opcode %d, close %d\n", op, code);
	T_EQ_INT(op, WS_OP_CLOSE);
	T_EQ_INT(code, 1002);
	close(fd);

	/* An unmasked ping, no payload for relayd to see, the same. */
	T_ASSERT((fd = raw_ws("127.0.0.1", relayproc_port(rp), &rx)) != -1);
	T_CHECK(write(fd, ping, sizeof(ping)) == (ssize_t)sizeof(ping));
	code = 0;
	op = next_frame(fd, &rx, -1, wsc_now_ms() + 3000, &code);
	printf("# unmasked ping: opcode %d, close %d\n", op, code);
	T_EQ_INT(op, WS_OP_CLOSE);
	T_EQ_INT(code, 1002);
	close(fd);

	/* The same sent behind the upgrade request, before the 101. */
	T_ASSERT((fd = raw_ws_with("127.0.0.1", relayproc_port(rp), &rx, ping,
		      sizeof(ping))) != -1);
	code = 0;
	op = next_frame(fd, &rx, -1, wsc_now_ms() + 3000, &code);
	printf("# unmasked ping before the 101: opcode %d, close %d\n", op,
	    code);
	T_EQ_INT(op, WS_OP_CLOSE);
	T_EQ_INT(code, 1002);
	close(fd);
	T_CHECK(ctl_metric(rp,
		    "graspd_relay_websockets_closed_total"
		    "{role=\"relayd\",reason=\"unmasked\"}") == 3);
	buf_free(&fr);
	buf_free(&rx);
	relayproc_free(rp);
	buf_free(&last);
}

static const struct t_case cases[] = {
	T_CASE(test_partial_requests_from_one_address_do_not_block_others),
	T_CASE(test_idle_websocket_is_pinged_then_closed),
	T_CASE(test_frame_stopped_halfway_is_closed),
	T_CASE(test_unmasked_frame_is_closed_1002),
};

T_MAIN_WITH(cases, NULL, NULL, T_IGN_SIGPIPE)
