/*
 * wswatch.c: the read-only websocket frame watcher of wswatch.h.
 */
#include <string.h>

#include "wswatch.h"

/* RFC 6455 5.2: the MASK bit and the payload length of byte 2. */
#define WS_MASK_BIT	0x80
#define WS_LEN_MASK	0x7f
/* RFC 6455 5.2: lengths 126 and 127 take 2 and 8 more bytes. */
#define WS_LEN_16	126
#define WS_LEN_64	127
/* RFC 6455 5.2: the masking key's length. */
#define WS_MASK_KEY_LEN 4

enum {
	FR_HEAD, /* the first byte of a frame is next */
	FR_LEN7, /* the byte with MASK and the 7-bit length */
	FR_XLEN, /* ww_need bytes of extended length */
	FR_KEY,	 /* ww_need bytes of masking key */
	FR_BODY, /* ww_left bytes of payload */
};

static void
frame_restart(struct wswatch *w)
{
	w->ww_state = FR_HEAD;
	w->ww_frame_at = 0;
	w->ww_unmasked = 0;
	w->ww_masked = 0;
	w->ww_need = 0;
	w->ww_left = 0;
}

/* Moves past a frame header whose length is known. */
static void
header_done(struct wswatch *w)
{
	if (w->ww_masked) {
		w->ww_state = FR_KEY;
		w->ww_need = WS_MASK_KEY_LEN;
	} else
		w->ww_state = FR_BODY;
}

/* Follows n bytes of frames; 1 if an unmasked frame began in them. */
static int
frames(struct wswatch *w, const uint8_t *p, size_t n, int64_t now)
{
	size_t k;
	int    unmasked = 0;

	while (n > 0) {
		switch (w->ww_state) {
		case FR_HEAD:
			w->ww_frame_at = now;
			w->ww_state = FR_LEN7;
			p++, n--;
			break;
		case FR_LEN7:
			w->ww_masked = (*p & WS_MASK_BIT) != 0;
			if (!w->ww_masked && !w->ww_unmasked) {
				w->ww_unmasked = 1;
				unmasked = 1;
			}
			w->ww_left = 0;
			if ((*p & WS_LEN_MASK) == WS_LEN_16) {
				w->ww_state = FR_XLEN;
				w->ww_need = 2;
			} else if ((*p & WS_LEN_MASK) == WS_LEN_64) {
				w->ww_state = FR_XLEN;
				w->ww_need = 8;
			} else {
				w->ww_left = *p & WS_LEN_MASK;
				header_done(w);
			}
			p++, n--;
			break;
		case FR_XLEN:
			w->ww_left = (w->ww_left << 8) | *p;
			p++, n--;
			if (--w->ww_need == 0)
				header_done(w);
			break;
		case FR_KEY:
			k = n < w->ww_need ? n : w->ww_need;
			w->ww_need -= (unsigned)k;
			p += k, n -= k;
			if (w->ww_need == 0)
				w->ww_state = FR_BODY;
			break;
		case FR_BODY:
			k = (uint64_t)n < w->ww_left ? n : (size_t)w->ww_left;
			w->ww_left -= k;
			p += k, n -= k;
			break;
		}
		if (w->ww_state == FR_BODY && w->ww_left == 0) {
			w->ww_state = FR_HEAD;
			w->ww_frame_at = 0;
		}
	}
	return unmasked;
}

/*
 * Bytes before the upgrade: the frame follower starts again after each
 * "\r\n\r\n" and reads what follows it, in case it is frames.
 */
static void
http(struct wswatch *w, const uint8_t *p, size_t n, int64_t now)
{
	static const char eoh[] = "\r\n\r\n";
	const uint8_t	 *end = p + n, *from = p, *q;

	while (p < end) {
		if (w->ww_crlf == 0) {
			if ((q = memchr(p, '\r', (size_t)(end - p))) == NULL)
				break;
			p = q;
		}
		if (*p == (uint8_t)eoh[w->ww_crlf])
			w->ww_crlf++;
		else
			w->ww_crlf = *p == '\r';
		p++;
		if (w->ww_crlf == sizeof(eoh) - 1) {
			w->ww_crlf = 0;
			frame_restart(w);
			from = p;
		}
	}
	(void)frames(w, from, (size_t)(end - from), now);
}

int
wswatch_feed(struct wswatch *w, const void *p, size_t n, int64_t now_ms)
{
	if (w->ww_upgraded)
		return frames(w, p, n, now_ms);
	http(w, p, n, now_ms);
	return 0;
}

void
wswatch_upgraded(struct wswatch *w)
{
	w->ww_upgraded = 1;
	w->ww_crlf = 0;
}
