/*
 * conn.h: outbound connections to remote relays, the one way syncd,
 * discoveryd and historyd talk to another relay (design.md, "Outbound
 * connections").  Built from conn.c (requests, admission, connections,
 * the manager), conn_msg.c (what a relay sends), conn_link.c (the link),
 * conn_budget.c (the budget shared by the roles) and conn_pack.c (filters
 * packed into REQs); conn_int.h is what those files share.
 *
 * A role makes one connection manager on its libwebsockets loop and asks
 * it for connections by canonical relay key (relayurl.h).  Inside a role a
 * relay has at most one connection, shared by every purpose that needs it
 * and reference-counted by its holders.  The manager owns everything
 * between "I want these events from that relay" and the frames on the
 * wire:
 *   - target checks at every (re)connect: canonical key, never this relay
 *     itself, resolved addresses vetted (relayurl_vet_addrinfo), the
 *     socket dialled to the vetted address with the original host as
 *     Host and SNI, no redirects;
 *   - a connect timeout, exponential backoff, "dead" after a day of
 *     failures, all shrunk by NGIT_TEST (cfg_scale_delay);
 *   - rate-limit detection (NOTICE text, CLOSED and OK "rate-limited:")
 *     and a cooldown during which no new REQ leaves;
 *   - per-relay request pacing and a subscription ledger (a cap on
 *     concurrent subscriptions, live work admitted before background
 *     work, waiting requests in the relay's own queue), both also summed
 *     over the roles: a relay's budget is shared by syncd, discoveryd and
 *     historyd through its ledger file in the run directory
 *     (conn_budget.c; doc/architecture.md, "One budget per remote
 *     relay");
 *   - a message size limit and strict parsing of everything the relay
 *     sends: nothing it sends can crash the role; malformed messages
 *     count against the relay and too many drop the connection; events
 *     must carry their true id and match what we asked for;
 *   - NIP-42 AUTH answered with the relay owner key;
 *   - one-shot fetches (REQ until EOSE, CLOSED or timeout, then CLOSE),
 *     until-based pagination, and live subscriptions that are sent again
 *     after every reconnect;
 *   - filter byte packing, so that every REQ stays under a byte budget;
 *   - NIP-77 negentropy reconciliations (NEG-OPEN, NEG-MSG, NEG-CLOSE)
 *     under the same ledger, pacing and timeout as REQs, telling a relay
 *     that does not speak NIP-77 apart from one that failed.
 * Every event a relay delivers goes to the role's ingest hook (relayd
 * checks it like any untrusted event); nothing here stores anything.
 *
 * Everything runs on the role's loop and no function blocks: a host
 * name is looked up on a resolver thread (resolve.h; the link is
 * "resolving" meanwhile) and fails the attempt after RESOLVE_TIMEOUT
 * ("dns: timed out", then backoff), so one slow name server delays only
 * the relays it names.  IP literals are vetted at once.  Nothing here
 * exits except on allocation failure (fatal).
 */
#ifndef GRASPD_CONN_H
#define GRASPD_CONN_H

#include <cjson/cJSON.h>
#include <libwebsockets.h>
#include <stddef.h>
#include <stdint.h>

#include "negentropy.h"
#include "relayurl.h"

struct config;
struct event;

/* ------------------------------------------------------------------ */
/* Constants.  Durations are seconds before cfg_scale_delay() unless   */
/* the comment says otherwise.                                         */

/* A connect attempt times out after NGIT_SYNC_BASE_BACKOFF_SECS, scaled
 * (ngit-grasp-brief.md 3.7), but never sooner than this, ours: 5 s / 60
 * leaves too little for a handshake on a loaded test machine. */
#define CONN_CONNECT_TIMEOUT_MIN 0.5
/* ngit-grasp-brief.md 3.10: a streak of failures this long marks the
 * relay dead ... */
#define CONN_DEAD_AFTER		 (24.0 * 3600)
/* ... and a dead relay is tried again this much later. */
#define CONN_DEAD_RETRY		 (24.0 * 3600)
/* Ours: a link up this long before it fails ends the failure streak,
 * like an answered request does (a handshake alone does not). */
#define CONN_STABLE_SECS	 60.0
/* ngit-grasp-brief.md 3.9: cooldown after a rate-limit signal (a 60 s
 * window plus 5 s). */
#define CONN_RATE_LIMIT_COOLDOWN 65.0
/* nips.md 5.4 (NIP-77, strfry): the NIP-01 prefix of a NEG-ERR by which
 * a relay that speaks NIP-77 refuses this one set ("blocked: too many
 * query results"). */
#define CONN_NEG_BLOCKED_PREFIX	 "blocked:"
/* Ours: the longest AUTH challenge we sign (NIP-42 sets none; real
 * challenges are 16-64 characters). */
#define CONN_AUTH_CHALLENGE_MAX	 1024
/* GRASP-03 text and ngit-grasp-brief.md: fetch_events times out after
 * 30 s ... */
#define CONN_FETCH_TIMEOUT	 30.0
/* ... and after 3 s under NGIT_TEST (design.md, "Test timing"; not the
 * 60-fold rule, which would leave 0.5 s). */
#define CONN_FETCH_TIMEOUT_TEST	 3.0
/* Ours: minimum interval between two REQs (or NEG-OPENs) to one relay,
 * at first: at most 100 a second (GRASP-03 "per-relay request pacing"
 * names no figure; ngit-grasp paces not at all).  The ledger is the
 * main bound: at most CONN_MAX_SUBS open at once, so over a real network
 * fewer than this leave anyway; pacing keeps tiny REQs from bursting.
 * At 20 a second, a 20,000-event repository took 5.4-5.6 s to pull from
 * a peer graspd, at 100 a second 3.7-3.8 s (tests/bench/pull.sh). */
#define CONN_REQ_INTERVAL	 0.01
/* Ours: a relay that signals a rate limit gets, after its cooldown,
 * twice the interval it had (per connection, until the role lets the
 * connection go), up to this: a strict relay teaches us its pace. */
#define CONN_REQ_INTERVAL_MAX	 1.0
/* ... and under NGIT_TEST (not the 60-fold rule, whose 0.8 ms cannot be
 * told from no pacing once writes coalesce). */
#define CONN_REQ_INTERVAL_TEST	 0.005
/* Ours: concurrent subscriptions per relay, far below common relay caps
 * (strfry 200, rust-nostr relays 500: nips.md 1.10), so that stricter
 * public relays do not refuse us either. */
#define CONN_MAX_SUBS		 10
/* Ours: of those, at most this many live ones, so that background work
 * always has a slot; a role packs more live filters into fewer REQs. */
#define CONN_MAX_LIVE		 8
/* Ours: the folder of the per-relay budget files (conn_budget.c) under
 * NGIT_RUN_PATH: the pacing and the ledger above are per relay key
 * summed over the roles, not per role (GRASP-03: discovery draws "from
 * the same pacer and subscription ledger as historic work"). */
#define CONN_BUDGET_DIR		 "budget"
/* Ours: a role whose relay has every ledger slot taken by the roles
 * tries again this often (a sibling that frees one tells nobody). */
#define CONN_BUDGET_POLL	 0.02
/* Ours: byte budget of one REQ message, the default of conn_pack_filters
 * and a hard cap for every REQ sent: well under strfry's 131072-byte
 * websocket payload limit (nips.md 1.10), and half the 64 KB that
 * ngit-grasp-brief.md 3.6 keeps every REQ below. */
#define CONN_REQ_BUDGET		 (32u * 1024)
/* Ours: the longest subscription id we generate (NIP-01 allows 64). */
#define CONN_SUBID_MAX		 20
/* Ours, like relayd's own message limit: the largest message a remote
 * relay may send; a larger one is a protocol failure and drops the
 * connection. */
#define CONN_MAX_MESSAGE	 (1024u * 1024)
/* Ours: malformed messages tolerated on one connection before it is
 * dropped as a protocol failure. */
#define CONN_MALFORMED_MAX	 16
/* Ours: pages of one pagination, a bound against a relay that invents
 * new events forever (500-event pages make this 500000 events). */
#define CONN_PAGINATE_MAX_PAGES	 1000
/* Ours: websocket keepalive.  A ping after this much silence ... */
#define CONN_PING_SECS		 60
/* ... and the connection is dropped after this much. */
#define CONN_HANGUP_SECS	 120

/* Ours: the frame size limit of our negentropy messages, the limit
 * nostr-tools' and strfry's sync clients use (negentropy.h). */
#define CONN_NEG_FRAME NEG_FRAME_DEFAULT

/* The libwebsockets protocol name of our client connections. */
#define CONN_PROTOCOL_NAME "graspd-conn"

/* ------------------------------------------------------------------ */

struct conn_mgr;
struct conn;
struct conn_req; /* a fetch, a pagination or a live subscription */

/*
 * The state of a relay as conn_state() reports it.  RATE_LIMITED is
 * reported whatever the link does while a cooldown runs.
 */
#define CONN_STATE_LIST(X) \
	X(IDLE, "idle")		    /* no link, none needed yet */ \
	X(RESOLVING, "resolving")   /* looking up the host */ \
	X(CONNECTING, "connecting") /* TCP, TLS, websocket */ \
	X(CONNECTED, "connected") \
	X(BACKOFF, "backoff")		/* failed; retry at c_retry */ \
	X(RATE_LIMITED, "rate_limited") /* cooling down */ \
	X(DEAD, "dead")			/* a day of failures */ \
	X(REFUSED, "refused")		/* target refused at connect */

enum conn_state {
#define CONN_STATE_ENUM(name, str) CONN_##name,
	CONN_STATE_LIST(CONN_STATE_ENUM)
#undef CONN_STATE_ENUM
	CONN_NSTATES
};

/* "idle", "connected", ...; "unknown" for anything else. */
const char *conn_state_name(enum conn_state);

/* conn_get() flags. */
/* Operator-configured relay: resolved addresses are not vetted
 * (RELAYURL_TRUSTED).  Sticky: once trusted, a connection stays so. */
#define CONN_TRUSTED 0x01

/* How a fetch or pagination ended. */
enum conn_fetch_result {
	FETCH_EOSE,	    /* complete */
	FETCH_CLOSED,	    /* the relay closed it; reason says why */
	FETCH_TIMEOUT,	    /* no EOSE in time (events so far kept) */
	FETCH_DISCONNECTED, /* link failed, dropped, or not up */
	FETCH_RATE_LIMITED, /* CLOSED "rate-limited:" */
};

/* "eose", "closed", ... */
const char *conn_fetch_result_name(enum conn_fetch_result);

/*
 * Admission order of a relay's waiting requests: live subscriptions
 * first, then NORMAL, then BACKGROUND; first come first served within
 * one priority.
 */
enum conn_prio {
	CONN_PRIO_NORMAL,     /* e.g. syncd's historic catch-up */
	CONN_PRIO_BACKGROUND, /* e.g. history probes, discovery */
};

/* What a fetch or pagination saw, passed to its done callback. */
struct conn_fetch_stats {
	unsigned cs_pages;   /* REQs sent (a page, or a REQ
					   sent again after AUTH) */
	uint64_t cs_events;  /* every event delivered */
	uint64_t cs_new;     /* distinct ids among them */
	int64_t	 cs_oldest;  /* oldest created_at, or -1 */
	uint64_t cs_dropped; /* new events the ingest hook could
					   not hand on (relayd lagging): a
					   fetch with any is incomplete */
};

/*
 * A fetch's callbacks.  event (may be NULL) sees every new event of the
 * fetch that the ingest hook took (one it dropped is only counted in
 * cs_dropped); ev is valid during the call.  done is
 * called exactly once, from the loop (never from inside conn_fetch() or
 * conn_paginate()), unless the request is cancelled; reason is the
 * CLOSED text for FETCH_CLOSED and FETCH_RATE_LIMITED, else a short
 * description.  The request is freed when done returns.  Callbacks may
 * call any conn_* function except conn_mgr_free(); event may cancel its
 * own request.
 */
struct conn_fetch_cb {
	void (*event)(void *arg, struct conn_req *req, const struct event *ev);
	void (*done)(void *arg, struct conn_req *req,
	    enum conn_fetch_result res, const char *reason,
	    const struct conn_fetch_stats *st);
	void *arg;
};

/*
 * The role's hooks.  ingest is required; state may be NULL.
 */
struct conn_hooks {
	/*
	 * One event a remote relay delivered (its JSON, len bytes, as we
	 * re-serialized it; the id was checked, the signature was not),
	 * with the canonical key of the relay.  Called for every event of
	 * an open subscription that matches the REQ's filters, the first
	 * time it arrives in that request.  Events for subscriptions we do
	 * not have open or matching none of their filters ("stray"), and
	 * events that do not parse or whose id is wrong ("bad_events"),
	 * are counted and dropped.  Returns 0, or -1 if the event could not
	 * be passed on (counted).  The role passes role_ingest().
	 */
	int (*ingest)(void *arg, const char *relay_key, const char *json,
	    size_t len);
	/* The reported state of c changed (see conn_state()). */
	void (*state)(void *arg, struct conn *c, enum conn_state old,
	    enum conn_state state);
	/* May be NULL: ingest dropped an event of a live subscription on
	 * c, created at created_at; the role decides how to ask again (a
	 * fetch's drops are in its conn_fetch_stats instead). */
	void (*live_dropped)(void *arg, struct conn *c, int64_t created_at);
};

/*
 * The libwebsockets callback of our connections, and an initializer for
 * the role's protocol list (role_ops.protocols):
 *	static const struct lws_protocols protos[] = {
 *		CONN_LWS_PROTOCOL, { NULL, NULL, 0, 0, 0, NULL, 0 } };
 * The context needs no LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT for wss://
 * relays: the manager starts OpenSSL on the first wss:// dial.
 */
int conn_lws_callback(struct lws *wsi, enum lws_callback_reasons reason,
    void *user, void *in, size_t len);
#define CONN_LWS_PROTOCOL \
	{ \
		CONN_PROTOCOL_NAME, conn_lws_callback, 0, 0, 0, NULL, 0 \
	}
/* The same entry, for code that builds the list at run time. */
extern const struct lws_protocols conn_lws_protocol;

/*
 * Makes a connection manager on the loop of context, connecting through
 * vhost (whose protocols include CONN_LWS_PROTOCOL; the manager starts
 * OpenSSL and gives it a client TLS context on the first wss:// dial).
 * cfg (timings,
 * NGIT_DOMAIN for the self keys, NGIT_SYNC_ALLOW_PRIVATE_TARGETS, the
 * owner key for AUTH, which config_owner_key() may load into cfg on the
 * first challenge) and hooks must outlive the manager; arg is passed to
 * the hooks.  Returns the manager (caller frees with conn_mgr_free()).
 * Exits on allocation failure.
 */
struct conn_mgr *conn_mgr_new(struct lws_context *context,
    struct lws_vhost *vhost, struct config *cfg, const struct conn_hooks *hooks,
    void *arg);

/*
 * Closes every connection and frees every request without calling its
 * callbacks, then the manager.  Call it before the lws context is
 * destroyed, never from a callback.  NULL is fine.
 */
void conn_mgr_free(struct conn_mgr *);

/*
 * The connection to the relay named key (a canonical key, as
 * relayurl_canon() wrote it with the trust the caller gives the URL),
 * made if the role has none, with one hold taken for the caller.  flags
 * is a set of CONN_* flags.  Dials nothing by itself: the first request
 * does.  Returns NULL if key is not canonical or names this relay
 * itself (NGIT_DOMAIN), with *why (if not NULL) set to a static string.
 */
struct conn *conn_get(struct conn_mgr *, const char *key, unsigned flags,
    const char **why);
/* Takes one more hold on c. */
void	     conn_hold(struct conn *c);
/*
 * Drops one hold.  A connection without holders, live subscriptions or
 * requests retires (closed and freed, later on the loop), except that
 * one in backoff, dead or refused is kept until its retry time so that
 * asking again does not skip the backoff.  The caller must not use c
 * afterwards unless it holds it otherwise.
 */
void	     conn_release(struct conn *c);

/* The canonical key of c (owned by c). */
const char     *conn_key(const struct conn *c);
/* The state of c as reported: RATE_LIMITED while a cooldown runs. */
enum conn_state conn_state(const struct conn *c);

/*
 * Queues one REQ with filter_json (one filter object; the REQ must fit
 * CONN_REQ_BUDGET) on c and collects events until EOSE, CLOSED, the
 * timeout (seconds after the REQ left; 0 for conn_fetch_timeout()) or
 * the link ending, then CLOSEs the subscription if still open and calls
 * cb->done.  Connects c if needed.  While c is in backoff, dead or
 * refused the fetch ends at once (FETCH_DISCONNECTED, from the loop);
 * while c cools down after a rate limit it waits in c's queue.  Returns
 * the request (valid until done returns), or NULL if filter_json is not
 * one JSON object or the REQ is too large (nothing is called then).
 */
struct conn_req *conn_fetch(struct conn *c, const char *filter_json,
    enum conn_prio prio, double timeout, const struct conn_fetch_cb *cb);

/*
 * Like conn_fetch(), but pages back in time: after each EOSE, if the
 * page brought ids not seen before in this pagination, the same filter
 * is sent again with "until" = the oldest created_at seen (inclusive,
 * so events of the same second are not lost; ids seen before are not
 * ingested again).  A page without a new id ends it, except that a
 * page stuck on one second (every event at the current until) is
 * followed once by until - 1.  Every delivered id counts as progress,
 * whatever relayd later decides about the event.  Ends with the result
 * of the last page; at most CONN_PAGINATE_MAX_PAGES pages.
 */
struct conn_req *conn_paginate(struct conn *c, const char *filter_json,
    enum conn_prio prio, double timeout, const struct conn_fetch_cb *cb);

/*
 * Cancels a fetch, pagination or reconciliation that has not ended:
 * CLOSEs (NEG-CLOSEs) it if open and frees it without calling done.
 */
void conn_fetch_cancel(struct conn_req *req);

/*
 * A live subscription: filters_json (one filter object or a JSON array
 * of them) is sent as one REQ, normally with "limit":0 set by the
 * caller, and kept open; after every reconnect it is sent again.  Its
 * events go to the ingest hook.  Connects c if needed and keeps it
 * connected (reconnecting with backoff) until closed.  Returns the
 * handle, or NULL if the filters do not parse, the REQ does not fit
 * CONN_REQ_BUDGET, or c already has CONN_MAX_LIVE live subscriptions
 * (*why, if not NULL, says which).
 */
struct conn_req *conn_live(struct conn *c, const char *filters_json,
    const char **why);
/* Closes a live subscription (CLOSE if open) and frees the handle. */
void		 conn_live_close(struct conn_req *live);

/*
 * Appends one object per connection to arr, for `graspctl show`: relay,
 * state, until (unix time of the next retry or the end of a cooldown),
 * reason, holders, subscriptions (open), live, queued, parked (waiting
 * for AUTH or a reconnect), bytes_in, bytes_out, events, failures
 * (consecutive), failures_total, malformed (messages), rate_limits,
 * stray, bad_events, ingest_dropped, neg_sessions (reconciliations
 * ended), neg_bytes (their bytes both ways), budget_slots (slots of the
 * relay's budget shared with the other roles that this one holds).
 */
void conn_mgr_show(struct conn_mgr *, cJSON *arr);

/*
 * Appends the manager's metrics to a role metrics array (["name", value]
 * pairs): connections by state, open subscriptions, queued requests,
 * totals.  Fixed cardinality: no relay URL appears.
 */
void conn_mgr_stats(struct conn_mgr *, cJSON *metrics);

/*
 * How a negentropy reconciliation ended.  UNSUPPORTED means the relay
 * does not speak NIP-77: it answered our NEG-OPEN with NEG-ERR (other
 * than "blocked:", "rate-limited:" or "auth-required:"), with CLOSED,
 * with a NOTICE about an unknown or unsupported command, or not at all
 * within the timeout.  FAILED means it does, but this reconciliation
 * did not finish: "blocked:" (e.g. too many events for its set limit),
 * NEG-ERR or CLOSED after its first answer, a malformed answer, or no
 * answer in time once it had answered.
 */
enum conn_neg_result {
	NEGR_DONE, /* complete: have and need are final */
	NEGR_UNSUPPORTED,
	NEGR_FAILED,
	NEGR_DISCONNECTED, /* link failed, dropped, or not up */
	NEGR_RATE_LIMITED, /* NEG-ERR or CLOSED "rate-limited:" */
};

/* "done", "unsupported", ... */
const char *conn_neg_result_name(enum conn_neg_result);

/* What a negentropy reconciliation saw, passed to its done callback. */
struct conn_neg_stats {
	unsigned ns_rounds;    /* NEG-MSG answers taken */
	uint64_t ns_bytes_out; /* NEG-OPEN, NEG-MSG, NEG-CLOSE */
	uint64_t ns_bytes_in;  /* NEG-MSG, NEG-ERR */
	size_t	 ns_items;     /* our set, deduplicated */
	/* Ids only we have, and ids only the relay has: sorted, without
	 * repeats, owned by the request.  Empty unless NEGR_DONE. */
	const struct neg_idlist *ns_have;
	const struct neg_idlist *ns_need;
};

/*
 * A reconciliation's callback, called exactly once from the loop unless
 * the request is cancelled (conn_fetch_cancel()); reason as for fetches.
 * The request and st are freed when done returns.  It may call any
 * conn_* function except conn_mgr_free().
 */
struct conn_neg_cb {
	void (*done)(void *arg, struct conn_req *req, enum conn_neg_result res,
	    const char *reason, const struct conn_neg_stats *st);
	void *arg;
};

/*
 * Queues a NIP-77 reconciliation of our set items[0..n) (any order, as
 * (created_at, id); copied, the caller keeps its array) against the
 * relay's events matching filter_json (one filter object whose
 * NEG-OPEN fits CONN_REQ_BUDGET apart from the message).  Admitted like
 * a fetch (ledger, pacing, cooldown); NEG-OPEN leaves with our first
 * message, each NEG-MSG answer is answered until the client side is
 * done, then NEG-CLOSE.  timeout (0 for conn_fetch_timeout()) bounds the
 * wait for each answer.  Messages are at most CONN_NEG_FRAME bytes
 * before hex.  Nothing is fetched: the caller fetches the needed ids.
 * Returns the request (cancel with conn_fetch_cancel()), or NULL if the
 * filter is not one JSON object, too large, or n exceeds NEG_MAX_ITEMS.
 */
struct conn_req *conn_neg(struct conn *c, const char *filter_json,
    const struct neg_item *items, size_t n, enum conn_prio prio, double timeout,
    const struct conn_neg_cb *cb);

/*
 * 1 if NOTICE text (len bytes) reads as a relay refusing a command it
 * does not know: lower-cased it contains "unknown", "unsupported", "not
 * supported" or "unrecognized", and not "subscription" (a NOTICE about
 * an unknown subscription answers a CLOSE).  Else 0.
 */
int conn_notice_is_unsupported(const char *text, size_t len);

/* ------------------------------------------------------------------ */
/* Pure parts, exported for the role and for the unit tests.           */

/*
 * The wait before the next attempt after failures consecutive failures
 * (>= 1) in a streak that began streak_secs ago: base x 2^(failures-1)
 * capped at max (NGIT_SYNC_BASE_BACKOFF_SECS, NGIT_SYNC_MAX_BACKOFF_SECS),
 * or CONN_DEAD_RETRY once the streak reaches CONN_DEAD_AFTER, in which
 * case *dead (if not NULL) is set to 1.  Both durations compare and come
 * out scaled by cfg_scale_delay().
 */
double conn_backoff_delay(const struct config *cfg, unsigned failures,
    double streak_secs, int *dead);

/* The connect timeout: the base backoff, scaled, at least
 * CONN_CONNECT_TIMEOUT_MIN. */
double conn_connect_timeout(const struct config *cfg);

/* CONN_FETCH_TIMEOUT, or CONN_FETCH_TIMEOUT_TEST under NGIT_TEST. */
double conn_fetch_timeout(const struct config *cfg);
/* CONN_REQ_INTERVAL, or CONN_REQ_INTERVAL_TEST under NGIT_TEST. */
double conn_req_interval(const struct config *cfg);

/*
 * 1 if NOTICE text (len bytes) reads as a rate limit: lower-cased, it
 * contains "rate" and "limit", or "too many", or "slow down", or
 * "throttl" (ngit-grasp-brief.md 3.9).  Else 0.
 */
int conn_notice_is_rate_limit(const char *text, size_t len);

/* 1 if a CLOSED or OK message starts with "rate-limited:", else 0. */
int conn_reason_is_rate_limited(const char *msg, size_t len);

/* Filter packing (conn_pack.c): a list made by conn_pack_filters(). */
struct conn_filters {
	char **cf_v; /* NUL-terminated JSON objects, owned */
	size_t cf_n;
};

/*
 * Splits a set of values into filters whose REQs each fit budget bytes:
 * every filter is base (a JSON object text; "{}" for none) plus one
 * member named by field, "ids", "authors" or a single tag letter (then
 * written "#x"), holding a run of the values.  The values (n strings,
 * each NUL-terminated) are sorted bytewise and de-duplicated first, so
 * the same set always packs into the same filters, and filled greedily:
 * each filter takes as many as fit, and at most max_values (0: no
 * limit).  A REQ is counted as ["REQ","<CONN_SUBID_MAX chars>",filter].
 * Appends to out (which starts as {NULL, 0}; free with
 * conn_filters_free()).  Returns the number of filters added (0 for no
 * values), or -1 with *why set if base is not a JSON object, already
 * has that member, field is not one of those, or one value alone does
 * not fit the budget (nothing is added then).
 */
int  conn_pack_filters(const char *base, const char *field,
     const char *const values[], size_t n, size_t budget, size_t max_values,
     struct conn_filters *out, const char **why);
void conn_filters_free(struct conn_filters *);

/* The REQ bytes one filter costs: ["REQ","<CONN_SUBID_MAX>",filter]. */
size_t conn_req_size(size_t filter_len);

/*
 * Groups filters (n JSON object texts, each fitting a REQ alone, as
 * conn_pack_filters() makes them) into at most max JSON arrays
 * "[f,f,...]", each array's REQ within budget (conn_req_size() of the
 * array's text), by first-fit decreasing: the longest filter first, each
 * into the first array with room, a new array when none has room and
 * fewer than max exist.  Ties keep the given order, so the same filters
 * always make the same arrays.  Appends the arrays to reqs (which starts
 * as {NULL, 0}; free with conn_filters_free()).  The indices of the
 * filters that found no room go to over (the caller's, room for n), in
 * the given order; returns their count.  Pure; allocation failure is
 * fatal.
 */
size_t conn_group_filters(const char *const filters[], size_t n, size_t budget,
    size_t max, struct conn_filters *reqs, size_t *over);

/* ------------------------------------------------------------------ */
/* The per-relay budget shared by the roles (conn_budget.c; design in  */
/* doc/architecture.md, "One budget per remote relay").               */

/* One connection's share of a relay's budget: the relay's ledger file,
 * and which slots this connection holds. */
struct conn_budget {
	int	      cb_fd;   /* -1: no shared ledger */
	unsigned      cb_held; /* slots locked (bit i) */
	unsigned      cb_busy; /* of those, lent to a request */
	unsigned char cb_closing[CONN_MAX_SUBS]; /* CLOSEs not yet sent */
};

/* An empty budget (no file): conn_budget_take() always admits. */
void	 conn_budget_init(struct conn_budget *);
/*
 * Opens the ledger of relay key under run_path/CONN_BUDGET_DIR (made
 * 0700 if missing; the file 0600, never through a link).  Returns 0, or
 * -1 with errno (b stays empty: the caller's own ledger still bounds
 * it, the roles' sum does not).
 */
int	 conn_budget_open(struct conn_budget *b, const char *run_path,
	 const char *key);
/* Closes the file; the kernel drops every slot and lock b held. */
void	 conn_budget_close(struct conn_budget *);
/*
 * Asks for one REQ now (at now, CLOCK_MONOTONIC microseconds, the clock
 * every role shares): 1 when the relay's last REQ from any role is
 * interval seconds old or more and a slot is free (a spare one of b
 * first), with the slot in *slot (-1 for an empty b) and the REQ's time
 * recorded; else 0 with *wait_us, how long to wait before asking again.
 * Never blocks.
 */
int	 conn_budget_take(struct conn_budget *b, double interval, int64_t now,
	 int *slot, int64_t *wait_us);
/* The request of slot ended and nothing goes to the relay about it
 * (the link is gone, or the relay ended it): the slot is free at once. */
void	 conn_budget_give(struct conn_budget *, int slot);
/* The request of slot ended with a CLOSE queued: b may reuse the slot,
 * the other roles only after conn_budget_closed(). */
void	 conn_budget_closing(struct conn_budget *, int slot);
/* That CLOSE was written (or dropped with the link). */
void	 conn_budget_closed(struct conn_budget *, int slot);
/* Slots b holds (lent or spare), for `graspctl show`. */
unsigned conn_budget_held(const struct conn_budget *);

#endif
