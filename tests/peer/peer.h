/*
 * peer.h: private header of peer, the scriptable remote relay of the
 * integration tests (never installed, never linked into a daemon).
 *
 * peer is a permissive NIP-01 relay on one libwebsockets loop: it stores
 * in memory whatever parses as an event, serves REQs newest first, and
 * can be told over plain HTTP on the same port to misbehave in the ways
 * remote relays do (rate limits, missing EOSE, forged signatures, floods,
 * garbage, abrupt closes, AUTH).  It records what its clients asked for,
 * so a test can assert on the requests graspd made.
 *
 * peer.c       main, options, the loop, signals, the hang port
 * peer_ws.c    NIP-01 websocket side: EVENT, REQ, CLOSE, AUTH, and
 *              NIP-77 NEG-OPEN/NEG-MSG/NEG-CLOSE in "neg" mode; output
 * peer_http.c  NIP-11 and the control endpoints (/config, /reset,
 *              /events, /log)
 * peer_store.c the in-memory event store, the configuration and the log
 */
#ifndef GRASPD_PEER_H
#define GRASPD_PEER_H

#include <libwebsockets.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "event.h"
#include "filter.h"
#include "wsserve.h"

/* The brief: a websocket message over 4 MiB gets a NOTICE, not a crash. */
#define PEER_MAX_MESSAGE   (4 * 1024 * 1024)
/* Ours: bytes queued to one client before it is dropped as too slow. */
#define PEER_MAX_OUTQ	   (256 * 1024 * 1024)
/* Ours: bounds on what a test can script, so a typo cannot eat memory. */
#define PEER_MAX_HTTP_BODY (64 * 1024 * 1024)
#define PEER_MAX_OVERSIZED (64 * 1024 * 1024)
#define PEER_MAX_FLOOD	   100000
#define PEER_MAX_EVENTS	   1000000
/* Ours: entries kept in each list of the log (reqs, closes, auth). */
#define PEER_MAX_LOG	   100000
/* Ours: connections held open on the hang port; the oldest goes first. */
#define PEER_MAX_HANG	   256
/* NIP-01: a subscription id is at most 64 characters. */
#define PEER_MAX_SUBID	   64
/* NIP-42: the kind of an AUTH event. */
#define PEER_KIND_AUTH	   22242

#define PEER_NAME "graspd test peer"

/* What POST /config sets; all zero is a well-behaved relay. */
struct peer_config {
	int eose_delay_ms;	 /* EOSE this much after the events */
	int drop_eose;		 /* never send EOSE */
	int max_results;	 /* stored events per REQ, 0 = all */
	int closed_rate_limited; /* CLOSED rate-limited every REQ */
	int closed_tag;		 /* CLOSED a REQ with a "#<this char>" */
	int notice_rate_limit;	 /* a rate-limit NOTICE on every REQ */
	int ok_rate_limited;	 /* OK false rate-limited every EVENT */
	int close_after_events;	 /* drop a connection after N EVENTs */
	int garbage;		 /* non-JSON text + binary per REQ */
	int forge;		 /* serve events with a bad signature */
	int oversized_bytes;	 /* a NOTICE frame of this size per REQ */
	int flood;		 /* unsolicited junk EVENTs per REQ */
	int auth;		 /* NIP-42: REQs need AUTH first */
	int refuse;		 /* websocket upgrades get 503 */
	int hang;		 /* upgrades are never answered */
	int verify;		 /* check ids and signatures */
	int neg;		 /* NIP-77: serve NEG-OPEN (negentropy) */
};

struct peer_conn;
struct neg;

/* A NIP-77 session of "neg" mode. */
struct peer_neg {
	LIST_ENTRY(peer_neg) pn_entry;
	char		     pn_id[PEER_MAX_SUBID + 1];
	struct neg	    *pn_neg;
};

struct peer_sub {
	LIST_ENTRY(peer_sub)   ps_entry;
	struct peer_conn      *ps_conn;
	char		       ps_id[PEER_MAX_SUBID + 1];
	struct filter	      *ps_filters;
	size_t		       ps_nfilters;
	lws_sorted_usec_list_t ps_sul;	 /* delayed EOSE */
	int64_t		       ps_at_ms; /* opened (proc_now_ms()) */
	int		       ps_live;	 /* every filter has limit 0 */
};

enum peer_conn_kind {
	PEER_CONN_HTTP = 0,
	PEER_CONN_WS,
};

/* Per-session data of every HTTP or websocket connection. */
struct peer_conn {
	enum peer_conn_kind   pc_kind;
	struct lws	     *pc_wsi;
	uint64_t	      pc_serial;   /* "conn" in the log, from 1 */
	LIST_ENTRY(peer_conn) pc_entry;	   /* all websockets */
	char		      pc_name[32]; /* "conn <serial>" */
	struct wss_rx	      pc_rx;	   /* message being assembled */
	/* Output; wq_shut once close_after_events is reached. */
	struct wss_queue      pc_out;
	LIST_HEAD(, peer_sub) pc_subs;
	int pc_nsubs;
	LIST_HEAD(, peer_neg) pc_negs; /* NIP-77 sessions */
	uint64_t   pc_events_sent;
	char	   pc_challenge[33];
	int	   pc_challenge_sent;
	int	   pc_authed;
	/* HTTP: the request being read and the response being written. */
	int	   pc_method; /* LWSHUMETH_* */
	char	   pc_uri[64];
	struct buf pc_body;
	int	   pc_body_oversized;
	char	  *pc_resp;
	size_t	   pc_resplen;
};

struct peer {
	struct lws_context *ctx;
	struct lws_vhost   *vhost;
	struct peer_config  cfg;
	/* Stored events, newest first (created_at desc, then id asc). */
	struct event	  **events;
	size_t		    nevents;
	size_t		    capevents;
	LIST_HEAD(, peer_conn) conns;
	int		      nconns;
	uint64_t	      next_serial;
	/* The log (GET /log); cleared by POST /reset. */
	cJSON		     *log_reqs;
	cJSON		     *log_closes;
	cJSON		     *log_opens; /* websocket connections opened */
	cJSON		     *log_auth;
	cJSON		     *log_negs; /* NEG-OPENs */
	uint64_t	      log_connections;
	uint64_t	      log_nreqs;   /* REQs, also past PEER_MAX_LOG */
	uint64_t	      log_nnegs;   /* NEG-OPENs, the same */
	int64_t		      log_last_ms; /* the last REQ or NEG-OPEN */
	uint64_t	      log_events_received;
	uint64_t	      log_bytes_in;
	uint64_t	      log_bytes_out;
	int		      log_max_concurrent_subs;
	/* Subscriptions open over every connection, and their most. */
	int		      nsubs;
	int		      log_max_total_subs;
	/* A plain socket that accepts and never answers (connect timeouts). */
	int		      hang_fd;
	int		      hang_port;
	int		      hang_conns[PEER_MAX_HANG];
	size_t		      nhang;
	uint8_t		      junk_sk[SECKEY_LEN]; /* signs flood events */
	uint64_t	      junk_seq;
	volatile sig_atomic_t stop;
};

extern struct peer *peer;

/* peer.c */
/*
 * Holds fd, a connected socket, open and unread until peer_hang_release()
 * (the oldest is closed when PEER_MAX_HANG are held).  -1 is ignored.
 */
void peer_hang_hold(int fd);
/* Closes every connection held that way. */
void peer_hang_release(void);

/* peer_ws.c */
int  peer_ws_callback(struct lws *, enum lws_callback_reasons, void *, void *,
     size_t);
/*
 * Sends ev to every open subscription it matches (under the configured
 * misbehaviour: forge, close_after_events).  ev stays the caller's.
 */
void peer_fanout(const struct event *);

/* peer_http.c */
/* The HTTP half of peer_ws_callback(); returns the callback result. */
int peer_http_callback(struct peer_conn *, struct lws *,
    enum lws_callback_reasons, void *, size_t);

/* peer_store.c */
/* Empties the store, the log and the configuration.  Never exits. */
void   peer_reset(void);
/*
 * Adds ev to the store, which takes ownership.  Returns 1 if stored (ev
 * stays valid until peer_reset()), 0 if an event with its id was already
 * there, -1 if the store is full; in both of those ev is freed.  Stores
 * every kind the same way: no replaceable or addressable replacement.
 */
int    peer_store_add(struct event *ev);
/*
 * Calls cb for each stored event that the REQ's filters select: per
 * filter at most its limit of the newest matches, the union newest first,
 * at most max events in all (0 = no cap).
 */
void   peer_store_query(const struct filter *, size_t nfilters, size_t max,
      void (*cb)(const struct event *, void *), void *arg);
/*
 * Applies a POST /config object.  Returns 0, or -1 with a reason in err
 * (unknown key or wrong type; nothing is changed then).
 */
int    peer_config_apply(const cJSON *obj, char *err, size_t errlen);
/* The configuration as a JSON object; caller deletes. */
cJSON *peer_config_json(void);
/* The GET /log document; caller frees the text. */
char  *peer_log_text(void);
/* The GET /stats document (counts only, cheap to poll); caller frees. */
char  *peer_stats_text(void);
/* Appends to a log list unless it holds PEER_MAX_LOG entries already. */
void   peer_log_add(cJSON *list, cJSON *item);

#endif
