/*
 * wswatch_test.c: the read-only websocket frame watcher
 * (common/wswatch.c) relayd uses for unmasked frames and slow frames:
 * it follows frames however the bytes are split, sees an unmasked frame,
 * knows since when a frame is in progress, and before the upgrade starts
 * again after each request's headers.
 */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "t.h"
#include "wsclient.h"
#include "wswatch.h"

static const uint8_t mask[4] = { 0x11, 0x22, 0x33, 0x44 };

/* A frame of len payload bytes into b, masked or not. */
static void
frame(struct buf *b, int opcode, size_t len, int masked)
{
	char payload[70000];

	memset(payload, 'x', len);
	wsc_frame_encode(b, opcode, 1, masked ? mask : NULL, payload, len);
}

/* Feeds b to an upgraded watcher in pieces of step bytes. */
static int
feed_split(struct wswatch *w, const struct buf *b, size_t step, int64_t now)
{
	size_t i, n;
	int    seen = 0;

	for (i = 0; i < b->b_len; i += n) {
		n = b->b_len - i < step ? b->b_len - i : step;
		seen |= wswatch_feed(w, b->b_data + i, n, now);
	}
	return seen;
}

static void
test_whole_masked_frames_leave_no_frame_in_progress(void)
{
	static const size_t lens[] = { 0, 1, 125, 126, 65535, 65536 };
	struct buf	    b = BUF_INIT;
	size_t		    i, step;

	for (i = 0; i < T_NCASES(lens); i++)
		frame(&b, WS_OP_TEXT, lens[i], 1);
	frame(&b, WS_OP_PING, 4, 1);
	for (step = 1; step <= 7; step++) {
		struct wswatch w = WSWATCH_INIT;

		wswatch_upgraded(&w);
		T_EQ_INT(feed_split(&w, &b, step, 5), 0);
		T_EQ_INT(w.ww_frame_at, 0);
		T_EQ_INT(w.ww_unmasked, 0);
	}
	buf_free(&b);
}

static void
test_frame_stopped_anywhere_is_in_progress_since_its_first_byte(void)
{
	struct buf b = BUF_INIT;
	size_t	   cut;

	/* 2 bytes of header, 2 of 16-bit length, 4 of key, 200 of payload. */
	frame(&b, WS_OP_TEXT, 200, 1);
	T_EQ_INT(b.b_len, 208);
	for (cut = 1; cut < b.b_len; cut++) {
		struct wswatch w = WSWATCH_INIT;

		wswatch_upgraded(&w);
		wswatch_feed(&w, b.b_data, 1, 100);
		if (cut > 1)
			wswatch_feed(&w, b.b_data + 1, cut - 1, 200);
		T_EQ_INT(w.ww_frame_at, 100);
		wswatch_feed(&w, b.b_data + cut, b.b_len - cut, 300);
		T_EQ_INT(w.ww_frame_at, 0);
	}
	buf_free(&b);
}

static void
test_unmasked_frame_is_seen_once(void)
{
	struct wswatch w = WSWATCH_INIT;
	struct buf     b = BUF_INIT;

	wswatch_upgraded(&w);
	frame(&b, WS_OP_TEXT, 10, 1);
	T_EQ_INT(feed_split(&w, &b, 3, 1), 0);
	buf_reset(&b);
	frame(&b, WS_OP_TEXT, 300, 0);
	T_EQ_INT(feed_split(&w, &b, 1, 1), 1);
	T_EQ_INT(w.ww_unmasked, 1);
	T_EQ_INT(w.ww_frame_at, 0);
	/* Followed past, and not reported again. */
	T_EQ_INT(feed_split(&w, &b, 1000, 1), 0);
	/* An empty unmasked control frame too. */
	{
		struct wswatch w2 = WSWATCH_INIT;

		wswatch_upgraded(&w2);
		T_EQ_INT(wswatch_feed(&w2, "\x89\x00", 2, 1), 1);
		T_EQ_INT(w2.ww_frame_at, 0);
	}
	buf_free(&b);
}

static void
test_before_upgrade_only_bytes_after_the_headers_count(void)
{
	static const char req[] = "GET / HTTP/1.1\r\nHost: x\r\n"
				  "Upgrade: websocket\r\n\r\n";
	struct wswatch	  w = WSWATCH_INIT;
	struct buf	  b = BUF_INIT;
	size_t		  i;

	/* A request line alone looks like an unmasked frame: not counted. */
	for (i = 0; i < sizeof(req) - 1; i++)
		T_EQ_INT(wswatch_feed(&w, req + i, 1, 7), 0);
	T_EQ_INT(w.ww_unmasked, 0);
	T_EQ_INT(w.ww_frame_at, 0);
	/* A masked frame sent behind the request, its first 3 bytes. */
	frame(&b, WS_OP_TEXT, 20, 1);
	wswatch_feed(&w, b.b_data, 3, 9);
	wswatch_upgraded(&w);
	T_EQ_INT(w.ww_frame_at, 9);
	wswatch_feed(&w, b.b_data + 3, b.b_len - 3, 10);
	T_EQ_INT(w.ww_frame_at, 0);
	T_EQ_INT(w.ww_unmasked, 0);

	/* An unmasked frame behind the request is seen at the upgrade. */
	{
		struct wswatch w2 = WSWATCH_INIT;

		buf_reset(&b);
		buf_add(&b, req, sizeof(req) - 1);
		frame(&b, WS_OP_TEXT, 5, 0);
		T_EQ_INT(wswatch_feed(&w2, b.b_data, b.b_len, 1), 0);
		wswatch_upgraded(&w2);
		T_EQ_INT(w2.ww_unmasked, 1);
	}
	/* "\r\n\r\n" split over reads, after a kept-alive request. */
	{
		struct wswatch w3 = WSWATCH_INIT;

		wswatch_feed(&w3, "GET /a HTTP/1.1\r\n\r", 18, 1);
		wswatch_feed(&w3, "\nGET / HTTP/1.1\r", 16, 1);
		wswatch_feed(&w3, "\n\r\n", 3, 1);
		T_EQ_INT(w3.ww_unmasked, 0);
		T_EQ_INT(w3.ww_frame_at, 0);
	}
	buf_free(&b);
}

static const struct t_case cases[] = {
	T_CASE(test_whole_masked_frames_leave_no_frame_in_progress),
	T_CASE(test_frame_stopped_anywhere_is_in_progress_since_its_first_byte),
	T_CASE(test_unmasked_frame_is_seen_once),
	T_CASE(test_before_upgrade_only_bytes_after_the_headers_count),
};

T_MAIN(cases)
