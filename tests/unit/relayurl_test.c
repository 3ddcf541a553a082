/*
 * relayurl_test.c: relay URL target hygiene, canonical keys, self-keys
 * and the connect-time address checks (common/relayurl.c).  Runs the
 * shared vectors in relay-urls.tsv; resolves only numeric literals and
 * "localhost" (from /etc/hosts), so it never touches the network.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relayurl.h"
#include "t.h"
#include "tunit_row.h"

/* The shared vector file must hold at least this many vectors. */
#define MIN_VECTORS 60

/* Canonicalizes s with flags; returns the key, or "REJECT". */
static const char *
canon(const char *s, unsigned flags)
{
	static char out[RELAYURL_MAX + 1];
	const char *why = NULL;

	if (relayurl_canon(s, strlen(s), flags, out, sizeof(out), &why) == -1)
		return "REJECT";
	return out;
}

/* An onion service name of v3 length. */
#define ONION \
	"ws://abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrstuvwx.onion"

/* The cases that own rows of canon_cases[], by name. */
#define C_UNTRUSTED "untrusted_refuses_scheme_less_and_trusted_takes_it_as_wss"
#define C_TRUSTED   "trusted_still_parses_and_canonicalizes"
#define C_ZONES	    "special_use_zones_follow_the_vectors"
#define C_IPV6	    "ipv6_literals_in_rfc5952_form"
#define C_PATHS	    "paths_collapse_and_keep_case"
#define C_QUERIES   "queries_stay_in_the_key_as_written"
#define C_FRAGMENTS "fragments_are_cut_but_not_inside_the_authority"
#define C_HOSTS	    "hosts_follow_ldh_and_length_rules"
#define C_PORTS	    "ports_are_decimal_and_defaults_dropped"
#define C_SCHEMES   "schemes_and_separators"
#define C_LOOPBACK  "loopback_refused_untrusted_allowed_private_or_trusted"
#define C_ONION	    "onion_and_i2p_refused_in_every_mode"
#define C_DOTS	    "paths_refuse_dots_escapes_and_odd_characters"

/* Inputs, the flags they are read with, and their key (or "REJECT"). */
static const struct {
	const char *owner, *in;
	unsigned    flags;
	const char *key;
} canon_cases[] = {
	{ C_UNTRUSTED, "relay.example.com", 0, "REJECT" },
	{ C_UNTRUSTED, "relay.example.com", RELAYURL_TRUSTED,
	    "wss://relay.example.com/" },
	{ C_UNTRUSTED, "relay.example.com:4443/inbox", RELAYURL_TRUSTED,
	    "wss://relay.example.com:4443/inbox" },
	{ C_UNTRUSTED, "localhost:7777", RELAYURL_TRUSTED,
	    "wss://localhost:7777/" },
	{ C_TRUSTED, " WSS://Relay.Example.COM:443//a//b/ ", RELAYURL_TRUSTED,
	    "wss://relay.example.com/a/b" },
	{ C_TRUSTED, "https://relay.example.com", RELAYURL_TRUSTED, "REJECT" },
	{ C_TRUSTED, "wss://127.1", RELAYURL_TRUSTED, "REJECT" },
	{ C_TRUSTED, "wss://user@relay.example.com", RELAYURL_TRUSTED,
	    "REJECT" },
	{ C_TRUSTED, "wss://relay.example.com/a/../b", RELAYURL_TRUSTED,
	    "REJECT" },
	{ C_TRUSTED, "wss://relay.example.com:0", RELAYURL_TRUSTED, "REJECT" },
	{ C_TRUSTED, "wss://bad_name.example.com", RELAYURL_TRUSTED, "REJECT" },
	{ C_TRUSTED, "wss://[fe80::1%25eth0]", RELAYURL_TRUSTED, "REJECT" },
	/* The vectors accept .example; nips.md 6.2 rule 12's others stay. */
	{ C_ZONES, "wss://xn--ida.example", 0, "wss://xn--ida.example/" },
	{ C_ZONES, "wss://relay.test", 0, "REJECT" },
	{ C_ZONES, "wss://relay.invalid", 0, "REJECT" },
	{ C_ZONES, "wss://a.localhost", 0, "REJECT" },
	{ C_ZONES, "wss://localhost.example.com", 0,
	    "wss://localhost.example.com/" },
	{ C_ZONES, "wss://git.corp", 0, "REJECT" },
	{ C_ZONES, "wss://x.localdomain", 0, "REJECT" },
	{ C_ZONES, "wss://x.intranet", 0, "REJECT" },
	{ C_ZONES, "wss://x.private", 0, "REJECT" },
	{ C_ZONES, "wss://notlocal", RELAYURL_ALLOW_PRIVATE,
	    "wss://notlocal/" },
	{ C_ZONES, "wss://relay.notlocal.com", 0, "wss://relay.notlocal.com/" },
	{ C_IPV6, "wss://[2001:4860:4860:0000:0000:0000:0000:8888]", 0,
	    "wss://[2001:4860:4860::8888]/" },
	{ C_IPV6, "WSS://[2606:4700:0:0:0:0:0:1111]:443/", 0,
	    "wss://[2606:4700::1111]/" },
	{ C_IPV6, "wss://[2606:4700::ABCD]:8443/x", 0,
	    "wss://[2606:4700::abcd]:8443/x" },
	{ C_IPV6, "wss://[2001:db8::1]", 0, "REJECT" },
	{ C_IPV6, "wss://[2001:0DB8::0001]", RELAYURL_ALLOW_PRIVATE,
	    "wss://[2001:db8::1]/" },
	/* RFC 5952 4.2.2: one zero field is not compressed; 4.2.3: first. */
	{ C_IPV6, "wss://[2001:db8:0:1:1:1:1:1]", RELAYURL_ALLOW_PRIVATE,
	    "wss://[2001:db8:0:1:1:1:1:1]/" },
	{ C_IPV6, "wss://[2001:db8:0:0:1:0:0:1]", RELAYURL_ALLOW_PRIVATE,
	    "wss://[2001:db8::1:0:0:1]/" },
	{ C_IPV6, "wss://[::ffff:8.8.8.8]", 0, "wss://[::ffff:8.8.8.8]/" },
	{ C_IPV6, "wss://[::1]", RELAYURL_ALLOW_PRIVATE, "wss://[::1]/" },
	{ C_IPV6, "wss://[fe80::1%25eth0]", RELAYURL_ALLOW_PRIVATE, "REJECT" },
	{ C_IPV6, "wss://[1:2:3:4:5:6:7:8:9]", RELAYURL_ALLOW_PRIVATE,
	    "REJECT" },
	{ C_IPV6, "wss://[::1", RELAYURL_ALLOW_PRIVATE, "REJECT" },
	{ C_IPV6, "wss://[::1]x", RELAYURL_ALLOW_PRIVATE, "REJECT" },
	{ C_IPV6, "wss://[]", RELAYURL_ALLOW_PRIVATE, "REJECT" },
	{ C_IPV6, "wss://[8.8.8.8]", 0, "REJECT" },
	{ C_IPV6, "wss://2606:4700::1111", 0, "REJECT" },
	{ C_PATHS, "wss://relay.example.com///", 0,
	    "wss://relay.example.com/" },
	{ C_PATHS, "wss://relay.example.com/A//B/c/", 0,
	    "wss://relay.example.com/A/B/c" },
	{ C_PATHS, "wss://relay.example.com/%7e/%aB", 0,
	    "wss://relay.example.com/%7E/%AB" },
	{ C_PATHS, "wss://relay.example.com/a:b@c!$&'()*+,;=-._~", 0,
	    "wss://relay.example.com/a:b@c!$&'()*+,;=-._~" },
	{ C_PATHS, "wss://relay.example.com/.../..a/a.", 0,
	    "wss://relay.example.com/.../..a/a." },
	{ C_PATHS, "wss://relay.example.com/nostr/?x=1", 0,
	    "wss://relay.example.com/nostr?x=1" },
	{ C_QUERIES, "wss://relay.example.com/?b=2&a=1", 0,
	    "wss://relay.example.com/?b=2&a=1" },
	{ C_QUERIES, "wss://relay.example.com/?a=%2f%20b", 0,
	    "wss://relay.example.com/?a=%2F%20b" },
	{ C_QUERIES, "wss://relay.example.com/?a=b/c?d:e@f", 0,
	    "wss://relay.example.com/?a=b/c?d:e@f" },
	{ C_QUERIES, "wss://relay.example.com/?", 0,
	    "wss://relay.example.com/" },
	{ C_QUERIES, "wss://relay.example.com?#x", 0,
	    "wss://relay.example.com/" },
	{ C_QUERIES, "wss://relay.example.com/?a=%00", 0, "REJECT" },
	{ C_QUERIES, "wss://relay.example.com/?a=%g0", 0, "REJECT" },
	{ C_QUERIES, "wss://relay.example.com/?a=<b>", 0, "REJECT" },
	{ C_QUERIES, "wss://relay.example.com/?u=wss://x.example.com", 0,
	    "REJECT" },
	{ C_FRAGMENTS, "wss://relay.example.com/#", 0,
	    "wss://relay.example.com/" },
	{ C_FRAGMENTS, "wss://relay.example.com/a#b?c", 0,
	    "wss://relay.example.com/a" },
	{ C_FRAGMENTS, "wss://relay.example.com#frag", 0, "REJECT" },
	{ C_FRAGMENTS, "wss://evil.example.com#@good.example.com", 0,
	    "REJECT" },
	{ C_HOSTS, "wss://a-b.c0.example.com", 0, "wss://a-b.c0.example.com/" },
	{ C_HOSTS, "wss://relay-.example.com", 0, "REJECT" },
	{ C_HOSTS, "wss://relay..example.com", 0, "REJECT" },
	{ C_HOSTS, "wss://.relay.example.com", 0, "REJECT" },
	{ C_HOSTS, "wss://relay.example.com..", 0, "REJECT" },
	{ C_HOSTS, "wss://.", RELAYURL_TRUSTED, "REJECT" },
	{ C_HOSTS, "wss://relay_1.example.com", 0, "REJECT" },
	{ C_HOSTS, "wss://relay!.example.com", 0, "REJECT" },
	{ C_HOSTS, "wss://relay.example.com:443:443", 0, "REJECT" },
	{ C_HOSTS, "wss://:443", RELAYURL_TRUSTED, "REJECT" },
	{ C_HOSTS, "wss://1.2.3.4.5", 0, "REJECT" },
	{ C_HOSTS, "wss://relay.123", 0, "REJECT" },
	{ C_HOSTS, "wss://relay.0x1f", 0, "REJECT" },
	{ C_HOSTS, "wss://08.8.8.8", 0, "REJECT" },
	{ C_HOSTS, "wss://8.8.8.8.", 0, "wss://8.8.8.8/" },
	{ C_HOSTS, "wss://1.1.1.1:8443", 0, "wss://1.1.1.1:8443/" },
	{ C_HOSTS, "wss://0x.example.com", 0, "wss://0x.example.com/" },
	{ C_HOSTS, "wss://123.example.com", 0, "wss://123.example.com/" },
	{ C_PORTS, "wss://relay.example.com:0443", 0,
	    "wss://relay.example.com/" },
	{ C_PORTS, "ws://relay.example.com:80", 0, "ws://relay.example.com/" },
	{ C_PORTS, "wss://relay.example.com:80", 0,
	    "wss://relay.example.com:80/" },
	{ C_PORTS, "wss://relay.example.com:1", 0,
	    "wss://relay.example.com:1/" },
	{ C_PORTS, "wss://relay.example.com:65535", 0,
	    "wss://relay.example.com:65535/" },
	{ C_PORTS, "wss://relay.example.com:+1", 0, "REJECT" },
	{ C_PORTS, "wss://relay.example.com:99999999999999999999", 0,
	    "REJECT" },
	{ C_PORTS, "wss://relay.example.com:1a", 0, "REJECT" },
	{ C_PORTS, "wss://relay.example.com:000", 0, "REJECT" },
	{ C_SCHEMES, "Ws://relay.example.com", 0, "ws://relay.example.com/" },
	{ C_SCHEMES, "wSs://relay.example.com", 0, "wss://relay.example.com/" },
	{ C_SCHEMES, "wsss://relay.example.com", 0, "REJECT" },
	{ C_SCHEMES, "://relay.example.com", RELAYURL_TRUSTED, "REJECT" },
	{ C_SCHEMES, "wss:/relay.example.com", 0, "REJECT" },
	{ C_SCHEMES, "wss:relay.example.com", 0, "REJECT" },
	{ C_SCHEMES, "wss://relay.example.com/wss://x", 0, "REJECT" },
	{ C_SCHEMES, "wss://relay\\.example.com", RELAYURL_TRUSTED, "REJECT" },
	{ C_SCHEMES, "wss://relay.example.com/\x7f", RELAYURL_TRUSTED,
	    "REJECT" },
	{ C_SCHEMES, "\t wss://relay.example.com \r\n", 0,
	    "wss://relay.example.com/" },
	{ C_SCHEMES, "", 0, "REJECT" },
	{ C_SCHEMES, "   ", RELAYURL_TRUSTED, "REJECT" },
	/* Loopback and private names: private or trusted input only. */
	{ C_LOOPBACK, "ws://127.0.0.1:7777", 0, "REJECT" },
	{ C_LOOPBACK, "ws://127.0.0.1:7777", RELAYURL_ALLOW_PRIVATE,
	    "ws://127.0.0.1:7777/" },
	{ C_LOOPBACK, "ws://127.0.0.1:7777", RELAYURL_TRUSTED,
	    "ws://127.0.0.1:7777/" },
	{ C_LOOPBACK, "ws://localhost:7777/", 0, "REJECT" },
	{ C_LOOPBACK, "ws://localhost:7777/", RELAYURL_ALLOW_PRIVATE,
	    "ws://localhost:7777/" },
	{ C_LOOPBACK, "ws://localhost:7777/", RELAYURL_TRUSTED,
	    "ws://localhost:7777/" },
	{ C_LOOPBACK, "wss://[::1]:8080", 0, "REJECT" },
	{ C_LOOPBACK, "wss://[::1]:8080", RELAYURL_ALLOW_PRIVATE,
	    "wss://[::1]:8080/" },
	{ C_LOOPBACK, "wss://[::1]:8080", RELAYURL_TRUSTED,
	    "wss://[::1]:8080/" },
	{ C_LOOPBACK, "wss://10.1.2.3", 0, "REJECT" },
	{ C_LOOPBACK, "wss://10.1.2.3", RELAYURL_ALLOW_PRIVATE,
	    "wss://10.1.2.3/" },
	{ C_LOOPBACK, "wss://10.1.2.3", RELAYURL_TRUSTED, "wss://10.1.2.3/" },
	{ C_LOOPBACK, "wss://relay.lan", 0, "REJECT" },
	{ C_LOOPBACK, "wss://relay.lan", RELAYURL_ALLOW_PRIVATE,
	    "wss://relay.lan/" },
	{ C_LOOPBACK, "wss://relay.lan", RELAYURL_TRUSTED, "wss://relay.lan/" },
	{ C_LOOPBACK, "wss://nas.home.arpa", 0, "REJECT" },
	{ C_LOOPBACK, "wss://nas.home.arpa", RELAYURL_ALLOW_PRIVATE,
	    "wss://nas.home.arpa/" },
	{ C_LOOPBACK, "wss://nas.home.arpa", RELAYURL_TRUSTED,
	    "wss://nas.home.arpa/" },
	{ C_LOOPBACK, "ws://umbrel:4848", 0, "REJECT" },
	{ C_LOOPBACK, "ws://umbrel:4848", RELAYURL_ALLOW_PRIVATE,
	    "ws://umbrel:4848/" },
	{ C_LOOPBACK, "ws://umbrel:4848", RELAYURL_TRUSTED,
	    "ws://umbrel:4848/" },
	{ C_LOOPBACK, "wss://relay.test", 0, "REJECT" },
	{ C_LOOPBACK, "wss://relay.test", RELAYURL_ALLOW_PRIVATE,
	    "wss://relay.test/" },
	{ C_LOOPBACK, "wss://relay.test", RELAYURL_TRUSTED,
	    "wss://relay.test/" },
	/* Onion and I2P names: in no mode. */
	{ C_ONION, ONION, 0, "REJECT" },
	{ C_ONION, ONION, RELAYURL_ALLOW_PRIVATE, "REJECT" },
	{ C_ONION, ONION, RELAYURL_TRUSTED, "REJECT" },
	{ C_ONION, "wss://relay.i2p", 0, "REJECT" },
	{ C_ONION, "wss://relay.i2p", RELAYURL_ALLOW_PRIVATE, "REJECT" },
	{ C_ONION, "wss://relay.i2p", RELAYURL_TRUSTED, "REJECT" },
	/* Dot segments, escapes and odd characters in paths. */
	{ C_DOTS, "wss://relay.example.com/.", RELAYURL_TRUSTED, "REJECT" },
	{ C_DOTS, "wss://relay.example.com/./a", RELAYURL_TRUSTED, "REJECT" },
	{ C_DOTS, "wss://relay.example.com/a/..", RELAYURL_TRUSTED, "REJECT" },
	{ C_DOTS, "wss://relay.example.com/%2e%2E/b", RELAYURL_TRUSTED,
	    "REJECT" },
	{ C_DOTS, "wss://relay.example.com/.%2e", RELAYURL_TRUSTED, "REJECT" },
	{ C_DOTS, "wss://relay.example.com/%2e", RELAYURL_TRUSTED, "REJECT" },
	{ C_DOTS, "wss://relay.example.com/a%2fb", RELAYURL_TRUSTED, "REJECT" },
	{ C_DOTS, "wss://relay.example.com/a%5cb", RELAYURL_TRUSTED, "REJECT" },
	{ C_DOTS, "wss://relay.example.com/a%20b", RELAYURL_TRUSTED, "REJECT" },
	{ C_DOTS, "wss://relay.example.com/a%00", RELAYURL_TRUSTED, "REJECT" },
	{ C_DOTS, "wss://relay.example.com/a%", RELAYURL_TRUSTED, "REJECT" },
	{ C_DOTS, "wss://relay.example.com/a%4", RELAYURL_TRUSTED, "REJECT" },
	{ C_DOTS, "wss://relay.example.com/a%zz", RELAYURL_TRUSTED, "REJECT" },
	{ C_DOTS, "wss://relay.example.com/a<b", RELAYURL_TRUSTED, "REJECT" },
	{ C_DOTS, "wss://relay.example.com/a\"b", RELAYURL_TRUSTED, "REJECT" },
	{ C_DOTS, "wss://relay.example.com/a{b}", RELAYURL_TRUSTED, "REJECT" },
	{ C_DOTS, "wss://relay.example.com/a|b", RELAYURL_TRUSTED, "REJECT" },
	{ C_DOTS, "wss://relay.example.com/a^b", RELAYURL_TRUSTED, "REJECT" },
	{ C_DOTS, "wss://relay.example.com/a`b", RELAYURL_TRUSTED, "REJECT" },
	{ C_DOTS, "wss://relay.example.com/a[b]", RELAYURL_TRUSTED, "REJECT" },
};

/* Checks each row of canon_cases[] that the case named owner owns. */
static void
canon_rows(const char *owner)
{
	size_t i, n = 0;

	for (i = 0; i < T_NCASES(canon_cases); i++) {
		if (strcmp(canon_cases[i].owner, owner) != 0)
			continue;
		n++;
		T_ROW_STR(canon_cases[i].in,
		    canon(canon_cases[i].in, canon_cases[i].flags),
		    canon_cases[i].key);
	}
	T_CHECK(n > 0);
}

/* A case whose checks are its rows of canon_cases[]. */
static void
canon_of_the_case(void)
{
	canon_rows(t_case);
}

static void
tsv_vectors(void)
{
	char		path[1024], *line = NULL, *tab, msg[900];
	char		key[RELAYURL_MAX + 1], again[RELAYURL_MAX + 1];
	const char     *why, *expect;
	struct relayurl ru;
	size_t		cap = 0, n;
	ssize_t		len;
	int		checked = 0, accepted = 0, rejected = 0, bad = 0;
	int		verbose = getenv("RELAYURL_VERBOSE") != NULL, rc;
	FILE	       *f;

	snprintf(path, sizeof(path), "%s/relay-urls.tsv", t_vectors_dir());
	f = fopen(path, "r");
	if (f == NULL) {
		snprintf(msg, sizeof(msg), "cannot open %.800s", path);
		t_fail_at(__FILE__, __LINE__, msg);
		return;
	}
	while ((len = getline(&line, &cap, f)) != -1) {
		n = (size_t)len;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n == 0 || line[0] == '#')
			continue;
		/* The expected column never holds a tab; the input might. */
		if ((tab = strrchr(line, '\t')) == NULL) {
			snprintf(msg, sizeof(msg),
			    "no tab in vector \"%.400s\"", line);
			t_fail_at(__FILE__, __LINE__, msg);
			bad++;
			continue;
		}
		*tab = '\0';
		expect = tab + 1;
		checked++;
		why = NULL;
		rc = relayurl_canon(line, strlen(line), 0, key, sizeof(key),
		    &why);
		if (rc == -1 && strcmp(expect, "REJECT") == 0) {
			rejected++;
			if (verbose)
				printf("# REJECT \"%s\": %s\n", line, why);
			continue;
		}
		if (rc == 0 && strcmp(expect, key) == 0) {
			accepted++;
			if (verbose)
				printf("# \"%s\" -> %s\n", line, key);
			/* A key is its own canonical form, and parses. */
			if (relayurl_canon(key, strlen(key), 0, again,
				sizeof(again), NULL) == -1 ||
			    strcmp(again, key) != 0 ||
			    relayurl_parse(key, &ru) == -1) {
				snprintf(msg, sizeof(msg),
				    "key \"%s\" is not "
				    "a fixed point",
				    key);
				t_fail_at(__FILE__, __LINE__, msg);
				bad++;
			}
			continue;
		}
		snprintf(msg, sizeof(msg), "\"%.300s\": want %.300s, got %s",
		    line, expect, rc == 0 ? key : why);
		t_fail_at(__FILE__, __LINE__, msg);
		bad++;
	}
	free(line);
	fclose(f);
	printf("# relay-urls.tsv: %d vectors checked (%d keys, %d rejects), "
	       "%d mismatches\n",
	    checked, accepted, rejected, bad);
	T_CHECK(checked >= MIN_VECTORS);
	T_EQ_INT(checked, accepted + rejected + bad);
}

/* nips.md 6.2 rule 14, as addresses: refused (0) or allowed (1). */
static const struct {
	const char *addr;
	int	    ok;
} rule14[] = {
	{ "10.0.0.1", 0 },
	{ "100.64.0.1", 0 },
	{ "169.254.169.254", 0 },
	{ "192.0.2.1", 0 },
	{ "198.18.0.1", 0 },
	{ "224.0.0.1", 0 },
	{ "255.255.255.255", 0 },
	{ "0.0.0.0", 0 },
	{ "127.0.0.1", 0 },
	{ "172.31.255.255", 0 },
	{ "192.168.1.1", 0 },
	{ "192.0.0.9", 0 },
	{ "192.88.99.1", 0 },
	{ "198.51.100.7", 0 },
	{ "203.0.113.9", 0 },
	{ "240.0.0.1", 0 },
	{ "::1", 0 },
	{ "::", 0 },
	{ "::1.2.3.4", 0 },
	{ "fd00::1", 0 },
	{ "fd00:ec2::254", 0 },
	{ "fe80::1", 0 },
	{ "fec0::1", 0 },
	{ "ff02::1", 0 },
	{ "::ffff:127.0.0.1", 0 },
	{ "::ffff:10.0.0.1", 0 },
	{ "64:ff9b::7f00:1", 0 },
	{ "64:ff9b:1::8.8.8.8", 0 },
	{ "2002:7f00:1::", 0 },
	{ "2001:db8::1", 0 },
	{ "2001::1", 0 },
	{ "2001:2::1", 0 },
	{ "100::1", 0 },
	{ "3fff::1", 0 },
	{ "5f00::1", 0 },
	{ "4000::1", 0 },
	{ "8.8.8.8", 1 },
	{ "1.1.1.1", 1 },
	{ "100.128.0.1", 1 },
	{ "172.32.0.1", 1 },
	{ "198.20.0.1", 1 },
	{ "223.255.255.254", 1 },
	{ "2606:4700::1111", 1 },
	{ "2001:4860:4860::8888", 1 },
	{ "::ffff:8.8.8.8", 1 },
	{ "64:ff9b::808:808", 1 },
	{ "2002:808:808::1", 1 },
};

/* Fills ss with the numeric address s; returns its family, or 0. */
static int
sockaddr_of(const char *s, struct sockaddr_storage *ss)
{
	struct sockaddr_in  *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(443);
		return AF_INET;
	}
	if (inet_pton(AF_INET6, s, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(443);
		return AF_INET6;
	}
	return 0;
}

static void
rule14_ranges_at_connect_time(void)
{
	struct sockaddr_storage ss;
	char			msg[200];
	size_t			i;
	int			got;

	for (i = 0; i < sizeof(rule14) / sizeof(rule14[0]); i++) {
		T_ASSERT(sockaddr_of(rule14[i].addr, &ss) != 0);
		got = relayurl_check_resolved((struct sockaddr *)&ss, 0) == 0;
		if (got != rule14[i].ok) {
			snprintf(msg, sizeof(msg), "%s: want %s",
			    rule14[i].addr,
			    rule14[i].ok ? "allowed" : "refused");
			t_fail_at(__FILE__, __LINE__, msg);
		}
		T_EQ_INT(relayurl_check_resolved((struct sockaddr *)&ss,
			     RELAYURL_ALLOW_PRIVATE),
		    0);
		T_EQ_INT(relayurl_check_resolved((struct sockaddr *)&ss,
			     RELAYURL_TRUSTED),
		    0);
	}
	ss.ss_family = AF_UNIX;
	T_EQ_INT(relayurl_check_resolved((struct sockaddr *)&ss,
		     RELAYURL_ALLOW_PRIVATE),
	    -1);
}

static void
rule14_ranges_as_url_literals(void)
{
	char   url[128], msg[200];
	size_t i;
	int    got;

	for (i = 0; i < sizeof(rule14) / sizeof(rule14[0]); i++) {
		snprintf(url, sizeof(url),
		    strchr(rule14[i].addr, ':') ? "wss://[%s]" : "wss://%s",
		    rule14[i].addr);
		got = strcmp(canon(url, 0), "REJECT") != 0;
		if (got != rule14[i].ok) {
			snprintf(msg, sizeof(msg), "%s: want %s", url,
			    rule14[i].ok ? "key" : "REJECT");
			t_fail_at(__FILE__, __LINE__, msg);
		}
		T_CHECK(
		    strcmp(canon(url, RELAYURL_ALLOW_PRIVATE), "REJECT") != 0);
	}
}

static void
resolve_checked_refuses_loopback_unless_private(void)
{
	static const struct {
		const char *key;
		int	    family, port;
	} v[] = {
		{ "wss://127.0.0.1/", AF_INET, 443 },
		{ "ws://127.0.0.1:7777/", AF_INET, 7777 },
		{ "ws://localhost:7777/", AF_INET, 7777 },
		{ "wss://[::1]:9000/x", AF_INET6, 9000 },
		{ "ws://10.1.2.3/", AF_INET, 80 },
	};
	struct sockaddr_storage ss;
	socklen_t		sl;
	const char	       *why;
	size_t			i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		why = NULL;
		T_EQ_INT(relayurl_resolve_checked(v[i].key, 0, &ss, &sl, &why),
		    -1);
		T_ASSERT(why != NULL);
		T_EQ_INT(relayurl_resolve_checked(v[i].key,
			     RELAYURL_ALLOW_PRIVATE, &ss, &sl, &why),
		    0);
		T_EQ_INT(ss.ss_family, v[i].family);
		if (v[i].family == AF_INET) {
			T_EQ_INT(sl, sizeof(struct sockaddr_in));
			T_EQ_INT(ntohs(((struct sockaddr_in *)&ss)->sin_port),
			    v[i].port);
		} else {
			T_EQ_INT(sl, sizeof(struct sockaddr_in6));
			T_EQ_INT(ntohs(((struct sockaddr_in6 *)&ss)->sin6_port),
			    v[i].port);
		}
	}
}

static void
resolve_checked_takes_global_literals_and_refuses_non_keys(void)
{
	struct sockaddr_storage ss;
	socklen_t		sl;
	const char	       *why;
	char			txt[INET6_ADDRSTRLEN];

	T_EQ_INT(relayurl_resolve_checked("wss://8.8.8.8/", 0, &ss, &sl, &why),
	    0);
	T_EQ_INT(ss.ss_family, AF_INET);
	T_ASSERT(inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, txt,
		     sizeof(txt)) != NULL);
	T_EQ_STR(txt, "8.8.8.8");
	T_EQ_INT(ntohs(((struct sockaddr_in *)&ss)->sin_port), 443);
	T_EQ_INT(relayurl_resolve_checked("wss://[2606:4700::1111]:8443/", 0,
		     &ss, &sl, &why),
	    0);
	T_EQ_INT(ss.ss_family, AF_INET6);
	T_EQ_INT(ntohs(((struct sockaddr_in6 *)&ss)->sin6_port), 8443);
	/* Only canonical keys: these would otherwise reach DNS. */
	T_EQ_INT(relayurl_resolve_checked("wss://8.8.8.8", 0, &ss, &sl, &why),
	    -1);
	T_EQ_INT(relayurl_resolve_checked("8.8.8.8", 0, &ss, &sl, &why), -1);
	T_EQ_INT(relayurl_resolve_checked("wss://127.1/", RELAYURL_TRUSTED, &ss,
		     &sl, &why),
	    -1);
}

static void
self_keys_cover_both_schemes(void)
{
	char keys[2][RELAYURL_MAX + 1];

	T_EQ_INT(relayurl_self_keys("relay.example.com", keys, 2), 2);
	T_EQ_STR(keys[0], "wss://relay.example.com/");
	T_EQ_STR(keys[1], "ws://relay.example.com/");
	T_EQ_INT(relayurl_self_keys("Relay.Example.com:443", keys, 2), 2);
	T_EQ_STR(keys[0], "wss://relay.example.com/");
	T_EQ_STR(keys[1], "ws://relay.example.com:443/");
	T_EQ_INT(relayurl_self_keys("localhost:8080", keys, 2), 2);
	T_EQ_STR(keys[0], "wss://localhost:8080/");
	T_EQ_STR(keys[1], "ws://localhost:8080/");
	T_EQ_INT(relayurl_self_keys("[::1]:8080", keys, 1), 1);
	T_EQ_STR(keys[0], "wss://[::1]:8080/");
	T_EQ_INT(relayurl_self_keys("", keys, 2), -1);
	T_EQ_INT(relayurl_self_keys("bad host", keys, 2), -1);
	T_EQ_INT(relayurl_self_keys("wss://relay.example.com", keys, 2), -1);
	T_EQ_INT(relayurl_self_keys("relay.example.com:0", keys, 2), -1);
}

static void
self_exclusion_matches_every_spelling_of_our_origin(void)
{
	char	    keys[2][RELAYURL_MAX + 1];
	const char *kp[2];

	T_EQ_INT(relayurl_self_keys("relay.example.com", keys, 2), 2);
	kp[0] = keys[0];
	kp[1] = keys[1];
	T_EQ_INT(relayurl_is_self("wss://relay.example.com/", kp, 2), 1);
	T_EQ_INT(relayurl_is_self("wss://relay.example.com", kp, 2), 1);
	T_EQ_INT(relayurl_is_self("wss://relay.example.com:443", kp, 2), 1);
	T_EQ_INT(relayurl_is_self("wss://relay.example.com:443/", kp, 2), 1);
	T_EQ_INT(relayurl_is_self("WSS://Relay.Example.COM.", kp, 2), 1);
	T_EQ_INT(relayurl_is_self("ws://relay.example.com:80/", kp, 2), 1);
	T_EQ_INT(relayurl_is_self("wss://relay.example.com//", kp, 2), 1);
	T_EQ_INT(relayurl_is_self("wss://relay.example.com/inbox/", kp, 2), 1);
	T_EQ_INT(relayurl_is_self("wss://relay.example.com/?x=1", kp, 2), 1);
	T_EQ_INT(relayurl_is_self("wss://relay.example.com:4443/", kp, 2), 0);
	T_EQ_INT(relayurl_is_self("ws://relay.example.com:443/", kp, 2), 0);
	T_EQ_INT(relayurl_is_self("wss://relay.example.co/", kp, 2), 0);
	T_EQ_INT(relayurl_is_self("wss://xrelay.example.com/", kp, 2), 0);
	T_EQ_INT(relayurl_is_self("wss://other.example.com/", kp, 2), 0);
	T_EQ_INT(relayurl_is_self("wss://relay.example.com/", kp, 0), 0);

	T_EQ_INT(relayurl_self_keys("localhost:8080", keys, 2), 2);
	T_EQ_INT(relayurl_is_self("ws://localhost:8080", kp, 2), 1);
	T_EQ_INT(relayurl_is_self("wss://LOCALHOST:8080/", kp, 2), 1);
	T_EQ_INT(relayurl_is_self("ws://localhost/", kp, 2), 0);
	T_EQ_INT(relayurl_is_self("ws://localhost:80800/", kp, 2), 0);
}

static void
parse_round_trips(void)
{
	static const struct {
		const char *key, *scheme, *host, *authority, *target;
		int	    tls, port, family;
	} v[] = {
		{ "wss://relay.example.com/", "wss", "relay.example.com",
		    "relay.example.com", "/", 1, 443, AF_UNSPEC },
		{ "ws://relay.example.com/", "ws", "relay.example.com",
		    "relay.example.com", "/", 0, 80, AF_UNSPEC },
		{ "ws://relay.example.com:443/", "ws", "relay.example.com",
		    "relay.example.com:443", "/", 0, 443, AF_UNSPEC },
		{ "wss://relay.example.com:4443/inbox?x=1&y=%2F", "wss",
		    "relay.example.com", "relay.example.com:4443",
		    "/inbox?x=1&y=%2F", 1, 4443, AF_UNSPEC },
		{ "wss://[2001:4860:4860::8888]:8443/a/b", "wss",
		    "2001:4860:4860::8888", "[2001:4860:4860::8888]:8443",
		    "/a/b", 1, 8443, AF_INET6 },
		{ "wss://[2606:4700::1111]/", "wss", "2606:4700::1111",
		    "[2606:4700::1111]", "/", 1, 443, AF_INET6 },
		{ "wss://8.8.8.8/", "wss", "8.8.8.8", "8.8.8.8", "/", 1, 443,
		    AF_INET },
		{ "ws://127.0.0.1:7777/", "ws", "127.0.0.1", "127.0.0.1:7777",
		    "/", 0, 7777, AF_INET },
		{ "ws://localhost:1/", "ws", "localhost", "localhost:1", "/", 0,
		    1, AF_UNSPEC },
		{ "wss://relay.example.com:65535/", "wss", "relay.example.com",
		    "relay.example.com:65535", "/", 1, 65535, AF_UNSPEC },
	};
	struct relayurl ru;
	char		back[3 * RELAYURL_MAX];
	size_t		i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		T_EQ_INT(relayurl_parse(v[i].key, &ru), 0);
		T_EQ_STR(ru.ru_scheme, v[i].scheme);
		T_EQ_STR(ru.ru_host, v[i].host);
		T_EQ_STR(ru.ru_authority, v[i].authority);
		T_EQ_STR(ru.ru_target, v[i].target);
		T_EQ_INT(ru.ru_tls, v[i].tls);
		T_EQ_INT(ru.ru_port, v[i].port);
		T_EQ_INT(ru.ru_family, v[i].family);
		snprintf(back, sizeof(back), "%s://%s%s", ru.ru_scheme,
		    ru.ru_authority, ru.ru_target);
		T_EQ_STR(back, v[i].key);
	}
}

static void
parse_refuses_non_canonical_keys(void)
{
	struct relayurl ru;

	T_EQ_INT(relayurl_parse("wss://relay.example.com", &ru), -1);
	T_EQ_INT(relayurl_parse("wss://relay.example.com:443/", &ru), -1);
	T_EQ_INT(relayurl_parse("WSS://relay.example.com/", &ru), -1);
	T_EQ_INT(relayurl_parse("relay.example.com", &ru), -1);
	T_EQ_INT(relayurl_parse("wss://relay.example.com/a/", &ru), -1);
	T_EQ_INT(relayurl_parse("wss://relay.example.com/%2f", &ru), -1);
	T_EQ_INT(relayurl_parse("wss://[2001:4860:4860:0::8888]/", &ru), -1);
	T_EQ_INT(relayurl_parse("", &ru), -1);
}

static void
hosts_follow_ldh_and_length_rules(void)
{
	char url[512], label[64];

	canon_rows(t_case);

	/*
	 * A 63-byte label is fine, 64 is not.  Names are capped at 253
	 * bytes, but the 255-byte key cap (scheme, name, "/") bites first:
	 * a 248-byte name fits, 249 does not.
	 */
	memset(label, 'a', 63);
	label[63] = '\0';
	snprintf(url, sizeof(url), "wss://%s.example.com", label);
	T_CHECK(strcmp(canon(url, 0), "REJECT") != 0);
	snprintf(url, sizeof(url), "wss://a%s.example.com", label);
	T_EQ_STR(canon(url, 0), "REJECT");
	snprintf(url, sizeof(url), "wss://%s.%s.%s.%.56s", label, label, label,
	    label);
	T_EQ_INT(strlen(url) - 6, 248);
	T_CHECK(strcmp(canon(url, 0), "REJECT") != 0);
	snprintf(url, sizeof(url), "wss://%s.%s.%s.%.57s", label, label, label,
	    label);
	T_EQ_STR(canon(url, 0), "REJECT");
}

static void
embedded_nul_and_explicit_length(void)
{
	static const char in[] = "wss://relay.example.com\0.evil.com";
	char		  out[RELAYURL_MAX + 1];
	const char	 *why = NULL;

	T_EQ_INT(relayurl_canon(in, sizeof(in) - 1, 0, out, sizeof(out), &why),
	    -1);
	T_ASSERT(why != NULL);
	T_CHECK(strncmp(why, "rule 2:", 7) == 0);
	/* Only len bytes are read: no NUL needed. */
	T_EQ_INT(relayurl_canon("wss://relay.example.comXYZ", 23, 0, out,
		     sizeof(out), NULL),
	    0);
	T_EQ_STR(out, "wss://relay.example.com/");
}

static void
length_caps_input_and_key(void)
{
	char	    in[RELAYURL_MAX + 16], out[RELAYURL_MAX + 1];
	const char *why = NULL;
	size_t	    pre = strlen("wss://relay.example.com/");

	/* Exactly 255 bytes is accepted; 256 is rule 1. */
	memcpy(in, "wss://relay.example.com/", pre);
	memset(in + pre, 'p', RELAYURL_MAX - pre);
	in[RELAYURL_MAX] = '\0';
	T_EQ_INT(relayurl_canon(in, RELAYURL_MAX, 0, out, sizeof(out), &why),
	    0);
	T_EQ_STR(out, in);
	in[RELAYURL_MAX] = 'p';
	in[RELAYURL_MAX + 1] = '\0';
	T_EQ_INT(
	    relayurl_canon(in, RELAYURL_MAX + 1, 0, out, sizeof(out), &why),
	    -1);
	T_CHECK(strncmp(why, "rule 1:", 7) == 0);

	/* A 255-byte input whose key would grow past 255 bytes. */
	memcpy(in, "wss://relay.example.com?", pre);
	memset(in + pre, 'q', RELAYURL_MAX - pre);
	in[RELAYURL_MAX] = '\0';
	T_EQ_INT(relayurl_canon(in, RELAYURL_MAX, 0, out, sizeof(out), &why),
	    -1);
	T_CHECK(strncmp(why, "rule 1:", 7) == 0);

	/* And a buffer too small for the key. */
	T_EQ_INT(
	    relayurl_canon("wss://relay.example.com", 23, 0, out, 24, &why),
	    -1);
	T_EQ_INT(
	    relayurl_canon("wss://relay.example.com", 23, 0, out, 25, &why), 0);
}

static void
reasons_name_the_rule(void)
{
	static const struct {
		const char *in, *rule;
	} v[] = {
		{ "relay.example.com", "rule 4:" },
		{ "wss://a.example.com,wss://b.example.com", "rule 5:" },
		{ "wss://a,b.example.com", "rule 5:" },
		{ "wss://u@relay.example.com", "rule 6:" },
		{ "wss://#web3/", "rule 7:" },
		{ "wss://", "rule 8:" },
		{ "wss://relay%0A.example.com", "rule 9:" },
		{ "wss://-a.example.com", "rule 10:" },
		{ "wss://umbrel", "rule 11:" },
		{ "wss://pi.local", "rule 12:" },
		{ "wss://127.1", "rule 13:" },
		{ "wss://127.0.0.1", "rule 14:" },
		{ "wss://relay.example.com:0", "rule 15:" },
		{ "wss://relay.example.com/a/../b", "rule 16:" },
		{ "wss://relay.example.com/?<", "rule 17:" },
	};
	char	    out[RELAYURL_MAX + 1], msg[300];
	const char *why;
	size_t	    i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		why = NULL;
		T_EQ_INT(relayurl_canon(v[i].in, strlen(v[i].in), 0, out,
			     sizeof(out), &why),
		    -1);
		T_ASSERT(why != NULL);
		if (strncmp(why, v[i].rule, strlen(v[i].rule)) != 0) {
			snprintf(msg, sizeof(msg), "%s: want %s, got \"%s\"",
			    v[i].in, v[i].rule, why);
			t_fail_at(__FILE__, __LINE__, msg);
		}
	}
}

static const struct t_case cases[] = {
	T_CASE(tsv_vectors),
	{ C_UNTRUSTED, canon_of_the_case },
	{ C_TRUSTED, canon_of_the_case },
	{ C_LOOPBACK, canon_of_the_case },
	{ C_ZONES, canon_of_the_case },
	{ C_ONION, canon_of_the_case },
	{ C_IPV6, canon_of_the_case },
	T_CASE(rule14_ranges_at_connect_time),
	T_CASE(rule14_ranges_as_url_literals),
	T_CASE(resolve_checked_refuses_loopback_unless_private),
	T_CASE(resolve_checked_takes_global_literals_and_refuses_non_keys),
	T_CASE(self_keys_cover_both_schemes),
	T_CASE(self_exclusion_matches_every_spelling_of_our_origin),
	T_CASE(parse_round_trips),
	T_CASE(parse_refuses_non_canonical_keys),
	{ C_PATHS, canon_of_the_case },
	{ C_DOTS, canon_of_the_case },
	{ C_QUERIES, canon_of_the_case },
	{ C_FRAGMENTS, canon_of_the_case },
	T_CASE(hosts_follow_ldh_and_length_rules),
	{ C_PORTS, canon_of_the_case },
	{ C_SCHEMES, canon_of_the_case },
	T_CASE(embedded_nul_and_explicit_length),
	T_CASE(length_caps_input_and_key),
	T_CASE(reasons_name_the_rule),
};

T_MAIN(cases)
