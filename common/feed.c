/*
 * feed.c: the subscriber side of the accepted feed (see feed.h).  Runs in
 * syncd, discoveryd and historyd.  Notices are hints; every event comes
 * from the store, read by seq.
 */
#include <errno.h>
#include <nanomsg/nn.h>
#include <nanomsg/pubsub.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "event.h"
#include "feed.h"
#include "log.h"
#include "msg.h"
#include "store.h"

/* One batch of rows copied out of the store. */
struct feed_batch {
	size_t	 fb_n;
	size_t	 fb_bytes;
	int	 fb_full;	/* cut short by FEED_BATCH_BYTES */
	int64_t	 fb_seq[FEED_BATCH];
	char	*fb_json[FEED_BATCH];
	size_t	 fb_len[FEED_BATCH];
};

static int
batch_add(const char *json, size_t len, int64_t seq, void *arg)
{
	struct feed_batch	*b = arg;
	char			*copy;

	if (b->fb_n == FEED_BATCH)
		return 1;
	if ((copy = malloc(len + 1)) == NULL)
		fatal("feed: malloc");
	memcpy(copy, json, len);
	copy[len] = '\0';
	b->fb_seq[b->fb_n] = seq;
	b->fb_json[b->fb_n] = copy;
	b->fb_len[b->fb_n] = len;
	b->fb_n++;
	b->fb_bytes += len;
	if (b->fb_bytes >= FEED_BATCH_BYTES) {
		b->fb_full = 1;
		return 1;
	}
	return 0;
}

static void
batch_reset(struct feed_batch *b)
{
	size_t	i;

	for (i = 0; i < b->fb_n; i++)
		free(b->fb_json[i]);
	b->fb_n = 0;
	b->fb_bytes = 0;
	b->fb_full = 0;
}

/*
 * What feed_scan() does, with the hooks the feed needs: *last advances
 * row by row, so a later call resumes exactly after the last row read;
 * f (may be NULL) gets its counters updated.
 */
static int
scan(struct store *store, int64_t after, int64_t upto, feed_cb *cb,
    void *arg, int64_t *last, struct feed *f)
{
	struct feed_batch	*b;
	struct event		*ev;
	char			 err[256];
	size_t			 i;
	int			 n = 0, r, done = 0;

	*last = after;
	if (upto <= after)
		return 0;
	if ((b = calloc(1, sizeof(*b))) == NULL)
		fatal("feed: calloc");
	while (!done) {
		if ((r = store_since_seq(store, *last, FEED_BATCH, batch_add,
		    b)) == -1) {
			n = -1;
			break;
		}
		if (r < FEED_BATCH && !b->fb_full)
			done = 1;
		for (i = 0; i < b->fb_n; i++) {
			if (b->fb_seq[i] > upto) {
				done = 1;
				break;
			}
			ev = event_parse(b->fb_json[i], b->fb_len[i], err,
			    sizeof(err));
			/* relayd stored it, so this is a bug or a damaged
			 * database; exiting would only loop on the row. */
			if (ev == NULL) {
				log_warnx("feed: stored event seq %lld does "
				    "not parse (%s), skipped",
				    (long long)b->fb_seq[i], err);
				if (f != NULL)
					f->f_stats.fs_unreadable++;
			} else {
				if (f != NULL) {
					f->f_stats.fs_events++;
					if (b->fb_seq[i] > f->f_notice_max)
						f->f_stats.fs_unnoticed++;
				}
				cb(arg, b->fb_seq[i], ev);
				event_destroy(ev);
				n++;
			}
			*last = b->fb_seq[i];
		}
		batch_reset(b);
	}
	batch_reset(b);
	free(b);
	return n;
}

int
feed_scan(struct store *store, int64_t after, int64_t upto, feed_cb *cb,
    void *arg, int64_t *last_out)
{
	int64_t	last;
	int	n;

	n = scan(store, after, upto, cb, arg, &last, NULL);
	if (last_out != NULL)
		*last_out = last;
	return n;
}

int
feed_open(struct feed *f, const struct config *cfg, struct store *store,
    int64_t start_seq, feed_cb *cb, void *arg)
{
	char	ep[512];
	int	saved;

	memset(f, 0, sizeof(*f));
	f->f_sock = f->f_fd = -1;
	f->f_store = store;
	f->f_last = f->f_notice_max = start_seq;
	f->f_cb = cb;
	f->f_arg = arg;
	if (chan_endpoint(cfg->run_path, CHAN_ACCEPTED, ep, sizeof(ep)) ==
	    -1) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((f->f_sock = chan_open(NN_SUB, ep, 0)) == -1)
		return -1;
	if ((f->f_fd = chan_rcvfd(f->f_sock)) == -1) {
		saved = errno;
		chan_close(f->f_sock);
		f->f_sock = -1;
		errno = saved;
		return -1;
	}
	return 0;
}

int
feed_fd(const struct feed *f)
{
	return f->f_fd;
}

/* Delivers everything stored after f_last. */
static int
catch_up(struct feed *f)
{
	int	n;

	/* A callback that polls its own feed would deliver twice. */
	if (f->f_busy)
		return 0;
	f->f_busy = 1;
	n = scan(f->f_store, f->f_last, INT64_MAX, f->f_cb, f->f_arg,
	    &f->f_last, f);
	f->f_busy = 0;
	return n;
}

int
feed_drain(struct feed *f)
{
	struct msg_accepted	ma;
	struct msg		m;
	int			r, noticed = 0;

	if (f->f_sock == -1)
		return 0;
	for (;;) {
		if ((r = msg_recv(f->f_sock, &m, NN_DONTWAIT)) == 0)
			break;
		if (r == -1) {
			if (errno == EINTR)
				continue;
			log_warn("feed: receive");
			break;
		}
		if (m.m_type != MSG_ACCEPTED)
			fatalx("unexpected %s message on the accepted channel",
			    msg_type_name(m.m_type));
		if (m.m_len != sizeof(ma))
			fatalx("malformed ACCEPTED message: %zu bytes",
			    m.m_len);
		memcpy(&ma, m.m_data, sizeof(ma));
		msg_free(&m);
		f->f_stats.fs_notices++;
		if (ma.ma_seq > f->f_notice_max + 1)
			f->f_stats.fs_gaps++;
		if (ma.ma_seq > f->f_notice_max)
			f->f_notice_max = ma.ma_seq;
		noticed = 1;
	}
	if (!noticed || f->f_notice_max <= f->f_last)
		return 0;
	return catch_up(f);
}

int
feed_poll(struct feed *f)
{
	return catch_up(f);
}

int64_t
feed_last_seq(const struct feed *f)
{
	return f->f_last;
}

const struct feed_stats *
feed_stats(const struct feed *f)
{
	return &f->f_stats;
}

void
feed_close(struct feed *f)
{
	chan_close(f->f_sock);
	f->f_sock = f->f_fd = -1;
}
