/*
 * buf.h: a growable byte buffer, used wherever a message is built.
 *
 * Allocation failure is fatal (the role is restarted), so the append
 * functions return nothing.
 */
#ifndef GRASPD_BUF_H
#define GRASPD_BUF_H

#include <stddef.h>

struct buf {
	char  *b_data; /* always NUL-terminated after a write */
	size_t b_len;
	size_t b_cap;
};

#define BUF_INIT \
	{ \
		NULL, 0, 0 \
	}

/*
 * A macro's value as a string literal, for text put together when the
 * program is compiled: "longer than " BUF_XSTR(RELAYURL_MAX) " bytes".
 */
#define BUF_XSTR(x) BUF_STR_(x)
#define BUF_STR_(x) #x

/* Makes room for n more bytes (plus a NUL). */
void buf_reserve(struct buf *, size_t n);
void buf_add(struct buf *, const void *, size_t);
void buf_addc(struct buf *, char);
void buf_adds(struct buf *, const char *);
void buf_printf(struct buf *, const char *, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends s as a JSON string literal with NIP-01 canonical escaping. */
void  buf_add_jstr(struct buf *, const char *s, size_t len);
/* Appends v in decimal, as printf's %lld would. */
void  buf_add_int(struct buf *, long long v);
/* Appends the lowercase hex of n bytes. */
void  buf_add_hex(struct buf *, const unsigned char *, size_t n);
void  buf_reset(struct buf *);
void  buf_free(struct buf *);
/* Takes the data out; the buffer is empty afterwards.  Caller frees. */
char *buf_release(struct buf *, size_t *lenp);

#endif
