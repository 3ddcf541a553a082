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

/* The shared vector file must hold at least this many vectors. */
#define MIN_VECTORS	60

/* Canonicalizes s with flags; returns the key, or "REJECT". */
static const char *
canon(const char *s, unsigned flags)
{
	static char	out[RELAYURL_MAX + 1];
	const char	*why = NULL;

	if (relayurl_canon(s, strlen(s), flags, out, sizeof(out), &why) == -1)
		return "REJECT";
	return out;
}

static void
tsv_vectors(void)
{
	char		 path[1024], *line = NULL, *tab, msg[900];
	char		 key[RELAYURL_MAX + 1], again[RELAYURL_MAX + 1];
	const char	*why, *expect;
	struct relayurl	 ru;
	size_t		 cap = 0, n;
	ssize_t		 len;
	int		 checked = 0, accepted = 0, rejected = 0, bad = 0;
	int		 verbose = getenv("RELAYURL_VERBOSE") != NULL, rc;
	FILE		*f;

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
				snprintf(msg, sizeof(msg), "key \"%s\" is not "
				    "a fixed point", key);
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
	    "%d mismatches\n", checked, accepted, rejected, bad);
	T_CHECK(checked >= MIN_VECTORS);
	T_EQ_INT(checked, accepted + rejected + bad);
}

static void
untrusted_refuses_scheme_less_and_trusted_takes_it_as_wss(void)
{
	T_EQ_STR(canon("relay.example.com", 0), "REJECT");
	T_EQ_STR(canon("relay.example.com", RELAYURL_TRUSTED),
	    "wss://relay.example.com/");
	T_EQ_STR(canon("relay.example.com:4443/inbox", RELAYURL_TRUSTED),
	    "wss://relay.example.com:4443/inbox");
	T_EQ_STR(canon("localhost:7777", RELAYURL_TRUSTED),
	    "wss://localhost:7777/");
}

static void
trusted_still_parses_and_canonicalizes(void)
{
	T_EQ_STR(canon(" WSS://Relay.Example.COM:443//a//b/ ",
	    RELAYURL_TRUSTED), "wss://relay.example.com/a/b");
	T_EQ_STR(canon("https://relay.example.com", RELAYURL_TRUSTED),
	    "REJECT");
	T_EQ_STR(canon("wss://127.1", RELAYURL_TRUSTED), "REJECT");
	T_EQ_STR(canon("wss://user@relay.example.com", RELAYURL_TRUSTED),
	    "REJECT");
	T_EQ_STR(canon("wss://relay.example.com/a/../b", RELAYURL_TRUSTED),
	    "REJECT");
	T_EQ_STR(canon("wss://relay.example.com:0", RELAYURL_TRUSTED),
	    "REJECT");
	T_EQ_STR(canon("wss://bad_name.example.com", RELAYURL_TRUSTED),
	    "REJECT");
	T_EQ_STR(canon("wss://[fe80::1%25eth0]", RELAYURL_TRUSTED), "REJECT");
}

static void
loopback_refused_untrusted_allowed_private_or_trusted(void)
{
	static const struct {
		const char	*in, *key;
	} v[] = {
		{ "ws://127.0.0.1:7777", "ws://127.0.0.1:7777/" },
		{ "ws://localhost:7777/", "ws://localhost:7777/" },
		{ "wss://[::1]:8080", "wss://[::1]:8080/" },
		{ "wss://10.1.2.3", "wss://10.1.2.3/" },
		{ "wss://relay.lan", "wss://relay.lan/" },
		{ "wss://nas.home.arpa", "wss://nas.home.arpa/" },
		{ "ws://umbrel:4848", "ws://umbrel:4848/" },
		{ "wss://relay.test", "wss://relay.test/" },
	};
	size_t	i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		T_EQ_STR(canon(v[i].in, 0), "REJECT");
		T_EQ_STR(canon(v[i].in, RELAYURL_ALLOW_PRIVATE), v[i].key);
		T_EQ_STR(canon(v[i].in, RELAYURL_TRUSTED), v[i].key);
	}
}

static void
special_use_zones_follow_the_vectors(void)
{
	/* The vectors accept .example; nips.md 6.2 rule 12's others stay. */
	T_EQ_STR(canon("wss://xn--ida.example", 0), "wss://xn--ida.example/");
	T_EQ_STR(canon("wss://relay.test", 0), "REJECT");
	T_EQ_STR(canon("wss://relay.invalid", 0), "REJECT");
	T_EQ_STR(canon("wss://a.localhost", 0), "REJECT");
	T_EQ_STR(canon("wss://localhost.example.com", 0),
	    "wss://localhost.example.com/");
	T_EQ_STR(canon("wss://git.corp", 0), "REJECT");
	T_EQ_STR(canon("wss://x.localdomain", 0), "REJECT");
	T_EQ_STR(canon("wss://x.intranet", 0), "REJECT");
	T_EQ_STR(canon("wss://x.private", 0), "REJECT");
	T_EQ_STR(canon("wss://notlocal", RELAYURL_ALLOW_PRIVATE),
	    "wss://notlocal/");
	T_EQ_STR(canon("wss://relay.notlocal.com", 0),
	    "wss://relay.notlocal.com/");
}

static void
onion_and_i2p_refused_in_every_mode(void)
{
	static const char *const v[] = {
		"ws://abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrstuvwx"
		    ".onion",
		"wss://relay.i2p",
	};
	size_t	i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		T_EQ_STR(canon(v[i], 0), "REJECT");
		T_EQ_STR(canon(v[i], RELAYURL_ALLOW_PRIVATE), "REJECT");
		T_EQ_STR(canon(v[i], RELAYURL_TRUSTED), "REJECT");
	}
}

static void
ipv6_literals_in_rfc5952_form(void)
{
	T_EQ_STR(canon("wss://[2001:4860:4860:0000:0000:0000:0000:8888]", 0),
	    "wss://[2001:4860:4860::8888]/");
	T_EQ_STR(canon("WSS://[2606:4700:0:0:0:0:0:1111]:443/", 0),
	    "wss://[2606:4700::1111]/");
	T_EQ_STR(canon("wss://[2606:4700::ABCD]:8443/x", 0),
	    "wss://[2606:4700::abcd]:8443/x");
	T_EQ_STR(canon("wss://[2001:db8::1]", 0), "REJECT");
	T_EQ_STR(canon("wss://[2001:0DB8::0001]", RELAYURL_ALLOW_PRIVATE),
	    "wss://[2001:db8::1]/");
	/* RFC 5952 4.2.2: one zero field is not compressed; 4.2.3: first. */
	T_EQ_STR(canon("wss://[2001:db8:0:1:1:1:1:1]", RELAYURL_ALLOW_PRIVATE),
	    "wss://[2001:db8:0:1:1:1:1:1]/");
	T_EQ_STR(canon("wss://[2001:db8:0:0:1:0:0:1]", RELAYURL_ALLOW_PRIVATE),
	    "wss://[2001:db8::1:0:0:1]/");
	T_EQ_STR(canon("wss://[::ffff:8.8.8.8]", 0), "wss://[::ffff:8.8.8.8]/");
	T_EQ_STR(canon("wss://[::1]", RELAYURL_ALLOW_PRIVATE), "wss://[::1]/");
	T_EQ_STR(canon("wss://[fe80::1%25eth0]", RELAYURL_ALLOW_PRIVATE),
	    "REJECT");
	T_EQ_STR(canon("wss://[1:2:3:4:5:6:7:8:9]", RELAYURL_ALLOW_PRIVATE),
	    "REJECT");
	T_EQ_STR(canon("wss://[::1", RELAYURL_ALLOW_PRIVATE), "REJECT");
	T_EQ_STR(canon("wss://[::1]x", RELAYURL_ALLOW_PRIVATE), "REJECT");
	T_EQ_STR(canon("wss://[]", RELAYURL_ALLOW_PRIVATE), "REJECT");
	T_EQ_STR(canon("wss://[8.8.8.8]", 0), "REJECT");
	T_EQ_STR(canon("wss://2606:4700::1111", 0), "REJECT");
}

/* nips.md 6.2 rule 14, as addresses: refused (0) or allowed (1). */
static const struct {
	const char	*addr;
	int		 ok;
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
	struct sockaddr_in	*sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6	*sin6 = (struct sockaddr_in6 *)ss;

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
	struct sockaddr_storage	ss;
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
		    RELAYURL_ALLOW_PRIVATE), 0);
		T_EQ_INT(relayurl_check_resolved((struct sockaddr *)&ss,
		    RELAYURL_TRUSTED), 0);
	}
	ss.ss_family = AF_UNIX;
	T_EQ_INT(relayurl_check_resolved((struct sockaddr *)&ss,
	    RELAYURL_ALLOW_PRIVATE), -1);
}

static void
rule14_ranges_as_url_literals(void)
{
	char	url[128], msg[200];
	size_t	i;
	int	got;

	for (i = 0; i < sizeof(rule14) / sizeof(rule14[0]); i++) {
		snprintf(url, sizeof(url), strchr(rule14[i].addr, ':') ?
		    "wss://[%s]" : "wss://%s", rule14[i].addr);
		got = strcmp(canon(url, 0), "REJECT") != 0;
		if (got != rule14[i].ok) {
			snprintf(msg, sizeof(msg), "%s: want %s", url,
			    rule14[i].ok ? "key" : "REJECT");
			t_fail_at(__FILE__, __LINE__, msg);
		}
		T_CHECK(strcmp(canon(url, RELAYURL_ALLOW_PRIVATE), "REJECT")
		    != 0);
	}
}

static void
resolve_checked_refuses_loopback_unless_private(void)
{
	static const struct {
		const char	*key;
		int		 family, port;
	} v[] = {
		{ "wss://127.0.0.1/", AF_INET, 443 },
		{ "ws://127.0.0.1:7777/", AF_INET, 7777 },
		{ "ws://localhost:7777/", AF_INET, 7777 },
		{ "wss://[::1]:9000/x", AF_INET6, 9000 },
		{ "ws://10.1.2.3/", AF_INET, 80 },
	};
	struct sockaddr_storage	 ss;
	socklen_t		 sl;
	const char		*why;
	size_t			 i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		why = NULL;
		T_EQ_INT(relayurl_resolve_checked(v[i].key, 0, &ss, &sl, &why),
		    -1);
		T_ASSERT(why != NULL);
		T_EQ_INT(relayurl_resolve_checked(v[i].key,
		    RELAYURL_ALLOW_PRIVATE, &ss, &sl, &why), 0);
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
	struct sockaddr_storage	 ss;
	socklen_t		 sl;
	const char		*why;
	char			 txt[INET6_ADDRSTRLEN];

	T_EQ_INT(relayurl_resolve_checked("wss://8.8.8.8/", 0, &ss, &sl,
	    &why), 0);
	T_EQ_INT(ss.ss_family, AF_INET);
	T_ASSERT(inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr,
	    txt, sizeof(txt)) != NULL);
	T_EQ_STR(txt, "8.8.8.8");
	T_EQ_INT(ntohs(((struct sockaddr_in *)&ss)->sin_port), 443);
	T_EQ_INT(relayurl_resolve_checked("wss://[2606:4700::1111]:8443/", 0,
	    &ss, &sl, &why), 0);
	T_EQ_INT(ss.ss_family, AF_INET6);
	T_EQ_INT(ntohs(((struct sockaddr_in6 *)&ss)->sin6_port), 8443);
	/* Only canonical keys: these would otherwise reach DNS. */
	T_EQ_INT(relayurl_resolve_checked("wss://8.8.8.8", 0, &ss, &sl, &why),
	    -1);
	T_EQ_INT(relayurl_resolve_checked("8.8.8.8", 0, &ss, &sl, &why), -1);
	T_EQ_INT(relayurl_resolve_checked("wss://127.1/", RELAYURL_TRUSTED,
	    &ss, &sl, &why), -1);
}

static void
self_keys_cover_both_schemes(void)
{
	char	keys[2][RELAYURL_MAX + 1];

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
	char		 keys[2][RELAYURL_MAX + 1];
	const char	*kp[2];

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
		const char	*key, *scheme, *host, *authority, *target;
		int		 tls, port, family;
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
		{ "ws://localhost:1/", "ws", "localhost", "localhost:1", "/",
		    0, 1, AF_UNSPEC },
		{ "wss://relay.example.com:65535/", "wss", "relay.example.com",
		    "relay.example.com:65535", "/", 1, 65535, AF_UNSPEC },
	};
	struct relayurl	ru;
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
	struct relayurl	ru;

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
paths_collapse_and_keep_case(void)
{
	T_EQ_STR(canon("wss://relay.example.com///", 0),
	    "wss://relay.example.com/");
	T_EQ_STR(canon("wss://relay.example.com/A//B/c/", 0),
	    "wss://relay.example.com/A/B/c");
	T_EQ_STR(canon("wss://relay.example.com/%7e/%aB", 0),
	    "wss://relay.example.com/%7E/%AB");
	T_EQ_STR(canon("wss://relay.example.com/a:b@c!$&'()*+,;=-._~", 0),
	    "wss://relay.example.com/a:b@c!$&'()*+,;=-._~");
	T_EQ_STR(canon("wss://relay.example.com/.../..a/a.", 0),
	    "wss://relay.example.com/.../..a/a.");
	T_EQ_STR(canon("wss://relay.example.com/nostr/?x=1", 0),
	    "wss://relay.example.com/nostr?x=1");
}

static void
paths_refuse_dots_escapes_and_odd_characters(void)
{
	static const char *const v[] = {
		"wss://relay.example.com/.",
		"wss://relay.example.com/./a",
		"wss://relay.example.com/a/..",
		"wss://relay.example.com/%2e%2E/b",
		"wss://relay.example.com/.%2e",
		"wss://relay.example.com/%2e",
		"wss://relay.example.com/a%2fb",
		"wss://relay.example.com/a%5cb",
		"wss://relay.example.com/a%20b",
		"wss://relay.example.com/a%00",
		"wss://relay.example.com/a%",
		"wss://relay.example.com/a%4",
		"wss://relay.example.com/a%zz",
		"wss://relay.example.com/a<b",
		"wss://relay.example.com/a\"b",
		"wss://relay.example.com/a{b}",
		"wss://relay.example.com/a|b",
		"wss://relay.example.com/a^b",
		"wss://relay.example.com/a`b",
		"wss://relay.example.com/a[b]",
	};
	size_t	i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		T_EQ_STR(canon(v[i], RELAYURL_TRUSTED), "REJECT");
}

static void
queries_stay_in_the_key_as_written(void)
{
	T_EQ_STR(canon("wss://relay.example.com/?b=2&a=1", 0),
	    "wss://relay.example.com/?b=2&a=1");
	T_EQ_STR(canon("wss://relay.example.com/?a=%2f%20b", 0),
	    "wss://relay.example.com/?a=%2F%20b");
	T_EQ_STR(canon("wss://relay.example.com/?a=b/c?d:e@f", 0),
	    "wss://relay.example.com/?a=b/c?d:e@f");
	T_EQ_STR(canon("wss://relay.example.com/?", 0),
	    "wss://relay.example.com/");
	T_EQ_STR(canon("wss://relay.example.com?#x", 0),
	    "wss://relay.example.com/");
	T_EQ_STR(canon("wss://relay.example.com/?a=%00", 0), "REJECT");
	T_EQ_STR(canon("wss://relay.example.com/?a=%g0", 0), "REJECT");
	T_EQ_STR(canon("wss://relay.example.com/?a=<b>", 0), "REJECT");
	T_EQ_STR(canon("wss://relay.example.com/?u=wss://x.example.com", 0),
	    "REJECT");
}

static void
fragments_are_cut_but_not_inside_the_authority(void)
{
	T_EQ_STR(canon("wss://relay.example.com/#", 0),
	    "wss://relay.example.com/");
	T_EQ_STR(canon("wss://relay.example.com/a#b?c", 0),
	    "wss://relay.example.com/a");
	T_EQ_STR(canon("wss://relay.example.com#frag", 0), "REJECT");
	T_EQ_STR(canon("wss://evil.example.com#@good.example.com", 0),
	    "REJECT");
}

static void
hosts_follow_ldh_and_length_rules(void)
{
	char	url[512], label[64];

	T_EQ_STR(canon("wss://a-b.c0.example.com", 0),
	    "wss://a-b.c0.example.com/");
	T_EQ_STR(canon("wss://relay-.example.com", 0), "REJECT");
	T_EQ_STR(canon("wss://relay..example.com", 0), "REJECT");
	T_EQ_STR(canon("wss://.relay.example.com", 0), "REJECT");
	T_EQ_STR(canon("wss://relay.example.com..", 0), "REJECT");
	T_EQ_STR(canon("wss://.", RELAYURL_TRUSTED), "REJECT");
	T_EQ_STR(canon("wss://relay_1.example.com", 0), "REJECT");
	T_EQ_STR(canon("wss://relay!.example.com", 0), "REJECT");
	T_EQ_STR(canon("wss://relay.example.com:443:443", 0), "REJECT");
	T_EQ_STR(canon("wss://:443", RELAYURL_TRUSTED), "REJECT");
	T_EQ_STR(canon("wss://1.2.3.4.5", 0), "REJECT");
	T_EQ_STR(canon("wss://relay.123", 0), "REJECT");
	T_EQ_STR(canon("wss://relay.0x1f", 0), "REJECT");
	T_EQ_STR(canon("wss://08.8.8.8", 0), "REJECT");
	T_EQ_STR(canon("wss://8.8.8.8.", 0), "wss://8.8.8.8/");
	T_EQ_STR(canon("wss://1.1.1.1:8443", 0), "wss://1.1.1.1:8443/");
	T_EQ_STR(canon("wss://0x.example.com", 0), "wss://0x.example.com/");
	T_EQ_STR(canon("wss://123.example.com", 0), "wss://123.example.com/");

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
ports_are_decimal_and_defaults_dropped(void)
{
	T_EQ_STR(canon("wss://relay.example.com:0443", 0),
	    "wss://relay.example.com/");
	T_EQ_STR(canon("ws://relay.example.com:80", 0),
	    "ws://relay.example.com/");
	T_EQ_STR(canon("wss://relay.example.com:80", 0),
	    "wss://relay.example.com:80/");
	T_EQ_STR(canon("wss://relay.example.com:1", 0),
	    "wss://relay.example.com:1/");
	T_EQ_STR(canon("wss://relay.example.com:65535", 0),
	    "wss://relay.example.com:65535/");
	T_EQ_STR(canon("wss://relay.example.com:+1", 0), "REJECT");
	T_EQ_STR(canon("wss://relay.example.com:99999999999999999999", 0),
	    "REJECT");
	T_EQ_STR(canon("wss://relay.example.com:1a", 0), "REJECT");
	T_EQ_STR(canon("wss://relay.example.com:000", 0), "REJECT");
}

static void
schemes_and_separators(void)
{
	T_EQ_STR(canon("Ws://relay.example.com", 0),
	    "ws://relay.example.com/");
	T_EQ_STR(canon("wSs://relay.example.com", 0),
	    "wss://relay.example.com/");
	T_EQ_STR(canon("wsss://relay.example.com", 0), "REJECT");
	T_EQ_STR(canon("://relay.example.com", RELAYURL_TRUSTED), "REJECT");
	T_EQ_STR(canon("wss:/relay.example.com", 0), "REJECT");
	T_EQ_STR(canon("wss:relay.example.com", 0), "REJECT");
	T_EQ_STR(canon("wss://relay.example.com/wss://x", 0), "REJECT");
	T_EQ_STR(canon("wss://relay\\.example.com", RELAYURL_TRUSTED),
	    "REJECT");
	T_EQ_STR(canon("wss://relay.example.com/\x7f", RELAYURL_TRUSTED),
	    "REJECT");
	T_EQ_STR(canon("\t wss://relay.example.com \r\n", 0),
	    "wss://relay.example.com/");
	T_EQ_STR(canon("", 0), "REJECT");
	T_EQ_STR(canon("   ", RELAYURL_TRUSTED), "REJECT");
}

static void
embedded_nul_and_explicit_length(void)
{
	static const char	in[] = "wss://relay.example.com\0.evil.com";
	char			out[RELAYURL_MAX + 1];
	const char		*why = NULL;

	T_EQ_INT(relayurl_canon(in, sizeof(in) - 1, 0, out, sizeof(out),
	    &why), -1);
	T_ASSERT(why != NULL);
	T_CHECK(strncmp(why, "rule 2:", 7) == 0);
	/* Only len bytes are read: no NUL needed. */
	T_EQ_INT(relayurl_canon("wss://relay.example.comXYZ", 23, 0, out,
	    sizeof(out), NULL), 0);
	T_EQ_STR(out, "wss://relay.example.com/");
}

static void
length_caps_input_and_key(void)
{
	char		 in[RELAYURL_MAX + 16], out[RELAYURL_MAX + 1];
	const char	*why = NULL;
	size_t		 pre = strlen("wss://relay.example.com/");

	/* Exactly 255 bytes is accepted; 256 is rule 1. */
	memcpy(in, "wss://relay.example.com/", pre);
	memset(in + pre, 'p', RELAYURL_MAX - pre);
	in[RELAYURL_MAX] = '\0';
	T_EQ_INT(relayurl_canon(in, RELAYURL_MAX, 0, out, sizeof(out), &why),
	    0);
	T_EQ_STR(out, in);
	in[RELAYURL_MAX] = 'p';
	in[RELAYURL_MAX + 1] = '\0';
	T_EQ_INT(relayurl_canon(in, RELAYURL_MAX + 1, 0, out, sizeof(out),
	    &why), -1);
	T_CHECK(strncmp(why, "rule 1:", 7) == 0);

	/* A 255-byte input whose key would grow past 255 bytes. */
	memcpy(in, "wss://relay.example.com?", pre);
	memset(in + pre, 'q', RELAYURL_MAX - pre);
	in[RELAYURL_MAX] = '\0';
	T_EQ_INT(relayurl_canon(in, RELAYURL_MAX, 0, out, sizeof(out), &why),
	    -1);
	T_CHECK(strncmp(why, "rule 1:", 7) == 0);

	/* And a buffer too small for the key. */
	T_EQ_INT(relayurl_canon("wss://relay.example.com", 23, 0, out, 24,
	    &why), -1);
	T_EQ_INT(relayurl_canon("wss://relay.example.com", 23, 0, out, 25,
	    &why), 0);
}

static void
reasons_name_the_rule(void)
{
	static const struct {
		const char	*in, *rule;
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
	char		 out[RELAYURL_MAX + 1], msg[300];
	const char	*why;
	size_t		 i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		why = NULL;
		T_EQ_INT(relayurl_canon(v[i].in, strlen(v[i].in), 0, out,
		    sizeof(out), &why), -1);
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
	T_CASE(untrusted_refuses_scheme_less_and_trusted_takes_it_as_wss),
	T_CASE(trusted_still_parses_and_canonicalizes),
	T_CASE(loopback_refused_untrusted_allowed_private_or_trusted),
	T_CASE(special_use_zones_follow_the_vectors),
	T_CASE(onion_and_i2p_refused_in_every_mode),
	T_CASE(ipv6_literals_in_rfc5952_form),
	T_CASE(rule14_ranges_at_connect_time),
	T_CASE(rule14_ranges_as_url_literals),
	T_CASE(resolve_checked_refuses_loopback_unless_private),
	T_CASE(resolve_checked_takes_global_literals_and_refuses_non_keys),
	T_CASE(self_keys_cover_both_schemes),
	T_CASE(self_exclusion_matches_every_spelling_of_our_origin),
	T_CASE(parse_round_trips),
	T_CASE(parse_refuses_non_canonical_keys),
	T_CASE(paths_collapse_and_keep_case),
	T_CASE(paths_refuse_dots_escapes_and_odd_characters),
	T_CASE(queries_stay_in_the_key_as_written),
	T_CASE(fragments_are_cut_but_not_inside_the_authority),
	T_CASE(hosts_follow_ldh_and_length_rules),
	T_CASE(ports_are_decimal_and_defaults_dropped),
	T_CASE(schemes_and_separators),
	T_CASE(embedded_nul_and_explicit_length),
	T_CASE(length_caps_input_and_key),
	T_CASE(reasons_name_the_rule),
};

T_MAIN(cases)
