/*
 * conn_int.h: what the files of the outbound connection manager share
 * (conn.c: requests, admission, rate limits, AUTH, connections, the
 * manager; conn_msg.c: the messages a relay sends; conn_link.c: the
 * link's life, dialling to drop), and nothing else includes.  conn.h is
 * what the roles use.
 */
#ifndef GRASPD_CONN_INT_H
#define GRASPD_CONN_INT_H

#include <sys/queue.h>

#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "json.h"

/* Ours: an rx buffer grown past this is released after its message. */
#define CONN_RX_KEEP	(64u * 1024)
/* Ours: bytes of a relay's text (CLOSED, NOTICE) we keep or log. */
#define CONN_REASON_MAX 200

enum req_kind {
	REQ_FETCH,
	REQ_PAGINATE,
	REQ_LIVE,
	REQ_NEG, /* a NIP-77 reconciliation */
};

enum req_where {
	RQ_NONE,
	RQ_PENDING,
	RQ_OPEN,
	RQ_PARKED,
	RQ_ENDING, /* in c_ending, about to be finished */
};

/* Why a request is parked. */
enum conn_req_park {
	PARK_AUTH = 1,	/* CLOSED auth-required, AUTH may fix it */
	PARK_RECONNECT, /* live: wait for the next connection */
};

/* Admission rank: live subscriptions before any fetch. */
#define RANK_LIVE (-1)

/* One id seen in a fetch or pagination, with its created_at. */
struct seen {
	uint8_t s_id[EVENT_ID_LEN];
	int64_t s_at;
	int	s_used;
};

/* Open-addressed set of ids (checked ids are SHA-256: uniform). */
struct idset {
	struct seen *is_v;
	size_t	     is_cap; /* 0 or a power of two */
	size_t	     is_n;
};

struct conn_req {
	TAILQ_ENTRY(conn_req)	r_entry;
	struct conn	       *r_conn;
	enum req_kind		r_kind;
	int			r_rank; /* RANK_LIVE or a prio */
	enum req_where		r_where;
	enum conn_req_park	r_park;
	char			r_subid[CONN_SUBID_MAX + 1];
	int			r_slot; /* lent by c_budget while open, or -1 */
	/* The filters of the REQ, comma-separated JSON objects. */
	char		       *r_filters;
	size_t			r_filters_len;
	/* The same, parsed: what a delivered event must match (none if
	 * our own parser refuses a filter the relay may take). */
	struct filter	       *r_match;
	size_t			r_nmatch;
	/* Pagination: the base filter and the current page's bounds. */
	struct json_doc	       *r_doc;
	const struct json      *r_base;
	int			r_has_until;
	int64_t			r_until;
	int			r_has_since;
	int64_t			r_since;
	uint64_t		r_page_inrange; /* events <= until */
	uint64_t		r_page_new;
	int64_t			r_page_min;
	struct idset		r_seen;
	struct conn_fetch_stats r_st;
	double			r_timeout;
	struct conn_fetch_cb	r_cb;
	/* A result decided before the REQ went out, given by r_sul. */
	int			r_fail_pending;
	enum conn_fetch_result	r_fail_res;
	char			r_reason[CONN_REASON_MAX + 1];
	int			r_in_cb;
	int			r_cancelled;
	lws_sorted_usec_list_t	r_sul;
	/* Negentropy: our set (kept to start again after AUTH), the
	 * session of the current NEG-OPEN, and a result decided by the
	 * relay's answer (else mapped from the fetch result). */
	struct neg_item	       *r_items;
	size_t			r_nitems;
	struct neg	       *r_neg;
	int			r_neg_fresh; /* r_neg not initiated yet */
	struct conn_neg_stats	r_nst;
	struct conn_neg_cb	r_ncb;
	int			r_neg_decided;
	enum conn_neg_result	r_neg_res;
};

TAILQ_HEAD(conn_reqq, conn_req);

/* One message waiting for a writeable callback. */
struct conn_out {
	TAILQ_ENTRY(conn_out) o_entry;
	size_t		      o_len;  /* payload bytes */
	int		      o_slot; /* a CLOSE's budget slot, or -1 */
	unsigned char	     *o_buf;  /* LWS_PRE + payload */
};

TAILQ_HEAD(conn_outq, conn_out);

struct conn {
	TAILQ_ENTRY(conn)      c_entry;
	struct conn_mgr	      *c_mgr;
	char		       c_key[RELAYURL_MAX + 1];
	struct relayurl	       c_url;
	unsigned	       c_flags;
	unsigned	       c_holds;
	enum conn_state	       c_link;	   /* never RATE_LIMITED */
	enum conn_state	       c_reported; /* as the hook last saw it */
	struct lws	      *c_wsi;
	int		       c_dialing;
	uint64_t	       c_resolve;     /* lookup in flight, or 0 */
	int64_t		       c_retry_ms;    /* BACKOFF, DEAD, REFUSED */
	int64_t		       c_cool_ms;     /* end of cooldown, or 0 */
	int64_t		       c_last_req_ms; /* 0: none yet */
	double		       c_interval;    /* pacing, seconds */
	int64_t		       c_streak_ms;   /* first failure, or 0 */
	unsigned	       c_failures;    /* consecutive, until the
						   relay answers in full */
	int64_t		       c_up_ms;	      /* link up since, or 0 */
	char		       c_reason[CONN_REASON_MAX + 1];
	struct conn_reqq       c_pending;
	struct conn_reqq       c_open;
	struct conn_reqq       c_parked;
	struct conn_reqq       c_ending;
	unsigned	       c_npending, c_nopen, c_nparked, c_nlive;
	struct conn_outq       c_out;
	struct buf	       c_rx;
	unsigned	       c_malformed_now; /* this link */
	int		       c_auth_sent;
	int		       c_authed;
	char		       c_auth_id[EVENT_ID_HEX_LEN + 1];
	uint64_t	       c_bytes_in, c_bytes_out, c_events;
	uint64_t	       c_failures_total, c_malformed, c_rate_limits;
	uint64_t	       c_stray, c_bad_events, c_ingest_dropped;
	uint64_t	       c_neg_sessions, c_neg_bytes;
	int		       c_retire_queued;
	struct conn_budget     c_budget;       /* shared with the roles */
	int		       c_budget_tried; /* opened, or failed to */
	lws_sorted_usec_list_t c_sul_connect;
	lws_sorted_usec_list_t c_sul_retry;
	lws_sorted_usec_list_t c_sul_pump;
	lws_sorted_usec_list_t c_sul_retire;
};

TAILQ_HEAD(conn_list, conn);

struct conn_mgr {
	struct lws_context	*m_lws;
	struct lws_vhost	*m_vhost;
	int			 m_tls_ready; /* m_vhost has a client SSL */
	struct config		*m_cfg;
	const struct conn_hooks *m_hooks;
	void			*m_arg;
	struct conn_list	 m_conns;
	struct relayurl_self	 m_self;
	uint64_t		 m_next_sub;
	int			 m_no_owner_key_logged;
	int			 m_no_budget_logged;
	/* Totals that outlive retired connections. */
	uint64_t		 m_bytes_in, m_bytes_out, m_events;
	uint64_t		 m_failures, m_malformed, m_rate_limits;
	uint64_t		 m_stray, m_bad_events, m_ingest_dropped;
	uint64_t		 m_results[FETCH_RATE_LIMITED + 1];
	uint64_t		 m_neg_results[NEGR_RATE_LIMITED + 1];
	uint64_t		 m_neg_rounds, m_neg_bytes_in, m_neg_bytes_out;
};


enum drop_mode {
	DROP_FAILURE, /* counts against the relay, backoff */
	DROP_REFUSED, /* the target was refused at connect */
};

/*
 * Copies at most CONN_REASON_MAX bytes of a relay's text into dst (size
 * CONN_REASON_MAX + 1), control bytes replaced, so that it can be logged
 * and shown.
 */
void conn_clean_text(char *dst, const char *src, size_t len);
/* Answers ["AUTH",challenge] with a kind 22242 event (NIP-42). */
void conn_auth(struct conn *c, const char *challenge, size_t len);
/* AUTH accepted or refused: requests parked for it go on or end. */
void conn_auth_result(struct conn *c, int ok, const char *msg);
/* Forgets the link's state: queued messages, buffer, AUTH, pacing. */
void conn_clear_link(struct conn *c);
/* 1 while a rate-limit cooldown of c runs. */
int  conn_cooling(struct conn *c);
/* Counts a malformed message against c's relay. */
void conn_count_malformed(struct conn *c);
/* Forgets the wsi; kills it unless its own callback will (in_cb). */
void conn_detach(struct conn *c, int in_cb);
/*
 * One complete message from the relay, to its handler in conn_msgs[].
 * Malformed ones count against the relay; too many drop the link (the
 * caller sees c_wsi change).
 */
void conn_dispatch(struct conn *c, const char *text, size_t len);
/*
 * Finishes every request in c_ending with res and reason (NULL: each
 * request's own r_reason).  A done callback may cancel one still there.
 */
void conn_end_stranded(struct conn *c, enum conn_fetch_result res,
    const char *reason);
/*
 * The link ended or never came up.
 * Fetches end with FETCH_DISCONNECTED; live subscriptions are parked
 * for the next link.  in_cb: we run in a callback of c's wsi, which
 * closes it (by returning -1, or because it is closing anyway).
 */
void conn_lost(struct conn *c, const char *why, enum drop_mode mode, int in_cb);
/* Queues c's retirement once it has nothing left to do. */
void conn_maybe_retire(struct conn *c);
/* A link or a request needs the relay: live subscriptions, requests. */
int  conn_needed(const struct conn *c);
/* The message o left or was dropped: a CLOSE frees its budget slot. */
void conn_out_free(struct conn *c, struct conn_out *o);
/* The relay answered a request in full (EOSE, NEG-MSG, NEG-ERR) or kept
 * the link up for CONN_STABLE_SECS: its failure streak is over. */
void conn_proven(struct conn *c);
/* Admits waiting requests as far as the link, cooldown, ledger and
 * pacing allow, ours and the relay's budget shared with the other
 * roles; schedules itself for the next pacing slot. */
void conn_pump(struct conn *c);
/* The relay said slow down (what: "OK", "NOTICE"): cooldown, slower pacing. */
void conn_rate_limited(struct conn *c, const char *what, const char *text,
    size_t len);
/* Tells the role's hook if the reported state changed. */
void conn_report(struct conn *c);
/* Runs cb on sul after secs (0 or less: at once) on c's loop. */
void conn_sched(struct conn *c, lws_sorted_usec_list_t *sul, sul_cb_t cb,
    double secs);
/* Queues a message for the relay; the link must be up.  Returns the
 * queued message, or NULL when the link is not up (nothing queued). */
struct conn_out *conn_send(struct conn *c, const char *text, size_t len);
/* Adds id (seen at at) to s; conn_idset_has(): 1 if s holds id. */
void		 conn_idset_add(struct idset *s, const uint8_t id[EVENT_ID_LEN],
		int64_t at);
int	conn_idset_has(const struct idset *s, const uint8_t id[EVENT_ID_LEN]);
/* Forgets the ids newer than max_at: they cannot come back. */
void	conn_idset_prune(struct idset *s, int64_t max_at);
/* The monotonic clock in milliseconds. */
int64_t conn_now_ms(void);
/* The filter of r's next page into r_filters. */
void	conn_req_build_page(struct conn_req *r);
/*
 * Takes r out of its list; if its subscription is open on a live link,
 * CLOSEs it.  Our ledger's slot is free from here on: the CLOSE leaves
 * before any later REQ of this connection.  The shared budget's slot is
 * free for the other roles once the CLOSE has left.
 */
void	conn_req_close(struct conn_req *r);
/* Inserts r into c_pending behind every request of its rank or lower. */
void	conn_req_enqueue(struct conn_req *r);
/*
 * Ends a fetch, pagination or reconciliation: CLOSE (NEG-CLOSE) if open,
 * done callback, free.  The caller must not touch r afterwards.
 */
void	conn_req_finish(struct conn_req *r, enum conn_fetch_result res,
       const char *reason);
/* Frees r and what it holds (its timer cancelled); r is in no list. */
void	conn_req_free(struct conn_req *r);
/* Moves r to c_parked for why (AUTH, or the next connection). */
void	conn_req_park(struct conn_req *r, enum conn_req_park why);
/* Takes r out of whichever list holds it. */
void	conn_req_unlink(struct conn_req *r);
/* A request's timer's callback: its timeout or its deferred end (conn.c). */
void	conn_req_sul(lws_sorted_usec_list_t *sul);
/* The retry timer's callback: dials the relay again (conn_link.c). */
void	conn_sul_retry(lws_sorted_usec_list_t *sul);

#endif
