/*
 * feed_test.c: the accepted-feed subscriber (feed.c) against a real
 * SQLite store written through store_put() and a real PUB socket bound
 * here, as relayd binds it: notices trigger delivery in seq order, a lost
 * notice costs latency but no event, and a feed reopened at a saved seq
 * neither misses nor repeats an event.
 */
#define _GNU_SOURCE
#include <sys/stat.h>
#include <sys/wait.h>

#include <nanomsg/nn.h>
#include <nanomsg/pubsub.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "event.h"
#include "feed.h"
#include "log.h"
#include "msg.h"
#include "store.h"
#include "t.h"
#include "tdir.h"
#include "tunit_child.h"

static const uint8_t sk[SECKEY_LEN] = { [0 ... 31] = 0x42 };

static char	     tmpdir[64];
static struct config cfg;      /* only run_path is used */
static struct store *wr;       /* relayd's side: writes */
static struct store *rd;       /* the role's side: read-only */
static int	     pub = -1; /* relayd's PUB */
static int	     counter;  /* makes events distinct */

/* What a feed delivered. */
struct got {
	size_t	n;
	int64_t seq[2048];
	uint8_t id[2048][EVENT_ID_LEN];
	int	queried_ok; /* the callback could use the store */
};

static void
collect(void *arg, int64_t seq, const struct event *ev)
{
	struct got *g = arg;

	if (g->n < 2048) {
		g->seq[g->n] = seq;
		memcpy(g->id[g->n], ev->id, EVENT_ID_LEN);
	}
	g->n++;
	if (store_has_id(rd, ev->id) == 1)
		g->queried_ok++;
}

/* Stores a new event of kind; returns its seq (its id into id_out). */
static int64_t
put_kind(uint32_t kind, uint8_t id_out[EVENT_ID_LEN])
{
	struct event *ev;
	char	      content[32];
	int64_t	      seq = -1;

	snprintf(content, sizeof(content), "event %d", ++counter);
	ev = event_new_signed(sk, 1700000000 + counter, kind, NULL, content);
	if (ev == NULL)
		return -1;
	if (store_put(wr, ev, &seq) != STORE_OK)
		seq = -1;
	if (id_out != NULL)
		memcpy(id_out, ev->id, EVENT_ID_LEN);
	event_destroy(ev);
	return seq;
}

/* Stores a new kind 1 event; returns its seq (its id into id_out). */
static int64_t
put(uint8_t id_out[EVENT_ID_LEN])
{
	return put_kind(1, id_out);
}

static void
notice(int64_t seq)
{
	struct msg_accepted ma;

	memset(&ma, 0, sizeof(ma));
	ma.ma_seq = seq;
	ma.ma_kind = 1;
	msg_send(pub, MSG_ACCEPTED, &ma, sizeof(ma), 0);
}

/* Waits at most ms for the feed's descriptor, then drains it. */
static int
drain_within(struct feed *f, int ms)
{
	struct pollfd pfd = { .fd = feed_fd(f), .events = POLLIN };

	if (poll(&pfd, 1, ms) <= 0)
		return 0;
	return feed_drain(f);
}

/*
 * PUB/SUB drops what is published before the subscription reaches the
 * publisher, so probe with a harmless notice (a seq already delivered)
 * until one arrives.
 */
static int
wait_subscribed(struct feed *f)
{
	uint64_t before = feed_stats(f)->fs_notices;
	int	 i;

	for (i = 0; i < 200; i++) {
		notice(feed_last_seq(f));
		drain_within(f, 20);
		if (feed_stats(f)->fs_notices > before)
			break;
	}
	/* Let the probes still in flight arrive. */
	drain_within(f, 50);
	drain_within(f, 50);
	return feed_stats(f)->fs_notices > before ? 0 : -1;
}

static int64_t
last_seq(void)
{
	int64_t s = -1;

	store_last_seq(wr, &s);
	return s;
}

/*
 * Opens f at seq from, delivering into a new, empty got, and waits for
 * its subscription when subscribed is set.  Returns the got (release
 * both with unsubscribe()), or NULL after a comment saying what failed.
 */
static struct got *
subscribe(struct feed *f, int64_t from, int subscribed)
{
	struct got *g;

	if ((g = calloc(1, sizeof(*g))) == NULL)
		return NULL;
	if (feed_open(f, &cfg, rd, from, collect, g) != 0) {
		printf("# feed_open from %" PRId64 " failed\n", from);
		free(g);
		return NULL;
	}
	if (subscribed && wait_subscribed(f) != 0) {
		printf("# the subscription never arrived\n");
		feed_close(f);
		free(g);
		return NULL;
	}
	return g;
}

/* Closes f and frees the got subscribe() gave it. */
static void
unsubscribe(struct feed *f, struct got *g)
{
	feed_close(f);
	free(g);
}

static void
test_notices_deliver_in_seq_order(void)
{
	struct feed f;
	struct got *g;
	uint8_t	    ids[5][EVENT_ID_LEN];
	int64_t	    start = last_seq(), seqs[5];
	int	    i, order[5] = { 2, 0, 4, 1, 3 };

	T_ASSERT((g = subscribe(&f, start, 1)) != NULL);
	T_EQ_INT(g->n, 0);
	for (i = 0; i < 5; i++)
		T_ASSERT((seqs[i] = put(ids[i])) > 0);
	/* Notices out of order: delivery still follows seq. */
	for (i = 0; i < 5; i++)
		notice(seqs[order[i]]);
	for (i = 0; i < 50 && g->n < 5; i++)
		drain_within(&f, 100);
	T_EQ_INT(g->n, 5);
	for (i = 0; i < 5; i++) {
		T_EQ_INT(g->seq[i], seqs[i]);
		T_CHECK(memcmp(g->id[i], ids[i], EVENT_ID_LEN) == 0);
	}
	T_EQ_INT(g->queried_ok, 5);
	T_EQ_INT(feed_last_seq(&f), seqs[4]);
	T_EQ_INT(feed_stats(&f)->fs_events, 5);
	/* Late notices for delivered events deliver nothing again. */
	notice(seqs[0]);
	drain_within(&f, 200);
	T_EQ_INT(g->n, 5);
	unsubscribe(&f, g);
}

static void
test_lost_notice_is_recovered_by_poll(void)
{
	struct feed f;
	struct got *g;
	int64_t	    s1;

	T_ASSERT((g = subscribe(&f, last_seq(), 1)) != NULL);
	T_ASSERT((s1 = put(NULL)) > 0);
	/* No notice: draining finds nothing to do ... */
	drain_within(&f, 100);
	T_EQ_INT(g->n, 0);
	/* ... and the periodic poll reads it from the database. */
	T_EQ_INT(feed_poll(&f), 1);
	T_EQ_INT(g->n, 1);
	T_EQ_INT(g->seq[0], s1);
	T_EQ_INT(feed_stats(&f)->fs_unnoticed, 1);
	T_EQ_INT(feed_poll(&f), 0);
	T_EQ_INT(g->n, 1);
	unsubscribe(&f, g);
}

static void
test_notice_gap_delivers_the_missing_events(void)
{
	struct feed f;
	struct got *g;
	int64_t	    s1, s2, s3;
	int	    i;

	T_ASSERT((g = subscribe(&f, last_seq(), 1)) != NULL);
	T_ASSERT((s1 = put(NULL)) > 0);
	T_ASSERT((s2 = put(NULL)) > 0);
	T_ASSERT((s3 = put(NULL)) > 0);
	/* The notices of s1 and s2 are lost; s3's names the gap. */
	notice(s3);
	for (i = 0; i < 20 && g->n < 3; i++)
		drain_within(&f, 100);
	T_EQ_INT(g->n, 3);
	T_EQ_INT(g->seq[0], s1);
	T_EQ_INT(g->seq[1], s2);
	T_EQ_INT(g->seq[2], s3);
	T_EQ_INT(feed_stats(&f)->fs_gaps, 1);
	unsubscribe(&f, g);
}

/* relayd sends a commit's notices in one message; each counts. */
static void
test_one_message_carries_a_commits_notices(void)
{
	struct msg_accepted ma[3];
	struct feed	    f;
	struct got	   *g;
	uint64_t	    notices, gaps, unnoticed;
	int		    i;

	T_ASSERT((g = subscribe(&f, last_seq(), 1)) != NULL);
	notices = feed_stats(&f)->fs_notices;
	gaps = feed_stats(&f)->fs_gaps;
	unnoticed = feed_stats(&f)->fs_unnoticed;
	memset(ma, 0, sizeof(ma));
	for (i = 0; i < 3; i++) {
		T_ASSERT((ma[i].ma_seq = put(ma[i].ma_id)) > 0);
		ma[i].ma_kind = 1;
	}
	T_EQ_INT(msg_send(pub, MSG_ACCEPTED, ma, sizeof(ma), 0), 0);
	for (i = 0; i < 20 && g->n < 3; i++)
		drain_within(&f, 100);
	T_EQ_INT(g->n, 3);
	for (i = 0; i < 3; i++) {
		T_EQ_INT(g->seq[i], ma[i].ma_seq);
		T_CHECK(memcmp(g->id[i], ma[i].ma_id, EVENT_ID_LEN) == 0);
	}
	T_EQ_INT(feed_stats(&f)->fs_notices - notices, 3);
	T_EQ_INT(feed_stats(&f)->fs_gaps - gaps, 0);
	T_EQ_INT(feed_stats(&f)->fs_unnoticed - unnoticed, 0);
	unsubscribe(&f, g);
}

static void
test_reopened_at_saved_seq_misses_and_repeats_nothing(void)
{
	struct feed f;
	struct got *g;
	int64_t	    saved, s[4];
	int	    i;

	T_ASSERT((g = subscribe(&f, last_seq(), 0)) != NULL);
	T_ASSERT((s[0] = put(NULL)) > 0);
	T_ASSERT((s[1] = put(NULL)) > 0);
	T_EQ_INT(feed_poll(&f), 2);
	saved = feed_last_seq(&f);
	T_EQ_INT(saved, s[1]);
	feed_close(&f);

	/* Stored while no subscriber ran: no notice reaches anyone. */
	T_ASSERT((s[2] = put(NULL)) > 0);
	T_ASSERT((s[3] = put(NULL)) > 0);
	notice(s[2]);
	notice(s[3]);

	memset(g, 0, sizeof(*g));
	T_ASSERT(feed_open(&f, &cfg, rd, saved, collect, g) == 0);
	T_ASSERT(wait_subscribed(&f) == 0);
	/* Notices of events before the saved seq change nothing. */
	notice(s[0]);
	notice(s[1]);
	for (i = 0; i < 5; i++)
		drain_within(&f, 50);
	feed_poll(&f);
	T_EQ_INT(g->n, 2);
	T_EQ_INT(g->seq[0], s[2]);
	T_EQ_INT(g->seq[1], s[3]);
	T_EQ_INT(feed_poll(&f), 0);
	T_EQ_INT(g->n, 2);
	unsubscribe(&f, g);
}

static void
test_catch_up_spans_several_batches(void)
{
	struct feed f;
	struct got *g;
	int64_t	    start = last_seq(), prev;
	size_t	    i, n = 2 * FEED_BATCH + 3;

	T_ASSERT((g = subscribe(&f, start, 0)) != NULL);
	T_ASSERT(store_begin(wr) == 0);
	for (i = 0; i < n; i++)
		T_ASSERT(put(NULL) > 0);
	T_ASSERT(store_commit(wr) == 0);
	T_EQ_INT(feed_poll(&f), n);
	T_EQ_INT(g->n, n);
	prev = start;
	for (i = 0; i < n; i++) {
		T_ASSERT(g->seq[i] > prev);
		prev = g->seq[i];
	}
	T_EQ_INT(feed_last_seq(&f), last_seq());
	unsubscribe(&f, g);
}

static void
test_catch_up_cut_by_bytes_still_delivers_all(void)
{
	struct feed   f;
	struct got   *g;
	struct event *ev;
	char	     *content;
	size_t	      big = FEED_BATCH_BYTES / 3 + 1, i;
	int64_t	      seqs[7];

	T_ASSERT((content = malloc(big + 1)) != NULL);
	T_ASSERT((g = subscribe(&f, last_seq(), 0)) != NULL);
	/* Seven events, three per byte-capped query. */
	for (i = 0; i < 7; i++) {
		memset(content, 'a' + (int)i, big);
		content[big] = '\0';
		ev = event_new_signed(sk, 1800000000 + (int64_t)i, 1, NULL,
		    content);
		T_ASSERT(ev != NULL);
		T_EQ_INT(store_put(wr, ev, &seqs[i]), STORE_OK);
		event_destroy(ev);
	}
	T_EQ_INT(feed_poll(&f), 7);
	T_EQ_INT(g->n, 7);
	for (i = 0; i < 7; i++)
		T_EQ_INT(g->seq[i], seqs[i]);
	free(content);
	unsubscribe(&f, g);
}

/* What the live feed handed over of one event, as text to compare. */
struct seen {
	size_t n;
	char   desc[4][512];
	int    in_place[4]; /* ev->json NULL: read in place */
};

/* "kind created_at pubkey|name=value,value|..." of ev into out. */
static void
describe(const struct event *ev, char *out, size_t len)
{
	size_t	 o;
	uint32_t i, k;

	o = (size_t)snprintf(out, len, "%u %lld %s", ev->kind,
	    (long long)ev->created_at, ev->pubkey_hex);
	for (i = 0; i < ev->ntags && o < len; i++)
		for (k = 0; k < ev->tags[i].n && o < len; k++)
			o += (size_t)snprintf(out + o, len - o, "%c%s",
			    k == 0 ? '|' : ',', ev->tags[i].v[k].s);
}

static void
see(void *arg, int64_t seq, const struct event *ev)
{
	struct seen *s = arg;

	(void)seq;
	if (s->n < 4) {
		describe(ev, s->desc[s->n], sizeof(s->desc[0]));
		s->in_place[s->n] = ev->json == NULL;
	}
	s->n++;
}

/*
 * The live feed reads a stored row in place, without building a JSON
 * tree, when its tags need no unescaping, and parses it in full when one
 * does: both give the roles the tags event_parse() would.
 */
static void
test_live_feed_reads_plain_rows_in_place_and_escaped_in_full(void)
{
	static const char *tags[2] = {
		"[[\"e\",\"" /* an id */
		"00112233445566778899aabbccddeeff"
		"00112233445566778899aabbccddeeff\",\"\",\"root\"],"
		"[\"t\",\"plain\"],[\"K\",\"1621\"]]",
		"[[\"t\",\"quote \\\" and \\\\ and \\n\"],"
		"[\"subject\",\"tab\\there\"]]",
	};
	struct feed   f;
	struct seen   s;
	struct event *ev, *back;
	char	      want[512];
	int64_t	      start = last_seq();
	int	      i;

	memset(&s, 0, sizeof(s));
	T_ASSERT(feed_open(&f, &cfg, rd, start, see, &s) == 0);
	for (i = 0; i < 2; i++) {
		ev = event_new_signed(sk, 1750000000 + i, 1111, tags[i],
		    "content with \"quotes\"\n");
		T_ASSERT(ev != NULL);
		T_EQ_INT(store_put(wr, ev, NULL), STORE_OK);
		/* What a full parse of the stored text gives. */
		back = event_parse(ev->json, ev->json_len, want, sizeof(want));
		T_ASSERT(back != NULL);
		describe(back, want, sizeof(want));
		event_destroy(back);
		event_destroy(ev);
		T_EQ_INT(feed_poll(&f), 1);
		T_EQ_INT(s.n, (size_t)i + 1);
		T_EQ_STR(s.desc[i], want);
	}
	T_CHECK(strstr(s.desc[1], "|t,quote \" and \\ and \n|") != NULL);
	T_EQ_INT(s.in_place[0], 1);
	T_EQ_INT(s.in_place[1], 0);
	feed_close(&f);
}

static void
test_scan_delivers_exactly_the_range(void)
{
	struct got *g = calloc(1, sizeof(*g));
	int64_t	    s[3], last = 0;

	T_ASSERT(g != NULL);
	T_ASSERT((s[0] = put(NULL)) > 0);
	T_ASSERT((s[1] = put(NULL)) > 0);
	T_ASSERT((s[2] = put(NULL)) > 0);
	T_EQ_INT(feed_scan(rd, s[0], s[1], collect, g, &last), 1);
	T_EQ_INT(g->n, 1);
	T_EQ_INT(g->seq[0], s[1]);
	T_EQ_INT(last, s[1]);
	T_EQ_INT(feed_scan(rd, s[2], s[2], collect, g, &last), 0);
	T_EQ_INT(last, s[2]);
	T_EQ_INT(feed_scan(rd, 0, s[2], collect, g, &last), s[2]);
	T_EQ_INT(last, s[2]);
	free(g);
}

/*
 * The child half of the two tests below, run in a fresh process by exec
 * (nanomsg is not fork-safe): binds its own PUB in dir, opens a feed,
 * then sends what relayd never sends.  The feed must end the process
 * with status 1; returning means it did not.
 */
static int
child_bad_message(const char *dir, const char *what)
{
	struct feed f;
	struct got  g;
	char	    ep[256], err[256];
	uint8_t	    junk[5] = { 1, 2, 3, 4, 5 };

	cfg.run_path = (char *)dir;
	memset(&g, 0, sizeof(g));
	if ((rd = store_open(":memory:", 0, err, sizeof(err))) == NULL)
		return 3;
	chan_endpoint(dir, CHAN_ACCEPTED, ep, sizeof(ep));
	if ((pub = chan_open(NN_PUB, ep, 1)) == -1)
		return 3;
	if (feed_open(&f, &cfg, rd, 0, collect, &g) == -1 ||
	    wait_subscribed(&f) == -1)
		return 3;
	if (strcmp(what, "type") == 0)
		msg_send(pub, MSG_STATS, "{}", 2, 0);
	else if (strcmp(what, "many") == 0) {
		static struct msg_accepted many[MSG_ACCEPTED_MAX + 1];

		msg_send(pub, MSG_ACCEPTED, many, sizeof(many), 0);
	} else if (strcmp(what, "ragged") == 0) {
		uint8_t ragged[sizeof(struct msg_accepted) + 1];

		memset(ragged, 0, sizeof(ragged));
		msg_send(pub, MSG_ACCEPTED, ragged, sizeof(ragged), 0);
	} else
		msg_send(pub, MSG_ACCEPTED, junk, sizeof(junk), 0);
	drain_within(&f, 2000);
	return 4;
}

static void
test_non_accepted_message_ends_the_process(void)
{
	T_EQ_INT(tunit_child_dies("feed_test", tmpdir, "type",
		     "unexpected STATS message on the accepted channel"),
	    0);
}

static void
test_short_accepted_message_ends_the_process(void)
{
	T_EQ_INT(tunit_child_dies("feed_test", tmpdir, "length",
		     "malformed ACCEPTED message: 5 bytes"),
	    0);
}

/* Whole notices only, and at most MSG_ACCEPTED_MAX of them. */
static void
test_ragged_or_oversized_accepted_message_ends_the_process(void)
{
	char want[64];

	snprintf(want, sizeof(want), "malformed ACCEPTED message: %zu bytes",
	    sizeof(struct msg_accepted) + 1);
	T_EQ_INT(tunit_child_dies("feed_test", tmpdir, "ragged", want), 0);
	snprintf(want, sizeof(want), "malformed ACCEPTED message: %zu bytes",
	    (MSG_ACCEPTED_MAX + 1) * sizeof(struct msg_accepted));
	T_EQ_INT(tunit_child_dies("feed_test", tmpdir, "many", want), 0);
}

static int
feed_setup(void)
{
	char path[128], ep[256], err[256];

	log_setlevel(LOG_LVL_WARN);
	if (tdir_make(tmpdir, sizeof(tmpdir), "feed_test") == -1)
		return 2;
	cfg.run_path = tmpdir;
	snprintf(path, sizeof(path), "%s/graspd.db", tmpdir);
	if ((wr = store_open(path, 0, err, sizeof(err))) == NULL ||
	    (rd = store_open(path, 1, err, sizeof(err))) == NULL) {
		printf("not ok - store_open: %s\n", err);
		return 1;
	}
	chan_endpoint(tmpdir, CHAN_ACCEPTED, ep, sizeof(ep));
	if ((pub = chan_open(NN_PUB, ep, 1)) == -1) {
		printf("not ok - bind %s\n", ep);
		return 1;
	}
	return 0;
}

static void
feed_cleanup(void)
{
	chan_close(pub);
	store_close(rd);
	store_close(wr);
	tdir_remove(tmpdir);
}

/*
 * A feed of two kinds hands over only theirs, in seq order, and still
 * moves past the rest: across more than a batch of them, and to the
 * last row when that one is of another kind.
 */
static void
test_only_kinds_passes_the_rest(void)
{
	static const uint32_t kinds[] = { 7, 1111 };
	struct feed	      f;
	struct got	     *g;
	int64_t		      want[4], last = 0;
	size_t		      i, n = 0;

	T_ASSERT((g = subscribe(&f, last_seq(), 0)) != NULL);
	feed_only_kinds(&f, kinds, 2);
	T_ASSERT((want[n++] = put_kind(7, NULL)) > 0);
	for (i = 0; i < FEED_BATCH + 10; i++)
		T_ASSERT(put_kind(1, NULL) > 0);
	T_ASSERT((want[n++] = put_kind(1111, NULL)) > 0);
	T_ASSERT(put_kind(1, NULL) > 0);
	T_ASSERT((want[n++] = put_kind(7, NULL)) > 0);
	T_ASSERT((last = put_kind(1, NULL)) > 0);
	T_EQ_INT(feed_poll(&f), 3);
	T_EQ_INT(g->n, 3);
	for (i = 0; i < 3; i++)
		T_EQ_INT(g->seq[i], want[i]);
	T_EQ_INT(g->queried_ok, 3);
	T_EQ_INT(feed_last_seq(&f), last);
	T_EQ_INT(feed_stats(&f)->fs_events, 3);
	T_EQ_INT(feed_stats(&f)->fs_unnoticed, FEED_BATCH + 15);
	/* Nothing read twice; what comes next is handed over. */
	T_EQ_INT(feed_poll(&f), 0);
	T_ASSERT((want[n++] = put_kind(1111, NULL)) > 0);
	T_EQ_INT(feed_poll(&f), 1);
	T_EQ_INT(g->seq[3], want[3]);
	unsubscribe(&f, g);
}

static const struct t_case cases[] = {
	T_CASE(test_notices_deliver_in_seq_order),
	T_CASE(test_lost_notice_is_recovered_by_poll),
	T_CASE(test_notice_gap_delivers_the_missing_events),
	T_CASE(test_one_message_carries_a_commits_notices),
	T_CASE(test_reopened_at_saved_seq_misses_and_repeats_nothing),
	T_CASE(test_catch_up_spans_several_batches),
	T_CASE(test_catch_up_cut_by_bytes_still_delivers_all),
	T_CASE(test_live_feed_reads_plain_rows_in_place_and_escaped_in_full),
	T_CASE(test_scan_delivers_exactly_the_range),
	T_CASE(test_only_kinds_passes_the_rest),
	T_CASE(test_non_accepted_message_ends_the_process),
	T_CASE(test_short_accepted_message_ends_the_process),
	T_CASE(test_ragged_or_oversized_accepted_message_ends_the_process),
};

int
main(int argc, char *argv[])
{
	log_init("feed_test", 1);
	if (argc == 4 && strcmp(argv[1], "child") == 0)
		return child_bad_message(argv[2], argv[3]);
	return t_main(cases, T_NCASES(cases), feed_setup, feed_cleanup, NULL,
	    NULL, 0);
}
