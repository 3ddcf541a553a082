/*
 * buf.c: growable byte buffers (see buf.h).  Used by every process.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "log.h"

void
buf_reserve(struct buf *b, size_t n)
{
	size_t cap;
	char  *p;

	if (b->b_len + n + 1 <= b->b_cap)
		return;
	cap = b->b_cap ? b->b_cap : 256;
	while (cap < b->b_len + n + 1)
		cap *= 2;
	if ((p = realloc(b->b_data, cap)) == NULL)
		fatal("buf_reserve");
	b->b_data = p;
	b->b_cap = cap;
}

void
buf_add(struct buf *b, const void *p, size_t n)
{
	buf_reserve(b, n);
	if (n)
		memcpy(b->b_data + b->b_len, p, n);
	b->b_len += n;
	b->b_data[b->b_len] = '\0';
}

void
buf_addc(struct buf *b, char c)
{
	buf_reserve(b, 1);
	b->b_data[b->b_len++] = c;
	b->b_data[b->b_len] = '\0';
}

void
buf_adds(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

void
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int	n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		fatalx("buf_printf: bad format");
	buf_reserve(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->b_data + b->b_len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->b_len += (size_t)n;
}

/*
 * NIP-01 canonical string escaping: the seven named escapes, \u00xx with
 * lowercase hex for the other C0 controls (what JS, serde_json and
 * go-nostr write), everything else (DEL, non-ASCII, '/') verbatim.
 */
void
buf_add_jstr(struct buf *b, const char *s, size_t len)
{
	static const char    hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	size_t		     i, run;
	char		    *o;

	/* Worst case 6 bytes per input byte, plus the quotes. */
	buf_reserve(b, len * 6 + 2);
	o = b->b_data + b->b_len;
	*o++ = '"';
	for (i = 0; i < len;) {
		/* Copy plain runs in one go: the common case. */
		for (run = i; run < len && p[run] >= 0x20 && p[run] != '"' &&
		     p[run] != '\\';
		     run++)
			;
		if (run > i) {
			memcpy(o, p + i, run - i);
			o += run - i;
			i = run;
			continue;
		}
		switch (p[i]) {
		case '"':
			*o++ = '\\';
			*o++ = '"';
			break;
		case '\\':
			*o++ = '\\';
			*o++ = '\\';
			break;
		case '\n':
			*o++ = '\\';
			*o++ = 'n';
			break;
		case '\r':
			*o++ = '\\';
			*o++ = 'r';
			break;
		case '\t':
			*o++ = '\\';
			*o++ = 't';
			break;
		case '\b':
			*o++ = '\\';
			*o++ = 'b';
			break;
		case '\f':
			*o++ = '\\';
			*o++ = 'f';
			break;
		default:
			*o++ = '\\';
			*o++ = 'u';
			*o++ = '0';
			*o++ = '0';
			*o++ = hex[p[i] >> 4];
			*o++ = hex[p[i] & 0xf];
			break;
		}
		i++;
	}
	*o++ = '"';
	b->b_len = (size_t)(o - b->b_data);
	b->b_data[b->b_len] = '\0';
}

void
buf_add_int(struct buf *b, long long v)
{
	char		   tmp[24], *o = tmp + sizeof(tmp);
	unsigned long long u =
	    v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;

	do
		*--o = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		*--o = '-';
	buf_add(b, o, (size_t)(tmp + sizeof(tmp) - o));
}

void
buf_add_hex(struct buf *b, const unsigned char *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t		  i;
	char		 *o;

	buf_reserve(b, n * 2);
	o = b->b_data + b->b_len;
	for (i = 0; i < n; i++) {
		*o++ = hex[p[i] >> 4];
		*o++ = hex[p[i] & 0xf];
	}
	b->b_len += n * 2;
	b->b_data[b->b_len] = '\0';
}

void
buf_reset(struct buf *b)
{
	b->b_len = 0;
	if (b->b_data)
		b->b_data[0] = '\0';
}

void
buf_free(struct buf *b)
{
	free(b->b_data);
	b->b_data = NULL;
	b->b_len = b->b_cap = 0;
}

char *
buf_release(struct buf *b, size_t *lenp)
{
	char *p = b->b_data;

	if (p == NULL) {
		if ((p = strdup("")) == NULL)
			fatal("buf_release");
	}
	if (lenp)
		*lenp = b->b_len;
	b->b_data = NULL;
	b->b_len = b->b_cap = 0;
	return p;
}
