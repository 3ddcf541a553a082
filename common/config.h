/*
 * config.h: graspd's configuration, shared by the supervisor and every role.
 *
 * One file of "key = value" lines (graspd.conf(5)), each key overridable by
 * an environment variable of ngit-grasp's name, so an operator moving from
 * ngit-grasp keeps their settings.  Precedence: environment > file >
 * built-in default.  Every value is checked when it is read; a process that
 * gets a configuration error exits 78 (EX_CONFIG) and is not respawned.
 *
 * The list of keys lives in one table in config.c; etc/graspd.conf and
 * man/graspd.conf.5 mirror it, and tests/unit/config_test.c checks the
 * sample against the table.
 */
#ifndef GRASPD_CONFIG_H
#define GRASPD_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "log.h"
#include "nip01.h"

struct buf;

/* sysexits(3): a configuration error; the supervisor does not respawn. */
#define CONFIG_EXIT 78

/* Relay owner key file, in the relay data path, as ngit-grasp names it. */
#define CONFIG_OWNER_KEY_FILE ".relay-owner.nsec"

/* Ours: where relayd serves its built-in icon, the NGIT_RELAY_ICON default. */
#define CONFIG_ICON_PATH "/icon.png"

/* Design, "Test timing": NGIT_TEST shortens delays 60-fold ... */
#define CONFIG_TEST_DELAY_DIVISOR   60.0
/* ... and runs periodic work at least every 200 ms. */
#define CONFIG_TEST_PERIOD_MAX	    0.2
/* Ours, test timing only (read under NGIT_TEST): milliseconds relayd's
 * sync thread waits before each sync, so that a test sees batches
 * waiting for it (relayd/relay_sync.c). */
#define CONFIG_TEST_SYNC_DELAY_ENV  "GRASPD_SYNC_DELAY_MS"
/* Ours, test timing only (read under NGIT_TEST): seconds relayd's
 * purgatory expiry (PURG_EXPIRY_S) lasts instead of its 60th, so that a
 * test of what expiry does need not wait 30 s for it. */
#define CONFIG_TEST_PURG_EXPIRY_ENV "GRASPD_PURG_EXPIRY_S"

/*
 * One repository whitelist or blacklist entry, written "npub",
 * "npub/identifier" or "identifier".  identifier is NULL when the entry
 * names every repository of pubkey.
 */
struct cfg_repo_rule {
	int	has_pubkey;
	uint8_t pubkey[PUBKEY_LEN];
	char   *identifier;
};

/*
 * NGIT_DURABILITY (issue #40): what an OK true promises.  FULL: the
 * event's commit is on stable storage (the WAL synced at each commit;
 * hosted repositories' objects and refs synced by git); NORMAL: it
 * survives a killed process, but a power cut or a kernel crash may lose
 * the last acknowledged events and pushes.
 */
enum cfg_durability {
	CFG_DURABILITY_FULL,
	CFG_DURABILITY_NORMAL,
};

struct cfg_repo_rules {
	struct cfg_repo_rule *v;
	size_t		      n;
};

struct cfg_keys {
	uint8_t (*v)[PUBKEY_LEN];
	size_t n;
};

struct cfg_strs {
	char **v;
	size_t n;
};

/*
 * The effective configuration.  Each field is named like its key in the
 * file (NGIT_MAX_CONNECTIONS is max_connections), except the three noted.
 * Every string is owned by the struct and released by config_free(); none
 * is NULL after a successful config_load() except sync_bootstrap_relay_url,
 * relay_contact and owner_key_file.
 */
struct config {
	char		     *domain;
	/* scheme://host[:port] without a trailing "/", for shown URLs. */
	char		     *public_url;
	char		     *bind_address; /* as written */
	char		     *bind_host;    /* its host, without [ ] */
	int		      bind_port;    /* its port, 1-65535 */
	char		     *relay_data_path;
	char		     *git_data_path;
	char		     *run_path;
	char		     *user; /* the roles' (graspd(8)) */
	char		     *relay_name;
	char		     *relay_description;
	char		     *relay_contact;
	char		     *relay_software;
	char		     *relay_icon;
	/* NGIT_RELAY_OWNER_NSEC, or the key file once config_owner_key ran. */
	int		      has_owner_sk;
	uint8_t		      owner_sk[SECKEY_LEN];
	char		     *owner_key_file; /* the key file, once used */
	struct cfg_repo_rules repo_whitelist; /* NGIT_REPOSITORY_WHITELIST */
	struct cfg_repo_rules repo_blacklist; /* NGIT_REPOSITORY_BLACKLIST */
	struct cfg_keys	      event_blacklist;
	/* GRASP-05 archive mode (policy.h, policy_archive_covers()). */
	int		      archive_all;
	struct cfg_repo_rules archive_whitelist;
	struct cfg_strs	      archive_grasp_services; /* host[:port] */
	int		      archive_read_only;      /* resolved: 0 or 1 */
	int		      max_connections;
	int		      max_connections_per_ip;	    /* 0: no limit */
	int		      max_events_per_minute_per_ip; /* 0: none */
	int		      max_events_per_minute;	    /* 0: no limit */
	int		      max_event_size;		    /* JSON bytes */
	int		      max_read_stall_secs;	    /* REQ unread */
	int		      max_git_requests_per_ip;	    /* 0: no limit */
	int		      git_maintenance_pushes;	    /* 0: never */
	int		      git_maintenance_hours;	    /* 0: never */
	int		      max_pending_per_ip;	    /* 0: no limit */
	int		      header_timeout;		    /* seconds */
	int		      ws_ping_interval;		    /* s; 0: never */
	int		      ws_pong_timeout;		    /* seconds */
	int		      ws_frame_timeout;		    /* s; 0: none */
	int		      ipv6_prefix;		    /* bits, 1..128 */
	/* Addresses and ranges, each valid for proxy_net_parse(). */
	struct cfg_strs	      trusted_proxies;
	int		      proxy_protocol;	   /* PROXY header first */
	int		      max_repos_per_owner; /* 0: no limit */
	int		      max_push_bytes;	   /* 0: no limit */
	int		      max_repo_bytes;	   /* 0: no limit */
	int		      min_free_disk_mb;	   /* 0: no floor */
	int		      wal_room_mb;	   /* 0: none kept */
	enum cfg_durability   durability;
	enum log_level	      log_level;
	int		      test;
	int		      metrics_enabled;
	int		      sync_enabled;
	char		     *sync_bootstrap_relay_url;
	int		      sync_base_backoff_secs;
	int		sync_max_backoff_secs; /* >= sync_base_backoff_secs */
	int		sync_disable_negentropy;
	int		sync_allow_private_targets;
	int		sync_plus_enabled;
	struct cfg_strs sync_plus_user_index_relays;
	struct cfg_strs sync_plus_fallback_relays;
	int		private_mode;
	int		grasp06_enable;
	int		grasp06_max_bytes_per_ref;
	int		grasp06_max_bytes_per_signer;
	int		grasp06_unclaimed_bytes_per_ip;
	int		grasp06_unclaimed_bytes;
};

/*
 * Loads the configuration into cfg, which it overwrites (free an earlier
 * one first): built-in defaults, then the file (if file is not NULL),
 * then the NGIT_* environment.  The file must exist and may
 * only name known keys, each at most once.  An environment variable that
 * is set but empty counts as unset; an empty value in the file selects the
 * default.  Returns 0, or -1 with a message naming the key (and file:line
 * for file values) in err (errlen bytes); on -1 cfg holds nothing that
 * needs freeing, though config_free() on it is harmless.  Exits (fatal)
 * only if memory runs out.  Does not touch the owner key file: see
 * config_owner_key().
 */
int config_load(struct config *cfg, const char *file, char *err, size_t errlen);

/* Releases everything cfg owns, wipes the secret key, and zeroes cfg. */
void config_free(struct config *cfg);

/*
 * Appends the effective configuration to b as "key = value" lines, one per
 * key in table order, in the file's lower-case spelling, values quoted
 * where the file would need quotes.  The secret key is never written.
 */
void config_dump(const struct config *cfg, struct buf *b);

/*
 * Gets the relay owner secret key into sk: NGIT_RELAY_OWNER_NSEC if set;
 * otherwise the key in <relay data path>/.relay-owner.nsec (an nsec or
 * hex, surrounding whitespace ignored), created with a fresh getrandom()
 * key and mode 0600 if absent.  Creation is atomic: a concurrent caller
 * reads the key the other wrote.  The relay data directory must exist.
 * Caches the key in cfg.  Returns 0, or -1 with a message in err.
 */
int config_owner_key(struct config *cfg, uint8_t sk[SECKEY_LEN], char *err,
    size_t errlen);

/*
 * Writes the relay's websocket URL into out (outlen bytes, truncated if
 * short): public_url with wss:// for https://, ws:// for http://.
 */
void config_relay_url(const struct config *cfg, char *out, size_t outlen);

/* Returns 1 if NGIT_TEST is set (test timing), else 0. */
int config_test_mode(const struct config *cfg);
/*
 * 1 if GRASP-05 archive mode is on: NGIT_ARCHIVE_ALL, or an archive
 * whitelist or services list.  Never exits.
 */
int config_archiving(const struct config *cfg);

/*
 * A delay of minutes or hours (retry, refresh, cooldown, backoff) as it
 * applies: secs, or secs / 60 in test mode.
 */
double cfg_scale_delay(const struct config *cfg, double secs);

/*
 * The period of a periodic task: secs, or at most 0.2 s in test mode.
 */
double cfg_period(const struct config *cfg, double secs);

/*
 * Logs a warning for each NGIT_* environment variable that is not a
 * graspd key (ngit-grasp settings graspd lacks, typos).  config_load()
 * ignores them; the supervisor calls this once at start.
 */
void config_warn_env(void);

/*
 * Logs a warning when the configuration looks like a relay behind a
 * reverse proxy that relayd does not trust: per-address limits on,
 * trusted_proxies empty, a loopback bind_address and an https
 * public_url (every client would then have the proxy's address); or
 * proxy_protocol set with trusted_proxies empty.  Returns 1 if it
 * warned, else 0.  Never exits.
 */
int config_warn_proxy(const struct config *cfg);

/*
 * Describes the i-th key of the table (0-based), in graspd.conf order:
 * its environment name, its default as the file writes it ("" when the
 * default is derived or absent) and its one-line help.  Pointers are to
 * static strings; NULL arguments are skipped.  Returns 0, or -1 when i is
 * past the end.
 */
int config_key_info(size_t i, const char **name, const char **def,
    const char **help);

/*
 * Compares the i-th key of the table (config_key_info()'s order) in two
 * loaded configurations: 1 if its effective values differ (derived
 * defaults included; for the owner key, the secret or where it comes
 * from), 0 if not, -1 when i is past the end.  Reload walks the table
 * with it.  Never exits.
 */
int config_key_differs(const struct config *a, const struct config *b,
    size_t i);

/*
 * Returns 1 if a changed value of the key named name (either spelling)
 * takes effect on reload (config_key_roles() is 0: it restarts no role),
 * 0 if it needs a restart, -1 if no such key.
 */
int config_key_reloadable(const char *name);

/*
 * The roles a changed value of the key named name (either spelling) must
 * restart to take effect, as a mask of 1 << enum role (msg.h); 0 for
 * log_level, which a reload applies live.  -1 if no such key (or a key
 * the table forgot: restart them all).
 */
long config_key_roles(const char *name);

/*
 * Reloads the log level of a running role: loads file (NULL: defaults and
 * environment) as config_load() does, and on success sets cfg->log_level
 * and log_setlevel() to it.  Nothing else of cfg changes.  Returns 0, or
 * -1 with the reason logged and cfg as it was.  Never exits.
 */
int config_reload_log_level(struct config *cfg, const char *file);

#endif
