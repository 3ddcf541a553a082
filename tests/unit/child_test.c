/*
 * child_test.c: common/child.c's table of running children, with real
 * short-lived programs on a real libwebsockets loop: exit statuses, the
 * SIGKILL at the deadline, callbacks that start or abandon children,
 * many children at once, and the count back at zero after each.
 */
#include <sys/types.h>

#include <errno.h>
#include <libwebsockets.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "child.h"
#include "log.h"
#include "t.h"

/* Ours: the table's check period here (relayd uses 200, syncd 100). */
#define CHECK_MS 20
/* Ours: the longest any case waits for its children. */
#define WAIT_MS	 3000
/* Ours: children of the many-at-once case. */
#define MANY	 64

static struct lws_context    *ctx;
static lws_sorted_usec_list_t tick;

/* What a callback saw. */
struct done {
	int	calls;
	pid_t	pid;
	int	status;
	int	killed;
	int64_t at; /* t_now_ms() */
};

static char *const argv_true[] = { "/bin/true", NULL };
static char *const argv_false[] = { "/bin/false", NULL };
static char *const argv_sleep[] = { "sleep", "5", NULL };

static void
tick_cb(lws_sorted_usec_list_t *sul)
{
	/* Keeps lws_service() returning when no child timer is armed. */
	lws_sul_schedule(ctx, 0, sul, tick_cb, 50 * 1000);
}

static void
record(pid_t pid, int status, int killed, void *arg)
{
	struct done *d = arg;

	d->calls++;
	d->pid = pid;
	d->status = status;
	d->killed = killed;
	d->at = t_now_ms();
}

/* Services the loop until *calls reaches want or WAIT_MS pass. */
static void
run_until(const int *calls, int want)
{
	int64_t end = t_now_ms() + WAIT_MS;

	while (*calls < want && t_now_ms() < end)
		lws_service(ctx, 0);
}

/* Services the loop until the table is empty or WAIT_MS pass. */
static void
run_until_empty(void)
{
	int64_t end = t_now_ms() + WAIT_MS;

	while (child_count() > 0 && t_now_ms() < end)
		lws_service(ctx, 0);
}

static pid_t
start(char *const argv[], int64_t timeout_ms, child_done_cb *cb, void *arg)
{
	return child_start(argv, -1, -1, -1, NULL, timeout_ms, "test", cb, arg);
}

static void
test_overdue_child_is_killed_at_its_deadline(void)
{
	struct done d = { 0 };
	int64_t	    t0 = t_now_ms();

	T_ASSERT(start(argv_sleep, 100, record, &d) > 0);
	run_until(&d.calls, 1);
	if (d.calls == 0)
		child_kill_all();
	T_EQ_INT(d.calls, 1);
	T_EQ_INT(d.status, 128 + SIGKILL);
	T_EQ_INT(d.killed, 1);
	/* At the deadline: not before it, long before sleep's 5 s. */
	T_CHECK(d.at - t0 >= 100);
	T_CHECK(d.at - t0 < 1000);
	T_EQ_INT(child_count(), 0);
}

/*
 * How a child ended reaches its callback: the exit status of one that
 * ends by itself; 128 + SIGKILL and killed after child_kill(); nothing
 * after child_abandon().  Each is counted until reaped, then waited for.
 */
static void
test_the_callback_learns_how_the_child_ended(void)
{
	static char *const argv_exit3[] = { "/bin/sh", "-c", "exit 3", NULL };
	static const struct {
		char *const *argv;
		void (*op)(pid_t); /* or NULL */
		int calls;
		int status;
		int killed;
	} tab[] = {
		{ argv_true, NULL, 1, 0, 0 },
		{ argv_false, NULL, 1, 1, 0 },
		{ argv_exit3, NULL, 1, 3, 0 },
		{ argv_sleep, child_kill, 1, 128 + SIGKILL, 1 },
		{ argv_sleep, child_abandon, 0, 0, 0 },
	};
	struct done d;
	pid_t	    pid;
	size_t	    i;

	for (i = 0; i < T_NCASES(tab); i++) {
		memset(&d, 0, sizeof(d));
		T_ASSERT(
		    (pid = start(tab[i].argv, WAIT_MS * 10, record, &d)) > 0);
		if (tab[i].op != NULL)
			tab[i].op(pid);
		T_EQ_INT(child_count(), 1);
		run_until_empty();
		T_EQ_INT(child_count(), 0);
		T_EQ_INT(d.calls, tab[i].calls);
		if (d.calls > 0) {
			T_EQ_INT(d.pid, pid);
			T_EQ_INT(d.status, tab[i].status);
			T_EQ_INT(d.killed, tab[i].killed);
		}
		/* Waited for: no zombie left. */
		T_CHECK(kill(pid, 0) == -1 && errno == ESRCH);
	}
}

/* The second child, started from the first one's callback. */
struct chain {
	struct done first, second;
	pid_t	    second_pid;
};

static void
chain_first(pid_t pid, int status, int killed, void *arg)
{
	struct chain *c = arg;

	record(pid, status, killed, &c->first);
	c->second_pid = start(argv_false, WAIT_MS, record, &c->second);
}

static void
test_callback_may_start_another_child(void)
{
	struct chain c;

	memset(&c, 0, sizeof(c));
	T_ASSERT(start(argv_true, WAIT_MS, chain_first, &c) > 0);
	run_until(&c.second.calls, 1);
	T_EQ_INT(c.first.calls, 1);
	T_EQ_INT(c.first.status, 0);
	T_ASSERT(c.second_pid > 0);
	T_EQ_INT(c.second.calls, 1);
	T_EQ_INT(c.second.pid, c.second_pid);
	T_EQ_INT(c.second.status, 1);
	T_EQ_INT(child_count(), 0);
}

/* Two children reaped in one pass; the first's callback abandons the other. */
struct pair {
	struct done d[2];
	pid_t	    pid[2];
};

static void
pair_done(pid_t pid, int status, int killed, void *arg)
{
	struct pair *p = arg;
	int	     i = pid == p->pid[0] ? 0 : 1;

	record(pid, status, killed, &p->d[i]);
	child_abandon(p->pid[1 - i]);
}

static void
test_callback_may_abandon_a_reaped_sibling(void)
{
	struct pair p;
	int64_t	    end;

	memset(&p, 0, sizeof(p));
	T_ASSERT((p.pid[0] = start(argv_true, WAIT_MS, pair_done, &p)) > 0);
	T_ASSERT((p.pid[1] = start(argv_true, WAIT_MS, pair_done, &p)) > 0);
	/* Both end before the table looks, without the loop. */
	end = t_now_ms() + 300;
	while (t_now_ms() < end)
		usleep(10 * 1000);
	child_reap();
	T_EQ_INT(child_count(), 0);
	/* One callback ran; the other was forgotten though already reaped. */
	T_EQ_INT(p.d[0].calls + p.d[1].calls, 1);
}

struct many {
	pid_t pid[MANY];
	int   status[MANY];
	int   calls;
	int   wrong;
};

static struct many many;

static void
many_done(pid_t pid, int status, int killed, void *arg)
{
	int i = (int)(intptr_t)arg;

	many.calls++;
	if (pid != many.pid[i] || killed || many.status[i] != -1)
		many.wrong++;
	many.status[i] = status;
}

static void
test_many_children_at_once(void)
{
	char *argv[] = { "/bin/sh", "-c", NULL, NULL };
	char  script[32];
	int   i;

	memset(&many, 0, sizeof(many));
	for (i = 0; i < MANY; i++) {
		snprintf(script, sizeof(script), "exit %d", i % 7);
		argv[2] = script;
		many.status[i] = -1;
		T_ASSERT((many.pid[i] = start(argv, WAIT_MS, many_done,
			      (void *)(intptr_t)i)) > 0);
	}
	T_EQ_INT(child_count(), MANY);
	run_until(&many.calls, MANY);
	T_EQ_INT(many.calls, MANY);
	T_EQ_INT(many.wrong, 0);
	for (i = 0; i < MANY; i++)
		T_EQ_INT(many.status[i], i % 7);
	T_EQ_INT(child_count(), 0);
}

static void
test_kill_all_waits_for_every_child(void)
{
	struct done d = { 0 };
	pid_t	    pid[3];
	int	    i;

	for (i = 0; i < 3; i++)
		T_ASSERT(
		    (pid[i] = start(argv_sleep, WAIT_MS * 10, record, &d)) > 0);
	T_EQ_INT(child_count(), 3);
	child_kill_all();
	T_EQ_INT(child_count(), 0);
	for (i = 0; i < 3; i++)
		T_CHECK(kill(pid[i], 0) == -1 && errno == ESRCH);
	/* No callback, now or later. */
	run_until(&d.calls, 1);
	T_EQ_INT(d.calls, 0);
}

static void
test_missing_program_fails_to_start(void)
{
	char *const argv[] = { "/nonexistent/graspd-child-test", NULL };
	struct done d = { 0 };

	errno = 0;
	T_EQ_INT(start(argv, WAIT_MS, record, &d), -1);
	T_EQ_INT(errno, ENOENT);
	T_EQ_INT(child_count(), 0);
	T_EQ_INT(d.calls, 0);
}

static int
setup(void)
{
	static const struct lws_protocols protos[] = {
		{ "child-test", lws_callback_http_dummy, 0, 0, 0, NULL, 0 },
		{ NULL, NULL, 0, 0, 0, NULL, 0 }
	};
	struct lws_context_creation_info info;

	log_init("child_test", 1);
	lws_set_log_level(LLL_ERR, NULL);
	memset(&info, 0, sizeof(info));
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.protocols = protos;
	info.gid = -1;
	info.uid = -1;
	if ((ctx = lws_create_context(&info)) == NULL) {
		printf("not ok - setup: no libwebsockets context\n");
		return 1;
	}
	memset(&tick, 0, sizeof(tick));
	tick_cb(&tick);
	child_init(ctx, CHECK_MS);
	return 0;
}

static void
cleanup(void)
{
	child_kill_all();
	lws_sul_cancel(&tick);
	lws_context_destroy(ctx);
}

static const struct t_case cases[] = {
	T_CASE(test_the_callback_learns_how_the_child_ended),
	T_CASE(test_overdue_child_is_killed_at_its_deadline),
	T_CASE(test_callback_may_start_another_child),
	T_CASE(test_callback_may_abandon_a_reaped_sibling),
	T_CASE(test_many_children_at_once),
	T_CASE(test_kill_all_waits_for_every_child),
	T_CASE(test_missing_program_fails_to_start),
};

T_MAIN_WITH(cases, setup, cleanup, 0)
