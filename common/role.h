/*
 * role.h: the scaffolding every role except relayd is built on (syncd,
 * discoveryd, historyd, and roles to come), over the process skeleton
 * all four share (proc.h: options, logging, the configuration, signals,
 * the control socket, the loop): the read-only store, one libwebsockets
 * context that only dials out, with the nanomsg descriptors adopted into
 * it, the accepted feed, periodic stats to relayd, the ingest channel and
 * readiness.  A role supplies a struct role_ops and calls role_main()
 * from main().
 *
 * Life of a role process:
 *   1. options, configuration (exit 78 on an error), sockets: control REP
 *      bound, stats and ingest PUSH connected; the control socket answers
 *      from here on ("ready": false while waiting);
 *   2. the database opened read-only, retried with a capped backoff while
 *      relayd has not created or migrated it yet;
 *   3. ops->init() rebuilds the role's state from the store, up to
 *      r_start_seq (the last seq when it was opened);
 *   4. the feed delivers every event stored after r_start_seq to
 *      ops->accepted(), in seq order; readiness is signalled
 *      (GRASPD_READY_FD, ready.h);
 *   5. SIGTERM, SIGINT or a "stop" command: ops->fini(), exit 0.
 */
#ifndef GRASPD_ROLE_H
#define GRASPD_ROLE_H

#include <cjson/cJSON.h>
#include <libwebsockets.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "feed.h"
#include "msg.h"
#include "proc.h"

struct event;
struct store;

/* Ours: a role sends a stats snapshot to relayd this often ... */
#define ROLE_STATS_PERIOD	  10.0
/* ... and every second under NGIT_TEST (200 ms would only add noise). */
#define ROLE_STATS_PERIOD_TEST	  1.0
/* Ours: relayd's /metrics drops a snapshot older than this many periods. */
#define ROLE_STATS_EXPIRE_PERIODS 3
/* Ours: the feed reads the store this often even without a notice. */
#define ROLE_FEED_POLL_PERIOD	  1.0
/* Ours: first and longest wait between attempts to open the database. */
#define ROLE_DB_RETRY_FIRST	  0.1
#define ROLE_DB_RETRY_MAX	  5.0
/* Ours: how long a stopping role lets nanomsg deliver the last reply. */
#define ROLE_STOP_GRACE		  0.1

/* Ours: how long role_ingest() waits for a lagging relayd ... */
#define ROLE_INGEST_WAIT_MS    1000
/* ... and how long it then drops at once rather than wait again. */
#define ROLE_INGEST_BACKOFF_MS 2000

struct role_ctx;

/*
 * What a role adds to the scaffolding.  Every hook may be NULL.  Hooks
 * run on the loop; none may block.
 */
struct role_ops {
	/*
	 * Builds the role's state from the store (ctx->r_store, open).
	 * Events up to ctx->r_start_seq are the role's to read here (see
	 * feed_scan()); later ones come through accepted().  May set
	 * ctx->r_data.  Returns 0, or -1 to end the process with status 1.
	 */
	int (*init)(struct role_ctx *ctx);
	/*
	 * One newly stored event, in seq order; ev valid during the call.
	 * With kinds set, only the events of those kinds (at most
	 * FEED_MAX_KINDS of them; feed_only_kinds()) come here.
	 */
	void (*accepted)(struct role_ctx *ctx, int64_t seq,
	    const struct event *ev);
	const uint32_t *kinds;
	size_t		nkinds;
	/*
	 * NULL, or called once the feed has read past newly stored events,
	 * after accepted() for those of its kinds: for what the role checks
	 * once per commit rather than once per event.
	 */
	void (*caught_up)(struct role_ctx *ctx);
	/* Adds the role's members to the object of `graspctl show`. */
	void (*show)(struct role_ctx *ctx, cJSON *view);
	/* Appends the role's metrics with role_metric(). */
	void (*stats)(struct role_ctx *ctx, cJSON *metrics);
	/* Releases what init made; runs only if init succeeded. */
	void (*fini)(struct role_ctx *ctx);
	/*
	 * Extra libwebsockets protocols for the role's own connections,
	 * terminated by an entry with a NULL name; NULL for none.
	 */
	const struct lws_protocols *protocols;
};

/*
 * A role's process state.  The r_ members above the line may be read by
 * the role's hooks (and r_data written); the rest belong to role.c.
 */
struct role_ctx {
	enum role	       r_role;
	const char	      *r_name; /* "syncd", ... */
	struct config	       r_cfg;
	struct store	      *r_store; /* read-only; NULL until ready */
	struct lws_context    *r_lws;	/* for lws_sul timers */
	struct lws_vhost      *r_vhost;
	int64_t		       r_start_seq; /* where the feed started */
	void		      *r_data;	    /* the role's own state */
	/* ------------------------------------------------------------ */
	const struct role_ops *r_ops;
	struct lws_protocols  *r_protocols; /* ours + ops->protocols */
	struct feed	       r_feed;
	int		       r_feed_open;
	int		       r_ready;
	int		       r_init_done;
	struct proc	       r_proc;	       /* the skeleton (proc.h) */
	int		       r_sock_control; /* REP */
	int		       r_sock_stats;   /* PUSH */
	int		       r_sock_ingest;  /* PUSH */
	char		       r_dbpath[4096];
	char		       r_waiting[5120]; /* why not ready */
	double		       r_db_retry;	/* next wait, s */
	uint64_t	       r_db_attempts;
	uint64_t	       r_stats_sent, r_stats_dropped;
	uint64_t	       r_ingest_sent, r_ingest_dropped;
	int64_t		       r_ingest_congested_until; /* ms */
	uint64_t	       r_control_requests;
	lws_sorted_usec_list_t r_sul_db;
	lws_sorted_usec_list_t r_sul_poll;
	lws_sorted_usec_list_t r_sul_stats;
	lws_sorted_usec_list_t r_sul_stop;
};

/*
 * Runs the role: options -d (foreground, log to stderr; otherwise
 * syslog) and -f FILE (the configuration), then the life described at
 * the top of this file.  Returns 0 after a clean stop (main returns it);
 * exits 78 on a usage or configuration error and 1 (fatal) when the
 * process cannot go on.  ops must stay valid while it runs.
 */
int role_main(int argc, char **argv, enum role role,
    const struct role_ops *ops);

/*
 * Sends one fetched event (its JSON text, len bytes) to relayd on the
 * ingest channel, with this role as origin and relay_url (NULL for none)
 * as where it came from.  relayd checks it like any untrusted event.
 * Never blocks.  Returns 0 when nanomsg took it, or -1 with errno
 * (EAGAIN: relayd is not there or is behind; the caller decides whether
 * to fetch again later).
 */
int role_ingest(struct role_ctx *ctx, const char *relay_url, const char *json,
    size_t len);

/*
 * Appends ["name",value] to a metrics array.  Names are snake_case,
 * "graspd_<role>_..." for a role's own; labels, if any, go in the name as
 * name{key="value"} and never carry relay URLs or pubkeys.
 */
void role_metric(cJSON *metrics, const char *name, double value);

/* Seconds since the process started. */
int64_t role_uptime(const struct role_ctx *ctx);

/* Monotonic milliseconds. */
int64_t role_now_ms(void);

#endif
