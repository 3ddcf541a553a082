/*
 * config_test.c: graspd.conf parsing, NGIT_* overrides, the owner key file
 * and test timing (common/config.c), and that etc/graspd.conf and
 * man/graspd.conf.5 match the key table.
 *
 * Run from the top of the checkout (GRASPD_SRCDIR overrides).
 */
#define _GNU_SOURCE
#include <sys/stat.h>

#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "msg.h"
#include "nip19.h"
#include "t.h"
#include "tdir.h"

extern char **environ;

#define NPUB "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg"
#define NPUB_HEX \
	"7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e"
#define NSEC "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5"

static char tdir[128];
static char conf[sizeof(tdir) + 32];
static char err[512];

static const char *
srcdir(void)
{
	const char *d = getenv("GRASPD_SRCDIR");

	return d ? d : ".";
}

/* Unsets every NGIT_* variable, so each case starts from a clean slate. */
static void
clear_env(void)
{
	char   name[256];
	char **e;

again:
	for (e = environ; *e != NULL; e++) {
		if (strncmp(*e, "NGIT_", 5) != 0)
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(*e, "="), *e);
		unsetenv(name);
		goto again; /* environ changed under us */
	}
}

static void
write_conf(const char *text)
{
	FILE *fp;

	if ((fp = fopen(conf, "w")) == NULL) {
		perror(conf);
		exit(2);
	}
	fputs(text, fp);
	fclose(fp);
}

/* Loads text as the config file; returns config_load's result. */
static int
load_text(struct config *cfg, const char *text)
{
	write_conf(text);
	err[0] = '\0';
	return config_load(cfg, conf, err, sizeof(err));
}

static int
starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static char *
dump(const struct config *cfg)
{
	struct buf b = BUF_INIT;

	config_dump(cfg, &b);
	return buf_release(&b, NULL);
}

/* Checks that a load returned rc -1 with err equal to want. */
static void
load_refused(int rc, const char *want)
{
	char m[sizeof(err) + 512 + 16];

	if (rc != -1)
		t_fail_at(__FILE__, __LINE__, want);
	else if (strcmp(err, want) != 0) {
		snprintf(m, sizeof(m), "\"%s\" != \"%.512s\"", err, want);
		t_fail_at(__FILE__, __LINE__, m);
	}
}

/* Loads text as the file and expects the error "<conf>:<line>: <msg>". */
static void
file_error(const char *text, int line, const char *msg)
{
	struct config c;
	char	      want[512];

	snprintf(want, sizeof(want), "%s:%d: %s", conf, line, msg);
	load_refused(load_text(&c, text), want);
}

/*
 * Checks that c, loaded when rc is 0 (else err says why), dumps as the
 * defaults do; frees c.
 */
static void
dumps_as_defaults(int rc, struct config *c)
{
	struct config d;
	char	     *d0, *d1;

	if (rc != 0) {
		t_fail_at(__FILE__, __LINE__, err);
		return;
	}
	d1 = dump(c);
	config_free(c);
	if (config_load(&d, NULL, err, sizeof(err)) != 0) {
		free(d1);
		t_fail_at(__FILE__, __LINE__, err);
		return;
	}
	d0 = dump(&d);
	config_free(&d);
	T_EQ_STR(d1, d0);
	free(d0);
	free(d1);
}

/* Sets one variable, loads without a file, and expects an error. */
static void
env_error(const char *name, const char *value, const char *msg)
{
	struct config c;
	char	      want[512];

	clear_env();
	setenv(name, value, 1);
	snprintf(want, sizeof(want), "%s: %s (from the environment)", name,
	    msg);
	load_refused(config_load(&c, NULL, err, sizeof(err)), want);
	clear_env();
}

static void
file_key(const char *name, char *out)
{
	size_t i;

	for (i = 0; name[i + 5] != '\0'; i++)
		out[i] = (char)(name[i + 5] -
		    (name[i + 5] >= 'A' && name[i + 5] <= 'Z' ? 'A' - 'a' : 0));
	out[i] = '\0';
}

static void
defaults_without_file(void)
{
	struct config c;

	clear_env();
	T_ASSERT(config_load(&c, NULL, err, sizeof(err)) == 0);
	T_EQ_STR(c.bind_address, "127.0.0.1:7334");
	T_EQ_STR(c.bind_host, "127.0.0.1");
	T_EQ_INT(c.bind_port, 7334);
	T_EQ_STR(c.domain, "127.0.0.1:7334");
	T_EQ_STR(c.relay_data_path, "/var/lib/graspd/relay");
	T_EQ_STR(c.git_data_path, "/var/lib/graspd/git");
	T_EQ_STR(c.run_path, "/run/graspd");
	T_EQ_STR(c.relay_name, "127.0.0.1:7334 grasp relay");
	T_EQ_STR(c.relay_description,
	    "Git Nostr Relay - a grasp implementation");
	T_EQ_INT(c.has_owner_sk, 0);
	T_CHECK(c.owner_key_file == NULL);
	T_EQ_INT(c.repo_whitelist.n, 0);
	T_EQ_INT(c.repo_blacklist.n, 0);
	T_EQ_INT(c.event_blacklist.n, 0);
	T_EQ_INT(c.max_connections, 4096);
	T_EQ_INT(c.max_events_per_minute, 60);
	T_EQ_INT(c.log_level, LOG_LVL_INFO);
	T_EQ_INT(c.test, 0);
	T_EQ_INT(c.metrics_enabled, 1);
	T_EQ_INT(c.sync_enabled, 1);
	T_CHECK(c.sync_bootstrap_relay_url == NULL);
	T_EQ_INT(c.sync_base_backoff_secs, 5);
	T_EQ_INT(c.sync_max_backoff_secs, 3600);
	T_EQ_INT(c.sync_disable_negentropy, 0);
	T_EQ_INT(c.sync_allow_private_targets, 0);
	T_EQ_INT(c.sync_plus_enabled, 1);
	T_EQ_INT(c.sync_plus_user_index_relays.n, 0);
	T_EQ_INT(c.sync_plus_fallback_relays.n, 0);
	T_EQ_INT(c.private_mode, 0);
	T_EQ_INT(c.grasp06_enable, 0);
	T_EQ_INT(c.grasp06_max_bytes_per_ref, 50 * 1024 * 1024);
	T_EQ_INT(c.grasp06_max_bytes_per_signer, 500 * 1024 * 1024);
	config_free(&c);
}

static void
file_sets_values_in_both_spellings(void)
{
	struct config c;

	clear_env();
	T_ASSERT(load_text(&c,
		     "# a comment\n"
		     "\n"
		     "   \t\n"
		     "  bind_address   =   [::1]:8080   \n"
		     "NGIT_DOMAIN = git.example.org\n"
		     "max_connections=10\n"
		     "\tNGIT_LOG_LEVEL = debug\r\n"
		     "relay_description = A relay # with a comment\n"
		     "test = yes\n"
		     "metrics_enabled = 0\n"
		     "sync_enabled = FALSE\n"
		     "git_data_path = /srv/git\n") == 0);
	T_EQ_STR(c.bind_address, "[::1]:8080");
	T_EQ_STR(c.bind_host, "::1");
	T_EQ_INT(c.bind_port, 8080);
	T_EQ_STR(c.domain, "git.example.org");
	T_EQ_STR(c.relay_name, "git.example.org grasp relay");
	T_EQ_INT(c.max_connections, 10);
	T_EQ_INT(c.log_level, LOG_LVL_DEBUG);
	T_EQ_STR(c.relay_description, "A relay");
	T_EQ_INT(c.test, 1);
	T_EQ_INT(c.metrics_enabled, 0);
	T_EQ_INT(c.sync_enabled, 0);
	T_EQ_STR(c.git_data_path, "/srv/git");
	config_free(&c);
}

static void
domain_defaults_to_bind_address_from_file(void)
{
	struct config c;

	clear_env();
	T_ASSERT(load_text(&c, "bind_address = 0.0.0.0:80\n") == 0);
	T_EQ_STR(c.domain, "0.0.0.0:80");
	T_EQ_STR(c.relay_name, "0.0.0.0:80 grasp relay");
	config_free(&c);
}

static void
environment_beats_file(void)
{
	struct config c;

	clear_env();
	setenv("NGIT_MAX_CONNECTIONS", "7", 1);
	setenv("NGIT_RELAY_NAME", "from env", 1);
	setenv("NGIT_SYNC_PLUS_ENABLED", "false", 1);
	setenv("NGIT_GRASP06_ENABLE", "true", 1);
	T_ASSERT(load_text(&c,
		     "max_connections = 99\n"
		     "relay_name = from file\n"
		     "grasp06_enable = false\n"
		     "max_events_per_minute = 5\n") == 0);
	T_EQ_INT(c.grasp06_enable, 1);
	T_EQ_INT(c.max_connections, 7);
	T_EQ_STR(c.relay_name, "from env");
	T_EQ_INT(c.sync_plus_enabled, 0);
	T_EQ_INT(c.max_events_per_minute, 5);
	config_free(&c);
	clear_env();
}

static void
empty_environment_variable_is_unset(void)
{
	struct config c;

	clear_env();
	setenv("NGIT_MAX_CONNECTIONS", "", 1);
	setenv("NGIT_TEST", "", 1);
	T_ASSERT(load_text(&c, "max_connections = 99\n") == 0);
	T_EQ_INT(c.max_connections, 99);
	T_EQ_INT(c.test, 0);
	config_free(&c);
	clear_env();
}

static void
empty_file_value_selects_default(void)
{
	struct config c;

	clear_env();
	T_ASSERT(load_text(&c,
		     "max_connections =\nrelay_name = \"\"\n"
		     "log_level = # none\n") == 0);
	T_EQ_INT(c.max_connections, 4096);
	T_EQ_STR(c.relay_name, "127.0.0.1:7334 grasp relay");
	T_EQ_INT(c.log_level, LOG_LVL_INFO);
	config_free(&c);
}

static void
quoted_values(void)
{
	struct config c;

	clear_env();
	T_ASSERT(
	    load_text(&c,
		"relay_name = \"  My # relay \\\"one\\\" \\\\ \"  # comment\n"
		"relay_description = \"\"\n"
		"max_connections = \"12\"\n"
		"domain=\"example.com\"\n") == 0);
	T_EQ_STR(c.relay_name, "  My # relay \"one\" \\ ");
	T_EQ_STR(c.relay_description,
	    "Git Nostr Relay - a grasp implementation");
	T_EQ_INT(c.max_connections, 12);
	T_EQ_STR(c.domain, "example.com");
	config_free(&c);
	/* '#' not after a blank is part of a bare value. */
	T_ASSERT(load_text(&c, "relay_name = relay#1\n") == 0);
	T_EQ_STR(c.relay_name, "relay#1");
	config_free(&c);
}

static void
bad_quoting_is_an_error(void)
{
	struct config c;

	clear_env();
	file_error("relay_name = \"open\n", 1,
	    "relay_name: value has no closing quote");
	file_error("\n\nrelay_name = \"a\" b\n", 3,
	    "relay_name: value has text after the closing quote");
	T_EQ_INT(load_text(&c, "relay_name = \"a\\n\"\n"), -1);
	T_CHECK(strstr(err, "bad escape") != NULL);
}

static void
unknown_key_names_line(void)
{
	struct config c;
	int	      i;
	struct buf    b = BUF_INIT;

	clear_env();
	for (i = 1; i < 12; i++)
		buf_adds(&b, i % 2 ? "# comment\n" : "\n");
	buf_adds(&b, "foo = bar\n");
	file_error(b.b_data, 12, "unknown key \"foo\"");
	buf_free(&b);
	/* Neither mixed spellings nor a lower-case env name are keys. */
	T_EQ_INT(load_text(&c, "ngit_domain = x\n"), -1);
	T_CHECK(strstr(err, ":1: unknown key \"ngit_domain\"") != NULL);
	T_EQ_INT(load_text(&c, "BIND_ADDRESS = 1.2.3.4:5\n"), -1);
	T_CHECK(strstr(err, "unknown key") != NULL);
}

/*
 * GRASP-03 excludes per-user fallback configuration knobs: the only
 * sync_plus keys are the switch, the user index and the one fallback
 * relay set; a per-user spelling in the file is an unknown key, and in
 * the environment sets nothing.
 */
static void
no_per_user_fallback_knobs(void)
{
	struct config c;
	const char   *name;
	size_t	      i;
	int	      n = 0;

	clear_env();
	for (i = 0; config_key_info(i, &name, NULL, NULL) == 0; i++)
		if (strncmp(name, "NGIT_SYNC_PLUS_", 15) == 0) {
			T_CHECK(strcmp(name, "NGIT_SYNC_PLUS_ENABLED") == 0 ||
			    strcmp(name, "NGIT_SYNC_PLUS_USER_INDEX_RELAYS") ==
				0 ||
			    strcmp(name, "NGIT_SYNC_PLUS_FALLBACK_RELAYS") ==
				0);
			n++;
		}
	T_EQ_INT(n, 3);
	T_EQ_INT(load_text(&c,
		     "sync_plus_fallback_relays_for_user = "
		     "ws://a.example\n"),
	    -1);
	T_CHECK(strstr(err,
		    ":1: unknown key "
		    "\"sync_plus_fallback_relays_for_user\"") != NULL);
	T_EQ_INT(load_text(&c,
		     "NGIT_SYNC_PLUS_USER_FALLBACK = "
		     "ws://a.example\n"),
	    -1);
	T_CHECK(strstr(err, "unknown key") != NULL);
	setenv("NGIT_SYNC_PLUS_USER_FALLBACK", "ws://a.example", 1);
	T_EQ_INT(load_text(&c, ""), 0);
	T_EQ_INT(c.sync_plus_fallback_relays.n, 0);
	config_free(&c);
	clear_env();
}

static void
line_without_equals_is_an_error(void)
{
	struct config c;

	clear_env();
	T_EQ_INT(load_text(&c, "\nbind_address 1.2.3.4:5\n"), -1);
	T_CHECK(strstr(err, ":2: expected \"key = value\"") != NULL);
}

static void
duplicate_key_is_an_error(void)
{
	struct config c;

	clear_env();
	T_EQ_INT(load_text(&c,
		     "max_connections = 1\n"
		     "NGIT_MAX_CONNECTIONS = 2\n"),
	    -1);
	T_CHECK(strstr(err,
		    ":2: NGIT_MAX_CONNECTIONS: already set on "
		    "line 1") != NULL);
}

static void
missing_file_is_an_error(void)
{
	struct config c;

	clear_env();
	T_EQ_INT(config_load(&c, "/nonexistent/graspd.conf", err, sizeof(err)),
	    -1);
	T_EQ_STR(err, "/nonexistent/graspd.conf: No such file or directory");
}

static void
bad_values_name_the_key(void)
{
	env_error("NGIT_MAX_CONNECTIONS", "abc", "\"abc\" is not a number");
	env_error("NGIT_MAX_CONNECTIONS", "0",
	    "\"0\" is out of range (1 to 1048576)");
	env_error("NGIT_MAX_CONNECTIONS", "12x", "\"12x\" is not a number");
	env_error("NGIT_MAX_CONNECTIONS", "+3", "\"+3\" is not a number");
	env_error("NGIT_MAX_EVENTS_PER_MINUTE", "-1",
	    "\"-1\" is out of range (0 to 1000000)");
	env_error("NGIT_SYNC_BASE_BACKOFF_SECS", "99999999999999999999999",
	    "\"99999999999999999999999\" is out of range (1 to 86400)");
	env_error("NGIT_TEST", "maybe",
	    "\"maybe\" is not a boolean (true/false, yes/no, 1/0)");
	env_error("NGIT_PRIVATE_MODE", "on",
	    "\"on\" is not a boolean (true/false, yes/no, 1/0)");
	env_error("NGIT_LOG_LEVEL", "info,ngit=debug",
	    "\"info,ngit=debug\" is not a log level (error, warn, info, "
	    "debug)");
	env_error("NGIT_RELAY_DATA_PATH", "data/relay",
	    "\"data/relay\" is not an absolute path");
	env_error("NGIT_RELAY_NAME", "a\tb", "contains control characters");
	env_error("NGIT_DOMAIN", "https://example.com",
	    "\"https://example.com\" is not host[:port] (no scheme or path)");
	env_error("NGIT_DOMAIN", "exa mple.com",
	    "\"exa mple.com\" is not an IP address or host name");
	env_error("NGIT_SYNC_BOOTSTRAP_RELAY_URL", "http://relay.example",
	    "\"http://relay.example\" is not a relay URL (ws:// or wss://)");
	env_error("NGIT_SYNC_PLUS_FALLBACK_RELAYS", "wss://a.example, wss://",
	    "\"wss://\" is not a relay URL (no host)");
	env_error("NGIT_EVENT_BLACKLIST", NPUB ", nope",
	    "\"nope\" is not an npub or 64-digit lowercase hex public key");
	env_error("NGIT_RELAY_OWNER_NSEC", "nsec1nope",
	    "not a valid nsec or 64-digit hex secret key");
	env_error("NGIT_TRUSTED_PROXIES", "127.0.0.1, proxy.example",
	    "\"proxy.example\" is not an IP address or address/prefix");
	env_error("NGIT_TRUSTED_PROXIES", "10.0.0.0/33",
	    "\"10.0.0.0/33\" has a prefix length over 32");
	env_error("NGIT_TRUSTED_PROXIES", "[::1]",
	    "\"[::1]\" is not an IP address or address/prefix");
	env_error("NGIT_PROXY_PROTOCOL", "v2",
	    "\"v2\" is not a boolean (true/false, yes/no, 1/0)");
}

static void
proxied_shape_without_trusted_proxies_warns(void)
{
	struct config c;

	clear_env();
	T_EQ_INT(load_text(&c,
		     "bind_address = 127.0.0.1:7334\n"
		     "public_url = https://git.example.org\n"),
	    0);
	T_EQ_INT(config_warn_proxy(&c), 1);
	config_free(&c);
	/* The proxy trusted: its clients are told apart. */
	T_EQ_INT(load_text(&c,
		     "bind_address = [::1]:7334\n"
		     "public_url = https://git.example.org\n"
		     "trusted_proxies = ::1\n"),
	    0);
	T_EQ_INT(config_warn_proxy(&c), 0);
	config_free(&c);
	/* Per-address limits off: nothing to count wrongly. */
	T_EQ_INT(load_text(&c,
		     "bind_address = 127.0.0.1:7334\n"
		     "public_url = https://git.example.org\n"
		     "max_connections_per_ip = 0\n"
		     "max_events_per_minute_per_ip = 0\n"
		     "max_git_requests_per_ip = 0\n"
		     "max_pending_per_ip = 0\n"),
	    0);
	T_EQ_INT(config_warn_proxy(&c), 0);
	config_free(&c);
	/* Served directly: a public bind address, or plain http. */
	T_EQ_INT(load_text(&c,
		     "bind_address = 0.0.0.0:7334\n"
		     "public_url = https://git.example.org\n"),
	    0);
	T_EQ_INT(config_warn_proxy(&c), 0);
	config_free(&c);
	T_EQ_INT(load_text(&c, "bind_address = 127.0.0.1:7334\n"), 0);
	T_EQ_INT(config_warn_proxy(&c), 0);
	config_free(&c);
	T_EQ_INT(load_text(&c, "proxy_protocol = true\n"), 0);
	T_EQ_INT(config_warn_proxy(&c), 1);
	config_free(&c);
}

static void
trusted_proxies_keep_each_range(void)
{
	struct config c;

	clear_env();
	T_EQ_INT(load_text(&c,
		     "trusted_proxies = 127.0.0.1, 10.0.0.0/8 ,"
		     "2001:db8::/32\nproxy_protocol = yes\n"),
	    0);
	T_EQ_INT(c.trusted_proxies.n, 3);
	T_EQ_STR(c.trusted_proxies.v[1], "10.0.0.0/8");
	T_EQ_STR(c.trusted_proxies.v[2], "2001:db8::/32");
	T_EQ_INT(c.proxy_protocol, 1);
	config_free(&c);
	T_EQ_INT(load_text(&c, ""), 0);
	T_EQ_INT(c.trusted_proxies.n, 0);
	T_EQ_INT(c.proxy_protocol, 0);
	config_free(&c);
}

static void
bad_file_value_names_line_and_key(void)
{
	struct config c;

	clear_env();
	file_error("# x\nmax_connections = abc\n", 2,
	    "max_connections: \"abc\" is not a number");
	/* The file is checked whole, even where the environment overrides. */
	setenv("NGIT_MAX_CONNECTIONS", "5", 1);
	T_EQ_INT(load_text(&c, "max_connections = abc\n"), -1);
	clear_env();
}

static void
secret_key_never_appears_in_errors(void)
{
	struct config c;
	char	      bad[] = NSEC;

	clear_env();
	bad[sizeof(bad) - 2] = 'q';
	setenv("NGIT_RELAY_OWNER_NSEC", bad, 1);
	T_EQ_INT(config_load(&c, NULL, err, sizeof(err)), -1);
	T_CHECK(strstr(err, "vl029mgp") == NULL);
	T_CHECK(starts_with(err, "NGIT_RELAY_OWNER_NSEC: "));
	clear_env();
}

static void
bind_address_forms(void)
{
	static const struct {
		const char *v;
		const char *host; /* NULL: an error */
		int	    port;
		const char *why;
	} cases[] = {
		{ "127.0.0.1:7334", "127.0.0.1", 7334, NULL },
		{ "0.0.0.0:1", "0.0.0.0", 1, NULL },
		{ "[::]:65535", "::", 65535, NULL },
		{ "[fe80::1]:443", "fe80::1", 443, NULL },
		{ "localhost:8080", "localhost", 8080, NULL },
		{ "relay-1.example.org:80", "relay-1.example.org", 80, NULL },
		{ "::1:7334", NULL, 0, "is an IPv6 address without brackets" },
		{ "[::1]", NULL, 0, "has no port (host:port)" },
		{ "[::1]7334", NULL, 0, "has junk after ']'" },
		{ "[1.2.3.4]:80", NULL, 0,
		    "is not an IPv6 address in brackets" },
		{ "127.0.0.1", NULL, 0, "has no port (host:port)" },
		{ "127.0.0.1:0", NULL, 0, "has a port outside 1-65535" },
		{ "127.0.0.1:65536", NULL, 0, "has a port outside 1-65535" },
		{ "127.0.0.1:http", NULL, 0,
		    "has a port that is not a number" },
		{ "127.0.0.1:", NULL, 0, "has a port that is not a number" },
		{ ":7334", NULL, 0, "has no host" },
		{ "999.1.1.1:80", NULL, 0,
		    "is not an IP address or host name" },
		{ "-bad.example:80", NULL, 0,
		    "is not an IP address or host name" },
		{ "a..b:80", NULL, 0, "is not an IP address or host name" },
		{ "under_score:80", NULL, 0,
		    "is not an IP address or host name" },
	};
	struct config c;
	char	      want[256];
	size_t	      i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		clear_env();
		setenv("NGIT_BIND_ADDRESS", cases[i].v, 1);
		if (cases[i].host != NULL) {
			if (config_load(&c, NULL, err, sizeof(err)) != 0) {
				t_fail_at(__FILE__, __LINE__, err);
				continue;
			}
			T_EQ_STR(c.bind_host, cases[i].host);
			T_EQ_INT(c.bind_port, cases[i].port);
			T_EQ_STR(c.bind_address, cases[i].v);
			config_free(&c);
			continue;
		}
		snprintf(want, sizeof(want),
		    "NGIT_BIND_ADDRESS: \"%s\" %s "
		    "(from the environment)",
		    cases[i].v, cases[i].why);
		T_EQ_INT(config_load(&c, NULL, err, sizeof(err)), -1);
		T_EQ_STR(err, want);
	}
	clear_env();
}

static void
domain_forms(void)
{
	struct config c;

	clear_env();
	setenv("NGIT_DOMAIN", "git.example.org:8443", 1);
	T_ASSERT(config_load(&c, NULL, err, sizeof(err)) == 0);
	T_EQ_STR(c.domain, "git.example.org:8443");
	config_free(&c);
	setenv("NGIT_DOMAIN", "[2001:db8::1]", 1);
	T_ASSERT(config_load(&c, NULL, err, sizeof(err)) == 0);
	T_EQ_STR(c.domain, "[2001:db8::1]");
	config_free(&c);
	clear_env();
}

static void
public_url_defaults_from_domain_and_is_checked(void)
{
	static const char *const bad[] = { "git.example.org",
		"ftp://git.example.org", "https://git.example.org/path",
		"https://u@git.example.org", "https://", "https://a b",
		"https://git.example.org/?q" };
	struct config		 c;
	char			 ws[256];
	size_t			 i;

	clear_env();
	setenv("NGIT_DOMAIN", "git.example.org:7334", 1);
	T_ASSERT(config_load(&c, NULL, err, sizeof(err)) == 0);
	T_EQ_STR(c.public_url, "http://git.example.org:7334");
	T_EQ_STR(c.relay_icon, "http://git.example.org:7334/icon.png");
	T_CHECK(c.relay_contact == NULL);
	config_relay_url(&c, ws, sizeof(ws));
	T_EQ_STR(ws, "ws://git.example.org:7334");
	config_free(&c);
	setenv("NGIT_PUBLIC_URL", "HTTPS://git.example.org/", 1);
	setenv("NGIT_RELAY_CONTACT", "mailto:ops@example.org", 1);
	T_ASSERT(config_load(&c, NULL, err, sizeof(err)) == 0);
	T_EQ_STR(c.public_url, "https://git.example.org");
	T_EQ_STR(c.relay_icon, "https://git.example.org/icon.png");
	T_EQ_STR(c.relay_contact, "mailto:ops@example.org");
	config_relay_url(&c, ws, sizeof(ws));
	T_EQ_STR(ws, "wss://git.example.org");
	config_free(&c);
	setenv("NGIT_RELAY_ICON", "https://cdn.example.org/i/logo.png", 1);
	T_ASSERT(config_load(&c, NULL, err, sizeof(err)) == 0);
	T_EQ_STR(c.relay_icon, "https://cdn.example.org/i/logo.png");
	config_free(&c);
	setenv("NGIT_RELAY_ICON", "logo.png", 1);
	T_CHECK(config_load(&c, NULL, err, sizeof(err)) == -1);
	T_CHECK(strstr(err, "NGIT_RELAY_ICON") != NULL);
	unsetenv("NGIT_RELAY_ICON");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("NGIT_PUBLIC_URL", bad[i], 1);
		if (config_load(&c, NULL, err, sizeof(err)) != -1 ||
		    strstr(err, "NGIT_PUBLIC_URL") == NULL)
			t_fail_at(__FILE__, __LINE__, bad[i]);
		config_free(&c);
	}
	clear_env();
}

static void
lists_are_trimmed_and_skip_empty_items(void)
{
	struct config c;

	clear_env();
	T_ASSERT(load_text(&c,
		     "sync_plus_user_index_relays = "
		     " wss://a.example , ,ws://b.example:7777/path?x=1,,"
		     "c.example ,\n"
		     "sync_plus_fallback_relays = ,  ,\n"
		     "sync_bootstrap_relay_url = relay.example\n") == 0);
	T_EQ_INT(c.sync_plus_user_index_relays.n, 3);
	T_EQ_STR(c.sync_plus_user_index_relays.v[0], "wss://a.example");
	T_EQ_STR(c.sync_plus_user_index_relays.v[1],
	    "ws://b.example:7777/path?x=1");
	T_EQ_STR(c.sync_plus_user_index_relays.v[2], "wss://c.example");
	T_EQ_INT(c.sync_plus_fallback_relays.n, 0);
	T_EQ_STR(c.sync_bootstrap_relay_url, "wss://relay.example");
	config_free(&c);
	setenv("NGIT_SYNC_BOOTSTRAP_RELAY_URL", "WSS://Relay.Example", 1);
	T_ASSERT(config_load(&c, NULL, err, sizeof(err)) == 0);
	T_EQ_STR(c.sync_bootstrap_relay_url, "wss://Relay.Example");
	config_free(&c);
	clear_env();
}

static void
event_blacklist_takes_npub_and_hex(void)
{
	struct config c;
	uint8_t	      pk[PUBKEY_LEN];

	clear_env();
	setenv("NGIT_EVENT_BLACKLIST", " " NPUB "," NPUB_HEX ",", 1);
	T_ASSERT(config_load(&c, NULL, err, sizeof(err)) == 0);
	T_EQ_INT(c.event_blacklist.n, 2);
	T_ASSERT(key_parse_pubkey(NPUB_HEX, pk) == 0);
	T_CHECK(memcmp(c.event_blacklist.v[0], pk, PUBKEY_LEN) == 0);
	T_CHECK(memcmp(c.event_blacklist.v[1], pk, PUBKEY_LEN) == 0);
	config_free(&c);
	clear_env();
}

static void
whitelist_entry_forms(void)
{
	struct config c;
	uint8_t	      pk[PUBKEY_LEN];

	clear_env();
	T_ASSERT(key_parse_pubkey(NPUB_HEX, pk) == 0);
	T_ASSERT(load_text(&c,
		     "repository_whitelist = " NPUB ", " NPUB
		     "/ngit , grasp-tools,,\n"
		     "repository_blacklist = spam\n") == 0);
	T_EQ_INT(c.repo_whitelist.n, 3);
	T_EQ_INT(c.repo_whitelist.v[0].has_pubkey, 1);
	T_CHECK(memcmp(c.repo_whitelist.v[0].pubkey, pk, PUBKEY_LEN) == 0);
	T_CHECK(c.repo_whitelist.v[0].identifier == NULL);
	T_EQ_INT(c.repo_whitelist.v[1].has_pubkey, 1);
	T_CHECK(memcmp(c.repo_whitelist.v[1].pubkey, pk, PUBKEY_LEN) == 0);
	T_EQ_STR(c.repo_whitelist.v[1].identifier, "ngit");
	T_EQ_INT(c.repo_whitelist.v[2].has_pubkey, 0);
	T_EQ_STR(c.repo_whitelist.v[2].identifier, "grasp-tools");
	T_EQ_INT(c.repo_blacklist.n, 1);
	T_EQ_STR(c.repo_blacklist.v[0].identifier, "spam");
	config_free(&c);
}

/* What the roles would refuse as a relay URL is refused at load time. */
static void
relay_urls_the_roles_would_refuse_are_errors(void)
{
	struct config c;

	clear_env();
	T_EQ_INT(load_text(&c,
		     "sync_bootstrap_relay_url = "
		     "wss://-bad.example:99999/a/../b\n"),
	    -1);
	T_CHECK(strstr(err, ":1: sync_bootstrap_relay_url: ") != NULL);
	T_EQ_INT(load_text(&c,
		     "sync_plus_fallback_relays = "
		     "wss://relay.example.com/%00\n"),
	    -1);
	T_CHECK(strstr(err, ":1: sync_plus_fallback_relays: ") != NULL);
	/* Trusted: loopback and scheme-less names are the operator's call. */
	T_EQ_INT(load_text(&c,
		     "sync_plus_user_index_relays = "
		     "ws://127.0.0.1:7777, relay.example.com\n"),
	    0);
	config_free(&c);
}

static void
whitelist_bad_npub_names_key(void)
{
	struct config c;
	char	      bad[] = NPUB;

	clear_env();
	bad[sizeof(bad) - 2] = 'q';
	T_EQ_INT(load_text(&c, "repository_whitelist = ok, npub1xyz\n"), -1);
	T_CHECK(strstr(err,
		    ":1: repository_whitelist: \"npub1xyz\" is "
		    "not a valid npub") != NULL);
	setenv("NGIT_REPOSITORY_BLACKLIST", bad, 1);
	T_EQ_INT(config_load(&c, NULL, err, sizeof(err)), -1);
	T_CHECK(starts_with(err, "NGIT_REPOSITORY_BLACKLIST: \"npub10elf"));
	T_CHECK(strstr(err, "is not a valid npub") != NULL);
	/* The part before a '/' must be an npub, never a hex key. */
	setenv("NGIT_REPOSITORY_BLACKLIST", NPUB_HEX "/repo", 1);
	T_EQ_INT(config_load(&c, NULL, err, sizeof(err)), -1);
	T_CHECK(strstr(err, "is not a valid npub") != NULL);
	setenv("NGIT_REPOSITORY_BLACKLIST", NPUB "/", 1);
	T_EQ_INT(config_load(&c, NULL, err, sizeof(err)), -1);
	T_CHECK(strstr(err, "has an empty identifier") != NULL);
	setenv("NGIT_REPOSITORY_BLACKLIST", "/repo", 1);
	T_EQ_INT(config_load(&c, NULL, err, sizeof(err)), -1);
	T_CHECK(strstr(err, "\"\" is not a valid npub") != NULL);
	clear_env();
}

static void
backoff_max_below_base_is_an_error(void)
{
	struct config c;

	clear_env();
	setenv("NGIT_SYNC_BASE_BACKOFF_SECS", "10", 1);
	setenv("NGIT_SYNC_MAX_BACKOFF_SECS", "9", 1);
	T_EQ_INT(config_load(&c, NULL, err, sizeof(err)), -1);
	T_EQ_STR(err,
	    "NGIT_SYNC_MAX_BACKOFF_SECS: 9 is less than "
	    "NGIT_SYNC_BASE_BACKOFF_SECS (10)");
	setenv("NGIT_SYNC_MAX_BACKOFF_SECS", "10", 1);
	T_EQ_INT(config_load(&c, NULL, err, sizeof(err)), 0);
	config_free(&c);
	clear_env();
}

static void
owner_key_from_config_wins(void)
{
	struct config c;
	uint8_t	      sk[SECKEY_LEN], want[SECKEY_LEN];
	char	      path[sizeof(tdir) + 64];

	clear_env();
	setenv("NGIT_RELAY_DATA_PATH", tdir, 1);
	setenv("NGIT_RELAY_OWNER_NSEC", NSEC, 1);
	T_ASSERT(config_load(&c, NULL, err, sizeof(err)) == 0);
	T_EQ_INT(c.has_owner_sk, 1);
	T_ASSERT(config_owner_key(&c, sk, err, sizeof(err)) == 0);
	T_ASSERT(key_parse_seckey(NSEC, want) == 0);
	T_CHECK(memcmp(sk, want, SECKEY_LEN) == 0);
	snprintf(path, sizeof(path), "%s/%s", tdir, CONFIG_OWNER_KEY_FILE);
	T_CHECK(access(path, F_OK) == -1);
	config_free(&c);
	clear_env();
}

static void
owner_key_file_created_0600_and_stable(void)
{
	struct config c;
	struct stat   st;
	uint8_t	      sk1[SECKEY_LEN], sk2[SECKEY_LEN], fsk[SECKEY_LEN];
	char	      path[sizeof(tdir) + 64], *text, *d;

	clear_env();
	snprintf(path, sizeof(path), "%s/%s", tdir, CONFIG_OWNER_KEY_FILE);
	unlink(path);
	setenv("NGIT_RELAY_DATA_PATH", tdir, 1);
	T_ASSERT(config_load(&c, NULL, err, sizeof(err)) == 0);
	T_EQ_INT(c.has_owner_sk, 0);
	T_ASSERT(config_owner_key(&c, sk1, err, sizeof(err)) == 0);
	T_EQ_INT(c.has_owner_sk, 1);
	T_EQ_STR(c.owner_key_file, path);
	T_CHECK(memcmp(c.owner_sk, sk1, SECKEY_LEN) == 0);
	/* The dump says where the key lives, never what it is. */
	d = dump(&c);
	T_CHECK(strstr(d, "relay_owner_nsec = # key from ") != NULL);
	T_CHECK(strstr(d, "nsec1") == NULL);
	free(d);
	config_free(&c);

	T_ASSERT(stat(path, &st) == 0);
	T_EQ_INT(st.st_mode & 07777, 0600);
	T_ASSERT(S_ISREG(st.st_mode));
	text = t_slurp(path, NULL);
	T_ASSERT(text != NULL);
	T_CHECK(starts_with(text, "nsec1"));
	T_CHECK(text[strlen(text) - 1] == '\n');
	text[strcspn(text, "\n")] = '\0';
	T_CHECK(key_parse_seckey(text, fsk) == 0);
	free(text);
	T_CHECK(memcmp(fsk, sk1, SECKEY_LEN) == 0);

	/* A second start reads the same key. */
	T_ASSERT(config_load(&c, NULL, err, sizeof(err)) == 0);
	T_ASSERT(config_owner_key(&c, sk2, err, sizeof(err)) == 0);
	T_CHECK(memcmp(sk1, sk2, SECKEY_LEN) == 0);
	config_free(&c);
	T_ASSERT(stat(path, &st) == 0);
	T_EQ_INT(st.st_mode & 07777, 0600);
	/* No temporary file is left behind. */
	{
		char tmp[sizeof(path) + 32];

		snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
		T_CHECK(access(tmp, F_OK) == -1);
	}
	unlink(path);
	clear_env();
}

static void
owner_key_file_bad_contents_is_an_error(void)
{
	struct config c;
	FILE	     *fp;
	uint8_t	      sk[SECKEY_LEN], want[SECKEY_LEN];
	char	      path[sizeof(tdir) + 64];

	clear_env();
	snprintf(path, sizeof(path), "%s/%s", tdir, CONFIG_OWNER_KEY_FILE);
	setenv("NGIT_RELAY_DATA_PATH", tdir, 1);
	T_ASSERT((fp = fopen(path, "w")) != NULL);
	fputs("garbage\n", fp);
	fclose(fp);
	chmod(path, 0600);
	T_ASSERT(config_load(&c, NULL, err, sizeof(err)) == 0);
	T_EQ_INT(config_owner_key(&c, sk, err, sizeof(err)), -1);
	T_CHECK(strstr(err, "not a valid nsec or hex secret key") != NULL);
	T_EQ_INT(c.has_owner_sk, 0);
	/* An existing hex key with surrounding blanks is read, not replaced. */
	T_ASSERT((fp = fopen(path, "w")) != NULL);
	fputs(
	    "  67dea2ed018072d675f5415ecfaed7d2597555e202d85b3d65ea4e58d2d92ffa"
	    "\n\n",
	    fp);
	fclose(fp);
	T_ASSERT(config_owner_key(&c, sk, err, sizeof(err)) == 0);
	T_ASSERT(key_parse_seckey(NSEC, want) == 0);
	T_CHECK(memcmp(sk, want, SECKEY_LEN) == 0);
	config_free(&c);
	unlink(path);
	/* A missing data directory is reported, not created. */
	setenv("NGIT_RELAY_DATA_PATH", "/nonexistent/graspd", 1);
	T_ASSERT(config_load(&c, NULL, err, sizeof(err)) == 0);
	T_EQ_INT(config_owner_key(&c, sk, err, sizeof(err)), -1);
	T_CHECK(strstr(err, "/nonexistent/graspd/") != NULL);
	config_free(&c);
	clear_env();
}

static void
test_mode_scales_timing(void)
{
	struct config c;

	clear_env();
	T_ASSERT(config_load(&c, NULL, err, sizeof(err)) == 0);
	T_EQ_INT(config_test_mode(&c), 0);
	T_CHECK(cfg_scale_delay(&c, 300) == 300);
	T_CHECK(cfg_period(&c, 60) == 60);
	T_CHECK(cfg_period(&c, 0.1) == 0.1);
	config_free(&c);

	setenv("NGIT_TEST", "1", 1);
	T_ASSERT(config_load(&c, NULL, err, sizeof(err)) == 0);
	T_EQ_INT(config_test_mode(&c), 1);
	T_CHECK(fabs(cfg_scale_delay(&c, 300) - 5) < 1e-9);
	T_CHECK(fabs(cfg_scale_delay(&c, 86400) - 1440) < 1e-9);
	T_CHECK(fabs(cfg_scale_delay(&c, 65) - 65.0 / 60) < 1e-9);
	T_CHECK(cfg_period(&c, 60) == 0.2);
	T_CHECK(cfg_period(&c, 5) == 0.2);
	T_CHECK(cfg_period(&c, 0.2) == 0.2);
	T_CHECK(cfg_period(&c, 0.05) == 0.05);
	config_free(&c);
	clear_env();
}

static void
dump_redacts_secret_key(void)
{
	struct config c;
	char	     *d;

	clear_env();
	T_ASSERT(load_text(&c, "relay_owner_nsec = " NSEC "\n") == 0);
	d = dump(&c);
	config_free(&c);
	T_CHECK(strstr(d, "\nrelay_owner_nsec = # set, redacted\n") != NULL);
	T_CHECK(strstr(d, "vl029mgp") == NULL);
	T_CHECK(strstr(d, "67dea2ed") == NULL);
	free(d);
	T_ASSERT(config_load(&c, NULL, err, sizeof(err)) == 0);
	d = dump(&c);
	config_free(&c);
	T_CHECK(strstr(d,
		    "\nrelay_owner_nsec = # from "
		    "/var/lib/graspd/relay/.relay-owner.nsec\n") != NULL);
	free(d);
}

static void
dump_round_trips(void)
{
	struct config c;
	char	     *d1, *d2;

	clear_env();
	T_ASSERT(load_text(&c,
		     "domain = git.example.org\n"
		     "relay_name = \"hash # and \\\"quotes\\\"\"\n"
		     "relay_description = \" padded \"\n"
		     "repository_whitelist = " NPUB "/ngit, " NPUB ", tools\n"
		     "event_blacklist = " NPUB_HEX "\n"
		     "sync_plus_fallback_relays = a.example, ws://b.example\n"
		     "sync_bootstrap_relay_url = wss://boot.example\n"
		     "log_level = warn\n"
		     "max_events_per_minute = 0\n") == 0);
	d1 = dump(&c);
	config_free(&c);
	T_CHECK(starts_with(d1, "domain = git.example.org\n"));
	T_CHECK(strstr(d1, "\nlog_level = warn\n") != NULL);
	T_CHECK(strstr(d1, "\nmax_events_per_minute = 0\n") != NULL);
	T_CHECK(strstr(d1,
		    "\nrepository_whitelist = " NPUB "/ngit, " NPUB
		    ", tools\n") != NULL);
	T_CHECK(strstr(d1, "\nevent_blacklist = " NPUB "\n") != NULL);
	T_CHECK(strstr(d1,
		    "\nsync_plus_fallback_relays = wss://a.example, "
		    "ws://b.example\n") != NULL);
	T_CHECK(strstr(d1, "\nrelay_name = \"hash # and \\\"quotes\\\"\"\n") !=
	    NULL);
	T_CHECK(strstr(d1, "\nrelay_description = \" padded \"\n") != NULL);
	/* Reading the dump back gives the same configuration. */
	T_ASSERT(load_text(&c, d1) == 0);
	d2 = dump(&c);
	config_free(&c);
	T_EQ_STR(d2, d1);
	free(d1);
	free(d2);
}

/*
 * Every key names the roles its change restarts, and graspd.conf(5)
 * RELOADING lists each key (but log_level and run_path) under a heading
 * naming exactly those roles ("every role": all four).
 */
static void
reload_restarts_the_roles_graspd_conf_5_names(void)
{
	static const char *const rn[] = { "relayd", "syncd", "discoveryd",
		"historyd" };
	static const enum role	 rv[] = { ROLE_RELAYD, ROLE_SYNCD,
		  ROLE_DISCOVERYD, ROLE_HISTORYD };
	const char		*name;
	char   path[4096], fkey[64], want[80], *text, *sec, *end, *l;
	char   msg[160];
	long   mask, got;
	size_t i, j;

	T_EQ_INT(config_key_roles("log_level"), 0);
	T_EQ_INT(config_key_roles("NGIT_BIND_ADDRESS"), 1L << ROLE_RELAYD);
	T_EQ_INT(config_key_roles("nope"), -1);
	snprintf(path, sizeof(path), "%s/man/graspd.conf.5", srcdir());
	T_ASSERT((text = t_slurp(path, NULL)) != NULL);
	T_ASSERT((sec = strstr(text, "\n.Sh RELOADING\n")) != NULL);
	if ((end = strstr(sec + 1, "\n.Sh ")) != NULL)
		*end = '\0';
	for (i = 0; config_key_info(i, &name, NULL, NULL) == 0; i++) {
		got = config_key_roles(name);
		T_CHECK(got >= 0);
		file_key(name, fkey);
		if (strcmp(fkey, "log_level") == 0 ||
		    strcmp(fkey, "run_path") == 0)
			continue;
		snprintf(want, sizeof(want), "\n.Ic %s", fkey);
		/* The heading above the key's line. */
		mask = -1;
		for (l = sec; (l = strstr(l, "\n.It ")) != NULL; l++) {
			char *k = strstr(l + 1, want), *next;

			next = strstr(l + 1, "\n.It ");
			if (k == NULL || (next != NULL && k > next))
				continue;
			mask = 0;
			for (j = 0; j < 4; j++)
				if (strncmp(l + 5, "every role", 10) == 0 ||
				    (strstr(l + 5, rn[j]) != NULL &&
					strstr(l + 5, rn[j]) <
					    strchr(l + 5, '\n')))
					mask |= 1L << rv[j];
			break;
		}
		if (mask != got) {
			snprintf(msg, sizeof(msg),
			    "%s: graspd.conf(5) says "
			    "%#lx, config_key_roles() %#lx",
			    fkey, mask, got);
			t_fail_at(__FILE__, __LINE__, msg);
		}
	}
	free(text);
}

/* The n-th line of text (0-based) in out, "" past the end. */
static void
nth_line(const char *text, size_t n, char *out, size_t outlen)
{
	size_t len;

	for (; n > 0 && *text != '\0'; n--)
		text += strcspn(text, "\n") + (text[strcspn(text, "\n")] != 0);
	len = strcspn(text, "\n");
	snprintf(out, outlen, "%.*s", (int)len, text);
}

/*
 * Reload compares two configurations key by key through the table
 * (config_key_differs()): for a change of each type of key, the keys it
 * finds changed are exactly those whose config_dump() line changed (the
 * text diff reload used before), derived defaults included.
 */
static void
key_differs_agrees_with_the_dump_lines(void)
{
	static const char *const changes[][2] = {
		{ "", "relay_description = other\n" },
		{ "", "git_data_path = /tmp/elsewhere\n" },
		{ "", "domain = git.example.org\n" },
		{ "", "bind_address = 127.0.0.1:9999\n" },
		{ "", "relay_owner_nsec = " NSEC "\n" },
		{ "", "repository_whitelist = " NPUB "/repo\n" },
		{ "repository_whitelist = " NPUB "/repo\n",
		    "repository_whitelist = " NPUB "/other\n" },
		{ "", "event_blacklist = " NPUB "\n" },
		{ "", "sync_bootstrap_relay_url = wss://r.example.org\n" },
		{ "sync_plus_fallback_relays = wss://a.example, wss://b.example\n",
		    "sync_plus_fallback_relays = wss://b.example, "
		    "wss://a.example\n" },
		{ "", "archive_grasp_services = git.example.org\n" },
		{ "", "trusted_proxies = 10.0.0.0/8\n" },
		{ "", "relay_icon = https://example.org/i.png\n" },
		{ "", "public_url = https://git.example.org\n" },
		{ "", "max_connections = 10\n" },
		{ "", "archive_all = true\n" },
		{ "archive_all = true\n",
		    "archive_all = true\narchive_read_only = false\n" },
		{ "", "log_level = debug\n" },
		{ "", "durability = normal\n" },
	};
	struct config a, b;
	const char   *name;
	char	     *da, *db, la[512], lb[512], msg[600];
	size_t	      c, i;
	int	      any, want;

	for (c = 0; c < sizeof(changes) / sizeof(changes[0]); c++) {
		T_ASSERT(load_text(&a, changes[c][0]) == 0);
		T_ASSERT(load_text(&b, changes[c][1]) == 0);
		da = dump(&a);
		db = dump(&b);
		any = 0;
		for (i = 0; config_key_info(i, &name, NULL, NULL) == 0; i++) {
			nth_line(da, i, la, sizeof(la));
			nth_line(db, i, lb, sizeof(lb));
			want = strcmp(la, lb) != 0;
			T_EQ_INT(config_key_differs(&a, &a, i), 0);
			if (config_key_differs(&a, &b, i) != want ||
			    config_key_differs(&b, &a, i) != want) {
				snprintf(msg, sizeof(msg), "%s: %s (%s)",
				    changes[c][1], name,
				    want ? "differs" : "same");
				t_fail_at(__FILE__, __LINE__, msg);
			}
			any |= want;
		}
		T_CHECK(any);
		T_EQ_INT(config_key_differs(&a, &b, i), -1);
		free(da);
		free(db);
		config_free(&a);
		config_free(&b);
	}
}

/* Two secret keys dump alike ("set, redacted") but differ. */
static void
key_differs_sees_the_secret_key_the_dump_hides(void)
{
	struct config a, b;
	const char   *name;
	size_t	      i;
	char	     *da, *db;

	T_ASSERT(load_text(&a, "relay_owner_nsec = " NSEC "\n") == 0);
	T_ASSERT(
	    load_text(&b,
		"relay_owner_nsec = "
		"0101010101010101010101010101010101010101010101010101010101"
		"010101\n") == 0);
	da = dump(&a);
	db = dump(&b);
	T_CHECK(strcmp(da, db) == 0);
	for (i = 0; config_key_info(i, &name, NULL, NULL) == 0; i++)
		T_EQ_INT(config_key_differs(&a, &b, i),
		    strcmp(name, "NGIT_RELAY_OWNER_NSEC") == 0);
	free(da);
	free(db);
	config_free(&a);
	config_free(&b);
}

static void
only_log_level_is_reloadable(void)
{
	const char *name;
	size_t	    i;

	T_EQ_INT(config_key_reloadable("NGIT_LOG_LEVEL"), 1);
	T_EQ_INT(config_key_reloadable("log_level"), 1);
	T_EQ_INT(config_key_reloadable("NGIT_BIND_ADDRESS"), 0);
	T_EQ_INT(config_key_reloadable("nope"), -1);
	for (i = 0; config_key_info(i, &name, NULL, NULL) == 0; i++)
		if (strcmp(name, "NGIT_LOG_LEVEL") != 0)
			T_EQ_INT(config_key_reloadable(name), 0);
	T_EQ_INT(i, 61);
}

static void
sample_file_yields_defaults(void)
{
	struct config c;
	char	      path[1024];

	clear_env();
	snprintf(path, sizeof(path), "%s/etc/graspd.conf", srcdir());
	dumps_as_defaults(config_load(&c, path, err, sizeof(err)), &c);
}

/*
 * Every key of the table appears in etc/graspd.conf as "#key = default",
 * right under "# <help>", and uncommenting them all gives the defaults.
 */
static void
sample_file_lists_every_key(void)
{
	struct config c;
	struct buf    un = BUF_INIT;
	const char   *name, *def, *help;
	char	      path[1024], fkey[64], want[512], *text, *line, *prev;
	char	     *save;
	size_t	      i, nset = 0;
	int	      found;

	clear_env();
	snprintf(path, sizeof(path), "%s/etc/graspd.conf", srcdir());
	T_ASSERT((text = t_slurp(path, NULL)) != NULL);
	for (i = 0; config_key_info(i, &name, &def, &help) == 0; i++) {
		file_key(name, fkey);
		snprintf(want, sizeof(want), "#%s =%s%s", fkey, *def ? " " : "",
		    def);
		found = 0;
		prev = "";
		for (line = text; *line;) {
			size_t n = strcspn(line, "\n");

			if (strlen(want) == n && strncmp(line, want, n) == 0) {
				char h[512];

				found = 1;
				snprintf(h, sizeof(h), "# %s\n", help);
				if (!starts_with(prev, h)) {
					snprintf(h, sizeof(h), "help above %s",
					    fkey);
					t_fail_at(__FILE__, __LINE__, h);
				}
			}
			prev = line;
			line += n + (line[n] == '\n');
		}
		if (!found)
			t_fail_at(__FILE__, __LINE__, want);
	}

	/* Every "#key =" line names a known key; uncomment them all. */
	for (line = strtok_r(text, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		if (line[0] != '#' || line[1] < 'a' || line[1] > 'z')
			continue;
		name = line + 1;
		i = strcspn(name, " =");
		snprintf(fkey, sizeof(fkey), "%.*s", (int)i, name);
		if (config_key_reloadable(fkey) == -1)
			t_fail_at(__FILE__, __LINE__, fkey);
		buf_printf(&un, "%s\n", name);
		nset++;
	}
	free(text);
	T_EQ_INT(nset, 61);
	dumps_as_defaults(load_text(&c, un.b_data), &c);
	buf_free(&un);
}

static void
man_page_lists_every_key(void)
{
	const char *name;
	char	    path[1024], *text;
	size_t	    i;

	snprintf(path, sizeof(path), "%s/man/graspd.conf.5", srcdir());
	T_ASSERT((text = t_slurp(path, NULL)) != NULL);
	for (i = 0; config_key_info(i, &name, NULL, NULL) == 0; i++)
		if (strstr(text, name) == NULL)
			t_fail_at(__FILE__, __LINE__, name);
	free(text);
}

static void
unknown_environment_names_are_warned_about(void)
{
	char path[sizeof(tdir) + 32], *text;
	int  saved, fd;

	clear_env();
	setenv("NGIT_REJECTED_HOT_CACHE_DURATION_SECS", "60", 1);
	setenv("NGIT_DOMAIN", "example.org", 1);
	snprintf(path, sizeof(path), "%s/stderr", tdir);
	fflush(stderr);
	saved = dup(2);
	T_ASSERT((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) != -1);
	dup2(fd, 2);
	close(fd);
	config_warn_env();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	T_ASSERT((text = t_slurp(path, NULL)) != NULL);
	T_CHECK(strstr(text,
		    "NGIT_REJECTED_HOT_CACHE_DURATION_SECS is not a "
		    "graspd setting") != NULL);
	T_CHECK(strstr(text, "NGIT_DOMAIN") == NULL);
	free(text);
	clear_env();
}

static void
archive_defaults_off_and_read_only_follows(void)
{
	struct config c;

	clear_env();
	T_ASSERT(config_load(&c, NULL, err, sizeof(err)) == 0);
	T_EQ_INT(c.archive_all, 0);
	T_EQ_INT(c.archive_whitelist.n, 0);
	T_EQ_INT(c.archive_grasp_services.n, 0);
	T_EQ_INT(c.archive_read_only, 0);
	T_EQ_INT(config_archiving(&c), 0);
	config_free(&c);
	/* Read-only defaults to true once any archive mode is on. */
	T_ASSERT(load_text(&c, "archive_all = true\n") == 0);
	T_EQ_INT(config_archiving(&c), 1);
	T_EQ_INT(c.archive_read_only, 1);
	config_free(&c);
	T_ASSERT(load_text(&c,
		     "archive_whitelist = " NPUB "/linux, bitcoin\n") == 0);
	T_EQ_INT(c.archive_whitelist.n, 2);
	T_CHECK(c.archive_whitelist.v[0].has_pubkey);
	T_EQ_STR(c.archive_whitelist.v[0].identifier, "linux");
	T_EQ_STR(c.archive_whitelist.v[1].identifier, "bitcoin");
	T_EQ_INT(c.archive_read_only, 1);
	config_free(&c);
	/* An explicit false keeps archived repositories writable. */
	setenv("NGIT_ARCHIVE_GRASP_SERVICES",
	    " git.example.com , ,"
	    "localhost:7334",
	    1);
	setenv("NGIT_ARCHIVE_READ_ONLY", "false", 1);
	T_ASSERT(config_load(&c, NULL, err, sizeof(err)) == 0);
	T_EQ_INT(c.archive_grasp_services.n, 2);
	T_EQ_STR(c.archive_grasp_services.v[0], "git.example.com");
	T_EQ_STR(c.archive_grasp_services.v[1], "localhost:7334");
	T_EQ_INT(c.archive_read_only, 0);
	T_EQ_INT(config_archiving(&c), 1);
	config_free(&c);
	clear_env();
}

static void
archive_conflicts_are_errors(void)
{
	struct config c;

	clear_env();
	T_EQ_INT(load_text(&c,
		     "archive_all = true\n"
		     "archive_grasp_services = git.example.com\n"),
	    -1);
	T_CHECK(strstr(err, "NGIT_ARCHIVE_GRASP_SERVICES") != NULL &&
	    strstr(err, "NGIT_ARCHIVE_ALL") != NULL);
	T_EQ_INT(load_text(&c,
		     "archive_whitelist = linux\n"
		     "archive_grasp_services = git.example.com\n"),
	    -1);
	T_CHECK(strstr(err, "NGIT_ARCHIVE_WHITELIST") != NULL);
	T_EQ_INT(load_text(&c, "archive_read_only = true\n"), -1);
	T_CHECK(strstr(err, "NGIT_ARCHIVE_READ_ONLY") != NULL);
	/* A repository whitelist with a read-only archive, explicit or
	 * by default. */
	T_EQ_INT(load_text(&c,
		     "archive_all = yes\n"
		     "repository_whitelist = linux\n"),
	    -1);
	T_CHECK(starts_with(err, "NGIT_REPOSITORY_WHITELIST"));
	T_ASSERT(load_text(&c,
		     "archive_all = yes\narchive_read_only = no\n"
		     "repository_whitelist = linux\n") == 0);
	config_free(&c);
	/* Services are bare host[:port]. */
	T_EQ_INT(load_text(&c,
		     "archive_grasp_services = wss://git.example."
		     "com\n"),
	    -1);
	T_CHECK(strstr(err, "archive_grasp_services") != NULL &&
	    strstr(err, "no scheme") != NULL);
	T_EQ_INT(load_text(&c, "archive_grasp_services = git.example.com:0\n"),
	    -1);
	T_EQ_INT(load_text(&c, "archive_read_only = maybe\n"), -1);
	T_CHECK(strstr(err, "not a boolean") != NULL);
}

static int
config_setup(void)
{
	if (tdir_make(tdir, sizeof(tdir), "config_test") == -1)
		return 2;
	snprintf(conf, sizeof(conf), "%s/graspd.conf", tdir);
	return 0;
}

static void
config_cleanup(void)
{
	clear_env();
	tdir_remove(tdir);
}

static const struct t_case cases[] = {
	T_CASE(defaults_without_file),
	T_CASE(file_sets_values_in_both_spellings),
	T_CASE(domain_defaults_to_bind_address_from_file),
	T_CASE(environment_beats_file),
	T_CASE(empty_environment_variable_is_unset),
	T_CASE(empty_file_value_selects_default),
	T_CASE(quoted_values),
	T_CASE(bad_quoting_is_an_error),
	T_CASE(unknown_key_names_line),
	T_CASE(no_per_user_fallback_knobs),
	T_CASE(line_without_equals_is_an_error),
	T_CASE(duplicate_key_is_an_error),
	T_CASE(missing_file_is_an_error),
	T_CASE(bad_values_name_the_key),
	T_CASE(trusted_proxies_keep_each_range),
	T_CASE(proxied_shape_without_trusted_proxies_warns),
	T_CASE(bad_file_value_names_line_and_key),
	T_CASE(secret_key_never_appears_in_errors),
	T_CASE(bind_address_forms),
	T_CASE(domain_forms),
	T_CASE(public_url_defaults_from_domain_and_is_checked),
	T_CASE(lists_are_trimmed_and_skip_empty_items),
	T_CASE(event_blacklist_takes_npub_and_hex),
	T_CASE(whitelist_entry_forms),
	T_CASE(whitelist_bad_npub_names_key),
	T_CASE(relay_urls_the_roles_would_refuse_are_errors),
	T_CASE(backoff_max_below_base_is_an_error),
	T_CASE(owner_key_from_config_wins),
	T_CASE(owner_key_file_created_0600_and_stable),
	T_CASE(owner_key_file_bad_contents_is_an_error),
	T_CASE(test_mode_scales_timing),
	T_CASE(dump_redacts_secret_key),
	T_CASE(dump_round_trips),
	T_CASE(only_log_level_is_reloadable),
	T_CASE(key_differs_agrees_with_the_dump_lines),
	T_CASE(key_differs_sees_the_secret_key_the_dump_hides),
	T_CASE(reload_restarts_the_roles_graspd_conf_5_names),
	T_CASE(sample_file_yields_defaults),
	T_CASE(sample_file_lists_every_key),
	T_CASE(man_page_lists_every_key),
	T_CASE(unknown_environment_names_are_warned_about),
	T_CASE(archive_defaults_off_and_read_only_follows),
	T_CASE(archive_conflicts_are_errors),
};

T_MAIN_WITH(cases, config_setup, config_cleanup, 0)
