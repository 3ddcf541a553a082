/*
 * hunt_test.c: syncd's git-data hunt (GRASP-02, reference brief 3.15)
 * between real graspd instances on loopback.  A repository is released
 * on A (state and push); B, bootstrapped from A with private targets
 * allowed, syncs its announcement and state, which wait in B's purgatory,
 * hunts the objects from the clone URLs (A, the relay the state came
 * from, before a git server listed first that accepts and never
 * answers) and releases both, after which a clone from B has the
 * commit; a state the user sent B itself is hunted in the clone URLs'
 * order, the silent server costing only its own fetch; an object that no server has does not keep
 * the others from coming; relayd's answer to a GIT_DATA request checks
 * its payload.  C, without private targets, refuses loopback clone URLs: a
 * listener named there never sees a connection.
 */
#define _GNU_SOURCE
#include <sys/socket.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <nanomsg/nn.h>
#include <nanomsg/reqrep.h>

#include "buf.h"
#include "ctl.h"
#include "event.h"
#include "gitutil.h"
#include "msg.h"
#include "nip19.h"
#include "nostr.h"
#include "relayproc.h"
#include "t.h"
#include "tdir.h"
#include "tint_prog.h"
#include "tuser.h"
#include "wsclient.h"

/* The fill byte of this test's users' keys (tuser.h). */
#define KEYS 0x61

#define TMO	    5000
/* Longest wait for the hunt on B: the silent server costs its fetch
 * timeout (300 s / 60 under NGIT_TEST), the rest is sync and release. */
#define HUNT_WAIT_S 40
/* Connections the silent server keeps open. */
#define MAX_HELD    16

static struct relayproc *a, *b, *c;
static char		 tmpdir[256];
static int		 silent_fd = -1, quiet_fd = -1;
static int		 silent_port, quiet_port;
static int		 held[MAX_HELD], nheld;

/* A loopback listener that never answers; its port in *port. */
static int
listener(int *port)
{
	struct sockaddr_in sin;
	socklen_t	   sl = sizeof(sin);
	int		   fd;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		 0)) == -1)
		return -1;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, 16) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &sl) == -1) {
		close(fd);
		return -1;
	}
	*port = ntohs(sin.sin_port);
	return fd;
}

/* Accepts what waits on fd, keeping the connections open (silent). */
static int
accept_held(int fd)
{
	int s, n = 0;

	while ((s = accept4(fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		n++;
		if (nheld < MAX_HELD)
			held[nheld++] = s;
		else
			close(s);
	}
	return n;
}

static struct wsc *
ws_to(struct relayproc *p)
{
	return wsc_connect(relayproc_host(p), relayproc_port(p), "/", TMO);
}

/* Events on p matching filter (-1 on failure); the first into *first. */
static int
count_on(struct relayproc *p, const char *filter, struct event **first)
{
	struct wsc *ws = ws_to(p);
	char	  **evs = NULL, err[64];
	size_t	    n = 0;
	int	    rc;

	if (ws == NULL)
		return -1;
	rc = nostr_req(ws, "h", filter, TMO, &evs, &n, NULL);
	if (rc == 0 && n > 0 && first != NULL)
		*first = event_parse(evs[0], strlen(evs[0]), err, sizeof(err));
	nostr_events_free(evs);
	wsc_close(ws);
	return rc == 0 ? (int)n : -1;
}

/* The reply to a control request to a role of p, or NULL; caller
 * deletes it. */
static cJSON *
control(struct relayproc *p, enum role role, const char *req)
{
	char run[PATH_MAX];

	snprintf(run, sizeof(run), "%s/run", relayproc_dir(p));
	return ctl_role(run, role, MSG_CONTROL, req, TMO);
}

/* The "view" of `show` from a role of p, or NULL; caller deletes root. */
static cJSON *
show(struct relayproc *p, enum role role, cJSON **root)
{
	*root = control(p, role, "{\"cmd\":\"show\"}");
	return *root ? cJSON_GetObjectItem(*root, "view") : NULL;
}

static double
num(const cJSON *o, const char *name)
{
	const cJSON *v = o ? cJSON_GetObjectItem(o, name) : NULL;

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static const char *
str(const cJSON *o, const char *name)
{
	const cJSON *v = o ? cJSON_GetObjectItem(o, name) : NULL;

	return cJSON_IsString(v) ? v->valuestring : "";
}

/* The git_hunting entry of d in a syncd view, or NULL. */
static const cJSON *
hunt_of(const cJSON *view, const char *d)
{
	const cJSON *arr = cJSON_GetObjectItem(view, "git_hunting"), *o;

	cJSON_ArrayForEach(o, arr)
		if (strcmp(str(o, "d"), d) == 0)
			return o;
	return NULL;
}

static void
print_hunt(struct relayproc *p, const char *d)
{
	cJSON	    *root;
	const cJSON *view = show(p, ROLE_SYNCD, &root), *h;
	char	    *text;

	h = view ? hunt_of(view, d) : NULL;
	if (h != NULL && (text = cJSON_PrintUnformatted(h)) != NULL) {
		printf("# hunt %s: %s\n", d, text);
		free(text);
	}
	if (view != NULL &&
	    (text = cJSON_PrintUnformatted(
		 cJSON_GetObjectItem(view, "git_hunt"))) != NULL) {
		printf("# totals: %s\n", text);
		free(text);
	}
	cJSON_Delete(root);
}

/*
 * Releases d on A over ws (git work in tmpdir/d, the commit's id in oid)
 * and puts A's state of d in *state: NULL, and the case failed, when
 * that did not work.
 */
static void
release_on_a(struct wsc *ws, const uint8_t sk[SECKEY_LEN], const char *d,
    char oid[41], struct event **state)
{
	char dir[512], f[200];

	*state = NULL;
	snprintf(dir, sizeof(dir), "%s/%s", tmpdir, d);
	T_ASSERT(gt_release(ws, sk, relayproc_domain(a), d, dir, oid) == 0);
	snprintf(f, sizeof(f), "{\"kinds\":[30618],\"#d\":[\"%s\"]}", d);
	T_EQ_INT(count_on(a, f, state), 1);
	T_ASSERT(*state != NULL);
}

/*
 * Waits at most HUNT_WAIT_S for B to serve ann and state (the hunt of d
 * released them), accepting and holding meanwhile the connections to
 * the listener fd when it is not -1 (their number added to *conns).
 * Returns how many of the two B serves, printing the hunt when not both.
 */
static int
wait_released(const struct event *ann, const struct event *state, const char *d,
    int fd, int *conns)
{
	char f[200];
	int  i, n = 0;

	snprintf(f, sizeof(f), "{\"ids\":[\"%s\",\"%s\"]}", ann->id_hex,
	    state->id_hex);
	for (i = 0; i < HUNT_WAIT_S * 5; i++) {
		if (fd != -1)
			*conns += accept_held(fd);
		if ((n = count_on(b, f, NULL)) == 2)
			break;
		usleep(200000);
	}
	if (fd != -1)
		*conns += accept_held(fd);
	if (n != 2)
		print_hunt(b, d);
	return n;
}

/*
 * who's announcement of d: as clone first the server on loopback port
 * (not graspd) when port is not 0, then the n graspds of clones; as
 * relays the nrelays graspds of relays.
 */
static struct event *
announcement(int who, const char *d, int port, struct relayproc *const clones[],
    size_t n, struct relayproc *const relays[], size_t nrelays)
{
	char	    other[32];
	const char *dom[4], *urls[4];
	size_t	    i, nd = 0;

	if (port != 0) {
		snprintf(other, sizeof(other), "127.0.0.1:%d", port);
		dom[nd++] = other;
	}
	for (i = 0; i < n && nd < TINT_N(dom); i++)
		dom[nd++] = relayproc_domain(clones[i]);
	for (i = 0; i < nrelays && i < TINT_N(urls); i++)
		urls[i] = relayproc_url(relays[i]);
	return tint_announcement(KEYS, who, time(NULL) - 60, d, dom, nd, urls,
	    i, NULL);
}

static void
test_synced_state_is_hunted_and_released(void)
{
	struct event	 *ann = NULL, *state = NULL;
	struct wsc	 *ws = NULL;
	struct relayproc *ab[2];
	uint8_t		  sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char		  dir[512], url[512], oid[41], got[41];
	char		 *msg = NULL;
	cJSON		 *root = NULL;
	const cJSON	 *view, *tot;
	int		  ok = 0, i, conns = 0;
	int64_t		  t0;

	tuser_sk(KEYS, 1, sk);
	event_pubkey_of(sk, pk);
	ab[0] = a;
	ab[1] = b;
	/*
	 * The silent server first.  B gets the state from A's relay, which
	 * as a GRASP server serves it only with its git data: B asks A
	 * first and never dials the silent server (before, it asked the
	 * clone URLs in the announcement's order, and the silent one cost
	 * its fetch timeout).
	 */
	T_ASSERT((ann = announcement(1, "hunted", silent_port, ab, 2, ab, 2)) !=
	    NULL);
	T_ASSERT((ws = ws_to(a)) != NULL);
	T_ASSERT(nostr_publish(ws, ann, TMO, &ok, &msg) == 0);
	T_ASSERT(ok);
	release_on_a(ws, sk, "hunted", oid, &state);
	T_ASSERT(state != NULL);

	/* B: synced from A, held, hunted, released. */
	t0 = wsc_now_ms();
	T_EQ_INT(wait_released(ann, state, "hunted", silent_fd, &conns), 2);
	printf("# released on B after %lld ms\n",
	    (long long)(wsc_now_ms() - t0));
	/* (conns counts syncd's relay connection to the silent server: a
	 * clone URL's server is a relay too; its fetch counters say more.) */

	/* The clone from B has the commit. */
	gt_url(url, sizeof(url), relayproc_domain(b), pk, "hunted");
	snprintf(dir, sizeof(dir), "%s/hunted-clone", tmpdir);
	T_EQ_INT(gt_git(NULL, NULL, "clone", "-q", url, dir, NULL), 0);
	T_ASSERT(gt_rev(dir, "HEAD", got) == 0);
	T_EQ_STR(got, oid);

	view = show(b, ROLE_SYNCD, &root);
	T_ASSERT(view != NULL);
	tot = cJSON_GetObjectItem(view, "git_hunt");
	T_CHECK(num(tot, "fetches_ok") >= 1);
	T_CHECK(num(tot, "fetches_timed_out") == 0);
	T_CHECK(num(tot, "objects_fetched") >= 1);
	/*
	 * Both events left B's purgatory: the hunt left the queue.  syncd
	 * counts its GIT_DATA notice once it has read relayd's answer, on
	 * its own poll timer, which may come after the release was seen
	 * and the clone above: wait for the count too.
	 */
	for (i = 0; i < 25 &&
	     (hunt_of(view, "hunted") != NULL ||
		 num(cJSON_GetObjectItem(view, "git_hunt"), "notices_ok") < 1);
	     i++) {
		cJSON_Delete(root);
		usleep(200000);
		view = show(b, ROLE_SYNCD, &root);
		T_ASSERT(view != NULL);
	}
	T_CHECK(hunt_of(view, "hunted") == NULL);
	T_CHECK(num(cJSON_GetObjectItem(view, "git_hunt"), "notices_ok") >= 1);
	T_CHECK(
	    num(cJSON_GetObjectItem(view, "git_hunt"), "events_released") >= 1);
	cJSON_Delete(root);
	free(msg);
	wsc_close(ws);
	event_destroy(ann);
	event_destroy(state);
}

/*
 * A state the user sent B directly (before A), so that B does not know
 * where its data is: the hunt asks the clone URLs in the announcement's
 * order, the silent server first, which fails only its own fetch, then A.
 */
static void
test_a_silent_server_costs_only_its_own_fetch(void)
{
	struct event	 *ann = NULL, *state = NULL;
	struct wsc	 *wa = NULL, *wb = NULL;
	struct relayproc *ab[2];
	uint8_t		  sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char		  dir[512], url[512], oid[41], f[200], *msg = NULL;
	char		 *out = NULL;
	cJSON		 *root = NULL;
	const cJSON	 *view;
	int		  ok = 0, conns = 0;
	int64_t		  at = time(NULL);

	tuser_sk(KEYS, 4, sk);
	event_pubkey_of(sk, pk);
	ab[0] = a;
	ab[1] = b;
	T_ASSERT((ann = announcement(4, "silent", silent_port, ab, 2, ab, 2)) !=
	    NULL);
	T_ASSERT((wa = ws_to(a)) != NULL && (wb = ws_to(b)) != NULL);
	T_ASSERT(nostr_publish(wa, ann, TMO, &ok, &msg) == 0 && ok);
	free(msg);
	msg = NULL;
	T_ASSERT(nostr_publish(wb, ann, TMO, &ok, &msg) == 0 && ok);
	snprintf(dir, sizeof(dir), "%s/silent", tmpdir);
	T_ASSERT(gt_init(dir) == 0);
	T_ASSERT(gt_commit(dir, "README", "silent", "first", oid) == 0);
	/* The same state (same id) to B, held there, then to A. */
	T_ASSERT(gt_state(wb, sk, at, "silent", oid) == 0);
	T_ASSERT(gt_state(wa, sk, at, "silent", oid) == 0);
	gt_url(url, sizeof(url), relayproc_domain(a), pk, "silent");
	T_EQ_INT(gt_git(dir, &out, "push", "-q", url, "main", NULL), 0);
	snprintf(f, sizeof(f), "{\"kinds\":[30618],\"#d\":[\"silent\"]}");
	T_EQ_INT(count_on(a, f, &state), 1);
	T_ASSERT(state != NULL);
	T_EQ_INT(wait_released(ann, state, "silent", silent_fd, &conns), 2);
	/* The silent server was tried, and failed only its own fetch. */
	T_CHECK(conns >= 1);
	view = show(b, ROLE_SYNCD, &root);
	T_ASSERT(view != NULL);
	T_CHECK(num(cJSON_GetObjectItem(view, "git_hunt"),
		    "fetches_timed_out") >= 1);
	cJSON_Delete(root);
	free(out);
	free(msg);
	wsc_close(wa);
	wsc_close(wb);
	event_destroy(ann);
	event_destroy(state);
}

/*
 * B holds a state naming a commit nobody has next to the commit A's state
 * names: the fetch of both from A fails on "not our ref", and the other
 * object still comes, so A's state and the announcement are released.
 */
static void
test_a_missing_object_does_not_block_the_others(void)
{
	struct event	 *ann = NULL, *ghost = NULL, *state = NULL;
	struct wsc	 *wa = NULL, *wb = NULL;
	struct relayproc *ab[2];
	uint8_t		  sk[SECKEY_LEN];
	char		  tags[512], f[512], oid[41], *msg = NULL;
	const char	 *fake = "0123456789abcdef0123456789abcdef01234567";
	cJSON		 *root = NULL;
	const cJSON	 *view, *h;
	int		  ok = 0, i;

	tuser_sk(KEYS, 3, sk);
	ab[0] = a;
	ab[1] = b;
	T_ASSERT((ann = announcement(3, "partial", 0, ab, 2, ab, 2)) != NULL);
	T_ASSERT((wa = ws_to(a)) != NULL && (wb = ws_to(b)) != NULL);
	T_ASSERT(nostr_publish(wa, ann, TMO, &ok, &msg) == 0 && ok);
	free(msg);
	msg = NULL;
	T_ASSERT(nostr_publish(wb, ann, TMO, &ok, &msg) == 0 && ok);
	snprintf(tags, sizeof(tags),
	    "[[\"d\",\"partial\"],"
	    "[\"refs/heads/ghost\",\"%s\"]]",
	    fake);
	T_ASSERT((ghost = event_new_signed(sk, time(NULL) - 30, 30618, tags,
		      "")) != NULL);
	free(msg);
	msg = NULL;
	T_ASSERT(nostr_publish(wb, ghost, TMO, &ok, &msg) == 0 && ok);
	release_on_a(wa, sk, "partial", oid, &state);
	T_ASSERT(state != NULL);

	T_EQ_INT(wait_released(ann, state, "partial", -1, NULL), 2);
	snprintf(f, sizeof(f), "{\"ids\":[\"%s\"]}", ghost->id_hex);
	T_EQ_INT(count_on(b, f, NULL), 0);
	/* The released state leaves the hunt at syncd's next scan. */
	for (i = 0; i < 25; i++) {
		cJSON_Delete(root);
		view = show(b, ROLE_SYNCD, &root);
		T_ASSERT(view != NULL);
		h = hunt_of(view, "partial");
		if (h != NULL && num(h, "held_events") == 1)
			break;
		usleep(200000);
	}
	T_CHECK(
	    num(cJSON_GetObjectItem(view, "git_hunt"), "fetches_failed") >= 1);
	if (h == NULL || strstr(str(h, "last_error"), "not our ref") == NULL ||
	    num(h, "missing") != 1)
		print_hunt(b, "partial");
	T_ASSERT(h != NULL);
	T_CHECK(num(h, "held_events") == 1);
	T_CHECK(num(h, "missing") == 1);
	T_CHECK(strstr(str(h, "last_error"), "not our ref") != NULL);
	cJSON_Delete(root);
	free(msg);
	wsc_close(wa);
	wsc_close(wb);
	event_destroy(ann);
	event_destroy(ghost);
	event_destroy(state);
}

/* 1 if relayd answers a GIT_DATA request of len bytes on the gitdata
 * channel (ctl != 0: on its control socket) with ok (1) or with an error
 * containing why (0). */
static int
git_data_answer(int ctl, const uint8_t *req, size_t len, int ok,
    const char *why)
{
	char   run[PATH_MAX];
	cJSON *rep;
	int    r;

	snprintf(run, sizeof(run), "%s/run", relayproc_dir(b));
	rep = ctl ?
	    ctl_role_msg(run, ROLE_RELAYD, MSG_GIT_DATA, req, len, TMO) :
	    ctl_chan_msg(run, CHAN_GITDATA, MSG_GIT_DATA, req, len, TMO);
	if (rep == NULL)
		return 0;
	r = cJSON_IsTrue(cJSON_GetObjectItem(rep, "ok")) == ok &&
	    (ok || strstr(str(rep, "error"), why) != NULL);
	if (!r)
		printf("# %zu bytes -> %s\n", len, str(rep, "error"));
	cJSON_Delete(rep);
	return r;
}

/* 1 if the first 64 KiB of p's log contain s. */
static int
log_has(struct relayproc *p, const char *s)
{
	char *text = t_slurp(relayproc_log_path(p), NULL);
	int   r = text != NULL && strstr(text, s) != NULL;

	free(text);
	return r;
}

/*
 * GIT_DATA has a channel of its own, which only syncd writes: relayd
 * answers what it decides there (an unsafe identifier, a repository that
 * is gone, a release) and, as on every sibling channel, exits on a
 * malformed request, after which graspd starts it again.  The control
 * socket, which any local client writes, refuses GIT_DATA with an answer.
 */
static void
test_relayd_git_data_request(void)
{
	uint8_t sk[SECKEY_LEN], pk[PUBKEY_LEN], req[MSG_GIT_DATA_MAX];
	char	run[PATH_MAX];
	cJSON  *rep;
	int	n, i, back = 0;

	tuser_sk(KEYS, 1, sk);
	event_pubkey_of(sk, pk);
	snprintf(run, sizeof(run), "%s/run", relayproc_dir(b));
	/* The control command it used to be is gone. */
	rep = control(b, ROLE_RELAYD,
	    "{\"cmd\":\"git-data\",\"args\":"
	    "[\"00\",\"hunted\"]}");
	T_ASSERT(rep != NULL);
	T_CHECK(!cJSON_IsTrue(cJSON_GetObjectItem(rep, "ok")));
	T_CHECK(strstr(str(rep, "error"), "unknown command") != NULL);
	cJSON_Delete(rep);
	T_ASSERT((n = msg_git_data_encode(req, pk, "hunted")) > 0);
	T_CHECK(git_data_answer(1, req, (size_t)n, 0, "unexpected GIT_DATA"));
	T_CHECK(git_data_answer(1, req, 32, 0, "unexpected GIT_DATA"));
	T_ASSERT((n = msg_git_data_encode(req, pk, "..")) > 0);
	T_CHECK(git_data_answer(0, req, (size_t)n, 0, "not a safe"));
	T_ASSERT((n = msg_git_data_encode(req, pk, "nope")) > 0);
	T_CHECK(git_data_answer(0, req, (size_t)n, 0, "no such repository"));
	T_ASSERT((n = msg_git_data_encode(req, pk, "hunted")) > 0);
	T_CHECK(git_data_answer(0, req, (size_t)n, 1, NULL));
	/* relayd went on after the refusals. */
	rep = control(b, ROLE_RELAYD, "{\"cmd\":\"status\"}");
	T_CHECK(rep != NULL && cJSON_IsTrue(cJSON_GetObjectItem(rep, "ok")));
	cJSON_Delete(rep);
	/* A malformed request from the sibling: no answer, relayd exits. */
	T_CHECK(ctl_chan_msg(run, CHAN_GITDATA, MSG_GIT_DATA, req, 32, 2000) ==
	    NULL);
	for (i = 0; i < 50 && !log_has(b, "malformed GIT_DATA message"); i++)
		usleep(100 * 1000);
	T_CHECK(log_has(b, "malformed GIT_DATA message"));
	/* graspd starts it again (backoff of at most a few seconds). */
	for (i = 0; i < 150 && !back; i++) {
		rep = control(b, ROLE_RELAYD, "{\"cmd\":\"status\"}");
		back =
		    rep != NULL && cJSON_IsTrue(cJSON_GetObjectItem(rep, "ok"));
		cJSON_Delete(rep);
		if (!back)
			usleep(100 * 1000);
	}
	T_CHECK(back);
}

static void
test_private_clone_urls_are_refused_never_dialled(void)
{
	struct event	 *ann = NULL, *state = NULL;
	struct wsc	 *ws = NULL;
	struct relayproc *ac[2];
	uint8_t		  sk[SECKEY_LEN];
	char		  tags[512], dir[512], oid[41], *msg = NULL;
	cJSON		 *root = NULL;
	const cJSON	 *view = NULL, *h = NULL, *tot;
	int		  ok = 0, i;

	tuser_sk(KEYS, 2, sk);
	ac[0] = a;
	ac[1] = c;
	T_ASSERT(
	    (ann = announcement(2, "quiet", quiet_port, ac, 2, &c, 1)) != NULL);
	T_ASSERT((ws = ws_to(c)) != NULL);
	T_ASSERT(nostr_publish(ws, ann, TMO, &ok, &msg) == 0);
	T_ASSERT(ok);
	/* A commit nobody has: the state is held, user-submitted. */
	snprintf(dir, sizeof(dir), "%s/quiet", tmpdir);
	T_ASSERT(gt_init(dir) == 0);
	T_ASSERT(gt_commit(dir, "README", "quiet", "quiet", oid) == 0);
	snprintf(tags, sizeof(tags),
	    "[[\"d\",\"quiet\"],[\"refs/heads/main\","
	    "\"%s\"],[\"HEAD\",\"ref: refs/heads/main\"]]",
	    oid);
	T_ASSERT((state = event_new_signed(sk, time(NULL), 30618, tags, "")) !=
	    NULL);
	free(msg);
	msg = NULL;
	T_ASSERT(nostr_publish(ws, state, TMO, &ok, &msg) == 0);
	T_ASSERT(ok);
	T_ASSERT(msg != NULL && strncmp(msg, "purgatory:", 10) == 0);

	/* 180 s / 60 after a user-submitted event, then an attempt. */
	for (i = 0; i < 15 * 5; i++) {
		cJSON_Delete(root);
		view = show(c, ROLE_SYNCD, &root);
		h = view ? hunt_of(view, "quiet") : NULL;
		if (h != NULL && num(h, "attempts") >= 1)
			break;
		usleep(200000);
	}
	if (h == NULL || num(h, "missing") != 1)
		print_hunt(c, "quiet");
	T_ASSERT(h != NULL);
	T_CHECK(num(h, "attempts") >= 1);
	T_CHECK(num(h, "needed") == 1);
	T_CHECK(num(h, "missing") == 1);
	/* A's and the listener's URLs refused, C's own left out. */
	T_CHECK(num(h, "clone_urls") == 0);
	T_CHECK(strcmp(str(h, "last_error"), "no usable clone URL") == 0);
	tot = cJSON_GetObjectItem(view, "git_hunt");
	T_CHECK(num(tot, "urls_refused") >= 2);
	T_CHECK(num(tot, "fetches_ok") == 0);
	T_CHECK(num(tot, "fetches_failed") == 0);
	T_EQ_INT(accept_held(quiet_fd), 0);
	cJSON_Delete(root);
	free(msg);
	wsc_close(ws);
	event_destroy(ann);
	event_destroy(state);
}

int
main(void)
{
	char	    env1[200];
	const char *envb[3];
	int	    i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (tdir_make(tmpdir, sizeof(tmpdir), "graspd-hunt") == -1 ||
	    gt_setup(tmpdir) == -1 ||
	    (silent_fd = listener(&silent_port)) == -1 ||
	    (quiet_fd = listener(&quiet_port)) == -1) {
		printf("not ok - hunt_setup: temp dir or listeners\n");
		return 1;
	}
	if ((a = relayproc_start("graspd", NULL)) == NULL) {
		printf("not ok - hunt_setup: graspd A did not start\n");
		return 1;
	}
	snprintf(env1, sizeof(env1), "NGIT_SYNC_BOOTSTRAP_RELAY_URL=%s",
	    relayproc_url(a));
	envb[0] = env1;
	envb[1] = "NGIT_SYNC_ALLOW_PRIVATE_TARGETS=true";
	envb[2] = NULL;
	if ((b = relayproc_start("graspd", envb)) == NULL ||
	    (c = relayproc_start("graspd", NULL)) == NULL) {
		printf("not ok - hunt_setup: graspd B or C did not start\n");
		relayproc_free(b);
		relayproc_free(a);
		return 1;
	}
	T_RUN(test_synced_state_is_hunted_and_released);
	T_RUN(test_a_silent_server_costs_only_its_own_fetch);
	T_RUN(test_a_missing_object_does_not_block_the_others);
	T_RUN(test_relayd_git_data_request);
	T_RUN(test_private_clone_urls_are_refused_never_dialled);
	if (t_fail) {
		relayproc_dump_log(a, 30);
		relayproc_dump_log(b, 60);
		relayproc_dump_log(c, 30);
	}
	relayproc_free(c);
	relayproc_free(b);
	relayproc_free(a);
	for (i = 0; i < nheld; i++)
		close(held[i]);
	close(silent_fd);
	close(quiet_fd);
	tdir_remove(tmpdir);
	return t_done();
}
