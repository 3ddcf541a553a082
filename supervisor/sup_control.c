/*
 * sup_control.c: graspd's control socket, a nanomsg REP socket at
 * ipc://RUN/control-graspd.ipc served from the supervisor's loop.
 * Requests are CONTROL messages with a JSON payload
 * {"cmd":"...","args":["..."]}; every request gets one CONTROL_REPLY,
 * {"ok":true,...} or {"ok":false,"error":"..."}.
 *
 * graspctl is a client, not a sibling: a malformed request gets an error
 * reply and never ends the supervisor, so requests are read here rather
 * than with msg_recv(), which treats a bad header as a fatal bug.
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

#include "log.h"
#include "msg.h"
#include "supervisor.h"

/* Ours: no command takes more. */
#define CTL_MAX_ARGS	4

struct ctl_cmd {
	const char	*cc_name;
	int		 cc_minargs, cc_maxargs;
	int		 cc_when_stopping;	/* allowed during shutdown */
	int		 (*cc_fn)(int, const char **, cJSON *, char *, size_t);
};

static char	ctl_path[PATH_MAX + 16];	/* the socket file */

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
	struct sup_role	*r;

	if ((r = sup_role_find(name)) == NULL)
		snprintf(err, errlen, "unknown role \"%s\" (relayd, syncd, "
		    "discoveryd or historyd)", name);
	return r;
}

static cJSON *
role_json(const struct sup_role *r)
{
	cJSON	*o;

	if ((o = cJSON_CreateObject()) == NULL)
		fatalx("control: out of memory");
	add_str(o, "role", r->rl_name);
	add_str(o, "state", sup_state_name(r->rl_state));
	/* null, not 0: "kill $pid" on 0 would hit the caller's group. */
	if (r->rl_pid > 0)
		add_num(o, "pid", r->rl_pid);
	else
		add(o, "pid", cJSON_CreateNull());
	add_num(o, "uptime", (long)sup_role_uptime(r));
	add_num(o, "restarts", r->rl_restarts);
	add_str(o, "last_exit", r->rl_last_exit);
	add_str(o, "reason", r->rl_reason);
	return o;
}

static int
ctl_status(int argc, const char **argv, cJSON *reply, char *err,
    size_t errlen)
{
	cJSON	*roles;
	int	 i;

	add_num(reply, "pid", getpid());
	add_num(reply, "uptime", (long)(sup_now() - sv->sv_started));
	roles = add(reply, "roles", cJSON_CreateArray());
	for (i = 0; i < SUP_NROLES; i++)
		if (!cJSON_AddItemToArray(roles, role_json(&sv->sv_roles[i])))
			fatalx("control: out of memory");
	return 0;
}

static int
ctl_show(int argc, const char **argv, cJSON *reply, char *err,
    size_t errlen)
{
	static const char	*lvl[] = { "error", "warn", "info", "debug" };
	const struct sup_role	*r;
	cJSON			*view, *roles;
	char			 line[512];
	int			 i, l = (int)log_getlevel();

	view = add(reply, "view", cJSON_CreateObject());
	add_num(view, "pid", getpid());
	add_num(view, "uptime", (long)(sup_now() - sv->sv_started));
	add_str(view, "configuration", sv->sv_conffile ? sv->sv_conffile :
	    "defaults and environment");
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
ctl_stats(int argc, const char **argv, cJSON *reply, char *err,
    size_t errlen)
{
	add_str(reply, "role", "graspd");
	add_num(reply, "pid", getpid());
	sup_stats_metrics(add(reply, "metrics", cJSON_CreateArray()));
	return 0;
}

static int
ctl_log(int argc, const char **argv, cJSON *reply, char *err, size_t errlen)
{
	static const char	*names[] = { "error", "warn", "info", "debug" };
	enum log_level		 lvl;

	if (strcmp(argv[0], "verbose") == 0)
		lvl = LOG_LVL_DEBUG;
	else if (strcmp(argv[0], "brief") == 0)
		/* As the roles do: the configured level, at most info. */
		lvl = sv->sv_cfg.log_level < LOG_LVL_INFO ?
		    sv->sv_cfg.log_level : LOG_LVL_INFO;
	else {
		snprintf(err, errlen, "log takes \"verbose\" or \"brief\", "
		    "not \"%s\"", argv[0]);
		return -1;
	}
	log_setlevel(lvl);
	log_info("log level now %s", names[lvl]);
	add_str(reply, "level", names[lvl]);
	return 0;
}

static int
ctl_start(int argc, const char **argv, cJSON *reply, char *err,
    size_t errlen)
{
	struct sup_role	*r;

	if ((r = arg_role(argv[0], err, errlen)) == NULL)
		return -1;
	log_info("control: start %s", r->rl_name);
	sup_role_start(r);
	add_str(reply, "state", sup_state_name(r->rl_state));
	return 0;
}

static int
ctl_shutdown(int argc, const char **argv, cJSON *reply, char *err,
    size_t errlen)
{
	log_info("control: shutdown");
	add_num(reply, "pid", getpid());
	sup_shutdown(0);
	return 0;
}

static int
ctl_stop(int argc, const char **argv, cJSON *reply, char *err, size_t errlen)
{
	struct sup_role	*r;

	/* Like every process's "stop": without a role, graspd itself. */
	if (argc == 0)
		return ctl_shutdown(argc, argv, reply, err, errlen);
	if (sv->sv_shutdown) {
		snprintf(err, errlen, "graspd is shutting down");
		return -1;
	}
	if ((r = arg_role(argv[0], err, errlen)) == NULL)
		return -1;
	log_info("control: stop %s", r->rl_name);
	sup_role_stop(r);
	add_str(reply, "state", sup_state_name(r->rl_state));
	return 0;
}

static int
ctl_restart(int argc, const char **argv, cJSON *reply, char *err,
    size_t errlen)
{
	struct sup_role	*r;

	if ((r = arg_role(argv[0], err, errlen)) == NULL)
		return -1;
	log_info("control: restart %s", r->rl_name);
	sup_role_restart(r);
	add_str(reply, "state", sup_state_name(r->rl_state));
	return 0;
}

static int
ctl_reload(int argc, const char **argv, cJSON *reply, char *err,
    size_t errlen)
{
	int	changed;

	log_info("control: reload");
	if (sup_reload(&changed, err, errlen) == -1)
		return -1;
	add(reply, "changed", cJSON_CreateBool(changed));
	return 0;
}

static const struct ctl_cmd ctl_cmds[] = {
	{ "status",	0, 0, 1, ctl_status },
	{ "show",	0, 1, 1, ctl_show },
	{ "stats",	0, 0, 1, ctl_stats },
	{ "log",	1, 1, 1, ctl_log },
	{ "start",	1, 1, 0, ctl_start },
	{ "stop",	0, 1, 1, ctl_stop },
	{ "restart",	1, 1, 0, ctl_restart },
	{ "reload",	0, 0, 0, ctl_reload },
	{ "shutdown",	0, 0, 1, ctl_shutdown },
};

/* Answers one request; req/len are the raw message, header included. */
static void
ctl_handle(const void *req, size_t len)
{
	const struct ctl_cmd	*cc = NULL;
	struct msg_hdr		 h;
	cJSON			*doc = NULL, *cmd, *args, *a, *reply;
	const char		*argv[CTL_MAX_ARGS + 1];
	char			 err[1024] = "", *text;
	size_t			 i;
	int			 argc = 0;

	if ((reply = cJSON_CreateObject()) == NULL ||
	    cJSON_AddTrueToObject(reply, "ok") == NULL)
		fatalx("control: out of memory");
	if (len < sizeof(h)) {
		snprintf(err, sizeof(err), "malformed request: %zu bytes",
		    len);
		goto done;
	}
	memcpy(&h, req, sizeof(h));
	if (h.mh_magic != MSG_MAGIC || h.mh_version != MSG_VERSION ||
	    h.mh_type != MSG_CONTROL || h.mh_len != len - sizeof(h)) {
		snprintf(err, sizeof(err), "malformed request header");
		goto done;
	}
	doc = cJSON_ParseWithLength((const char *)req + sizeof(h), h.mh_len);
	if (doc == NULL || !cJSON_IsObject(doc)) {
		snprintf(err, sizeof(err), "the request is not a JSON object");
		goto done;
	}
	cmd = cJSON_GetObjectItemCaseSensitive(doc, "cmd");
	if (!cJSON_IsString(cmd)) {
		snprintf(err, sizeof(err), "the request has no \"cmd\"");
		goto done;
	}
	args = cJSON_GetObjectItemCaseSensitive(doc, "args");
	if (args != NULL && !cJSON_IsArray(args) && !cJSON_IsNull(args)) {
		snprintf(err, sizeof(err), "\"args\" is not an array");
		goto done;
	}
	cJSON_ArrayForEach(a, args) {
		if (!cJSON_IsString(a) || argc == CTL_MAX_ARGS) {
			snprintf(err, sizeof(err), "\"args\" must be at most "
			    "%d strings", CTL_MAX_ARGS);
			goto done;
		}
		argv[argc++] = a->valuestring;
	}
	argv[argc] = NULL;
	for (i = 0; i < sizeof(ctl_cmds) / sizeof(ctl_cmds[0]); i++)
		if (strcmp(ctl_cmds[i].cc_name, cmd->valuestring) == 0)
			cc = &ctl_cmds[i];
	if (cc == NULL) {
		snprintf(err, sizeof(err), "unknown command \"%.64s\"",
		    cmd->valuestring);
		goto done;
	}
	if (argc < cc->cc_minargs || argc > cc->cc_maxargs) {
		snprintf(err, sizeof(err), "%s takes %d to %d arguments, not "
		    "%d", cc->cc_name, cc->cc_minargs, cc->cc_maxargs, argc);
		goto done;
	}
	if (sv->sv_shutdown && !cc->cc_when_stopping) {
		snprintf(err, sizeof(err), "graspd is shutting down");
		goto done;
	}
	log_debug("control: %s", cc->cc_name);
	if (cc->cc_fn(argc, argv, reply, err, sizeof(err)) == -1 &&
	    err[0] == '\0')
		snprintf(err, sizeof(err), "%s failed", cc->cc_name);
done:
	if (err[0] != '\0') {
		log_debug("control: answering an error: %s", err);
		cJSON_Delete(reply);
		if ((reply = cJSON_CreateObject()) == NULL ||
		    cJSON_AddFalseToObject(reply, "ok") == NULL ||
		    cJSON_AddStringToObject(reply, "error", err) == NULL)
			fatalx("control: out of memory");
	}
	if ((text = cJSON_PrintUnformatted(reply)) == NULL)
		fatalx("control: out of memory");
	if (msg_send(sv->sv_ctl, MSG_CONTROL_REPLY, text, strlen(text),
	    NN_DONTWAIT) == -1)
		log_warn("control: cannot send a reply");
	free(text);
	cJSON_Delete(reply);
	cJSON_Delete(doc);
}

static void
ctl_read_cb(evutil_socket_t fd, short what, void *arg)
{
	void	*nb;
	int	 n;

	for (;;) {
		nb = NULL;
		n = nn_recv(sv->sv_ctl, &nb, NN_MSG, NN_DONTWAIT);
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				log_warn("control: nn_recv");
			return;
		}
		ctl_handle(nb, (size_t)n);
		nn_freemsg(nb);
	}
}

int
sup_control_open(char *err, size_t errlen)
{
	char	ep[PATH_MAX + 16];
	int	fd;

	if (chan_control_endpoint(sv->sv_cfg.run_path, ROLE_SUPERVISOR, ep,
	    sizeof(ep)) == -1) {
		snprintf(err, errlen, "run_path too long: %s",
		    sv->sv_cfg.run_path);
		return -1;
	}
	if ((sv->sv_ctl = chan_open(NN_REP, ep, 1)) == -1) {
		snprintf(err, errlen, "%s: %s", ep, nn_strerror(nn_errno()));
		return -1;
	}
	snprintf(ctl_path, sizeof(ctl_path), "%s", ep + strlen("ipc://"));
	/* It can stop everything: only root and the group connect. */
	if (chmod(ctl_path, 0660) == -1)
		log_warn("chmod %s", ctl_path);
	/* Dropping privileges: the roles' user alone (and root). */
	sup_priv_socket(ctl_path);
	if ((fd = chan_rcvfd(sv->sv_ctl)) == -1) {
		snprintf(err, errlen, "NN_RCVFD: %s", nn_strerror(nn_errno()));
		return -1;
	}
	sv->sv_ctl_ev = sup_event_new(fd, EV_READ | EV_PERSIST, ctl_read_cb,
	    NULL);
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
	if (sv->sv_ctl_ev != NULL) {
		sup_event_free(sv->sv_ctl_ev);
		sv->sv_ctl_ev = NULL;
	}
	if (sv->sv_ctl != -1) {
		chan_close(sv->sv_ctl);
		sv->sv_ctl = -1;
		unlink(ctl_path);
	}
}
