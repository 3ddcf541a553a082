/*
 * wsserve.c: the server side of a NIP-01 websocket (see wsserve.h), run
 * by relayd's relay_ws.c and by the test peer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "wsserve.h"

void
wss_queue_init(struct wss_queue *q, struct lws *wsi, size_t max,
    const char *who)
{
	memset(q, 0, sizeof(*q));
	STAILQ_INIT(&q->wq_q);
	q->wq_max = max;
	q->wq_wsi = wsi;
	q->wq_who = who;
}

/* Takes the head off q and frees it. */
static void
queue_pop(struct wss_queue *q)
{
	struct wss_out *o = STAILQ_FIRST(&q->wq_q);

	STAILQ_REMOVE_HEAD(&q->wq_q, wo_entry);
	q->wq_bytes -= o->wo_len;
	free(o);
}

void
wss_queue_clear(struct wss_queue *q)
{
	while (!STAILQ_EMPTY(&q->wq_q))
		queue_pop(q);
}

void
wss_send(struct wss_queue *q, const void *s, size_t len, int binary)
{
	struct wss_out *o;

	if (q->wq_too_slow || q->wq_shut)
		return;
	if (q->wq_bytes + len > q->wq_max) {
		wss_too_slow(q, "dropping a client that does not read");
		return;
	}
	if ((o = malloc(sizeof(*o) + LWS_PRE + len)) == NULL)
		fatal("wss_send");
	if (STAILQ_EMPTY(&q->wq_q))
		q->wq_moved = lws_now_usecs();
	o->wo_binary = binary;
	o->wo_len = len;
	memcpy(o->wo_data + LWS_PRE, s, len);
	STAILQ_INSERT_TAIL(&q->wq_q, o, wo_entry);
	q->wq_bytes += len;
	lws_callback_on_writable(q->wq_wsi);
}

void
wss_too_slow(struct wss_queue *q, const char *why)
{
	if (q->wq_too_slow)
		return;
	log_info("%s: %s", q->wq_who, why);
	q->wq_too_slow = 1;
	lws_callback_on_writable(q->wq_wsi);
}

lws_usec_t
wss_queue_stalled(const struct wss_queue *q, lws_usec_t now)
{
	if (STAILQ_EMPTY(&q->wq_q) || now < q->wq_moved)
		return 0;
	return now - q->wq_moved;
}

void
wss_send_msg(struct wss_queue *q, const char *verb, const char *a,
    const char *b)
{
	struct buf m = BUF_INIT;

	buf_adds(&m, "[\"");
	buf_adds(&m, verb);
	buf_adds(&m, "\",");
	buf_add_jstr(&m, a, strlen(a));
	if (b != NULL) {
		buf_addc(&m, ',');
		buf_add_jstr(&m, b, strlen(b));
	}
	buf_addc(&m, ']');
	wss_send(q, m.b_data, m.b_len, 0);
	buf_free(&m);
}

void
wss_notice(struct wss_queue *q, const char *msg)
{
	wss_send_msg(q, "NOTICE", msg, NULL);
}

void
wss_ok(struct wss_queue *q, const char *id_hex, int ok, const char *msg)
{
	struct buf m = BUF_INIT;

	buf_adds(&m, "[\"OK\",");
	buf_add_jstr(&m, id_hex, strlen(id_hex));
	buf_adds(&m, ok ? ",true," : ",false,");
	buf_add_jstr(&m, msg, strlen(msg));
	buf_addc(&m, ']');
	wss_send(q, m.b_data, m.b_len, 0);
	buf_free(&m);
}

void
wss_event_msg(struct buf *b, const char *subid, const char *json, size_t len)
{
	buf_adds(b, "[\"EVENT\",");
	buf_add_jstr(b, subid, strlen(subid));
	buf_addc(b, ',');
	buf_add(b, json, len);
	buf_addc(b, ']');
}

/* Writes a websocket frame header for a final text frame of len bytes. */
static size_t
frame_header(unsigned char *p, size_t len)
{
	size_t n = 2, i;

	p[0] = 0x81; /* FIN, text (RFC 6455 5.2) */
	if (len < 126)
		p[1] = (unsigned char)len;
	else if (len <= 0xffff) {
		p[1] = 126;
		p[2] = (unsigned char)(len >> 8);
		p[3] = (unsigned char)len;
		n = 4;
	} else {
		p[1] = 127;
		for (i = 0; i < 8; i++)
			p[2 + i] =
			    (unsigned char)((uint64_t)len >> (56 - 8 * i));
		n = 10;
	}
	return n;
}

/*
 * Frames the small text messages at the head of q into one buffer and
 * writes them with one call (a REQ's events, a batch's OKs).  Returns
 * what lws_write() returns, 0 when the head is a large or binary message.
 */
static int
write_coalesced(struct wss_queue *q)
{
	static unsigned char buf[LWS_PRE + WSS_WRITE_COALESCE];
	struct wss_out	    *o;
	size_t		     n = 0;

	while ((o = STAILQ_FIRST(&q->wq_q)) != NULL && !o->wo_binary &&
	    n + WSS_FRAME_HEADER_MAX + o->wo_len <= WSS_WRITE_COALESCE) {
		n += frame_header(buf + LWS_PRE + n, o->wo_len);
		memcpy(buf + LWS_PRE + n, o->wo_data + LWS_PRE, o->wo_len);
		n += o->wo_len;
		q->wq_sent += o->wo_len;
		queue_pop(q);
	}
	if (n == 0)
		return 0;
	return lws_write(q->wq_wsi, buf + LWS_PRE, n, LWS_WRITE_RAW);
}

int
wss_queue_write(struct wss_queue *q, int coalesce)
{
	struct lws     *wsi = q->wq_wsi;
	struct wss_out *o;
	int		n;

	if (q->wq_too_slow) {
		lws_close_reason(wsi, LWS_CLOSE_STATUS_POLICY_VIOLATION,
		    (unsigned char *)"too slow", 8);
		return -1;
	}
	while ((o = STAILQ_FIRST(&q->wq_q)) != NULL) {
		if (!coalesce || (n = write_coalesced(q)) == 0) {
			/* Too large to share a write: on its own. */
			n = lws_write(wsi, o->wo_data + LWS_PRE, o->wo_len,
			    o->wo_binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT);
			if (n >= 0)
				q->wq_sent += o->wo_len;
			queue_pop(q);
		}
		if (n < 0)
			return -1;
		q->wq_moved = lws_now_usecs();
		if (lws_send_pipe_choked(wsi))
			break;
	}
	if (!STAILQ_EMPTY(&q->wq_q))
		lws_callback_on_writable(wsi);
	return 0;
}

int
wss_rx_frame(struct wss_rx *rx, struct lws *wsi, const void *in, size_t len,
    size_t max, struct wss_queue *q)
{
	int  final = lws_is_final_fragment(wsi);
	char notice[128];

	if (lws_frame_is_binary(wsi)) {
		if (final)
			wss_notice(q,
			    "invalid: binary messages are not "
			    "processed by this relay");
		return 0;
	}
	if (!rx->wr_oversized) {
		if (rx->wr_buf.b_len + len > max) {
			rx->wr_oversized = 1;
			buf_free(&rx->wr_buf);
		} else
			buf_add(&rx->wr_buf, in, len);
	}
	if (!final)
		return 0;
	if (rx->wr_oversized) {
		snprintf(notice, sizeof(notice),
		    "invalid: message too large (at most %zu bytes)", max);
		wss_notice(q, notice);
		rx->wr_oversized = 0;
		return 0;
	}
	return 1;
}

void
wss_rx_done(struct wss_rx *rx)
{
	buf_reset(&rx->wr_buf);
	/* Do not keep a large buffer around for an idle client. */
	if (rx->wr_buf.b_cap > WSS_RX_KEEP)
		buf_free(&rx->wr_buf);
}

int
wss_http_final(struct lws *wsi, char **body, size_t len)
{
	unsigned char *buf;
	int	       n;

	if (*body == NULL)
		return 0;
	if ((buf = malloc(LWS_PRE + len)) == NULL)
		fatal("wss_http_final");
	memcpy(buf + LWS_PRE, *body, len);
	n = lws_write(wsi, buf + LWS_PRE, len, LWS_WRITE_HTTP_FINAL);
	free(buf);
	free(*body);
	*body = NULL;
	if (n < 0)
		return -1;
	return lws_http_transaction_completed(wsi) ? -1 : 0;
}
