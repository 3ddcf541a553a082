/*
 * relay_wire.c: relayd's watch on its clients' bytes as they come off
 * the socket, for what libwebsockets 4.1 does not check:
 *
 * - RFC 6455 5.1: "a server MUST close the connection upon receiving a
 *   frame that is not masked".  lws (lib/roles/ws/ops-ws.c) unmasks a
 *   masked frame and passes an unmasked one on as it is, and has no
 *   option to refuse it; its API does not say whether a frame was masked.
 * - how long a frame takes.  lws parses a frame header in its own state
 *   and calls back only once payload comes, so a client that stops
 *   halfway through a header is invisible to relay_ws.c.
 *
 * lws reads every client socket with recv(2) (lws_ssl_capable_read_no_ssl
 * in lib/core-net/output.c; relayd serves no TLS).  relayd defines recv()
 * itself, which the dynamic linker binds lws's calls to: it calls
 * recvfrom(2) and shows what came to a shadow frame parser kept per
 * descriptor of an accepted connection.  The parser only reads: lws gets
 * exactly the bytes the kernel gave.  It notes when the frame in progress
 * began and whether a frame came unmasked; relay_wire_sweep() closes the
 * websocket of either (1002 for a protocol error, 1008 for a frame too
 * slow).  Before the upgrade the parser restarts after every "\r\n\r\n",
 * so that its state at the upgrade is that of the bytes after the
 * upgrade request's headers.
 *
 * The record also holds the connection's place among its address's
 * connections whose headers are not complete (relay_addr.c), given back
 * when its headers are complete or it closes.  Runs in relayd's loop; a
 * recv() on another thread is passed through untouched.
 */
#include <sys/socket.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "relayd.h"

/* RFC 6455 5.2: the MASK bit and the payload length of byte 2. */
#define WS_MASK_BIT	0x80
#define WS_LEN_MASK	0x7f
/* RFC 6455 5.2: lengths 126 and 127 take 2 and 8 more bytes. */
#define WS_LEN_16	126
#define WS_LEN_64	127
/* RFC 6455 5.2: the masking key's length. */
#define WS_MASK_KEY_LEN 4
/* Ours: how often relay_wire_sweep() looks at the frames in progress. */
#define WIRE_SWEEP_US	(250 * LWS_US_PER_MS)
/* Ours: how long a websocket being closed has to take its close frame. */
#define WIRE_CLOSE_SECS 2

enum wire_state {
	FR_HEAD, /* the first byte of a frame is next */
	FR_LEN7, /* the byte with MASK and the 7-bit length */
	FR_XLEN, /* w_need bytes of extended length */
	FR_KEY,	 /* w_need bytes of masking key */
	FR_BODY, /* w_left bytes of payload */
};

struct wire {
	struct lws	  *w_wsi;      /* NULL: a free record */
	struct relay_addr *w_pending;  /* its place until its headers end */
	int64_t		   w_frame_at; /* ms its frame in progress began; 0 */
	uint64_t	   w_left;     /* payload bytes still to come */
	enum wire_state	   w_state;
	unsigned	   w_need;	   /* header bytes still to come */
	unsigned	   w_crlf;	   /* bytes of "\r\n\r\n" matched */
	unsigned	   w_ws : 1;	   /* an established websocket */
	unsigned	   w_unmasked : 1; /* an unmasked frame came */
	unsigned	   w_masked : 1;   /* the frame in progress is */
};

static struct wire	     *wires; /* by descriptor */
static size_t		      nwires;
static pthread_t	      wire_thread;
static int		      wire_ready;
static int		      wire_dirty; /* a verdict waits for the sweep */
static lws_sorted_usec_list_t sweep_sul;

static struct wire *
wire_of(struct lws *wsi)
{
	intptr_t fd = (intptr_t)lws_get_opaque_user_data(wsi) - 1;

	if (fd < 0 || (size_t)fd >= nwires || wires[fd].w_wsi != wsi)
		return NULL;
	return &wires[fd];
}

static void
frame_restart(struct wire *w)
{
	w->w_state = FR_HEAD;
	w->w_frame_at = 0;
	w->w_unmasked = 0;
	w->w_need = 0;
	w->w_left = 0;
}

/* Moves past a frame header whose length is known. */
static void
frame_header_done(struct wire *w, int masked)
{
	if (masked) {
		w->w_state = FR_KEY;
		w->w_need = WS_MASK_KEY_LEN;
	} else
		w->w_state = FR_BODY;
}

/* Feeds n bytes of the client's websocket stream to w's parser. */
static void
frame_feed(struct wire *w, const uint8_t *p, size_t n, int64_t now)
{
	size_t k;

	while (n > 0) {
		switch (w->w_state) {
		case FR_HEAD:
			w->w_frame_at = now > 0 ? now : 1;
			w->w_state = FR_LEN7;
			p++, n--;
			break;
		case FR_LEN7:
			if (!(*p & WS_MASK_BIT) && !w->w_unmasked) {
				w->w_unmasked = 1;
				if (w->w_ws)
					wire_dirty = 1;
			}
			w->w_left = 0;
			if ((*p & WS_LEN_MASK) == WS_LEN_16) {
				w->w_state = FR_XLEN;
				w->w_need = 2;
			} else if ((*p & WS_LEN_MASK) == WS_LEN_64) {
				w->w_state = FR_XLEN;
				w->w_need = 8;
			} else {
				w->w_left = *p & WS_LEN_MASK;
				frame_header_done(w, *p & WS_MASK_BIT);
			}
			w->w_masked = (*p & WS_MASK_BIT) != 0;
			p++, n--;
			break;
		case FR_XLEN:
			w->w_left = (w->w_left << 8) | *p;
			p++, n--;
			if (--w->w_need == 0)
				frame_header_done(w, w->w_masked);
			break;
		case FR_KEY:
			k = n < w->w_need ? n : w->w_need;
			w->w_need -= (unsigned)k;
			p += k, n -= k;
			if (w->w_need == 0)
				w->w_state = FR_BODY;
			break;
		case FR_BODY:
			k = (uint64_t)n < w->w_left ? n : (size_t)w->w_left;
			w->w_left -= k;
			p += k, n -= k;
			break;
		}
		if (w->w_state == FR_BODY && w->w_left == 0) {
			w->w_state = FR_HEAD;
			w->w_frame_at = 0;
		}
	}
}

/*
 * Bytes before the upgrade: the frame parser restarts after each
 * "\r\n\r\n", the end of a request's headers, and reads what follows it.
 */
static void
wire_http(struct wire *w, const uint8_t *p, size_t n, int64_t now)
{
	static const char eoh[] = "\r\n\r\n";
	const uint8_t	 *end = p + n, *from = p, *q;

	while (p < end) {
		if (w->w_crlf == 0) {
			if ((q = memchr(p, '\r', (size_t)(end - p))) == NULL)
				break;
			p = q;
		}
		if (*p == (uint8_t)eoh[w->w_crlf])
			w->w_crlf++;
		else
			w->w_crlf = *p == '\r';
		p++;
		if (w->w_crlf == sizeof(eoh) - 1) {
			w->w_crlf = 0;
			frame_restart(w);
			from = p;
		}
	}
	frame_feed(w, from, (size_t)(end - from), now);
}

/*
 * Where lws's reads come through (see the top of the file).  Same
 * contract as recv(2).
 */
ssize_t
recv(int fd, void *buf, size_t len, int flags)
{
	ssize_t n = recvfrom(fd, buf, len, flags, NULL, NULL);

	/* The thread first: the table is the loop's alone. */
	if (n <= 0 || (flags & MSG_PEEK) || !wire_ready ||
	    !pthread_equal(pthread_self(), wire_thread) || fd < 0 ||
	    (size_t)fd >= nwires || wires[fd].w_wsi == NULL)
		return n;
	if (wires[fd].w_ws)
		frame_feed(&wires[fd], buf, (size_t)n, relay_now_ms());
	else
		wire_http(&wires[fd], buf, (size_t)n, relay_now_ms());
	if (wire_dirty)
		lws_cancel_service(relayd->ctx);
	return n;
}

/* Closes c with status and why, once lws can send the close frame. */
static void
wire_close(struct relay_conn *c, int status, const char *why)
{
	if (c->rc_close != 0)
		return;
	log_info("closing the websocket of %s: %s", c->rc_peer, why);
	c->rc_close = status;
	c->rc_close_why = why;
	lws_callback_on_writable(c->rc_wsi);
	/* One that does not read is closed without its close frame. */
	lws_set_timeout(c->rc_wsi, PENDING_TIMEOUT_USER_REASON_BASE,
	    WIRE_CLOSE_SECS);
}

void
relay_wire_sweep(void)
{
	struct relay_conn *c;
	struct wire	  *w;
	int64_t		   now = relay_now_ms();
	int64_t		   limit = relayd->cfg.ws_frame_timeout * 1000LL;

	wire_dirty = 0;
	LIST_FOREACH(c, &relayd->conns, rc_entry) {
		if ((w = wire_of(c->rc_wsi)) == NULL)
			continue;
		if (w->w_unmasked) {
			relayd->stats.ws_closed_unmasked++;
			wire_close(c, LWS_CLOSE_STATUS_PROTOCOL_ERR,
			    "protocol error: unmasked frame");
		} else if (limit > 0 && w->w_frame_at != 0 &&
		    now - w->w_frame_at >= limit) {
			relayd->stats.ws_closed_slow_frame++;
			wire_close(c, LWS_CLOSE_STATUS_POLICY_VIOLATION,
			    "frame too slow");
		}
	}
}

static void
sweep_cb(lws_sorted_usec_list_t *sul)
{
	relay_wire_sweep();
	lws_sul_schedule(relayd->ctx, 0, &sweep_sul, sweep_cb, WIRE_SWEEP_US);
}

void
relay_wire_init(void)
{
	wire_thread = pthread_self();
	wire_ready = 1;
	if (relayd->cfg.ws_frame_timeout > 0)
		lws_sul_schedule(relayd->ctx, 0, &sweep_sul, sweep_cb,
		    WIRE_SWEEP_US);
}

void
relay_wire_accept(struct lws *wsi, int fd, struct relay_addr *pending)
{
	struct wire *nw;
	size_t	     n;

	if ((size_t)fd >= nwires) {
		n = nwires ? nwires : 256;
		while (n <= (size_t)fd)
			n *= 2;
		if ((nw = reallocarray(wires, n, sizeof(*nw))) == NULL)
			fatal("relay_wire_accept");
		memset(nw + nwires, 0, (n - nwires) * sizeof(*nw));
		wires = nw;
		nwires = n;
	}
	/* A record left by a connection lws never reported closed. */
	relay_addr_pending_end(wires[fd].w_pending);
	memset(&wires[fd], 0, sizeof(wires[fd]));
	wires[fd].w_wsi = wsi;
	wires[fd].w_pending = pending;
	lws_set_opaque_user_data(wsi, (void *)(intptr_t)(fd + 1));
}

void
relay_wire_headers_done(struct lws *wsi)
{
	struct wire *w = wire_of(wsi);

	if (w == NULL)
		return;
	relay_addr_pending_end(w->w_pending);
	w->w_pending = NULL;
}

void
relay_wire_established(struct lws *wsi)
{
	struct wire *w = wire_of(wsi);

	if (w == NULL)
		return;
	relay_wire_headers_done(wsi);
	w->w_ws = 1;
	/* Frames that came with the upgrade request. */
	if (w->w_unmasked)
		wire_dirty = 1;
}

int
relay_wire_unmasked(struct lws *wsi)
{
	struct wire *w = wire_of(wsi);

	return w != NULL && w->w_ws && w->w_unmasked;
}

int
relay_wire_dirty(void)
{
	return wire_dirty;
}

void
relay_wire_destroy(struct lws *wsi)
{
	struct wire *w = wire_of(wsi);

	if (w == NULL)
		return;
	relay_addr_pending_end(w->w_pending);
	memset(w, 0, sizeof(*w));
}

void
relay_wire_free(void)
{
	/* The context, and the sweep's timer with it, is gone already. */
	wire_ready = 0;
	free(wires);
	wires = NULL;
	nwires = 0;
}
