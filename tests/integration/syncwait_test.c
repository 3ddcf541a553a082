/*
 * syncwait_test.c: relayd syncs its commits on a thread of its own
 * (relayd/relay_sync.c) and answers a batch only once its sync is done,
 * while the loop goes on with the clients.  Test timing slows each sync
 * down (GRASPD_SYNC_DELAY_MS, read under NGIT_TEST) so that batches are
 * seen waiting: an OK comes only after the sync, a REQ sent meanwhile is
 * answered before it, a duplicate of an event waiting for its sync is
 * not acknowledged before that sync, and a client that goes away while
 * its events wait costs nothing (run under the sanitizers, a use after
 * free would end relayd).  A client that sends without waiting for its
 * OKs while syncs are slow makes the loop wait for a sync once more than
 * RELAY_UNSYNCED_MAX_BYTES (32 MiB) of events wait, so that the rest of
 * its flood waits in its socket, not in relayd's memory.  The power-cut test checks what the sync
 * promises: every acknowledged event survives.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "client.h"
#include "config.h"
#include "ctl.h"
#include "event.h"
#include "nostr.h"
#include "relayproc.h"
#include "t.h"
#include "tdir.h"
#include "tint_prog.h"
#include "tuser.h"
#include "wsclient.h"

/* This program's test keys (tuser.h). */
#define KEYS	 0x6c
#define OWNER	 1
#define AUTHOR	 2
#define TMO	 10000
/* The sync delay of this relay, ms, and the same as text. */
#define DELAY_MS 2000
#define DELAY	 "2000"
/* What the answers may arrive early by: clocks read on two sides. */
#define SLACK_MS 300

static struct relayproc *rp;
static char		 coord[160], tmp[512];

/* An issue of the hosted repository, its content made unique by n and
 * padded to pad bytes. */
static struct event *
issue_pad(int n, size_t pad)
{
	uint8_t	      sk[SECKEY_LEN];
	char	      tags[256];
	struct buf    content = BUF_INIT;
	struct event *e;

	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"],[\"subject\",\"w%d\"]]",
	    coord, n);
	buf_printf(&content, "waiting for a sync, %d", n);
	while (content.b_len < pad)
		buf_addc(&content, 'x');
	buf_addc(&content, '\0');
	tuser_sk(KEYS, AUTHOR, sk);
	if ((e = event_new_signed(sk, time(NULL), 1621, tags,
		 content.b_data)) == NULL)
		abort();
	buf_free(&content);
	return e;
}

static struct event *
issue(int n)
{
	return issue_pad(n, 0);
}

/* Sends e's EVENT without waiting for its OK; 0 or -1. */
static int
send_event(struct wsc *ws, const struct event *e)
{
	char *msg = nostr_event_msg(e);
	int   rc;

	if (msg == NULL)
		return -1;
	rc = wsc_send_text(ws, msg, strlen(msg));
	free(msg);
	return rc;
}

/*
 * Waits for the OK of id on ws: 1 true, 0 false, -1 none within TMO; the
 * time it came in *at (ms) and its text in msg.
 */
static int
wait_ok(struct wsc *ws, const char *id, int64_t *at, char *msg, size_t len)
{
	int64_t end = wsc_now_ms() + TMO;
	char   *m;
	int	ok;

	while (wsc_now_ms() < end) {
		if ((m = nostr_wait_msg(ws, "OK", (int)(end - wsc_now_ms()))) ==
		    NULL)
			return -1;
		if (strstr(m, id) == NULL) {
			free(m);
			continue;
		}
		*at = wsc_now_ms();
		ok = strstr(m, "\",true,") != NULL;
		snprintf(msg, len, "%s", m);
		free(m);
		return ok;
	}
	return -1;
}

static void
pause_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* An OK waits for its sync; a REQ sent meanwhile does not. */
static void
test_ok_waits_for_its_sync_a_req_does_not(void)
{
	struct wsc   *a, *b;
	struct event *e = issue(1);
	char	      req[256], msg[512], *eose;
	int64_t	      t0, t_eose, t_ok;

	T_ASSERT((a = client_ws(rp)) != NULL);
	T_ASSERT((b = client_ws(rp)) != NULL);
	t0 = wsc_now_ms();
	T_ASSERT(send_event(a, e) == 0);
	pause_ms(200);
	snprintf(req, sizeof(req),
	    "[\"REQ\",\"q\",{\"kinds\":[1621],\"#a\":[\"%s\"],\"limit\":5}]",
	    coord);
	T_ASSERT(wsc_send_text(b, req, strlen(req)) == 0);
	T_ASSERT((eose = nostr_wait_msg(b, "EOSE", TMO)) != NULL);
	free(eose);
	t_eose = wsc_now_ms();
	T_EQ_INT(wait_ok(a, e->id_hex, &t_ok, msg, sizeof(msg)), 1);
	printf("# EOSE after %lld ms, OK after %lld ms (sync delay %d)\n",
	    (long long)(t_eose - t0), (long long)(t_ok - t0), DELAY_MS);
	T_CHECK(t_ok - t0 >= DELAY_MS - SLACK_MS);
	T_CHECK(t_eose < t_ok);
	event_destroy(e);
	wsc_close(a);
	wsc_close(b);
}

/*
 * A copy of an event committed but not yet synced is a duplicate, and
 * is acknowledged only once that commit is synced: a power cut before
 * would lose the event both OKs promised.
 */
static void
test_duplicate_waits_for_the_sync_of_its_copy(void)
{
	struct wsc   *a, *b;
	struct event *e = issue(2);
	char	      msg[512], dmsg[512];
	int64_t	      t0, t_ok, t_dup;

	T_ASSERT((a = client_ws(rp)) != NULL);
	T_ASSERT((b = client_ws(rp)) != NULL);
	t0 = wsc_now_ms();
	T_ASSERT(send_event(a, e) == 0);
	pause_ms(500);
	T_ASSERT(send_event(b, e) == 0);
	T_EQ_INT(wait_ok(b, e->id_hex, &t_dup, dmsg, sizeof(dmsg)), 1);
	T_EQ_INT(wait_ok(a, e->id_hex, &t_ok, msg, sizeof(msg)), 1);
	printf("# the copy's OK after %lld ms: %s\n", (long long)(t_dup - t0),
	    dmsg);
	T_CHECK(strstr(dmsg, "duplicate:") != NULL);
	T_CHECK(t_dup - t0 >= DELAY_MS - SLACK_MS);
	event_destroy(e);
	wsc_close(a);
	wsc_close(b);
}

/* A client gone while its event waits: the event is stored all the same,
 * and relayd goes on. */
static void
test_client_gone_while_its_event_waits(void)
{
	struct wsc   *c, *a;
	struct event *e = issue(3), *f = issue(4);
	char	      filter[160], msg[512];
	int64_t	      t;

	T_ASSERT((c = client_ws(rp)) != NULL);
	T_ASSERT(send_event(c, e) == 0);
	pause_ms(200);
	wsc_drop(c);
	T_ASSERT((a = client_ws(rp)) != NULL);
	/* Its batch comes after the dropped client's: answered after it. */
	T_ASSERT(send_event(a, f) == 0);
	T_EQ_INT(wait_ok(a, f->id_hex, &t, msg, sizeof(msg)), 1);
	snprintf(filter, sizeof(filter), "{\"ids\":[\"%s\"]}", e->id_hex);
	T_EQ_INT(
	    nostr_count(relayproc_host(rp), relayproc_port(rp), filter, TMO),
	    1);
	event_destroy(e);
	event_destroy(f);
	wsc_close(a);
}

/*
 * A flood of FLOOD_N events of FLOOD_PAD bytes (64 MB) sent at once
 * while each sync takes DELAY_MS: the loop waits for a sync at least
 * once, and every event is stored and acknowledged in the end.
 */
#define FLOOD_N	  2000
#define WAITS	  "graspd_relay_sync_waits_total{role=\"relayd\"}"
#define FLOOD_PAD (32 * 1024)
static void
test_flood_during_slow_syncs_waits_in_its_socket(void)
{
	struct wsc   *a;
	struct event *e;
	char	      id[EVENT_ID_HEX_LEN + 1], msg[512], *m;
	double	      waits0, waits;
	int	      i, oks = 0;

	waits0 = ctl_metric(rp, WAITS);
	T_ASSERT((a = client_ws(rp)) != NULL);
	for (i = 0; i < FLOOD_N; i++) {
		e = issue_pad(1000 + i, FLOOD_PAD);
		if (i == FLOOD_N - 1)
			memcpy(id, e->id_hex, sizeof(id));
		T_ASSERT(send_event(a, e) == 0);
		event_destroy(e);
	}
	/* Every OK, true; the last one's text is the one kept. */
	for (i = 0; i < FLOOD_N; i++) {
		if ((m = nostr_wait_msg(a, "OK", 20 * TMO)) == NULL)
			break;
		oks += strstr(m, "\",true,") != NULL;
		snprintf(msg, sizeof(msg), "%s", m);
		free(m);
	}
	waits = ctl_metric(rp, WAITS);
	printf("# %d OKs true of %d; the loop waited for a sync %.0f times\n",
	    oks, FLOOD_N, waits - waits0);
	T_EQ_INT(oks, FLOOD_N);
	T_CHECK(strstr(msg, id) != NULL);
	T_CHECK(waits - waits0 >= 1);
	wsc_close(a);
}

static int
setup(void)
{
	const char *env[] = { CONFIG_TEST_SYNC_DELAY_ENV "=" DELAY,
		"NGIT_MAX_EVENTS_PER_MINUTE_PER_IP=0", NULL };

	if (tdir_make(tmp, sizeof(tmp), "syncwait") == -1 ||
	    (rp = relayproc_start("relayd", env)) == NULL)
		return 1;
	if (tint_host_repo(rp, KEYS, OWNER, time(NULL) - 100, "waits", NULL,
		tmp) == -1) {
		printf("not ok - setup: the repository is not served\n");
		return 1;
	}
	tuser_coord(KEYS, OWNER, "waits", coord, sizeof(coord));
	return 0;
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
	T_CASE(test_ok_waits_for_its_sync_a_req_does_not),
	T_CASE(test_duplicate_waits_for_the_sync_of_its_copy),
	T_CASE(test_client_gone_while_its_event_waits),
	T_CASE(test_flood_during_slow_syncs_waits_in_its_socket),
};

T_MAIN_WITH(cases, setup, cleanup, T_IGN_SIGPIPE)
