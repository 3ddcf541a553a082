/*
 * addrkey.h: the key a per-address limit counts a client by.  An IPv4
 * client is its address; an IPv6 client is the network of its address
 * under a prefix length (graspd.conf(5) ipv6_prefix, 64 by default),
 * since one IPv6 subscriber holds a whole /64 (RFC 6177, RFC 7421) and
 * could otherwise open billions of addresses' worth of connections.  An
 * IPv4-mapped IPv6 address (::ffff:a.b.c.d, an IPv4 client of a "[::]"
 * socket) is the IPv4 address.  relayd's relay_addr.c keys on it.
 * Nothing here can exit.
 */
#ifndef GRASPD_ADDRKEY_H
#define GRASPD_ADDRKEY_H

#include <sys/socket.h>

#include <netinet/in.h>
#include <stddef.h>

/* RFC 4291 2.5: the prefix length that names one IPv6 address. */
#define ADDRKEY_V6_BITS 128
/* Ours: the longest key, "ffff:...:ffff/128" and its NUL. */
#define ADDRKEY_LEN	(INET6_ADDRSTRLEN + 4)

/*
 * The key of the peer address sa (salen bytes, AF_INET or AF_INET6) into
 * out (outlen bytes, ADDRKEY_LEN is enough): "a.b.c.d" for IPv4 and
 * IPv4-mapped IPv6, "net/len" for IPv6 under v6prefix bits (1 to 128),
 * the bare address when v6prefix is 128.  Returns 0, or -1 (out "") for
 * another family, a short salen, a bad v6prefix or a small out.
 */
int addrkey_of(const struct sockaddr *sa, socklen_t salen, int v6prefix,
    char *out, size_t outlen);

/*
 * addrkey_of() for the numeric address text ip ("192.0.2.1",
 * "2001:db8::1", "::ffff:192.0.2.1").  Returns 0, or -1 (out "") if ip
 * is not a numeric IPv4 or IPv6 address or as addrkey_of().
 */
int addrkey_text(const char *ip, int v6prefix, char *out, size_t outlen);

#endif
