/*
 * relayurl.c: single-URL target hygiene, canonical relay keys and the
 * connect-time address check (see relayurl.h).  Runs in every role that
 * dials relays (syncd, discoveryd, historyd), on URLs from the network and
 * from the operator.
 *
 * The rule numbers in the refusal reasons are those of reference/nips.md
 * 6.2.  The parser is deliberately narrower than WHATWG's: anything it
 * would have to guess about is refused, because the same string must name
 * the same relay here, in the connection map and on the wire.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "log.h"
#include "mem.h"
#include "relayurl.h"

/* Both flags lift the private-target refusals; see relayurl.h. */
#define RELAYURL_ANY_ADDR (RELAYURL_TRUSTED | RELAYURL_ALLOW_PRIVATE)

/*
 * nips.md 6.2 rule 12: special-use and de-facto private zones (RFC 6761,
 * 6762, 8375, the ICANN .internal reservation, [ours]).  .example is not
 * here: the design's vectors accept wss://xn--ida.example.
 */
static const char *const special_zones[] = {
	"localhost",
	"local",
	"internal",
	"home.arpa",
	"lan",
	"localdomain",
	"intranet",
	"corp",
	"private",
	"test",
	"invalid",
};

/* nips.md 6.2 rule 12: overlay networks, refused without a proxy. */
static const char *const overlay_zones[] = { "onion", "i2p" };

/* nips.md 6.2 rule 14: IPv4 ranges that are not globally routable. */
static const struct {
	uint32_t net;
	unsigned bits;
} v4_refused[] = {
	{ 0x00000000, 8 },  /* 0.0.0.0/8, "this network" */
	{ 0x0a000000, 8 },  /* 10.0.0.0/8, private */
	{ 0x64400000, 10 }, /* 100.64.0.0/10, CGNAT */
	{ 0x7f000000, 8 },  /* 127.0.0.0/8, loopback */
	{ 0xa9fe0000, 16 }, /* 169.254.0.0/16, link-local, metadata */
	{ 0xac100000, 12 }, /* 172.16.0.0/12, private */
	{ 0xc0000000, 24 }, /* 192.0.0.0/24, IETF protocol assignments */
	{ 0xc0000200, 24 }, /* 192.0.2.0/24, TEST-NET-1 */
	{ 0xc0586300, 24 }, /* 192.88.99.0/24, 6to4 relay anycast */
	{ 0xc0a80000, 16 }, /* 192.168.0.0/16, private */
	{ 0xc6120000, 15 }, /* 198.18.0.0/15, benchmarking */
	{ 0xc6336400, 24 }, /* 198.51.100.0/24, TEST-NET-2 */
	{ 0xcb007100, 24 }, /* 203.0.113.0/24, TEST-NET-3 */
	{ 0xe0000000, 4 },  /* 224.0.0.0/4, multicast */
	{ 0xf0000000, 4 },  /* 240.0.0.0/4, reserved */
	{ 0xffffffff, 32 }, /* 255.255.255.255, broadcast */
};

/*
 * nips.md 6.2 rule 14: IPv6 ranges that are not globally routable.  The
 * IPv4-mapped, NAT64 and 6to4 prefixes are judged by their IPv4 address
 * instead (see v6_global).
 */
static const struct {
	uint8_t	 pfx[16];
	unsigned bits;
} v6_refused[] = {
	{ { 0 }, 96 }, /* ::/96, incl. ::, ::1 */
	/* 64:ff9b:1::/48, local-use NAT64: its IPv4 position varies. */
	{ { 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 }, 48 },
	{ { 0x01, 0x00 }, 64 },		    /* 100::/64, discard */
	{ { 0x20, 0x01 }, 23 },		    /* 2001::/23, incl. Teredo */
	{ { 0x20, 0x01, 0x0d, 0xb8 }, 32 }, /* 2001:db8::/32, docs */
	{ { 0x3f, 0xff }, 20 },		    /* 3fff::/20, documentation */
	{ { 0x5f, 0x00 }, 16 },		    /* 5f00::/16, segment routing */
	{ { 0xfc }, 7 },		    /* fc00::/7, unique local */
	{ { 0xfe, 0x80 }, 10 },		    /* fe80::/10, link-local */
	{ { 0xfe, 0xc0 }, 10 },		    /* fec0::/10, site-local */
	{ { 0xff }, 8 },		    /* ff00::/8, multicast */
};

/* The /96 prefixes that carry an IPv4 address: mapped, NAT64 (RFC 6052). */
static const uint8_t v6_mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff,
	0xff };
static const uint8_t v6_nat64[12] = { 0x00, 0x64, 0xff, 0x9b };

/* The key being built; over is set once it would pass RELAYURL_MAX. */
struct kbuf {
	char   k_data[RELAYURL_MAX + 1];
	size_t k_len;
	int    k_over;
};

static void
kput(struct kbuf *k, const char *s, size_t n)
{
	if (k->k_over || n > RELAYURL_MAX - k->k_len) {
		k->k_over = 1;
		return;
	}
	memcpy(k->k_data + k->k_len, s, n);
	k->k_len += n;
	k->k_data[k->k_len] = '\0';
}

static void
kputs(struct kbuf *k, const char *s)
{
	kput(k, s, strlen(s));
}

static int
is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
	    c == '\r';
}

static int
is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int
is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int
is_hex(int c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static char
to_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

static char
to_upper(char c)
{
	return c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c;
}

/* RFC 3986 pchar, less pct-encoded: unreserved, sub-delims, ':', '@'. */
static int
is_pchar(int c)
{
	return is_alpha(c) || is_digit(c) ||
	    (c != '\0' && strchr("-._~!$&'()*+,;=:@", c) != NULL);
}

static int
has_prefix_bits(const uint8_t *a, const uint8_t *pfx, unsigned bits)
{
	unsigned full = bits / 8, rem = bits % 8;
	uint8_t	 mask;

	if (memcmp(a, pfx, full) != 0)
		return 0;
	if (rem == 0)
		return 1;
	mask = (uint8_t)(0xff << (8 - rem));
	return (a[full] & mask) == (pfx[full] & mask);
}

/* a in host byte order.  Returns 1 if it is globally routable. */
static int
v4_global(uint32_t a)
{
	size_t	 i;
	uint32_t mask;

	for (i = 0; i < sizeof(v4_refused) / sizeof(v4_refused[0]); i++) {
		mask = v4_refused[i].bits == 32 ?
		    0xffffffffu :
		    ~(0xffffffffu >> v4_refused[i].bits);
		if ((a & mask) == v4_refused[i].net)
			return 0;
	}
	return 1;
}

static uint32_t
v4_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

/* Returns 1 if the IPv6 address a is globally routable. */
static int
v6_global(const uint8_t a[16])
{
	size_t i;

	/* These carry an IPv4 address a client would end up talking to. */
	if (memcmp(a, v6_mapped, 12) == 0 || memcmp(a, v6_nat64, 12) == 0)
		return v4_global(v4_at(a + 12));
	if (a[0] == 0x20 && a[1] == 0x02) /* 2002::/16, 6to4 */
		return v4_global(v4_at(a + 2));
	for (i = 0; i < sizeof(v6_refused) / sizeof(v6_refused[0]); i++)
		if (has_prefix_bits(a, v6_refused[i].pfx, v6_refused[i].bits))
			return 0;
	/* [ours] Only 2000::/3 is allocated global unicast (RFC 4291). */
	return (a[0] & 0xe0) == 0x20;
}

/* Returns 1 if the n-byte name h is zone or a name under it. */
static int
name_under(const char *h, size_t n, const char *zone)
{
	size_t z = strlen(zone);

	if (n == z)
		return memcmp(h, zone, z) == 0;
	return n > z && h[n - z - 1] == '.' && memcmp(h + n - z, zone, z) == 0;
}

static int
name_in(const char *h, size_t n, const char *const zones[], size_t nz)
{
	size_t i;

	for (i = 0; i < nz; i++)
		if (name_under(h, n, zones[i]))
			return 1;
	return 0;
}

/*
 * Checks the IPv6 literal between the brackets (s, n bytes) and appends
 * it, bracketed in RFC 5952 form, to k.
 */
static int
canon_ipv6(const char *s, size_t n, unsigned flags, struct kbuf *k,
    const char **why)
{
	char		txt[INET6_ADDRSTRLEN];
	struct in6_addr a;
	size_t		i;

	if (n == 0) {
		*why = "rule 8: host required";
		return -1;
	}
	if (memchr(s, '%', n) != NULL) {
		*why = "rule 14: IPv6 zone ids are refused";
		return -1;
	}
	if (n >= sizeof(txt)) {
		*why = "rule 14: not an IPv6 address";
		return -1;
	}
	for (i = 0; i < n; i++)
		txt[i] = to_lower(s[i]);
	txt[n] = '\0';
	if (inet_pton(AF_INET6, txt, &a) != 1) {
		*why = "rule 14: not an IPv6 address";
		return -1;
	}
	if (!(flags & RELAYURL_ANY_ADDR) && !v6_global(a.s6_addr)) {
		*why = "rule 14: IP address is not globally routable";
		return -1;
	}
	if (inet_ntop(AF_INET6, &a, txt, sizeof(txt)) == NULL) {
		*why = "rule 14: not an IPv6 address";
		return -1;
	}
	kputs(k, "[");
	kputs(k, txt);
	kputs(k, "]");
	return 0;
}

/*
 * Checks the host name or IPv4 literal s (n bytes) and appends its
 * canonical form to k.
 */
static int
canon_name(const char *s, size_t n, unsigned flags, struct kbuf *k,
    const char **why)
{
	char	       h[RELAYURL_MAX + 1], txt[INET_ADDRSTRLEN];
	struct in_addr a;
	size_t	       i, lab, last;

	if (memchr(s, '%', n) != NULL) {
		*why = "rule 9: '%' in host";
		return -1;
	}
	for (i = 0; i < n; i++)
		h[i] = to_lower(s[i]);
	if (n > 0 && h[n - 1] == '.')
		n--;
	h[n] = '\0';
	if (n == 0) {
		*why = "rule 8: host required";
		return -1;
	}
	if (n > RELAYURL_HOST_MAX) {
		*why = "rule 10: host name longer than " BUF_XSTR(
		    RELAYURL_HOST_MAX) " bytes";
		return -1;
	}

	lab = 0;
	last = 0;
	for (i = 0; i <= n; i++) {
		if (i == n || h[i] == '.') {
			if (i == lab) {
				*why = "rule 10: empty label in host name";
				return -1;
			}
			if (i - lab > RELAYURL_LABEL_MAX) {
				*why = "rule 10: label longer than " BUF_XSTR(
				    RELAYURL_LABEL_MAX) " bytes";
				return -1;
			}
			if (h[lab] == '-' || h[i - 1] == '-') {
				*why = "rule 10: label starts or ends with '-'";
				return -1;
			}
			last = lab;
			lab = i + 1;
			continue;
		}
		if (h[i] == '_') {
			*why = "rule 10: '_' in host name";
			return -1;
		}
		if (!is_digit(h[i]) && !(h[i] >= 'a' && h[i] <= 'z') &&
		    h[i] != '-') {
			*why = "rule 10: host name is not letters, digits, "
			       "'-' and '.'";
			return -1;
		}
	}

	/*
	 * WHATWG reads a host whose last label is numeric or 0x... as an
	 * IPv4 address in any of several encodings; only the canonical
	 * dotted quad is accepted, so no encoding can slip past rule 14.
	 */
	if (strspn(h + last, "0123456789") == n - last ||
	    strncmp(h + last, "0x", 2) == 0) {
		if (inet_pton(AF_INET, h, &a) != 1 ||
		    inet_ntop(AF_INET, &a, txt, sizeof(txt)) == NULL ||
		    strcmp(txt, h) != 0) {
			*why = "rule 13: IPv4 address not in dotted-quad form";
			return -1;
		}
		if (!(flags & RELAYURL_ANY_ADDR) &&
		    !v4_global(ntohl(a.s_addr))) {
			*why = "rule 14: IP address is not globally routable";
			return -1;
		}
		kput(k, h, n);
		return 0;
	}

	if (name_in(h, n, overlay_zones,
		sizeof(overlay_zones) / sizeof(overlay_zones[0]))) {
		*why = "rule 12: .onion and .i2p need a proxy graspd lacks";
		return -1;
	}
	if (!(flags & RELAYURL_ANY_ADDR)) {
		if (name_in(h, n, special_zones,
			sizeof(special_zones) / sizeof(special_zones[0]))) {
			*why = "rule 12: special-use or private host name";
			return -1;
		}
		if (memchr(h, '.', n) == NULL) {
			*why = "rule 11: single-label host";
			return -1;
		}
	}
	kput(k, h, n);
	return 0;
}

/*
 * Parses the port (s, n bytes, after the ':') into *port.  Leading zeros
 * are tolerated; the key is written in plain decimal.
 */
static int
parse_port(const char *s, size_t n, int *port, const char **why)
{
	long   v = 0;
	size_t i;

	if (n == 0) {
		*why = "rule 15: empty port";
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (!is_digit(s[i])) {
			*why = "rule 15: port is not decimal digits";
			return -1;
		}
		v = v * 10 + (s[i] - '0');
		if (v > RELAYURL_PORT_MAX) {
			*why = "rule 15: port out of range 1-" BUF_XSTR(
			    RELAYURL_PORT_MAX);
			return -1;
		}
	}
	if (v == 0) {
		*why =
		    "rule 15: port out of range 1-" BUF_XSTR(RELAYURL_PORT_MAX);
		return -1;
	}
	*port = (int)v;
	return 0;
}

/*
 * Checks the percent-encoding at s (s < e, *s == '%') and writes it with
 * uppercase hex digits to t.
 */
static int
pct_triplet(const char *s, const char *e, char t[3])
{
	if (e - s < 3 || !is_hex(s[1]) || !is_hex(s[2]))
		return -1;
	t[0] = '%';
	t[1] = to_upper(s[1]);
	t[2] = to_upper(s[2]);
	return 0;
}

/* Returns 1 if the segment s..e is "." or "..", also percent-encoded. */
static int
dot_segment(const char *s, const char *e)
{
	int dots = 0;

	while (s < e) {
		if (*s == '.')
			s++;
		else if (e - s >= 3 && s[0] == '%' && s[1] == '2' &&
		    (s[2] == 'e' || s[2] == 'E'))
			s += 3;
		else
			return 0;
		dots++;
	}
	return dots == 1 || dots == 2;
}

/* Appends the canonical form of the path s..e (may be empty) to k. */
static int
canon_path(const char *s, const char *e, struct kbuf *k, const char **why)
{
	const char *seg, *p;
	char	    t[3];
	int	    any = 0;

	while (s < e) {
		if (*s == '/') {
			s++;
			continue;
		}
		seg = s;
		while (s < e && *s != '/')
			s++;
		if (dot_segment(seg, s)) {
			*why = "rule 16: '.' or '..' path segment";
			return -1;
		}
		kputs(k, "/");
		for (p = seg; p < s; p++) {
			if (*p == '%') {
				if (pct_triplet(p, s, t) == -1) {
					*why = "rule 16: bad %-escape in path";
					return -1;
				}
				if (strncmp(t, "%00", 3) == 0 ||
				    strncmp(t, "%20", 3) == 0 ||
				    strncmp(t, "%2F", 3) == 0 ||
				    strncmp(t, "%5C", 3) == 0) {
					*why = "rule 16: %00, %20, %2F or %5C "
					       "in path";
					return -1;
				}
				kput(k, t, 3);
				p += 2;
			} else if (is_pchar(*p))
				kput(k, p, 1);
			else {
				*why = "rule 16: character not allowed in path";
				return -1;
			}
		}
		any = 1;
	}
	if (!any)
		kputs(k, "/");
	return 0;
}

/*
 * Appends "?" and the query s..e to k, unless it is empty.  The design
 * keeps queries as distinct targets, so they are not reordered: a relay
 * may give parameter order a meaning.
 */
static int
canon_query(const char *s, const char *e, struct kbuf *k, const char **why)
{
	const char *p;
	char	    t[3];

	if (s == e)
		return 0;
	kputs(k, "?");
	for (p = s; p < e; p++) {
		if (*p == '%') {
			if (pct_triplet(p, e, t) == -1) {
				*why = "rule 17: bad %-escape in query";
				return -1;
			}
			if (strncmp(t, "%00", 3) == 0) {
				*why = "rule 17: %00 in query";
				return -1;
			}
			kput(k, t, 3);
			p += 2;
		} else if (is_pchar(*p) || *p == '/' || *p == '?')
			kput(k, p, 1);
		else {
			*why = "rule 17: character not allowed in query";
			return -1;
		}
	}
	return 0;
}

static int
canon(const char *in, size_t len, unsigned flags, struct kbuf *k,
    const char **why)
{
	/* Room for "wss://" in front of a scheme-less trusted value. */
	char	    v[RELAYURL_MAX + sizeof("wss://")];
	const char *s = in, *e = in + len, *sep, *rest, *auth_end;
	const char *hend, *colon, *path_end, *query_end;
	size_t	    n, i, slen;
	int	    tls, port = 0, has_port = 0;

	while (s < e && is_space(*s))
		s++;
	while (e > s && is_space(e[-1]))
		e--;
	n = (size_t)(e - s);
	if (n > RELAYURL_MAX) {
		*why = "rule 1: longer than " BUF_XSTR(RELAYURL_MAX) " bytes";
		return -1;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= 0x20 || c == 0x7f || c >= 0x80) {
			*why = "rule 2: control, space or non-ASCII byte";
			return -1;
		}
		if (c == '\\') {
			*why = "rule 3: backslash";
			return -1;
		}
	}
	memcpy(v, s, n);
	v[n] = '\0';

	if ((sep = strstr(v, "://")) == NULL) {
		if (!(flags & RELAYURL_TRUSTED)) {
			*why = "rule 4: scheme must be ws:// or wss://";
			return -1;
		}
		memmove(v + 6, v, n + 1);
		memcpy(v, "wss://", 6);
		sep = v + 3;
	}
	slen = (size_t)(sep - v);
	if (slen == 3 && to_lower(v[0]) == 'w' && to_lower(v[1]) == 's' &&
	    to_lower(v[2]) == 's')
		tls = 1;
	else if (slen == 2 && to_lower(v[0]) == 'w' && to_lower(v[1]) == 's')
		tls = 0;
	else {
		*why = "rule 4: scheme must be ws:// or wss://";
		return -1;
	}
	rest = sep + 3;
	if (strstr(rest, "://") != NULL) {
		*why = "rule 5: more than one \"://\"";
		return -1;
	}

	/*
	 * The authority ends at the path or the query.  A '#' before either
	 * is refused rather than read as the end of the authority.
	 */
	auth_end = rest + strcspn(rest, "/?");
	if (memchr(rest, '#', (size_t)(auth_end - rest)) != NULL) {
		*why = "rule 7: '#' in the authority";
		return -1;
	}
	if (memchr(rest, ',', (size_t)(auth_end - rest)) != NULL) {
		*why = "rule 5: ',' in the authority";
		return -1;
	}
	if (memchr(rest, '@', (size_t)(auth_end - rest)) != NULL) {
		*why = "rule 6: userinfo in the authority";
		return -1;
	}
	if (auth_end == rest) {
		*why = "rule 8: host required";
		return -1;
	}

	kputs(k, tls ? "wss://" : "ws://");
	if (*rest == '[') {
		if ((hend = memchr(rest, ']', (size_t)(auth_end - rest))) ==
		    NULL) {
			*why = "rule 14: unterminated IPv6 literal";
			return -1;
		}
		if (canon_ipv6(rest + 1, (size_t)(hend - rest - 1), flags, k,
			why) == -1)
			return -1;
		colon = hend + 1;
		if (colon < auth_end && *colon != ':') {
			*why = "rule 15: junk after the IPv6 literal";
			return -1;
		}
	} else {
		colon = memchr(rest, ':', (size_t)(auth_end - rest));
		if (colon == NULL)
			colon = auth_end;
		if (colon == rest) {
			*why = "rule 8: host required";
			return -1;
		}
		if (canon_name(rest, (size_t)(colon - rest), flags, k, why) ==
		    -1)
			return -1;
	}
	if (colon < auth_end) {
		if (parse_port(colon + 1, (size_t)(auth_end - colon - 1), &port,
			why) == -1)
			return -1;
		has_port = 1;
	}
	if (has_port && port != (tls ? RELAYURL_WSS_PORT : RELAYURL_WS_PORT)) {
		char pbuf[8];

		snprintf(pbuf, sizeof(pbuf), ":%d", port);
		kputs(k, pbuf);
	}

	/* The fragment (from the first '#') is dropped (RFC 6455 3). */
	path_end = auth_end + strcspn(auth_end, "?#");
	if (canon_path(auth_end, path_end, k, why) == -1)
		return -1;
	if (*path_end == '?') {
		query_end = path_end + 1 + strcspn(path_end + 1, "#");
		if (canon_query(path_end + 1, query_end, k, why) == -1)
			return -1;
	}
	if (k->k_over) {
		*why =
		    "rule 1: key longer than " BUF_XSTR(RELAYURL_MAX) " bytes";
		return -1;
	}
	return 0;
}

int
relayurl_canon(const char *in, size_t len, unsigned flags, char *out,
    size_t outlen, const char **why)
{
	struct kbuf k;
	const char *dummy;

	if (why == NULL)
		why = &dummy;
	k.k_len = 0;
	k.k_over = 0;
	k.k_data[0] = '\0';
	if (canon(in, len, flags, &k, why) == -1)
		return -1;
	if (k.k_len >= outlen) {
		*why = "output buffer too small";
		return -1;
	}
	memcpy(out, k.k_data, k.k_len + 1);
	return 0;
}

/* Length of "scheme://authority" in the canonical key. */
static size_t
origin_len(const char *key)
{
	const char *sep = strstr(key, "://");

	if (sep == NULL)
		return strlen(key);
	return (size_t)(sep + 3 - key) + strcspn(sep + 3, "/");
}

int
relayurl_is_self(const char *key, const char *const self_keys[], size_t n)
{
	char	    ck[RELAYURL_MAX + 1];
	const char *k = key;
	size_t	    i, kl;

	if (relayurl_canon(key, strlen(key), RELAYURL_ANY_ADDR, ck, sizeof(ck),
		NULL) == 0)
		k = ck;
	kl = origin_len(k);
	for (i = 0; i < n; i++)
		if (origin_len(self_keys[i]) == kl &&
		    memcmp(self_keys[i], k, kl) == 0)
			return 1;
	return 0;
}

int
relayurl_self_keys(const char *domain, char out[][RELAYURL_MAX + 1], size_t max)
{
	static const char *const schemes[] = { "wss://", "ws://" };
	char			 url[RELAYURL_MAX + sizeof("wss://")];
	char			 key[RELAYURL_MAX + 1];
	size_t			 i, nout = 0;
	int			 len;

	for (i = 0; i < 2; i++) {
		len = snprintf(url, sizeof(url), "%s%s", schemes[i], domain);
		if (len < 0 || (size_t)len >= sizeof(url))
			return -1;
		if (relayurl_canon(url, (size_t)len, RELAYURL_TRUSTED, key,
			sizeof(key), NULL) == -1)
			return -1;
		if (nout < max)
			memcpy(out[nout++], key, sizeof(key));
	}
	return (int)nout;
}

int
relayurl_self_init(struct relayurl_self *self, const char *domain)
{
	int    n;
	size_t i;

	memset(self, 0, sizeof(*self));
	if (domain == NULL)
		return 0;
	if ((n = relayurl_self_keys(domain, self->rs_key, RELAYURL_SELF_MAX)) <
	    0)
		return -1;
	self->rs_n = (size_t)n;
	for (i = 0; i < self->rs_n; i++)
		self->rs_v[i] = self->rs_key[i];
	return n;
}

void
relayurl_add_trusted(char ***vp, size_t *np, const char *url, const char *what)
{
	char	    key[RELAYURL_MAX + 1];
	const char *why;

	if (relayurl_canon(url, strlen(url), RELAYURL_TRUSTED, key, sizeof(key),
		&why) == -1) {
		log_warnx("%s %s ignored: %s", what, url, why);
		return;
	}
	strv_add(vp, np, key);
}

int
relayurl_parse(const char *key, struct relayurl *out)
{
	char	       ck[RELAYURL_MAX + 1];
	const char    *auth, *auth_end, *hs, *he, *colon;
	struct in_addr a4;
	size_t	       n;

	if (relayurl_canon(key, strlen(key), RELAYURL_ANY_ADDR, ck, sizeof(ck),
		NULL) == -1 ||
	    strcmp(ck, key) != 0)
		return -1;

	memset(out, 0, sizeof(*out));
	out->ru_tls = strncmp(key, "wss://", 6) == 0;
	strcpy(out->ru_scheme, out->ru_tls ? "wss" : "ws");
	auth = key + (out->ru_tls ? 6 : 5);
	auth_end = auth + strcspn(auth, "/");
	n = (size_t)(auth_end - auth);
	memcpy(out->ru_authority, auth, n);
	out->ru_authority[n] = '\0';
	strcpy(out->ru_target, auth_end);

	if (*auth == '[') {
		hs = auth + 1;
		he = memchr(auth, ']', n);
		colon = he + 1;
		out->ru_family = AF_INET6;
	} else {
		hs = auth;
		he = memchr(auth, ':', n);
		if (he == NULL)
			he = auth_end;
		colon = he;
		out->ru_family = AF_UNSPEC;
	}
	memcpy(out->ru_host, hs, (size_t)(he - hs));
	out->ru_host[he - hs] = '\0';
	if (out->ru_family == AF_UNSPEC &&
	    inet_pton(AF_INET, out->ru_host, &a4) == 1)
		out->ru_family = AF_INET;
	if (colon < auth_end && *colon == ':') {
		out->ru_port = 0;
		for (colon++; colon < auth_end; colon++)
			out->ru_port = out->ru_port * 10 + (*colon - '0');
	} else
		out->ru_port =
		    out->ru_tls ? RELAYURL_WSS_PORT : RELAYURL_WS_PORT;
	return 0;
}

int
relayurl_check_resolved(const struct sockaddr *sa, unsigned flags)
{
	const struct sockaddr_in  *sin;
	const struct sockaddr_in6 *sin6;

	switch (sa->sa_family) {
	case AF_INET:
		if (flags & RELAYURL_ANY_ADDR)
			return 0;
		sin = (const struct sockaddr_in *)sa;
		return v4_global(ntohl(sin->sin_addr.s_addr)) ? 0 : -1;
	case AF_INET6:
		if (flags & RELAYURL_ANY_ADDR)
			return 0;
		sin6 = (const struct sockaddr_in6 *)sa;
		return v6_global(sin6->sin6_addr.s6_addr) ? 0 : -1;
	default:
		return -1;
	}
}

int
relayurl_resolve_hints(const char *key, struct relayurl *ru,
    struct addrinfo *hints, char *port, size_t portlen, const char **why)
{
	const char *dummy;

	if (why == NULL)
		why = &dummy;
	if (relayurl_parse(key, ru) == -1) {
		*why = "not a canonical relay key";
		return -1;
	}
	memset(hints, 0, sizeof(*hints));
	hints->ai_family = AF_UNSPEC;
	hints->ai_socktype = SOCK_STREAM;
	hints->ai_flags = AI_NUMERICSERV;
	if (ru->ru_family != AF_UNSPEC)
		hints->ai_flags |= AI_NUMERICHOST;
	snprintf(port, portlen, "%d", ru->ru_port);
	return 0;
}

int
relayurl_vet_addrinfo(int gai_rc, const struct addrinfo *res, unsigned flags,
    struct sockaddr_storage *out, socklen_t *outlen, const char **why)
{
	const struct addrinfo *ai;
	const char	      *dummy;

	if (why == NULL)
		why = &dummy;
	if (gai_rc != 0) {
		*why = gai_strerror(gai_rc);
		return -2;
	}
	if (res == NULL) {
		*why = "name has no address";
		return -2;
	}
	/* One refused answer is enough: the next lookup may return it. */
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		if (relayurl_check_resolved(ai->ai_addr, flags) == -1) {
			*why = "rule 22: name resolves to a refused address";
			return -1;
		}
	}
	if (res->ai_addrlen > sizeof(*out)) {
		*why = "address too long";
		return -1;
	}
	memset(out, 0, sizeof(*out));
	memcpy(out, res->ai_addr, res->ai_addrlen);
	*outlen = res->ai_addrlen;
	return 0;
}

int
relayurl_resolve_checked(const char *key, unsigned flags,
    struct sockaddr_storage *out, socklen_t *outlen, const char **why)
{
	struct relayurl ru;
	struct addrinfo hints, *res = NULL;
	char		port[8];
	int		rc;

	if (relayurl_resolve_hints(key, &ru, &hints, port, sizeof(port), why) ==
	    -1)
		return -1;
	rc = getaddrinfo(ru.ru_host, port, &hints, &res);
	rc = relayurl_vet_addrinfo(rc, rc == 0 ? res : NULL, flags, out, outlen,
	    why);
	if (res != NULL)
		freeaddrinfo(res);
	return rc;
}
