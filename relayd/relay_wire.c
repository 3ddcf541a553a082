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
 * recvfrom(2) and shows what came to a frame watcher (common/wswatch.c)
 * kept per descriptor of an accepted connection.  The watcher only
 * reads: lws gets exactly the bytes the kernel gave.  It notes when the
 * frame in progress began and whether a frame came unmasked;
 * relay_wire_sweep() closes the websocket of either (1002 for a protocol
 * error, 1008 for a frame too slow).  Were lws to read some other way
 * (TLS, a later version), the watcher would see nothing and both checks
 * would lapse, no more: slowloris_test's unmasked and stalled-frame
 * cases are there to notice.
 *
 * The record also holds the connection's place among its address's
 * connections whose headers are not complete (relay_addr.c), given back
 * when its headers are complete or it closes, and the client address a
 * trusted proxy named for it (relay_listen.c).  On a proxy_protocol
 * listener, recv() also reads the PROXY header the connection starts
 * with, before lws sees a byte: the header goes into the record (at most
 * PROXY_HDR_MAX bytes, read as they come, so a slow proxy costs no busy
 * loop), and lws gets only what follows it; a malformed header reads as
 * an error, which closes the connection.  Runs in relayd's loop; a
 * recv() on another thread is passed through untouched.
 */
#include <sys/socket.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "proxyhdr.h"
#include "relayd.h"
#include "wswatch.h"

/* Ours: how often relay_wire_sweep() looks at the frames in progress. */
#define WIRE_SWEEP_US	(250 * LWS_US_PER_MS)
/* Ours: how long a websocket being closed has to take its close frame. */
#define WIRE_CLOSE_SECS 2

struct wire {
	struct lws	       *w_wsi;	   /* NULL: a free record */
	struct relay_addr      *w_pending; /* its place until its headers end */
	struct wswatch		w_watch;
	struct sockaddr_storage w_client; /* family 0: the TCP peer */
	uint8_t		       *w_hdr;	  /* the PROXY header read so far */
	size_t			w_hlen;	  /* bytes in w_hdr */
	size_t			w_hoff;	  /* bytes after it already given */
	int			w_hdone;  /* w_hdr holds bytes for lws */
	int			w_hbad;	  /* its PROXY header was malformed */
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
hdr_free(struct wire *w)
{
	free(w->w_hdr);
	w->w_hdr = NULL;
	w->w_hlen = w->w_hoff = 0;
	w->w_hdone = 0;
}

/*
 * recv() of fd while its PROXY header is not all read, or the bytes
 * read with it are not all given to lws.  Same contract as recv(2);
 * -1 with EPROTO for a malformed header.
 */
static ssize_t
hdr_recv(struct wire *w, int fd, void *buf, size_t len, int flags)
{
	struct sockaddr_storage ss;
	enum proxy_hdr_result	r;
	const char	       *why;
	size_t			used;
	ssize_t			n;

	if (w->w_hbad) {
		errno = EPROTO;
		return -1;
	}
	if (!w->w_hdone) {
		n = recvfrom(fd, w->w_hdr + w->w_hlen,
		    PROXY_HDR_MAX - w->w_hlen, flags, NULL, NULL);
		if (n <= 0)
			return n;
		w->w_hlen += (size_t)n;
		r = proxy_hdr_parse(w->w_hdr, w->w_hlen, &ss, &used, &why);
		if (r == PROXY_HDR_NEED) {
			errno = EAGAIN;
			return -1;
		}
		if (r == PROXY_HDR_BAD) {
			relay_listen_bad_header(fd, why);
			hdr_free(w);
			w->w_hbad = 1;
			errno = EPROTO;
			return -1;
		}
		if (r == PROXY_HDR_ADDR)
			w->w_client = ss;
		w->w_hoff = used;
		w->w_hdone = 1;
	}
	n = (ssize_t)(w->w_hlen - w->w_hoff);
	if ((size_t)n > len)
		n = (ssize_t)len;
	memcpy(buf, w->w_hdr + w->w_hoff, (size_t)n);
	w->w_hoff += (size_t)n;
	if (w->w_hoff == w->w_hlen)
		hdr_free(w);
	if (n == 0) {
		errno = EAGAIN;
		return -1;
	}
	return n;
}

/*
 * Where lws's reads come through (see the top of the file).  Same
 * contract as recv(2).
 */
ssize_t
recv(int fd, void *buf, size_t len, int flags)
{
	ssize_t n;

	/* The thread first: the table is the loop's alone. */
	if ((flags & MSG_PEEK) || !wire_ready ||
	    !pthread_equal(pthread_self(), wire_thread) || fd < 0 ||
	    (size_t)fd >= nwires || wires[fd].w_wsi == NULL)
		return recvfrom(fd, buf, len, flags, NULL, NULL);
	if (wires[fd].w_hdr != NULL || wires[fd].w_hbad)
		n = hdr_recv(&wires[fd], fd, buf, len, flags);
	else
		n = recvfrom(fd, buf, len, flags, NULL, NULL);
	if (n <= 0)
		return n;
	if (wswatch_feed(&wires[fd].w_watch, buf, (size_t)n, relay_now_ms())) {
		/* The sweep runs at the loop's next turn. */
		wire_dirty = 1;
		lws_cancel_service(relayd->ctx);
	}
	return n;
}

/*
 * Closes c with status and why, once lws can send the close frame.
 * Returns 1 if this started it, 0 if c was closing already.
 */
static int
wire_close(struct relay_conn *c, int status, const char *why)
{
	if (c->rc_close != 0)
		return 0;
	log_info("closing the websocket of %s: %s", c->rc_peer, why);
	c->rc_close = status;
	c->rc_close_why = why;
	lws_callback_on_writable(c->rc_wsi);
	/* One that does not read is closed without its close frame. */
	lws_set_timeout(c->rc_wsi, PENDING_TIMEOUT_USER_REASON_BASE,
	    WIRE_CLOSE_SECS);
	return 1;
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
		if (w->w_watch.ww_unmasked) {
			if (wire_close(c, LWS_CLOSE_STATUS_PROTOCOL_ERR,
				"protocol error: unmasked frame"))
				relayd->stats.ws_closed_unmasked++;
		} else if (limit > 0 && w->w_watch.ww_frame_at != 0 &&
		    now - w->w_watch.ww_frame_at >= limit) {
			if (wire_close(c, LWS_CLOSE_STATUS_POLICY_VIOLATION,
				"frame too slow"))
				relayd->stats.ws_closed_slow_frame++;
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
relay_wire_accept(struct lws *wsi, int fd, struct relay_addr *pending,
    int proxy_header)
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
	hdr_free(&wires[fd]);
	memset(&wires[fd], 0, sizeof(wires[fd]));
	wires[fd].w_wsi = wsi;
	wires[fd].w_pending = pending;
	if (proxy_header && (wires[fd].w_hdr = malloc(PROXY_HDR_MAX)) == NULL)
		fatal("relay_wire_accept");
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
	wswatch_upgraded(&w->w_watch);
	/* Frames that came with the upgrade request. */
	if (w->w_watch.ww_unmasked) {
		wire_dirty = 1;
		lws_cancel_service(relayd->ctx);
	}
}

int
relay_wire_unmasked(struct lws *wsi)
{
	struct wire *w = wire_of(wsi);

	return w != NULL && w->w_watch.ww_upgraded && w->w_watch.ww_unmasked;
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
	hdr_free(w);
	memset(w, 0, sizeof(*w));
}

int
relay_wire_client(struct lws *wsi, struct sockaddr_storage *ss)
{
	struct wire *w = wire_of(lws_get_network_wsi(wsi));

	if (w == NULL || w->w_client.ss_family == 0)
		return 0;
	*ss = w->w_client;
	return 1;
}

void
relay_wire_set_client(struct lws *wsi, const struct sockaddr_storage *ss)
{
	struct wire *w = wire_of(lws_get_network_wsi(wsi));

	if (w == NULL)
		return;
	if (ss != NULL)
		w->w_client = *ss;
	else
		memset(&w->w_client, 0, sizeof(w->w_client));
}

void
relay_wire_free(void)
{
	size_t n;

	/* The context, and the sweep's timer with it, is gone already. */
	wire_ready = 0;
	for (n = 0; n < nwires; n++)
		hdr_free(&wires[n]);
	free(wires);
	wires = NULL;
	nwires = 0;
}
