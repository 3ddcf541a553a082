/*
 * wsclient_test.c: the test tools' websocket client and HTTP helper
 * (tests/lib/wsclient.c) against a tiny server side written here, over
 * socketpairs and loopback TCP; no relayd needed.  Server sides that must
 * run while the client blocks are forked children that report through
 * their exit status.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include "buf.h"
#include "relayproc.h"
#include "t.h"
#include "wsclient.h"

/* A frame as the server side reads it, decoded here independently. */
struct sframe {
	int	 fin, op, masked;
	size_t	 hdrlen, len;
	uint8_t	 mask[4];
	uint8_t *p; /* unmasked payload, malloc'd */
};

static int
read_full(int fd, void *p, size_t n)
{
	struct pollfd pfd = { fd, POLLIN, 0 };
	char	     *c = p;
	ssize_t	      r;

	while (n > 0) {
		if (poll(&pfd, 1, 3000) != 1)
			return -1;
		if ((r = read(fd, c, n)) <= 0)
			return -1;
		c += r;
		n -= (size_t)r;
	}
	return 0;
}

static int
write_full(int fd, const void *p, size_t n)
{
	const char *c = p;
	ssize_t	    r;

	while (n > 0) {
		if ((r = send(fd, c, n, MSG_NOSIGNAL)) <= 0)
			return -1;
		c += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Reads one frame from a client.  0, or -1 on a short read. */
static int
srv_frame(int fd, struct sframe *f)
{
	uint8_t h[14];
	size_t	i;

	memset(f, 0, sizeof(*f));
	if (read_full(fd, h, 2) == -1)
		return -1;
	f->fin = h[0] >> 7;
	f->op = h[0] & 15;
	f->masked = h[1] >> 7;
	f->len = h[1] & 127;
	f->hdrlen = 2;
	if (f->len == 126) {
		if (read_full(fd, h + 2, 2) == -1)
			return -1;
		f->len = (size_t)h[2] << 8 | h[3];
		f->hdrlen = 4;
	} else if (f->len == 127) {
		if (read_full(fd, h + 2, 8) == -1)
			return -1;
		f->len = 0;
		for (i = 0; i < 8; i++)
			f->len = f->len << 8 | h[2 + i];
		f->hdrlen = 10;
	}
	if (f->masked) {
		if (read_full(fd, f->mask, 4) == -1)
			return -1;
		f->hdrlen += 4;
	}
	f->p = malloc(f->len + 1);
	if (f->p == NULL || read_full(fd, f->p, f->len) == -1)
		return -1;
	for (i = 0; f->masked && i < f->len; i++)
		f->p[i] ^= f->mask[i % 4];
	f->p[f->len] = '\0';
	return 0;
}

/* Runs fn(fd) in a child that exits with fn's result. */
static pid_t
fork_server(int fd, int (*fn)(int))
{
	pid_t pid;

	fflush(NULL);
	if ((pid = fork()) == 0)
		_exit(fn(fd));
	return pid;
}

/*
 * fork_server(fn) on one end of a new socketpair (the child's pid in
 * *pid); our end, or -1.
 */
static int
pair_server(int (*fn)(int), pid_t *pid)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == -1)
		return -1;
	*pid = fork_server(sv[1], fn);
	close(sv[1]);
	return sv[0];
}

/* Exit status of a server child, killing it after 5 s. */
static int
reap(pid_t pid)
{
	int st, i;

	for (i = 0; i < 500; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 200;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return 201;
}

static void
fill(uint8_t *p, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)('a' + (i * 7 + seed) % 26);
}

static void
encoder_matches_rfc6455_examples(void)
{
	/* RFC 6455 section 5.7. */
	static const uint8_t unmasked[] = { 0x81, 0x05, 'H', 'e', 'l', 'l',
		'o' };
	static const uint8_t masked[] = { 0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d,
		0x7f, 0x9f, 0x4d, 0x51, 0x58 };
	static const uint8_t mask[4] = { 0x37, 0xfa, 0x21, 0x3d };
	static const uint8_t h256[] = { 0x82, 0x7e, 0x01, 0x00 };
	static const uint8_t h64k[] = { 0x82, 0x7f, 0, 0, 0, 0, 0, 1, 0, 0 };
	static uint8_t	     big[65536];
	struct buf	     b = BUF_INIT;

	wsc_frame_encode(&b, WS_OP_TEXT, 1, NULL, "Hello", 5);
	T_EQ_INT(b.b_len, sizeof(unmasked));
	T_CHECK(memcmp(b.b_data, unmasked, sizeof(unmasked)) == 0);
	buf_reset(&b);
	wsc_frame_encode(&b, WS_OP_TEXT, 1, mask, "Hello", 5);
	T_EQ_INT(b.b_len, sizeof(masked));
	T_CHECK(memcmp(b.b_data, masked, sizeof(masked)) == 0);
	buf_reset(&b);
	wsc_frame_encode(&b, WS_OP_BINARY, 1, NULL, big, 256);
	T_EQ_INT(b.b_len, 4 + 256);
	T_CHECK(memcmp(b.b_data, h256, sizeof(h256)) == 0);
	buf_reset(&b);
	wsc_frame_encode(&b, WS_OP_BINARY, 1, NULL, big, sizeof(big));
	T_EQ_INT(b.b_len, 10 + sizeof(big));
	T_CHECK(memcmp(b.b_data, h64k, sizeof(h64k)) == 0);
	buf_free(&b);
}

static void
accept_key_matches_rfc6455_example(void)
{
	char out[29];

	/* RFC 6455 section 1.3. */
	wsc_accept_key("dGhlIHNhbXBsZSBub25jZQ==", out);
	T_EQ_STR(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

static void
parser_refuses_non_minimal_lengths(void)
{
	static const uint8_t short16[] = { 0x81, 0x7e, 0x00, 0x10 };
	static const uint8_t short64[] = { 0x81, 0x7f, 0, 0, 0, 0, 0, 0, 0xff,
		0xff };
	static const uint8_t top64[] = { 0x81, 0x7f, 0x80, 0, 0, 0, 0, 1, 0,
		0 };
	static const uint8_t ok64[] = { 0x82, 0xff, 0, 0, 0, 0, 0, 1, 0, 0, 1,
		2, 3, 4 };
	struct ws_frame	     f;

	T_EQ_INT(wsc_frame_parse(short16, sizeof(short16), &f), -1);
	T_EQ_INT(wsc_frame_parse(short64, sizeof(short64), &f), -1);
	T_EQ_INT(wsc_frame_parse(top64, sizeof(top64), &f), -1);
	T_EQ_INT(wsc_frame_parse(ok64, 1, &f), 0);
	T_EQ_INT(wsc_frame_parse(ok64, 9, &f), 0);
	T_EQ_INT(wsc_frame_parse(ok64, 13, &f), 0);
	T_EQ_INT(wsc_frame_parse(ok64, sizeof(ok64), &f), 1);
	T_EQ_INT(f.len, 65536);
	T_EQ_INT(f.hdrlen, 14);
	T_EQ_INT(f.masked, 1);
	T_EQ_INT(f.opcode, WS_OP_BINARY);
	T_CHECK(f.mask[3] == 4);
}

static const size_t send_lens[] = { 0, 1, 125, 126, 127, 65535, 65536, 70000 };

/* Server side of send_masks_every_length; exit code 0 if all well. */
static int
check_sent_frames(int fd)
{
	static uint8_t want[70000];
	struct sframe  f;
	uint8_t	       last_mask[4] = { 0 };
	size_t	       i, hl;

	for (i = 0; i < sizeof(send_lens) / sizeof(send_lens[0]); i++) {
		if (srv_frame(fd, &f) == -1)
			return 10 + (int)i;
		hl = send_lens[i] < 126 ? 6 : send_lens[i] <= 0xffff ? 8 : 14;
		fill(want, send_lens[i], (unsigned)i);
		if (!f.fin || f.op != WS_OP_TEXT || !f.masked ||
		    f.len != send_lens[i] || f.hdrlen != hl ||
		    memcmp(f.p, want, f.len) != 0)
			return 30 + (int)i;
		if (i > 0 && memcmp(f.mask, last_mask, 4) == 0)
			return 50 + (int)i;
		memcpy(last_mask, f.mask, 4);
		free(f.p);
	}
	return 0;
}

static void
send_masks_every_length(void)
{
	static uint8_t msg[70000];
	struct wsc    *w;
	size_t	       i;
	pid_t	       pid;
	int	       fd;

	T_ASSERT((fd = pair_server(check_sent_frames, &pid)) != -1);
	w = wsc_adopt(fd);
	for (i = 0; i < sizeof(send_lens) / sizeof(send_lens[0]); i++) {
		fill(msg, send_lens[i], (unsigned)i);
		T_CHECK(wsc_send_text(w, (char *)msg, send_lens[i]) == 0);
	}
	T_EQ_INT(reap(pid), 0);
	wsc_drop(w);
}

static void
receives_rfc6455_example_frames(void)
{
	/* RFC 6455 section 5.7: single frame, then two fragments. */
	static const uint8_t one[] = { 0x81, 0x05, 'H', 'e', 'l', 'l', 'o' };
	static const uint8_t frag[] = { 0x01, 0x03, 'H', 'e', 'l', 0x80, 0x02,
		'l', 'o' };
	struct wsc	    *w;
	char		    *m;
	size_t		     len = 0;
	int		     sv[2];

	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	w = wsc_adopt(sv[0]);
	T_ASSERT(write_full(sv[1], one, sizeof(one)) == 0);
	T_ASSERT(write_full(sv[1], frag, sizeof(frag)) == 0);
	m = wsc_recv(w, 1000, &len);
	T_EQ_STR(m, "Hello");
	T_EQ_INT(len, 5);
	T_EQ_INT(wsc_last_opcode(w), WS_OP_TEXT);
	free(m);
	m = wsc_recv(w, 1000, &len);
	T_EQ_STR(m, "Hello");
	free(m);
	T_CHECK(!wsc_is_closed(w));
	wsc_drop(w);
	close(sv[1]);
}

/* Server side: a 256-byte binary and a 70000-byte text message. */
static int
send_long_frames(int fd)
{
	static uint8_t p[70000];
	struct buf     b = BUF_INIT;

	fill(p, 256, 1);
	wsc_frame_encode(&b, WS_OP_BINARY, 1, NULL, p, 256);
	fill(p, sizeof(p), 2);
	wsc_frame_encode(&b, WS_OP_TEXT, 1, NULL, p, sizeof(p));
	return write_full(fd, b.b_data, b.b_len) == 0 ? 0 : 1;
}

static void
receives_16_and_64_bit_lengths(void)
{
	static uint8_t want[70000];
	struct wsc    *w;
	char	      *m;
	size_t	       len = 0;
	pid_t	       pid;
	int	       fd;

	T_ASSERT((fd = pair_server(send_long_frames, &pid)) != -1);
	w = wsc_adopt(fd);
	m = wsc_recv(w, 3000, &len);
	T_ASSERT(m != NULL);
	T_EQ_INT(len, 256);
	T_EQ_INT(wsc_last_opcode(w), WS_OP_BINARY);
	fill(want, 256, 1);
	T_CHECK(memcmp(m, want, 256) == 0);
	free(m);
	m = wsc_recv(w, 3000, &len);
	T_ASSERT(m != NULL);
	T_EQ_INT(len, 70000);
	T_EQ_INT(wsc_last_opcode(w), WS_OP_TEXT);
	fill(want, sizeof(want), 2);
	T_CHECK(memcmp(m, want, sizeof(want)) == 0);
	free(m);
	T_EQ_INT(reap(pid), 0);
	wsc_drop(w);
}

static void
ping_inside_fragmented_message_is_answered(void)
{
	/* Control frames may come between fragments (RFC 6455 5.4). */
	static const uint8_t in[] = { 0x01, 0x03, 'H', 'e', 'l', 0x89, 0x05,
		'p', 'i', 'n', 'g', '!', 0x80, 0x02, 'l', 'o' };
	struct sframe	     f;
	struct wsc	    *w;
	char		    *m;
	int		     sv[2];

	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	w = wsc_adopt(sv[0]);
	T_ASSERT(write_full(sv[1], in, sizeof(in)) == 0);
	m = wsc_recv(w, 1000, NULL);
	T_EQ_STR(m, "Hello");
	free(m);
	T_ASSERT(srv_frame(sv[1], &f) == 0);
	T_EQ_INT(f.op, WS_OP_PONG);
	T_CHECK(f.fin && f.masked);
	T_EQ_STR((char *)f.p, "ping!");
	free(f.p);
	wsc_drop(w);
	close(sv[1]);
}

static void
close_frame_is_echoed(void)
{
	static const uint8_t in[] = { 0x88, 0x06, 0x03, 0xe8, 'b', 'y', 'e',
		'!' };
	struct sframe	     f;
	struct wsc	    *w;
	int		     sv[2];

	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	w = wsc_adopt(sv[0]);
	T_ASSERT(write_full(sv[1], in, sizeof(in)) == 0);
	T_CHECK(wsc_recv(w, 1000, NULL) == NULL);
	T_CHECK(wsc_is_closed(w));
	T_EQ_INT(wsc_close_code(w), 1000);
	T_CHECK(strstr(wsc_error(w), "bye!") != NULL);
	T_ASSERT(srv_frame(sv[1], &f) == 0);
	T_EQ_INT(f.op, WS_OP_CLOSE);
	T_EQ_INT(f.len, 2);
	T_CHECK(f.masked && f.p[0] == 0x03 && f.p[1] == 0xe8);
	free(f.p);
	T_EQ_INT(wsc_send_text(w, "x", 1), -1);
	wsc_close(w);
	close(sv[1]);
}

/* Feeds bytes to a fresh client; expects a protocol error and a 1002. */
static int
protocol_error_for(const uint8_t *in, size_t n, const char *why)
{
	struct sframe f;
	struct wsc   *w;
	int	      sv[2], rc = 0;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == -1)
		return 0;
	w = wsc_adopt(sv[0]);
	if (write_full(sv[1], in, n) == 0 && wsc_recv(w, 1000, NULL) == NULL &&
	    wsc_is_closed(w) && strstr(wsc_error(w), why) != NULL &&
	    srv_frame(sv[1], &f) == 0) {
		rc = f.op == WS_OP_CLOSE && f.len == 2 && f.p[0] == 0x03 &&
		    f.p[1] == 0xea;
		free(f.p);
	}
	wsc_drop(w);
	close(sv[1]);
	return rc;
}

static void
server_protocol_errors_close_with_1002(void)
{
	static const uint8_t masked[] = { 0x81, 0x81, 1, 2, 3, 4, 'x' };
	static const uint8_t rsv[] = { 0xc1, 0x01, 'x' };
	static const uint8_t cont[] = { 0x80, 0x01, 'x' };
	static const uint8_t longping[] = { 0x89, 0x7e, 0x00, 0x7e };
	static const uint8_t fragping[] = { 0x09, 0x00 };
	static const uint8_t nested[] = { 0x01, 0x01, 'x', 0x01, 0x01, 'y' };
	static const uint8_t badop[] = { 0x83, 0x00 };

	T_CHECK(protocol_error_for(masked, sizeof(masked), "masked"));
	T_CHECK(protocol_error_for(rsv, sizeof(rsv), "RSV"));
	T_CHECK(protocol_error_for(cont, sizeof(cont), "continuation"));
	T_CHECK(protocol_error_for(longping, sizeof(longping), "control"));
	T_CHECK(protocol_error_for(fragping, sizeof(fragping), "control"));
	T_CHECK(protocol_error_for(nested, sizeof(nested), "fragmented"));
	T_CHECK(protocol_error_for(badop, sizeof(badop), "opcode"));
}

static void
recv_times_out_without_closing(void)
{
	struct wsc *w;
	int64_t	    t0;
	int	    sv[2];

	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	w = wsc_adopt(sv[0]);
	t0 = wsc_now_ms();
	T_CHECK(wsc_recv(w, 100, NULL) == NULL);
	T_CHECK(wsc_now_ms() - t0 >= 90);
	T_CHECK(wsc_now_ms() - t0 < 2000);
	T_CHECK(!wsc_is_closed(w));
	T_CHECK(wsc_recv(w, 0, NULL) == NULL);
	wsc_drop(w);
	close(sv[1]);
}

static void
end_of_stream_closes(void)
{
	struct wsc *w;
	int	    sv[2];

	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	w = wsc_adopt(sv[0]);
	/* Half a frame, then the server goes away. */
	T_ASSERT(write_full(sv[1], "\x81\x05Hel", 5) == 0);
	close(sv[1]);
	T_CHECK(wsc_recv(w, 1000, NULL) == NULL);
	T_CHECK(wsc_is_closed(w));
	T_EQ_INT(wsc_close_code(w), 0);
	T_EQ_INT(wsc_send_text(w, "x", 1), -1);
	wsc_close(w);
}

static void
buffered_api_assembles_byte_by_byte(void)
{
	static const uint8_t in[] = { 0x01, 0x03, 'H', 'e', 'l', 0x80, 0x7e,
		0x00, 0x80 };
	static uint8_t	     tail[128];
	struct wsc	    *w;
	char		    *m = NULL;
	size_t		     i, len = 0;
	int		     sv[2], op = -1, got_early = 0;

	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	w = wsc_adopt(sv[0]);
	T_EQ_INT(wsc_read_available(w), 0);
	fill(tail, sizeof(tail), 3);
	for (i = 0; i < sizeof(in) + sizeof(tail); i++) {
		uint8_t c = i < sizeof(in) ? in[i] : tail[i - sizeof(in)];

		T_ASSERT(write_full(sv[1], &c, 1) == 0);
		T_ASSERT(wsc_read_available(w) == 1);
		if ((m = wsc_next(w, &len, &op)) != NULL &&
		    i + 1 < sizeof(in) + sizeof(tail))
			got_early = 1;
		if (m != NULL)
			break;
	}
	T_CHECK(!got_early);
	T_ASSERT(m != NULL);
	T_EQ_INT(len, 3 + sizeof(tail));
	T_EQ_INT(op, WS_OP_TEXT);
	T_CHECK(memcmp(m, "Hel", 3) == 0);
	T_CHECK(memcmp(m + 3, tail, sizeof(tail)) == 0);
	T_CHECK(wsc_next(w, NULL, NULL) == NULL);
	free(m);
	wsc_drop(w);
	close(sv[1]);
}

/* Reads an HTTP request head; returns it malloc'd or NULL. */
static char *
read_request(int fd)
{
	struct buf b = BUF_INIT;
	char	   c;

	while (b.b_len < 8192) {
		if (read_full(fd, &c, 1) == -1)
			break;
		buf_addc(&b, c);
		if (b.b_len >= 4 &&
		    memcmp(b.b_data + b.b_len - 4, "\r\n\r\n", 4) == 0)
			return buf_release(&b, NULL);
	}
	buf_free(&b);
	return NULL;
}

static int handshake_mode; /* 0 good, 1 bad accept, 2 refuse */

static int
handshake_server(int fd)
{
	struct buf b = BUF_INIT;
	char	  *req, *key, acc[29];
	uint8_t	   frame[] = { 0x81, 0x02, 'h', 'i' };

	if ((req = read_request(fd)) == NULL)
		return 1;
	if (strncmp(req, "GET /some/path HTTP/1.1\r\n", 25) != 0 ||
	    strstr(req, "\r\nHost: 127.0.0.1:1234\r\n") == NULL ||
	    strstr(req, "\r\nSec-WebSocket-Version: 13\r\n") == NULL ||
	    strstr(req, "\r\nX-Test: yes\r\n") == NULL)
		return 2;
	if ((key = http_header_value(req + strcspn(req, "\n") + 1,
		 "Sec-WebSocket-Key")) == NULL ||
	    strlen(key) != 24)
		return 3;
	wsc_accept_key(key, acc);
	if (handshake_mode == 1)
		acc[0] ^= 1;
	if (handshake_mode == 2)
		buf_adds(&b, "HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n");
	else
		buf_printf(&b,
		    "HTTP/1.1 101 Switching Protocols\r\n"
		    "upgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\n"
		    "Sec-WebSocket-Accept: %s\r\n\r\n",
		    acc);
	/* A first frame in the same segment as the answer. */
	buf_add(&b, frame, sizeof(frame));
	return write_full(fd, b.b_data, b.b_len) == 0 ? 0 : 4;
}

static struct wsc *
handshake_with(int mode, int *status, int *child_rc)
{
	struct wsc *w;
	pid_t	    pid;
	int	    fd;

	handshake_mode = mode;
	if ((fd = pair_server(handshake_server, &pid)) == -1)
		return NULL;
	w = wsc_handshake(fd, "127.0.0.1", 1234, "/some/path",
	    "X-Test: yes\r\n", 3000, status);
	*child_rc = reap(pid);
	return w;
}

static void
handshake_checks_accept_and_keeps_early_frames(void)
{
	struct wsc *w;
	char	   *m;
	int	    status = 0, rc = -1;

	w = handshake_with(0, &status, &rc);
	T_EQ_INT(rc, 0);
	T_EQ_INT(status, 101);
	T_ASSERT(w != NULL);
	m = wsc_recv(w, 1000, NULL);
	T_EQ_STR(m, "hi");
	free(m);
	wsc_drop(w);

	w = handshake_with(1, &status, &rc);
	T_EQ_INT(rc, 0);
	T_CHECK(w == NULL);
	T_EQ_INT(status, 101);
	wsc_drop(w);

	w = handshake_with(2, &status, &rc);
	T_EQ_INT(rc, 0);
	T_CHECK(w == NULL);
	T_EQ_INT(status, 503);
	wsc_drop(w);
}

/* A loopback listener on host; its port in *port, or -1. */
static int
listen_loopback(const char *host, int *port)
{
	return relayproc_listen(host, SOCK_STREAM, 4, port);
}

/* Accepts one websocket client and echoes one text message. */
static int
echo_server(int lfd)
{
	struct buf    b = BUF_INIT;
	struct sframe f;
	char	     *req, *key, acc[29];
	int	      fd;

	if ((fd = accept(lfd, NULL, NULL)) == -1)
		return 1;
	if ((req = read_request(fd)) == NULL ||
	    (key = http_header_value(req, "Sec-WebSocket-Key")) == NULL)
		return 2;
	wsc_accept_key(key, acc);
	buf_printf(&b,
	    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: "
	    "websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s"
	    "\r\n\r\n",
	    acc);
	if (write_full(fd, b.b_data, b.b_len) == -1 || srv_frame(fd, &f) == -1)
		return 3;
	buf_reset(&b);
	wsc_frame_encode(&b, WS_OP_TEXT, 1, NULL, f.p, f.len);
	return write_full(fd, b.b_data, b.b_len) == 0 ? 0 : 4;
}

static int
echo_over_tcp(const char *host)
{
	struct wsc *w;
	char	   *m;
	pid_t	    pid;
	int	    lfd, port, ok;

	if ((lfd = listen_loopback(host, &port)) == -1)
		return -1;
	pid = fork_server(lfd, echo_server);
	close(lfd);
	w = wsc_connect(host, port, "/", 3000);
	ok = w != NULL && wsc_send_text(w, "[\"REQ\",\"x\",{}]", 15) == 0;
	m = ok ? wsc_recv(w, 3000, NULL) : NULL;
	ok = m != NULL && strcmp(m, "[\"REQ\",\"x\",{}]") == 0;
	free(m);
	wsc_close(w);
	return reap(pid) == 0 && ok;
}

static void
connects_over_ipv4_and_ipv6_loopback(void)
{
	int v6;

	T_EQ_INT(echo_over_tcp("127.0.0.1"), 1);
	/* A machine without IPv6 loopback cannot listen on ::1. */
	if ((v6 = echo_over_tcp("::1")) == -1)
		printf("# ::1 unavailable, IPv6 not tested\n");
	else
		T_EQ_INT(v6, 1);
	T_CHECK(wsc_tcp_connect("127.0.0.1", 1, 500) == -1);
}

/* Answers a GET chunked and a POST with a length, one per connection. */
static int
http_server(int lfd)
{
	const char *chunked =
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: "
	    "chunked\r\nAccess-Control-Allow-Origin:  *  \r\nContent-Type: "
	    "application/nostr+json\r\n\r\n7\r\nhello, \r\n5;x=y\r\nworld\r\n"
	    "0\r\nX-Trailer: 1\r\n\r\n";
	struct buf b = BUF_INIT;
	char	  *req, body[5];
	int	   fd;

	if ((fd = accept(lfd, NULL, NULL)) == -1 ||
	    (req = read_request(fd)) == NULL)
		return 1;
	if (strncmp(req, "GET / HTTP/1.1\r\n", 16) != 0 ||
	    strstr(req, "\r\nAccept: application/nostr+json\r\n") == NULL)
		return 2;
	if (write_full(fd, chunked, strlen(chunked)) == -1)
		return 3;
	close(fd);
	if ((fd = accept(lfd, NULL, NULL)) == -1 ||
	    (req = read_request(fd)) == NULL)
		return 4;
	if (strncmp(req, "POST /x HTTP/1.1\r\n", 18) != 0 ||
	    strstr(req, "\r\nContent-Length: 5\r\n") == NULL ||
	    read_full(fd, body, 5) == -1)
		return 5;
	buf_printf(&b,
	    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n"
	    "Content-Length: 7\r\n\r\ngot %.3s",
	    body);
	return write_full(fd, b.b_data, b.b_len) == 0 ? 0 : 6;
}

static void
http_request_reads_chunked_and_sized_bodies(void)
{
	char  *hdrs = NULL, *body = NULL, *v;
	size_t blen = 0;
	pid_t  pid;
	int    lfd, port, status = 0;

	T_ASSERT((lfd = listen_loopback("127.0.0.1", &port)) != -1);
	pid = fork_server(lfd, http_server);
	close(lfd);
	T_ASSERT(http_get("127.0.0.1", port, "/",
		     "Accept: application/nostr+json\r\n", 3000, &status, &hdrs,
		     &body) == 0);
	T_EQ_INT(status, 200);
	T_EQ_STR(body, "hello, world");
	v = http_header_value(hdrs, "access-control-allow-origin");
	T_EQ_STR(v, "*");
	free(v);
	free(hdrs);
	free(body);
	T_ASSERT(http_request("127.0.0.1", port, "POST", "/x", NULL, "abcde", 5,
		     3000, &status, NULL, &body, &blen) == 0);
	T_EQ_INT(status, 201);
	T_EQ_INT(blen, 7);
	T_EQ_STR(body, "got abc");
	free(body);
	T_EQ_INT(reap(pid), 0);
}

static const struct t_case cases[] = {
	T_CASE(encoder_matches_rfc6455_examples),
	T_CASE(accept_key_matches_rfc6455_example),
	T_CASE(parser_refuses_non_minimal_lengths),
	T_CASE(send_masks_every_length),
	T_CASE(receives_rfc6455_example_frames),
	T_CASE(receives_16_and_64_bit_lengths),
	T_CASE(ping_inside_fragmented_message_is_answered),
	T_CASE(close_frame_is_echoed),
	T_CASE(server_protocol_errors_close_with_1002),
	T_CASE(recv_times_out_without_closing),
	T_CASE(end_of_stream_closes),
	T_CASE(buffered_api_assembles_byte_by_byte),
	T_CASE(handshake_checks_accept_and_keeps_early_frames),
	T_CASE(connects_over_ipv4_and_ipv6_loopback),
	T_CASE(http_request_reads_chunked_and_sized_bodies),
};

T_MAIN(cases)
