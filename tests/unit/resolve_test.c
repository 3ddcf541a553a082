/*
 * resolve_test.c: common/resolve.c, name lookups on threads with their
 * answers on the loop, against a slow name server on loopback
 * (tests/lib/slowdns.h; needs root, the cases are skipped otherwise).
 * No libwebsockets loop: the test calls resolve_poll() itself.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "relayurl.h"
#include "resolve.h"
#include "slowdns.h"
#include "t.h"

#define FAST	"fast.graspd.test"
#define SLOW	"slow.graspd.test"
#define NEVER	"never.graspd.test"
/* How long the slow name takes. */
#define SLOW_MS 2000

static struct slowdns *dns;

struct answer {
	int	n; /* callbacks */
	int	rc;
	char	why[128];
	char	addr[64];
	int	port;
	int64_t at;
};

static void
done(void *arg, int rc, const struct sockaddr_storage *ss, socklen_t sl,
    const char *why)
{
	struct answer *a = arg;

	(void)sl;
	a->n++;
	a->rc = rc;
	a->at = t_now_ms();
	snprintf(a->why, sizeof(a->why), "%s", why ? why : "");
	a->addr[0] = '\0';
	if (rc == 0 && ss != NULL && ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)ss;

		inet_ntop(AF_INET, &sin->sin_addr, a->addr, sizeof(a->addr));
		a->port = ntohs(sin->sin_port);
	}
}

/* Polls until a has an answer or ms pass; 1 if it has. */
static int
wait_answer(struct answer *a, int ms)
{
	int64_t end = t_now_ms() + ms;

	while (a->n == 0 && t_now_ms() < end) {
		resolve_poll();
		usleep(5000);
	}
	return a->n > 0;
}

/* Polls for ms. */
static void
poll_for(int ms)
{
	int64_t end = t_now_ms() + ms;

	while (t_now_ms() < end) {
		resolve_poll();
		usleep(5000);
	}
}

static void
test_name_resolves_on_a_thread_and_is_vetted_on_the_loop(void)
{
	struct answer a = { 0 }, b = { 0 };
	uint64_t      id;

	id = resolve_start(NULL, "ws://" FAST ":4455/", RELAYURL_ALLOW_PRIVATE,
	    RESOLVE_TIMEOUT, done, &a, NULL);
	T_ASSERT(id != 0);
	/* Never from inside resolve_start(). */
	T_EQ_INT(a.n, 0);
	T_ASSERT(wait_answer(&a, 5000));
	T_EQ_INT(a.rc, 0);
	T_EQ_STR(a.addr, "127.0.0.1");
	T_EQ_INT(a.port, 4455);
	/* The same SSRF rules as relayurl_resolve_checked(): a peer's name
	 * that resolves to loopback is refused. */
	T_ASSERT(resolve_start(NULL, "wss://" FAST "/", 0, RESOLVE_TIMEOUT,
		     done, &b, NULL) != 0);
	T_ASSERT(wait_answer(&b, 5000));
	T_EQ_INT(b.rc, -1);
	T_EQ_STR(b.why, "rule 22: name resolves to a refused address");
	T_EQ_INT(a.n, 1);
	T_EQ_INT(resolve_pending(), 0);
}

static void
test_unknown_name_and_bad_key(void)
{
	struct answer a = { 0 };
	const char   *why = NULL;

	T_ASSERT(
	    resolve_start(NULL, "ws://nothing.graspd.test/",
		RELAYURL_ALLOW_PRIVATE, RESOLVE_TIMEOUT, done, &a, NULL) != 0);
	T_ASSERT(wait_answer(&a, 5000));
	T_EQ_INT(a.rc, -2);
	T_EQ_INT(resolve_start(NULL, "ws://Not.Canonical/", 0, RESOLVE_TIMEOUT,
		     done, &a, &why),
	    0);
	T_EQ_STR(why, "not a canonical relay key");
}

static void
test_slow_name_does_not_delay_a_fast_one(void)
{
	struct answer s = { 0 }, f = { 0 };
	int64_t	      t0 = t_now_ms();

	T_ASSERT(resolve_start(NULL, "ws://" SLOW "/", RELAYURL_ALLOW_PRIVATE,
		     RESOLVE_TIMEOUT, done, &s, NULL) != 0);
	usleep(100000);
	T_ASSERT(resolve_start(NULL, "ws://" FAST "/", RELAYURL_ALLOW_PRIVATE,
		     RESOLVE_TIMEOUT, done, &f, NULL) != 0);
	T_ASSERT(wait_answer(&f, 5000));
	printf("# fast answered after %lld ms, the slow one pending: %d\n",
	    (long long)(f.at - t0), s.n == 0);
	T_EQ_INT(f.rc, 0);
	T_EQ_INT(s.n, 0);
	T_CHECK(f.at - t0 < SLOW_MS / 2);
	T_ASSERT(wait_answer(&s, SLOW_MS + 5000));
	T_EQ_INT(s.rc, 0);
	T_CHECK(s.at - t0 >= SLOW_MS - 100);
	T_CHECK(resolve_threads() >= 2 && resolve_threads() <= RESOLVE_THREADS);
}

static void
test_timeout_fails_and_late_answer_is_dropped(void)
{
	struct answer a = { 0 };
	int64_t	      t0 = t_now_ms();
	int	      before = slowdns_answers(dns, SLOW);

	T_ASSERT(resolve_start(NULL, "ws://" SLOW "/", RELAYURL_ALLOW_PRIVATE,
		     0.3, done, &a, NULL) != 0);
	T_ASSERT(wait_answer(&a, 5000));
	T_EQ_INT(a.rc, -2);
	T_EQ_STR(a.why, "timed out");
	T_CHECK(a.at - t0 >= 250 && a.at - t0 < SLOW_MS);
	/* The server answers later; nothing more is delivered. */
	while (slowdns_answers(dns, SLOW) < before + 2 &&
	    t_now_ms() < t0 + SLOW_MS + 5000)
		usleep(20000);
	T_CHECK(slowdns_answers(dns, SLOW) >= before + 2);
	poll_for(300);
	T_EQ_INT(a.n, 1);
	T_EQ_INT(resolve_pending(), 0);
}

static void
test_cancelled_lookup_never_calls_back(void)
{
	struct answer *a = calloc(1, sizeof(*a)), q = { 0 };
	uint64_t       id;
	int	       before = slowdns_answers(dns, SLOW);
	int64_t	       end = t_now_ms() + SLOW_MS + 5000;

	T_ASSERT(a != NULL);
	/* One cancelled while a thread runs it, one before any does. */
	id = resolve_start(NULL, "ws://" SLOW "/", RELAYURL_ALLOW_PRIVATE,
	    RESOLVE_TIMEOUT, done, a, NULL);
	T_ASSERT(id != 0);
	usleep(200000);
	resolve_cancel(id);
	/* The requester is gone: its memory too (ASan sees any use). */
	free(a);
	resolve_cancel(id); /* twice, and an unknown id: no effect */
	resolve_cancel(id + 1000);
	T_EQ_INT(resolve_pending(), 0);
	while (slowdns_answers(dns, SLOW) < before + 2 && t_now_ms() < end)
		usleep(20000);
	T_CHECK(slowdns_answers(dns, SLOW) >= before + 2);
	poll_for(200);
	/* The thread that dropped the late answer takes new work. */
	T_ASSERT(resolve_start(NULL, "ws://" FAST "/", RELAYURL_ALLOW_PRIVATE,
		     RESOLVE_TIMEOUT, done, &q, NULL) != 0);
	T_ASSERT(wait_answer(&q, 5000));
	T_EQ_INT(q.rc, 0);
}

static void
test_queue_is_capped(void)
{
	static struct answer a[RESOLVE_QUEUE_MAX];
	struct answer	     extra = { 0 };
	uint64_t	     ids[RESOLVE_QUEUE_MAX];
	const char	    *why = NULL;
	int		     i;

	memset(a, 0, sizeof(a));
	for (i = 0; i < RESOLVE_QUEUE_MAX; i++) {
		ids[i] = resolve_start(NULL, "ws://" NEVER "/",
		    RELAYURL_ALLOW_PRIVATE, RESOLVE_TIMEOUT, done, &a[i], NULL);
		T_ASSERT(ids[i] != 0);
	}
	T_EQ_INT(resolve_pending(), RESOLVE_QUEUE_MAX);
	T_EQ_INT(resolve_start(NULL, "ws://" FAST "/", RELAYURL_ALLOW_PRIVATE,
		     RESOLVE_TIMEOUT, done, &extra, &why),
	    0);
	T_EQ_STR(why, "too many lookups");
	T_CHECK(resolve_threads() <= RESOLVE_THREADS);
	/* Cancelled, they free their places; their threads stay busy with
	 * the silent server, but queued ones are simply dropped. */
	for (i = 0; i < RESOLVE_QUEUE_MAX; i++)
		resolve_cancel(ids[i]);
	T_EQ_INT(resolve_pending(), 0);
	poll_for(100);
	for (i = 0; i < RESOLVE_QUEUE_MAX; i++)
		T_EQ_INT(a[i].n, 0);
}

static const struct t_case cases[] = {
	T_CASE(test_name_resolves_on_a_thread_and_is_vetted_on_the_loop),
	T_CASE(test_unknown_name_and_bad_key),
	T_CASE(test_slow_name_does_not_delay_a_fast_one),
	T_CASE(test_timeout_fails_and_late_answer_is_dropped),
	T_CASE(test_cancelled_lookup_never_calls_back),
	T_CASE(test_queue_is_capped),
};

int
main(void)
{
	char	    dir[] = "/tmp/resolve_test.XXXXXX";
	const char *why = NULL;
	size_t	    i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (mkdtemp(dir) == NULL) {
		printf("not ok - resolve_test: mkdtemp\n");
		return 1;
	}
	/* Before any thread: unshare(CLONE_NEWNS) needs one. */
	if ((dns = slowdns_start(dir, &why)) == NULL) {
		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			printf("ok - %s # SKIP %s\n", cases[i].name, why);
		rmdir(dir);
		return 0;
	}
	printf("# name server on %s\n", slowdns_addr(dns));
	slowdns_add(dns, FAST, 0);
	slowdns_add(dns, SLOW, SLOW_MS);
	slowdns_add(dns, NEVER, SLOWDNS_NEVER);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		t_run(cases[i].name, cases[i].fn);
	slowdns_stop(dns);
	{
		char path[64];

		snprintf(path, sizeof(path), "%s/resolv.conf", dir);
		unlink(path);
		rmdir(dir);
	}
	return t_done();
}
