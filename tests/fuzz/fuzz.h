/*
 * fuzz.h: what graspd's libFuzzer harnesses (tests/fuzz/<name>_fuzz.c) share:
 * an invariant check that aborts with a message (libFuzzer then saves the
 * input), quiet logging, and an independent NIP-01 string escaper the
 * harnesses compare common/'s serialization against.
 *
 * Each harness is one LLVMFuzzerTestOneInput() over one parser that reads
 * network or sibling input; "make fuzz" builds them with clang's
 * -fsanitize=fuzzer,address,undefined against common/ compiled the same
 * way, and tests/fuzz/run_short.sh runs each for a few seconds in "make
 * test".
 */
#ifndef GRASPD_FUZZ_H
#define GRASPD_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "log.h"

/* Ends the run with the failed invariant; libFuzzer keeps the input. */
#define FUZZ_ASSERT(c) \
	do { \
		if (!(c)) { \
			fprintf(stderr, "fuzz invariant failed: %s:%d: %s\n", \
			    __FILE__, __LINE__, #c); \
			abort(); \
		} \
	} while (0)

/*
 * Once per process: nothing below warnings reaches stderr, so libFuzzer's
 * own output stays readable.
 */
static inline void
fuzz_init_log(void)
{
	static int done;

	if (!done) {
		log_init("fuzz", 1);
		log_setlevel(LOG_LVL_WARN);
		done = 1;
	}
}

/*
 * Appends s (len bytes) as a JSON string with NIP-01's canonical escaping,
 * written from the NIP text rather than from common/buf.c so that the two
 * can be compared: \n \" \\ \r \t \b \f as two-character escapes, other
 * bytes below 0x20 as \u00xx, every other byte (DEL, UTF-8) as is.
 */
static inline void
fuzz_jstr(struct buf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t		  i;
	unsigned char	  c;
	char		  u[6] = { '\\', 'u', '0', '0', 0, 0 };

	buf_addc(b, '"');
	for (i = 0; i < len; i++) {
		c = (unsigned char)s[i];
		switch (c) {
		case '\n':
			buf_adds(b, "\\n");
			break;
		case '"':
			buf_adds(b, "\\\"");
			break;
		case '\\':
			buf_adds(b, "\\\\");
			break;
		case '\r':
			buf_adds(b, "\\r");
			break;
		case '\t':
			buf_adds(b, "\\t");
			break;
		case '\b':
			buf_adds(b, "\\b");
			break;
		case '\f':
			buf_adds(b, "\\f");
			break;
		default:
			if (c < 0x20) {
				u[4] = hex[c >> 4];
				u[5] = hex[c & 0xf];
				buf_add(b, u, sizeof(u));
			} else
				buf_addc(b, (char)c);
		}
	}
	buf_addc(b, '"');
}

/* 1 if s (len bytes) is well-formed UTF-8 (RFC 3629; NUL allowed). */
static inline int
fuzz_utf8_ok(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t		     i = 0, n, k;
	uint32_t	     cp, min;

	while (i < len) {
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		if ((p[i] & 0xe0) == 0xc0) {
			n = 2;
			cp = p[i] & 0x1f;
			min = 0x80;
		} else if ((p[i] & 0xf0) == 0xe0) {
			n = 3;
			cp = p[i] & 0x0f;
			min = 0x800;
		} else if ((p[i] & 0xf8) == 0xf0) {
			n = 4;
			cp = p[i] & 0x07;
			min = 0x10000;
		} else
			return 0;
		if (len - i < n)
			return 0;
		for (k = 1; k < n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += n;
	}
	return 1;
}

#endif
