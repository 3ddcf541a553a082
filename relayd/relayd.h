/*
 * relayd.h: private header of relayd, the websocket and HTTP server of
 * graspd and the only process that writes events.
 *
 * relayd.c       main, options, the libwebsockets loop, signals
 * relay_ws.c     NIP-01 messages: EVENT, REQ, CLOSE; subscriptions; output
 * relay_ingest.c the event pipeline: checks, policy, batched commit, OK,
 *                fan-out
 * relay_http.c   NIP-11, the landing page, /metrics, CORS, OPTIONS
 * relay_chan.c   the nanomsg channels: ingest, accepted, stats, control
 * relay_neg.c    NIP-77 negentropy sync: NEG-OPEN, NEG-MSG, NEG-CLOSE
 */
#ifndef GRASPD_RELAYD_H
#define GRASPD_RELAYD_H

#include <libwebsockets.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "config.h"
#include "filter.h"
#include "msg.h"
#include "policy.h"
#include "store.h"

/*
 * Limits, advertised in NIP-11 "limitation" (nips.md 2).  Where a number
 * is ours, the comment says why.
 */
/* Ours: 1 MiB, room for a 60 kB patch (NIP-34) many times over. */
#define RELAY_MAX_MESSAGE	(1024 * 1024)
/* STRFRY maxSubsPerConnection (nips.md 1.10). */
#define RELAY_MAX_SUBS		200
/* Ours: filters in one REQ; GRASP-02 peers send one filter per REQ. */
#define RELAY_MAX_FILTERS	50
/* NIP-01: a subscription id is at most 64 characters. */
#define RELAY_MAX_SUBID		64
/* STRFRY maxNumTags (nips.md 1.10). */
#define RELAY_MAX_TAGS		2000
/* Ours: unicode characters of content (PR and issue bodies are markdown). */
#define RELAY_MAX_CONTENT	(256 * 1024)
/* STRFRY rejectEventsNewerThanSeconds (nips.md 1.10). */
#define RELAY_CREATED_AT_AHEAD	900
/* Ours: bytes queued to one client before it is dropped as too slow. */
#define RELAY_MAX_OUTQ		(32 * 1024 * 1024)
/* Ours: NIP-77 sessions open at once on one connection. */
#define RELAY_MAX_NEGS		8
/*
 * Ours: items held by all NIP-77 sessions together (40 bytes each, so
 * 160 MB), beyond which a NEG-OPEN waits for others to finish.
 */
#define RELAY_NEG_MAX_HELD	4000000

/* Ours: a commit with this many events means load: batch for longer. */
#define RELAY_BATCH_BUSY	8
/* Ours: how long a loaded relay gathers events for one commit. */
#define RELAY_BATCH_WAIT_US	3000

/* What relayd reports as its software (NIP-11 requires a URL). */
#define RELAY_SOFTWARE		"https://github.com/graspd/graspd"
#define RELAY_VERSION		"0.1.0"

struct relay_conn;
struct relay_neg;

struct relay_sub {
	LIST_ENTRY(relay_sub)	 rs_entry;
	struct relay_conn	*rs_conn;
	char			 rs_id[RELAY_MAX_SUBID + 1];
	struct filter		*rs_filters;
	size_t			 rs_nfilters;
};

struct relay_out {
	STAILQ_ENTRY(relay_out)	 ro_entry;
	size_t			 ro_len;
	unsigned char		 ro_data[];	/* LWS_PRE + ro_len bytes */
};

enum conn_kind {
	CONN_HTTP = 0,
	CONN_WS,
};

/* Per-session data of every HTTP or websocket connection. */
struct relay_conn {
	enum conn_kind		 rc_kind;
	struct lws		*rc_wsi;
	uint64_t		 rc_serial;	/* never reused */
	LIST_ENTRY(relay_conn)	 rc_entry;	/* all websockets */
	struct buf		 rc_rx;		/* message being assembled */
	int			 rc_rx_oversized;
	STAILQ_HEAD(, relay_out) rc_outq;
	size_t			 rc_outbytes;
	LIST_HEAD(, relay_sub)	 rc_subs;
	int			 rc_nsubs;
	LIST_HEAD(, relay_neg)	 rc_negs;	/* NIP-77 sessions */
	int			 rc_nnegs;
	double			 rc_tokens;	/* EVENT rate bucket */
	int64_t			 rc_tokens_at;	/* ms of last refill */
	int			 rc_closing;
	char			 rc_peer[64];
	/* HTTP: the response body waiting for a writable callback. */
	char			*rc_body;
	size_t			 rc_bodylen;
};

struct relay_stats {
	uint64_t	connections_total;
	uint64_t	msgs_in_event, msgs_in_req, msgs_in_close, msgs_in_other;
	uint64_t	msgs_in_neg;
	uint64_t	events_accepted, events_duplicate, events_refused;
	uint64_t	events_invalid, events_ephemeral;
	uint64_t	http_requests;
	uint64_t	commits, committed_events;
	uint64_t	ingested[ROLE_COUNT];	/* by origin role */
};

struct relayd {
	struct config		 cfg;
	struct policy		 policy;
	struct store		*store;
	struct lws_context	*ctx;
	struct lws_vhost	*vhost;
	LIST_HEAD(, relay_conn)	 conns;
	int			 nconns;
	uint64_t		 next_serial;
	struct relay_stats	 stats;
	char			 owner_hex[65];
	char			*nip11;		/* cached document */
	size_t			 nip11_len;
	int			 sock_ingest;	/* nanomsg PULL */
	int			 sock_accepted;	/* nanomsg PUB */
	int			 sock_stats;	/* nanomsg PULL */
	int			 sock_control;	/* nanomsg REP */
	time_t			 started;
	volatile int		 stop;
};

extern struct relayd *relayd;

/* relayd.c */
int64_t	relay_now_ms(void);

/* relay_ws.c */
int	relay_ws_callback(struct lws *, enum lws_callback_reasons, void *,
	    void *, size_t);
/* Queues text for the client; drops the connection when it lags. */
void	relay_send(struct relay_conn *, const char *, size_t);
void	relay_send_notice(struct relay_conn *, const char *);
void	relay_send_ok(struct relay_conn *, const char *id_hex, int ok,
	    const char *msg);
/* Sends ev to every live subscription it matches. */
void	relay_fanout(const struct event *);

/* relay_chan.c */
void	relay_chan_open(void);
void	relay_chan_close(void);
/* Tells the supervisor we are ready (GRASPD_READY_FD), once. */
void	relay_chan_notify_ready(void);
/* Publishes the accepted notice of a stored event. */
void	relay_chan_publish(int64_t seq, const struct event *);
int	relay_chan_callback(struct lws *, enum lws_callback_reasons, void *,
	    void *, size_t);
/* The latest stats snapshot of a role, or NULL. */
const cJSON *relay_chan_role_stats(enum role);

/* relay_ingest.c */
/* An event fetched by another role: the same pipeline, no client limits. */
void	relay_ingest_remote(enum role origin, const char *url, size_t urllen,
	    const char *json, size_t len);
/* A client EVENT: checks, then queues it for the next batched commit. */
void	relay_ingest_client(struct relay_conn *, const struct json *evj);
/* Drops references to a closing connection from pending work. */
void	relay_ingest_forget(struct relay_conn *);
void	relay_ingest_init(void);
void	relay_ingest_flush_now(void);

/* relay_neg.c */
/* Handles a message whose verb starts "NEG-" (NIP-77); never exits. */
void	relay_neg_message(struct relay_conn *, const struct json *msg);
/* Frees the connection's negentropy sessions. */
void	relay_neg_release(struct relay_conn *);

/* relay_http.c */
int	relay_http_request(struct relay_conn *, struct lws *);
int	relay_http_writeable(struct relay_conn *, struct lws *);
int	relay_nip11_build(void);
/* relayd's own counters as [["name{labels}",value],...]; caller frees. */
cJSON	*relay_own_metrics(void);

#endif
