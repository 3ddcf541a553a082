/*
 * purg.h: the GRASP-01 purgatory tables (schema step 2 in db.c, described
 * in store.h, "Purgatory"): announcements, state and PR events held until
 * their git data arrives, PR placeholders, and the ids that expired
 * without it.
 *
 * relayd writes them, inside its batched write transactions, so a held
 * event is on disk before its OK is sent and a crash loses none.  syncd
 * may open them through a read-only store to learn which repositories are
 * Full or StateOnly and which objects are missing.  A struct purg caches
 * prepared statements over one store's connection and belongs to the
 * thread that owns that store.
 *
 * Every function returns -1 after logging on a database error, and never
 * exits except on allocation failure.  Strings (d, oids) are
 * NUL-terminated; ids and pubkeys are 32 bytes.
 */
#ifndef GRASPD_PURG_H
#define GRASPD_PURG_H

#include <stddef.h>
#include <stdint.h>

struct event;
struct store;
struct purg;

/* A held announcement. */
struct purg_ann {
	uint8_t pa_pubkey[PUBKEY_LEN];
	uint8_t pa_id[EVENT_ID_LEN];
	char   *pa_d;
	char   *pa_json;
	char   *pa_relays; /* JSON array of relay URLs */
	int64_t pa_created_at;
	int64_t pa_expires_at;
	int	pa_soft_expired; /* repository deleted, entry kept */
};

/* A held state, PR or PR update event. */
struct purg_ev {
	uint8_t	 pe_id[EVENT_ID_LEN];
	uint8_t	 pe_pubkey[PUBKEY_LEN];
	uint32_t pe_kind;
	int64_t	 pe_created_at;
	char	*pe_d;
	char	*pe_json;
	int	 pe_remote;
	int64_t	 pe_expires_at;
};

/* A refs/nostr/<id> push that came before the event <id>. */
struct purg_placeholder {
	uint8_t pp_id[EVENT_ID_LEN];
	uint8_t pp_owner[PUBKEY_LEN];
	char   *pp_d;
	char	pp_oid[41];
	int64_t pp_expires_at;
};

struct purg_counts {
	int64_t announcements; /* held, repository present */
	int64_t soft_expired;  /* held, repository deleted */
	int64_t states;
	int64_t prs; /* PRs and PR updates */
	int64_t placeholders;
	int64_t expired;
};

/*
 * Prepares the statements over st's connection (st must outlive the
 * result).  Returns NULL only on allocation failure, which is fatal.
 */
struct purg *purg_open(struct store *st);
/* Finalizes the statements.  NULL is fine. */
void	     purg_close(struct purg *);

/* Releases what an entry owns (not the entry itself); NULL is fine. */
void purg_ann_clear(struct purg_ann *);
void purg_ev_clear(struct purg_ev *);
void purg_placeholder_clear(struct purg_placeholder *);
/* Frees an array from one of the list functions, and its entries. */
void purg_ann_free_list(struct purg_ann *, size_t n);
void purg_ev_free_list(struct purg_ev *, size_t n);
void purg_placeholder_free_list(struct purg_placeholder *, size_t n);

/*
 * Announcements.  purg_ann_put() inserts or replaces the entry of (ev's
 * pubkey, d), not soft-expired, entered now.  The getters fill *out
 * (clear it with purg_ann_clear) and return 1, or 0 when absent.
 * purg_ann_list_d() returns every entry with identifier d (soft-expired
 * ones too), oldest first, in a new array.
 */
int purg_ann_put(struct purg *, const struct event *ev, const char *d,
    const char *relays_json, int64_t now, int64_t expires_at);
int purg_ann_get(struct purg *, const uint8_t pubkey[PUBKEY_LEN], const char *d,
    struct purg_ann *out);
int purg_ann_by_id(struct purg *, const uint8_t id[EVENT_ID_LEN],
    struct purg_ann *out);
int purg_ann_list_d(struct purg *, const char *d, struct purg_ann **out,
    size_t *n);
int purg_ann_delete(struct purg *, const uint8_t pubkey[PUBKEY_LEN],
    const char *d);
int purg_ann_set_expiry(struct purg *, const uint8_t pubkey[PUBKEY_LEN],
    const char *d, int64_t expires_at, int soft_expired);
/* Entries whose expires_at <= now, in a new array. */
int purg_ann_due(struct purg *, int64_t now, struct purg_ann **out, size_t *n);

/*
 * State, PR and PR update events.  purg_ev_put() inserts ev (held for
 * repository identifier d) with the objects it waits for.  The getters
 * return 1, or 0 when absent.  purg_ev_list_d() gives the events of kind
 * (0: every kind) held for d, oldest first (created_at, then id).
 * purg_ev_extend_d() moves the expiry of d's states to expires_at.
 */
int purg_ev_put(struct purg *, const struct event *ev, const char *d,
    int remote, int64_t now, int64_t expires_at, const char *const *wants,
    size_t nwants);
int purg_ev_get(struct purg *, const uint8_t id[EVENT_ID_LEN],
    struct purg_ev *out);
int purg_ev_list_d(struct purg *, const char *d, uint32_t kind,
    struct purg_ev **out, size_t *n);
int purg_ev_list_kind(struct purg *, uint32_t kind, struct purg_ev **out,
    size_t *n);
int purg_ev_delete(struct purg *, const uint8_t id[EVENT_ID_LEN]);
int purg_ev_extend_d(struct purg *, const char *d, int64_t expires_at);
int purg_ev_due(struct purg *, int64_t now, struct purg_ev **out, size_t *n);

/* Placeholders: put replaces the (id, owner, d) entry. */
int purg_placeholder_put(struct purg *, const uint8_t id[EVENT_ID_LEN],
    const uint8_t owner[PUBKEY_LEN], const char *d, const char *oid,
    int64_t expires_at);
int purg_placeholder_list_id(struct purg *, const uint8_t id[EVENT_ID_LEN],
    struct purg_placeholder **out, size_t *n);
int purg_placeholder_delete_id(struct purg *, const uint8_t id[EVENT_ID_LEN]);
/* The placeholders whose expires_at <= now (0, or -1 on error). */
int purg_placeholder_due(struct purg *, int64_t now,
    struct purg_placeholder **out, size_t *n);
/* Drops the placeholders whose expires_at <= now; returns how many. */
int purg_placeholder_sweep(struct purg *, int64_t now);

/* Expired ids: add records (or refreshes) one; has returns 1 or 0. */
int purg_expired_add(struct purg *, const uint8_t id[EVENT_ID_LEN], int64_t at);
int purg_expired_has(struct purg *, const uint8_t id[EVENT_ID_LEN]);
/* Forgets ids that expired at or before before; returns how many. */
int purg_expired_sweep(struct purg *, int64_t before);

/*
 * The earliest expires_at of any announcement, event or placeholder into
 * *out (INT64_MAX when there is none).  0 or -1.
 */
int purg_next_deadline(struct purg *, int64_t *out);
int purg_count(struct purg *, struct purg_counts *out);

#endif
