/*
 * ctl.c: graspctl answers and /metrics samples for the tests (ctl.h).
 */
#include <sys/wait.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "ctl.h"
#include "relayproc.h"
#include "wsclient.h"

/* Ours: how long a /metrics request may take. */
#define CTL_HTTP_TIMEOUT_MS	5000

int
ctl_run(const char *cmd, char **out)
{
	struct buf	 text = BUF_INIT;
	char		 chunk[4096];
	size_t		 n;
	FILE		*f;
	int		 st;

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
	const char	*bin = getenv("GRASPD_BIN");
	char		 cmd[1200], *out = NULL;
	cJSON		*j = NULL;

	if (bin == NULL || *bin == '\0')
		bin = "bin";
	snprintf(cmd, sizeof(cmd), "'%s/graspctl' -j -r '%s/run' %s "
	    "2>/dev/null", bin, relayproc_dir(rp), args);
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
	cJSON	*o;
	size_t	 n = strlen(url);

	cJSON_ArrayForEach(o, arr) {
		const char *k = cJSON_GetStringValue(cJSON_GetObjectItem(o,
		    "relay"));

		if (k != NULL && strncmp(k, url, n) == 0 &&
		    strcmp(k + n, "/") == 0)
			return o;
	}
	return NULL;
}

double
ctl_num(const cJSON *o, const char *key)
{
	const cJSON	*v = cJSON_GetObjectItem(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

const char *
ctl_str(const cJSON *o, const char *key)
{
	const char	*s = cJSON_GetStringValue(cJSON_GetObjectItem(o, key));

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
	char	*h = NULL, *body = NULL, *p, line[256];
	int	 status = 0;
	double	 v = -1;

	snprintf(line, sizeof(line), "\n%s ", name);
	if (http_get(host, port, "/metrics",
	    NULL, CTL_HTTP_TIMEOUT_MS, &status, &h, &body) == 0 &&
	    status == 200 && (p = strstr(body, line)) != NULL)
		v = strtod(p + strlen(line), NULL);
	free(h);
	free(body);
	return v;
}
