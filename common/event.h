/*
 * event.h: Nostr events (NIP-01): strict parsing, canonical serialization,
 * id and BIP-340 signature checks, and signing.
 *
 * An event is one allocation owned by its creator and released with
 * event_destroy().  Strings are NUL-terminated and also carry their length,
 * because a string may legally contain a NUL byte.
 */
#ifndef GRASPD_EVENT_H
#define GRASPD_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include "nip01.h"

struct json;

/* NIP-01: kind is an integer in 0..65535. */
#define EVENT_KIND_MAX 65535

/* The kinds graspd treats specially, named once. */
#define KIND_PROFILE	       0     /* NIP-01 metadata */
#define KIND_DELETION	       5     /* NIP-09 */
#define KIND_PATCH	       1617  /* NIP-34 */
#define KIND_PR		       1618  /* NIP-34 */
#define KIND_PR_UPDATE	       1619  /* NIP-34 */
#define KIND_ISSUE	       1621  /* NIP-34 */
#define KIND_STATUS_OPEN       1630  /* NIP-34 status: open */
#define KIND_STATUS_APPLIED    1631  /* NIP-34 status: applied, merged */
#define KIND_STATUS_CLOSED     1632  /* NIP-34 status: closed */
#define KIND_STATUS_DRAFT      1633  /* NIP-34 status: draft */
#define KIND_RELAY_LIST	       10002 /* NIP-65 */
#define KIND_USER_GRASP_LIST   10317 /* NIP-34 */
#define KIND_REPO_ANNOUNCEMENT 30617 /* NIP-34 */
#define KIND_REPO_STATE	       30618 /* NIP-34 */

struct estr {
	char  *s;
	size_t len;
};

struct event_tag {
	uint32_t     n; /* >= 1 elements */
	struct estr *v;
};

struct event {
	uint8_t		  id[EVENT_ID_LEN];
	uint8_t		  pubkey[PUBKEY_LEN];
	uint8_t		  sig[EVENT_SIG_LEN];
	char		  id_hex[EVENT_ID_HEX_LEN + 1];
	char		  pubkey_hex[PUBKEY_HEX_LEN + 1];
	int64_t		  created_at;
	uint32_t	  kind;
	uint32_t	  ntags;
	struct event_tag *tags;
	struct estr	  content;
	/*
	 * The event as we store and serve it: {"id","pubkey","created_at",
	 * "kind","tags","content","sig"} with canonical escaping.
	 */
	char		 *json;
	size_t		  json_len;
	/*
	 * Where in json the tags array and the content string are
	 * (offsets and lengths), when event_from_json() or
	 * event_new_signed() wrote json; else all 0.  The id's
	 * serialization holds the same bytes.
	 */
	size_t json_tags, json_tags_len, json_content, json_content_len;
};

/* NIP-01 kind classes. */
enum kind_class {
	KIND_REGULAR,
	KIND_REPLACEABLE, /* 0, 3, 10000-19999 */
	KIND_EPHEMERAL,	  /* 20000-29999 */
	KIND_ADDRESSABLE, /* 30000-39999 */
};

enum kind_class event_kind_class(uint32_t kind);

/*
 * Builds an event from a parsed JSON object with strict type checks:
 * exactly-64/128 lowercase hex, integer kind in range and non-negative
 * integer created_at, string content, tags an array of non-empty arrays of
 * strings.  Unknown members are ignored (and dropped from ->json).  Does
 * not check the id or signature.  Returns NULL and an "invalid: ..."
 * message in err on failure.  Caller frees the result.
 */
struct event *event_from_json(const struct json *, char *err, size_t errlen);
/* The same from raw text. */
struct event *event_parse(const char *buf, size_t len, char *err,
    size_t errlen);
/*
 * Computes the NIP-01 id of ev into out: of its pubkey, created_at and
 * kind, and of the tags and content as ev->json holds them when this
 * module wrote it (the same bytes as the fields'), else as the fields
 * hold them.
 */
void	      event_compute_id(const struct event *, uint8_t out[EVENT_ID_LEN]);
/* 1 if ev->id is the hash event_compute_id() makes, else 0. */
int	      event_check_id(const struct event *);
/*
 * event_check_id() for an answer: 0 if the id matches, else -1 with the
 * NIP-01 OK message ("invalid: ...") in msg.  Never exits.
 */
int event_check_id_msg(const struct event *, char *msg, size_t msglen);
/* 1 if ev->sig is a valid BIP-340 signature of ev->id by ev->pubkey. */
int event_check_sig(const struct event *);
/*
 * Ours: the x-only keys an event_keycache keeps parsed, in sets of two
 * (1,024 keys, 96 KiB).  Parsing a key is a square root, 3.7 of the 30.6
 * us a check took on the 2-core test machine (2026-12-06); a relay checks
 * the same authors' events again and again.
 */
#define EVENT_KEYCACHE_SETS 512
#define EVENT_KEYCACHE_WAYS 2
/*
 * Recent authors' parsed keys, for one thread's signature checks: not
 * locked, so not shared between threads.  A key that does not parse is
 * not kept; a full set forgets the key it used least recently.
 */
struct event_keycache;
struct event_keycache *event_keycache_new(void);
void		       event_keycache_free(struct event_keycache *);
/* event_check_sig(), parsing ev's key only when kc does not hold it. */
int event_check_sig_cached(const struct event *, struct event_keycache *kc);
/* The keys kc had to parse so far: its misses. */
uint64_t event_keycache_parses(const struct event_keycache *kc);
void	 event_destroy(struct event *);
/*
 * event_destroy() on each of the n events of v, then frees v, an array
 * the caller owned.  v may be NULL when n is 0.  Never exits.
 */
void	 events_destroy(struct event **v, size_t n);

/*
 * Creates and signs an event with the secret key; tags_json is a JSON
 * array of arrays of strings ("[]" or NULL for none).  Returns NULL if the
 * tags do not parse or the key is invalid.  Used for NIP-42 AUTH and by
 * tests and benchmarks.
 */
struct event *event_new_signed(const uint8_t seckey[SECKEY_LEN],
    int64_t created_at, uint32_t kind, const char *tags_json,
    const char *content);
/* Derives the x-only public key of seckey; 0 on success. */
int event_pubkey_of(const uint8_t seckey[SECKEY_LEN], uint8_t out[PUBKEY_LEN]);

/* Value (element 1) of the first tag named name, or NULL. */
const struct estr *event_tag_value(const struct event *, const char *name);
/* The "d" value of an addressable event: first d tag's value, or "". */
const char	  *event_d(const struct event *);
/* NIP-40 expiration timestamp, or 0 when the event has none. */
int64_t		   event_expiration(const struct event *);

/* Hex helpers: 0 on success, -1 unless exactly 2n lowercase hex digits. */
int  hex_decode(const char *hex, size_t hexlen, uint8_t *out, size_t n);
void hex_encode(const uint8_t *in, size_t n, char *out);

/*
 * Splits a "kind:pubkey:d" coordinate (d may contain ':').  Returns 0 and
 * fills the outputs (d points into coord) when kind is numeric and pubkey
 * 64 lowercase hex, else -1.
 */
int coord_parse(const char *coord, size_t len, uint32_t *kind,
    uint8_t pubkey[PUBKEY_LEN], const char **d, size_t *dlen);

#endif
