/*
 * sup_control.c: graspd's control socket, a nanomsg REP socket at
 * ipc://RUN/control-graspd.ipc served from the supervisor's loop.
 * Requests are CONTROL messages with a JSON payload
 * {"cmd":"...","args":["..."]}; every request gets one CONTROL_REPLY,
 * {"ok":true,...} or {"ok":false,"error":"..."}.
 *
 * graspctl is a client, not a sibling: a malformed request gets an error
 * reply and never ends the supervisor (ctl_serve(), ctlcmd.h, shared
 * with relayd and the roles).
 */
#include <sys/stat.h>

#include <cjson/cJSON.h>
#include <errno.h>
#include <event2/event.h>
#include <limits.h>
#include <nanomsg/nn.h>
#include <nanomsg/reqrep.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctlcmd.h"
#include "log.h"
#include "msg.h"
#include "supervisor.h"

static char ctl_path[PATH_MAX + 16]; /* the socket file */

static cJSON *
add(cJSON *obj, const char *key, cJSON *item)
{
	if (item == NULL || !cJSON_AddItemToObject(obj, key, item))
		fatalx("control: out of memory");
	return item;
}

static void
add_num(cJSON *obj, const char *key, double v)
{
	add(obj, key, cJSON_CreateNumber(v));
}

static void
add_str(cJSON *obj, const char *key, const char *s)
{
	add(obj, key, cJSON_CreateString(s));
}

static struct sup_role *
arg_role(const char *name, char *err, size_t errlen)
{
	struct sup_role *r;

	if ((r = sup_role_find(name)) == NULL)
		snprintf(err, errlen,
		    "unknown role \"%s\" (relayd, syncd, discoveryd or historyd)",
		    name);
	return r;
}

static cJSON *
role_json(const struct sup_role *r)
{
	cJSON *o;
	char   last[64];

	if ((o = cJSON_CreateObject()) == NULL)
		fatalx("control: out of memory");
	add_str(o, "role", r->rl_name);
	add_str(o, "state", sup_state_name(r->rl_state));
	/* null, not 0: "kill $pid" on 0 would hit the caller's group. */
	if (r->rl_pid > 0)
		add_num(o, "pid", r->rl_pid);
	else
		add(o, "pid", cJSON_CreateNull());
	sup_stats_role_show(r, o);
	sup_policy_exit_text(r->rl_last_status, last, sizeof(last));
	add_str(o, "last_exit", last);
	add_str(o, "reason", r->rl_reason);
	return o;
}

static int
ctl_status(void *arg, int argc, const char **argv, cJSON *reply, char *err,
    size_t errlen)
{
	cJSON *roles;
	int    i;

	add_num(reply, "pid", getpid());
	sup_stats_show(reply);
	roles = add(reply, "roles", cJSON_CreateArray());
	for (i = 0; i < SUP_NROLES; i++)
		if (!cJSON_AddItemToArray(roles, role_json(&sv->sv_roles[i])))
			fatalx("control: out of memory");
	return 0;
}

static int
ctl_show(void *arg, int argc, const char **argv, cJSON *reply, char *err,
    size_t errlen)
{
	static const char     *lvl[] = { "error", "warn", "info", "debug" };
	const struct sup_role *r;
	cJSON		      *view, *roles;
	char		       line[512];
	int		       i, l = (int)log_getlevel();

	view = add(reply, "view", cJSON_CreateObject());
	add_num(view, "pid", getpid());
	sup_stats_show(view);
	add_str(view, "configuration",
	    sv->sv_conffile ? sv->sv_conffile : "defaults and environment");
	add_str(view, "run_path", sv->sv_cfg.run_path);
	add_str(view, "libexec", sv->sv_libexec);
	add_str(view, "log_level", l >= 0 && l <= 3 ? lvl[l] : "info");
	add(view, "test", cJSON_CreateBool(sv->sv_cfg.test));
	add(view, "starting", cJSON_CreateBool(sv->sv_booting));
	add(view, "stopping", cJSON_CreateBool(sv->sv_shutdown));
	roles = add(view, "roles", cJSON_CreateObject());
	for (i = 0; i < SUP_NROLES; i++) {
		r = &sv->sv_roles[i];
		if (r->rl_pid > 0)
			snprintf(line, sizeof(line), "%s, pid %d, up %ld s",
			    sup_state_name(r->rl_state), (int)r->rl_pid,
			    (long)sup_role_uptime(r));
		else
			snprintf(line, sizeof(line), "%s%s%s",
			    sup_state_name(r->rl_state),
			    r->rl_reason[0] ? ": " : "", r->rl_reason);
		add_str(roles, r->rl_name, line);
	}
	return 0;
}

static int
ctl_stats(void *arg, int argc, const char **argv, cJSON *reply, char *err,
    size_t errlen)
{
	add_str(reply, "role", "graspd");
	add_num(reply, "pid", getpid());
	sup_stats_metrics(add(reply, "metrics", cJSON_CreateArray()));
	return 0;
}

static int
ctl_log(void *arg, int argc, const char **argv, cJSON *reply, char *err,
    size_t errlen)
{
	return ctl_log_level(argv[0], sv->sv_cfg.log_level, reply, err, errlen);
}

/* -1 with err while graspd shuts down: it starts nothing then. */
static int
ctl_refuse_stopping(char *err, size_t errlen)
{
	if (!sv->sv_shutdown)
		return 0;
	snprintf(err, errlen, "graspd is shutting down");
	return -1;
}

/*
 * start, stop and restart of one role: verb on the role named by name,
 * whose state goes in reply.  -1 with err while graspd shuts down or for
 * an unknown role.
 */
static int
ctl_role_do(const char *verb, void (*fn)(struct sup_role *), const char *name,
    cJSON *reply, char *err, size_t errlen)
{
	struct sup_role *r;

	if (ctl_refuse_stopping(err, errlen) == -1)
		return -1;
	if ((r = arg_role(name, err, errlen)) == NULL)
		return -1;
	log_info("control: %s %s", verb, r->rl_name);
	fn(r);
	add_str(reply, "state", sup_state_name(r->rl_state));
	return 0;
}

static int
ctl_start(void *arg, int argc, const char **argv, cJSON *reply, char *err,
    size_t errlen)
{
	return ctl_role_do("start", sup_role_start, argv[0], reply, err,
	    errlen);
}

static int
ctl_shutdown(void *arg, int argc, const char **argv, cJSON *reply, char *err,
    size_t errlen)
{
	log_info("control: shutdown");
	add_num(reply, "pid", getpid());
	sup_shutdown(0);
	return 0;
}

static int
ctl_stop(void *arg, int argc, const char **argv, cJSON *reply, char *err,
    size_t errlen)
{
	/* Like every process's "stop": without a role, graspd itself. */
	if (argc == 0)
		return ctl_shutdown(arg, argc, argv, reply, err, errlen);
	return ctl_role_do("stop", sup_role_stop, argv[0], reply, err, errlen);
}

static int
ctl_restart(void *arg, int argc, const char **argv, cJSON *reply, char *err,
    size_t errlen)
{
	return ctl_role_do("restart", sup_role_restart, argv[0], reply, err,
	    errlen);
}

static int
ctl_reload(void *arg, int argc, const char **argv, cJSON *reply, char *err,
    size_t errlen)
{
	int changed;

	if (ctl_refuse_stopping(err, errlen) == -1)
		return -1;
	log_info("control: reload");
	if (sup_reload(&changed, err, errlen) == -1)
		return -1;
	add(reply, "changed", cJSON_CreateBool(changed));
	return 0;
}

/* graspd's column of ctlcmd.h's list. */
static const ctl_fn ctl_fns[CTL_NCMDS] = { CTL_CMD_LIST(CTL_COL_SUP) };

static void
ctl_read_cb(evutil_socket_t fd, short what, void *arg)
{
	ctl_serve(sv->sv_ctl, ROLE_SUPERVISOR, ctl_fns, NULL, 0);
}

int
sup_control_open(char *err, size_t errlen)
{
	struct stat st;
	char	    ep[PATH_MAX + 16];
	mode_t	    mask;
	int	    fd;

	if (chan_control_endpoint(sv->sv_cfg.run_path, ROLE_SUPERVISOR, ep,
		sizeof(ep)) == -1) {
		snprintf(err, errlen, "run_path too long: %s",
		    sv->sv_cfg.run_path);
		return -1;
	}
	/*
	 * It can stop everything: only root and the group connect, or,
	 * dropping privileges, the roles' user alone (and root).  Made so
	 * by the bind itself: the run directory is the user's, and a chown
	 * or chmod by name there would follow a link they put in its place.
	 */
	mask = sup_priv_bind_begin();
	sv->sv_ctl = chan_open(NN_REP, ep, 1);
	sup_priv_bind_end(mask);
	if (sv->sv_ctl == -1) {
		snprintf(err, errlen, "%s: %s", ep, nn_strerror(nn_errno()));
		return -1;
	}
	snprintf(ctl_path, sizeof(ctl_path), "%s", ep + strlen("ipc://"));
	if (lstat(ctl_path, &st) == -1 || !S_ISSOCK(st.st_mode) ||
	    st.st_uid != sup_priv_uid())
		log_warnx(
		    "control socket %s: not the socket of uid %u that graspd bound",
		    ctl_path, (unsigned)sup_priv_uid());
	if ((fd = chan_rcvfd(sv->sv_ctl)) == -1) {
		snprintf(err, errlen, "NN_RCVFD: %s", nn_strerror(nn_errno()));
		return -1;
	}
	sv->sv_ctl_ev =
	    sup_event_new(fd, EV_READ | EV_PERSIST, ctl_read_cb, NULL);
	if (event_add(sv->sv_ctl_ev, NULL) == -1) {
		snprintf(err, errlen, "cannot watch the control socket");
		return -1;
	}
	log_debug("control socket %s", ep);
	return sup_stats_open(err, errlen);
}

void
sup_control_close(void)
{
	sup_stats_close();
	sup_event_free(sv->sv_ctl_ev);
	sv->sv_ctl_ev = NULL;
	if (sv->sv_ctl != -1) {
		chan_close(sv->sv_ctl);
		sv->sv_ctl = -1;
		unlink(ctl_path);
	}
}
