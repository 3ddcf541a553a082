/*
 * wsserve.h: the server side of a NIP-01 websocket, as relayd and the
 * test peer (tests/peer) run it on libwebsockets: a client's message
 * assembled from its frames, the queue of what goes back to it, and the
 * relay-to-client messages (NOTICE, OK, CLOSED, EOSE, AUTH); and, for
 * the HTTP answers of the same server, one whole body written at once.
 *
 * A client that does not read is dropped: past wq_max bytes queued,
 * nothing more is queued and the next writable callback closes the
 * connection with the reason "too slow".
 */
#ifndef GRASPD_WSSERVE_H
#define GRASPD_WSSERVE_H

#include <sys/queue.h>

#include <libwebsockets.h>
#include <stddef.h>

#include "buf.h"

/* Ours: queued messages framed into one write to a client, in bytes. */
#define WSS_WRITE_COALESCE   (64 * 1024)
/* RFC 6455 5.2: the longest header of an unmasked frame. */
#define WSS_FRAME_HEADER_MAX 10
/* Ours: a receive buffer grown past this is released after its message. */
#define WSS_RX_KEEP	     (256 * 1024)

/* One message to send, a text or binary frame. */
struct wss_out {
	STAILQ_ENTRY(wss_out) wo_entry;
	int		      wo_binary;
	size_t		      wo_len;
	unsigned char	      wo_data[]; /* LWS_PRE + wo_len bytes */
};

/* What one websocket has to send. */
struct wss_queue {
	STAILQ_HEAD(, wss_out) wq_q;
	size_t	    wq_bytes; /* queued, headers aside */
	size_t	    wq_max;
	int	    wq_too_slow; /* over wq_max: dropped */
	int	    wq_shut;	 /* the owner's: queue no more */
	uint64_t    wq_sent;	 /* bytes written, ever */
	lws_usec_t  wq_moved;	 /* last write, or when it filled */
	struct lws *wq_wsi;
	const char *wq_who; /* the client, for the log */
};

/* A message being assembled from its frames. */
struct wss_rx {
	struct buf wr_buf;
	int	   wr_oversized; /* past the limit: dropped */
};

/*
 * Readies q for the connection wsi, empty, dropping the client past max
 * bytes queued; who names it in the log and stays the caller's (it must
 * outlive q).  Never exits.
 */
void wss_queue_init(struct wss_queue *q, struct lws *wsi, size_t max,
    const char *who);
/* Frees everything queued; q is empty (and still usable) after. */
void wss_queue_clear(struct wss_queue *q);

/*
 * Queues a copy of s[0..len) as one text (binary 0) or binary frame and
 * asks for a writable callback.  Nothing is queued once the client is
 * too slow or the owner set wq_shut; going past wq_max makes the client
 * too slow (logged).  Exits (fatal) when out of memory.
 */
void wss_send(struct wss_queue *q, const void *s, size_t len, int binary);

/*
 * Makes the client too slow now, as going past wq_max does: nothing more
 * is queued, and the next writable callback closes the connection with
 * the reason "too slow".  why goes to the log.  Never exits.
 */
void wss_too_slow(struct wss_queue *q, const char *why);

/*
 * The microseconds (lws_now_usecs()) q has held something unwritten
 * without any write: 0 when it is empty or a write took some lately.
 */
lws_usec_t wss_queue_stalled(const struct wss_queue *q, lws_usec_t now);

/*
 * Queues the NIP-01 message ["verb","a"] or, with b set, ["verb","a","b"]:
 * NOTICE, EOSE, AUTH, CLOSED.  The strings stay the caller's.
 */
void wss_send_msg(struct wss_queue *q, const char *verb, const char *a,
    const char *b);
/* ["NOTICE","msg"]. */
void wss_notice(struct wss_queue *q, const char *msg);
/* ["OK","id_hex",true|false,"msg"]. */
void wss_ok(struct wss_queue *q, const char *id_hex, int ok, const char *msg);
/*
 * Appends ["EVENT","subid",<json>] to b, json being len bytes of an
 * event's canonical JSON.
 */
void wss_event_msg(struct buf *b, const char *subid, const char *json,
    size_t len);

/*
 * The writable callback's work: writes what q holds until the socket is
 * choked, the small text messages at its head framed together into one
 * write when coalesce is set (an unmasked server frame with no extension
 * is a header and the text).  Asks for another callback while anything
 * is left.  Returns 0, or -1 when the connection is to be closed: the
 * client is too slow (with that close reason) or a write failed.
 */
int wss_queue_write(struct wss_queue *q, int coalesce);

/*
 * Adds one received fragment, in[0..len) of the callback of wsi, to rx.
 * Returns 1 when rx->wr_buf holds a whole text message (call
 * wss_rx_done() once it is handled), else 0: more is to come, or the
 * message was refused with a NOTICE queued on q (binary, or over max
 * bytes).  Exits (fatal) when out of memory.
 */
int wss_rx_frame(struct wss_rx *rx, struct lws *wsi, const void *in, size_t len,
    size_t max, struct wss_queue *q);
/* Empties rx for the next message, releasing a large buffer. */
void wss_rx_done(struct wss_rx *rx);

/*
 * The HTTP writable callback's work for a response whose headers are
 * out: writes *body (len bytes, the caller's, freed here and set to
 * NULL) as the final write.  Returns the callback's answer: 0 to keep
 * the connection for the next request, -1 to close it.  A NULL *body is
 * nothing to write (0).  Exits (fatal) when out of memory.
 */
int wss_http_final(struct lws *wsi, char **body, size_t len);

#endif
