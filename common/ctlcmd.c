/*
 * ctlcmd.c: the control command list and the control-socket server of
 * graspd, relayd and the roles (see ctlcmd.h).
 */
#include <errno.h>
#include <nanomsg/nn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctlcmd.h"
#include "log.h"
#include "msg.h"

#define CTL_BIT_Y 1
#define CTL_BIT_N 0

static const struct {
	const char *name;
	int	    lo, hi;
	unsigned    who; /* 1 graspd, 2 relayd, 4 the roles */
} ctl_cmds[CTL_NCMDS] = {
#define CTL_ROW(id, nm, l, h, sup, relay, role) \
	[CTL_##id] = { nm, l, h, \
		CTL_BIT_##sup | CTL_BIT_##relay << 1 | CTL_BIT_##role << 2 },
	CTL_CMD_LIST(CTL_ROW)
#undef CTL_ROW
};

const char *
ctl_cmd_name(enum ctl_cmd c)
{
	return (unsigned)c < CTL_NCMDS ? ctl_cmds[c].name : NULL;
}

int
ctl_cmd_find(const char *name)
{
	int c;

	for (c = 0; c < CTL_NCMDS; c++)
		if (strcmp(ctl_cmds[c].name, name) == 0)
			return c;
	return -1;
}

int
ctl_cmd_answers(enum ctl_cmd c, enum role p)
{
	unsigned bit;

	if ((unsigned)c >= CTL_NCMDS)
		return 0;
	switch (p) {
	case ROLE_SUPERVISOR:
		bit = 1;
		break;
	case ROLE_RELAYD:
		bit = 2;
		break;
	case ROLE_SYNCD:
	case ROLE_DISCOVERYD:
	case ROLE_HISTORYD:
		bit = 4;
		break;
	default:
		return 0;
	}
	return (ctl_cmds[c].who & bit) != 0;
}

int
ctl_log_level(const char *arg, enum log_level configured, cJSON *reply,
    char *err, size_t errlen)
{
	static const char *names[] = { "error", "warn", "info", "debug" };
	enum log_level	   lvl;

	if (strcmp(arg, "verbose") == 0)
		lvl = LOG_LVL_DEBUG;
	else if (strcmp(arg, "brief") == 0)
		/* Back to the configured level, but no chattier than
		 * info: "brief" must not mean debug. */
		lvl = configured < LOG_LVL_INFO ? configured : LOG_LVL_INFO;
	else {
		snprintf(err, errlen, "usage: log verbose|brief");
		return -1;
	}
	log_setlevel(lvl);
	log_info("log level now %s", names[lvl]);
	if (cJSON_AddStringToObject(reply, "level", names[lvl]) == NULL)
		fatalx("control: out of memory");
	return 0;
}

/* The reply to one received message m (NULL: malformed, why says so). */
static cJSON *
ctl_answer(const struct msg *m, const char *why, enum role self,
    const ctl_fn fns[CTL_NCMDS], void *arg)
{
	cJSON	   *doc = NULL, *cmd, *args, *a, *reply;
	const char *argv[CTL_MAX_ARGS + 1];
	char	    err[1024] = "";
	int	    argc = 0, c;

	if ((reply = cJSON_CreateObject()) == NULL ||
	    cJSON_AddTrueToObject(reply, "ok") == NULL)
		fatalx("control: out of memory");
	if (m == NULL) {
		snprintf(err, sizeof(err), "%s", why);
		goto done;
	}
	if (m->m_type != MSG_CONTROL) {
		snprintf(err, sizeof(err), "unexpected %s message",
		    msg_type_name(m->m_type));
		goto done;
	}
	doc = cJSON_ParseWithLength((const char *)m->m_data, m->m_len);
	cmd = cJSON_IsObject(doc) ?
	    cJSON_GetObjectItemCaseSensitive(doc, "cmd") :
	    NULL;
	if (!cJSON_IsString(cmd)) {
		snprintf(err, sizeof(err),
		    "request must be a JSON object with a \"cmd\" string");
		goto done;
	}
	args = cJSON_GetObjectItemCaseSensitive(doc, "args");
	if (args != NULL && !cJSON_IsArray(args) && !cJSON_IsNull(args)) {
		snprintf(err, sizeof(err), "\"args\" is not an array");
		goto done;
	}
	cJSON_ArrayForEach(a, args) {
		if (!cJSON_IsString(a) || argc == CTL_MAX_ARGS) {
			snprintf(err, sizeof(err),
			    "\"args\" must be at most %d strings",
			    CTL_MAX_ARGS);
			goto done;
		}
		argv[argc++] = a->valuestring;
	}
	argv[argc] = NULL;
	if ((c = ctl_cmd_find(cmd->valuestring)) == -1) {
		snprintf(err, sizeof(err), "unknown command \"%.64s\"",
		    cmd->valuestring);
		goto done;
	}
	if (!ctl_cmd_answers(c, self) || fns[c] == NULL) {
		snprintf(err, sizeof(err), "\"%s\" is not a command of %s",
		    ctl_cmds[c].name, role_name(self));
		goto done;
	}
	if (argc < ctl_cmds[c].lo || argc > ctl_cmds[c].hi) {
		snprintf(err, sizeof(err),
		    "%s takes %d to %d arguments, not %d", ctl_cmds[c].name,
		    ctl_cmds[c].lo, ctl_cmds[c].hi, argc);
		goto done;
	}
	log_debug("control: %s", ctl_cmds[c].name);
	if (fns[c](arg, argc, argv, reply, err, sizeof(err)) == -1 &&
	    err[0] == '\0')
		snprintf(err, sizeof(err), "%s failed", ctl_cmds[c].name);
done:
	cJSON_Delete(doc);
	if (err[0] != '\0') {
		log_debug("control: answering an error: %s", err);
		cJSON_Delete(reply);
		if ((reply = cJSON_CreateObject()) == NULL ||
		    cJSON_AddFalseToObject(reply, "ok") == NULL ||
		    cJSON_AddStringToObject(reply, "error", err) == NULL)
			fatalx("control: out of memory");
	}
	return reply;
}

int
ctl_serve(int sock, enum role self, const ctl_fn fns[CTL_NCMDS], void *arg,
    int max)
{
	struct msg m;
	cJSON	  *reply;
	char	   why[160], *text;
	int	   r, n = 0;

	while (max == 0 || n < max) {
		/* A client, not a sibling: malformed is answered. */
		r = msg_recv_client(sock, &m, NN_DONTWAIT, why, sizeof(why));
		if (r == 0)
			break;
		if (r == -1) {
			if (errno == EINTR)
				continue;
			log_warn("control: receive");
			break;
		}
		n++;
		reply = ctl_answer(r == 1 ? &m : NULL, why, self, fns, arg);
		msg_free(&m);
		if ((text = cJSON_PrintUnformatted(reply)) == NULL)
			fatalx("control: out of memory");
		cJSON_Delete(reply);
		if (msg_send(sock, MSG_CONTROL_REPLY, text, strlen(text),
			NN_DONTWAIT) == -1)
			log_warn("control: reply");
		free(text);
	}
	return n;
}

const char *
ctl_jstr(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

double
ctl_jnum(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}
