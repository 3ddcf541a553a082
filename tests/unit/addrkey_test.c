/*
 * addrkey_test.c: the key per-address limits count a client by
 * (common/addrkey.c): IPv4 by address, IPv6 by its prefix, IPv4-mapped
 * IPv6 as the IPv4 address.  Two clients of one /64 cannot both be put
 * on loopback without extra addresses on lo, so their keying is pinned
 * here rather than in relayd's tests.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "addrkey.h"
#include "t.h"

/* The key of ip under prefix, or "FAIL". */
static const char *
key(const char *ip, int prefix)
{
	static char out[ADDRKEY_LEN];

	if (addrkey_text(ip, prefix, out, sizeof(out)) == -1)
		return out[0] == '\0' ? "FAIL" : "FAIL, out not emptied";
	return out;
}

static void
test_ipv4_is_keyed_by_the_whole_address(void)
{
	T_EQ_STR(key("192.0.2.7", 64), "192.0.2.7");
	T_EQ_STR(key("192.0.2.7", 128), "192.0.2.7");
	T_EQ_STR(key("127.0.0.2", 64), "127.0.0.2");
}

static void
test_ipv6_of_one_slash_64_share_a_key(void)
{
	char a[ADDRKEY_LEN];

	snprintf(a, sizeof(a), "%s", key("2001:db8:1:2::1", 64));
	T_EQ_STR(a, "2001:db8:1:2::/64");
	T_EQ_STR(key("2001:db8:1:2:ffff:ffff:ffff:ffff", 64), a);
	T_EQ_STR(key("2001:db8:1:2:8000::", 64), a);
	/* The next /64 is another client. */
	T_EQ_STR(key("2001:db8:1:3::1", 64), "2001:db8:1:3::/64");
	T_EQ_STR(key("::1", 64), "::/64");
}

static void
test_prefix_length_is_the_setting(void)
{
	T_EQ_STR(key("2001:db8:1:2::1", 128), "2001:db8:1:2::1");
	T_EQ_STR(key("2001:db8:1:2::1", 48), "2001:db8:1::/48");
	T_EQ_STR(key("2001:db8:1:2::1", 56), "2001:db8:1::/56");
	T_EQ_STR(key("2001:db8:1:2ff::1", 56), "2001:db8:1:200::/56");
	T_EQ_STR(key("2001:db8:1:2::1", 63), "2001:db8:1:2::/63");
	T_EQ_STR(key("2001:db8:1:3::1", 63), "2001:db8:1:2::/63");
	T_EQ_STR(key("ffff::1", 1), "8000::/1");
	T_EQ_STR(key("2001:db8::1", 0), "FAIL");
	T_EQ_STR(key("2001:db8::1", 129), "FAIL");
}

static void
test_ipv4_mapped_ipv6_is_the_ipv4_address(void)
{
	T_EQ_STR(key("::ffff:192.0.2.7", 64), "192.0.2.7");
	T_EQ_STR(key("::ffff:192.0.2.7", 128), "192.0.2.7");
	T_EQ_STR(key("::ffff:c000:207", 64), "192.0.2.7");
	/* Not mapped: ::192.0.2.7 (compatible, deprecated) is IPv6. */
	T_EQ_STR(key("::192.0.2.7", 128), "::192.0.2.7");
}

static void
test_socket_addresses_key_as_their_text(void)
{
	struct sockaddr_in  sin;
	struct sockaddr_in6 sin6;
	char		    out[ADDRKEY_LEN];

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(4242);
	inet_pton(AF_INET, "198.51.100.9", &sin.sin_addr);
	T_EQ_INT(addrkey_of((struct sockaddr *)&sin, sizeof(sin), 64, out,
		     sizeof(out)),
	    0);
	T_EQ_STR(out, "198.51.100.9");

	memset(&sin6, 0, sizeof(sin6));
	sin6.sin6_family = AF_INET6;
	inet_pton(AF_INET6, "2001:db8:aa:bb:1:2:3:4", &sin6.sin6_addr);
	T_EQ_INT(addrkey_of((struct sockaddr *)&sin6, sizeof(sin6), 64, out,
		     sizeof(out)),
	    0);
	T_EQ_STR(out, "2001:db8:aa:bb::/64");
	inet_pton(AF_INET6, "::ffff:203.0.113.5", &sin6.sin6_addr);
	T_EQ_INT(addrkey_of((struct sockaddr *)&sin6, sizeof(sin6), 64, out,
		     sizeof(out)),
	    0);
	T_EQ_STR(out, "203.0.113.5");
	/* A short length or another family is refused. */
	T_EQ_INT(addrkey_of((struct sockaddr *)&sin6, sizeof(sin), 64, out,
		     sizeof(out)),
	    -1);
	sin.sin_family = AF_UNIX;
	T_EQ_INT(addrkey_of((struct sockaddr *)&sin, sizeof(sin), 64, out,
		     sizeof(out)),
	    -1);
}

static void
test_not_an_address_or_small_buffer_fails(void)
{
	char out[8];

	T_EQ_STR(key("example.org", 64), "FAIL");
	T_EQ_STR(key("", 64), "FAIL");
	T_EQ_STR(key("2001:db8::1/64", 64), "FAIL");
	T_EQ_INT(addrkey_text("2001:db8:1:2::1", 64, out, sizeof(out)), -1);
	T_EQ_STR(out, "");
}

static const struct t_case cases[] = {
	T_CASE(test_ipv4_is_keyed_by_the_whole_address),
	T_CASE(test_ipv6_of_one_slash_64_share_a_key),
	T_CASE(test_prefix_length_is_the_setting),
	T_CASE(test_ipv4_mapped_ipv6_is_the_ipv4_address),
	T_CASE(test_socket_addresses_key_as_their_text),
	T_CASE(test_not_an_address_or_small_buffer_fails),
};

T_MAIN(cases)
