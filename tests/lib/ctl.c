/*
 * ctl.c: graspctl answers, role control sockets and /metrics samples for
 * the tests (ctl.h).
 */
#include <sys/wait.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nanomsg/nn.h>
#include <nanomsg/reqrep.h>

#include "buf.h"
#include "ctl.h"
#include "relayproc.h"
#include "wsclient.h"

/* Ours: how long a /metrics request may take. */
#define CTL_HTTP_TIMEOUT_MS 5000

int
ctl_run(const char *cmd, char **out)
{
	struct buf text = BUF_INIT;
	char	   chunk[4096];
	size_t	   n;
	FILE	  *f;
	int	   st;

	if ((f = popen(cmd, "r")) == NULL)
		return -1;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(&text, chunk, n);
	buf_adds(&text, "");
	st = pclose(f);
	if (out != NULL)
		*out = buf_release(&text, NULL);
	else
		buf_free(&text);
	return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

cJSON *
ctl_json(struct relayproc *rp, const char *args)
{
	const char *bin = getenv("GRASPD_BIN");
	char	    cmd[1200], *out = NULL;
	cJSON	   *j = NULL;

	if (bin == NULL || *bin == '\0')
		bin = "bin";
	snprintf(cmd, sizeof(cmd),
	    "'%s/graspctl' -j -r '%s/run' %s "
	    "2>/dev/null",
	    bin, relayproc_dir(rp), args);
	if (ctl_run(cmd, &out) == 0)
		j = cJSON_Parse(out);
	free(out);
	return j;
}

cJSON *
ctl_view_list(const cJSON *show, const char *name)
{
	return cJSON_GetObjectItem(cJSON_GetObjectItem(show, "view"), name);
}

cJSON *
ctl_by_relay(const cJSON *arr, const char *url)
{
	cJSON *o;
	size_t n = strlen(url);

	cJSON_ArrayForEach(o, arr) {
		const char *k =
		    cJSON_GetStringValue(cJSON_GetObjectItem(o, "relay"));

		if (k != NULL && strncmp(k, url, n) == 0 &&
		    strcmp(k + n, "/") == 0)
			return o;
	}
	return NULL;
}

double
ctl_num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

int
ctl_bool(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(o, key);

	return cJSON_IsBool(v) ? cJSON_IsTrue(v) : -1;
}

/* A REQ socket on endpoint ep with both timeouts; -1 if none. */
static int
ctl_req_sock(const char *ep, int tmo_ms)
{
	int s;

	if ((s = chan_open(NN_REQ, ep, 0)) == -1)
		return -1;
	nn_setsockopt(s, NN_SOL_SOCKET, NN_RCVTIMEO, &tmo_ms, sizeof(tmo_ms));
	nn_setsockopt(s, NN_SOL_SOCKET, NN_SNDTIMEO, &tmo_ms, sizeof(tmo_ms));
	return s;
}

/* A REQ socket on role's control socket with both timeouts; -1 if none. */
static int
ctl_role_sock(const char *run, enum role role, int tmo_ms)
{
	char ep[PATH_MAX + 64];

	if (chan_control_endpoint(run, role, ep, sizeof(ep)) == -1)
		return -1;
	return ctl_req_sock(ep, tmo_ms);
}

/* The parsed CONTROL_REPLY waiting on s, or NULL; closes s. */
static cJSON *
ctl_role_reply(int s)
{
	struct msg m;
	cJSON	  *rep = NULL;
	char	   why[160];

	if (msg_recv_client(s, &m, 0, why, sizeof(why)) == 1) {
		if (m.m_type == MSG_CONTROL_REPLY)
			rep = cJSON_ParseWithLength((const char *)m.m_data,
			    m.m_len);
		msg_free(&m);
	}
	chan_close(s);
	return rep;
}

cJSON *
ctl_role(const char *run, enum role role, enum msg_type type,
    const char *payload, int tmo_ms)
{
	return ctl_role_msg(run, role, type, payload, strlen(payload), tmo_ms);
}

cJSON *
ctl_role_msg(const char *run, enum role role, enum msg_type type,
    const void *payload, size_t len, int tmo_ms)
{
	int s;

	if ((s = ctl_role_sock(run, role, tmo_ms)) == -1)
		return NULL;
	if (msg_send(s, type, payload, len, 0) == -1) {
		chan_close(s);
		return NULL;
	}
	return ctl_role_reply(s);
}

cJSON *
ctl_chan_msg(const char *run, const char *chan, enum msg_type type,
    const void *payload, size_t len, int tmo_ms)
{
	char ep[PATH_MAX + 64];
	int  s;

	if (chan_endpoint(run, chan, ep, sizeof(ep)) == -1 ||
	    (s = ctl_req_sock(ep, tmo_ms)) == -1)
		return NULL;
	if (msg_send(s, type, payload, len, 0) == -1) {
		chan_close(s);
		return NULL;
	}
	return ctl_role_reply(s);
}

cJSON *
ctl_role_raw(const char *run, enum role role, const void *bytes, size_t n,
    int tmo_ms)
{
	int s;

	if ((s = ctl_role_sock(run, role, tmo_ms)) == -1)
		return NULL;
	if (nn_send(s, bytes, n, 0) != (int)n) {
		chan_close(s);
		return NULL;
	}
	return ctl_role_reply(s);
}

cJSON *
ctl_role_view(struct relayproc *rp, enum role role, const char *ready, int secs)
{
	char   run[PATH_MAX];
	cJSON *rep, *v;
	int    i;

	snprintf(run, sizeof(run), "%s/run", relayproc_dir(rp));
	for (i = 0; i < secs * 10; i++) {
		if ((rep = ctl_role(run, role, MSG_CONTROL,
			 "{\"cmd\":\"show\"}", 500)) != NULL) {
			v = cJSON_DetachItemFromObject(rep, "view");
			cJSON_Delete(rep);
			if (v != NULL &&
			    (ready == NULL ||
				cJSON_GetObjectItem(v, ready) != NULL))
				return v;
			cJSON_Delete(v);
		}
		usleep(100000);
	}
	return NULL;
}

const char *
ctl_str(const cJSON *o, const char *key)
{
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(o, key));

	return s != NULL ? s : "";
}

double
ctl_metric(struct relayproc *rp, const char *name)
{
	return ctl_metric_at(relayproc_host(rp), relayproc_port(rp), name);
}

double
ctl_metric_at(const char *host, int port, const char *name)
{
	char  *h = NULL, *body = NULL, *p, line[256];
	int    status = 0;
	double v = -1;

	snprintf(line, sizeof(line), "\n%s ", name);
	if (http_get(host, port, "/metrics", NULL, CTL_HTTP_TIMEOUT_MS, &status,
		&h, &body) == 0 &&
	    status == 200 && (p = strstr(body, line)) != NULL)
		v = strtod(p + strlen(line), NULL);
	free(h);
	free(body);
	return v;
}
