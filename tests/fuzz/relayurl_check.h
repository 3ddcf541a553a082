/*
 * relayurl_check.h: the invariants of common/relayurl.c's canonical keys,
 * shared by the relayurl and relaylist harnesses.
 *
 * For one input, relayurl_canon() runs with every combination of flags:
 *  - a key is at most RELAYURL_MAX bytes of printable ASCII and starts
 *    with "ws://" or "wss://";
 *  - a key canonicalizes to itself (with the same flags and as trusted);
 *  - relayurl_parse() takes it apart consistently, and a key of an IP
 *    literal passes the connect-time check of relayurl_check_resolved()
 *    with the same flags;
 *  - an output buffer one byte short is refused, never overrun;
 *  - flags only widen: what peer input (no flags) gets as its key, every
 *    flag set gets too, and RELAYURL_TRUSTED differs from
 *    RELAYURL_ALLOW_PRIVATE only on values without "://".
 */
#ifndef GRASPD_RELAYURL_CHECK_H
#define GRASPD_RELAYURL_CHECK_H

#include <arpa/inet.h>
#include <netinet/in.h>

#include "fuzz.h"
#include "relayurl.h"

#define FUZZ_NFLAGS 4

static const unsigned fuzz_flags[FUZZ_NFLAGS] = {
	0,
	RELAYURL_TRUSTED,
	RELAYURL_ALLOW_PRIVATE,
	RELAYURL_TRUSTED | RELAYURL_ALLOW_PRIVATE,
};

/* Checks one key that relayurl_canon(in, flags) returned. */
static inline void
fuzz_check_key(const char *key, unsigned flags)
{
	char			again[RELAYURL_MAX + 1];
	struct relayurl		ru;
	struct sockaddr_storage ss;
	struct sockaddr_in     *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6    *sin6 = (struct sockaddr_in6 *)&ss;
	const char	       *why = NULL;
	size_t			n = strlen(key), i;

	FUZZ_ASSERT(n > 0 && n <= RELAYURL_MAX);
	FUZZ_ASSERT(
	    strncmp(key, "ws://", 5) == 0 || strncmp(key, "wss://", 6) == 0);
	for (i = 0; i < n; i++)
		FUZZ_ASSERT(key[i] > 0x20 && key[i] < 0x7f && key[i] != '\\' &&
		    key[i] != '#');

	/* A fixpoint, with the same flags and as trusted input. */
	FUZZ_ASSERT(
	    relayurl_canon(key, n, flags, again, sizeof(again), &why) == 0);
	FUZZ_ASSERT(strcmp(again, key) == 0);
	FUZZ_ASSERT(
	    relayurl_canon(key, n, RELAYURL_TRUSTED | RELAYURL_ALLOW_PRIVATE,
		again, sizeof(again), &why) == 0);
	FUZZ_ASSERT(strcmp(again, key) == 0);
	/* Exactly enough room works; one byte less is refused. */
	FUZZ_ASSERT(relayurl_canon(key, n, flags, again, n + 1, &why) == 0);
	FUZZ_ASSERT(relayurl_canon(key, n, flags, again, n, &why) == -1);

	FUZZ_ASSERT(relayurl_parse(key, &ru) == 0);
	FUZZ_ASSERT(ru.ru_tls == (key[2] == 's'));
	FUZZ_ASSERT(strcmp(ru.ru_scheme, ru.ru_tls ? "wss" : "ws") == 0);
	FUZZ_ASSERT(ru.ru_port >= 1 && ru.ru_port <= RELAYURL_PORT_MAX);
	FUZZ_ASSERT(ru.ru_host[0] != '\0' && ru.ru_target[0] == '/');
	FUZZ_ASSERT(strncmp(key + (ru.ru_tls ? 6 : 5), ru.ru_authority,
			strlen(ru.ru_authority)) == 0);
	FUZZ_ASSERT(strcmp(key + (ru.ru_tls ? 6 : 5) + strlen(ru.ru_authority),
			ru.ru_target) == 0);
	FUZZ_ASSERT(relayurl_is_self(key, (const char *const[]){ key }, 1));

	/* An IP literal's address passes the connect-time check. */
	memset(&ss, 0, sizeof(ss));
	if (ru.ru_family == AF_UNSPEC) {
		FUZZ_ASSERT(
		    inet_pton(AF_INET, ru.ru_host, &sin->sin_addr) != 1);
		return;
	}
	FUZZ_ASSERT(ru.ru_family == AF_INET || ru.ru_family == AF_INET6);
	ss.ss_family = ru.ru_family;
	FUZZ_ASSERT(
	    inet_pton(ru.ru_family, ru.ru_host,
		ru.ru_family == AF_INET ? (void *)&sin->sin_addr :
					  (void *)&sin6->sin6_addr) == 1);
	FUZZ_ASSERT(
	    relayurl_check_resolved((struct sockaddr *)&ss, flags) == 0);
}

/*
 * Runs in (len bytes) through relayurl_canon() with every flag set and
 * checks the keys and how they relate.  Returns 1 if peer input (no
 * flags) is accepted, else 0.
 */
static inline int
fuzz_check_url(const char *in, size_t len)
{
	char	    key[FUZZ_NFLAGS][RELAYURL_MAX + 1];
	const char *why;
	int	    rc[FUZZ_NFLAGS], i, has_sep;

	for (i = 0; i < FUZZ_NFLAGS; i++) {
		why = NULL;
		rc[i] = relayurl_canon(in, len, fuzz_flags[i], key[i],
		    sizeof(key[i]), &why);
		FUZZ_ASSERT(rc[i] == 0 || rc[i] == -1);
		if (rc[i] == -1) {
			FUZZ_ASSERT(why != NULL && why[0] != '\0');
			continue;
		}
		fuzz_check_key(key[i], fuzz_flags[i]);
	}
	/* Peer input accepted: every widening flag gives the same key. */
	if (rc[0] == 0)
		for (i = 1; i < FUZZ_NFLAGS; i++)
			FUZZ_ASSERT(rc[i] == 0 && strcmp(key[i], key[0]) == 0);
	/* Both flags lift the same address checks. */
	if (rc[2] == 0)
		FUZZ_ASSERT(rc[1] == 0 && strcmp(key[1], key[2]) == 0);
	FUZZ_ASSERT(
	    rc[1] == rc[3] && (rc[1] == -1 || strcmp(key[1], key[3]) == 0));
	/* Without "://" anywhere, only trusted input is taken. */
	has_sep = 0;
	for (size_t k = 0; k + 3 <= len && !has_sep; k++)
		has_sep = memcmp(in + k, "://", 3) == 0;
	if (!has_sep)
		FUZZ_ASSERT(rc[0] == -1 && rc[2] == -1);
	else if (rc[1] == 0)
		FUZZ_ASSERT(rc[2] == 0);
	return rc[0] == 0;
}

#endif
