/*
 * proxyhdr.c: the client address a trusted reverse proxy passes on (see
 * proxyhdr.h).  Pure functions, run by relayd on its loop and by
 * config.c on any process's configuration.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxyhdr.h"

/* RFC 4291 2.5.5.2: the 80 zero bits and 16 one bits of ::ffff:0:0/96. */
static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff,
	0xff };

/* proxy-protocol.txt 2.2: the v2 signature. */
static const uint8_t v2sig[12] = { 0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a,
	0x51, 0x55, 0x49, 0x54, 0x0a };

/* proxy-protocol.txt 2.1: a v1 header begins so. */
#define V1_PREFIX "PROXY "

/* proxy-protocol.txt 2.2: the version nibble, commands, families. */
#define V2_VERSION   0x2
#define V2_CMD_LOCAL 0x0
#define V2_CMD_PROXY 0x1
#define V2_FAM_INET  0x1
#define V2_FAM_INET6 0x2
#define V2_FAM_MAX   0x3 /* AF_UNIX */
#define V2_PROTO_TCP 0x1
#define V2_PROTO_MAX 0x2 /* DGRAM */
#define V2_INET_LEN  12	 /* two IPv4 addresses and two ports */
#define V2_INET6_LEN 36	 /* two IPv6 addresses and two ports */

/* Longest address text an X-Forwarded-For item may hold: "[v6]:port". */
#define XFF_ITEM_MAX (INET6_ADDRSTRLEN + 8)

static void
clear_host_bits(uint8_t *a, int bits, int total)
{
	int bit;

	for (bit = bits; bit < total; bit++)
		a[bit / 8] &= (uint8_t) ~(0x80u >> (bit % 8));
}

int
proxy_net_parse(const char *text, struct proxy_net *net, const char **why)
{
	char	    host[INET6_ADDRSTRLEN];
	const char *slash;
	size_t	    hlen;
	long	    bits = -1;
	int	    total;

	memset(net, 0, sizeof(*net));
	slash = strchr(text, '/');
	hlen = slash != NULL ? (size_t)(slash - text) : strlen(text);
	if (hlen == 0 || hlen >= sizeof(host)) {
		*why = "is not an IP address or address/prefix";
		return -1;
	}
	memcpy(host, text, hlen);
	host[hlen] = '\0';
	if (inet_pton(AF_INET, host, net->pn_addr) == 1) {
		net->pn_family = AF_INET;
		total = 32;
	} else if (inet_pton(AF_INET6, host, net->pn_addr) == 1) {
		net->pn_family = AF_INET6;
		total = 128;
	} else {
		*why = "is not an IP address or address/prefix";
		return -1;
	}
	if (slash != NULL) {
		if (slash[1] == '\0' || strlen(slash + 1) > 3 ||
		    strspn(slash + 1, "0123456789") != strlen(slash + 1)) {
			*why = "has a prefix length that is not a number";
			return -1;
		}
		bits = strtol(slash + 1, NULL, 10);
		if (bits > total) {
			*why = net->pn_family == AF_INET ?
			    "has a prefix length over 32" :
			    "has a prefix length over 128";
			return -1;
		}
	}
	net->pn_bits = bits >= 0 ? (int)bits : total;
	clear_host_bits(net->pn_addr, net->pn_bits, total);
	return 0;
}

/* The family and address bytes of sa, IPv4-mapped IPv6 as IPv4; or 0. */
static int
sa_bytes(const struct sockaddr *sa, uint8_t out[16])
{
	const struct sockaddr_in  *sin;
	const struct sockaddr_in6 *sin6;

	if (sa->sa_family == AF_INET) {
		sin = (const struct sockaddr_in *)sa;
		memcpy(out, &sin->sin_addr, 4);
		return AF_INET;
	}
	if (sa->sa_family == AF_INET6) {
		sin6 = (const struct sockaddr_in6 *)sa;
		if (memcmp(sin6->sin6_addr.s6_addr, v4mapped,
			sizeof(v4mapped)) == 0) {
			memcpy(out, sin6->sin6_addr.s6_addr + 12, 4);
			return AF_INET;
		}
		memcpy(out, sin6->sin6_addr.s6_addr, 16);
		return AF_INET6;
	}
	return 0;
}

int
proxy_net_match(const struct proxy_net *nets, size_t n,
    const struct sockaddr *sa)
{
	uint8_t a[16];
	size_t	i;
	int	fam, full, rest;

	if ((fam = sa_bytes(sa, a)) == 0)
		return 0;
	for (i = 0; i < n; i++) {
		if (nets[i].pn_family != fam)
			continue;
		full = nets[i].pn_bits / 8;
		rest = nets[i].pn_bits % 8;
		if (memcmp(a, nets[i].pn_addr, (size_t)full) != 0)
			continue;
		if (rest != 0 &&
		    (a[full] & (uint8_t)(0xff00u >> rest)) !=
			nets[i].pn_addr[full])
			continue;
		return 1;
	}
	return 0;
}

/* 1 if p[0..n) is a port number 0-65535, else 0. */
static int
port_ok(const char *p, size_t n, uint16_t *port)
{
	unsigned long v = 0;
	size_t	      i;

	if (n == 0 || n > 5)
		return 0;
	for (i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return 0;
		v = v * 10 + (unsigned long)(p[i] - '0');
	}
	if (v > 65535)
		return 0;
	if (port != NULL)
		*port = (uint16_t)v;
	return 1;
}

/* Sets out from the numeric text host; 0, or -1 if it is none. */
static int
addr_of(const char *host, uint16_t port, struct sockaddr_storage *out)
{
	struct sockaddr_in  *sin = (struct sockaddr_in *)out;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)out;

	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		return 0;
	}
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		return 0;
	}
	return -1;
}

/* One X-Forwarded-For item p[0..n), blanks trimmed; 0 or -1. */
static int
xff_item(const char *p, size_t n, struct sockaddr_storage *out)
{
	char	    host[XFF_ITEM_MAX];
	const char *close, *colon;
	size_t	    hlen;

	while (n > 0 && (*p == ' ' || *p == '\t'))
		p++, n--;
	while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	if (n == 0 || n >= sizeof(host))
		return -1;
	if (p[0] == '[') {
		if ((close = memchr(p, ']', n)) == NULL)
			return -1;
		hlen = (size_t)(close - p - 1);
		if (close + 1 != p + n &&
		    (close[1] != ':' ||
			!port_ok(close + 2, (size_t)(p + n - close - 2), NULL)))
			return -1;
		memcpy(host, p + 1, hlen);
		host[hlen] = '\0';
		return strchr(host, ':') != NULL ? addr_of(host, 0, out) : -1;
	}
	colon = memchr(p, ':', n);
	if (colon != NULL &&
	    memchr(colon + 1, ':', (size_t)(p + n - colon - 1)) == NULL) {
		/* a.b.c.d:port */
		if (!port_ok(colon + 1, (size_t)(p + n - colon - 1), NULL))
			return -1;
		hlen = (size_t)(colon - p);
		memcpy(host, p, hlen);
		host[hlen] = '\0';
		return strchr(host, '.') != NULL &&
			addr_of(host, 0, out) == 0 &&
			out->ss_family == AF_INET ?
		    0 :
		    -1;
	}
	memcpy(host, p, n);
	host[n] = '\0';
	return addr_of(host, 0, out);
}

int
proxy_xff_client(const char *xff, const struct proxy_net *nets, size_t n,
    struct sockaddr_storage *out)
{
	const char *end = xff + strlen(xff), *start;
	size_t	    ilen;

	memset(out, 0, sizeof(*out));
	if (xff[strspn(xff, " \t")] == '\0')
		return 0;
	/* From the right: the proxies nearest relayd come last. */
	for (;;) {
		for (start = end; start > xff && start[-1] != ','; start--)
			;
		ilen = (size_t)(end - start);
		if (xff_item(start, ilen, out) == -1) {
			memset(out, 0, sizeof(*out));
			return -1;
		}
		if (!proxy_net_match(nets, n, (struct sockaddr *)out))
			return 1;
		if (start == xff)
			break;
		end = start - 1;
	}
	memset(out, 0, sizeof(*out));
	return 0;
}

/* The v1 line buf[0..n) (no CRLF): ADDR, LOCAL or BAD. */
static enum proxy_hdr_result
v1_line(const char *buf, size_t n, struct sockaddr_storage *src,
    const char **why)
{
	char	 line[PROXY_V1_MAX + 1], *f[6], *p;
	uint16_t sport;
	size_t	 i, nf = 0;
	int	 fam;

	memcpy(line, buf, n);
	line[n] = '\0';
	if (strncmp(line, V1_PREFIX "UNKNOWN",
		sizeof(V1_PREFIX "UNKNOWN") - 1) == 0)
		return PROXY_HDR_LOCAL;
	/* Fields are separated by exactly one space. */
	for (p = line, f[nf++] = p; *p != '\0'; p++) {
		if (*p != ' ')
			continue;
		if (nf == 6) {
			*why = "PROXY v1: too many fields";
			return PROXY_HDR_BAD;
		}
		*p = '\0';
		f[nf++] = p + 1;
	}
	if (nf != 6) {
		*why = "PROXY v1: too few fields";
		return PROXY_HDR_BAD;
	}
	for (i = 0; i < nf; i++)
		if (f[i][0] == '\0') {
			*why = "PROXY v1: an empty field";
			return PROXY_HDR_BAD;
		}
	if (strcmp(f[1], "TCP4") == 0)
		fam = AF_INET;
	else if (strcmp(f[1], "TCP6") == 0)
		fam = AF_INET6;
	else {
		*why = "PROXY v1: protocol is not TCP4, TCP6 or UNKNOWN";
		return PROXY_HDR_BAD;
	}
	if (!port_ok(f[4], strlen(f[4]), &sport) ||
	    !port_ok(f[5], strlen(f[5]), NULL)) {
		*why = "PROXY v1: a port is not a number 0-65535";
		return PROXY_HDR_BAD;
	}
	if (addr_of(f[2], sport, src) == -1 || src->ss_family != fam) {
		*why = "PROXY v1: bad source address";
		return PROXY_HDR_BAD;
	}
	{
		struct sockaddr_storage dst;

		if (addr_of(f[3], 0, &dst) == -1 || dst.ss_family != fam) {
			*why = "PROXY v1: bad destination address";
			return PROXY_HDR_BAD;
		}
	}
	return PROXY_HDR_ADDR;
}

static enum proxy_hdr_result
v1_parse(const uint8_t *buf, size_t len, struct sockaddr_storage *src,
    size_t *used, const char **why)
{
	enum proxy_hdr_result r;
	size_t		      i, n = len < PROXY_V1_MAX ? len : PROXY_V1_MAX;

	for (i = 0; i < n; i++) {
		if (buf[i] == '\r') {
			if (i + 1 == len)
				return PROXY_HDR_NEED;
			if (buf[i + 1] != '\n') {
				*why = "PROXY v1: CR without LF";
				return PROXY_HDR_BAD;
			}
			r = v1_line((const char *)buf, i, src, why);
			if (r != PROXY_HDR_BAD)
				*used = i + 2;
			return r;
		}
		/* Printable US-ASCII only (proxy-protocol.txt 2.1). */
		if (buf[i] < 0x20 || buf[i] > 0x7e) {
			*why = "PROXY v1: a control or non-ASCII byte";
			return PROXY_HDR_BAD;
		}
	}
	if (len >= PROXY_V1_MAX) {
		*why = "PROXY v1: no CRLF in 107 bytes";
		return PROXY_HDR_BAD;
	}
	return PROXY_HDR_NEED;
}

static enum proxy_hdr_result
v2_parse(const uint8_t *buf, size_t len, struct sockaddr_storage *src,
    size_t *used, const char **why)
{
	struct sockaddr_in  *sin = (struct sockaddr_in *)src;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)src;
	size_t		     alen, total;
	int		     cmd, fam, proto;

	if (len < PROXY_V2_HDR)
		return PROXY_HDR_NEED;
	if ((buf[12] >> 4) != V2_VERSION) {
		*why = "PROXY v2: version is not 2";
		return PROXY_HDR_BAD;
	}
	cmd = buf[12] & 0x0f;
	fam = buf[13] >> 4;
	proto = buf[13] & 0x0f;
	if (cmd != V2_CMD_LOCAL && cmd != V2_CMD_PROXY) {
		*why = "PROXY v2: command is not LOCAL or PROXY";
		return PROXY_HDR_BAD;
	}
	if (fam > V2_FAM_MAX || proto > V2_PROTO_MAX) {
		*why = "PROXY v2: unknown family or protocol";
		return PROXY_HDR_BAD;
	}
	alen = (size_t)buf[14] << 8 | buf[15];
	total = PROXY_V2_HDR + alen;
	if (total > PROXY_HDR_MAX) {
		*why = "PROXY v2: header longer than 536 bytes";
		return PROXY_HDR_BAD;
	}
	if (len < total)
		return PROXY_HDR_NEED;
	/* 2.2: LOCAL, and families or protocols the receiver does not
	 * know, keep the connection's own addresses. */
	if (cmd == V2_CMD_LOCAL || proto != V2_PROTO_TCP ||
	    (fam != V2_FAM_INET && fam != V2_FAM_INET6)) {
		*used = total;
		return PROXY_HDR_LOCAL;
	}
	if (fam == V2_FAM_INET) {
		if (alen < V2_INET_LEN) {
			*why = "PROXY v2: IPv4 addresses cut short";
			return PROXY_HDR_BAD;
		}
		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, buf + PROXY_V2_HDR, 4);
		memcpy(&sin->sin_port, buf + PROXY_V2_HDR + 8, 2);
	} else {
		if (alen < V2_INET6_LEN) {
			*why = "PROXY v2: IPv6 addresses cut short";
			return PROXY_HDR_BAD;
		}
		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, buf + PROXY_V2_HDR, 16);
		memcpy(&sin6->sin6_port, buf + PROXY_V2_HDR + 32, 2);
	}
	*used = total;
	return PROXY_HDR_ADDR;
}

enum proxy_hdr_result
proxy_hdr_parse(const uint8_t *buf, size_t len, struct sockaddr_storage *src,
    size_t *used, const char **why)
{
	size_t n;

	memset(src, 0, sizeof(*src));
	*used = 0;
	*why = NULL;
	if (len == 0)
		return PROXY_HDR_NEED;
	if (buf[0] == v2sig[0]) {
		n = len < sizeof(v2sig) ? len : sizeof(v2sig);
		if (memcmp(buf, v2sig, n) != 0) {
			*why = "not a PROXY v2 signature";
			return PROXY_HDR_BAD;
		}
		return v2_parse(buf, len, src, used, why);
	}
	n = len < sizeof(V1_PREFIX) - 1 ? len : sizeof(V1_PREFIX) - 1;
	if (memcmp(buf, V1_PREFIX, n) != 0) {
		*why = "no PROXY header";
		return PROXY_HDR_BAD;
	}
	return v1_parse(buf, len, src, used, why);
}
