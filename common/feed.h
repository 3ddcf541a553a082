/*
 * feed.h: the accepted feed as a subscriber sees it (design.md,
 * "Channels"): a SUB socket on relayd's "accepted" channel whose notices
 * only say "read the database again".  Used by syncd, discoveryd and
 * historyd.
 *
 * SQLite is the truth, messages are hints.  A notice makes the feed read
 * the events with seq > last from the store, in seq order, hand each to
 * the callback and advance last; feed_poll() does the same without a
 * notice, so a notice that was lost (relayd restarted, the PUB socket
 * dropped it, we connected late) costs latency, never an event.  The
 * feed owns no timer and no loop: the caller polls feed_fd() and calls
 * feed_drain() when it is readable, and calls feed_poll() periodically.
 */
#ifndef GRASPD_FEED_H
#define GRASPD_FEED_H

#include <stddef.h>
#include <stdint.h>

struct config;
struct event;
struct store;

/* Ours: rows read from the store per query while catching up ... */
#define FEED_BATCH	 256
/* ... and bytes of event JSON copied out per query (events reach 1 MiB). */
#define FEED_BATCH_BYTES (8u * 1024 * 1024)

/*
 * Called once per stored event, in increasing seq order, each seq at most
 * once per feed.  ev is owned by the feed and valid only during the
 * call.  The callback may query the store (rows are copied out before it
 * runs) but must not call feed_drain() or feed_poll() on its own feed.
 */
typedef void feed_cb(void *arg, int64_t seq, const struct event *ev);

struct feed_stats {
	uint64_t fs_notices;	/* ACCEPTED notices received */
	uint64_t fs_gaps;	/* notices whose seq skipped past the
					   one after the previous notice */
	uint64_t fs_unnoticed;	/* events read, or passed by
					   feed_only_kinds(), before any
					   notice named them (a notice lost,
					   late, or sent before we
					   connected) */
	uint64_t fs_events;	/* events delivered */
	uint64_t fs_unreadable; /* stored rows that did not parse
					   (skipped, logged) */
};

struct feed {
	int		  f_sock;	/* SUB, or -1 */
	int		  f_fd;		/* its NN_RCVFD */
	struct store	 *f_store;	/* not owned */
	int64_t		  f_last;	/* last seq delivered */
	int64_t		  f_notice_max; /* highest seq noticed */
	feed_cb		 *f_cb;
	void		 *f_arg;
	int		  f_busy;  /* inside a catch-up */
	const uint32_t	 *f_kinds; /* feed_only_kinds(), or NULL: all */
	size_t		  f_nkinds;
	struct feed_stats f_stats;
};

/*
 * Connects a SUB socket to the accepted channel of cfg->run_path (relayd
 * binds it, perhaps later: nanomsg connects in the background) and
 * prepares to deliver the events of store with seq > start_seq to cb, as
 * feed_scan_tags() gives them: id, pubkey, created_at, kind and tags,
 * without content, sig or json (what the roles keep needs no more, and
 * parsing each event in full was most of their cost per event under
 * ingest).  Delivers nothing yet.  store is borrowed and must outlive the feed.
 * Returns 0, or -1 with errno set (and f_sock -1) if the socket could
 * not be made; a feed that failed to open may still be closed.
 */
int feed_open(struct feed *f, const struct config *cfg, struct store *store,
    int64_t start_seq, feed_cb *cb, void *arg);

/*
 * From now on delivers only the events of the nkinds kinds listed (at
 * most FEED_MAX_KINDS; kinds borrowed, kept as long as the feed): the
 * feed still moves past the others, in order, without reading their
 * text.  Under ingest each role wants a few kinds of hundreds of events
 * a commit, and copying and reading the rest was most of its CPU.
 */
void feed_only_kinds(struct feed *f, const uint32_t *kinds, size_t nkinds);

/* The descriptor that polls readable while a notice waits, or -1. */
int feed_fd(const struct feed *f);

/*
 * Receives every waiting notice without blocking, then delivers the
 * events stored since the last one delivered.  A message on the channel
 * that is not a well-formed ACCEPTED notice ends the process (fatalx): it
 * can only come from a broken relayd.  Returns the number of events
 * delivered, or -1 if the store could not be read (logged; the next call
 * retries).
 */
int feed_drain(struct feed *f);

/*
 * Delivers the events stored since the last one delivered, without
 * looking at notices.  Call it periodically.  Returns as feed_drain().
 */
int feed_poll(struct feed *f);

/* The seq of the last event delivered (start_seq before any). */
int64_t feed_last_seq(const struct feed *f);

/* The counters since feed_open(). */
const struct feed_stats *feed_stats(const struct feed *f);

/* Closes the socket.  The store is not touched.  Idempotent. */
void feed_close(struct feed *f);

/*
 * Delivers the stored events with after < seq <= upto to cb in seq
 * order, FEED_BATCH rows per query, copying each batch out of the store
 * before the callbacks run (so cb may query the store).  Rows that do not
 * parse are logged and skipped.  What a role's init uses to rebuild its
 * state from the events up to where its feed starts.  Returns the number
 * of events delivered, or -1 on a store error; *last_out (if not NULL)
 * gets the last seq read, parsed or not.
 */
int feed_scan(struct store *store, int64_t after, int64_t upto, feed_cb *cb,
    void *arg, int64_t *last_out);

/*
 * As feed_scan(), for callers that read no more of an event than its id,
 * pubkey, created_at, kind and tags (the inventory): ev->content is empty,
 * ev->sig zero and ev->json NULL.  The stored text is read in place, one
 * statement for the whole range, and a tag list in relayd's canonical
 * form is split without building a JSON tree; a row that is not in that
 * form (an escape in a tag, say) is parsed in full, so every event
 * carries what event_parse() would give it.  cb may read the store.
 * Returns as feed_scan().
 */
int feed_scan_tags(struct store *store, int64_t after, int64_t upto,
    feed_cb *cb, void *arg, int64_t *last_out);

/* Ours: events feed_scan_ahead() reads before their callback runs. */
#define FEED_AHEAD 4

/*
 * As feed_scan_tags(), but each event goes first to hint, FEED_AHEAD
 * events (fewer at the end) before it goes to cb, both with arg; the
 * event stays where it is between the two calls.  hint must not change
 * what cb will find (it is for warming caches: the inventory computes
 * its hashes and prefetches its slots).  With hint NULL, as
 * feed_scan_tags().
 */
int feed_scan_ahead(struct store *store, int64_t after, int64_t upto,
    feed_cb *hint, feed_cb *cb, void *arg, int64_t *last_out);

/* Ours: kinds feed_scan_kinds() and feed_only_kinds() take at most. */
#define FEED_MAX_KINDS 8

/*
 * As feed_scan(), but delivers only the events of the nkinds kinds given
 * (at most FEED_MAX_KINDS), found through the kind index: what a role
 * that keeps state about a few kinds reads at start beside the
 * inventory, without reading every stored event.  Returns the number
 * delivered, or -1 on a store error (logged).
 */
int feed_scan_kinds(struct store *store, int64_t after, int64_t upto,
    const uint32_t *kinds, size_t nkinds, feed_cb *cb, void *arg);

#endif
