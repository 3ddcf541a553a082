/*
 * graspd.c: the supervisor's main.  Reads the configuration, becomes a
 * daemon (or stays in the foreground with -d), takes the pid file, binds
 * the control socket, starts relayd and then, once relayd is ready, the
 * other roles; reports readiness to whoever started it once every role
 * is ready or failed; stops everything (relayd last) on SIGTERM, SIGINT
 * or graspctl stop; re-reads the configuration on SIGHUP or graspctl
 * reload.  One libevent loop, no threads of its own.
 */
#define _GNU_SOURCE /* pipe2 */
#include <sys/types.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "fs.h"
#include "log.h"
#include "supervisor.h"
#include "version.h"

#ifndef LIBEXECDIR
#define LIBEXECDIR "/usr/local/libexec/graspd"
#endif

struct supervisor	*sv;
static struct supervisor sv_store;
static int		 sv_verbose; /* -v: debug, whatever the file says */

double
sup_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void __attribute__((noreturn)) usage(int status)
{
	fprintf(status ? stderr : stdout,
	    "usage: graspd [-dhnvV] [-f file]\n"
	    "  -d       stay in the foreground, log to standard error\n"
	    "  -f file  the configuration file\n"
	    "  -h       this help\n"
	    "  -n       check the configuration and exit\n"
	    "  -v       log at debug level (with -n: print the configuration)\n"
	    "  -V       print the version and exit\n");
	exit(status);
}

/*
 * Tells the process that waits for a daemon's start-up (graspd without
 * -d) how it went: "READY" or "ERROR <status> <message>".  Once.
 */
static void
report(int status, const char *msg)
{
	if (sv->sv_report_fd == -1)
		return;
	if (status == 0)
		dprintf(sv->sv_report_fd, "READY\n");
	else
		dprintf(sv->sv_report_fd, "ERROR %d %s\n", status, msg);
	close(sv->sv_report_fd);
	sv->sv_report_fd = -1;
}

/* sd_notify(3), for systemd's Type=notify: one datagram, best effort. */
static void
notify(const char *state)
{
	struct sockaddr_un sun;
	size_t		   len;
	int		   fd;

	if (sv->sv_notify == NULL)
		return;
	len = strlen(sv->sv_notify);
	if (len < 2 || len >= sizeof(sun.sun_path) ||
	    (sv->sv_notify[0] != '/' && sv->sv_notify[0] != '@'))
		return;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, sv->sv_notify, len);
	/* "@name" is Linux's abstract namespace. */
	if (sun.sun_path[0] == '@')
		sun.sun_path[0] = '\0';
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1) {
		log_warn("notify: socket");
		return;
	}
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL,
		(struct sockaddr *)&sun,
		(socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) ==
	    -1)
		log_warn("notify %s: sendto %s", state, sv->sv_notify);
	close(fd);
}

static void
pidfile_remove(void)
{
	struct stat st, ours;

	if (sv->sv_pidfd == -1)
		return;
	/* The run directory is the roles' user's: unlink only our file. */
	if (fstat(sv->sv_pidfd, &ours) == 0 &&
	    lstat(sv->sv_pidfile, &st) == 0 && st.st_dev == ours.st_dev &&
	    st.st_ino == ours.st_ino)
		unlink(sv->sv_pidfile);
	close(sv->sv_pidfd);
	sv->sv_pidfd = -1;
}

/* A start-up error before the loop: log it, tell the waiter, exit. */
static void __attribute__((noreturn, format(printf, 2, 3)))
startup_fail(int status, const char *fmt, ...)
{
	char	msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_warnx("%s", msg);
	report(status, msg);
	sup_control_close();
	pidfile_remove();
	exit(status);
}

/* The pid file's name in the run directory. */
#define PIDFILE_NAME "graspd.pid"

/*
 * 1 if the pid file open at fd is graspd's own: a regular file of
 * graspd's uid with one name.  Anything else in its place (a link to
 * another file, a hard link, a fifo, a file of the roles' user, who owns
 * the run directory) is not written to.
 */
static int
pidfile_ours(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_uid == geteuid() && st.st_nlink == 1;
}

/*
 * Takes RUN/graspd.pid: locked for as long as graspd runs, so a second
 * graspd on the same run directory cannot steal the control socket.  The
 * run directory belongs to the roles' user when graspd drops privileges:
 * the file is opened relative to the directory, without following a
 * link and without blocking on a fifo, and written only once fstat says
 * it is ours (pidfile_ours()); anything else there is removed and the
 * file made anew with O_EXCL.
 */
static void
pidfile_open(void)
{
	char	old[32];
	ssize_t n;
	int	dfd, fd;

	if ((size_t)snprintf(sv->sv_pidfile, sizeof(sv->sv_pidfile), "%s/%s",
		sv->sv_cfg.run_path, PIDFILE_NAME) >= sizeof(sv->sv_pidfile))
		startup_fail(1, "run_path too long: %s", sv->sv_cfg.run_path);
	if ((dfd = open(sv->sv_cfg.run_path,
		 O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		startup_fail(1, "%s: %s", sv->sv_cfg.run_path, strerror(errno));
	fd = openat(dfd, PIDFILE_NAME,
	    O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
	    0644);
	if (fd == -1 && errno != ELOOP)
		startup_fail(1, "%s: %s", sv->sv_pidfile, strerror(errno));
	/* A lock on a file not ours proves nothing: it is replaced. */
	if (fd != -1 && pidfile_ours(fd) &&
	    flock(fd, LOCK_EX | LOCK_NB) == -1) {
		n = read(fd, old, sizeof(old) - 1);
		old[n > 0 ? n : 0] = '\0';
		old[strcspn(old, "\n")] = '\0';
		close(fd);
		close(dfd);
		startup_fail(1,
		    "graspd is already running (pid %s, %s is "
		    "locked)",
		    old[0] ? old : "unknown", sv->sv_pidfile);
	}
	if (fd == -1 || !pidfile_ours(fd)) {
		/* The pid file of a graspd running as another user, or
		 * something the roles' user put in its place. */
		log_warnx(
		    "%s: not a file of graspd's (a link, or another user's file): replaced",
		    sv->sv_pidfile);
		if (fd != -1)
			close(fd);
		if (unlinkat(dfd, PIDFILE_NAME, 0) == -1 && errno != ENOENT)
			startup_fail(1, "%s: %s", sv->sv_pidfile,
			    strerror(errno));
		fd = openat(dfd, PIDFILE_NAME,
		    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY |
			O_CLOEXEC,
		    0644);
		if (fd == -1 || flock(fd, LOCK_EX | LOCK_NB) == -1 ||
		    !pidfile_ours(fd))
			startup_fail(1, "%s: %s", sv->sv_pidfile,
			    fd == -1 ? strerror(errno) : "taken meanwhile");
	}
	close(dfd);
	if (ftruncate(fd, 0) == -1 || dprintf(fd, "%d\n", (int)getpid()) < 0)
		startup_fail(1, "%s: %s", sv->sv_pidfile, strerror(errno));
	sv->sv_pidfd = fd;
}

/*
 * Where the role binaries are: $GRASPD_LIBEXEC, else the directory of our
 * own executable when relayd is there (a build tree), else LIBEXECDIR.
 */
static void
find_libexec(void)
{
	const char *env = getenv(SUP_LIBEXEC_ENV);
	char	    exe[PATH_MAX], probe[PATH_MAX + 16], *slash;
	ssize_t	    n;

	if (env != NULL && *env != '\0') {
		if (realpath(env, sv->sv_libexec) == NULL)
			snprintf(sv->sv_libexec, sizeof(sv->sv_libexec), "%s",
			    env);
		return;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		if ((slash = strrchr(exe, '/')) != NULL) {
			*slash = '\0';
			snprintf(probe, sizeof(probe), "%s/relayd", exe);
			if (access(probe, X_OK) == 0) {
				snprintf(sv->sv_libexec, sizeof(sv->sv_libexec),
				    "%s", exe);
				return;
			}
		}
	}
	snprintf(sv->sv_libexec, sizeof(sv->sv_libexec), "%s", LIBEXECDIR);
}

/*
 * The process that ran "graspd" waits here for the daemon's report and
 * exits with its status, so that an init script sees a bad start.
 */
static int
daemon_wait(int fd, pid_t child)
{
	char	buf[2048];
	size_t	len = 0;
	ssize_t n;
	int	st, status, off = 0;

	while (waitpid(child, &st, 0) == -1 && errno == EINTR)
		;
	while (len < sizeof(buf) - 1) {
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	if (strncmp(buf, "READY\n", 6) == 0)
		return 0;
	if (sscanf(buf, "ERROR %d %n", &status, &off) == 1 && off > 0 &&
	    status > 0 && status < 256) {
		fprintf(stderr, "graspd: %s", buf + off);
		return status;
	}
	fprintf(stderr,
	    "graspd: the daemon exited during start-up; see the system log\n");
	return 1;
}

/*
 * Becomes a daemon: fork (the parent waits for the report), setsid,
 * fork again, chdir /, standard descriptors to /dev/null.  Called before
 * any nanomsg socket exists.
 */
static void
daemon_start(void)
{
	int   p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) == -1)
		fatal("pipe2");
	fflush(NULL);
	if ((pid = fork()) == -1)
		fatal("fork");
	if (pid > 0) {
		close(p[1]);
		exit(daemon_wait(p[0], pid));
	}
	close(p[0]);
	if (setsid() == -1)
		fatal("setsid");
	if ((pid = fork()) == -1)
		fatal("fork");
	if (pid > 0)
		_exit(0);
	if (chdir("/") == -1)
		fatal("chdir /");
	if (dup2(sv->sv_devnull, 0) == -1 || dup2(sv->sv_devnull, 1) == -1 ||
	    dup2(sv->sv_devnull, 2) == -1)
		fatal("dup2");
	sv->sv_report_fd = p[1];
}

struct event *
sup_event_new(int fd, short events, void (*cb)(int, short, void *), void *arg)
{
	struct event *ev;

	if ((ev = event_new(sv->sv_base, fd, events, cb, arg)) == NULL)
		fatalx("event_new failed");
	return ev;
}

void
sup_event_free(struct event *ev)
{
	if (ev != NULL)
		event_free(ev);
}

void
sup_progress(void)
{
	if (sv->sv_progress_ev != NULL)
		event_active(sv->sv_progress_ev, EV_TIMEOUT, 1);
}

void
sup_shutdown(int status)
{
	struct sup_role *r;
	int		 i;

	if (sv->sv_shutdown)
		return;
	sv->sv_shutdown = 1;
	sv->sv_exit = status;
	log_info("stopping every role");
	notify("STOPPING=1");
	if (sv->sv_booting) {
		sv->sv_booting = 0;
		report(status ? status : 1,
		    "graspd was stopped during its "
		    "start-up");
	}
	/* relayd last: sup_progress stops it once the others are gone. */
	for (i = 0; i < SUP_NROLES; i++) {
		r = &sv->sv_roles[i];
		if (r->rl_id != ROLE_RELAYD || r->rl_pid <= 0)
			sup_role_stop(r);
	}
	sup_progress();
}

/* Start-up is over: tell the caller (and systemd), or give up. */
static void
boot_done(int status, const char *msg)
{
	struct buf	 b = BUF_INIT;
	struct sup_role *r;
	int		 i;

	sv->sv_booting = 0;
	if (status != 0) {
		log_warnx("%s", msg);
		report(status, msg);
		sup_shutdown(status);
		return;
	}
	for (i = 0; i < SUP_NROLES; i++) {
		r = &sv->sv_roles[i];
		buf_printf(&b, "%s%s %s", i ? ", " : "", r->rl_name,
		    sup_state_name(r->rl_state));
	}
	log_info("ready: %s", b.b_data);
	buf_free(&b);
	report(0, NULL);
	notify("READY=1");
}

/*
 * Start-up order: relayd first, then the others once relayd is ready;
 * done when relayd runs and every other wanted role is ready or failed.
 */
static void
boot_progress(void)
{
	struct sup_role *relayd = sup_role_get(ROLE_RELAYD), *r;
	char		 msg[512];
	int		 i;

	if (relayd->rl_state == SUP_FAILED) {
		snprintf(msg, sizeof(msg), "relayd failed: %s",
		    relayd->rl_reason);
		boot_done(sup_policy_config_exit(relayd->rl_last_status) ?
			CONFIG_EXIT :
			1,
		    msg);
		return;
	}
	if (relayd->rl_state != SUP_RUNNING)
		return;
	for (i = 0; i < SUP_NROLES; i++) {
		r = &sv->sv_roles[i];
		if (r->rl_state == SUP_HELD)
			sup_role_start(r);
	}
	for (i = 0; i < SUP_NROLES; i++) {
		r = &sv->sv_roles[i];
		if (sup_fsm_wanted(r->rl_state) && r->rl_state != SUP_RUNNING)
			return;
	}
	boot_done(0, NULL);
}

static void
progress_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sup_role *relayd = sup_role_get(ROLE_RELAYD);
	int		 i, others = 0;

	if (sv->sv_shutdown) {
		for (i = 0; i < SUP_NROLES; i++)
			if (sv->sv_roles[i].rl_id != ROLE_RELAYD &&
			    sv->sv_roles[i].rl_pid > 0)
				others++;
		if (others == 0 && relayd->rl_pid > 0 &&
		    !sup_fsm_terminating(relayd->rl_state))
			sup_role_stop(relayd);
		if (sup_roles_alive() == 0) {
			log_info("every role stopped");
			event_base_loopbreak(sv->sv_base);
		}
		return;
	}
	if (sv->sv_booting)
		boot_progress();
}

static void
apply_log_level(void)
{
	log_setlevel(sv_verbose ? LOG_LVL_DEBUG : sv->sv_cfg.log_level);
}

/*
 * The roles (1 << enum role) that the keys changed from a to b must
 * restart, walking the key table; *live is set when a changed key
 * restarts none (log_level: applied live).
 */
static long
reload_roles(const struct config *a, const struct config *b, int *live)
{
	const char *name;
	size_t	    i;
	long	    roles = 0, r;

	for (i = 0; config_key_info(i, &name, NULL, NULL) == 0; i++) {
		if (config_key_differs(a, b, i) != 1)
			continue;
		if ((r = config_key_roles(name)) == -1)
			r = -1L & ~1L; /* every role */
		if (r == 0)
			*live = 1;
		roles |= r;
	}
	return roles;
}

int
sup_reload(int *changed, char *err, size_t errlen)
{
	struct config	 nc;
	struct sup_role *r;
	long		 roles;
	int		 i, log = 0, restart;

	*changed = 0;
	if (sv->sv_shutdown) {
		snprintf(err, errlen, "graspd is shutting down");
		return -1;
	}
	if (config_load(&nc, sv->sv_conffile, err, errlen) == -1) {
		config_free(&nc);
		log_warnx("reload: %s; keeping the running configuration", err);
		return -1;
	}
	if (strcmp(nc.run_path, sv->sv_cfg.run_path) != 0) {
		snprintf(err, errlen,
		    "run_path changed from %s to %s: restart graspd to move it",
		    sv->sv_cfg.run_path, nc.run_path);
		config_free(&nc);
		log_warnx("reload: %s; keeping the running configuration", err);
		return -1;
	}
	roles = reload_roles(&sv->sv_cfg, &nc, &log);
	*changed = roles != 0 || log;
	config_free(&sv->sv_cfg);
	sv->sv_cfg = nc;
	explicit_bzero(&nc, sizeof(nc));
	apply_log_level();
	if (!*changed) {
		log_info("reload: configuration unchanged");
		return 0;
	}
	if (log)
		log_info("reload: log_level applied to the running roles");
	for (i = 0; i < SUP_NROLES; i++) {
		r = &sv->sv_roles[i];
		if (r->rl_state == SUP_HELD)
			continue;
		restart = (roles & (1L << r->rl_id)) != 0;
		if (!restart && log && r->rl_pid > 0) {
			/* A running role re-reads log_level on SIGHUP; one
			 * still starting may have read the old file. */
			if (r->rl_state == SUP_RUNNING) {
				kill(r->rl_pid, SIGHUP);
				continue;
			}
			restart = sup_fsm_wanted(r->rl_state);
		}
		if (!restart)
			continue;
		log_info("reload: restarting %s for the change", r->rl_name);
		if (sup_fsm_wanted(r->rl_state))
			sup_role_restart(r);
		else if (r->rl_state == SUP_FAILED)
			sup_role_start(r); /* the change may fix it */
	}
	return 0;
}

static void
signal_cb(evutil_socket_t sig, short what, void *arg)
{
	char err[1024];
	int  changed;

	switch (sig) {
	case SIGTERM:
	case SIGINT:
		log_info("%s received", sig == SIGTERM ? "SIGTERM" : "SIGINT");
		sup_shutdown(0);
		break;
	case SIGHUP:
		log_info("SIGHUP received: reloading the configuration");
		sup_reload(&changed, err, sizeof(err));
		break;
	case SIGCHLD:
		sup_reap();
		break;
	}
}

static void
warn_relative(const char *key, const char *path)
{
	if (path != NULL && path[0] != '/')
		log_warnx("%s %s is relative: a daemon resolves it from /", key,
		    path);
}

/* The signals graspd's loop handles (signal_cb()). */
static const int sup_sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGCHLD };
#define SUP_NSIGS (sizeof(sup_sigs) / sizeof(sup_sigs[0]))

/*
 * The command line: -d into sv_store, -v into sv_verbose, -f's file in
 * *file and -n in *nflag.  -h and -V print and exit; an error exits with
 * SUP_USAGE_EXIT.
 */
static void
parse_options(int argc, char *argv[], const char **file, int *nflag)
{
	int ch;

	while ((ch = getopt(argc, argv, "df:hnvV")) != -1) {
		switch (ch) {
		case 'd':
			sv_store.sv_foreground = 1;
			break;
		case 'f':
			*file = optarg;
			break;
		case 'n':
			*nflag = 1;
			break;
		case 'v':
			sv_verbose = 1;
			break;
		case 'h':
			usage(0);
		case 'V':
			printf("graspd %s\n", GRASPD_VERSION);
			exit(0);
		default:
			usage(SUP_USAGE_EXIT);
		}
	}
	if (optind != argc)
		usage(SUP_USAGE_EXIT);
}

/* graspd -n: what a start would warn about, the dump with -v; exits 0. */
static void __attribute__((noreturn)) check_only(void)
{
	struct buf b = BUF_INIT;

	config_warn_env();
	config_warn_proxy(&sv->sv_cfg);
	if (sv_verbose) {
		config_dump(&sv->sv_cfg, &b);
		fputs(b.b_data, stdout);
		buf_free(&b);
	}
	fprintf(stderr, "configuration OK\n");
	config_free(&sv->sv_cfg);
	exit(0);
}

/* SUP_READY_TIMEOUT, or GRASPD_READY_TIMEOUT's seconds (tests). */
static double
ready_timeout(void)
{
	const char *rt = getenv(SUP_READY_TIMEOUT_ENV);
	char	   *ep;
	double	    secs;

	if (rt == NULL || *rt == '\0')
		return SUP_READY_TIMEOUT;
	secs = strtod(rt, &ep);
	if (*ep != '\0' || !(secs >= 0.1 && secs <= 3600))
		fatalx("%s=%s: not a number of seconds from 0.1 to 3600",
		    SUP_READY_TIMEOUT_ENV, rt);
	return secs;
}

/*
 * After the configuration loaded: its absolute path for the roles, the
 * log level, where the roles are, NOTIFY_SOCKET kept for ourselves, the
 * warnings, /dev/null; then becomes a daemon unless -d.  Exits
 * CONFIG_EXIT when file cannot be resolved.
 */
static void
prepare(const char *file)
{
	const char *ns;
	char	    real[PATH_MAX];

	if (file != NULL) {
		if (realpath(file, real) == NULL) {
			fprintf(stderr, "graspd: %s: %s\n", file,
			    strerror(errno));
			exit(CONFIG_EXIT);
		}
		if ((sv->sv_conffile = strdup(real)) == NULL)
			fatal("strdup");
	}
	apply_log_level();
	find_libexec();
	/* Ours alone: a role must not tell systemd anything. */
	if ((ns = getenv(SUP_NOTIFY_ENV)) != NULL && *ns != '\0' &&
	    (sv->sv_notify = strdup(ns)) == NULL)
		fatal("strdup");
	unsetenv(SUP_NOTIFY_ENV);
	config_warn_env();
	config_warn_proxy(&sv->sv_cfg);
	sv->sv_ready_timeout = ready_timeout();
	if (sv->sv_cfg.test)
		log_warnx("NGIT_TEST is set: test timing, not for production");
	if ((sv->sv_devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) == -1)
		fatal("/dev/null");
	if (!sv->sv_foreground) {
		warn_relative("run_path", sv->sv_cfg.run_path);
		warn_relative("relay_data_path", sv->sv_cfg.relay_data_path);
		warn_relative("git_data_path", sv->sv_cfg.git_data_path);
		daemon_start();
		log_init("graspd", 0);
	}
}

/*
 * The run directory, the privilege drop, the pid file, the loop with its
 * signals (sigev[SUP_NSIGS]), the role table and the control socket.  A
 * failure ends graspd through startup_fail().
 */
static void
open_all(struct event *sigev[])
{
	char   err[1024];
	size_t i;

	if (mkdir_p(sv->sv_cfg.run_path, 0755) == -1)
		startup_fail(1, "cannot create run_path %s: %s",
		    sv->sv_cfg.run_path, strerror(errno));
	if (sup_priv_init(err, sizeof(err)) == -1)
		startup_fail(CONFIG_EXIT, "%s", err);
	pidfile_open();
	signal(SIGPIPE, SIG_IGN);
	if ((sv->sv_base = event_base_new()) == NULL)
		startup_fail(1, "event_base_new failed");
	for (i = 0; i < SUP_NSIGS; i++) {
		sigev[i] = sup_event_new(sup_sigs[i], EV_SIGNAL | EV_PERSIST,
		    signal_cb, NULL);
		if (evsignal_add(sigev[i], NULL) == -1)
			startup_fail(1, "cannot watch signal %d", sup_sigs[i]);
	}
	sv->sv_progress_ev = sup_event_new(-1, 0, progress_cb, NULL);
	sup_roles_init();
	if (sup_control_open(err, sizeof(err)) == -1)
		startup_fail(1, "control socket: %s", err);
}

/* Start-up: relayd now, the others held until it is ready. */
static void
boot_start(void)
{
	struct sup_role *r;
	int		 i;

	sv->sv_started = sup_now();
	sv->sv_booting = 1;
	log_info("started (pid %d, configuration %s, roles from %s)",
	    (int)getpid(),
	    sv->sv_conffile ? sv->sv_conffile : "defaults and environment",
	    sv->sv_libexec);
	for (i = 0; i < SUP_NROLES; i++) {
		r = &sv->sv_roles[i];
		if (r->rl_id != ROLE_RELAYD)
			sup_role_hold(r);
	}
	sup_role_start(sup_role_get(ROLE_RELAYD));
}

/* After the loop: tells a waiting parent, releases everything. */
static void
close_all(struct event *sigev[])
{
	size_t i;

	log_info("exiting with status %d", sv->sv_exit);
	report(sv->sv_exit ? sv->sv_exit : 1,
	    "graspd exited during its start-up");
	sup_control_close();
	sup_roles_free();
	for (i = 0; i < SUP_NSIGS; i++)
		sup_event_free(sigev[i]);
	sup_event_free(sv->sv_progress_ev);
	sv->sv_progress_ev = NULL;
	event_base_free(sv->sv_base);
	pidfile_remove();
	close(sv->sv_devnull);
	config_free(&sv->sv_cfg);
	free(sv->sv_conffile);
	free(sv->sv_notify);
}

int
main(int argc, char *argv[])
{
	struct event *sigev[SUP_NSIGS];
	const char   *file = NULL;
	char	      err[1024];
	int	      nflag = 0, fd;

	/* Descriptors 0-2 must exist before anything else is opened. */
	while ((fd = open("/dev/null", O_RDWR)) != -1 && fd < 3)
		;
	if (fd > 2)
		close(fd);
	parse_options(argc, argv, &file, &nflag);

	sv = &sv_store;
	sv->sv_ctl = -1;
	sv->sv_pidfd = -1;
	sv->sv_report_fd = -1;
	log_init("graspd", 1);
	if (config_load(&sv->sv_cfg, file, err, sizeof(err)) == -1) {
		fprintf(stderr, "graspd: %s\n", err);
		config_free(&sv->sv_cfg);
		return CONFIG_EXIT;
	}
	if (nflag)
		check_only();
	prepare(file);
	open_all(sigev);
	boot_start();

	event_base_dispatch(sv->sv_base);

	close_all(sigev);
	return sv->sv_exit;
}
