/*
 * proxyhdr.h: the client address a trusted reverse proxy passes on
 * (graspd.conf(5) trusted_proxies, proxy_protocol): network ranges, the
 * X-Forwarded-For header, and the PROXY protocol header (v1 text and v2
 * binary) of HAProxy's proxy-protocol.txt, as nginx, HAProxy and Caddy
 * send it.  Pure functions: relayd's relay_listen.c and relay_wire.c
 * call them, config.c checks trusted_proxies with them.  Nothing here
 * can exit.
 */
#ifndef GRASPD_PROXYHDR_H
#define GRASPD_PROXYHDR_H

#include <sys/socket.h>

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

/* proxy-protocol.txt 2.1: "the maximum line lengths ... 107 bytes". */
#define PROXY_V1_MAX  107
/* proxy-protocol.txt 2.2: the 12-byte signature and 4 bytes after it. */
#define PROXY_V2_HDR  16
/*
 * Ours: the most bytes of a v2 header read (16 and its TLVs).  2.2
 * advises receivers to read at least 536 bytes ("the minimum IPv4 MTU");
 * nginx, HAProxy and Caddy send far fewer unless asked for TLVs.
 */
#define PROXY_HDR_MAX 536

/* One address range of trusted_proxies: family, network, prefix bits. */
struct proxy_net {
	int	pn_family; /* AF_INET or AF_INET6 */
	uint8_t pn_addr[16];
	int	pn_bits;
};

/*
 * Parses one range, "a.b.c.d", "a.b.c.d/n", "v6" or "v6/n" (no brackets)
 * into *net, bits outside the prefix cleared.  Returns 0, or -1 with the
 * reason in *why (a constant string).
 */
int proxy_net_parse(const char *text, struct proxy_net *net, const char **why);

/*
 * 1 if the address sa (AF_INET or AF_INET6, an IPv4-mapped IPv6 address
 * as IPv4) lies in one of the n ranges of nets, else 0.
 */
int proxy_net_match(const struct proxy_net *nets, size_t n,
    const struct sockaddr *sa);

/*
 * The client address of an X-Forwarded-For value xff (its headers
 * joined with ","): the right-most address of the list that is not in
 * nets, since each trusted proxy appends the address it got the request
 * from and anything to its left may be forged.  Items may carry blanks
 * around them; an IPv6 item may be bracketed, and an IPv4 one or a
 * bracketed one may carry a ":port", as some proxies write.  On 1 the
 * address is in *out (its port 0).  Returns 1, 0 if every item is
 * trusted or xff holds none, or -1 if an item that counts (at or right
 * of the answer) is not an address: the request should be refused.
 */
int proxy_xff_client(const char *xff, const struct proxy_net *nets, size_t n,
    struct sockaddr_storage *out);

enum proxy_hdr_result {
	PROXY_HDR_NEED,	 /* a valid beginning: read more */
	PROXY_HDR_ADDR,	 /* a header with the client's address */
	PROXY_HDR_LOCAL, /* a header without one (v2 LOCAL, v1 UNKNOWN) */
	PROXY_HDR_BAD,	 /* not a PROXY header, or longer than our cap */
};

/*
 * Reads a PROXY header at the start of the len bytes of buf, what a
 * connection has sent so far.  On PROXY_HDR_ADDR, *src is the client's
 * address and port (AF_INET or AF_INET6); on _ADDR and _LOCAL, *used is
 * the header's length, and the bytes after it are the client's.  _NEED
 * if buf is a valid beginning shorter than the header (then at most
 * PROXY_HDR_MAX bytes make it whole or bad); _BAD (with the reason in
 * *why) otherwise.
 */
enum proxy_hdr_result proxy_hdr_parse(const uint8_t *buf, size_t len,
    struct sockaddr_storage *src, size_t *used, const char **why);

#endif
