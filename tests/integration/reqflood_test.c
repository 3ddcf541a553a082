/*
 * reqflood_test.c: a repository's threads stay readable however large
 * its events (issue 39, item 3).  The attack: an author stores 44 issues
 * of about 850 KB (a large tag value) on one repository, 37 MB in all,
 * more than the 32 MiB relayd queues for a client; relayd used to build
 * the whole answer to a "#a" REQ at once and close every reader 1008
 * with no event and no EOSE.  Now a reader at full speed, and one that
 * sleeps between messages on a small receive buffer, each get every
 * event, newest first, then EOSE, and an event published meanwhile only
 * after it; a client that never reads is closed after
 * max_read_stall_secs.  Also: max_event_size refuses a larger event with
 * its sizes and is published in NIP-11.
 */
#include <sys/socket.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "client.h"
#include "ctl.h"
#include "event.h"
#include "json.h"
#include "nostr.h"
#include "relayproc.h"
#include "t.h"
#include "tdir.h"
#include "tint_prog.h"
#include "tuser.h"
#include "wsclient.h"

/* This program's test keys (tuser.h). */
#define KEYS	    0x3b
#define OWNER	    1
#define AUTHOR	    2
/* The attack of the issue: 44 issues of about 850 KB. */
#define NFLOOD	    44
#define PAD_BYTES   (850 * 1000)
/* Room for them, below the 1 MiB message cap. */
#define MAX_EVENT   "1048000"
/* max_read_stall_secs for this relay: the never-reader's time. */
#define STALL_S	    3
#define STALL_TEXT  "3"
#define TMO	    5000
/* How long reading the whole answer may take (sanitizers are slow). */
#define READ_TMO    120000
/* The slow reader's pause after each message, ms. */
#define SLOW_MS	    100
/* A small receive buffer, so that the relay's writes block often. */
#define SLOW_RCVBUF 16384

#define ACTIVE "graspd_relay_connections_active{role=\"relayd\"}"

static struct relayproc *rp;
static char		 coord[160], tmp[512];
static char		 ids[NFLOOD][EVENT_ID_HEX_LEN + 1];
static int64_t		 t0;
/* Events on coord: the flood, and the late issue once published. */
static int		 nstored = NFLOOD;

/* Issue i of the flood: created_at t0 + i, ~PAD_BYTES of tag value. */
static struct event *
flood_issue(int i)
{
	struct buf    b = BUF_INIT;
	struct event *e;
	uint8_t	      sk[SECKEY_LEN];
	char	     *pad;

	if ((pad = malloc(PAD_BYTES + 1)) == NULL)
		abort();
	memset(pad, 'a' + i % 26, PAD_BYTES);
	pad[PAD_BYTES] = '\0';
	buf_printf(&b, "[[\"a\",\"%s\"],[\"subject\",\"flood %d\"],", coord, i);
	buf_adds(&b, "[\"padding\",\"");
	buf_adds(&b, pad);
	buf_adds(&b, "\"]]");
	tuser_sk(KEYS, AUTHOR, sk);
	e = event_new_signed(sk, t0 + i, 1621, b.b_data, "an issue");
	buf_free(&b);
	free(pad);
	return e;
}

/* The "#a" filter of the repository. */
static void
flood_filter(char *f, size_t len)
{
	snprintf(f, len, "{\"#a\":[\"%s\"]}", coord);
}

static int
setup(void)
{
	const char   *env[] = { "NGIT_MAX_EVENT_SIZE=" MAX_EVENT,
		  "NGIT_MAX_READ_STALL_SECS=" STALL_TEXT,
		  "NGIT_MAX_EVENTS_PER_MINUTE_PER_IP=0", NULL };
	struct wsc   *ws;
	struct event *e;
	char	      msg[256];
	int	      i, ok = 0;

	if (tdir_make(tmp, sizeof(tmp), "reqflood") == -1 ||
	    (rp = relayproc_start("relayd", env)) == NULL)
		return -1;
	t0 = time(NULL) - 1000;
	if (tint_host_repo(rp, KEYS, OWNER, t0 - 10, "flood", NULL, tmp) == -1)
		return -1;
	tuser_coord(KEYS, OWNER, "flood", coord, sizeof(coord));
	if ((ws = client_ws(rp)) == NULL)
		return -1;
	for (i = 0; i < NFLOOD; i++) {
		if ((e = flood_issue(i)) == NULL)
			abort();
		memcpy(ids[i], e->id_hex, EVENT_ID_HEX_LEN + 1);
		if (nostr_publish_take(ws, e, 30000, msg, sizeof(msg)) != 1) {
			printf("# issue %d: %s\n", i, msg);
			break;
		}
	}
	ok = i == NFLOOD;
	wsc_close(ws);
	printf("# stored %d issues of %d bytes of tag value on %s\n", i,
	    PAD_BYTES, coord);
	return ok ? 0 : -1;
}

/* The id of an event's JSON, into id (65 bytes); 0 or -1. */
static int
event_id(const char *json, size_t len, char id[EVENT_ID_HEX_LEN + 1])
{
	struct event *e;
	char	      msg[128];

	if ((e = event_parse(json, len, msg, sizeof(msg))) == NULL)
		return -1;
	memcpy(id, e->id_hex, EVENT_ID_HEX_LEN + 1);
	event_destroy(e);
	return 0;
}

/*
 * What a reader of subid on ws saw: the ids of the EVENTs before EOSE in
 * order, those after, whether EOSE came, and a CLOSED or close.
 */
struct seen {
	int  before, after, eose, closed;
	char first_after[EVENT_ID_HEX_LEN + 1];
	int  in_order; /* before-EOSE ids are ids[NFLOOD-1] .. ids[0] */
};

/* Readies s for read_answer(). */
static void
seen_init(struct seen *s)
{
	memset(s, 0, sizeof(*s));
	s->in_order = 1;
}

/*
 * Reads ws into s until EOSE and then, if want_after, one more event,
 * or with first_only until the first event; sleeps pause_ms after each
 * message; at most READ_TMO in all.
 */
static void
read_answer(struct wsc *ws, int pause_ms, int want_after, int first_only,
    struct seen *s)
{
	struct json_doc	  *doc;
	const struct json *m, *v;
	int64_t		   end = wsc_now_ms() + READ_TMO;
	char		  *text, err[128], id[EVENT_ID_HEX_LEN + 1];
	size_t		   len;

	while (wsc_now_ms() < end && !(s->eose && (!want_after || s->after)) &&
	    !(first_only && s->before > 0)) {
		if ((text = wsc_recv(ws, (int)(end - wsc_now_ms()), &len)) ==
		    NULL) {
			s->closed = 1;
			return;
		}
		if ((m = json_parse(text, len, &doc, err, sizeof(err))) ==
			NULL ||
		    m->type != JSON_ARRAY || (v = json_at(m, 0)) == NULL ||
		    v->type != JSON_STRING) {
			json_free(doc);
			free(text);
			continue;
		}
		if (strcmp(v->s, "EOSE") == 0)
			s->eose = 1;
		else if (strcmp(v->s, "CLOSED") == 0)
			s->closed = 1;
		else if (strcmp(v->s, "EVENT") == 0 &&
		    (v = json_at(m, 2)) != NULL) {
			char *ev = nostr_json_text(v);

			if (ev == NULL || event_id(ev, strlen(ev), id) == -1)
				id[0] = '\0';
			free(ev);
			if (s->eose) {
				if (s->after++ == 0)
					memcpy(s->first_after, id,
					    EVENT_ID_HEX_LEN + 1);
			} else {
				if (s->before >= NFLOOD ||
				    strcmp(id, ids[NFLOOD - 1 - s->before]) !=
					0)
					s->in_order = 0;
				s->before++;
			}
		}
		json_free(doc);
		free(text);
		if (s->closed)
			return;
		if (pause_ms > 0)
			usleep((useconds_t)pause_ms * 1000);
	}
}

static int
send_req(struct wsc *ws, const char *subid)
{
	char f[256], req[512];

	flood_filter(f, sizeof(f));
	snprintf(req, sizeof(req), "[\"REQ\",\"%s\",%s]", subid, f);
	return wsc_send_text(ws, req, strlen(req));
}

/* A reader at full speed gets all 44 events, newest first, and EOSE. */
static void
test_full_speed_reader_gets_everything(void)
{
	struct wsc *ws;
	struct seen s;
	int64_t	    t;

	T_ASSERT((ws = client_ws(rp)) != NULL);
	T_ASSERT(send_req(ws, "all") == 0);
	t = wsc_now_ms();
	seen_init(&s);
	read_answer(ws, 0, 0, 0, &s);
	printf("# full speed: %d events, EOSE %d, closed %d (code %d), "
	       "%lld ms\n",
	    s.before, s.eose, s.closed, wsc_close_code(ws),
	    (long long)(wsc_now_ms() - t));
	T_EQ_INT(s.before, NFLOOD);
	T_CHECK(s.in_order);
	T_CHECK(s.eose);
	T_CHECK(!s.closed);
	wsc_close(ws);
}

/*
 * A reader that sleeps after each message on a small receive buffer gets
 * everything too; an issue published while it reads comes after EOSE,
 * once; meanwhile another client's small REQ is answered at once.
 */
static void
test_slow_reader_gets_everything_then_live(void)
{
	struct wsc   *ws, *pub, *other;
	struct seen   s;
	struct event *late;
	char	      msg[256], f[128], **evs = NULL;
	size_t	      n = 0;
	int	      rcv = SLOW_RCVBUF;
	int64_t	      t;

	T_ASSERT((ws = client_ws(rp)) != NULL);
	T_ASSERT((pub = client_ws(rp)) != NULL);
	T_ASSERT((other = client_ws(rp)) != NULL);
	T_CHECK(setsockopt(wsc_fd(ws), SOL_SOCKET, SO_RCVBUF, &rcv,
		    sizeof(rcv)) == 0);
	T_ASSERT(send_req(ws, "slow") == 0);
	/* The first event is out: the rest waits for this reader. */
	seen_init(&s);
	read_answer(ws, 0, 0, 1, &s);
	T_ASSERT(s.before == 1 && s.in_order);

	/* Another client is answered while the large answer waits. */
	snprintf(f, sizeof(f), "{\"ids\":[\"%s\"]}", ids[0]);
	t = wsc_now_ms();
	T_CHECK(nostr_req(other, "small", f, TMO, &evs, &n, NULL) == 0);
	printf("# a small REQ meanwhile: %zu event(s) in %lld ms\n", n,
	    (long long)(wsc_now_ms() - t));
	T_EQ_INT(n, 1);
	nostr_events_free(evs);

	/* Newer than every stored one: a single query would not have it. */
	{
		uint8_t sk[SECKEY_LEN];
		char	tags[256];

		tuser_sk(KEYS, AUTHOR + 1, sk);
		snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", coord);
		T_ASSERT((late = event_new_signed(sk, time(NULL), 1621, tags,
			      "late issue")) != NULL);
	}
	T_EQ_INT(nostr_publish_msg(pub, late, TMO, msg, sizeof(msg)), 1);
	nstored++;

	t = wsc_now_ms();
	read_answer(ws, SLOW_MS, 1, 0, &s);
	printf("# slow reader: %d events, EOSE %d, then %d (late %s), "
	       "closed %d, %lld ms\n",
	    s.before, s.eose, s.after,
	    strcmp(s.first_after, late->id_hex) == 0 ? "yes" : "no", s.closed,
	    (long long)(wsc_now_ms() - t));
	T_EQ_INT(s.before, NFLOOD);
	T_CHECK(s.in_order);
	T_CHECK(s.eose);
	T_EQ_INT(s.after, 1);
	T_EQ_STR(s.first_after, late->id_hex);
	T_CHECK(!s.closed);
	/* Once, not again. */
	T_CHECK(nostr_no_event(ws, "slow", 300));
	event_destroy(late);
	wsc_close(other);
	wsc_close(pub);
	wsc_close(ws);
}

/* Subscription "m<i>" of read_many()'s. */
#define NMANY 40
#define NFAIR 4

/*
 * Reads ws until each of the n subscriptions "m0".. has had its EOSE:
 * their events counted in got[], the position (in all events read) of
 * each one's first and last event in first[] and last[].  0, or -1 on a
 * close or after READ_TMO.
 */
static int
read_many(struct wsc *ws, int n, int got[], int first[], int last[])
{
	int64_t end = wsc_now_ms() + READ_TMO;
	int	eosed = 0, pos = 0, i;
	char   *text, tag[16];
	size_t	len;

	for (i = 0; i < n; i++)
		got[i] = first[i] = last[i] = -1;
	while (eosed < n) {
		if ((text = wsc_recv(ws, (int)(end - wsc_now_ms()), &len)) ==
		    NULL)
			return -1;
		for (i = 0; i < n; i++) {
			snprintf(tag, sizeof(tag), "\"m%d\"", i);
			if (strncmp(text, "[\"EOSE\",", 8) == 0 &&
			    strncmp(text + 8, tag, strlen(tag)) == 0)
				eosed++;
			else if (strncmp(text, "[\"EVENT\",", 9) == 0 &&
			    strncmp(text + 9, tag, strlen(tag)) == 0) {
				got[i] = got[i] < 0 ? 1 : got[i] + 1;
				if (first[i] < 0)
					first[i] = pos;
				last[i] = pos;
				pos++;
			} else
				continue;
			break;
		}
		free(text);
	}
	return 0;
}

/*
 * Several REQs on one connection: 40 sent at once, one large event each
 * (34 MB together, as many REQs as an answer's 32 MiB), all answered;
 * then four whole answers at once go out side by side, not one after
 * the other.
 */
static void
test_many_reqs_share_one_connection(void)
{
	struct wsc *ws;
	struct buf  b = BUF_INIT;
	int	    got[NMANY], first[NMANY], last[NMANY], i, ok = 1;

	T_ASSERT((ws = client_ws(rp)) != NULL);
	for (i = 0; i < NMANY; i++) {
		buf_reset(&b);
		buf_printf(&b,
		    "[\"REQ\",\"m%d\",{\"#a\":[\"%s\"],\"limit\":1}]", i,
		    coord);
		T_ASSERT(wsc_send_text(ws, b.b_data, b.b_len) == 0);
	}
	T_CHECK(read_many(ws, NMANY, got, first, last) == 0);
	for (i = 0; i < NMANY; i++)
		ok &= got[i] == 1;
	printf("# %d REQs at once, limit 1: every one answered: %s, "
	       "close code %d\n",
	    NMANY, ok ? "yes" : "no", wsc_close_code(ws));
	T_CHECK(ok);
	for (i = 0; i < NMANY; i++) {
		buf_reset(&b);
		buf_printf(&b, "[\"CLOSE\",\"m%d\"]", i);
		T_ASSERT(wsc_send_text(ws, b.b_data, b.b_len) == 0);
	}

	for (i = 0; i < NFAIR; i++) {
		buf_reset(&b);
		buf_printf(&b, "[\"REQ\",\"m%d\",{\"#a\":[\"%s\"]}]", i, coord);
		T_ASSERT(wsc_send_text(ws, b.b_data, b.b_len) == 0);
	}
	T_CHECK(read_many(ws, NFAIR, got, first, last) == 0);
	for (i = 0; i < NFAIR; i++) {
		printf("# answer %d: %d events, at %d..%d of all\n", i, got[i],
		    first[i], last[i]);
		T_EQ_INT(got[i], nstored);
		/* Each had begun before any other was done. */
		T_CHECK(first[i] < last[(i + 1) % NFAIR]);
	}
	buf_free(&b);
	wsc_close(ws);
}

/* Waits at most ms for the active websocket count to read want. */
static int
wait_active(double want, int ms)
{
	int64_t end = wsc_now_ms() + ms;

	while (ctl_metric(rp, ACTIVE) != want)
		if (wsc_now_ms() >= end)
			return 0;
		else
			usleep(50000);
	return 1;
}

/*
 * A client that sends the REQ and never reads is closed once nothing was
 * taken for max_read_stall_secs; what it finds then ends without EOSE.
 */
static void
test_never_reader_is_closed_after_stall(void)
{
	struct wsc *ws;
	struct seen s;
	double	    before = 0;
	int	    rcv = SLOW_RCVBUF;
	int64_t	    t;

	/* The earlier cases' connections are gone first. */
	T_ASSERT(wait_active(before, TMO));
	T_ASSERT((ws = client_ws(rp)) != NULL);
	T_CHECK(setsockopt(wsc_fd(ws), SOL_SOCKET, SO_RCVBUF, &rcv,
		    sizeof(rcv)) == 0);
	T_ASSERT(wait_active(before + 1, TMO));
	T_ASSERT(send_req(ws, "never") == 0);
	t = wsc_now_ms();
	/* Not before the stall time ... */
	relayproc_sleep_ms(STALL_S * 1000 - 500);
	T_CHECK(ctl_metric(rp, ACTIVE) == before + 1);
	/* ... and soon after it. */
	T_CHECK(wait_active(before, STALL_S * 1000 + 5000));
	printf("# never-reader closed after %lld ms (stall %d s)\n",
	    (long long)(wsc_now_ms() - t), STALL_S);
	seen_init(&s);
	read_answer(ws, 0, 0, 0, &s);
	printf("# it then read %d events, EOSE %d, close code %d\n", s.before,
	    s.eose, wsc_close_code(ws));
	T_CHECK(s.closed);
	T_CHECK(!s.eose);
	T_CHECK(s.before < NFLOOD);
	wsc_close(ws);
	T_CHECK(relayproc_pid(rp) > 0);
}

/*
 * max_event_size bounds the whole event, tags included: one byte over is
 * refused with its sizes, and NIP-11 names the bound.
 */
static void
test_event_size_bound_and_nip11(void)
{
	const char	  *env[] = { "NGIT_MAX_EVENT_SIZE=4096", NULL };
	struct relayproc  *r2;
	struct json_doc	  *doc = NULL;
	const struct json *nip11, *lim, *v;
	struct wsc	  *ws;
	struct event	  *e;
	struct buf	   b = BUF_INIT;
	char		   msg[256], want[128], pad[4200];
	uint8_t		   sk[SECKEY_LEN];
	size_t		   fixed;

	T_ASSERT((r2 = relayproc_start("relayd", env)) != NULL);
	T_ASSERT((nip11 = relayproc_nip11(r2, &doc)) != NULL);
	T_ASSERT((lim = json_get(nip11, "limitation")) != NULL);
	T_CHECK((v = json_get(lim, "max_event_size")) != NULL &&
	    v->type == JSON_NUMBER && v->d == 4096);
	T_CHECK((v = json_get(lim, "max_message_length")) != NULL &&
	    v->d >= 4096 + 10);
	json_free(doc);

	/* A kind 10317 grasp list needs no repository: size is the test. */
	T_ASSERT((ws = client_ws(r2)) != NULL);
	tuser_sk(KEYS, 9, sk);
	memset(pad, 'p', sizeof(pad));
	pad[0] = '\0';
	buf_printf(&b, "[[\"g\",\"wss://example.org\"],[\"pad\",\"%s\"]]", pad);
	T_ASSERT((e = event_new_signed(sk, time(NULL), 10317, b.b_data, "")) !=
	    NULL);
	fixed = e->json_len;
	event_destroy(e);
	buf_free(&b);
	/* The tag value that makes the event exactly 4097 bytes. */
	T_ASSERT(fixed < 4097 && 4097 - fixed < sizeof(pad));
	memset(pad, 'p', 4097 - fixed);
	pad[4097 - fixed] = '\0';
	buf_printf(&b, "[[\"g\",\"wss://example.org\"],[\"pad\",\"%s\"]]", pad);
	T_ASSERT((e = event_new_signed(sk, time(NULL), 10317, b.b_data, "")) !=
	    NULL);
	buf_free(&b);
	T_EQ_INT(e->json_len, 4097);
	T_EQ_INT(nostr_publish_msg(ws, e, TMO, msg, sizeof(msg)), 0);
	snprintf(want, sizeof(want),
	    "invalid: event too large (4097 bytes, max 4096)");
	T_EQ_STR(msg, want);
	event_destroy(e);

	/* One byte less is stored. */
	pad[4096 - fixed] = '\0';
	buf_printf(&b, "[[\"g\",\"wss://example.org\"],[\"pad\",\"%s\"]]", pad);
	T_ASSERT((e = event_new_signed(sk, time(NULL) + 1, 10317, b.b_data,
		      "")) != NULL);
	buf_free(&b);
	T_EQ_INT(e->json_len, 4096);
	T_EQ_INT(nostr_publish_msg(ws, e, TMO, msg, sizeof(msg)), 1);
	event_destroy(e);
	wsc_close(ws);
	relayproc_free(r2);
}

static void
cleanup(void)
{
	relayproc_free(rp);
	rp = NULL;
	if (tmp[0] != '\0')
		tdir_remove(tmp);
}

static const struct t_case cases[] = {
	T_CASE(test_event_size_bound_and_nip11),
	T_CASE(test_full_speed_reader_gets_everything),
	T_CASE(test_slow_reader_gets_everything_then_live),
	T_CASE(test_many_reqs_share_one_connection),
	T_CASE(test_never_reader_is_closed_after_stall),
};

T_MAIN_WITH(cases, setup, cleanup, 0)
