/*
 * relayproc.c: runs a graspd program as the server of one integration test
 * or benchmark (see relayproc.h).  Runs in the test process; the program
 * is fork+exec'd with nothing else done in the child, as the supervisor
 * does, because nanomsg is not fork-safe.
 */
#define _GNU_SOURCE /* close_range */
#include <sys/types.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "json.h"
#include "log.h"
#include "mem.h"
#include "relayproc.h"
#include "t.h"
#include "tdir.h"
#include "tfix.h"
#include "wsclient.h"

extern char **environ;

/* Ours: how long relayproc_post() waits for an answer. */
#define RELAYPROC_POST_TIMEOUT_MS 10000
/* Ours: how many ports relayproc_start() tries when one was taken. */
#define RELAYPROC_START_TRIES	  3

struct relayproc {
	char  *rp_program; /* absolute path */
	char **rp_env;	   /* our KEY=VALUE settings */
	size_t rp_nenv;
	char   rp_host[64];
	int    rp_port;
	char   rp_domain[256];
	char   rp_url[272];
	char   rp_bind_url[96];
	char   rp_dir[PATH_MAX];
	char   rp_log[PATH_MAX + 8];
	pid_t  rp_pid;	  /* -1 when not running */
	int    rp_status; /* of the last exit */
};

/* Length of the KEY part of "KEY=VALUE" (the whole string if no '='). */
static size_t
env_keylen(const char *kv)
{
	const char *eq = strchr(kv, '=');

	return eq ? (size_t)(eq - kv) : strlen(kv);
}

static const char *
env_get(const struct relayproc *rp, const char *key)
{
	size_t i, kl = strlen(key);

	for (i = 0; i < rp->rp_nenv; i++)
		if (env_keylen(rp->rp_env[i]) == kl &&
		    strncmp(rp->rp_env[i], key, kl) == 0)
			return rp->rp_env[i] + kl + 1;
	return NULL;
}

void
relayproc_setenv(struct relayproc *rp, const char *kv)
{
	size_t i, kl = env_keylen(kv);
	char **n;

	if (kv[kl] != '=')
		return;
	for (i = 0; i < rp->rp_nenv; i++) {
		if (env_keylen(rp->rp_env[i]) == kl &&
		    strncmp(rp->rp_env[i], kv, kl) == 0) {
			free(rp->rp_env[i]);
			rp->rp_env[i] = xstrdup(kv);
			return;
		}
	}
	n = reallocarray(rp->rp_env, rp->rp_nenv + 2, sizeof(*n));
	if (n == NULL)
		fatal("relayproc: reallocarray");
	rp->rp_env = n;
	rp->rp_env[rp->rp_nenv++] = xstrdup(kv);
	rp->rp_env[rp->rp_nenv] = NULL;
}

static void __attribute__((format(printf, 3, 4)))
setenvf(struct relayproc *rp, const char *key, const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	va_list	   ap;
	char	  *v = NULL;

	va_start(ap, fmt);
	if (vasprintf(&v, fmt, ap) == -1)
		fatal("relayproc: vasprintf");
	va_end(ap);
	buf_printf(&b, "%s=%s", key, v);
	relayproc_setenv(rp, b.b_data);
	buf_free(&b);
	free(v);
}

/* The test's environment with our settings replacing the same keys. */
static char **
build_envp(const struct relayproc *rp)
{
	size_t n = 0, i, j;
	char **envp;

	for (i = 0; environ[i] != NULL; i++)
		n++;
	envp = calloc(n + rp->rp_nenv + 1, sizeof(*envp));
	if (envp == NULL)
		fatal("relayproc: calloc");
	n = 0;
	for (i = 0; environ[i] != NULL; i++) {
		size_t kl = env_keylen(environ[i]);

		for (j = 0; j < rp->rp_nenv; j++)
			if (env_keylen(rp->rp_env[j]) == kl &&
			    strncmp(rp->rp_env[j], environ[i], kl) == 0)
				break;
		if (j == rp->rp_nenv)
			envp[n++] = environ[i];
	}
	for (j = 0; j < rp->rp_nenv; j++)
		envp[n++] = rp->rp_env[j];
	envp[n] = NULL;
	return envp;
}

int
relayproc_split_addr(const char *v, char *host, size_t hostlen, int *port)
{
	const char *colon;
	size_t	    hl;
	char	   *ep;
	long	    p;

	if (v == NULL)
		return -1;
	if (*v == '[') {
		if ((colon = strstr(v, "]:")) == NULL)
			return -1;
		v++;
		hl = (size_t)(colon - v);
		colon++;
	} else {
		if ((colon = strrchr(v, ':')) == NULL)
			return -1;
		hl = (size_t)(colon - v);
	}
	p = strtol(colon + 1, &ep, 10);
	if (hl == 0 || hl >= hostlen || *ep != '\0' || p <= 0 || p > 65535)
		return -1;
	memcpy(host, v, hl);
	host[hl] = '\0';
	*port = (int)p;
	return 0;
}

int
relayproc_listen(const char *host, int type, int backlog, int *port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in     *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6    *sin6 = (struct sockaddr_in6 *)&ss;
	socklen_t		sl;
	int			fd;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sl = sizeof(*sin);
	} else if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sl = sizeof(*sin6);
	} else
		return -1;
	if ((fd = socket(ss.ss_family, type, 0)) == -1)
		return -1;
	if (bind(fd, (struct sockaddr *)&ss, sl) == -1 ||
	    listen(fd, backlog) == -1 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) == -1) {
		close(fd);
		return -1;
	}
	*port =
	    ntohs(ss.ss_family == AF_INET ? sin->sin_port : sin6->sin6_port);
	return fd;
}

/* Reads "host:port" or "[v6]:port" from NGIT_BIND_ADDRESS; 0 or -1. */
static int
parse_bind(struct relayproc *rp)
{
	return relayproc_split_addr(env_get(rp, "NGIT_BIND_ADDRESS"),
	    rp->rp_host, sizeof(rp->rp_host), &rp->rp_port);
}

/* Binds host:port (port 0: any) and closes it; the port, or -1. */
static int
try_port(const char *host, int port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in     *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6    *sin6 = (struct sockaddr_in6 *)&ss;
	socklen_t		sl;
	int			fd, got = -1;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		sl = sizeof(*sin);
	} else if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		sl = sizeof(*sin6);
	} else
		return -1;
	if ((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (bind(fd, (struct sockaddr *)&ss, sl) == 0 &&
	    getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		got = ntohs(
		    ss.ss_family == AF_INET ? sin->sin_port : sin6->sin6_port);
	close(fd);
	return got;
}

/*
 * GRASPD_TEST_PORTS="LO-HI", set by tests/run.sh, is this program's own
 * block of ports, outside the kernel's ephemeral range: no concurrent
 * test program picks from it and no outgoing connection's source port
 * lands in it, so a port handed out stays free until its server binds.
 * Ports are handed out in turn from a pid-chosen start (two runs of the
 * suite at once rarely meet), each checked free by a bind.
 */
int
relayproc_free_port(const char *host)
{
	static int  next = -1;
	const char *v = getenv("GRASPD_TEST_PORTS");
	char	   *ep;
	long	    lo, hi, n;
	int	    port;

	if (v == NULL || *v == '\0')
		return try_port(host, 0);
	lo = strtol(v, &ep, 10);
	hi = *ep == '-' ? strtol(ep + 1, &ep, 10) : -1;
	if (*ep != '\0' || lo < 1024 || hi > 65535 || hi < lo) {
		fprintf(stderr,
		    "# relayproc: GRASPD_TEST_PORTS=%s is not "
		    "LO-HI\n",
		    v);
		return -1;
	}
	if (next < lo || next > hi)
		next = (int)(lo + getpid() % (hi - lo + 1));
	for (n = lo; n <= hi; n++) {
		port = next;
		next = next == hi ? (int)lo : next + 1;
		if (try_port(host, port) == port)
			return port;
	}
	return -1;
}

int
relayproc_wait_port(const char *host, int port, int timeout_ms)
{
	int64_t deadline = wsc_now_ms() + timeout_ms;
	int	fd;

	for (;;) {
		if ((fd = wsc_tcp_connect(host, port, 200)) != -1) {
			close(fd);
			return 0;
		}
		if (wsc_now_ms() >= deadline)
			return -1;
		relayproc_sleep_ms(20);
	}
}

static int
decode_status(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 255;
}

void
relayproc_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

int
relayproc_reap(pid_t *pidp, int *statusp, int timeout_ms)
{
	int64_t deadline = wsc_now_ms() + timeout_ms;
	pid_t	r;
	int	st;

	if (*pidp == -1)
		return *statusp;
	for (;;) {
		r = waitpid(*pidp, &st, WNOHANG);
		if (r == *pidp || (r == -1 && errno != EINTR)) {
			*statusp = r == -1 ? 255 : decode_status(st);
			*pidp = -1;
			return *statusp;
		}
		if (wsc_now_ms() >= deadline)
			return -1;
		relayproc_sleep_ms(10);
	}
}

int
relayproc_wait(struct relayproc *rp, int timeout_ms)
{
	pid_t pid = rp->rp_pid;
	int   st;

	st = relayproc_reap(&rp->rp_pid, &rp->rp_status, timeout_ms);
	/* Helpers it left in its process group go too. */
	if (st != -1 && pid != -1)
		kill(-pid, SIGKILL);
	return st;
}

int
relayproc_kill(struct relayproc *rp, int sig)
{
	if (rp->rp_pid == -1)
		return -1;
	return kill(rp->rp_pid, sig);
}

int
relayproc_terminate(pid_t *pidp, int *statusp, int timeout_ms, const char *what)
{
	pid_t pid = *pidp;
	int   st;

	if (pid == -1)
		return *statusp;
	kill(pid, SIGTERM);
	if ((st = relayproc_reap(pidp, statusp, timeout_ms)) != -1)
		return st;
	fprintf(stderr,
	    "# relayproc: %s did not exit %d ms after SIGTERM, "
	    "killing it\n",
	    what, timeout_ms);
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	if ((st = relayproc_reap(pidp, statusp, timeout_ms)) != -1)
		return st;
	fprintf(stderr, "# relayproc: pid %d survives SIGKILL\n", (int)pid);
	return 255;
}

int
relayproc_stop(struct relayproc *rp)
{
	pid_t pid = rp->rp_pid;
	int   st;

	st = relayproc_terminate(&rp->rp_pid, &rp->rp_status,
	    RELAYPROC_STOP_TIMEOUT_MS, rp->rp_program);
	/* Helpers it left in its process group go too. */
	if (pid != -1 && rp->rp_pid == -1)
		kill(-pid, SIGKILL);
	return st;
}

/* Forks and execs the program; the child does nothing else. */
static int
spawn(struct relayproc *rp)
{
	char **envp, *argv[3];
	pid_t  parent = getpid(), pid;
	int    logfd, nullfd;

	logfd =
	    open(rp->rp_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (logfd == -1 || nullfd == -1) {
		fprintf(stderr, "# relayproc: %s: %s\n", rp->rp_log,
		    strerror(errno));
		if (logfd != -1)
			close(logfd);
		if (nullfd != -1)
			close(nullfd);
		return -1;
	}
	envp = build_envp(rp);
	argv[0] = strrchr(rp->rp_program, '/') + 1;
	/* Foreground, logging to stderr (which goes to the log file). */
	argv[1] = "-d";
	argv[2] = NULL;
	fflush(NULL);
	if ((pid = fork()) == -1) {
		fprintf(stderr, "# relayproc: fork: %s\n", strerror(errno));
		close(logfd);
		close(nullfd);
		free(envp);
		return -1;
	}
	if (pid == 0) {
		sigset_t all;

		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(nullfd, 0) == -1 || dup2(logfd, 1) == -1 ||
		    dup2(logfd, 2) == -1 || chdir(rp->rp_dir) == -1)
			_exit(127);
		close_range(3, ~0U, 0);
		execve(rp->rp_program, argv, envp);
		dprintf(2, "relayproc: exec %s: %s\n", rp->rp_program,
		    strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	close(logfd);
	close(nullfd);
	free(envp);
	rp->rp_pid = pid;
	return 0;
}

/*
 * Starts the program and waits until its port accepts connections: 0, -1,
 * or -2 if it exited before listening.
 */
static int
start(struct relayproc *rp)
{
	int64_t deadline;
	int	fd, rc = -1;

	if (spawn(rp) == -1)
		return -1;
	deadline = wsc_now_ms() + RELAYPROC_START_TIMEOUT_MS;
	for (;;) {
		/*
		 * The port first: a program started on a port another holds
		 * (bind_test) may exit before this loop's first turn on a
		 * loaded machine; the port answers all the same, and the
		 * caller reads the exit with relayproc_wait().
		 */
		if ((fd = wsc_tcp_connect(rp->rp_host, rp->rp_port, 200)) !=
		    -1) {
			close(fd);
			return 0;
		}
		if (relayproc_wait(rp, 0) != -1) {
			fprintf(stderr,
			    "# relayproc: %s exited with status "
			    "%d before listening\n",
			    rp->rp_program, rp->rp_status);
			rc = -2;
			break;
		}
		if (wsc_now_ms() >= deadline) {
			fprintf(stderr,
			    "# relayproc: %s not listening on "
			    "%s port %d after %d ms\n",
			    rp->rp_program, rp->rp_host, rp->rp_port,
			    RELAYPROC_START_TIMEOUT_MS);
			relayproc_stop(rp);
			break;
		}
		relayproc_sleep_ms(20);
	}
	relayproc_dump_log(rp, 30);
	return rc;
}

int
relayproc_log_port_taken(const char *path)
{
	char   chunk[65536];
	size_t n;
	FILE  *f;

	if ((f = fopen(path, "r")) == NULL)
		return 0;
	n = fread(chunk, 1, sizeof(chunk) - 1, f);
	fclose(f);
	chunk[n] = '\0';
	return strstr(chunk, "cannot listen on") != NULL ||
	    strstr(chunk, "Address already in use") != NULL;
}

/* The program's absolute path, or NULL if it is not an executable. */
static char *
find_program(const char *program)
{
	struct buf  b = BUF_INIT;
	const char *bin;
	char	   *path;

	if (strchr(program, '/') != NULL)
		buf_adds(&b, program);
	else {
		if ((bin = getenv("GRASPD_BIN")) == NULL || *bin == '\0')
			bin = "bin";
		buf_printf(&b, "%s/%s", bin, program);
	}
	path = realpath(b.b_data, NULL);
	if (path == NULL || access(path, X_OK) == -1) {
		fprintf(stderr, "# relayproc: %s: %s (build it with make)\n",
		    b.b_data, path ? strerror(errno) : "not found");
		free(path);
		path = NULL;
	}
	buf_free(&b);
	return path;
}

struct relayproc *
relayproc_start(const char *program, const char *const extra_env[])
{
	struct relayproc  *rp;
	const char	  *v;
	char		   sub[PATH_MAX + 8];
	static const char *subdirs[] = { "relay", "git", "run" };
	size_t		   i;
	int		   port, rc, try, own_port = 1;

	if ((rp = calloc(1, sizeof(*rp))) == NULL)
		fatal("relayproc: calloc");
	rp->rp_pid = -1;
	if ((rp->rp_program = find_program(program)) == NULL)
		goto fail;
	if (tdir_make(rp->rp_dir, sizeof(rp->rp_dir), "graspd-test") == -1)
		goto fail;
	for (i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
		snprintf(sub, sizeof(sub), "%s/%s", rp->rp_dir, subdirs[i]);
		if (mkdir(sub, 0700) == -1) {
			fprintf(stderr, "# relayproc: mkdir %s: %s\n", sub,
			    strerror(errno));
			goto fail;
		}
	}
	snprintf(rp->rp_log, sizeof(rp->rp_log), "%s/log", rp->rp_dir);

	for (try = 1;; try++) {
		if ((port = relayproc_free_port("127.0.0.1")) == -1) {
			fprintf(stderr,
			    "# relayproc: no free loopback "
			    "port\n");
			goto fail;
		}
		setenvf(rp, "NGIT_BIND_ADDRESS", "127.0.0.1:%d", port);
		setenvf(rp, "NGIT_DOMAIN", "127.0.0.1:%d", port);
		setenvf(rp, "NGIT_RELAY_DATA_PATH", "%s/relay", rp->rp_dir);
		setenvf(rp, "NGIT_GIT_DATA_PATH", "%s/git", rp->rp_dir);
		setenvf(rp, "NGIT_RUN_PATH", "%s/run", rp->rp_dir);
		relayproc_setenv(rp, "NGIT_TEST=1");
		relayproc_setenv(rp, "NGIT_MAX_EVENTS_PER_MINUTE=0");
		relayproc_setenv(rp, "NGIT_MAX_CONNECTIONS_PER_IP=0");
		relayproc_setenv(rp, "NGIT_MAX_EVENTS_PER_MINUTE_PER_IP=0");
		/* Roles as the test's own user, whatever users the host has. */
		relayproc_setenv(rp, "NGIT_USER=root");
		relayproc_setenv(rp, TPROC_WAL_ROOM);
		for (i = 0; extra_env != NULL && extra_env[i] != NULL; i++) {
			relayproc_setenv(rp, extra_env[i]);
			if (strncmp(extra_env[i], "NGIT_BIND_ADDRESS=", 18) ==
			    0)
				own_port = 0;
		}
		if (parse_bind(rp) == -1) {
			fprintf(stderr,
			    "# relayproc: cannot read "
			    "NGIT_BIND_ADDRESS %s\n",
			    env_get(rp, "NGIT_BIND_ADDRESS"));
			goto fail;
		}
		v = env_get(rp, "NGIT_DOMAIN");
		snprintf(rp->rp_domain, sizeof(rp->rp_domain), "%s",
		    v ? v : "");
		snprintf(rp->rp_url, sizeof(rp->rp_url), "ws://%s",
		    rp->rp_domain);
		if (strchr(rp->rp_host, ':') != NULL)
			snprintf(rp->rp_bind_url, sizeof(rp->rp_bind_url),
			    "ws://[%s]:%d/", rp->rp_host, rp->rp_port);
		else
			snprintf(rp->rp_bind_url, sizeof(rp->rp_bind_url),
			    "ws://%s:%d/", rp->rp_host, rp->rp_port);
		if ((rc = start(rp)) == 0)
			return rp;
		/*
		 * Another process can bind a port between our check and the
		 * program's bind (a test outside tests/run.sh's port blocks):
		 * then another port will do.
		 */
		if (rc != -2 || !own_port || try == RELAYPROC_START_TRIES ||
		    !relayproc_log_port_taken(rp->rp_log))
			goto fail;
		fprintf(stderr,
		    "# relayproc: port %d was taken, trying "
		    "another\n",
		    port);
	}
fail:
	relayproc_free(rp);
	return NULL;
}

struct relayproc *
relayproc_start_peer(const char *const extra_env[])
{
	struct relayproc *rp;
	struct buf	  b = BUF_INIT;
	const char	 *v;

	if ((v = getenv("GRASPD_PEER")) != NULL && *v != '\0')
		buf_adds(&b, v);
	else {
		if ((v = getenv("O")) == NULL || *v == '\0')
			v = "build";
		buf_printf(&b, "%s/tests/peer/peer", v);
	}
	/* A path without a '/' would be looked up in $GRASPD_BIN. */
	if (strchr(b.b_data, '/') == NULL) {
		buf_reset(&b);
		buf_printf(&b, "./%s", v);
	}
	rp = relayproc_start(b.b_data, extra_env);
	buf_free(&b);
	return rp;
}

int
relayproc_restart(struct relayproc *rp)
{
	relayproc_stop(rp);
	return start(rp);
}

void
relayproc_free(struct relayproc *rp)
{
	size_t i;

	if (rp == NULL)
		return;
	relayproc_stop(rp);
	tdir_remove(rp->rp_dir);
	for (i = 0; i < rp->rp_nenv; i++)
		free(rp->rp_env[i]);
	free(rp->rp_env);
	free(rp->rp_program);
	free(rp);
}

void
relayproc_dump_log(const struct relayproc *rp, int nlines)
{
	FILE	  *f;
	struct buf b = BUF_INIT;
	char	   chunk[8192], *p, *line;
	size_t	   n;
	long	   size;
	int	   seen = 0;

	if ((f = fopen(rp->rp_log, "r")) == NULL)
		return;
	/* The tail is in the last 64 KiB unless lines are very long. */
	if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 65536)
		fseek(f, size - 65536, SEEK_SET);
	else
		fseek(f, 0, SEEK_SET);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(&b, chunk, n);
	fclose(f);
	if (b.b_len == 0) {
		fprintf(stderr, "# %s is empty\n", rp->rp_log);
		goto done;
	}
	p = b.b_data + b.b_len;
	if (p[-1] == '\n')
		*--p = '\0';
	while (p > b.b_data && seen < nlines) {
		p--;
		if (*p == '\n')
			seen++;
	}
	if (*p == '\n')
		p++;
	fprintf(stderr, "# --- last lines of %s\n", rp->rp_log);
	for (line = strtok(p, "\n"); line != NULL; line = strtok(NULL, "\n"))
		fprintf(stderr, "# %s\n", line);
done:
	buf_free(&b);
}

int
relayproc_port(const struct relayproc *rp)
{
	return rp->rp_port;
}

const char *
relayproc_host(const struct relayproc *rp)
{
	return rp->rp_host;
}

const char *
relayproc_dir(const struct relayproc *rp)
{
	return rp->rp_dir;
}

const char *
relayproc_log_path(const struct relayproc *rp)
{
	return rp->rp_log;
}

int
relayproc_log_count(const struct relayproc *rp, const char *needle)
{
	char *log = t_slurp(rp->rp_log, NULL), *p;
	int   n = 0;

	for (p = log; p != NULL && (p = strstr(p, needle)) != NULL; p++)
		n++;
	free(log);
	return n;
}

pid_t
relayproc_pid(const struct relayproc *rp)
{
	return rp->rp_pid;
}

const char *
relayproc_domain(const struct relayproc *rp)
{
	return rp->rp_domain;
}

const char *
relayproc_url(const struct relayproc *rp)
{
	return rp->rp_url;
}

const char *
relayproc_bind_url(const struct relayproc *rp)
{
	return rp->rp_bind_url;
}

struct json *
relayproc_nip11(const struct relayproc *rp, struct json_doc **docp)
{
	struct json *root = NULL;
	char	    *body = NULL, err[128];
	int	     status = 0;

	*docp = NULL;
	if (http_get(rp->rp_host, rp->rp_port, "/",
		"Accept: application/nostr+json\r\n", 5000, &status, NULL,
		&body) == -1)
		printf("# NIP-11: no answer from port %d\n", rp->rp_port);
	else if (status != 200)
		printf("# NIP-11: status %d\n", status);
	else if ((root = json_parse(body, strlen(body), docp, err,
		      sizeof(err))) == NULL)
		printf("# NIP-11: %s\n", err);
	free(body);
	return root;
}

int
relayproc_post(struct relayproc *rp, const char *path, const char *body,
    size_t len)
{
	int status = 0;

	if (http_request(relayproc_host(rp), relayproc_port(rp), "POST", path,
		NULL, body, len, RELAYPROC_POST_TIMEOUT_MS, &status, NULL, NULL,
		NULL) == -1)
		return -1;
	return status == 200 ? 0 : -1;
}

struct wsc *
relayproc_ws_retry(struct relayproc *rp, int timeout_ms)
{
	int64_t	    end = wsc_now_ms() + timeout_ms;
	struct wsc *ws;
	int	    status;

	do {
		usleep(100000);
		ws = wsc_connect_ex(relayproc_host(rp), relayproc_port(rp), "/",
		    NULL, 5000, &status);
	} while (ws == NULL && wsc_now_ms() < end);
	return ws;
}

void
relayproc_graspd_env(int port, const char *dir, const char *libexec,
    void (*add)(void *, const char *), void *arg)
{
	char kv[PATH_MAX + 64];

#define GD_ENV(...) \
	do { \
		snprintf(kv, sizeof(kv), __VA_ARGS__); \
		add(arg, kv); \
	} while (0)
	GD_ENV("NGIT_BIND_ADDRESS=127.0.0.1:%d", port);
	GD_ENV("NGIT_DOMAIN=127.0.0.1:%d", port);
	GD_ENV("NGIT_RELAY_DATA_PATH=%s/relay", dir);
	GD_ENV("NGIT_GIT_DATA_PATH=%s/git", dir);
	GD_ENV("NGIT_RUN_PATH=%s/run", dir);
	GD_ENV("NGIT_TEST=1");
	GD_ENV("NGIT_MAX_EVENTS_PER_MINUTE=0");
	GD_ENV("NGIT_MAX_CONNECTIONS_PER_IP=0");
	GD_ENV("NGIT_MAX_EVENTS_PER_MINUTE_PER_IP=0");
	/* Roles as the test's own user, unless extra_env says. */
	GD_ENV("NGIT_USER=root");
	GD_ENV(TPROC_WAL_ROOM);
	GD_ENV("GRASPD_LIBEXEC=%s", libexec);
#undef GD_ENV
}

int
relayproc_proc_status(long pid, const char *name, char *out, size_t outlen)
{
	char   path[64], line[512], *v;
	size_t nl = strlen(name);
	FILE  *f;
	int    rc = -1;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (rc == -1 && fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, name, nl) != 0 || line[nl] != ':')
			continue;
		v = line + nl + 1;
		v += strspn(v, " \t");
		v[strcspn(v, "\n")] = '\0';
		snprintf(out, outlen, "%s", v);
		rc = 0;
	}
	fclose(f);
	return rc;
}

static int
relayproc_fixture_relayd(void *arg)
{
	struct relayproc **rpp = arg;

	if ((*rpp = relayproc_start("relayd", NULL)) == NULL) {
		printf("not ok - relayd_start: relayd did not start\n");
		return 1;
	}
	return 0;
}

static int
relayproc_fixture_peer(void *arg)
{
	struct relayproc **rpp = arg;

	if ((*rpp = relayproc_start_peer(NULL)) == NULL) {
		printf("not ok - peer_start: the peer did not start\n");
		return 1;
	}
	return 0;
}

static void
relayproc_fixture_stop(void *arg, int failed)
{
	struct relayproc **rpp = arg;

	if (failed)
		relayproc_dump_log(*rpp, RELAYPROC_FIXTURE_LOG);
	relayproc_free(*rpp);
	*rpp = NULL;
}

const struct t_fixture relayproc_relayd_fixture = { relayproc_fixture_relayd,
	relayproc_fixture_stop };
const struct t_fixture relayproc_peer_fixture = { relayproc_fixture_peer,
	relayproc_fixture_stop };
