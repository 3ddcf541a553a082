/*
 * nip11_http_test.c: relayd's NIP-11 answer on the wire, as a raw HTTP
 * client sees it.  The answer is made once and copied per request
 * (relay_http.c), so this pins what that copy must keep: the status line
 * of the client's HTTP version, a content-length that matches the body,
 * the CORS headers, and a keep-alive connection that serves the next
 * request, NIP-11 or not.
 */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "json.h"
#include "relayproc.h"
#include "t.h"
#include "wsclient.h"

#define TMO 10000

static struct relayproc *rp;

/* One HTTP/1.x response read off a connection. */
struct answer {
	char   status[64]; /* the status line, without CRLF */
	char  *headers;	   /* the lines after it, as http_request() */
	char  *body;
	size_t len;
	int    closed; /* the server closed after it */
};

static void
answer_free(struct answer *a)
{
	free(a->headers);
	free(a->body);
	memset(a, 0, sizeof(*a));
}

/* Waits at most until deadline for fd to be readable; 1 if it is. */
static int
readable(int fd, int64_t deadline)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int64_t	      left = deadline - wsc_now_ms();

	if (left <= 0)
		return 0;
	return poll(&pfd, 1, (int)left) == 1;
}

/*
 * Reads one response with a content-length from fd (non-blocking) into a:
 * the header block, then exactly that many body bytes.  With want_close,
 * also waits for the server to close.  0, or -1 on timeout or bad framing.
 */
static int
read_answer(int fd, struct answer *a, int want_close)
{
	struct buf b = BUF_INIT;
	int64_t	   deadline = wsc_now_ms() + TMO;
	char	   chunk[4096], *eoh = NULL, *eol, *cl;
	size_t	   hlen = 0, need = 0;
	ssize_t	   n;
	int	   rc = -1;

	memset(a, 0, sizeof(*a));
	for (;;) {
		if (eoh == NULL && b.b_len > 0 &&
		    (eoh = memmem(b.b_data, b.b_len, "\r\n\r\n", 4)) != NULL) {
			hlen = (size_t)(eoh - b.b_data) + 4;
			*eoh = '\0';
			if ((eol = strstr(b.b_data, "\r\n")) == NULL ||
			    (size_t)(eol - b.b_data) >= sizeof(a->status))
				goto done;
			memcpy(a->status, b.b_data, (size_t)(eol - b.b_data));
			if ((a->headers = strdup(eol + 2)) == NULL)
				goto done;
			if ((cl = http_header_value(a->headers,
				 "content-length")) == NULL)
				goto done;
			need = strtoul(cl, NULL, 10);
			free(cl);
		}
		if (eoh != NULL && b.b_len >= hlen + need && !want_close)
			break;
		if (!readable(fd, deadline))
			goto done;
		n = read(fd, chunk, sizeof(chunk));
		if (n == 0) {
			a->closed = 1;
			break;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			goto done;
		}
		buf_add(&b, chunk, (size_t)n);
	}
	if (eoh == NULL || b.b_len != hlen + need)
		goto done;
	a->len = need;
	if ((a->body = malloc(need + 1)) == NULL)
		goto done;
	memcpy(a->body, b.b_data + hlen, need);
	a->body[need] = '\0';
	rc = 0;
done:
	buf_free(&b);
	return rc;
}

static int
send_all(int fd, const char *s)
{
	size_t	off = 0, len = strlen(s);
	ssize_t n;

	while (off < len) {
		if ((n = write(fd, s + off, len - off)) < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -1;
		}
		off += (size_t)n;
	}
	return 0;
}

/* The answer is the NIP-11 document with every header it owes. */
static int
is_nip11(const struct answer *a)
{
	static const char *const want[][2] = {
		{ "content-type", "application/nostr+json" },
		{ "access-control-allow-origin", "*" },
		{ "access-control-allow-methods", "GET, POST, OPTIONS" },
		{ "access-control-allow-headers",
		    "Authorization, "
		    "Content-Type, Git-Protocol, Accept, Content-Encoding, "
		    "X-Requested-With" },
		{ "server", "graspd" },
	};
	struct json_doc *doc = NULL;
	struct json	*root, *nips;
	char		 err[128], *v;
	size_t		 i;
	int		 ok = 1;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		v = http_header_value(a->headers, want[i][0]);
		if (v == NULL || strcmp(v, want[i][1]) != 0) {
			printf("# header %s: \"%s\"\n", want[i][0],
			    v ? v : "(none)");
			ok = 0;
		}
		free(v);
	}
	root = json_parse(a->body, a->len, &doc, err, sizeof(err));
	nips = root ? json_get(root, "supported_nips") : NULL;
	if (nips == NULL || nips->type != JSON_ARRAY || nips->n == 0) {
		printf("# body is not the document: %s\n",
		    root ? "no "
			   "supported_nips" :
			   err);
		ok = 0;
	}
	json_free(doc);
	return ok;
}

static const char nip11_req[] = "GET / HTTP/1.1\r\nHost: graspd\r\n"
				"Accept: application/nostr+json\r\n\r\n";

static void
nip11_answers_keep_the_connection_and_match_their_length(void)
{
	struct answer a, first;
	int	      fd, i;

	fd = wsc_tcp_connect(relayproc_host(rp), relayproc_port(rp), TMO);
	T_ASSERT(fd >= 0);
	memset(&first, 0, sizeof(first));
	for (i = 0; i < 3; i++) {
		T_ASSERT(send_all(fd, nip11_req) == 0);
		T_ASSERT(read_answer(fd, &a, 0) == 0);
		T_EQ_STR(a.status, "HTTP/1.1 200 OK");
		T_CHECK(!a.closed);
		T_CHECK(is_nip11(&a));
		if (i == 0)
			first = a;
		else {
			/* The same bytes every time. */
			T_CHECK(a.len == first.len &&
			    memcmp(a.body, first.body, a.len) == 0);
			answer_free(&a);
		}
	}
	answer_free(&first);

	/* The connection goes on to an answer made per request. */
	T_ASSERT(send_all(fd, "GET / HTTP/1.1\r\nHost: graspd\r\n\r\n") == 0);
	T_ASSERT(read_answer(fd, &a, 0) == 0);
	T_EQ_STR(a.status, "HTTP/1.1 200 OK");
	T_CHECK(strstr(a.body, "<html>") != NULL);
	answer_free(&a);
	close(fd);
}

static void
http10_gets_an_http10_answer_then_the_close(void)
{
	struct answer a;
	int	      fd;

	fd = wsc_tcp_connect(relayproc_host(rp), relayproc_port(rp), TMO);
	T_ASSERT(fd >= 0);
	T_ASSERT(
	    send_all(fd,
		"GET / HTTP/1.0\r\n"
		"Accept: application/json, application/nostr+json\r\n\r\n") ==
	    0);
	T_ASSERT(read_answer(fd, &a, 1) == 0);
	close(fd);
	T_EQ_STR(a.status, "HTTP/1.0 200 OK");
	T_CHECK(a.closed);
	T_CHECK(is_nip11(&a));
	answer_free(&a);
}

static const struct t_case cases[] = {
	T_CASE(nip11_answers_keep_the_connection_and_match_their_length),
	T_CASE(http10_gets_an_http10_answer_then_the_close),
};

T_MAIN_FIXTURE(cases, &relayproc_relayd_fixture, &rp, 0)
