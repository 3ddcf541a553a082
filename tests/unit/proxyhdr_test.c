/*
 * proxyhdr_test.c: what a trusted proxy's headers make of the client
 * address (common/proxyhdr.c): trusted_proxies ranges, X-Forwarded-For's
 * right-most untrusted address, and the PROXY protocol v1 and v2 headers
 * nginx, HAProxy and Caddy send.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "proxyhdr.h"
#include "t.h"

/* "addr" or "addr port" of ss; a static buffer. */
static const char *
text(const struct sockaddr_storage *ss, int with_port)
{
	static char out[INET6_ADDRSTRLEN + 8];
	char	    a[INET6_ADDRSTRLEN];
	const void *p;
	int	    port;

	if (ss->ss_family == AF_INET) {
		p = &((const struct sockaddr_in *)ss)->sin_addr;
		port = ntohs(((const struct sockaddr_in *)ss)->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		p = &((const struct sockaddr_in6 *)ss)->sin6_addr;
		port = ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	} else
		return "NONE";
	inet_ntop(ss->ss_family, p, a, sizeof(a));
	if (with_port)
		snprintf(out, sizeof(out), "%s %d", a, port);
	else
		snprintf(out, sizeof(out), "%s", a);
	return out;
}

static size_t
nets_of(const char *const *list, struct proxy_net *nets)
{
	const char *why;
	size_t	    n;

	for (n = 0; list[n] != NULL; n++)
		T_CHECK(proxy_net_parse(list[n], &nets[n], &why) == 0);
	return n;
}

static int
match(const struct proxy_net *nets, size_t n, const char *ip)
{
	struct sockaddr_storage ss;
	struct sockaddr_in     *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6    *sin6 = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, ip, &sin->sin_addr) == 1)
		ss.ss_family = AF_INET;
	else if (inet_pton(AF_INET6, ip, &sin6->sin6_addr) == 1)
		ss.ss_family = AF_INET6;
	return proxy_net_match(nets, n, (struct sockaddr *)&ss);
}

static void
test_ranges_match_v4_and_v6_by_prefix(void)
{
	static const char *const list[] = { "10.1.0.0/16", "192.0.2.7",
		"2001:db8:1::/48", "fe80::1/128", "172.16.5.9/12", NULL };
	struct proxy_net	 nets[8];
	size_t			 n = nets_of(list, nets);

	T_EQ_INT(match(nets, n, "10.1.255.3"), 1);
	T_EQ_INT(match(nets, n, "10.2.0.1"), 0);
	T_EQ_INT(match(nets, n, "192.0.2.7"), 1);
	T_EQ_INT(match(nets, n, "192.0.2.8"), 0);
	/* Host bits written in a range are ignored: 172.16.0.0/12. */
	T_EQ_INT(match(nets, n, "172.31.0.1"), 1);
	T_EQ_INT(match(nets, n, "172.32.0.1"), 0);
	T_EQ_INT(match(nets, n, "2001:db8:1:ffff::1"), 1);
	T_EQ_INT(match(nets, n, "2001:db8:2::1"), 0);
	T_EQ_INT(match(nets, n, "fe80::1"), 1);
	T_EQ_INT(match(nets, n, "fe80::2"), 0);
	/* An IPv4 client of a "[::]" socket is its IPv4 address. */
	T_EQ_INT(match(nets, n, "::ffff:10.1.2.3"), 1);
	T_EQ_INT(match(nets, n, "::ffff:10.2.2.3"), 0);
	/* No list trusts nobody. */
	T_EQ_INT(match(nets, 0, "10.1.2.3"), 0);
}

static void
test_bad_ranges_are_refused(void)
{
	static const char *const bad[] = { "", "/8", "10.0.0.0/33", "::/129",
		"10.0.0.0/", "10.0.0.0/x", "example.org", "[::1]",
		"10.0.0.0/8/8", "10.0.0.0/0008", NULL };
	struct proxy_net	 net;
	const char		*why;
	size_t			 i;

	for (i = 0; bad[i] != NULL; i++) {
		why = NULL;
		T_EQ_INT(proxy_net_parse(bad[i], &net, &why), -1);
		T_CHECK(why != NULL);
	}
	T_EQ_INT(proxy_net_parse("0.0.0.0/0", &net, &why), 0);
	T_EQ_INT(match(&net, 1, "203.0.113.9"), 1);
}

/* The client of xff with trusted list; "NONE", "BAD" or its address. */
static const char *
xff(const char *value, const char *const *list)
{
	struct proxy_net	nets[8];
	struct sockaddr_storage ss;
	size_t			n = nets_of(list, nets);
	int			r;

	r = proxy_xff_client(value, nets, n, &ss);
	if (r == -1)
		return ss.ss_family == 0 ? "BAD" : "BAD, out set";
	if (r == 0)
		return ss.ss_family == 0 ? "NONE" : "NONE, out set";
	return text(&ss, 0);
}

static void
test_xff_takes_the_rightmost_untrusted_address(void)
{
	static const char *const lo[] = { "127.0.0.1", "10.0.0.0/8", NULL };

	T_EQ_STR(xff("127.0.0.2", lo), "127.0.0.2");
	/* A client's forged entry stays left of what nginx appends. */
	T_EQ_STR(xff("6.6.6.6, 127.0.0.3", lo), "127.0.0.3");
	/* A chain of trusted proxies is skipped. */
	T_EQ_STR(xff("203.0.113.5, 10.0.0.2,10.9.9.9", lo), "203.0.113.5");
	/* Two headers, joined. */
	T_EQ_STR(xff("198.51.100.1,203.0.113.5", lo), "203.0.113.5");
	T_EQ_STR(xff("2001:db8::5", lo), "2001:db8::5");
	T_EQ_STR(xff("[2001:db8::5]:4711", lo), "2001:db8::5");
	T_EQ_STR(xff(" 192.0.2.1:80 ", lo), "192.0.2.1");
	/* Every entry trusted, or none: the proxy itself is the client. */
	T_EQ_STR(xff("10.0.0.1, 127.0.0.1", lo), "NONE");
	T_EQ_STR(xff("", lo), "NONE");
	T_EQ_STR(xff("  ", lo), "NONE");
}

static void
test_xff_garbage_counts_only_where_it_is_trusted(void)
{
	static const char *const lo[] = { "127.0.0.1", "10.0.0.0/8", NULL };

	/* Left of the answer: ignored. */
	T_EQ_STR(xff("unknown, 192.0.2.9", lo), "192.0.2.9");
	T_EQ_STR(xff("<script>, ,192.0.2.9", lo), "192.0.2.9");
	/* At the answer or among the trusted ones: refused. */
	T_EQ_STR(xff("192.0.2.9, unknown", lo), "BAD");
	T_EQ_STR(xff("192.0.2.9, 10.0.0.1,", lo), "BAD");
	T_EQ_STR(xff("example.org", lo), "BAD");
	T_EQ_STR(xff("192.0.2.9:99999", lo), "BAD");
	T_EQ_STR(xff("[192.0.2.9]", lo), "BAD");
	T_EQ_STR(xff("[2001:db8::1", lo), "BAD");
	T_EQ_STR(xff("2001:db8::1:80:x", lo), "BAD");
	T_EQ_STR(xff("192.0.2.9 192.0.2.10", lo), "BAD");
}

static enum proxy_hdr_result
hdr(const void *buf, size_t len, struct sockaddr_storage *ss, size_t *used)
{
	const char *why;

	return proxy_hdr_parse(buf, len, ss, used, &why);
}

static void
test_proxy_v1_gives_the_source_address(void)
{
	static const char v4[] = "PROXY TCP4 127.0.0.2 127.0.0.1 40000 443\r\n"
				 "GET / HTTP/1.1\r\n";
	static const char v6[] = "PROXY TCP6 2001:db8::2 ::1 5 443\r\n";
	struct sockaddr_storage ss;
	size_t			used, i, hlen = strchr(v4, '\n') + 1 - v4;

	T_EQ_INT(hdr(v4, sizeof(v4) - 1, &ss, &used), PROXY_HDR_ADDR);
	T_EQ_INT(used, hlen);
	T_EQ_STR(text(&ss, 1), "127.0.0.2 40000");
	/* Every shorter piece asks for more. */
	for (i = 0; i < hlen; i++)
		T_EQ_INT(hdr(v4, i, &ss, &used), PROXY_HDR_NEED);
	T_EQ_INT(hdr(v6, sizeof(v6) - 1, &ss, &used), PROXY_HDR_ADDR);
	T_EQ_STR(text(&ss, 1), "2001:db8::2 5");
	T_EQ_INT(hdr("PROXY UNKNOWN\r\nGET", 18, &ss, &used), PROXY_HDR_LOCAL);
	T_EQ_INT(used, 15);
}

static void
test_proxy_v1_malformed_is_refused(void)
{
	static const char *const bad[] = {
		"GET / HTTP/1.1\r\n",
		"PROXY TCP4 127.0.0.2 127.0.0.1 40000\r\n",
		"PROXY TCP4 127.0.0.2 127.0.0.1 40000 443 x\r\n",
		"PROXY TCP4  127.0.0.2 127.0.0.1 40000 443\r\n",
		"PROXY TCP4 ::1 127.0.0.1 40000 443\r\n",
		"PROXY TCP6 127.0.0.2 ::1 40000 443\r\n",
		"PROXY TCP4 127.0.0.2 127.0.0.1 70000 443\r\n",
		"PROXY UDP4 127.0.0.2 127.0.0.1 1 2\r\n",
		"PROXY TCP4 127.0.0.2 127.0.0.1 1 2\rX",
		"PROXY TCP4 127.0.0.2\n",
		NULL,
	};
	struct sockaddr_storage ss;
	char			big[200];
	size_t			i, used;

	for (i = 0; bad[i] != NULL; i++)
		T_EQ_INT(hdr(bad[i], strlen(bad[i]), &ss, &used),
		    PROXY_HDR_BAD);
	/* No CRLF within 107 bytes. */
	memset(big, 'a', sizeof(big));
	memcpy(big, "PROXY ", 6);
	T_EQ_INT(hdr(big, 106, &ss, &used), PROXY_HDR_NEED);
	T_EQ_INT(hdr(big, 107, &ss, &used), PROXY_HDR_BAD);
}

/* A v2 header of cmd/fam/proto with alen address bytes from a. */
static size_t
v2(uint8_t *out, int cmd, int famproto, const void *a, size_t alen)
{
	static const uint8_t sig[12] = { 0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d,
		0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a };

	memcpy(out, sig, 12);
	out[12] = (uint8_t)(0x20 | cmd);
	out[13] = (uint8_t)famproto;
	out[14] = (uint8_t)(alen >> 8);
	out[15] = (uint8_t)alen;
	memcpy(out + 16, a, alen);
	return 16 + alen;
}

static void
test_proxy_v2_gives_the_source_address(void)
{
	uint8_t			buf[700], a[64];
	struct sockaddr_storage ss;
	size_t			n, i, used;

	memset(a, 0, sizeof(a));
	inet_pton(AF_INET, "127.0.0.3", a);
	inet_pton(AF_INET, "127.0.0.1", a + 4);
	a[8] = 0x9c, a[9] = 0x40; /* 40000 */
	a[10] = 0x01, a[11] = 0xbb;
	/* With 8 bytes of a TLV after the addresses. */
	n = v2(buf, 1, 0x11, a, 20);
	memcpy(buf + n, "GET", 3);
	T_EQ_INT(hdr(buf, n + 3, &ss, &used), PROXY_HDR_ADDR);
	T_EQ_INT(used, n);
	T_EQ_STR(text(&ss, 1), "127.0.0.3 40000");
	for (i = 0; i < n; i++)
		T_EQ_INT(hdr(buf, i, &ss, &used), PROXY_HDR_NEED);

	memset(a, 0, sizeof(a));
	inet_pton(AF_INET6, "2001:db8::7", a);
	a[32] = 0, a[33] = 7;
	n = v2(buf, 1, 0x21, a, 36);
	T_EQ_INT(hdr(buf, n, &ss, &used), PROXY_HDR_ADDR);
	T_EQ_STR(text(&ss, 1), "2001:db8::7 7");

	/* LOCAL (a health check), and a UNIX source: no address. */
	n = v2(buf, 0, 0x00, a, 0);
	T_EQ_INT(hdr(buf, n, &ss, &used), PROXY_HDR_LOCAL);
	T_EQ_INT(used, 16);
	n = v2(buf, 1, 0x31, a, 0);
	T_EQ_INT(hdr(buf, n, &ss, &used), PROXY_HDR_LOCAL);
}

static void
test_proxy_v2_malformed_is_refused(void)
{
	uint8_t			buf[700], a[600];
	struct sockaddr_storage ss;
	size_t			n, used;

	memset(a, 0, sizeof(a));
	n = v2(buf, 1, 0x11, a, 8); /* IPv4 cut short */
	T_EQ_INT(hdr(buf, n, &ss, &used), PROXY_HDR_BAD);
	n = v2(buf, 1, 0x21, a, 20); /* IPv6 cut short */
	T_EQ_INT(hdr(buf, n, &ss, &used), PROXY_HDR_BAD);
	n = v2(buf, 2, 0x11, a, 12); /* no such command */
	T_EQ_INT(hdr(buf, n, &ss, &used), PROXY_HDR_BAD);
	n = v2(buf, 1, 0x41, a, 12); /* no such family */
	T_EQ_INT(hdr(buf, n, &ss, &used), PROXY_HDR_BAD);
	n = v2(buf, 1, 0x11, a, 12);
	buf[12] = 0x11; /* version 1 */
	T_EQ_INT(hdr(buf, n, &ss, &used), PROXY_HDR_BAD);
	n = v2(buf, 1, 0x11, a, 12);
	buf[7] = 'X'; /* signature */
	T_EQ_INT(hdr(buf, 9, &ss, &used), PROXY_HDR_BAD);
	/* Longer than our cap, known from the length field alone. */
	n = v2(buf, 1, 0x11, a, PROXY_HDR_MAX - 16 + 1);
	T_EQ_INT(hdr(buf, 16, &ss, &used), PROXY_HDR_BAD);
	n = v2(buf, 1, 0x11, a, PROXY_HDR_MAX - 16);
	T_EQ_INT(hdr(buf, n, &ss, &used), PROXY_HDR_ADDR);
}

static const struct t_case cases[] = {
	T_CASE(test_ranges_match_v4_and_v6_by_prefix),
	T_CASE(test_bad_ranges_are_refused),
	T_CASE(test_xff_takes_the_rightmost_untrusted_address),
	T_CASE(test_xff_garbage_counts_only_where_it_is_trusted),
	T_CASE(test_proxy_v1_gives_the_source_address),
	T_CASE(test_proxy_v1_malformed_is_refused),
	T_CASE(test_proxy_v2_gives_the_source_address),
	T_CASE(test_proxy_v2_malformed_is_refused),
};

T_MAIN(cases)
