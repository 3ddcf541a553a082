/*
 * relayurl.h: relay URL target hygiene and canonical relay keys.
 *
 * Every relay URL a role may dial passes through here first: URLs from
 * peers (kind 10002 "r" tags, 30617 "relays", 10317 "g") as untrusted
 * input, operator-configured relays (bootstrap, user indexes, fallbacks)
 * as trusted input.  The result is the canonical relay key that names a
 * relay everywhere (connection map, selection slots, dedupe).  At connect
 * time relayurl_resolve_checked() vets the resolved addresses again, so a
 * name that resolves to a refused address is refused too (DNS rebinding).
 *
 * The rules are reference/nips.md section 6.2 and the key is 6.3, with the
 * design's decisions ("Outbound connections" in design.md): query strings
 * and non-root paths stay part of the key, ws:// is accepted like wss://,
 * IP literals are accepted only when globally routable.  Used by syncd,
 * discoveryd and historyd through common/conn.c.  Nothing here can exit.
 */
#ifndef GRASPD_RELAYURL_H
#define GRASPD_RELAYURL_H

#include <sys/socket.h>

#include <netdb.h>
#include <stddef.h>

/* nips.md 6.2 rule 1: longest accepted URL (after trimming) and key. */
#define RELAYURL_MAX	   255
/* RFC 1035 2.3.4, nips.md 6.2 rule 10: longest host name, no final dot. */
#define RELAYURL_HOST_MAX  253
/* RFC 1035 2.3.4, nips.md 6.2 rule 10: longest label of a host name. */
#define RELAYURL_LABEL_MAX 63
/* nips.md 6.2 rule 15 and 6.3 (RFC 6455 3): default ports, dropped. */
#define RELAYURL_WSS_PORT  443
#define RELAYURL_WS_PORT   80
/* nips.md 6.2 rule 15: the largest port. */
#define RELAYURL_PORT_MAX  65535
/* Ours: keys of this relay itself, its wss:// and ws:// spellings. */
#define RELAYURL_SELF_MAX  2

/*
 * Flags of relayurl_canon() and the connect-time checks.
 *
 * RELAYURL_TRUSTED: operator-configured input.  Skips the peer-input
 * hygiene (single-label hosts, special-use and private names, non-global
 * IP literals and resolved addresses) and takes a value without "://" as
 * wss://, but still parses and canonicalizes everything else.
 *
 * RELAYURL_ALLOW_PRIVATE: NGIT_SYNC_ALLOW_PRIVATE_TARGETS.  Lets
 * loopback, private and special-use names and addresses (and single-label
 * LAN names) through, for tests and private networks.
 *
 * Neither lets .onion or .i2p through: graspd has no Tor or I2P proxy,
 * and a lookup would leak the name to DNS.
 */
#define RELAYURL_TRUSTED       0x01
#define RELAYURL_ALLOW_PRIVATE 0x02

/*
 * A canonical key taken apart for dialling (relayurl_parse).  All strings
 * are NUL-terminated and live in the struct.
 */
struct relayurl {
	char ru_scheme[4]; /* "ws" or "wss" */
	int  ru_tls;	   /* 1 for wss */
	/* Name or IP address, IPv6 without brackets: for getaddrinfo, SNI. */
	char ru_host[RELAYURL_MAX + 1];
	/* host[:port] as in the key (IPv6 bracketed): the Host header. */
	char ru_authority[RELAYURL_MAX + 1];
	int  ru_port; /* explicit, or the scheme default */
	/* AF_INET or AF_INET6 for an IP literal, AF_UNSPEC for a name. */
	int  ru_family;
	/* Path and "?query": the request-target of the websocket GET. */
	char ru_target[RELAYURL_MAX + 1];
};

/*
 * Checks the relay URL in (len bytes, need not be NUL-terminated) and
 * writes its canonical key, NUL-terminated, into out (outlen bytes;
 * RELAYURL_MAX + 1 is always enough):
 *	scheme "://" host [":" port] path ["?" query]
 * scheme ws or wss, lowercase; host a lowercase LDH name without the
 * final dot, a dotted-quad IPv4 or a bracketed RFC 5952 IPv6; port only
 * when not the scheme default; path "/" when empty, runs of "/" collapsed,
 * no trailing "/", case kept, %XX in uppercase; query kept as written
 * (%XX uppercased), an empty one dropped; fragment dropped.  flags is a
 * set of RELAYURL_* flags.  Returns 0, or -1 with *why (if why is not
 * NULL) set to a static string naming the rule that refused the value;
 * out is then unspecified.
 */
int relayurl_canon(const char *in, size_t len, unsigned flags, char *out,
    size_t outlen, const char **why);

/*
 * Returns 1 if key names this relay itself, else 0 (nips.md 6.2 rule 21).
 * key is canonicalized (as trusted input) before the comparison, so any
 * spelling works; self_keys are n canonical keys, e.g. from
 * relayurl_self_keys().  The comparison is on scheme, host and port only:
 * every path and query of our own origin is ourselves.
 */
int relayurl_is_self(const char *key, const char *const self_keys[], size_t n);

/*
 * Writes the canonical wss:// and ws:// keys of domain (NGIT_DOMAIN,
 * host[:port]), canonicalized as trusted input, into out (at most max
 * keys).  Returns the number of keys written, or -1 if domain is not a
 * valid host[:port].
 */
int relayurl_self_keys(const char *domain, char out[][RELAYURL_MAX + 1],
    size_t max);

/* This relay's own keys, as relayurl_is_self() and relaylist_parse() take. */
struct relayurl_self {
	char	    rs_key[RELAYURL_SELF_MAX][RELAYURL_MAX + 1];
	const char *rs_v[RELAYURL_SELF_MAX];
	size_t	    rs_n;
};

/*
 * Fills self with relayurl_self_keys() of domain (NGIT_DOMAIN; NULL is
 * none).  Returns rs_n, or -1 if domain is not a valid host[:port]
 * (self is then empty).  Never exits.
 */
int relayurl_self_init(struct relayurl_self *self, const char *domain);

/*
 * Adds the canonical key of url, a relay URL from the operator
 * (RELAYURL_TRUSTED), to the array *vp of *np owned strings unless it is
 * there already.  One that does not canonicalize is left out and logged
 * as "<what> <url> ignored: <why>".  Exits (fatal) when out of memory.
 */
void relayurl_add_trusted(char ***vp, size_t *np, const char *url,
    const char *what);

/*
 * Splits the canonical key into out.  Returns 0, or -1 if key is not a
 * canonical key (it must equal its own canonical form); out is then
 * unspecified.
 */
int relayurl_parse(const char *key, struct relayurl *out);

/*
 * The connect-time address check (nips.md 6.2 rules 14 and 22).  Returns
 * 0 if a connection to the address sa may be made: it is globally
 * routable (IPv4-mapped, NAT64 and 6to4 addresses are judged by the IPv4
 * address they carry), or flags has RELAYURL_ALLOW_PRIVATE or
 * RELAYURL_TRUSTED.  Returns -1 otherwise, and for families other than
 * AF_INET and AF_INET6.
 */
int relayurl_check_resolved(const struct sockaddr *sa, unsigned flags);

/*
 * Resolves the host of the canonical key (getaddrinfo; AI_NUMERICHOST for
 * IP literals, so they never reach DNS) and vets every address it returns
 * with relayurl_check_resolved(): if any one is refused, the target is
 * refused.  On success copies the first address, with the key's port set,
 * into out (*outlen bytes) and returns 0; the caller connects to that
 * address while sending the key's host as Host and SNI, and calls this
 * again before every reconnect.  Returns -1 if the key is not canonical or
 * an address is refused, -2 if the name did not resolve; *why (if why is
 * not NULL) then says why, as a static string.  May block in DNS: the
 * roles call it only for IP literals and resolve names with
 * common/resolve.c, which runs the same two halves below on a thread.
 */
int relayurl_resolve_checked(const char *key, unsigned flags,
    struct sockaddr_storage *out, socklen_t *outlen, const char **why);

/*
 * The first half of relayurl_resolve_checked(): splits the canonical key
 * into ru and fills the getaddrinfo hints and the numeric port (portlen
 * bytes; 8 is enough) for ru->ru_host.  Returns 0, or -1 with *why if
 * the key is not canonical.  Never blocks.
 */
int relayurl_resolve_hints(const char *key, struct relayurl *ru,
    struct addrinfo *hints, char *port, size_t portlen, const char **why);

/*
 * The second half: vets a getaddrinfo answer (gai_rc its return value,
 * res its list, NULL when it failed) exactly as relayurl_resolve_checked()
 * does and returns what it returns, with the first address in out.  Does
 * not free res.  Never blocks.
 */
int relayurl_vet_addrinfo(int gai_rc, const struct addrinfo *res,
    unsigned flags, struct sockaddr_storage *out, socklen_t *outlen,
    const char **why);

#endif
