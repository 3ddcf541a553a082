/*
 * nostr.c: NIP-01 client conveniences of the integration tests and the
 * benchmarks (see nostr.h).  Runs in the test process, over wsclient.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "buf.h"
#include "conn.h"
#include "event.h"
#include "json.h"
#include "log.h"
#include "nostr.h"
#include "wsclient.h"

/* Strings equal, given the parsed one with its length. */
static int
jstr_is(const struct json *j, const char *s)
{
	return j != NULL && j->type == JSON_STRING && j->len == strlen(s) &&
	    memcmp(j->s, s, j->len) == 0;
}

static char *
jstr_dup(const struct json *j)
{
	char *p;

	if (j == NULL || j->type != JSON_STRING)
		return NULL;
	if ((p = malloc(j->len + 1)) == NULL)
		fatal("nostr: malloc");
	memcpy(p, j->s, j->len);
	p[j->len] = '\0';
	return p;
}

char *
nostr_json_text(const struct json *j)
{
	struct buf b = BUF_INIT;

	json_write(&b, j);
	return buf_release(&b, NULL);
}

/*
 * Receives relay messages until one parses as a JSON array with a string
 * first element, or the deadline.  *docp, the document of the message
 * read before (or NULL), is freed first, so a loop over the messages
 * frees only the last one.  Returns that array, its document in *docp
 * (caller frees with json_free), or NULL.
 */
static struct json *
next_msg(struct wsc *w, int64_t deadline, struct json_doc **docp)
{
	struct json *root;
	char	     err[128], *m;
	size_t	     len;
	int64_t	     left;

	json_free(*docp);
	*docp = NULL;
	for (;;) {
		left = deadline - wsc_now_ms();
		if ((m = wsc_recv(w, left > 0 ? (int)left : 0, &len)) == NULL)
			return NULL;
		root = json_parse(m, len, docp, err, sizeof(err));
		if (root == NULL)
			fprintf(stderr,
			    "# nostr: unparsable relay message "
			    "(%s): %.200s\n",
			    err, m);
		free(m);
		if (root != NULL && root->type == JSON_ARRAY &&
		    root->child != NULL && root->child->type == JSON_STRING)
			return root;
		json_free(*docp);
		*docp = NULL;
	}
}

char *
nostr_event_msg(const struct event *ev)
{
	struct buf b = BUF_INIT;

	buf_adds(&b, "[\"EVENT\",");
	buf_add(&b, ev->json, ev->json_len);
	buf_addc(&b, ']');
	return buf_release(&b, NULL);
}

/* Sends [verb, event_json] and waits for the OK naming id_hex. */
static int
send_for_ok(struct wsc *w, const char *verb, const char *event_json,
    const char *id_hex, int timeout_ms, int *ok, char **message)
{
	struct buf	 b = BUF_INIT;
	struct json_doc *doc = NULL;
	struct json	*m, *st;
	int64_t		 deadline = wsc_now_ms() + timeout_ms;
	int		 rc = -1;

	if (message != NULL)
		*message = NULL;
	buf_printf(&b, "[\"%s\",", verb);
	buf_adds(&b, event_json);
	buf_addc(&b, ']');
	if (wsc_send_text(w, b.b_data, b.b_len) == -1)
		goto done;
	while ((m = next_msg(w, deadline, &doc)) != NULL) {
		st = json_at(m, 2);
		if (jstr_is(m->child, "OK") && jstr_is(json_at(m, 1), id_hex) &&
		    st != NULL &&
		    (st->type == JSON_TRUE || st->type == JSON_FALSE)) {
			*ok = st->type == JSON_TRUE;
			if (message != NULL)
				*message = jstr_dup(json_at(m, 3));
			rc = 0;
			break;
		}
	}
done:
	json_free(doc);
	buf_free(&b);
	return rc;
}

int
nostr_publish_json(struct wsc *w, const char *event_json, const char *id_hex,
    int timeout_ms, int *ok, char **message)
{
	return send_for_ok(w, "EVENT", event_json, id_hex, timeout_ms, ok,
	    message);
}

int
nostr_auth_json(struct wsc *w, const char *event_json, const char *id_hex,
    int timeout_ms, int *ok, char **message)
{
	return send_for_ok(w, "AUTH", event_json, id_hex, timeout_ms, ok,
	    message);
}

int
nostr_auth(struct wsc *w, const uint8_t sk[SECKEY_LEN], const char *relay_url,
    int timeout_ms)
{
	struct json_doc *doc = NULL;
	struct json	*m;
	struct event	*ev = NULL;
	struct buf	 tags = BUF_INIT;
	char		*text, err[64];
	int		 ok = 0, rc = -1;

	if ((text = nostr_wait_msg(w, "AUTH", timeout_ms)) == NULL)
		return -1;
	m = json_parse(text, strlen(text), &doc, err, sizeof(err));
	if (m == NULL || m->n != 2 || json_at(m, 1)->type != JSON_STRING)
		goto done;
	buf_adds(&tags, "[[\"relay\",");
	buf_add_jstr(&tags, relay_url, strlen(relay_url));
	buf_adds(&tags, "],[\"challenge\",");
	buf_add_jstr(&tags, json_at(m, 1)->s, json_at(m, 1)->len);
	buf_adds(&tags, "]]");
	ev = event_new_signed(sk, time(NULL), AUTH_KIND, tags.b_data, "");
	if (ev != NULL &&
	    nostr_auth_json(w, ev->json, ev->id_hex, timeout_ms, &ok, NULL) ==
		0 &&
	    ok)
		rc = 0;
done:
	event_destroy(ev);
	buf_free(&tags);
	json_free(doc);
	free(text);
	return rc;
}

int
nostr_publish(struct wsc *w, const struct event *ev, int timeout_ms, int *ok,
    char **message)
{
	return nostr_publish_json(w, ev->json, ev->id_hex, timeout_ms, ok,
	    message);
}

static void
push_event(char ***evs, size_t *n, size_t *cap, char *e)
{
	char **p;

	if (*n + 1 >= *cap) {
		*cap = *cap ? *cap * 2 : 16;
		if ((p = reallocarray(*evs, *cap, sizeof(*p))) == NULL)
			fatal("nostr: reallocarray");
		*evs = p;
	}
	(*evs)[(*n)++] = e;
	(*evs)[*n] = NULL;
}

int
nostr_req(struct wsc *w, const char *subid, const char *filters_json,
    int timeout_ms, char ***events_out, size_t *n_out, char **closed_reason)
{
	struct buf	 b = BUF_INIT;
	struct json_doc *doc = NULL;
	struct json	*m;
	const char	*f = filters_json, *end;
	char	       **evs = NULL;
	size_t		 n = 0, cap = 0;
	int64_t		 deadline = wsc_now_ms() + timeout_ms;
	int		 rc = -1;

	if (closed_reason != NULL)
		*closed_reason = NULL;
	buf_adds(&b, "[\"REQ\",");
	buf_add_jstr(&b, subid, strlen(subid));
	buf_addc(&b, ',');
	while (*f == ' ' || *f == '\t' || *f == '\n' || *f == '\r')
		f++;
	if (*f == '[' && (end = strrchr(f, ']')) != NULL)
		buf_add(&b, f + 1, (size_t)(end - f - 1));
	else
		buf_adds(&b, f);
	buf_addc(&b, ']');
	if (wsc_send_text(w, b.b_data, b.b_len) == -1)
		goto done;
	while ((m = next_msg(w, deadline, &doc)) != NULL) {
		if (jstr_is(json_at(m, 1), subid)) {
			if (jstr_is(m->child, "EVENT") && json_at(m, 2) != NULL)
				push_event(&evs, &n, &cap,
				    nostr_json_text(json_at(m, 2)));
			else if (jstr_is(m->child, "EOSE")) {
				rc = 0;
				break;
			} else if (jstr_is(m->child, "CLOSED")) {
				if (closed_reason != NULL)
					*closed_reason =
					    jstr_dup(json_at(m, 2));
				rc = 1;
				break;
			}
		}
	}
done:
	json_free(doc);
	buf_free(&b);
	if (evs == NULL && (evs = calloc(1, sizeof(*evs))) == NULL)
		fatal("nostr: calloc");
	*events_out = evs;
	if (n_out != NULL)
		*n_out = n;
	return rc;
}

int
nostr_count_id(struct wsc *w, const char *subid, const char *id_hex,
    int timeout_ms, size_t *n)
{
	char f[128], **evs = NULL;
	int  rc;

	*n = 0;
	snprintf(f, sizeof(f), "{\"ids\":[\"%s\"]}", id_hex);
	rc = nostr_req(w, subid, f, timeout_ms, &evs, n, NULL);
	nostr_events_free(evs);
	nostr_close_sub(w, subid);
	return rc;
}

void
nostr_events_free(char **events)
{
	size_t i;

	if (events == NULL)
		return;
	for (i = 0; events[i] != NULL; i++)
		free(events[i]);
	free(events);
}

char *
nostr_wait_event(struct wsc *w, const char *subid, int timeout_ms,
    char **closed_reason)
{
	struct json_doc *doc = NULL;
	struct json	*m;
	char		*ev = NULL;
	int64_t		 deadline = wsc_now_ms() + timeout_ms;

	if (closed_reason != NULL)
		*closed_reason = NULL;
	while ((m = next_msg(w, deadline, &doc)) != NULL) {
		if (jstr_is(json_at(m, 1), subid)) {
			if (jstr_is(m->child, "EVENT") &&
			    json_at(m, 2) != NULL) {
				ev = nostr_json_text(json_at(m, 2));
				break;
			}
			if (jstr_is(m->child, "CLOSED")) {
				if (closed_reason != NULL)
					*closed_reason =
					    jstr_dup(json_at(m, 2));
				break;
			}
		}
	}
	json_free(doc);
	return ev;
}

int
nostr_msg_has(struct wsc *w, const char *type, const char *needle,
    int timeout_ms)
{
	char *m;
	int   ok;

	if ((m = nostr_wait_msg(w, type, timeout_ms)) == NULL)
		return 0;
	ok = needle == NULL || strstr(m, needle) != NULL;
	free(m);
	return ok;
}

int
nostr_no_event(struct wsc *w, const char *subid, int timeout_ms)
{
	char *ev;

	if ((ev = nostr_wait_event(w, subid, timeout_ms, NULL)) == NULL)
		return 1;
	free(ev);
	return 0;
}

int
nostr_event_arrives(struct wsc *w, const char *subid, const char *id_hex,
    int timeout_ms)
{
	struct json_doc *doc = NULL;
	struct json	*e;
	char		*ev, err[64];
	int		 ok = 0;

	if ((ev = nostr_wait_event(w, subid, timeout_ms, NULL)) != NULL &&
	    (e = json_parse(ev, strlen(ev), &doc, err, sizeof(err))) != NULL &&
	    jstr_is(json_get(e, "id"), id_hex))
		ok = 1;
	if (!ok)
		printf("# %s: not event %s but %.200s\n", subid, id_hex,
		    ev ? ev : "nothing");
	json_free(doc);
	free(ev);
	return ok;
}

int
nostr_close_sub(struct wsc *w, const char *subid)
{
	struct buf b = BUF_INIT;
	int	   rc;

	buf_adds(&b, "[\"CLOSE\",");
	buf_add_jstr(&b, subid, strlen(subid));
	buf_addc(&b, ']');
	rc = wsc_send_text(w, b.b_data, b.b_len);
	buf_free(&b);
	return rc;
}

char *
nostr_wait_msg(struct wsc *w, const char *type, int timeout_ms)
{
	struct json_doc *doc = NULL;
	struct json	*m;
	char		*text = NULL;
	int64_t		 deadline = wsc_now_ms() + timeout_ms;

	while ((m = next_msg(w, deadline, &doc)) != NULL) {
		if (jstr_is(m->child, type)) {
			text = nostr_json_text(m);
			break;
		}
	}
	json_free(doc);
	return text;
}

int
nostr_count(const char *host, int port, const char *filters_json,
    int timeout_ms)
{
	struct wsc *ws = wsc_connect(host, port, "/", timeout_ms);
	char	  **evs = NULL;
	size_t	    n = 0;
	int	    rc;

	if (ws == NULL)
		return -1;
	rc = nostr_req(ws, "count", filters_json, timeout_ms, &evs, &n, NULL);
	nostr_events_free(evs);
	wsc_close(ws);
	return rc == 0 ? (int)n : -1;
}

int
nostr_wait_count(const char *host, int port, const char *filters_json, int want,
    int secs, int timeout_ms)
{
	int n = -1, i;

	for (i = 0; i < secs * 5; i++) {
		if ((n = nostr_count(host, port, filters_json, timeout_ms)) >=
		    want)
			return n;
		usleep(200000);
	}
	return n;
}

int
nostr_publish_msg(struct wsc *ws, const struct event *ev, int timeout_ms,
    char *msg, size_t msglen)
{
	int   ok = -1;
	char *m = NULL;

	if (msg != NULL && msglen > 0)
		msg[0] = '\0';
	if (ev == NULL)
		return -1;
	if (nostr_publish(ws, ev, timeout_ms, &ok, &m) == -1)
		ok = -1;
	if (msg != NULL && m != NULL)
		snprintf(msg, msglen, "%s", m);
	free(m);
	return ok;
}

int
nostr_publish_take(struct wsc *ws, struct event *ev, int timeout_ms, char *msg,
    size_t msglen)
{
	int ok;

	ok = nostr_publish_msg(ws, ev, timeout_ms, msg, msglen);
	event_destroy(ev);
	return ok;
}
