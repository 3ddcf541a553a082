/*
 * proc.c: the process skeleton of every role (see proc.h): options, log,
 * configuration, signals and the service loop, run by relayd, syncd,
 * discoveryd and historyd.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <errno.h>
#include <fcntl.h>
#include <nanomsg/nn.h>
#include <nanomsg/reqrep.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "proc.h"
#include "ready.h"
#include "resolve.h"
#include "version.h"

/* One process per program; the signal handlers need it. */
static struct proc *proc_self;

/* SIGHUP from the supervisor's reload: the log level is re-read. */
static volatile sig_atomic_t proc_reload;

int64_t
proc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
proc_alive(pid_t pid)
{
	char   path[64], buf[512], *p;
	FILE  *f;
	size_t n;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "pid (comm) S ...": the state follows the last ')'. */
	if ((p = strrchr(buf, ')')) == NULL || p[1] == '\0')
		return 1;
	return p[2] != 'Z' && p[2] != 'X';
}

int64_t
proc_uptime(const struct proc *p)
{
	return (proc_now_ms() - p->p_started_ms) / 1000;
}

static void __attribute__((noreturn)) usage(const char *name, int status)
{
	fprintf(status ? stderr : stdout,
	    "usage: %s [-dhV] [-f file]\n"
	    "  -d       log to standard error\n"
	    "  -f file  the configuration file\n"
	    "  -h       this help\n"
	    "  -V       print the version and exit\n",
	    name);
	exit(status);
}

void
proc_start(struct proc *p, int argc, char **argv, enum role role,
    struct config *cfg)
{
	const char *name = role_name(role);
	char	    err[512];
	int	    ch, foreground = 0;

	memset(p, 0, sizeof(*p));
	p->p_role = role;
	p->p_name = name;
	p->p_cfg = cfg;
	p->p_sock_control = -1;
	p->p_started_ms = proc_now_ms();
	while ((ch = getopt(argc, argv, "df:hV")) != -1) {
		switch (ch) {
		case 'd':
			foreground = 1;
			break;
		case 'f':
			p->p_file = optarg;
			break;
		case 'h':
			usage(name, 0);
		case 'V':
			printf("%s %s\n", name, GRASPD_VERSION);
			exit(0);
		default:
			usage(name, CONFIG_EXIT);
		}
	}
	if (optind != argc)
		usage(name, CONFIG_EXIT);
	log_init(name, foreground);
	proc_self = p;
	if (config_load(cfg, p->p_file, err, sizeof(err)) == -1)
		ready_config_fail("configuration: %s", err);
	log_setlevel(cfg->log_level);
	if (cfg->test)
		log_warnx("NGIT_TEST is set: test timing, not for production");
	ready_progress_every(cfg_scale_delay(cfg, READY_EXTEND_EVERY));
}

static void
on_signal(int sig)
{
	if (sig == SIGHUP)
		proc_reload = 1;
	else if (proc_self != NULL)
		proc_self->p_stop = 1;
	if (proc_self != NULL && proc_self->p_lws != NULL)
		lws_cancel_service(proc_self->p_lws);
}

void
proc_signals(struct proc *p, void (*chld)(int), int sa_flags)
{
	struct sigaction sa;

	(void)p;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = sa_flags;
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	if (chld != NULL) {
		sa.sa_handler = chld;
		sigaction(SIGCHLD, &sa, NULL);
	}
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	/* The supervisor's reload: log_level live (other keys restart). */
	sigaction(SIGHUP, &sa, NULL);
}

static void
lws_log_emit(int level, const char *line)
{
	size_t n = strlen(line);

	while (n > 0 && line[n - 1] == '\n')
		n--;
	if (level & LLL_ERR)
		log_warnx("lws: %.*s", (int)n, line);
	else
		log_debug("lws: %.*s", (int)n, line);
}

void
proc_lws_log(void)
{
	lws_set_log_level(LLL_ERR | LLL_WARN, lws_log_emit);
}

void
proc_adopt(struct lws_vhost *vhost, int fd, const char *protocol, intptr_t tag,
    const char *what)
{
	lws_sock_file_fd_type u;
	struct lws	     *wsi;
	int		      copy;

	if (fd < 0)
		fatalx("no descriptor for the %s channel", what);
	if ((copy = fcntl(fd, F_DUPFD_CLOEXEC, 3)) == -1)
		fatal("dup of the %s channel descriptor", what);
	u.filefd = copy;
	wsi = lws_adopt_descriptor_vhost(vhost, LWS_ADOPT_RAW_FILE_DESC, u,
	    protocol, NULL);
	if (wsi == NULL)
		fatalx("cannot adopt the %s channel into the loop", what);
	lws_set_opaque_user_data(wsi, (void *)tag);
}

int
proc_control_open(struct proc *p, const ctl_fn fns[CTL_NCMDS], void *arg,
    char *ep, size_t eplen)
{
	p->p_ctl_fns = fns;
	p->p_ctl_arg = arg;
	if (chan_control_endpoint(p->p_cfg->run_path, p->p_role, ep, eplen) ==
	    -1)
		fatalx("run path too long for the control channel");
	if ((p->p_sock_control = chan_open(NN_REP, ep, 1)) == -1)
		fatal("cannot bind %s", ep);
	return p->p_sock_control;
}

int
proc_control_serve(struct proc *p, int max)
{
	return ctl_serve(p->p_sock_control, p->p_role, p->p_ctl_fns,
	    p->p_ctl_arg, max);
}

void
proc_db_path(const struct proc *p, char *out, size_t outlen)
{
	if (snprintf(out, outlen, "%s/graspd.db", p->p_cfg->relay_data_path) >=
	    (int)outlen)
		ready_config_fail(
		    "configuration: NGIT_RELAY_DATA_PATH is too long");
}

void
proc_run(struct proc *p)
{
	while (!p->p_stop) {
		if (lws_service(p->p_lws, 0) < 0)
			break;
		/* Lookup threads wake the loop with lws_cancel_service(). */
		resolve_poll();
		if (proc_reload) {
			proc_reload = 0;
			config_reload_log_level(p->p_cfg, p->p_file);
		}
	}
}

void
proc_stop(struct proc *p)
{
	p->p_stop = 1;
	if (p->p_lws != NULL)
		lws_cancel_service(p->p_lws);
}

void
proc_status(const struct proc *p, int ready, cJSON *rep)
{
	cJSON_AddStringToObject(rep, "role", p->p_name);
	cJSON_AddNumberToObject(rep, "pid", (double)getpid());
	cJSON_AddNumberToObject(rep, "uptime", (double)proc_uptime(p));
	cJSON_AddBoolToObject(rep, "ready", ready);
}

int
proc_thread(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
    void *arg, const char *name)
{
	sigset_t all, old;
	int	 rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(t, attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0 && name != NULL)
		pthread_setname_np(*t, name);
	return rc;
}
