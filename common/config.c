/*
 * config.c: graspd.conf and its NGIT_* environment overrides (see
 * config.h).  Every process loads it at start: the supervisor to check and
 * dump it (graspd -n), each role from the file it was exec'd with.
 *
 * The keys live in one table below; the parser, the environment overlay,
 * the dump and the reload policy all walk it.  etc/graspd.conf and
 * man/graspd.conf.5 repeat it for people, and config_test checks the
 * sample against it.
 */
#include <sys/random.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "log.h"
#include "mem.h"
#include "msg.h"
#include "nip19.h"
#include "proxyhdr.h"
#include "relayurl.h"

enum cfg_type {
	CT_STR,	    /* free text, one line */
	CT_PATH,    /* absolute path */
	CT_DOMAIN,  /* host[:port] */
	CT_BIND,    /* host:port, IPv6 as [addr]:port */
	CT_SECKEY,  /* nsec or hex */
	CT_REPOS,   /* list of npub, npub/identifier, identifier */
	CT_KEYS,    /* list of npub or hex public keys */
	CT_URL,	    /* relay URL, wss:// assumed without a scheme */
	CT_URLS,    /* list of relay URLs */
	CT_DOMAINS, /* list of host[:port] */
	CT_NETS,    /* list of addresses and address/prefix ranges */
	CT_WEBURL,  /* http:// or https:// URL */
	CT_WEBBASE, /* http:// or https:// host[:port], no path */
	CT_INT,
	CT_BOOL,
	CT_OPTBOOL, /* a boolean, or -1 when unset */
	CT_LOGLEVEL,
	CT_DURABILITY, /* full or normal (enum cfg_durability) */
};


struct cfg_key {
	const char   *ck_name; /* environment spelling */
	enum cfg_type ck_type;
	size_t	      ck_off;	      /* field in struct config */
	const char   *ck_def;	      /* default, as the file writes it */
	long	      ck_min, ck_max; /* CT_INT only */
	const char   *ck_help;	      /* the comment in etc/graspd.conf */
	long	      ck_roles;	      /* the roles a change restarts */
};

#define F(field) offsetof(struct config, field)
/* Roles a change of a key restarts; graspd.conf(5) RELOADING says the
 * same (config_test compares them).  None: applied live (log_level). */
#define R(r)	 (1L << ROLE_##r)
#define R_ROLES	 (R(SYNCD) | R(DISCOVERYD) | R(HISTORYD))
#define R_ALL	 (R(RELAYD) | R_ROLES)

/*
 * Every key graspd knows, in the order of etc/graspd.conf.  Defaults that
 * depend on other keys (NGIT_DOMAIN, NGIT_RELAY_NAME) or on a file
 * (NGIT_RELAY_OWNER_NSEC) are "" here and filled in by cfg_finish() and
 * config_owner_key().
 */
static const struct cfg_key cfg_keys[] = {
	{ "NGIT_DOMAIN", CT_DOMAIN, F(domain), "", 0, 0,
	    "Public host[:port] of this relay; empty means the bind address",
	    R_ALL },
	{ "NGIT_PUBLIC_URL", CT_WEBBASE, F(public_url), "", 0, 0,
	    "Public base URL, e.g. https://git.example.org; empty: "
	    "http://<domain>",
	    R(RELAYD) },
	{ "NGIT_BIND_ADDRESS", CT_BIND, F(bind_address), "127.0.0.1:7334", 0, 0,
	    "Address and port to listen on; IPv6 is written [::1]:7334",
	    R(RELAYD) },
	{ "NGIT_RELAY_DATA_PATH", CT_PATH, F(relay_data_path),
	    "/var/lib/graspd/relay", 0, 0,
	    "Directory of the event database and the relay owner key file",
	    R_ALL },
	{ "NGIT_GIT_DATA_PATH", CT_PATH, F(git_data_path),
	    "/var/lib/graspd/git", 0, 0,
	    "Directory of the hosted bare git repositories",
	    R(RELAYD) | R(SYNCD) },
	{ "NGIT_RUN_PATH", CT_PATH, F(run_path), "/run/graspd", 0, 0,
	    "Directory of the control and message sockets", R_ALL },
	{ "NGIT_USER", CT_STR, F(user), "graspd", 0, 0,
	    "User the roles run as when graspd starts as root; root keeps "
	    "them root",
	    R_ALL },
	{ "NGIT_RELAY_NAME", CT_STR, F(relay_name), "", 0, 0,
	    "NIP-11 relay name; empty means \"<domain> grasp relay\"",
	    R(RELAYD) },
	{ "NGIT_RELAY_DESCRIPTION", CT_STR, F(relay_description),
	    "Git Nostr Relay - a grasp implementation", 0, 0,
	    "NIP-11 relay description", R(RELAYD) },
	{ "NGIT_RELAY_CONTACT", CT_STR, F(relay_contact), "", 0, 0,
	    "NIP-11 contact of the operator (mailto: or https: URL, or npub)",
	    R(RELAYD) },
	{ "NGIT_RELAY_SOFTWARE", CT_STR, F(relay_software), "graspd", 0, 0,
	    "NIP-11 software: the relay's program, a name or its project URL",
	    R(RELAYD) },
	{ "NGIT_RELAY_ICON", CT_WEBURL, F(relay_icon), "", 0, 0,
	    "NIP-11 icon URL; empty means <public_url>/icon.png, served "
	    "built in",
	    R(RELAYD) },
	/* conn.c signs the roles' NIP-42 answers with it too. */
	{ "NGIT_RELAY_OWNER_NSEC", CT_SECKEY, F(owner_sk), "", 0, 0,
	    "Relay secret key, nsec or hex; empty: .relay-owner.nsec in "
	    "relay_data_path",
	    R_ALL },
	{ "NGIT_REPOSITORY_WHITELIST", CT_REPOS, F(repo_whitelist), "", 0, 0,
	    "Host only these repositories: npub, npub/id or id, "
	    "comma-separated",
	    R(RELAYD) },
	{ "NGIT_REPOSITORY_BLACKLIST", CT_REPOS, F(repo_blacklist), "", 0, 0,
	    "Never host these repositories (same forms); beats the whitelist",
	    R(RELAYD) },
	{ "NGIT_ARCHIVE_ALL", CT_BOOL, F(archive_all), "false", 0, 0,
	    "GRASP-05: archive every announcement, listing this service or not "
	    "(storage risk)",
	    R(RELAYD) },
	{ "NGIT_ARCHIVE_WHITELIST", CT_REPOS, F(archive_whitelist), "", 0, 0,
	    "GRASP-05: archive these repositories (npub, npub/id or id) even if "
	    "they do not list this service",
	    R(RELAYD) },
	{ "NGIT_ARCHIVE_GRASP_SERVICES", CT_DOMAINS, F(archive_grasp_services),
	    "", 0, 0,
	    "GRASP-05: archive repositories cloned from these host[:port] "
	    "services; not with the two above",
	    R(RELAYD) },
	{ "NGIT_ARCHIVE_READ_ONLY", CT_OPTBOOL, F(archive_read_only), "", 0, 0,
	    "GRASP-05: refuse pushes to archived repositories; empty: true "
	    "while archiving",
	    R(RELAYD) },
	{ "NGIT_EVENT_BLACKLIST", CT_KEYS, F(event_blacklist), "", 0, 0,
	    "Refuse every event by these authors: npub or hex, comma-separated",
	    R(RELAYD) },
	{ "NGIT_MAX_CONNECTIONS", CT_INT, F(max_connections), "4096", 1,
	    1048576, "Most websocket connections served at once", R(RELAYD) },
	{ "NGIT_MAX_CONNECTIONS_PER_IP", CT_INT, F(max_connections_per_ip),
	    "64", 0, 1048576,
	    "Most websocket connections from one IP address; 0 is no limit",
	    R(RELAYD) },
	{ "NGIT_MAX_EVENTS_PER_MINUTE", CT_INT, F(max_events_per_minute), "60",
	    0, 1000000,
	    "Most events one client connection may send per minute; 0 is no "
	    "limit",
	    R(RELAYD) },
	{ "NGIT_MAX_EVENTS_PER_MINUTE_PER_IP", CT_INT,
	    F(max_events_per_minute_per_ip), "600", 0, 100000000,
	    "Most events per minute from one IP address, all connections; 0 is "
	    "no limit",
	    R(RELAYD) },
	/*
	 * A NIP-34 patch is one event: 512 KiB holds a patch of some
	 * thousands of lines, eight times strfry's 64 KiB maxEventSize
	 * default.  At most the 1 MiB message less ["EVENT",...]'s 10 bytes.
	 */
	{ "NGIT_MAX_EVENT_SIZE", CT_INT, F(max_event_size), "524288", 1024,
	    1048566,
	    "Most bytes of an event's JSON, tags included (NIP-11 "
	    "max_event_size)",
	    R(RELAYD) },
	{ "NGIT_MAX_READ_STALL_SECS", CT_INT, F(max_read_stall_secs), "60", 1,
	    86400,
	    "Close a websocket that reads none of a REQ answer for this many "
	    "seconds",
	    R(RELAYD) },
	{ "NGIT_MAX_GIT_REQUESTS_PER_IP", CT_INT, F(max_git_requests_per_ip),
	    "8", 0, 1048576,
	    "Most git smart HTTP requests served at once to one IP address; 0 "
	    "is no limit",
	    R(RELAYD) },
	/*
	 * Each push of 100 objects or more leaves a pack (receive-pack's
	 * unpackLimit): 50 is git's own gc.autoPackLimit, the pack count
	 * at which "git gc --auto" repacks.
	 */
	{ "NGIT_GIT_MAINTENANCE_PUSHES", CT_INT, F(git_maintenance_pushes),
	    "50", 0, 1000000,
	    "Repack a hosted repository in the background after this many "
	    "pushes; 0 is never",
	    R(RELAYD) },
	{ "NGIT_GIT_MAINTENANCE_HOURS", CT_INT, F(git_maintenance_hours), "24",
	    0, 8760,
	    "Repack a hosted repository this many hours after a push not yet "
	    "repacked; 0 is never",
	    R(RELAYD) },
	{ "NGIT_MAX_PENDING_PER_IP", CT_INT, F(max_pending_per_ip), "8", 0,
	    1048576,
	    "Most connections from one IP address still sending their request "
	    "headers; 0 is no limit",
	    R(RELAYD) },
	{ "NGIT_HEADER_TIMEOUT", CT_INT, F(header_timeout), "10", 1, 3600,
	    "Seconds a connection has to send its request headers", R(RELAYD) },
	{ "NGIT_WS_PING_INTERVAL", CT_INT, F(ws_ping_interval), "120", 0, 36000,
	    "Seconds after its last pong a websocket is pinged; 0 never pings "
	    "or closes an idle one",
	    R(RELAYD) },
	{ "NGIT_WS_PONG_TIMEOUT", CT_INT, F(ws_pong_timeout), "30", 1, 3600,
	    "Seconds a pinged websocket has to answer before it is closed",
	    R(RELAYD) },
	{ "NGIT_WS_FRAME_TIMEOUT", CT_INT, F(ws_frame_timeout), "30", 0, 3600,
	    "Seconds a websocket frame may take from its first byte to its "
	    "last; 0 is no limit",
	    R(RELAYD) },
	{ "NGIT_IPV6_PREFIX", CT_INT, F(ipv6_prefix), "64", 1, 128,
	    "Per-address limits count IPv6 clients by this prefix length; 128 "
	    "is each address",
	    R(RELAYD) },
	{ "NGIT_TRUSTED_PROXIES", CT_NETS, F(trusted_proxies), "", 0, 0,
	    "Reverse proxies whose X-Forwarded-For or PROXY header names the "
	    "client: addresses or address/prefix, comma-separated",
	    R(RELAYD) },
	{ "NGIT_PROXY_PROTOCOL", CT_BOOL, F(proxy_protocol), "false", 0, 0,
	    "Every connection starts with a PROXY v1 or v2 header from a "
	    "trusted proxy",
	    R(RELAYD) },
	{ "NGIT_MAX_REPOS_PER_OWNER", CT_INT, F(max_repos_per_owner), "100", 0,
	    1000000,
	    "Most repositories hosted for one owner key; 0 is no limit",
	    R(RELAYD) },
	{ "NGIT_MAX_PUSH_BYTES", CT_INT, F(max_push_bytes), "104857600", 0,
	    INT_MAX, "Most bytes one git push may send; 0 is no limit",
	    R(RELAYD) },
	{ "NGIT_MAX_REPO_BYTES", CT_INT, F(max_repo_bytes), "1073741824", 0,
	    INT_MAX,
	    "Most bytes of git objects one repository may hold after a push; 0 "
	    "is no limit",
	    R(RELAYD) },
	{ "NGIT_MIN_FREE_DISK_MB", CT_INT, F(min_free_disk_mb), "256", 0,
	    INT_MAX,
	    "Refuse events and pushes while a data file system has fewer MiB "
	    "free; 0 is no floor",
	    R(RELAYD) },
	{ "NGIT_WAL_ROOM_MB", CT_INT, F(wal_room_mb), "640", 0, 1048576,
	    "MiB of disk the database's WAL file keeps written out between "
	    "bursts of events, filled while commits pause; 0 grows it as "
	    "commits need",
	    R(RELAYD) },
	{ "NGIT_DURABILITY", CT_DURABILITY, F(durability), "full", 0, 0,
	    "full: an OK'd event is on stable storage; normal: a power cut "
	    "may lose the last ones",
	    R(RELAYD) },
	{ "NGIT_LOG_LEVEL", CT_LOGLEVEL, F(log_level), "info", 0, 0,
	    "Most verbose log level: error, warn, info or debug", 0 },
	{ "NGIT_TEST", CT_BOOL, F(test), "false", 0, 0,
	    "Test timing: periodic work every 200 ms, long delays 60 times "
	    "shorter",
	    R_ALL },
	{ "NGIT_METRICS_ENABLED", CT_BOOL, F(metrics_enabled), "true", 0, 0,
	    "Serve Prometheus metrics at /metrics on the relay port",
	    R(RELAYD) },
	{ "NGIT_SYNC_ENABLED", CT_BOOL, F(sync_enabled), "true", 0, 0,
	    "Sync hosted repositories' events from other relays (GRASP-02)",
	    R_ALL },
	{ "NGIT_SYNC_BOOTSTRAP_RELAY_URL", CT_URL, F(sync_bootstrap_relay_url),
	    "", 0, 0,
	    "Relay to start sync and discovery from; wss:// if no scheme",
	    R(SYNCD) | R(DISCOVERYD) },
	{ "NGIT_SYNC_BASE_BACKOFF_SECS", CT_INT, F(sync_base_backoff_secs), "5",
	    1, 86400,
	    "First reconnect delay and connect timeout for other relays, "
	    "seconds",
	    R_ROLES },
	{ "NGIT_SYNC_MAX_BACKOFF_SECS", CT_INT, F(sync_max_backoff_secs),
	    "3600", 1, 604800,
	    "Longest reconnect delay for other relays, seconds", R_ROLES },
	{ "NGIT_SYNC_DISABLE_NEGENTROPY", CT_BOOL, F(sync_disable_negentropy),
	    "false", 0, 0,
	    "Sync with REQ and EOSE only, never NIP-77 negentropy", R(SYNCD) },
	{ "NGIT_SYNC_ALLOW_PRIVATE_TARGETS", CT_BOOL,
	    F(sync_allow_private_targets), "false", 0, 0,
	    "Let sync dial loopback and private addresses (tests, private "
	    "networks)",
	    R_ROLES },
	{ "NGIT_SYNC_PLUS_ENABLED", CT_BOOL, F(sync_plus_enabled), "true", 0, 0,
	    "Proactive sync plus (GRASP-03): follow participants' mailboxes",
	    R_ALL },
	{ "NGIT_SYNC_PLUS_USER_INDEX_RELAYS", CT_URLS,
	    F(sync_plus_user_index_relays), "", 0, 0,
	    "Relays to look up authors' kind 0 and 10002 on, comma-separated",
	    R(DISCOVERYD) },
	{ "NGIT_SYNC_PLUS_FALLBACK_RELAYS", CT_URLS,
	    F(sync_plus_fallback_relays), "", 0, 0,
	    "Mailboxes for authors found without a relay list, comma-separated",
	    R_ROLES },
	{ "NGIT_PRIVATE_MODE", CT_BOOL, F(private_mode), "false", 0, 0,
	    "Private instance: no repository-scoped probes of owners' inboxes",
	    R(HISTORYD) },
	{ "NGIT_GRASP06_ENABLE", CT_BOOL, F(grasp06_enable), "false", 0, 0,
	    "Serve contributors' pull request refs at /prs/<npub>/<d>.git "
	    "(GRASP-06)",
	    R(RELAYD) },
	{ "NGIT_GRASP06_MAX_BYTES_PER_REF", CT_INT,
	    F(grasp06_max_bytes_per_ref), "52428800", 1, INT_MAX,
	    "Most bytes a /prs/ push may send per ref it writes (GRASP-06)",
	    R(RELAYD) },
	{ "NGIT_GRASP06_MAX_BYTES_PER_SIGNER", CT_INT,
	    F(grasp06_max_bytes_per_signer), "524288000", 1, INT_MAX,
	    "Most bytes one signer's /prs/ repositories may hold (GRASP-06)",
	    R(RELAYD) },
	{ "NGIT_GRASP06_UNCLAIMED_BYTES_PER_IP", CT_INT,
	    F(grasp06_unclaimed_bytes_per_ip), "104857600", 1, INT_MAX,
	    "Most bytes of /prs/ pushes no PR event has claimed yet that one "
	    "address may have here (GRASP-06)",
	    R(RELAYD) },
	{ "NGIT_GRASP06_UNCLAIMED_BYTES", CT_INT, F(grasp06_unclaimed_bytes),
	    "1073741824", 1, INT_MAX,
	    "Most bytes of /prs/ pushes no PR event has claimed yet, from "
	    "all addresses together (GRASP-06)",
	    R(RELAYD) },
};

#define CFG_NKEYS     (sizeof(cfg_keys) / sizeof(cfg_keys[0]))
#define CFG_PREFIX    "NGIT_"
/* How much of a bad value an error message quotes. */
#define CFG_QUOTE_MAX 64

#define FIELD(cfg, k, T) ((T *)(void *)((char *)(cfg) + (k)->ck_off))

/* The file spelling of a key: lower case, without "NGIT_". */
static void
cfg_file_name(const struct cfg_key *k, char *out, size_t outlen)
{
	const char *s = k->ck_name + strlen(CFG_PREFIX);
	size_t	    i;

	for (i = 0; s[i] != '\0' && i + 1 < outlen; i++)
		out[i] = (char)tolower((unsigned char)s[i]);
	out[i] = '\0';
}

static const struct cfg_key *
cfg_lookup(const char *name)
{
	char   lname[64];
	size_t i;

	for (i = 0; i < CFG_NKEYS; i++) {
		if (strcmp(name, cfg_keys[i].ck_name) == 0)
			return &cfg_keys[i];
		cfg_file_name(&cfg_keys[i], lname, sizeof(lname));
		if (strcmp(name, lname) == 0)
			return &cfg_keys[i];
	}
	return NULL;
}

static int
is_blank(int c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' ||
	    c == '\f';
}

/* Trims blanks from both ends of s in place; returns the new start. */
static char *
trim(char *s)
{
	size_t n;

	while (is_blank((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n > 0 && is_blank((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

static int
has_ctrl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

static int
has_space_or_ctrl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

static void
repo_rules_free(struct cfg_repo_rules *rr)
{
	size_t i;

	for (i = 0; i < rr->n; i++)
		free(rr->v[i].identifier);
	free(rr->v);
	rr->v = NULL;
	rr->n = 0;
}

/* Frees what a key's field holds and leaves it empty. */
static void
cfg_clear(struct config *cfg, const struct cfg_key *k)
{
	struct cfg_keys *ks;
	struct cfg_strs *ss;

	switch (k->ck_type) {
	case CT_STR:
	case CT_PATH:
	case CT_DOMAIN:
	case CT_URL:
	case CT_WEBURL:
	case CT_WEBBASE:
		free(*FIELD(cfg, k, char *));
		*FIELD(cfg, k, char *) = NULL;
		break;
	case CT_BIND:
		free(cfg->bind_address);
		free(cfg->bind_host);
		cfg->bind_address = cfg->bind_host = NULL;
		cfg->bind_port = 0;
		break;
	case CT_SECKEY:
		explicit_bzero(cfg->owner_sk, sizeof(cfg->owner_sk));
		cfg->has_owner_sk = 0;
		break;
	case CT_REPOS:
		repo_rules_free(FIELD(cfg, k, struct cfg_repo_rules));
		break;
	case CT_KEYS:
		ks = FIELD(cfg, k, struct cfg_keys);
		free(ks->v);
		ks->v = NULL;
		ks->n = 0;
		break;
	case CT_URLS:
	case CT_DOMAINS:
	case CT_NETS:
		ss = FIELD(cfg, k, struct cfg_strs);
		strv_clear(&ss->v, &ss->n);
		break;
	case CT_OPTBOOL:
		*FIELD(cfg, k, int) = -1;
		break;
	case CT_INT:
	case CT_BOOL:
	case CT_LOGLEVEL:
	case CT_DURABILITY:
		break;
	}
}

/*
 * Splits host[:port] (port_required: host:port).  IPv6 literals must be
 * bracketed.  On success *hostp is a new string without brackets and
 * *portp the port or 0; returns NULL.  Otherwise returns the reason.
 */
static const char *
parse_hostport(const char *v, int port_required, char **hostp, int *portp)
{
	struct in6_addr a6;
	struct in_addr	a4;
	const char     *p, *port = NULL, *label;
	char		host[256];
	size_t		hlen, llen;
	long		n;
	int		alldigits;

	*hostp = NULL;
	*portp = 0;
	if (v[0] == '[') {
		if ((p = strchr(v, ']')) == NULL)
			return "has no closing ']'";
		hlen = (size_t)(p - v - 1);
		if (hlen == 0 || hlen >= sizeof(host))
			return "is not an IPv6 address in brackets";
		memcpy(host, v + 1, hlen);
		host[hlen] = '\0';
		if (inet_pton(AF_INET6, host, &a6) != 1)
			return "is not an IPv6 address in brackets";
		if (p[1] == ':')
			port = p + 2;
		else if (p[1] != '\0')
			return "has junk after ']'";
	} else {
		if ((p = strchr(v, ':')) != NULL && strchr(p + 1, ':') != NULL)
			return "is an IPv6 address without brackets";
		hlen = p ? (size_t)(p - v) : strlen(v);
		if (hlen == 0)
			return "has no host";
		if (hlen >= sizeof(host))
			return "has a host name that is too long";
		memcpy(host, v, hlen);
		host[hlen] = '\0';
		if (p)
			port = p + 1;
		if (inet_pton(AF_INET, host, &a4) != 1) {
			/* RFC 1123 names; an all-digit last label is none. */
			if (hlen > 253)
				return "has a host name that is too long";
			label = host;
			alldigits = 1;
			for (p = host;; p++) {
				if (*p == '.' || *p == '\0') {
					llen = (size_t)(p - label);
					if (llen == 0 || llen > 63 ||
					    label[0] == '-' || p[-1] == '-')
						return "is not an IP address "
						       "or host name";
					if (*p == '\0')
						break;
					label = p + 1;
					alldigits = 1;
					continue;
				}
				if (!isalnum((unsigned char)*p) && *p != '-')
					return "is not an IP address or "
					       "host name";
				if (!isdigit((unsigned char)*p))
					alldigits = 0;
			}
			if (alldigits)
				return "is not an IP address or host name";
		}
	}
	if (port == NULL) {
		if (port_required)
			return "has no port (host:port)";
	} else {
		if (*port == '\0' ||
		    strspn(port, "0123456789") != strlen(port) ||
		    strlen(port) > 5)
			return "has a port that is not a number";
		n = strtol(port, NULL, 10);
		if (n < 1 || n > 65535)
			return "has a port outside 1-65535";
		*portp = (int)n;
	}
	*hostp = xstrdup(host);
	return NULL;
}

/*
 * Checks an http:// or https:// URL (base: nothing after host[:port] but
 * one optional "/") and returns it as stored (a new string, the scheme in
 * lower case, a base without its trailing "/"), or NULL with the reason
 * in *why.
 */
static char *
parse_web_url(const char *v, int base, const char **why)
{
	const char *rest, *end;
	char	   *url, *hp, *host;
	int	    port, tls;

	if (has_space_or_ctrl(v)) {
		*why = "is not a URL (it contains blanks)";
		return NULL;
	}
	tls = strncasecmp(v, "https://", 8) == 0;
	if (!tls && strncasecmp(v, "http://", 7) != 0) {
		*why = "is not an http:// or https:// URL";
		return NULL;
	}
	rest = v + (tls ? 8 : 7);
	end = rest + strcspn(rest, "/?#");
	if (base && *end != '\0' && strcmp(end, "/") != 0) {
		*why = "has a path, query or fragment (write scheme://host"
		       "[:port])";
		return NULL;
	}
	if (memchr(rest, '@', (size_t)(end - rest)) != NULL) {
		*why = "has user information";
		return NULL;
	}
	if ((hp = strndup(rest, (size_t)(end - rest))) == NULL)
		fatal("config");
	*why = parse_hostport(hp, 0, &host, &port);
	free(hp);
	free(host);
	if (*why != NULL)
		return NULL;
	if (base && *end == '/')
		url = strndup(v, (size_t)(end - v));
	else
		url = strdup(v);
	if (url == NULL)
		fatal("config");
	memcpy(url, tls ? "https://" : "http://", tls ? 8 : 7);
	return url;
}

/*
 * Checks a relay URL and returns it as stored (a new string, "wss://"
 * prepended when it has no scheme), or NULL with the reason in *why.
 * Only the shape is checked here; common/relayurl.c canonicalizes.
 */
static char *
parse_relay_url(const char *v, const char **why)
{
	const char *rest, *p;
	char	   *url;
	size_t	    n;

	if (has_space_or_ctrl(v)) {
		*why = "is not a relay URL (it contains blanks)";
		return NULL;
	}
	if ((p = strstr(v, "://")) == NULL) {
		n = strlen(v) + sizeof("wss://");
		if ((url = malloc(n)) == NULL)
			fatal("config");
		snprintf(url, n, "wss://%s", v);
		rest = url + strlen("wss://");
	} else {
		if (!((p - v == 2 && strncasecmp(v, "ws", 2) == 0) ||
			(p - v == 3 && strncasecmp(v, "wss", 3) == 0))) {
			*why = "is not a relay URL (ws:// or wss://)";
			return NULL;
		}
		url = xstrdup(v);
		/* Store the scheme in lower case. */
		for (n = 0; n < (size_t)(p - v); n++)
			url[n] = (char)tolower((unsigned char)url[n]);
		rest = url + (p - v) + 3;
	}
	if (strchr("/?#:", *rest) != NULL) {
		free(url);
		*why = "is not a relay URL (no host)";
		return NULL;
	}
	/* The roles read it as a trusted relay URL: refuse here what they
	 * would refuse, so that `graspd -n` says so. */
	{
		char	    key[RELAYURL_MAX + 1];
		const char *rwhy;

		if (relayurl_canon(url, strlen(url), RELAYURL_TRUSTED, key,
			sizeof(key), &rwhy) == -1) {
			free(url);
			*why = rwhy;
			return NULL;
		}
	}
	return url;
}

/* Calls fn on each trimmed, non-empty item of the comma list v. */
static int
for_each_item(char *v, int (*fn)(void *, const char *, char *, size_t),
    void *arg, char *why, size_t whylen)
{
	char *item, *next;

	for (item = v; item != NULL; item = next) {
		if ((next = strchr(item, ',')) != NULL)
			*next++ = '\0';
		item = trim(item);
		if (*item == '\0')
			continue;
		if (fn(arg, item, why, whylen) == -1)
			return -1;
	}
	return 0;
}

static int
add_repo_rule(void *arg, const char *item, char *why, size_t whylen)
{
	struct cfg_repo_rules *rr = arg;
	struct cfg_repo_rule   r;
	const char	      *slash, *id = NULL;
	char		       npub[NIP19_MAX_LEN + 1];
	size_t		       n;

	memset(&r, 0, sizeof(r));
	if ((slash = strchr(item, '/')) != NULL) {
		n = (size_t)(slash - item);
		id = slash + 1;
	} else if (strncasecmp(item, "npub1", 5) == 0)
		n = strlen(item);
	else {
		n = 0;
		id = item;
	}
	if (slash != NULL || n > 0) {
		if (n > NIP19_MAX_LEN)
			n = NIP19_MAX_LEN;
		memcpy(npub, item, n);
		npub[n] = '\0';
		if (nip19_decode(npub, "npub", r.pubkey) == -1) {
			snprintf(why, whylen, "\"%.*s\" is not a valid npub",
			    CFG_QUOTE_MAX, npub);
			return -1;
		}
		r.has_pubkey = 1;
	}
	if (id != NULL) {
		if (*id == '\0' || has_space_or_ctrl(id)) {
			snprintf(why, whylen, "\"%.*s\" has %s identifier",
			    CFG_QUOTE_MAX, item, *id ? "a bad" : "an empty");
			return -1;
		}
		r.identifier = xstrdup(id);
	}
	rr->v = xreallocarray(rr->v, rr->n + 1, sizeof(*rr->v));
	rr->v[rr->n++] = r;
	return 0;
}

static int
add_pubkey(void *arg, const char *item, char *why, size_t whylen)
{
	struct cfg_keys *ks = arg;
	uint8_t		 pk[PUBKEY_LEN];

	if (key_parse_pubkey(item, pk) == -1) {
		snprintf(why, whylen,
		    "\"%.*s\" is not an npub or 64-digit lowercase hex public key",
		    CFG_QUOTE_MAX, item);
		return -1;
	}
	ks->v = xreallocarray(ks->v, ks->n + 1, sizeof(*ks->v));
	memcpy(ks->v[ks->n++], pk, PUBKEY_LEN);
	return 0;
}

static int
add_url(void *arg, const char *item, char *why, size_t whylen)
{
	struct cfg_strs *ss = arg;
	const char	*reason;
	char		*url;

	if ((url = parse_relay_url(item, &reason)) == NULL) {
		snprintf(why, whylen, "\"%.*s\" %s", CFG_QUOTE_MAX, item,
		    reason);
		return -1;
	}
	ss->v = xreallocarray(ss->v, ss->n + 1, sizeof(*ss->v));
	ss->v[ss->n++] = url;
	return 0;
}

/* A bare host[:port], as NGIT_DOMAIN is written. */
static int
add_domain(void *arg, const char *item, char *why, size_t whylen)
{
	struct cfg_strs *ss = arg;
	const char	*reason;
	char		*host;
	int		 port;

	if (strstr(item, "://") != NULL || strchr(item, '/') != NULL)
		reason = "is not host[:port] (no scheme or path)";
	else
		reason = parse_hostport(item, 0, &host, &port);
	if (reason != NULL) {
		snprintf(why, whylen, "\"%.*s\" %s", CFG_QUOTE_MAX, item,
		    reason);
		return -1;
	}
	free(host);
	ss->v = xreallocarray(ss->v, ss->n + 1, sizeof(*ss->v));
	ss->v[ss->n++] = xstrdup(item);
	return 0;
}

/* An address or address/prefix of trusted_proxies (proxyhdr.h). */
static int
add_net(void *arg, const char *item, char *why, size_t whylen)
{
	struct cfg_strs *ss = arg;
	struct proxy_net net;
	const char	*reason;

	if (proxy_net_parse(item, &net, &reason) == -1) {
		snprintf(why, whylen, "\"%.*s\" %s", CFG_QUOTE_MAX, item,
		    reason);
		return -1;
	}
	ss->v = xreallocarray(ss->v, ss->n + 1, sizeof(*ss->v));
	ss->v[ss->n++] = xstrdup(item);
	return 0;
}

static int
parse_bool(const char *v, int *out)
{
	static const char *yes[] = { "true", "1", "yes" };
	static const char *no[] = { "false", "0", "no" };
	size_t		   i;

	for (i = 0; i < 3; i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return -1;
}

/*
 * cfg_set() for the list types (CT_REPOS, CT_KEYS, CT_URLS, CT_DOMAINS,
 * CT_NETS): v is a comma- or blank-separated list, every item checked.
 */
static int
cfg_set_list(struct config *cfg, const struct cfg_key *k, const char *v,
    char *why, size_t whylen)
{
	struct cfg_repo_rules rr = { NULL, 0 };
	struct cfg_keys	      ks = { NULL, 0 };
	struct cfg_strs	      ss = { NULL, 0 };
	char		     *s;
	int		      b;

	s = xstrdup(v);
	if (k->ck_type == CT_REPOS)
		b = for_each_item(s, add_repo_rule, &rr, why, whylen);
	else if (k->ck_type == CT_KEYS)
		b = for_each_item(s, add_pubkey, &ks, why, whylen);
	else if (k->ck_type == CT_DOMAINS)
		b = for_each_item(s, add_domain, &ss, why, whylen);
	else if (k->ck_type == CT_NETS)
		b = for_each_item(s, add_net, &ss, why, whylen);
	else
		b = for_each_item(s, add_url, &ss, why, whylen);
	free(s);
	if (b == -1) {
		repo_rules_free(&rr);
		free(ks.v);
		strv_clear(&ss.v, &ss.n);
		return -1;
	}
	cfg_clear(cfg, k);
	if (k->ck_type == CT_REPOS)
		*FIELD(cfg, k, struct cfg_repo_rules) = rr;
	else if (k->ck_type == CT_KEYS)
		*FIELD(cfg, k, struct cfg_keys) = ks;
	else
		*FIELD(cfg, k, struct cfg_strs) = ss;
	return 0;
}

/*
 * cfg_set() for the types held in an int or an enum (CT_INT, CT_BOOL,
 * CT_OPTBOOL, CT_LOGLEVEL, CT_DURABILITY).
 */
static int
cfg_set_number(struct config *cfg, const struct cfg_key *k, const char *v,
    char *why, size_t whylen)
{
	const char *digits;
	long	    n;
	int	    b, lvl;

	switch (k->ck_type) {
	case CT_INT:
		digits = v + (v[0] == '-');
		if (*digits == '\0' ||
		    strspn(digits, "0123456789") != strlen(digits)) {
			snprintf(why, whylen, "\"%.*s\" is not a number",
			    CFG_QUOTE_MAX, v);
			return -1;
		}
		errno = 0;
		n = strtol(v, NULL, 10);
		if (errno == ERANGE || n < k->ck_min || n > k->ck_max) {
			snprintf(why, whylen,
			    "\"%.*s\" is out of range (%ld to %ld)",
			    CFG_QUOTE_MAX, v, k->ck_min, k->ck_max);
			return -1;
		}
		*FIELD(cfg, k, int) = (int)n;
		return 0;
	case CT_BOOL:
	case CT_OPTBOOL:
		if (parse_bool(v, &b) == -1) {
			snprintf(why, whylen,
			    "\"%.*s\" is not a boolean (true/false, yes/no, 1/0)",
			    CFG_QUOTE_MAX, v);
			return -1;
		}
		*FIELD(cfg, k, int) = b;
		return 0;
	case CT_LOGLEVEL:
		if ((lvl = log_parse_level(v)) == -1) {
			snprintf(why, whylen,
			    "\"%.*s\" is not a log level (error, warn, info, debug)",
			    CFG_QUOTE_MAX, v);
			return -1;
		}
		*FIELD(cfg, k, enum log_level) = (enum log_level)lvl;
		return 0;
	case CT_DURABILITY:
		if (strcasecmp(v, "full") == 0)
			*FIELD(cfg, k, enum cfg_durability) =
			    CFG_DURABILITY_FULL;
		else if (strcasecmp(v, "normal") == 0)
			*FIELD(cfg, k, enum cfg_durability) =
			    CFG_DURABILITY_NORMAL;
		else {
			snprintf(why, whylen,
			    "\"%.*s\" is not a durability (full, normal)",
			    CFG_QUOTE_MAX, v);
			return -1;
		}
		return 0;
	default:
		break;
	}
	snprintf(why, whylen, "internal error: bad key type");
	return -1;
}

/*
 * Sets key k from the value v (already unquoted).  An empty v selects the
 * default.  The old value is replaced only on success.  Returns 0, or -1
 * with the reason (not naming the key) in why.
 */
static int
cfg_set(struct config *cfg, const struct cfg_key *k, const char *v, char *why,
    size_t whylen)
{
	const char *reason;
	char	   *s = NULL, *host = NULL;
	uint8_t	    sk[SECKEY_LEN];
	int	    port;

	if (*v == '\0')
		v = k->ck_def;
	if (*v == '\0') {
		cfg_clear(cfg, k);
		return 0;
	}

	switch (k->ck_type) {
	case CT_STR:
		if (has_ctrl(v)) {
			snprintf(why, whylen, "contains control characters");
			return -1;
		}
		cfg_clear(cfg, k);
		*FIELD(cfg, k, char *) = xstrdup(v);
		return 0;
	case CT_PATH:
		if (v[0] != '/' || has_ctrl(v)) {
			snprintf(why, whylen,
			    "\"%.*s\" is not an absolute path", CFG_QUOTE_MAX,
			    v);
			return -1;
		}
		cfg_clear(cfg, k);
		*FIELD(cfg, k, char *) = xstrdup(v);
		return 0;
	case CT_DOMAIN:
		if (strstr(v, "://") != NULL || strchr(v, '/') != NULL)
			reason = "is not host[:port] (no scheme or path)";
		else
			reason = parse_hostport(v, 0, &host, &port);
		free(host);
		if (reason != NULL) {
			snprintf(why, whylen, "\"%.*s\" %s", CFG_QUOTE_MAX, v,
			    reason);
			return -1;
		}
		cfg_clear(cfg, k);
		*FIELD(cfg, k, char *) = xstrdup(v);
		return 0;
	case CT_BIND:
		if ((reason = parse_hostport(v, 1, &host, &port)) != NULL) {
			snprintf(why, whylen, "\"%.*s\" %s", CFG_QUOTE_MAX, v,
			    reason);
			return -1;
		}
		cfg_clear(cfg, k);
		cfg->bind_address = xstrdup(v);
		cfg->bind_host = host;
		cfg->bind_port = port;
		return 0;
	case CT_SECKEY:
		/* Never quote a secret back, not even a wrong one. */
		if (key_parse_seckey(v, sk) == -1) {
			snprintf(why, whylen,
			    "not a valid nsec or 64-digit hex secret key");
			return -1;
		}
		cfg_clear(cfg, k);
		memcpy(cfg->owner_sk, sk, SECKEY_LEN);
		explicit_bzero(sk, sizeof(sk));
		cfg->has_owner_sk = 1;
		return 0;
	case CT_REPOS:
	case CT_KEYS:
	case CT_URLS:
	case CT_DOMAINS:
	case CT_NETS:
		return cfg_set_list(cfg, k, v, why, whylen);
	case CT_WEBURL:
	case CT_WEBBASE:
	case CT_URL:
		s = k->ck_type == CT_URL ?
		    parse_relay_url(v, &reason) :
		    parse_web_url(v, k->ck_type == CT_WEBBASE, &reason);
		if (s == NULL) {
			snprintf(why, whylen, "\"%.*s\" %s", CFG_QUOTE_MAX, v,
			    reason);
			return -1;
		}
		cfg_clear(cfg, k);
		*FIELD(cfg, k, char *) = s;
		return 0;
	case CT_INT:
	case CT_BOOL:
	case CT_OPTBOOL:
	case CT_LOGLEVEL:
	case CT_DURABILITY:
		return cfg_set_number(cfg, k, v, why, whylen);
	}
	snprintf(why, whylen, "internal error: bad key type");
	return -1;
}

/*
 * Takes the value part of a line (after '='): either "..." with \" and \\
 * escapes, or bare text up to a '#' that follows a blank.  Unquotes in
 * place; returns the value, or NULL with the reason in *why.
 */
static char *
cfg_value(char *v, const char **why)
{
	char *r, *w;

	v = trim(v);
	if (*v != '"') {
		for (r = v; *r != '\0'; r++)
			if (*r == '#' &&
			    (r == v || is_blank((unsigned char)r[-1]))) {
				*r = '\0';
				break;
			}
		return trim(v);
	}
	for (r = w = v + 1; *r != '"'; r++, w++) {
		if (*r == '\0') {
			*why = "has no closing quote";
			return NULL;
		}
		if (*r == '\\') {
			if (r[1] != '"' && r[1] != '\\') {
				*why = "has a bad escape (only \\\" and \\\\)";
				return NULL;
			}
			r++;
		}
		*w = *r;
	}
	for (r++; is_blank((unsigned char)*r); r++)
		;
	if (*r != '\0' && *r != '#') {
		*why = "has text after the closing quote";
		return NULL;
	}
	*w = '\0';
	return v + 1;
}

static int
cfg_read_file(struct config *cfg, const char *file, char *err, size_t errlen)
{
	const struct cfg_key *k;
	const char	     *why_s = NULL;
	FILE		     *fp;
	char		     *line = NULL, *s, *eq, *key, *val;
	char		      why[256];
	size_t		      cap = 0;
	ssize_t		      len;
	int		      seen[CFG_NKEYS], lineno = 0, rc = -1;

	memset(seen, 0, sizeof(seen));
	if ((fp = fopen(file, "r")) == NULL) {
		snprintf(err, errlen, "%s: %s", file, strerror(errno));
		return -1;
	}
	while ((len = getline(&line, &cap, fp)) != -1) {
		lineno++;
		if ((size_t)len != strlen(line)) {
			snprintf(err, errlen, "%s:%d: NUL byte in line", file,
			    lineno);
			goto done;
		}
		s = trim(line);
		if (*s == '\0' || *s == '#')
			continue;
		if ((eq = strchr(s, '=')) == NULL) {
			snprintf(err, errlen, "%s:%d: expected \"key = value\"",
			    file, lineno);
			goto done;
		}
		*eq = '\0';
		key = trim(s);
		if ((k = cfg_lookup(key)) == NULL) {
			snprintf(err, errlen, "%s:%d: unknown key \"%.*s\"",
			    file, lineno, CFG_QUOTE_MAX, key);
			goto done;
		}
		if (seen[k - cfg_keys]) {
			snprintf(err, errlen,
			    "%s:%d: %s: already set on line %d", file, lineno,
			    key, seen[k - cfg_keys]);
			goto done;
		}
		seen[k - cfg_keys] = lineno;
		if ((val = cfg_value(eq + 1, &why_s)) == NULL) {
			snprintf(err, errlen, "%s:%d: %s: value %s", file,
			    lineno, key, why_s);
			goto done;
		}
		if (cfg_set(cfg, k, val, why, sizeof(why)) == -1) {
			/* The key as the file writes it, not its variable. */
			snprintf(err, errlen, "%s:%d: %s: %s", file, lineno,
			    key, why);
			goto done;
		}
	}
	if (ferror(fp)) {
		snprintf(err, errlen, "%s: %s", file, strerror(errno));
		goto done;
	}
	rc = 0;
done:
	free(line);
	fclose(fp);
	return rc;
}

/*
 * GRASP-05 (ngit-grasp's config.rs): the services list excludes the other
 * two modes; read-only defaults to whether archiving is on, cannot be
 * true without it, and cannot be with a repository whitelist.
 */
static int
archive_finish(struct config *cfg, char *err, size_t errlen)
{
	int on = config_archiving(cfg);

	if (cfg->archive_grasp_services.n > 0 && cfg->archive_all) {
		snprintf(err, errlen,
		    "NGIT_ARCHIVE_GRASP_SERVICES: cannot be combined with NGIT_ARCHIVE_ALL=true (one archive mode at a time)");
		return -1;
	}
	if (cfg->archive_grasp_services.n > 0 && cfg->archive_whitelist.n > 0) {
		snprintf(err, errlen,
		    "NGIT_ARCHIVE_GRASP_SERVICES: cannot be combined with NGIT_ARCHIVE_WHITELIST (one archive mode at a time)");
		return -1;
	}
	if (cfg->archive_read_only == 1 && !on) {
		snprintf(err, errlen,
		    "NGIT_ARCHIVE_READ_ONLY: true needs NGIT_ARCHIVE_ALL, NGIT_ARCHIVE_WHITELIST or NGIT_ARCHIVE_GRASP_SERVICES");
		return -1;
	}
	if (cfg->archive_read_only == -1)
		cfg->archive_read_only = on;
	if (cfg->archive_read_only && cfg->repo_whitelist.n > 0) {
		snprintf(err, errlen,
		    "NGIT_REPOSITORY_WHITELIST: cannot be used with a read-only archive (NGIT_ARCHIVE_READ_ONLY); use NGIT_ARCHIVE_WHITELIST, or set NGIT_ARCHIVE_READ_ONLY="
		    "false");
		return -1;
	}
	return 0;
}

int
config_archiving(const struct config *cfg)
{
	return cfg->archive_all || cfg->archive_whitelist.n > 0 ||
	    cfg->archive_grasp_services.n > 0;
}

/* Defaults that depend on other keys, and checks across keys. */
static int
cfg_finish(struct config *cfg, char *err, size_t errlen)
{
	size_t n;

	if (cfg->domain == NULL)
		cfg->domain = xstrdup(cfg->bind_address);
	if (cfg->public_url == NULL) {
		n = strlen(cfg->domain) + sizeof("http://");
		if ((cfg->public_url = malloc(n)) == NULL)
			fatal("config");
		snprintf(cfg->public_url, n, "http://%s", cfg->domain);
	}
	if (cfg->relay_icon == NULL) {
		n = strlen(cfg->public_url) + sizeof(CONFIG_ICON_PATH);
		if ((cfg->relay_icon = malloc(n)) == NULL)
			fatal("config");
		snprintf(cfg->relay_icon, n, "%s" CONFIG_ICON_PATH,
		    cfg->public_url);
	}
	if (cfg->relay_name == NULL) {
		n = strlen(cfg->domain) + sizeof(" grasp relay");
		if ((cfg->relay_name = malloc(n)) == NULL)
			fatal("config");
		snprintf(cfg->relay_name, n, "%s grasp relay", cfg->domain);
	}
	if (archive_finish(cfg, err, errlen) == -1)
		return -1;
	if (cfg->sync_max_backoff_secs < cfg->sync_base_backoff_secs) {
		snprintf(err, errlen,
		    "NGIT_SYNC_MAX_BACKOFF_SECS: %d is less than NGIT_SYNC_BASE_BACKOFF_SECS (%d)",
		    cfg->sync_max_backoff_secs, cfg->sync_base_backoff_secs);
		return -1;
	}
	return 0;
}

int
config_load(struct config *cfg, const char *file, char *err, size_t errlen)
{
	const struct cfg_key *k;
	const char	     *v;
	char		      why[256];
	size_t		      i;

	memset(cfg, 0, sizeof(*cfg));
	for (i = 0; i < CFG_NKEYS; i++) {
		k = &cfg_keys[i];
		if (cfg_set(cfg, k, "", why, sizeof(why)) == -1) {
			snprintf(err, errlen, "%s: bad default: %s", k->ck_name,
			    why);
			goto fail;
		}
	}
	if (file != NULL && cfg_read_file(cfg, file, err, errlen) == -1)
		goto fail;
	for (i = 0; i < CFG_NKEYS; i++) {
		k = &cfg_keys[i];
		/* Set but empty is unset, as with ngit-grasp's clap. */
		if ((v = getenv(k->ck_name)) == NULL || *v == '\0')
			continue;
		if (cfg_set(cfg, k, v, why, sizeof(why)) == -1) {
			snprintf(err, errlen, "%s: %s (from the environment)",
			    k->ck_name, why);
			goto fail;
		}
	}
	if (cfg_finish(cfg, err, errlen) == -1)
		goto fail;
	return 0;
fail:
	config_free(cfg);
	return -1;
}

void
config_free(struct config *cfg)
{
	size_t i;

	for (i = 0; i < CFG_NKEYS; i++)
		cfg_clear(cfg, &cfg_keys[i]);
	free(cfg->owner_key_file);
	explicit_bzero(cfg, sizeof(*cfg));
}

/* Appends v as a file value: bare when it reads back the same. */
static void
dump_value(struct buf *b, const char *v)
{
	size_t n = strlen(v);

	if (n > 0 && !is_blank((unsigned char)v[0]) &&
	    !is_blank((unsigned char)v[n - 1]) && strpbrk(v, "#\"\\") == NULL) {
		buf_adds(b, v);
		return;
	}
	buf_addc(b, '"');
	for (; *v; v++) {
		if (*v == '"' || *v == '\\')
			buf_addc(b, '\\');
		buf_addc(b, *v);
	}
	buf_addc(b, '"');
}

static void
dump_npub(struct buf *b, const uint8_t pk[PUBKEY_LEN])
{
	char s[NIP19_KEY_BUFSZ];

	if (nip19_encode("npub", pk, s, sizeof(s)) == 0)
		buf_adds(b, s);
}

void
config_dump(const struct config *cfg, struct buf *b)
{
	static const char    *lvl[] = { "error", "warn", "info", "debug" };
	const struct cfg_key *k;
	const struct cfg_repo_rules *rr;
	const struct cfg_keys	    *ks;
	const struct cfg_strs	    *ss;
	struct buf		     v = BUF_INIT;
	const char		    *s;
	char			     name[64];
	size_t			     i, j;
	int			     n;

	for (i = 0; i < CFG_NKEYS; i++) {
		k = &cfg_keys[i];
		cfg_file_name(k, name, sizeof(name));
		buf_reset(&v);
		buf_adds(&v, "");
		switch (k->ck_type) {
		case CT_STR:
		case CT_PATH:
		case CT_DOMAIN:
		case CT_BIND:
		case CT_URL:
		case CT_WEBURL:
		case CT_WEBBASE:
			s = *FIELD(cfg, k, char *const);
			buf_adds(&v, s ? s : "");
			break;
		case CT_SECKEY:
			/* A comment, so the dump still parses. */
			if (cfg->owner_key_file != NULL)
				buf_printf(b, "%s = # key from %s\n", name,
				    cfg->owner_key_file);
			else if (cfg->has_owner_sk)
				buf_printf(b, "%s = # set, redacted\n", name);
			else
				buf_printf(b, "%s = # from %s/%s\n", name,
				    cfg->relay_data_path ?
					cfg->relay_data_path :
					"",
				    CONFIG_OWNER_KEY_FILE);
			continue;
		case CT_REPOS:
			rr = FIELD(cfg, k, const struct cfg_repo_rules);
			for (j = 0; j < rr->n; j++) {
				if (j > 0)
					buf_adds(&v, ", ");
				if (rr->v[j].has_pubkey)
					dump_npub(&v, rr->v[j].pubkey);
				if (rr->v[j].has_pubkey && rr->v[j].identifier)
					buf_addc(&v, '/');
				if (rr->v[j].identifier)
					buf_adds(&v, rr->v[j].identifier);
			}
			break;
		case CT_KEYS:
			ks = FIELD(cfg, k, const struct cfg_keys);
			for (j = 0; j < ks->n; j++) {
				if (j > 0)
					buf_adds(&v, ", ");
				dump_npub(&v, ks->v[j]);
			}
			break;
		case CT_URLS:
		case CT_DOMAINS:
		case CT_NETS:
			ss = FIELD(cfg, k, const struct cfg_strs);
			for (j = 0; j < ss->n; j++)
				buf_printf(&v, "%s%s", j ? ", " : "", ss->v[j]);
			break;
		case CT_INT:
			buf_printf(&v, "%d", *FIELD(cfg, k, const int));
			break;
		case CT_BOOL:
		case CT_OPTBOOL:
			buf_adds(&v,
			    *FIELD(cfg, k, const int) ? "true" : "false");
			break;
		case CT_LOGLEVEL:
			n = (int)*FIELD(cfg, k, const enum log_level);
			buf_adds(&v, n >= 0 && n <= 3 ? lvl[n] : "info");
			break;
		case CT_DURABILITY:
			buf_adds(&v,
			    *FIELD(cfg, k, const enum cfg_durability) ==
				    CFG_DURABILITY_NORMAL ?
				"normal" :
				"full");
			break;
		}
		buf_printf(b, "%s = ", name);
		dump_value(b, v.b_data);
		buf_addc(b, '\n');
	}
	buf_free(&v);
}

/* Reads a key file; 1 if it does not exist. */
static int
owner_key_read(const char *path, uint8_t sk[SECKEY_LEN], char *err,
    size_t errlen)
{
	struct stat st;
	char	    text[256], *s;
	ssize_t	    n;
	int	    fd, rc = -1;

	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		if (errno == ENOENT)
			return 1;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto done;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		goto done;
	}
	if (st.st_mode & 077)
		log_warnx("%s: readable by others (mode %03o); should be 0600",
		    path, (unsigned)(st.st_mode & 0777));
	do
		n = read(fd, text, sizeof(text) - 1);
	while (n == -1 && errno == EINTR);
	if (n == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto done;
	}
	text[n] = '\0';
	s = trim(text);
	if ((size_t)n == sizeof(text) - 1 || key_parse_seckey(s, sk) == -1) {
		snprintf(err, errlen, "%s: not a valid nsec or hex secret key",
		    path);
		goto done;
	}
	rc = 0;
done:
	explicit_bzero(text, sizeof(text));
	close(fd);
	return rc;
}

/* Writes a fresh key to path, atomically; 1 if path appeared meanwhile. */
static int
owner_key_create(const char *path, uint8_t sk[SECKEY_LEN], char *err,
    size_t errlen)
{
	char	tmp[PATH_MAX], text[NIP19_KEY_BUFSZ + 1];
	size_t	got, len;
	ssize_t n;
	int	fd = -1, rc = -1;

	do {
		for (got = 0; got < SECKEY_LEN; got += (size_t)n)
			if ((n = getrandom(sk + got, SECKEY_LEN - got, 0)) ==
			    -1) {
				if (errno != EINTR) {
					snprintf(err, errlen, "getrandom: %s",
					    strerror(errno));
					return -1;
				}
				n = 0;
			}
	} while (!key_seckey_valid(sk));
	if (nip19_encode("nsec", sk, text, sizeof(text) - 1) == -1) {
		snprintf(err, errlen, "nsec encoding failed");
		return -1;
	}
	strcat(text, "\n");
	len = strlen(text);

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path,
		(long)getpid()) >= sizeof(tmp)) {
		snprintf(err, errlen, "%s: path too long", path);
		goto done;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd == -1) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		goto done;
	}
	if (fchmod(fd, 0600) == -1 || write(fd, text, len) != (ssize_t)len ||
	    fsync(fd) == -1) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		goto done;
	}
	if (close(fd) == -1) {
		fd = -1;
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		goto done;
	}
	fd = -1;
	/* link() never replaces: a key another process wrote wins. */
	if (link(tmp, path) == -1) {
		if (errno == EEXIST)
			rc = 1;
		else
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto done;
	}
	rc = 0;
done:
	if (fd != -1)
		close(fd);
	unlink(tmp);
	explicit_bzero(text, sizeof(text));
	if (rc != 0)
		explicit_bzero(sk, SECKEY_LEN);
	return rc;
}

int
config_owner_key(struct config *cfg, uint8_t sk[SECKEY_LEN], char *err,
    size_t errlen)
{
	char  *path;
	size_t n;
	int    r;

	if (cfg->has_owner_sk) {
		memcpy(sk, cfg->owner_sk, SECKEY_LEN);
		return 0;
	}
	n = strlen(cfg->relay_data_path) + 1 + sizeof(CONFIG_OWNER_KEY_FILE);
	if ((path = malloc(n)) == NULL)
		fatal("config");
	snprintf(path, n, "%s/%s", cfg->relay_data_path, CONFIG_OWNER_KEY_FILE);
	if ((r = owner_key_read(path, sk, err, errlen)) == 1) {
		if ((r = owner_key_create(path, sk, err, errlen)) == 0)
			log_info("created relay owner key %s", path);
		else if (r == 1)
			r = owner_key_read(path, sk, err, errlen);
	}
	if (r != 0) {
		free(path);
		return -1;
	}
	memcpy(cfg->owner_sk, sk, SECKEY_LEN);
	cfg->has_owner_sk = 1;
	free(cfg->owner_key_file);
	cfg->owner_key_file = path;
	return 0;
}

void
config_relay_url(const struct config *cfg, char *out, size_t outlen)
{
	const char *u = cfg->public_url;

	if (strncmp(u, "https://", 8) == 0)
		snprintf(out, outlen, "wss://%s", u + 8);
	else
		snprintf(out, outlen, "ws://%s", u + strlen("http://"));
}

int
config_test_mode(const struct config *cfg)
{
	return cfg->test;
}

double
cfg_scale_delay(const struct config *cfg, double secs)
{
	return cfg->test ? secs / CONFIG_TEST_DELAY_DIVISOR : secs;
}

double
cfg_period(const struct config *cfg, double secs)
{
	if (cfg->test && secs > CONFIG_TEST_PERIOD_MAX)
		return CONFIG_TEST_PERIOD_MAX;
	return secs;
}

int
config_key_reloadable(const char *name)
{
	const struct cfg_key *k;

	if ((k = cfg_lookup(name)) == NULL)
		return -1;
	return k->ck_roles == 0;
}

void
config_warn_env(void)
{
	extern char **environ;
	char	      name[128];
	char	    **e;
	size_t	      n;

	for (e = environ; *e != NULL; e++) {
		if (strncmp(*e, CFG_PREFIX, strlen(CFG_PREFIX)) != 0)
			continue;
		n = strcspn(*e, "=");
		if (n >= sizeof(name))
			n = sizeof(name) - 1;
		memcpy(name, *e, n);
		name[n] = '\0';
		if (cfg_lookup(name) == NULL)
			log_warnx(
			    "environment: %s is not a graspd setting; ignored",
			    name);
	}
}

/* 1 if host (bind_host: no brackets) is a loopback address, else 0. */
static int
host_loopback(const char *host)
{
	struct in6_addr a6;
	struct in_addr	a4;

	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, host, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6);
	return strcasecmp(host, "localhost") == 0;
}

int
config_warn_proxy(const struct config *cfg)
{
	if (cfg->trusted_proxies.n > 0)
		return 0;
	if (cfg->proxy_protocol) {
		log_warnx(
		    "proxy_protocol is set but trusted_proxies is empty: every connection will be closed");
		return 1;
	}
	if (cfg->max_connections_per_ip == 0 &&
	    cfg->max_events_per_minute_per_ip == 0 &&
	    cfg->max_git_requests_per_ip == 0 && cfg->max_pending_per_ip == 0)
		return 0;
	/* The shape of a deployment behind a TLS proxy on this host. */
	if (cfg->bind_host == NULL || !host_loopback(cfg->bind_host) ||
	    strncmp(cfg->public_url, "https://", 8) != 0)
		return 0;
	log_warnx(
	    "bind_address %s is loopback and public_url is https: behind a reverse proxy every client has the proxy's address, and the per-address limits count them all as one; set trusted_proxies to the proxy's address (graspd.conf(5) REVERSE PROXY)",
	    cfg->bind_address);
	return 1;
}

int
config_key_info(size_t i, const char **name, const char **def,
    const char **help)
{
	if (i >= CFG_NKEYS)
		return -1;
	if (name != NULL)
		*name = cfg_keys[i].ck_name;
	if (def != NULL)
		*def = cfg_keys[i].ck_def;
	if (help != NULL)
		*help = cfg_keys[i].ck_help;
	return 0;
}

/* 1 if a and b are different strings, NULL counting as "". */
static int
str_differs(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") != 0;
}

/*
 * 1 if two arrays of na and nb items of size bytes differ: in length, or
 * in an item by differs(), in order.
 */
static int
items_differ(const void *a, size_t na, const void *b, size_t nb, size_t size,
    int (*differs)(const void *, const void *))
{
	size_t i;

	if (na != nb)
		return 1;
	for (i = 0; i < na; i++)
		if (differs((const char *)a + i * size,
			(const char *)b + i * size))
			return 1;
	return 0;
}

static int
item_str_differs(const void *a, const void *b)
{
	return str_differs(*(char *const *)a, *(char *const *)b);
}

static int
item_key_differs(const void *a, const void *b)
{
	return memcmp(a, b, PUBKEY_LEN) != 0;
}

static int
item_rule_differs(const void *a, const void *b)
{
	const struct cfg_repo_rule *ra = a, *rb = b;

	return ra->has_pubkey != rb->has_pubkey ||
	    (ra->has_pubkey &&
		memcmp(ra->pubkey, rb->pubkey, PUBKEY_LEN) != 0) ||
	    str_differs(ra->identifier, rb->identifier);
}

/*
 * The owner key: the secret itself (which config_dump() never shows),
 * or where it comes from: the key file read, or, with neither, the one
 * in relay_data_path.
 */
static int
seckey_differs(const struct config *a, const struct config *b)
{
	if (a->has_owner_sk != b->has_owner_sk ||
	    memcmp(a->owner_sk, b->owner_sk, sizeof(a->owner_sk)) != 0 ||
	    str_differs(a->owner_key_file, b->owner_key_file))
		return 1;
	return !a->has_owner_sk && a->owner_key_file == NULL &&
	    str_differs(a->relay_data_path, b->relay_data_path);
}

/* The list fields (v, n) of key k, of type T, in a and b. */
#define LIST_DIFFERS(T, fn) \
	items_differ(FIELD(a, k, const T)->v, FIELD(a, k, const T)->n, \
	    FIELD(b, k, const T)->v, FIELD(b, k, const T)->n, \
	    sizeof(FIELD(a, k, const T)->v[0]), (fn))

int
config_key_differs(const struct config *a, const struct config *b, size_t i)
{
	const struct cfg_key *k;

	if (i >= CFG_NKEYS)
		return -1;
	k = &cfg_keys[i];
	switch (k->ck_type) {
	case CT_STR:
	case CT_PATH:
	case CT_DOMAIN:
	case CT_URL:
	case CT_WEBURL:
	case CT_WEBBASE:
		return str_differs(*FIELD(a, k, char *const),
		    *FIELD(b, k, char *const));
	case CT_BIND:
		/* bind_host and bind_port are parsed from it. */
		return str_differs(a->bind_address, b->bind_address);
	case CT_SECKEY:
		return seckey_differs(a, b);
	case CT_REPOS:
		return LIST_DIFFERS(struct cfg_repo_rules, item_rule_differs);
	case CT_KEYS:
		return LIST_DIFFERS(struct cfg_keys, item_key_differs);
	case CT_URLS:
	case CT_DOMAINS:
	case CT_NETS:
		return LIST_DIFFERS(struct cfg_strs, item_str_differs);
	case CT_INT:
	case CT_BOOL:
	case CT_OPTBOOL:
		return *FIELD(a, k, const int) != *FIELD(b, k, const int);
	case CT_LOGLEVEL:
		return *FIELD(a, k, const enum log_level) !=
		    *FIELD(b, k, const enum log_level);
	case CT_DURABILITY:
		return *FIELD(a, k, const enum cfg_durability) !=
		    *FIELD(b, k, const enum cfg_durability);
	}
	return 1;
}

#undef LIST_DIFFERS

long
config_key_roles(const char *name)
{
	const struct cfg_key *k;

	if ((k = cfg_lookup(name)) == NULL)
		return -1;
	return k->ck_roles;
}

int
config_reload_log_level(struct config *cfg, const char *file)
{
	struct config nc;
	char	      err[512];

	if (config_load(&nc, file, err, sizeof(err)) == -1) {
		config_free(&nc);
		log_warnx("reload: %s; keeping log level", err);
		return -1;
	}
	cfg->log_level = nc.log_level;
	config_free(&nc);
	log_setlevel(cfg->log_level);
	log_info("reload: log level applied");
	return 0;
}
