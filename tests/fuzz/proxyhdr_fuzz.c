/*
 * proxyhdr_fuzz.c: libFuzzer harness for common/proxyhdr.c, what relayd
 * reads of a trusted proxy: the PROXY header that starts each connection
 * of a proxy_protocol listener, and the X-Forwarded-For header.
 *
 * The input's first byte picks the harness: even, the bytes are a
 * connection's first bytes; odd, they are an X-Forwarded-For value and
 * the trusted ranges.  Invariants of the PROXY reader: every prefix of
 * a stream the whole reads as a header (or as bad) reads as NEED or the
 * same verdict, so no split of the bytes changes the answer; a header's
 * length is within the bytes held and PROXY_HDR_MAX; an address comes
 * with a family; _NEED never comes for PROXY_HDR_MAX bytes.  Of the
 * X-Forwarded-For reader: an answer is an address not in the trusted
 * ranges, and "none" or "bad" leaves no address.
 */
#include <sys/socket.h>

#include <netinet/in.h>

#include "fuzz.h"
#include "proxyhdr.h"

static void
fuzz_hdr(const uint8_t *data, size_t size)
{
	enum proxy_hdr_result	r, rp;
	struct sockaddr_storage ss, sp;
	const char	       *why;
	size_t			used, usedp, i;

	r = proxy_hdr_parse(data, size, &ss, &used, &why);
	FUZZ_ASSERT(r != PROXY_HDR_NEED || size < PROXY_HDR_MAX);
	FUZZ_ASSERT(r != PROXY_HDR_BAD || why != NULL);
	if (r == PROXY_HDR_ADDR || r == PROXY_HDR_LOCAL)
		FUZZ_ASSERT(used > 0 && used <= size && used <= PROXY_HDR_MAX);
	if (r == PROXY_HDR_ADDR)
		FUZZ_ASSERT(
		    ss.ss_family == AF_INET || ss.ss_family == AF_INET6);
	for (i = 0; i < size; i++) {
		rp = proxy_hdr_parse(data, i, &sp, &usedp, &why);
		if (rp == PROXY_HDR_NEED)
			continue;
		/* Decided early: the same answer as with every byte. */
		FUZZ_ASSERT(rp == r);
		if (r != PROXY_HDR_BAD) {
			FUZZ_ASSERT(usedp == used);
			FUZZ_ASSERT(memcmp(&sp, &ss, sizeof(ss)) == 0);
		}
	}
}

static void
fuzz_xff(const uint8_t *data, size_t size)
{
	struct proxy_net	nets[4];
	struct sockaddr_storage ss;
	const uint8_t	       *nl;
	const char	       *why;
	char		       *xff, *list, *item, *next;
	size_t			n = 0;
	int			r;

	/* "ranges\nxff": up to four comma-separated ranges. */
	if ((nl = memchr(data, '\n', size)) == NULL)
		return;
	if ((list = strndup((const char *)data, (size_t)(nl - data))) == NULL ||
	    (xff = strndup((const char *)nl + 1,
		 size - (size_t)(nl - data) - 1)) == NULL) {
		free(list);
		return;
	}
	for (item = list; item != NULL && n < 4; item = next) {
		if ((next = strchr(item, ',')) != NULL)
			*next++ = '\0';
		if (proxy_net_parse(item, &nets[n], &why) == 0)
			n++;
	}
	r = proxy_xff_client(xff, nets, n, &ss);
	FUZZ_ASSERT(r >= -1 && r <= 1);
	if (r == 1) {
		FUZZ_ASSERT(
		    ss.ss_family == AF_INET || ss.ss_family == AF_INET6);
		FUZZ_ASSERT(!proxy_net_match(nets, n, (struct sockaddr *)&ss));
	} else
		FUZZ_ASSERT(ss.ss_family == 0);
	free(list);
	free(xff);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		fuzz_xff(data + 1, size - 1);
	else
		fuzz_hdr(data + 1, size - 1);
	return 0;
}
