/*
 * addrkey.c: the key a per-address limit counts a client by (see
 * addrkey.h).  Pure functions; relayd calls them on its loop.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "addrkey.h"

/* RFC 4291 2.5.5.2: the 80 zero bits and 16 one bits of ::ffff:0:0/96. */
static const unsigned char v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff,
	0xff };

static int
key_v4(const unsigned char a[4], char *out, size_t outlen)
{
	if (inet_ntop(AF_INET, a, out, (socklen_t)outlen) == NULL) {
		out[0] = '\0';
		return -1;
	}
	return 0;
}

static int
key_v6(const struct in6_addr *in, int v6prefix, char *out, size_t outlen)
{
	struct in6_addr net = *in;
	char		text[INET6_ADDRSTRLEN];
	int		bit;

	if (memcmp(in->s6_addr, v4mapped, sizeof(v4mapped)) == 0)
		return key_v4(in->s6_addr + sizeof(v4mapped), out, outlen);
	if (v6prefix < 1 || v6prefix > ADDRKEY_V6_BITS)
		goto fail;
	for (bit = v6prefix; bit < ADDRKEY_V6_BITS; bit++)
		net.s6_addr[bit / 8] &= (unsigned char)~(0x80u >> (bit % 8));
	if (inet_ntop(AF_INET6, &net, text, sizeof(text)) == NULL)
		goto fail;
	if (v6prefix == ADDRKEY_V6_BITS) {
		if ((size_t)snprintf(out, outlen, "%s", text) >= outlen)
			goto fail;
	} else if ((size_t)snprintf(out, outlen, "%s/%d", text, v6prefix) >=
	    outlen)
		goto fail;
	return 0;
fail:
	if (outlen > 0)
		out[0] = '\0';
	return -1;
}

int
addrkey_of(const struct sockaddr *sa, socklen_t salen, int v6prefix, char *out,
    size_t outlen)
{
	const struct sockaddr_in  *sin;
	const struct sockaddr_in6 *sin6;

	if (outlen == 0)
		return -1;
	out[0] = '\0';
	if (sa->sa_family == AF_INET &&
	    (size_t)salen >= sizeof(struct sockaddr_in)) {
		sin = (const struct sockaddr_in *)sa;
		return key_v4((const unsigned char *)&sin->sin_addr, out,
		    outlen);
	}
	if (sa->sa_family == AF_INET6 &&
	    (size_t)salen >= sizeof(struct sockaddr_in6)) {
		sin6 = (const struct sockaddr_in6 *)sa;
		return key_v6(&sin6->sin6_addr, v6prefix, out, outlen);
	}
	return -1;
}

int
addrkey_text(const char *ip, int v6prefix, char *out, size_t outlen)
{
	struct in_addr	a4;
	struct in6_addr a6;

	if (outlen == 0)
		return -1;
	out[0] = '\0';
	if (inet_pton(AF_INET, ip, &a4) == 1)
		return key_v4((const unsigned char *)&a4, out, outlen);
	if (inet_pton(AF_INET6, ip, &a6) == 1)
		return key_v6(&a6, v6prefix, out, outlen);
	return -1;
}
