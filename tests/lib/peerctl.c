/*
 * peerctl.c: the test peer's control API from a test process (peerctl.h).
 */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "event.h"
#include "peerctl.h"
#include "relayproc.h"
#include "wsclient.h"

int
peerctl_seed(struct relayproc *p, struct event *const *evs, size_t n)
{
	struct buf b = BUF_INIT;
	size_t	   i;
	int	   rc;

	buf_adds(&b, "");
	for (i = 0; i < n; i++) {
		buf_add(&b, evs[i]->json, evs[i]->json_len);
		buf_addc(&b, '\n');
	}
	rc = relayproc_post(p, "/events", b.b_data, b.b_len);
	buf_free(&b);
	return rc;
}

int
peerctl_config(struct relayproc *p, const char *json)
{
	return relayproc_post(p, "/config", json, strlen(json));
}

int
peerctl_post(struct relayproc *p, const char *path, const char *body,
    char **resp)
{
	int status = -1;

	if (resp != NULL)
		*resp = NULL;
	if (http_request(relayproc_host(p), relayproc_port(p), "POST", path,
		"Content-Type: application/json\r\n", body, strlen(body),
		PEERCTL_TIMEOUT_MS, &status, NULL, resp, NULL) == -1)
		return -1;
	return status;
}

char *
peerctl_log_text(struct relayproc *p)
{
	char *body = NULL;
	int   status = 0;

	if (http_get(relayproc_host(p), relayproc_port(p), "/log", NULL,
		PEERCTL_TIMEOUT_MS, &status, NULL, &body) == 0 &&
	    status == 200)
		return body;
	free(body);
	return NULL;
}

cJSON *
peerctl_log(struct relayproc *p)
{
	char  *body = peerctl_log_text(p);
	cJSON *j;

	j = body != NULL ? cJSON_Parse(body) : NULL;
	free(body);
	return j;
}

int
peerctl_nreqs(struct relayproc *p)
{
	cJSON *log = peerctl_log(p);
	int    n;

	n = log ? cJSON_GetArraySize(cJSON_GetObjectItem(log, "reqs")) : 0;
	cJSON_Delete(log);
	return n;
}

int
peerctl_log_count(struct relayproc *p, const char *list)
{
	cJSON *log = peerctl_log(p);
	int    n = -1;

	if (log != NULL)
		n = cJSON_GetArraySize(cJSON_GetObjectItem(log, list));
	cJSON_Delete(log);
	return n;
}

int
peerctl_log_num(struct relayproc *p, const char *key)
{
	cJSON *log = peerctl_log(p), *v;
	int    n = -1;

	if (log != NULL && cJSON_IsNumber(v = cJSON_GetObjectItem(log, key)))
		n = (int)v->valuedouble;
	cJSON_Delete(log);
	return n;
}
