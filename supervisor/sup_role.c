/*
 * sup_role.c: graspd's role table.  Starts each role by fork+exec with a
 * readiness pipe, reaps it, turns what happens into events of the life
 * cycle's table (sup_fsm.c) and applies its actions: fork+exec, signals,
 * timers.  The restart policy is sup_policy.c's: a role that was ready
 * for a while restarts at once, a role that died fast restarts after a
 * doubling delay and is marked failed after SUP_MAX_FAST_DEATHS such
 * deaths in a row, and a role that exits 78 (EX_CONFIG) is failed at
 * once.  Runs in the supervisor only.
 *
 * nanomsg is not fork-safe and graspd has nanomsg's threads, so a forked
 * child only moves descriptors, resets signals and execs: everything it
 * needs (argv, envp) is built before fork().
 */
#define _GNU_SOURCE /* close_range, dup3, pipe2 */
#include <sys/types.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "ready.h"
#include "supervisor.h"

extern char **environ;

static void role_event(struct sup_role *, enum sup_event);

struct sup_role *
sup_role_get(enum role id)
{
	int i;

	for (i = 0; i < SUP_NROLES; i++)
		if (sv->sv_roles[i].rl_id == id)
			return &sv->sv_roles[i];
	return NULL;
}

struct sup_role *
sup_role_find(const char *name)
{
	int i;

	for (i = 0; i < SUP_NROLES; i++)
		if (strcmp(sv->sv_roles[i].rl_name, name) == 0)
			return &sv->sv_roles[i];
	return NULL;
}

double
sup_role_uptime(const struct sup_role *r)
{
	return r->rl_pid > 0 ? sup_now() - r->rl_started : 0;
}

int
sup_roles_alive(void)
{
	int i, n = 0;

	for (i = 0; i < SUP_NROLES; i++)
		if (sv->sv_roles[i].rl_pid > 0)
			n++;
	return n;
}

static void
timer_in(struct event *ev, double secs)
{
	struct timeval tv;

	if (secs < 0)
		secs = 0;
	tv.tv_sec = (time_t)secs;
	tv.tv_usec = (suseconds_t)((secs - (double)tv.tv_sec) * 1e6);
	evtimer_add(ev, &tv);
}

static void __attribute__((format(printf, 2, 3)))
role_reason(struct sup_role *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->rl_reason, sizeof(r->rl_reason), fmt, ap);
	va_end(ap);
}

static void
role_close_ready(struct sup_role *r)
{
	sup_event_free(r->rl_ready_ev);
	r->rl_ready_ev = NULL;
	if (r->rl_ready_fd != -1) {
		close(r->rl_ready_fd);
		r->rl_ready_fd = -1;
	}
}

/* SUP_A_READY: the role wrote READY_MSG while starting. */
static void
role_ready(struct sup_role *r)
{
	evtimer_del(r->rl_ready_timer);
	r->rl_ready = sup_now();
	r->rl_reason[0] = '\0';
	log_info("%s ready (pid %d, %.1f s after its start)", r->rl_name,
	    (int)r->rl_pid, r->rl_ready - r->rl_started);
}

/*
 * SUP_A_EXTEND: a progress line of a starting role: the readiness timeout
 * starts again, up to SUP_READY_MAX_TIMEOUTS timeouts after the start.
 */
static void
role_ready_extend(struct sup_role *r)
{
	double wait;

	wait = sup_policy_ready_wait(r->rl_started, sup_now(),
	    sv->sv_ready_timeout);
	if (wait <= 0)
		return;
	timer_in(r->rl_ready_timer, wait);
	log_debug("%s (pid %d) still starting, %.0f s after its start",
	    r->rl_name, (int)r->rl_pid, sup_now() - r->rl_started);
}

/* Takes the complete lines of the readiness buffer: progress, ERROR=. */
static void
role_ready_lines(struct sup_role *r)
{
	char *nl;

	while ((nl = strchr(r->rl_ready_buf, '\n')) != NULL) {
		if (strncmp(r->rl_ready_buf, READY_EXTEND,
			(size_t)(nl - r->rl_ready_buf) + 1) == 0)
			role_event(r, SUP_EV_PROGRESS);
		else if (strncmp(r->rl_ready_buf, READY_ERROR,
			     sizeof(READY_ERROR) - 1) == 0)
			snprintf(r->rl_error, sizeof(r->rl_error), "%.*s",
			    (int)(nl - r->rl_ready_buf -
				(sizeof(READY_ERROR) - 1)),
			    r->rl_ready_buf + sizeof(READY_ERROR) - 1);
		r->rl_ready_len -= (size_t)(nl + 1 - r->rl_ready_buf);
		memmove(r->rl_ready_buf, nl + 1, r->rl_ready_len + 1);
	}
}

static void
role_ready_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sup_role *r = arg;
	size_t		 room = sizeof(r->rl_ready_buf) - 1 - r->rl_ready_len;
	ssize_t		 n;

	if (room == 0) {
		/* Not the protocol: stop listening, the timeout decides. */
		log_warnx("%s wrote more than %zu bytes on its readiness pipe",
		    r->rl_name, sizeof(r->rl_ready_buf) - 1);
		role_close_ready(r);
		return;
	}
	n = read(fd, r->rl_ready_buf + r->rl_ready_len, room);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0) {
		r->rl_ready_len += (size_t)n;
		r->rl_ready_buf[r->rl_ready_len] = '\0';
		if (strstr(r->rl_ready_buf, READY_MSG) != NULL) {
			role_event(r, SUP_EV_READY);
			return;
		}
		/* Progress lines are taken, a partial line waits. */
		role_ready_lines(r);
		return;
	}
	/* End of file: the role closed it, or exited; SIGCHLD tells. */
	role_close_ready(r);
}

/* SUP_A_TERM: SIGTERM now, SIGKILL after SUP_STOP_TIMEOUT. */
static void
role_term(struct sup_role *r)
{
	evtimer_del(r->rl_ready_timer);
	kill(r->rl_pid, SIGTERM);
	timer_in(r->rl_kill_timer, SUP_STOP_TIMEOUT);
}

/* SUP_A_TIMEOUT: not ready in time; its exit will count as a death. */
static void
role_timeout(struct sup_role *r)
{
	log_warnx("%s (pid %d) not ready %.0f s after its start: stopping it",
	    r->rl_name, (int)r->rl_pid, sup_now() - r->rl_started);
	role_reason(r, "not ready %.0f s after its start",
	    sup_now() - r->rl_started);
	role_term(r);
}

/* SUP_A_KILL: still there SUP_STOP_TIMEOUT after SIGTERM. */
static void
role_kill(struct sup_role *r)
{
	log_warnx("%s (pid %d) still runs %.0f s after SIGTERM: SIGKILL",
	    r->rl_name, (int)r->rl_pid, SUP_STOP_TIMEOUT);
	/* Its process group: helpers it started go with it. */
	kill(-r->rl_pid, SIGKILL);
	kill(r->rl_pid, SIGKILL);
}

static void
role_ready_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	role_event(arg, SUP_EV_READY_TIMEOUT);
}

static void
role_kill_cb(evutil_socket_t fd, short what, void *arg)
{
	role_event(arg, SUP_EV_KILL_TIMER);
}

static void
role_start_cb(evutil_socket_t fd, short what, void *arg)
{
	/* Shutdown stops every role first; this is a guard. */
	if (sv->sv_shutdown)
		return;
	role_event(arg, SUP_EV_START_TIMER);
}

void
sup_roles_init(void)
{
	static const enum role order[SUP_NROLES] = { ROLE_RELAYD, ROLE_SYNCD,
		ROLE_DISCOVERYD, ROLE_HISTORYD };
	struct sup_role	      *r;
	int		       i;

	for (i = 0; i < SUP_NROLES; i++) {
		r = &sv->sv_roles[i];
		memset(r, 0, sizeof(*r));
		r->rl_id = order[i];
		r->rl_name = role_name(order[i]);
		r->rl_state = SUP_STOPPED;
		r->rl_pid = -1;
		r->rl_ready_fd = -1;
		r->rl_last_status = -1;
		r->rl_start_timer = sup_event_new(-1, 0, role_start_cb, r);
		r->rl_ready_timer =
		    sup_event_new(-1, 0, role_ready_timeout_cb, r);
		r->rl_kill_timer = sup_event_new(-1, 0, role_kill_cb, r);
	}
}

void
sup_roles_free(void)
{
	struct sup_role *r;
	int		 i;

	for (i = 0; i < SUP_NROLES; i++) {
		r = &sv->sv_roles[i];
		role_close_ready(r);
		sup_event_free(r->rl_start_timer);
		sup_event_free(r->rl_ready_timer);
		sup_event_free(r->rl_kill_timer);
		r->rl_start_timer = r->rl_ready_timer = NULL;
		r->rl_kill_timer = NULL;
	}
}

/*
 * The environment of a role: ours without any GRASPD_READY_FD, plus
 * GRASPD_READY_FD=3.  The strings are environ's; free only the array.
 */
static char **
role_envp(void)
{
	static char ready[] = READY_ENV "=3";
	size_t	    n = 0, i, kl = strlen(READY_ENV);
	const char *home = sup_priv_home();
	char	  **envp;

	for (i = 0; environ[i] != NULL; i++)
		n++;
	if ((envp = calloc(n + 3, sizeof(*envp))) == NULL)
		fatal("calloc");
	n = 0;
	for (i = 0; environ[i] != NULL; i++)
		if ((strncmp(environ[i], READY_ENV, kl) != 0 ||
			environ[i][kl] != '=') &&
		    (home == NULL || strncmp(environ[i], "HOME=", 5) != 0))
			envp[n++] = environ[i];
	if (home != NULL)
		envp[n++] = (char *)home;
	envp[n++] = ready;
	envp[n] = NULL;
	return envp;
}

/*
 * The forked child: descriptors, signals, exec, nothing else (only
 * async-signal-safe calls).  Ends up with /dev/null on 0, graspd's own
 * 1 and 2, the readiness pipe on 3, and the exec-error pipe on 4, closed
 * by a successful exec, running as the roles' user when graspd drops
 * privileges (bind_cap: keeping CAP_NET_BIND_SERVICE, sup_priv.c).  On
 * failure writes errno to the error pipe.
 */
static void __attribute__((noreturn))
role_child(const char *path, char *const argv[], char *const envp[], int readyw,
    int errw, pid_t parent, int bind_cap)
{
	static const int sigs[] = { SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD,
		SIGUSR1, SIGUSR2 };
	struct sigaction sa;
	sigset_t	 none;
	size_t		 i;
	int		 e;

	setpgid(0, 0);
	/* A role never outlives graspd: a new graspd would start another. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(127);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	/* Above 4 first, so that the dup2()s below cannot clobber them. */
	if ((errw = fcntl(errw, F_DUPFD_CLOEXEC, SUP_READY_FD + 2)) == -1)
		_exit(127);
	if ((readyw = fcntl(readyw, F_DUPFD, SUP_READY_FD + 2)) == -1)
		goto fail;
	if (dup2(sv->sv_devnull, 0) == -1 || dup2(readyw, SUP_READY_FD) == -1 ||
	    dup3(errw, SUP_READY_FD + 1, O_CLOEXEC) == -1)
		goto fail;
	errw = SUP_READY_FD + 1;
	close_range(SUP_READY_FD + 2, ~0U, 0);
	if (sup_priv_child(bind_cap) == -1)
		goto fail;
	/* prctl(2): a change of uid clears the parent-death signal. */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) == -1 || getppid() != parent)
		_exit(127);
	execve(path, argv, envp);
fail:
	e = errno;
	if (write(errw, &e, sizeof(e)) == -1) {
		/* Nothing left to tell it with. */
	}
	_exit(127);
}

/*
 * argv of a role: its name, -f and the configuration file, -d in the
 * foreground.  argv has room for 6; the strings are static or sv's.
 */
static void
role_argv(struct sup_role *r, char *argv[6])
{
	int argc = 0;

	argv[argc++] = (char *)r->rl_name;
	if (sv->sv_conffile != NULL) {
		argv[argc++] = "-f";
		argv[argc++] = sv->sv_conffile;
	}
	if (sv->sv_foreground)
		argv[argc++] = "-d";
	argv[argc] = NULL;
}

/*
 * The child's exec: 0 once it ran, or -1 with the child reaped and the
 * reason in the role's rl_reason.  Blocks until the exec: the child does
 * nothing slow before it.
 */
static int
role_exec_wait(struct sup_role *r, pid_t pid, int errfd, const char *path)
{
	ssize_t n;
	int	e, st;

	do
		n = read(errfd, &e, sizeof(e));
	while (n == -1 && errno == EINTR);
	close(errfd);
	if (n != (ssize_t)sizeof(e))
		return 0;
	while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
	role_reason(r, "cannot execute %s: %s", path, strerror(e));
	return -1;
}

/* The spawned process pid: its readiness pipe is watched from now on. */
static void
role_watch(struct sup_role *r, pid_t pid, int readyfd)
{
	r->rl_starts++;
	r->rl_pid = pid;
	r->rl_reason[0] = '\0';
	r->rl_ready_len = 0;
	r->rl_ready_buf[0] = '\0';
	r->rl_error[0] = '\0';
	r->rl_ready_fd = readyfd;
	if (fcntl(r->rl_ready_fd, F_SETFL, O_NONBLOCK) == -1)
		fatal("fcntl");
	r->rl_ready_ev = sup_event_new(r->rl_ready_fd, EV_READ | EV_PERSIST,
	    role_ready_cb, r);
	if (event_add(r->rl_ready_ev, NULL) == -1)
		fatalx("cannot watch the readiness pipe of %s", r->rl_name);
	log_info("%s started (pid %d)", r->rl_name, (int)pid);
}

/*
 * SUP_A_SPAWN: starts the role's process now, then tells the table how
 * it went: SPAWNED, FORK_FAILED (tried again later) or EXEC_FAILED.
 */
static void
role_spawn(struct sup_role *r)
{
	char  path[PATH_MAX + 32], *argv[6], **envp;
	int   readyp[2], errp[2];
	pid_t pid;

	evtimer_del(r->rl_start_timer);
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", sv->sv_libexec,
		r->rl_name) >= sizeof(path)) {
		role_reason(r, "libexec path too long: %s", sv->sv_libexec);
		role_event(r, SUP_EV_EXEC_FAILED);
		return;
	}
	role_argv(r, argv);
	if (pipe2(readyp, O_CLOEXEC) == -1)
		fatal("pipe2");
	if (pipe2(errp, O_CLOEXEC) == -1)
		fatal("pipe2");
	envp = role_envp();
	r->rl_started = sup_now();
	r->rl_ready = 0;
	if ((pid = fork()) == -1) {
		log_warn("%s: fork", r->rl_name);
		role_reason(r, "fork: %s", strerror(errno));
		close(readyp[0]);
		close(readyp[1]);
		close(errp[0]);
		close(errp[1]);
		free(envp);
		/* Try again later, like any start that died fast. */
		role_event(r, SUP_EV_FORK_FAILED);
		return;
	}
	if (pid == 0)
		role_child(path, argv, envp, readyp[1], errp[1], getppid(),
		    r->rl_id == ROLE_RELAYD &&
			sv->sv_cfg.bind_port < PRIV_PORT_FIRST_FREE);
	setpgid(pid, pid);
	free(envp);
	close(readyp[1]);
	close(errp[1]);
	if (role_exec_wait(r, pid, errp[0], path) == -1) {
		close(readyp[0]);
		role_event(r, SUP_EV_EXEC_FAILED);
		return;
	}
	role_watch(r, pid, readyp[0]);
	role_event(r, SUP_EV_SPAWNED);
}

/*
 * SUP_A_SCHEDULE: starts the role after rl_delay seconds, but never
 * within SUP_START_GAP of its last start; no delay left is a start now.
 */
static void
role_schedule(struct sup_role *r)
{
	double delay;

	evtimer_del(r->rl_start_timer);
	delay = sup_policy_start_delay(r->rl_starts > 0, r->rl_started,
	    sup_now(), r->rl_delay);
	if (delay <= 0) {
		role_event(r, SUP_EV_START_TIMER);
		return;
	}
	timer_in(r->rl_start_timer, delay);
	sup_progress();
}

/* Applies action a of the table to r, which is in its new state. */
static void
role_apply(struct sup_role *r, enum sup_action a)
{
	switch (a) {
	case SUP_A_ILLEGAL:
	case SUP_A_NONE:
		break;
	case SUP_A_HOLD:
		role_reason(r, "waiting for relayd to be ready");
		break;
	case SUP_A_START:
		r->rl_reason[0] = '\0';
		r->rl_delay = 0;
		role_schedule(r);
		break;
	case SUP_A_SCHEDULE:
		role_schedule(r);
		break;
	case SUP_A_SPAWN:
		role_spawn(r);
		break;
	case SUP_A_WATCH:
		timer_in(r->rl_ready_timer, sv->sv_ready_timeout);
		break;
	case SUP_A_RETRY:
		r->rl_fast_deaths++;
		timer_in(r->rl_start_timer, SUP_BACKOFF_MAX);
		break;
	case SUP_A_EXTEND:
		role_ready_extend(r);
		break;
	case SUP_A_READY:
		role_ready(r);
		break;
	case SUP_A_TERM:
		role_term(r);
		break;
	case SUP_A_TIMEOUT:
		role_timeout(r);
		break;
	case SUP_A_KILL:
		role_kill(r);
		break;
	case SUP_A_CANCEL:
		evtimer_del(r->rl_start_timer);
		r->rl_reason[0] = '\0';
		break;
	case SUP_A_FAIL:
		/* Not started again until asked, for rl_reason. */
		evtimer_del(r->rl_start_timer);
		log_warnx("%s failed: %s", r->rl_name, r->rl_reason);
		break;
	}
}

/*
 * Event ev for role r: the table gives its next state and the action,
 * applied here.  A refused event changes nothing but is logged: it means
 * the mechanism and the table disagree.
 */
static void
role_event(struct sup_role *r, enum sup_event ev)
{
	enum sup_state	from = r->rl_state;
	enum sup_action a;

	if ((a = sup_fsm_step(&r->rl_state, ev)) == SUP_A_ILLEGAL) {
		log_warnx("%s: event %s refused in state %s (%d)", r->rl_name,
		    sup_event_name(ev), sup_state_name(from), (int)from);
		return;
	}
	if (r->rl_state != from) {
		/* The number tells apart states shown alike. */
		log_debug("%s: %s: %s (%d) -> %s (%d)", r->rl_name,
		    sup_event_name(ev), sup_state_name(from), (int)from,
		    sup_state_name(r->rl_state), (int)r->rl_state);
		sup_progress();
	}
	role_apply(r, a);
}

unsigned
sup_role_restarts(const struct sup_role *r)
{
	return r->rl_starts > 0 ? r->rl_starts - 1 : 0;
}

void
sup_role_hold(struct sup_role *r)
{
	role_event(r, SUP_EV_HOLD);
}

void
sup_role_start(struct sup_role *r)
{
	r->rl_fast_deaths = 0;
	role_event(r, SUP_EV_START);
}

void
sup_role_stop(struct sup_role *r)
{
	if (r->rl_pid > 0)
		log_info("stopping %s (pid %d)", r->rl_name, (int)r->rl_pid);
	role_event(r, SUP_EV_STOP);
	sup_progress();
}

void
sup_role_restart(struct sup_role *r)
{
	r->rl_fast_deaths = 0;
	if (r->rl_pid > 0)
		log_info("restarting %s (pid %d)", r->rl_name, (int)r->rl_pid);
	role_event(r, SUP_EV_RESTART);
}

/*
 * The reason an exit gives the role, and its delay before a respawn, for
 * decision d of the policy on exit e; text describes the exit.
 */
static void
role_exit_reason(struct sup_role *r, const struct sup_exit *e,
    const struct sup_decision *d, const char *text)
{
	r->rl_delay = 0;
	switch (d->sd_verdict) {
	case SUP_V_SHUTDOWN:
		break;
	case SUP_V_STOPPED:
		role_reason(r, "stopped on request");
		break;
	case SUP_V_RESTART:
		r->rl_reason[0] = '\0';
		break;
	case SUP_V_FAIL_CONFIG:
		if (r->rl_error[0] != '\0')
			role_reason(r,
			    "%s (exited %d, configuration error): not restarted",
			    r->rl_error, CONFIG_EXIT);
		else
			role_reason(r,
			    "exited %d (configuration error): not restarted",
			    CONFIG_EXIT);
		break;
	case SUP_V_FAIL_FAST:
		role_reason(r,
		    "%u fast deaths in a row (last: %s): not restarted",
		    d->sd_fast_deaths, text);
		break;
	case SUP_V_RESPAWN:
		r->rl_delay = d->sd_delay;
		if (d->sd_delay > 0) {
			role_reason(r, "%s%s; restarting in %.0f s", text,
			    e->se_ready > 0 ? "" : " before ready",
			    d->sd_delay);
			log_info("%s: restarting in %.0f s", r->rl_name,
			    d->sd_delay);
		}
		break;
	}
}

/* The restart policy, once the role's process has been reaped. */
static void
role_exited(struct sup_role *r, int st)
{
	double		    now = sup_now(), up = now - r->rl_started;
	struct sup_exit	    e;
	struct sup_decision d;
	char		    text[64];

	r->rl_last_status = st;
	sup_policy_exit_text(st, text, sizeof(text));
	/* A READY=1 written just before the exit still counts. */
	if (r->rl_ready_fd != -1 && r->rl_state == SUP_STARTING)
		role_ready_cb(r->rl_ready_fd, EV_READ, r);
	role_close_ready(r);
	evtimer_del(r->rl_ready_timer);
	evtimer_del(r->rl_kill_timer);
	/* Asked to stop (graspctl, reload, shutdown): no news. */
	if (sup_fsm_terminating(r->rl_state))
		log_info("%s (pid %d) %s", r->rl_name, (int)r->rl_pid, text);
	else
		log_warnx("%s (pid %d) %s after %.1f s", r->rl_name,
		    (int)r->rl_pid, text, up);
	r->rl_pid = -1;

	memset(&e, 0, sizeof(e));
	e.se_status = st;
	e.se_started = r->rl_started;
	e.se_ready = r->rl_ready;
	e.se_fast_deaths = r->rl_fast_deaths;
	e.se_shutdown = sv->sv_shutdown;
	sup_fsm_exit_input(r->rl_state, &e);
	sup_policy_exit(&e, now, &d);
	r->rl_fast_deaths = d.sd_fast_deaths;
	role_exit_reason(r, &e, &d, text);
	role_event(r, sup_fsm_exit_event(d.sd_verdict));
}

void
sup_reap(void)
{
	pid_t pid;
	int   st, i;

	for (;;) {
		pid = waitpid(-1, &st, WNOHANG);
		if (pid == -1 && errno == EINTR)
			continue;
		if (pid <= 0)
			break;
		for (i = 0; i < SUP_NROLES; i++)
			if (sv->sv_roles[i].rl_pid == pid)
				break;
		if (i < SUP_NROLES)
			role_exited(&sv->sv_roles[i], st);
	}
}
