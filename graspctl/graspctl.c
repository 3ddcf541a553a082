/*
 * graspctl.c: the control program of graspd (graspctl(8)).  Sends one
 * CONTROL request per process over nanomsg REQ and prints the reply for
 * people, or as JSON with -j.  status, start, stop, restart and reload go
 * to the supervisor; log, show and stats go straight to each process's
 * own control socket, so they work while graspd or relayd is down.
 * Runs as a short-lived command, never inside the daemon.
 */
#include <sys/stat.h>

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <nanomsg/nn.h>
#include <nanomsg/reqrep.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "ctlcmd.h"
#include "graspctl.h"
#include "log.h"
#include "msg.h"
#include "proc.h"
#include "version.h"

/* Ours: how long a process may take to answer. */
#define GCTL_TIMEOUT_MS	  3000
/* Ours: how long "graspctl stop" waits for graspd to exit (SUP_STOP_TIMEOUT
 * twice, relayd last, and some room). */
#define GCTL_STOP_WAIT_MS 20000

static int  jflag;
static char run_path[PATH_MAX];

static const enum role all_procs[] = { ROLE_SUPERVISOR, ROLE_RELAYD, ROLE_SYNCD,
	ROLE_DISCOVERYD, ROLE_HISTORYD };
#define NPROCS (sizeof(all_procs) / sizeof(all_procs[0]))

static void __attribute__((noreturn)) usage(int status)
{
	fprintf(status ? stderr : stdout,
	    "usage: graspctl [-hjV] [-f file] [-r dir] command [argument]\n"
	    "commands:\n"
	    "  status                     every role: state, pid, uptime, restarts\n"
	    "  start|stop|restart role    one role, through graspd\n"
	    "  stop                       stop graspd and every role\n"
	    "  reload                     re-read the configuration\n"
	    "  log verbose|brief [proc]   log level of one or every process\n"
	    "  show proc                  what a process is doing\n"
	    "  stats [proc]               counters of one or every process\n"
	    "  export [--since T] [filter] stored events as JSON lines\n"
	    "  import [file]              publish JSON lines through relayd\n"
	    "  backup dir                 copy the database and git data\n"
	    "roles: relayd syncd discoveryd historyd; proc: a role or graspd\n"
	    "options: -f the configuration (for run_path and the data paths), -h this help,\n  -j JSON, -r the run directory (of a running graspd), -V the version\n");
	exit(status);
}

static void
sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/*
 * The run directory: -r, else run_path of -f's file (with the
 * environment), else NGIT_RUN_PATH, else the built-in default.
 */
static void
find_run_path(const char *rflag, const char *file)
{
	struct config cfg;
	const char   *name, *def, *env;
	char	      err[1024];
	size_t	      i;

	if (rflag != NULL) {
		snprintf(run_path, sizeof(run_path), "%s", rflag);
		return;
	}
	if (file != NULL) {
		if (config_load(&cfg, file, err, sizeof(err)) == -1) {
			fprintf(stderr, "graspctl: %s\n", err);
			config_free(&cfg);
			exit(1);
		}
		snprintf(run_path, sizeof(run_path), "%s", cfg.run_path);
		config_free(&cfg);
		return;
	}
	if ((env = getenv("NGIT_RUN_PATH")) != NULL && *env != '\0') {
		snprintf(run_path, sizeof(run_path), "%s", env);
		return;
	}
	for (i = 0; config_key_info(i, &name, &def, NULL) == 0; i++)
		if (strcmp(name, "NGIT_RUN_PATH") == 0) {
			snprintf(run_path, sizeof(run_path), "%s", def);
			return;
		}
	snprintf(run_path, sizeof(run_path), "/run/graspd");
}

/*
 * Sends {"cmd":cmd,"args":[arg]} (arg may be NULL) to proc and waits for
 * the reply.  Returns the parsed reply (caller frees), or NULL after
 * printing why on stderr (also when proc does not answer cmd, ctlcmd.h).
 */
static cJSON *
request(enum role proc, enum ctl_cmd c, const char *arg)
{
	const char *cmd = ctl_cmd_name(c);

	struct msg  m;
	cJSON	   *req, *args, *reply = NULL;
	struct stat st;
	char	    ep[PATH_MAX + 16], *text, why[160];
	int	    s, r, tmo = GCTL_TIMEOUT_MS;

	if (!ctl_cmd_answers(c, proc)) {
		fprintf(stderr, "graspctl: %s has no \"%s\" command\n",
		    role_name(proc), cmd);
		return NULL;
	}
	if (chan_control_endpoint(run_path, proc, ep, sizeof(ep)) == -1) {
		fprintf(stderr, "graspctl: run directory name too long\n");
		return NULL;
	}
	if (stat(ep + strlen("ipc://"), &st) == -1) {
		fprintf(stderr,
		    "graspctl: %s is not running (no socket at %s)\n",
		    role_name(proc), ep + strlen("ipc://"));
		return NULL;
	}
	if ((req = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(req, "cmd", cmd) == NULL ||
	    (args = cJSON_AddArrayToObject(req, "args")) == NULL ||
	    (arg != NULL &&
		!cJSON_AddItemToArray(args, cJSON_CreateString(arg))) ||
	    (text = cJSON_PrintUnformatted(req)) == NULL)
		fatalx("out of memory");
	cJSON_Delete(req);
	if ((s = chan_open(NN_REQ, ep, 0)) == -1) {
		fprintf(stderr, "graspctl: %s: %s\n", ep,
		    nn_strerror(nn_errno()));
		free(text);
		return NULL;
	}
	if (nn_setsockopt(s, NN_SOL_SOCKET, NN_SNDTIMEO, &tmo, sizeof(tmo)) ==
		-1 ||
	    nn_setsockopt(s, NN_SOL_SOCKET, NN_RCVTIMEO, &tmo, sizeof(tmo)) ==
		-1)
		fatalx("nn_setsockopt: %s", nn_strerror(nn_errno()));
	if (msg_send(s, MSG_CONTROL, text, strlen(text), 0) == -1 ||
	    (r = msg_recv_client(s, &m, 0, why, sizeof(why))) == 0 || r == -1) {
		fprintf(stderr, "graspctl: %s does not answer\n",
		    role_name(proc));
		goto done;
	}
	if (r == MSG_RECV_MALFORMED) {
		fprintf(stderr, "graspctl: %s sent a malformed reply: %s\n",
		    role_name(proc), why);
		goto done;
	}
	if (m.m_type == MSG_CONTROL_REPLY)
		reply = cJSON_ParseWithLength((const char *)m.m_data, m.m_len);
	if (reply == NULL || !cJSON_IsObject(reply)) {
		fprintf(stderr, "graspctl: %s sent a malformed reply\n",
		    role_name(proc));
		cJSON_Delete(reply);
		reply = NULL;
	}
	msg_free(&m);
done:
	chan_close(s);
	free(text);
	return reply;
}

/* 1 if the reply says ok; otherwise prints its error and returns 0. */
static int
reply_ok(enum role proc, const cJSON *reply)
{
	const cJSON *e;

	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok")))
		return 1;
	e = cJSON_GetObjectItemCaseSensitive(reply, "error");
	fprintf(stderr, "graspctl: %s: %s\n", role_name(proc),
	    cJSON_IsString(e) ? e->valuestring : "request failed");
	return 0;
}

static void
print_json(const cJSON *j)
{
	char *text;

	if ((text = cJSON_PrintUnformatted(j)) == NULL)
		fatalx("out of memory");
	printf("%s\n", text);
	free(text);
}

/* "3d04h", "2h05m", "4m07s", "12s". */
static void
fmt_duration(double secs, char *out, size_t outlen)
{
	long s = (long)secs;

	if (s >= 86400)
		snprintf(out, outlen, "%ldd%02ldh", s / 86400,
		    (s % 86400) / 3600);
	else if (s >= 3600)
		snprintf(out, outlen, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
	else if (s >= 60)
		snprintf(out, outlen, "%ldm%02lds", s / 60, s % 60);
	else
		snprintf(out, outlen, "%lds", s);
}

static void
status_row(const char *name, const char *state, double pid, double up,
    const char *restarts, const char *last, const char *reason)
{
	char pids[24], ups[48];

	if (pid > 0) {
		snprintf(pids, sizeof(pids), "%.0f", pid);
		fmt_duration(up, ups, sizeof(ups));
	} else {
		snprintf(pids, sizeof(pids), "-");
		snprintf(ups, sizeof(ups), "-");
	}
	printf("%-11s %-9s %-8s %-8s %-8s %-22s %s\n", name, state, pids, ups,
	    restarts, last[0] ? last : "-", reason[0] ? reason : "-");
}

static int
cmd_status(void)
{
	const cJSON *roles, *r;
	cJSON	    *reply;
	char	     restarts[16];

	if ((reply = request(ROLE_SUPERVISOR, CTL_status, NULL)) == NULL)
		return 1;
	if (!reply_ok(ROLE_SUPERVISOR, reply)) {
		cJSON_Delete(reply);
		return 1;
	}
	if (jflag) {
		print_json(reply);
		cJSON_Delete(reply);
		return 0;
	}
	printf("%-11s %-9s %-8s %-8s %-8s %-22s %s\n", "PROCESS", "STATE",
	    "PID", "UPTIME", "RESTARTS", "LAST EXIT", "REASON");
	status_row("graspd", "running", ctl_jnum(reply, "pid"),
	    ctl_jnum(reply, "uptime"), "-", "", "");
	roles = cJSON_GetObjectItemCaseSensitive(reply, "roles");
	cJSON_ArrayForEach(r, roles) {
		snprintf(restarts, sizeof(restarts), "%.0f",
		    ctl_jnum(r, "restarts"));
		status_row(ctl_jstr(r, "role"), ctl_jstr(r, "state"),
		    ctl_jnum(r, "pid"), ctl_jnum(r, "uptime"), restarts,
		    ctl_jstr(r, "last_exit"), ctl_jstr(r, "reason"));
	}
	cJSON_Delete(reply);
	return 0;
}

/* Supervisor commands that change something: start|stop|restart|reload. */
static int
cmd_supervisor(enum ctl_cmd c, const char *role)
{
	const char *cmd = ctl_cmd_name(c);
	cJSON	   *reply;
	int64_t	    deadline;
	pid_t	    pid;
	int	    rc = 1;

	if ((reply = request(ROLE_SUPERVISOR, c, role)) == NULL)
		return 1;
	if (!reply_ok(ROLE_SUPERVISOR, reply))
		goto done;
	rc = 0;
	if (jflag)
		print_json(reply);
	if (c == CTL_shutdown) {
		/* Wait, so that "graspctl stop; graspd" works. */
		pid = (pid_t)ctl_jnum(reply, "pid");
		deadline = proc_now_ms() + GCTL_STOP_WAIT_MS;
		while (proc_alive(pid) && proc_now_ms() < deadline)
			sleep_ms(50);
		if (proc_alive(pid)) {
			fprintf(stderr,
			    "graspctl: graspd (pid %ld) still runs %d s later\n",
			    (long)pid, GCTL_STOP_WAIT_MS / 1000);
			rc = 1;
		} else if (!jflag)
			printf("graspd stopped\n");
	} else if (jflag)
		;
	else if (c == CTL_reload)
		printf("reload: %s\n",
		    cJSON_IsTrue(
			cJSON_GetObjectItemCaseSensitive(reply, "changed")) ?
			"configuration changed, restarting the roles" :
			"configuration unchanged");
	else
		printf("%s: %s requested, now %s\n", role, cmd,
		    ctl_jstr(reply, "state"));
done:
	cJSON_Delete(reply);
	return rc;
}

static void
print_scalar(const cJSON *v)
{
	if (cJSON_IsString(v))
		fputs(v->valuestring, stdout);
	else if (cJSON_IsBool(v))
		fputs(cJSON_IsTrue(v) ? "true" : "false", stdout);
	else if (cJSON_IsNumber(v)) {
		if (v->valuedouble == floor(v->valuedouble) &&
		    fabs(v->valuedouble) < 1e15)
			printf("%.0f", v->valuedouble);
		else
			printf("%g", v->valuedouble);
	} else
		fputs("-", stdout);
}

static int
is_scalar(const cJSON *v)
{
	return !cJSON_IsObject(v) && !cJSON_IsArray(v);
}

/* A view as indented "key: value" lines; nested objects indent more. */
static void
print_view(const cJSON *obj, int depth)
{
	const cJSON *c, *e;
	int	     i, flat;

	cJSON_ArrayForEach(c, obj) {
		printf("%*s%s:", depth * 2, "", c->string ? c->string : "-");
		if (is_scalar(c)) {
			putchar(' ');
			print_scalar(c);
			putchar('\n');
			continue;
		}
		if (cJSON_IsObject(c)) {
			putchar('\n');
			print_view(c, depth + 1);
			continue;
		}
		flat = 1;
		cJSON_ArrayForEach(e, c)
			if (!is_scalar(e))
				flat = 0;
		if (flat) {
			i = 0;
			cJSON_ArrayForEach(e, c) {
				fputs(i++ ? ", " : " ", stdout);
				print_scalar(e);
			}
			putchar('\n');
			continue;
		}
		putchar('\n');
		i = 0;
		cJSON_ArrayForEach(e, c) {
			if (is_scalar(e)) {
				printf("%*s- ", (depth + 1) * 2, "");
				print_scalar(e);
				putchar('\n');
			} else {
				printf("%*s[%d]:\n", (depth + 1) * 2, "", i);
				print_view(e, depth + 2);
			}
			i++;
		}
	}
}

static int
proc_from_name(const char *name)
{
	int p = role_from_name(name);

	if (p == -1 || p == ROLE_GRASPCTL) {
		fprintf(stderr,
		    "graspctl: unknown process \"%s\" (graspd, relayd, syncd, discoveryd or historyd)\n",
		    name);
		exit(GCTL_USAGE_EXIT);
	}
	return p;
}

/*
 * log, show and stats: straight to each process named (one, or every
 * process when proc is NULL).  A process without a socket is reported
 * and skipped when every process was asked; the command fails if one
 * named does not answer, or if none answers.
 */
static int
cmd_direct(enum ctl_cmd c, const char *arg, const char *procname)
{
	const cJSON *v, *m;
	cJSON	    *reply, *all = NULL;
	enum role    procs[NPROCS];
	size_t	     n = 0, i;
	int	     answered = 0, failed = 0;

	if (procname != NULL)
		procs[n++] = proc_from_name(procname);
	else
		for (i = 0; i < NPROCS; i++)
			procs[n++] = all_procs[i];
	if (jflag && n > 1 && (all = cJSON_CreateObject()) == NULL)
		fatalx("out of memory");
	for (i = 0; i < n; i++) {
		if ((reply = request(procs[i], c, arg)) == NULL) {
			failed++;
			continue;
		}
		if (!reply_ok(procs[i], reply)) {
			failed++;
			cJSON_Delete(reply);
			continue;
		}
		answered++;
		if (jflag) {
			if (all != NULL)
				cJSON_AddItemToObject(all, role_name(procs[i]),
				    reply);
			else {
				print_json(reply);
				cJSON_Delete(reply);
			}
			continue;
		}
		if (c == CTL_show) {
			if (n > 1)
				printf("%s:\n", role_name(procs[i]));
			v = cJSON_GetObjectItemCaseSensitive(reply, "view");
			print_view(v, n > 1);
		} else if (c == CTL_stats) {
			v = cJSON_GetObjectItemCaseSensitive(reply, "metrics");
			cJSON_ArrayForEach(m, v) {
				/* Roles share metric names: say whose. */
				if (n > 1)
					printf("%s ", role_name(procs[i]));
				print_scalar(cJSON_GetArrayItem(m, 0));
				putchar(' ');
				print_scalar(cJSON_GetArrayItem(m, 1));
				putchar('\n');
			}
		} else
			printf("%s: log %s\n", role_name(procs[i]), arg);
		cJSON_Delete(reply);
	}
	if (all != NULL) {
		print_json(all);
		cJSON_Delete(all);
	}
	if (answered == 0 || (procname != NULL && failed))
		return 1;
	return 0;
}

/* Replaces *field, a string of a struct config, with a copy of v. */
static void
set_path(char **field, const char *v)
{
	char *c;

	if ((c = strdup(v)) == NULL)
		fatal("strdup");
	free(*field);
	*field = c;
}

/*
 * The data paths the relayd running in run_path reports, into cfg.
 * Returns 1, or 0 when no relayd answers there (said on stderr only when
 * its socket is there: it should have answered).
 */
static int
running_paths(struct config *cfg)
{
	const cJSON *v, *rel, *git;
	cJSON	    *reply;
	struct stat  st;
	char	     ep[PATH_MAX + 16];
	int	     rc = 0;

	if (chan_control_endpoint(run_path, ROLE_RELAYD, ep, sizeof(ep)) ==
		-1 ||
	    stat(ep + strlen("ipc://"), &st) == -1)
		return 0;
	if ((reply = request(ROLE_RELAYD, CTL_show, NULL)) == NULL)
		return 0;
	v = cJSON_GetObjectItemCaseSensitive(reply, "view");
	rel = cJSON_GetObjectItemCaseSensitive(v, "relay_data_path");
	git = cJSON_GetObjectItemCaseSensitive(v, "git_data_path");
	if (cJSON_IsString(rel) && cJSON_IsString(git)) {
		set_path(&cfg->relay_data_path, rel->valuestring);
		set_path(&cfg->git_data_path, git->valuestring);
		rc = 1;
	} else
		fprintf(stderr,
		    "graspctl: relayd in %s does not say where its data is (an older relayd?): name the configuration with -f\n",
		    run_path);
	cJSON_Delete(reply);
	return rc;
}

/*
 * Where export, import and backup work (graspctl.h, struct gctl_where):
 * -f's configuration; else -r's running relayd; else the environment's
 * NGIT_RELAY_DATA_PATH; else the relayd running in the run directory;
 * else the defaults.  Exits 1 when -f's file does not load, or -r names
 * a directory where no relayd answers.
 */
static void
data_where(const char *rflag, const char *file, struct gctl_where *w)
{
	const char *env = getenv("NGIT_RELAY_DATA_PATH");
	char	    err[1024];

	memset(w, 0, sizeof(*w));
	snprintf(w->cw_run, sizeof(w->cw_run), "%s", run_path);
	if (config_load(&w->cw_cfg, file, err, sizeof(err)) == -1) {
		fprintf(stderr, "graspctl: %s\n", err);
		config_free(&w->cw_cfg);
		exit(1);
	}
	if (file != NULL) {
		snprintf(w->cw_from, sizeof(w->cw_from),
		    "relay_data_path of %s", file);
		return;
	}
	if (rflag != NULL) {
		if (!running_paths(&w->cw_cfg)) {
			fprintf(stderr,
			    "graspctl: no relayd answers in %s: start graspd, or name its configuration with -f FILE\n",
			    run_path);
			config_free(&w->cw_cfg);
			exit(1);
		}
		snprintf(w->cw_from, sizeof(w->cw_from),
		    "where the relayd running in %s keeps it", run_path);
		return;
	}
	if (env != NULL && *env != '\0') {
		snprintf(w->cw_from, sizeof(w->cw_from),
		    "NGIT_RELAY_DATA_PATH");
		return;
	}
	if (running_paths(&w->cw_cfg))
		snprintf(w->cw_from, sizeof(w->cw_from),
		    "where the relayd running in %s keeps it", run_path);
	else
		snprintf(w->cw_from, sizeof(w->cw_from),
		    "the default relay_data_path; no relayd runs in %s",
		    run_path);
}

int
main(int argc, char *argv[])
{
	struct gctl_where w;
	const char	 *rflag = NULL, *file = NULL, *cmd;
	int		  ch;

	log_init("graspctl", 1);
	while ((ch = getopt(argc, argv, "+f:hjr:V")) != -1) {
		switch (ch) {
		case 'f':
			file = optarg;
			break;
		case 'j':
			jflag = 1;
			break;
		case 'r':
			rflag = optarg;
			break;
		case 'h':
			usage(0);
		case 'V':
			printf("graspctl %s\n", GRASPD_VERSION);
			exit(0);
		default:
			usage(GCTL_USAGE_EXIT);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage(GCTL_USAGE_EXIT);
	find_run_path(rflag, file);
	cmd = argv[0];

	switch (ctl_cmd_find(cmd)) {
	case CTL_status:
		if (argc == 1)
			return cmd_status();
		break;
	case CTL_reload:
		if (argc == 1)
			return cmd_supervisor(CTL_reload, NULL);
		break;
	case CTL_stop:
		if (argc == 1)
			return cmd_supervisor(CTL_shutdown, NULL);
		/* FALLTHROUGH */
	case CTL_start:
	case CTL_restart:
		if (argc != 2)
			break;
		if (proc_from_name(argv[1]) == ROLE_SUPERVISOR) {
			fprintf(stderr,
			    "graspctl: %s applies to a role; \"graspctl stop\" stops graspd\n",
			    cmd);
			return GCTL_USAGE_EXIT;
		}
		return cmd_supervisor(ctl_cmd_find(cmd), argv[1]);
	case CTL_log:
		if (argc != 2 && argc != 3)
			break;
		if (strcmp(argv[1], "verbose") != 0 &&
		    strcmp(argv[1], "brief") != 0) {
			fprintf(stderr,
			    "graspctl: log takes verbose or brief, not \"%.64s\"\n",
			    argv[1]);
			usage(GCTL_USAGE_EXIT);
		}
		return cmd_direct(CTL_log, argv[1], argc == 3 ? argv[2] : NULL);
	case CTL_show:
		if (argc == 2)
			return cmd_direct(CTL_show, NULL, argv[1]);
		break;
	case CTL_stats:
		if (argc == 1 || argc == 2)
			return cmd_direct(CTL_stats, NULL,
			    argc == 2 ? argv[1] : NULL);
		break;
	default:
		/* shutdown is for programs, not people. */
		break;
	}
	if (strcmp(cmd, "export") == 0 || strcmp(cmd, "import") == 0 ||
	    strcmp(cmd, "backup") == 0) {
		data_where(rflag, file, &w);
		ch = gctl_data(&w, argc, argv, jflag);
		config_free(&w.cw_cfg);
		if (ch == GCTL_USAGE_EXIT)
			usage(GCTL_USAGE_EXIT);
		return ch;
	}
	/* Name what was wrong before the whole usage. */
	if (ctl_cmd_find(cmd) == -1 || ctl_cmd_find(cmd) == CTL_shutdown)
		fprintf(stderr, "graspctl: unknown command \"%.64s\"\n", cmd);
	else
		fprintf(stderr, "graspctl: %s: wrong arguments\n", cmd);
	usage(GCTL_USAGE_EXIT);
}
