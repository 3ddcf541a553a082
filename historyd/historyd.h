/*
 * historyd.h: private header of historyd, graspd's GRASP-03 history-only
 * mailbox probe role.
 *
 * historyd.c    main, the role hooks, the retained relay lists, the
 *               desired probe relays and their scopes read from the
 *               inventory's tables (invdb.h) in one read transaction
 *               (participant mailboxes, owner/maintainer repository
 *               inboxes on public instances, fallback relays), filter
 *               construction, the workers on the connection manager, the
 *               view and the metrics
 * hist_sched.c  the scheduler, pure (no loop, no network; a caller
 *               supplied clock): per-relay filter cursors, admission of
 *               at most one new due relay per maintenance pass, at most
 *               one group in flight per relay, at most HIST_MAX_WORKERS
 *               workers, 24 h refresh after a rotation, 5 min retry of
 *               each failed group by itself (a retry pass of the failed
 *               groups only; the successful ones wait for the refresh)
 *
 * historyd holds no inventory: what it knows of repositories, roots,
 * threads and eligible authors it reads from the tables relayd keeps
 * (invdb.h, eligible.h) at each reconciliation.
 *
 * Nothing is persisted: after a restart every relay's cursor starts from
 * its first filter (GRASP-03: "The in-memory group cursor is
 * intentionally not restored").
 */
#ifndef GRASPD_HISTORYD_H
#define GRASPD_HISTORYD_H

#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "hmap.h"

/* GRASP-03 text: "Up to 32 relay workers may run at once". */
#define HIST_MAX_WORKERS     32
/* GRASP-03 text: "A successful complete rotation refreshes after 24
 * hours" ... */
#define HIST_REFRESH	     (24.0 * 3600)
/* ... "a failed group advances the cursor after a five-minute delay". */
#define HIST_RETRY	     (5.0 * 60)
/* Ours, like discoveryd (ngit-grasp's 2 s background tick): the
 * maintenance pass, which admits at most one new due relay. */
#define HIST_MAINT_PERIOD    2.0
/* Ours: relays listed one by one in `graspctl show historyd`. */
#define HIST_VIEW_MAX_RELAYS 1000

/* Why a relay is probed (a set). */
#define HIST_P_PARTICIPANT 0x01 /* a participant's history mailbox */
#define HIST_P_REPOSITORY  0x02 /* an owner's/maintainer's inbox */
#define HIST_P_FALLBACK	   0x04 /* an operator fallback relay */

struct hist_sched;

/* One desired (or draining) history-probe relay. */
struct hist_relay {
	char		   *hr_key;	 /* canonical relay key, owned */
	unsigned	    hr_purposes; /* HIST_P_* */
	int		    hr_trusted;	 /* operator-configured */
	int		    hr_desired;	 /* still wanted by the inventory */
	int		    hr_mark;	 /* reconciliation scratch */
	struct conn_filters hr_filters;	 /* stable-sorted, byte-bounded */
	size_t		    hr_cursor;	 /* next filter; never persisted */
	size_t		    hr_rot_left; /* groups left in this rotation */
	int		    hr_added;	 /* a thread joined mid-rotation */
	int64_t		    hr_due_ms;	 /* clock of the scheduler; 0: now */
	/* Failed groups (filter text -> (void *)1), retried by themselves
	 * from hr_retry_ms on, outside the rotation. */
	struct hmap	    hr_failed;
	int64_t		    hr_retry_ms;
	size_t		    hr_retry_pos; /* where the next retry looks */
	int		    hr_retrying;  /* the worker runs failed groups */
	char		   *hr_group;	  /* the group in flight, owned */
	int		    hr_active;	  /* holds a worker slot */
	int		    hr_inflight;  /* a group is being fetched */
	uint64_t	    hr_groups_ok, hr_groups_failed, hr_rotations;
	const char	   *hr_last;	/* last group result, static */
	struct hmap	    hr_threads; /* root ids, coordinates in scope */
	void		   *hr_conn;	/* the caller's (struct conn *) */
	void		   *hr_req;	/* the caller's (struct conn_req *) */
};

struct hist_sched_ops {
	/*
	 * Starts fetching filter (r's current group).  Returns 0 when the
	 * fetch started (hist_sched_done() follows later, never from inside
	 * this call), -1 when it could not (counted as a failed group).
	 */
	int (*start)(void *arg, struct hist_relay *r, const char *filter);
	/* r gives its worker slot back (may release a connection). */
	void (*release)(void *arg, struct hist_relay *r);
};

struct hist_sched {
	struct hmap		     hs_relays; /* key -> struct hist_relay */
	size_t			     hs_nactive;
	size_t			     hs_max_workers;
	int64_t			     hs_refresh_ms, hs_retry_ms;
	const struct hist_sched_ops *hs_ops;
	void			    *hs_arg;
	uint64_t		     hs_admitted, hs_passes;
};

void hist_sched_init(struct hist_sched *, const struct hist_sched_ops *,
    void *arg, int64_t refresh_ms, int64_t retry_ms);
/* Frees every relay (release is called for active ones). */
void hist_sched_free(struct hist_sched *);
/* Reconciliation: every relay undesired until wanted again. */
void hist_sched_unmark(struct hist_sched *);
/*
 * Wants relay key for purposes; makes it (due at once) if new.
 * Returns it.
 */
struct hist_relay *hist_sched_want(struct hist_sched *, const char *key,
    unsigned purposes, int trusted);
/*
 * Gives r its new filter set (takes f's contents).  An unchanged set
 * keeps everything; a changed one keeps the cursor modulo the new size.
 */
void	    hist_sched_set_filters(struct hist_sched *, struct hist_relay *r,
	   struct conn_filters *f);
/*
 * r's scope gained a thread it did not cover.  An idle relay is due at
 * once; a relay in the middle of a rotation (its worker running, or
 * released after a failed group) finishes it and then starts a new one
 * at once instead of after the 24 h refresh, since the new thread's
 * filters may lie behind its cursor.
 */
void	    hist_sched_added(struct hist_sched *, struct hist_relay *r);
/* Ends reconciliation: undesired idle relays are freed. */
void	    hist_sched_sweep(struct hist_sched *);
/* A maintenance pass: admits at most one new due relay.  Returns 1 if
 * it admitted one. */
int	    hist_sched_pass(struct hist_sched *, int64_t now_ms);
/* The group in flight on r ended (ok: complete).  r may be freed. */
void	    hist_sched_done(struct hist_sched *, struct hist_relay *r, int ok,
	   int64_t now_ms);
/*
 * When r is due next: its rotation, or, between rotations, the retry of
 * its failed groups if that comes first.
 */
int64_t	    hist_relay_due(const struct hist_relay *r);
/* "idle", "waiting", "active", "in_flight". */
const char *hist_relay_state(const struct hist_relay *r, int64_t now_ms);

#endif
