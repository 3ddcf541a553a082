/*
 * wsclient.c: the websocket client and HTTP helper of the test tools and
 * graspctl (see wsclient.h).  Linked into every integration test and
 * benchmark and into graspctl; it drives relayd as a Nostr client would,
 * over loopback TCP.
 *
 * The client is strict about what the server sends (unmasked frames,
 * minimal lengths, no RSV bits, well-formed control frames), so that a
 * test notices a server that breaks RFC 6455, and lenient about nothing
 * else: it has no extensions and no TLS.
 */
#define _GNU_SOURCE /* memmem */
#include <sys/types.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "buf.h"
#include "digest.h"
#include "log.h"
#include "mem.h"
#include "proc.h"
#include "wsclient.h"

/* RFC 6455 section 1.3: appended to the key before hashing. */
#define WS_GUID		"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
/* Largest response header block the client reads. */
#define HTTP_HEADER_MAX (64 * 1024)
/* How much one wsc_read_available() call takes at most. */
#define WSC_READ_MAX	(1024 * 1024)

struct wsc {
	int	   ws_fd;
	struct buf ws_in; /* received bytes, from ws_pos on */
	size_t	   ws_pos;
	struct buf ws_msg; /* fragments of the current message */
	int	   ws_msg_op;
	int	   ws_in_msg;
	int	   ws_last_op;
	int	   ws_closed; /* close frame seen or protocol error */
	int	   ws_eof;
	int	   ws_close_sent;
	int	   ws_close_code;
	uint64_t   ws_rng; /* mask generator state */
	char	   ws_err[160];
};

int64_t
wsc_now_ms(void)
{
	return proc_now_ms();
}

static int
remaining_ms(int64_t deadline)
{
	int64_t left = deadline - wsc_now_ms();

	if (left < 0)
		return 0;
	if (left > 0x7fffffff)
		return 0x7fffffff;
	return (int)left;
}

/* Host header value: IPv6 literals go in brackets. */
static void
host_header(struct buf *b, const char *host, int port)
{
	if (strchr(host, ':') != NULL)
		buf_printf(b, "[%s]:%d", host, port);
	else
		buf_printf(b, "%s:%d", host, port);
}

int
wsc_tcp_connect(const char *host, int port, int timeout_ms)
{
	struct addrinfo hints, *res = NULL, *ai;
	struct pollfd	pfd;
	char		portstr[16];
	int64_t		deadline = wsc_now_ms() + timeout_ms;
	int		fd = -1, err, one = 1;
	socklen_t	errlen;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	snprintf(portstr, sizeof(portstr), "%d", port);
	if (getaddrinfo(host, portstr, &hints, &res) != 0)
		return -1;
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family,
		    ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    ai->ai_protocol);
		if (fd == -1)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		if (errno == EINPROGRESS) {
			pfd.fd = fd;
			pfd.events = POLLOUT;
			err = 0;
			errlen = sizeof(err);
			if (poll(&pfd, 1, remaining_ms(deadline)) == 1 &&
			    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err,
				&errlen) == 0 &&
			    err == 0)
				break;
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd != -1)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Writes all of p, waiting for room until the deadline.  0 or -1. */
static int
send_all(int fd, const void *p, size_t n, int64_t deadline)
{
	const char   *c = p;
	struct pollfd pfd;
	ssize_t	      w;

	while (n > 0) {
		w = send(fd, c, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			c += w;
			n -= (size_t)w;
			continue;
		}
		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1 && errno != EAGAIN && errno != EWOULDBLOCK)
			return -1;
		pfd.fd = fd;
		pfd.events = POLLOUT;
		if (poll(&pfd, 1, remaining_ms(deadline)) <= 0)
			return -1;
	}
	return 0;
}

/*
 * Appends what arrives on fd to b, waiting until the deadline.  Returns
 * the byte count, 0 at end of stream, -1 on error or timeout.
 */
static ssize_t
recv_some(int fd, struct buf *b, int64_t deadline)
{
	struct pollfd pfd;
	ssize_t	      r;

	for (;;) {
		buf_reserve(b, 16384);
		r = recv(fd, b->b_data + b->b_len, b->b_cap - b->b_len - 1,
		    MSG_DONTWAIT);
		if (r >= 0) {
			b->b_len += (size_t)r;
			b->b_data[b->b_len] = '\0';
			return r;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -1;
		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, remaining_ms(deadline)) <= 0)
			return -1;
	}
}

static uint64_t
random_u64(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint64_t)wsc_now_ms() * 0x9e3779b97f4a7c15ULL;
	return v | 1;
}

/* xorshift64: masks need to vary, not to be secret from the server. */
static void
next_mask(struct wsc *w, uint8_t mask[4])
{
	uint64_t x = w->ws_rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	w->ws_rng = x;
	memcpy(mask, &x, 4);
}

void
wsc_unmask(uint8_t *p, size_t n, const uint8_t mask[4], uint64_t off)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] ^= mask[(off + i) & 3];
}

void
wsc_frame_encode(struct buf *b, int opcode, int fin, const uint8_t *mask,
    const void *payload, size_t len)
{
	uint8_t h[WS_HEADER_MAX];
	size_t	hl = 2, start, i;

	h[0] = (uint8_t)((fin ? 0x80 : 0) | (opcode & 0x0f));
	if (len < 126)
		h[1] = (uint8_t)len;
	else if (len <= 0xffff) {
		h[1] = 126;
		h[2] = (uint8_t)(len >> 8);
		h[3] = (uint8_t)len;
		hl = 4;
	} else {
		h[1] = 127;
		for (i = 0; i < 8; i++)
			h[2 + i] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
		hl = 10;
	}
	if (mask != NULL) {
		h[1] |= 0x80;
		memcpy(h + hl, mask, 4);
		hl += 4;
	}
	buf_add(b, h, hl);
	start = b->b_len;
	buf_add(b, payload, len);
	if (mask != NULL)
		wsc_unmask((uint8_t *)b->b_data + start, len, mask, 0);
}

int
wsc_frame_parse(const uint8_t *p, size_t n, struct ws_frame *f)
{
	size_t	 h = 2, i;
	uint64_t len;

	if (n < 2)
		return 0;
	f->fin = p[0] >> 7;
	f->rsv = (p[0] >> 4) & 7;
	f->opcode = p[0] & 0x0f;
	f->masked = p[1] >> 7;
	len = p[1] & 0x7f;
	if (len == 126) {
		if (n < 4)
			return 0;
		len = (uint64_t)p[2] << 8 | p[3];
		if (len < 126)
			return -1;
		h = 4;
	} else if (len == 127) {
		if (n < 10)
			return 0;
		len = 0;
		for (i = 0; i < 8; i++)
			len = len << 8 | p[2 + i];
		if ((len >> 63) != 0 || len <= 0xffff)
			return -1;
		h = 10;
	}
	if (f->masked) {
		if (n < h + 4)
			return 0;
		memcpy(f->mask, p + h, 4);
		h += 4;
	}
	f->len = len;
	f->hdrlen = h;
	return 1;
}

void
wsc_accept_key(const char *key, char out[29])
{
	unsigned char md[DIGEST_SHA1_LEN];
	struct buf    b = BUF_INIT;

	buf_adds(&b, key);
	buf_adds(&b, WS_GUID);
	digest_sha1(b.b_data, b.b_len, md);
	EVP_EncodeBlock((unsigned char *)out, md, sizeof(md));
	buf_free(&b);
}

static struct wsc *
wsc_new(int fd)
{
	struct wsc *w;

	w = xmalloc(sizeof(*w));
	memset(w, 0, sizeof(*w));
	w->ws_fd = fd;
	w->ws_rng = random_u64();
	return w;
}

struct wsc *
wsc_adopt(int fd)
{
	int fl;

	if ((fl = fcntl(fd, F_GETFL)) != -1)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	return wsc_new(fd);
}

char *
http_header_value(const char *headers, const char *name)
{
	const char *line, *eol, *colon, *v, *e;
	size_t	    nlen = strlen(name);
	char	   *out;

	for (line = headers; line != NULL && *line != '\0'; line = eol) {
		eol = strchr(line, '\n');
		e = eol ? eol : line + strlen(line);
		if (eol != NULL)
			eol++;
		colon = memchr(line, ':', (size_t)(e - line));
		if (colon == NULL || (size_t)(colon - line) != nlen ||
		    strncasecmp(line, name, nlen) != 0)
			continue;
		v = colon + 1;
		while (v < e && (*v == ' ' || *v == '\t'))
			v++;
		while (
		    e > v && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
			e--;
		out = xmalloc((size_t)(e - v) + 1);
		memcpy(out, v, (size_t)(e - v));
		out[e - v] = '\0';
		return out;
	}
	return NULL;
}

/* Reads into b until it holds a complete header block; its length or -1. */
static ssize_t
read_header_block(int fd, struct buf *b, int64_t deadline)
{
	char *end;

	for (;;) {
		if (b->b_len > 0 &&
		    (end = memmem(b->b_data, b->b_len, "\r\n\r\n", 4)) != NULL)
			return end + 4 - b->b_data;
		if (b->b_len > HTTP_HEADER_MAX)
			return -1;
		if (recv_some(fd, b, deadline) <= 0)
			return -1;
	}
}

/* Status code of "HTTP/1.x NNN ...", or -1. */
static int
parse_status(const char *p)
{
	int code;

	if (strncmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ' ||
	    sscanf(p + 9, "%3d", &code) != 1)
		return -1;
	return code;
}

/* Header lines after the status line, as a new string. */
static char *
header_lines(const char *block, size_t blen)
{
	const char *p = memchr(block, '\n', blen);
	size_t	    n;
	char	   *out;

	if (p == NULL)
		p = block + blen;
	else
		p++;
	n = (size_t)(block + blen - p);
	/* Drop the blank line that ends the block. */
	n = n >= 2 ? n - 2 : 0;
	out = xmalloc(n + 1);
	memcpy(out, p, n);
	out[n] = '\0';
	return out;
}

/* 1 if token occurs in a header value, ignoring case ("keep-alive, Upgrade"). */
static int
has_token(const char *list, const char *token)
{
	size_t	    tl = strlen(token);
	const char *p;

	for (p = list; *p != '\0'; p++)
		if (strncasecmp(p, token, tl) == 0)
			return 1;
	return 0;
}

struct wsc *
wsc_handshake(int fd, const char *host, int port, const char *path,
    const char *extra_headers, int timeout_ms, int *http_status)
{
	struct buf  req = BUF_INIT, in = BUF_INIT;
	struct wsc *w = NULL;
	uint8_t	    raw[16];
	char	    key[32], want[29], *hdrs = NULL, *v;
	int64_t	    deadline = wsc_now_ms() + timeout_ms;
	ssize_t	    hlen;
	int	    status;
	const char *why = NULL;

	if (http_status != NULL)
		*http_status = 0;
	if (getrandom(raw, sizeof(raw), 0) != sizeof(raw)) {
		why = "getrandom failed";
		goto fail;
	}
	EVP_EncodeBlock((unsigned char *)key, raw, sizeof(raw));
	buf_printf(&req, "GET %s HTTP/1.1\r\nHost: ", path);
	host_header(&req, host, port);
	buf_printf(&req,
	    "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	    "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n",
	    key);
	if (extra_headers != NULL)
		buf_adds(&req, extra_headers);
	buf_adds(&req, "\r\n");
	if (send_all(fd, req.b_data, req.b_len, deadline) == -1) {
		why = "cannot send the upgrade request";
		goto fail;
	}
	if ((hlen = read_header_block(fd, &in, deadline)) == -1) {
		why = "no complete answer to the upgrade request";
		goto fail;
	}
	status = parse_status(in.b_data);
	if (http_status != NULL)
		*http_status = status;
	if (status != 101) {
		why = "upgrade refused";
		goto fail;
	}
	hdrs = header_lines(in.b_data, (size_t)hlen);
	wsc_accept_key(key, want);
	if ((v = http_header_value(hdrs, "Upgrade")) == NULL ||
	    strcasecmp(v, "websocket") != 0) {
		free(v);
		why = "bad Upgrade header";
		goto fail;
	}
	free(v);
	if ((v = http_header_value(hdrs, "Connection")) == NULL ||
	    !has_token(v, "upgrade")) {
		free(v);
		why = "bad Connection header";
		goto fail;
	}
	free(v);
	if ((v = http_header_value(hdrs, "Sec-WebSocket-Accept")) == NULL ||
	    strcmp(v, want) != 0) {
		free(v);
		why = "bad Sec-WebSocket-Accept";
		goto fail;
	}
	free(v);
	w = wsc_new(fd);
	/* Frames may follow the header block in the same segment. */
	buf_add(&w->ws_in, in.b_data + hlen, in.b_len - (size_t)hlen);
	fd = -1;
fail:
	if (why != NULL)
		fprintf(stderr, "# wsc: %s:%d%s: %s\n", host, port, path, why);
	if (fd != -1)
		close(fd);
	free(hdrs);
	buf_free(&req);
	buf_free(&in);
	return w;
}

struct wsc *
wsc_connect_ex(const char *host, int port, const char *path,
    const char *extra_headers, int timeout_ms, int *http_status)
{
	int64_t deadline = wsc_now_ms() + timeout_ms;
	int	fd;

	if (http_status != NULL)
		*http_status = 0;
	if ((fd = wsc_tcp_connect(host, port, timeout_ms)) == -1) {
		fprintf(stderr, "# wsc: cannot connect to %s port %d\n", host,
		    port);
		return NULL;
	}
	return wsc_handshake(fd, host, port, path, extra_headers,
	    remaining_ms(deadline), http_status);
}

struct wsc *
wsc_connect(const char *host, int port, const char *path, int timeout_ms)
{
	return wsc_connect_ex(host, port, path, NULL, timeout_ms, NULL);
}

int
wsc_fd(const struct wsc *w)
{
	return w->ws_fd;
}

int
wsc_is_closed(const struct wsc *w)
{
	return w->ws_closed || w->ws_eof;
}

int
wsc_close_code(const struct wsc *w)
{
	return w->ws_close_code;
}

const char *
wsc_error(const struct wsc *w)
{
	return w->ws_err;
}

int
wsc_last_opcode(const struct wsc *w)
{
	return w->ws_last_op;
}

static int
send_frame(struct wsc *w, int opcode, int fin, const void *p, size_t n,
    int timeout_ms)
{
	struct buf b = BUF_INIT;
	uint8_t	   mask[4];
	int	   rc;

	if (w->ws_close_sent || w->ws_eof)
		return -1;
	next_mask(w, mask);
	wsc_frame_encode(&b, opcode, fin, mask, p, n);
	rc = send_all(w->ws_fd, b.b_data, b.b_len, wsc_now_ms() + timeout_ms);
	buf_free(&b);
	if (opcode == WS_OP_CLOSE)
		w->ws_close_sent = 1;
	return rc;
}

int
wsc_send_frame(struct wsc *w, int opcode, int fin, const void *p, size_t n)
{
	return send_frame(w, opcode, fin, p, n, WSC_SEND_TIMEOUT_MS);
}

int
wsc_send_text(struct wsc *w, const char *s, size_t n)
{
	return wsc_send_frame(w, WS_OP_TEXT, 1, s, n);
}

int
wsc_send_binary(struct wsc *w, const void *p, size_t n)
{
	return wsc_send_frame(w, WS_OP_BINARY, 1, p, n);
}

int
wsc_send_raw(struct wsc *w, const void *p, size_t n)
{
	if (w->ws_eof)
		return -1;
	return send_all(w->ws_fd, p, n, wsc_now_ms() + WSC_SEND_TIMEOUT_MS);
}

/* Ends the session for a server that broke the protocol. */
static void
protocol_error(struct wsc *w, const char *why)
{
	uint8_t code[2] = { WS_CLOSE_PROTOCOL >> 8, WS_CLOSE_PROTOCOL & 0xff };

	if (!w->ws_closed)
		snprintf(w->ws_err, sizeof(w->ws_err), "protocol error: %s",
		    why);
	if (!w->ws_close_sent)
		send_frame(w, WS_OP_CLOSE, 1, code, sizeof(code), 100);
	w->ws_closed = 1;
}

int
wsc_read_available(struct wsc *w)
{
	size_t	got = 0;
	ssize_t r;

	if (w->ws_eof)
		return -1;
	if (w->ws_pos > 0) {
		memmove(w->ws_in.b_data, w->ws_in.b_data + w->ws_pos,
		    w->ws_in.b_len - w->ws_pos);
		w->ws_in.b_len -= w->ws_pos;
		w->ws_pos = 0;
	}
	while (got < WSC_READ_MAX) {
		buf_reserve(&w->ws_in, 65536);
		r = recv(w->ws_fd, w->ws_in.b_data + w->ws_in.b_len,
		    w->ws_in.b_cap - w->ws_in.b_len - 1, MSG_DONTWAIT);
		if (r > 0) {
			w->ws_in.b_len += (size_t)r;
			w->ws_in.b_data[w->ws_in.b_len] = '\0';
			got += (size_t)r;
			continue;
		}
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		w->ws_eof = 1;
		if (w->ws_err[0] == '\0')
			snprintf(w->ws_err, sizeof(w->ws_err), "%s",
			    r == 0 ? "connection closed without a close frame" :
				     strerror(errno));
		return got ? 1 : -1;
	}
	return got ? 1 : 0;
}

static char *
copy_message(const uint8_t *p, size_t n, size_t *len)
{
	char *m = xmalloc(n + 1);

	memcpy(m, p, n);
	m[n] = '\0';
	if (len != NULL)
		*len = n;
	return m;
}

/* Answers a close frame from the server; no data follows it. */
static void
peer_closed(struct wsc *w, const uint8_t *p, size_t n)
{
	w->ws_close_code = n >= 2 ? (p[0] << 8 | p[1]) : 1005;
	snprintf(w->ws_err, sizeof(w->ws_err),
	    "closed by the server (code %d%s%.*s)", w->ws_close_code,
	    n > 2 ? ": " : "", n > 2 ? (int)(n - 2) : 0,
	    n > 2 ? (const char *)p + 2 : "");
	if (!w->ws_close_sent)
		send_frame(w, WS_OP_CLOSE, 1, p, n >= 2 ? 2 : 0, 100);
	w->ws_closed = 1;
}

char *
wsc_next(struct wsc *w, size_t *len, int *opcode)
{
	struct ws_frame f;
	uint8_t	       *p;
	size_t		avail;
	int		r;

	while (!w->ws_closed) {
		p = (uint8_t *)w->ws_in.b_data + w->ws_pos;
		avail = w->ws_in.b_len - w->ws_pos;
		if ((r = wsc_frame_parse(p, avail, &f)) == 0)
			return NULL;
		if (r == -1) {
			protocol_error(w, "length not in minimal form");
			return NULL;
		}
		if (f.masked) {
			protocol_error(w, "masked frame from the server");
			return NULL;
		}
		if (f.rsv != 0) {
			protocol_error(w, "RSV bits set without extension");
			return NULL;
		}
		if (f.len > WSC_MESSAGE_MAX) {
			protocol_error(w, "frame too large");
			return NULL;
		}
		if (f.opcode >= WS_OP_CLOSE &&
		    (!f.fin || f.len > WS_CONTROL_MAX)) {
			protocol_error(w, "bad control frame");
			return NULL;
		}
		if (avail - f.hdrlen < f.len)
			return NULL;
		p += f.hdrlen;
		w->ws_pos += f.hdrlen + (size_t)f.len;
		switch (f.opcode) {
		case WS_OP_PING:
			if (!w->ws_close_sent)
				wsc_send_frame(w, WS_OP_PONG, 1, p, f.len);
			break;
		case WS_OP_PONG:
			break;
		case WS_OP_CLOSE:
			peer_closed(w, p, f.len);
			return NULL;
		case WS_OP_TEXT:
		case WS_OP_BINARY:
			if (w->ws_in_msg) {
				protocol_error(w,
				    "new message inside a "
				    "fragmented one");
				return NULL;
			}
			if (f.fin) {
				w->ws_last_op = f.opcode;
				if (opcode != NULL)
					*opcode = f.opcode;
				return copy_message(p, f.len, len);
			}
			buf_reset(&w->ws_msg);
			buf_add(&w->ws_msg, p, f.len);
			w->ws_msg_op = f.opcode;
			w->ws_in_msg = 1;
			break;
		case WS_OP_CONT:
			if (!w->ws_in_msg) {
				protocol_error(w,
				    "continuation without a "
				    "message");
				return NULL;
			}
			if (w->ws_msg.b_len + f.len > WSC_MESSAGE_MAX) {
				protocol_error(w, "message too large");
				return NULL;
			}
			buf_add(&w->ws_msg, p, f.len);
			if (!f.fin)
				break;
			w->ws_in_msg = 0;
			w->ws_last_op = w->ws_msg_op;
			if (opcode != NULL)
				*opcode = w->ws_msg_op;
			return buf_release(&w->ws_msg, len);
		default:
			protocol_error(w, "unknown opcode");
			return NULL;
		}
	}
	return NULL;
}

char *
wsc_recv(struct wsc *w, int timeout_ms, size_t *len)
{
	struct pollfd pfd;
	int64_t	      deadline = wsc_now_ms() + timeout_ms;
	char	     *m;
	int	      n;

	for (;;) {
		if ((m = wsc_next(w, len, NULL)) != NULL)
			return m;
		if (wsc_is_closed(w))
			return NULL;
		pfd.fd = w->ws_fd;
		pfd.events = POLLIN;
		n = poll(&pfd, 1, remaining_ms(deadline));
		if (n > 0)
			wsc_read_available(w);
		else if (n == 0)
			return NULL;
		else if (errno != EINTR)
			return NULL;
	}
}

void
wsc_close(struct wsc *w)
{
	uint8_t code[2] = { WS_CLOSE_NORMAL >> 8, WS_CLOSE_NORMAL & 0xff };

	if (w == NULL)
		return;
	if (!w->ws_closed && !w->ws_close_sent && !w->ws_eof)
		send_frame(w, WS_OP_CLOSE, 1, code, sizeof(code), 100);
	wsc_drop(w);
}

void
wsc_drop(struct wsc *w)
{
	if (w == NULL)
		return;
	close(w->ws_fd);
	buf_free(&w->ws_in);
	buf_free(&w->ws_msg);
	free(w);
}

/*
 * Decodes a chunked body from p[0..n) into out.  Returns 1 when the last
 * chunk and trailers are complete, 0 if more bytes are needed, -1 if the
 * framing is malformed.
 */
static int
dechunk(const char *p, size_t n, struct buf *out)
{
	const char   *end = p + n, *eol;
	unsigned long size;
	char	     *ep;

	buf_reset(out);
	for (;;) {
		if ((eol = memmem(p, (size_t)(end - p), "\r\n", 2)) == NULL)
			return 0;
		size = strtoul(p, &ep, 16);
		if (ep == p || (*ep != ';' && *ep != '\r' && *ep != ' '))
			return -1;
		p = eol + 2;
		if (size == 0)
			break;
		if ((size_t)(end - p) < size + 2)
			return 0;
		buf_add(out, p, size);
		if (p[size] != '\r' || p[size + 1] != '\n')
			return -1;
		p += size + 2;
	}
	/* Trailer lines, then the empty line. */
	for (;;) {
		if ((eol = memmem(p, (size_t)(end - p), "\r\n", 2)) == NULL)
			return 0;
		if (eol == p)
			return 1;
		p = eol + 2;
	}
}

int
http_request(const char *host, int port, const char *method, const char *path,
    const char *extra_headers, const void *body, size_t body_len,
    int timeout_ms, int *status, char **headers, char **resp_body,
    size_t *resp_len)
{
	struct buf req = BUF_INIT, in = BUF_INIT, out = BUF_INIT;
	int64_t	   deadline = wsc_now_ms() + timeout_ms;
	char	  *hdrs = NULL, *v;
	ssize_t	   hlen = -1, r;
	size_t	   clen = 0;
	int	   fd, code = -1, chunked = 0, has_clen = 0;
	int	   no_body = 0, done = 0, rc = -1;

	if (headers != NULL)
		*headers = NULL;
	if (resp_body != NULL)
		*resp_body = NULL;
	if ((fd = wsc_tcp_connect(host, port, timeout_ms)) == -1)
		return -1;
	buf_printf(&req, "%s %s HTTP/1.1\r\nHost: ", method, path);
	host_header(&req, host, port);
	buf_adds(&req,
	    "\r\nUser-Agent: graspd-tests\r\n"
	    "Connection: close\r\n");
	if (body != NULL)
		buf_printf(&req, "Content-Length: %zu\r\n", body_len);
	if (extra_headers != NULL)
		buf_adds(&req, extra_headers);
	buf_adds(&req, "\r\n");
	if (body != NULL)
		buf_add(&req, body, body_len);
	if (send_all(fd, req.b_data, req.b_len, deadline) == -1)
		goto done;

	/* Header block, skipping interim 1xx answers. */
	for (;;) {
		if ((hlen = read_header_block(fd, &in, deadline)) == -1)
			goto done;
		if ((code = parse_status(in.b_data)) == -1)
			goto done;
		if (code >= 200 || code == 101)
			break;
		memmove(in.b_data, in.b_data + hlen, in.b_len - (size_t)hlen);
		in.b_len -= (size_t)hlen;
	}
	hdrs = header_lines(in.b_data, (size_t)hlen);
	if (strcasecmp(method, "HEAD") == 0 || code == 204 || code == 304 ||
	    code == 101)
		no_body = 1;
	if ((v = http_header_value(hdrs, "Transfer-Encoding")) != NULL) {
		chunked = has_token(v, "chunked");
		free(v);
	}
	if (!chunked &&
	    (v = http_header_value(hdrs, "Content-Length")) != NULL) {
		clen = strtoul(v, NULL, 10);
		has_clen = 1;
		free(v);
	}

	for (;;) {
		const char *b = in.b_data + hlen;
		size_t	    bl = in.b_len - (size_t)hlen;

		if (no_body) {
			done = 1;
		} else if (chunked) {
			if ((r = dechunk(b, bl, &out)) == -1)
				goto done;
			done = r == 1;
		} else if (has_clen && bl >= clen) {
			buf_reset(&out);
			buf_add(&out, b, clen);
			done = 1;
		}
		if (done)
			break;
		if ((r = recv_some(fd, &in, deadline)) == -1)
			goto done;
		if (r == 0) {
			/* End of stream ends a body of unknown length. */
			if (chunked || has_clen)
				goto done;
			buf_reset(&out);
			buf_add(&out, in.b_data + hlen,
			    in.b_len - (size_t)hlen);
			break;
		}
	}
	if (status != NULL)
		*status = code;
	if (headers != NULL) {
		*headers = hdrs;
		hdrs = NULL;
	}
	if (resp_len != NULL)
		*resp_len = out.b_len;
	if (resp_body != NULL)
		*resp_body = buf_release(&out, NULL);
	rc = 0;
done:
	close(fd);
	free(hdrs);
	buf_free(&req);
	buf_free(&in);
	buf_free(&out);
	return rc;
}

int
http_get(const char *host, int port, const char *path,
    const char *extra_headers, int timeout_ms, int *status, char **headers,
    char **body)
{
	return http_request(host, port, "GET", path, extra_headers, NULL, 0,
	    timeout_ms, status, headers, body, NULL);
}
