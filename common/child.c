/*
 * child.c: helper programs started with posix_spawn, and the table of
 * those still running, reaped and killed at their deadline from the
 * loop (see child.h).  Used by relayd (git upload-pack/receive-pack, ref
 * alignment, web pages) and syncd (git-data hunting).
 */
#define _GNU_SOURCE /* posix_spawn_file_actions_addclosefrom_np */
#include <sys/queue.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <libwebsockets.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "log.h"
#include "proc.h"

struct child {
	TAILQ_ENTRY(child) c_entry;
	pid_t		   c_pid;
	int64_t		   c_deadline; /* ms, proc_now_ms() */
	int		   c_killed;
	int		   c_status;
	char		  *c_what;
	child_done_cb	  *c_cb; /* NULL: abandoned */
	void		  *c_arg;
};

TAILQ_HEAD(child_list, child);

const char *const child_git_fetch[] = { "fetch", "--quiet", "--no-tags",
	"--no-write-fetch-head", "--no-auto-gc", NULL };

/* Running, then reaped until its callback has run. */
static struct child_list      running = TAILQ_HEAD_INITIALIZER(running);
static struct child_list      reaped = TAILQ_HEAD_INITIALIZER(reaped);
static int		      nrunning;
static struct lws_context    *child_lws;
static int64_t		      child_check_ms;
static lws_sorted_usec_list_t child_sul;
static int		      child_armed;

static void
std_fd(posix_spawn_file_actions_t *fa, int fd, int target, int flags)
{
	if (fd == CHILD_INHERIT)
		return;
	if (fd >= 0)
		posix_spawn_file_actions_adddup2(fa, fd, target);
	else
		posix_spawn_file_actions_addopen(fa, target, "/dev/null", flags,
		    0);
}

pid_t
child_spawn(char *const argv[], int fd_in, int fd_out, int fd_err,
    char *const envp[])
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t	   attr;
	sigset_t		   none, dflt;
	pid_t			   pid;
	int			   rc;

	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	sigemptyset(&dflt);
	sigaddset(&dflt, SIGPIPE);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &dflt);
	posix_spawnattr_setflags(&attr,
	    POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawn_file_actions_init(&fa);
	std_fd(&fa, fd_in, 0, O_RDONLY);
	std_fd(&fa, fd_out, 1, O_WRONLY);
	std_fd(&fa, fd_err, 2, O_WRONLY);
	/* Sockets, the database and nanomsg stay with the role. */
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	return pid;
}

/* The table. */

static void child_timer(lws_sorted_usec_list_t *);

/* Arms the check while children run (SIGCHLD, when caught, is faster). */
static void
child_arm(void)
{
	if (TAILQ_EMPTY(&running) || child_armed || child_lws == NULL)
		return;
	child_armed = 1;
	lws_sul_schedule(child_lws, 0, &child_sul, child_timer,
	    (lws_usec_t)child_check_ms * 1000);
}

static void
child_timer(lws_sorted_usec_list_t *sul)
{
	(void)sul;
	child_armed = 0;
	child_reap();
}

static void
child_free(struct child *ch)
{
	free(ch->c_what);
	free(ch);
}

void
child_init(struct lws_context *ctx, int64_t check_ms)
{
	if (child_armed)
		lws_sul_cancel(&child_sul);
	child_lws = ctx;
	child_check_ms = check_ms;
	child_armed = 0;
	memset(&child_sul, 0, sizeof(child_sul));
	child_arm();
}

pid_t
child_start(char *const argv[], int fd_in, int fd_out, int fd_err,
    char *const envp[], int64_t timeout_ms, const char *what, child_done_cb *cb,
    void *arg)
{
	struct child *ch;

	if ((ch = calloc(1, sizeof(*ch))) == NULL ||
	    (ch->c_what = strdup(what)) == NULL)
		fatal("child_start");
	if ((ch->c_pid = child_spawn(argv, fd_in, fd_out, fd_err, envp)) ==
	    -1) {
		int saved = errno;

		child_free(ch);
		errno = saved;
		return -1;
	}
	ch->c_deadline = proc_now_ms() + timeout_ms;
	ch->c_cb = cb;
	ch->c_arg = arg;
	TAILQ_INSERT_TAIL(&running, ch, c_entry);
	nrunning++;
	child_arm();
	return ch->c_pid;
}

static struct child *
child_find(struct child_list *l, pid_t pid)
{
	struct child *ch;

	TAILQ_FOREACH(ch, l, c_entry)
		if (ch->c_pid == pid)
			return ch;
	return NULL;
}

void
child_kill(pid_t pid)
{
	struct child *ch;

	if ((ch = child_find(&running, pid)) == NULL || ch->c_killed)
		return;
	kill(pid, SIGKILL);
	ch->c_killed = 1;
}

void
child_abandon(pid_t pid)
{
	struct child *ch;

	/* Reaped with its callback to come (a sibling's callback runs). */
	if ((ch = child_find(&running, pid)) == NULL) {
		if ((ch = child_find(&reaped, pid)) != NULL)
			ch->c_cb = NULL;
		return;
	}
	ch->c_cb = NULL;
	child_kill(pid);
}

int
child_count(void)
{
	return nrunning;
}

void
child_reap(void)
{
	struct child *ch, *next;
	int64_t	      now = proc_now_ms();
	int	      st;
	pid_t	      r;

	for (ch = TAILQ_FIRST(&running); ch != NULL; ch = next) {
		next = TAILQ_NEXT(ch, c_entry);
		r = waitpid(ch->c_pid, &st, WNOHANG);
		if (r == ch->c_pid || (r == -1 && errno == ECHILD)) {
			TAILQ_REMOVE(&running, ch, c_entry);
			nrunning--;
			ch->c_status = r == -1 ? 255 :
			    WIFEXITED(st)      ? WEXITSTATUS(st) :
						 128 + WTERMSIG(st);
			TAILQ_INSERT_TAIL(&reaped, ch, c_entry);
			continue;
		}
		if (!ch->c_killed && now >= ch->c_deadline) {
			log_warnx("%s process %ld overran its time; killing it",
			    ch->c_what, (long)ch->c_pid);
			kill(ch->c_pid, SIGKILL);
			ch->c_killed = 1;
		}
	}
	/*
	 * The running list is settled: callbacks may start children,
	 * abandon others (even reaped ones, whose callbacks then do not
	 * run) and call child_reap() again.
	 */
	while ((ch = TAILQ_FIRST(&reaped)) != NULL) {
		TAILQ_REMOVE(&reaped, ch, c_entry);
		if (ch->c_cb != NULL)
			ch->c_cb(ch->c_pid, ch->c_status, ch->c_killed,
			    ch->c_arg);
		child_free(ch);
	}
	child_arm();
}

void
child_kill_all(void)
{
	struct child *ch;
	int	      st;

	while ((ch = TAILQ_FIRST(&running)) != NULL) {
		TAILQ_REMOVE(&running, ch, c_entry);
		kill(ch->c_pid, SIGKILL);
		while (waitpid(ch->c_pid, &st, 0) == -1 && errno == EINTR)
			;
		child_free(ch);
	}
	while ((ch = TAILQ_FIRST(&reaped)) != NULL) {
		TAILQ_REMOVE(&reaped, ch, c_entry);
		child_free(ch);
	}
	nrunning = 0;
	if (child_armed)
		lws_sul_cancel(&child_sul);
	child_armed = 0;
}
