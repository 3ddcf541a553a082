/*
 * abuse_test.c: relayd's abuse limits (graspd.conf(5)).  A websocket
 * beyond max_connections_per_ip from one address is answered with HTTP
 * 429 and counted in /metrics, while plain HTTP still works; a place
 * freed is taken again.  The EVENTs of one address's connections share
 * max_events_per_minute_per_ip, and a new connection does not refill
 * it.  Git requests beyond max_git_requests_per_ip in progress from one
 * address get 429 with Retry-After until one ends (its client gone, or
 * its git dead).  An announcement of a new repository past
 * max_repos_per_owner is blocked while replacements are not.  Real git
 * pushes stop at max_push_bytes and at what max_repo_bytes leaves, with
 * git printing the reason and the repository unchanged.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "ctl.h"
#include "event.h"
#include "gitutil.h"
#include "nip19.h"
#include "nostr.h"
#include "relayproc.h"
#include "t.h"
#include "tint_prog.h"
#include "wsclient.h"

#define PER_IP 3
#define TMO    5000

static void
test_connections_per_ip_capped(void)
{
	const char	 *env[] = { "NGIT_MAX_CONNECTIONS_PER_IP=3", NULL };
	struct relayproc *rp;
	struct wsc	 *ws[PER_IP], *extra;
	char		 *body = NULL;
	int		  i, status = 0;

	memset(ws, 0, sizeof(ws));
	T_ASSERT((rp = relayproc_start("relayd", env)) != NULL);
	for (i = 0; i < PER_IP; i++)
		T_CHECK((ws[i] = wsc_connect(relayproc_host(rp),
			     relayproc_port(rp), "/", 5000)) != NULL);
	extra = wsc_connect_ex(relayproc_host(rp), relayproc_port(rp), "/",
	    NULL, 5000, &status);
	printf("# websocket %d from one address: HTTP %d\n", PER_IP + 1,
	    status);
	T_CHECK(extra == NULL && status == 429);
	if (extra != NULL)
		wsc_close(extra);
	T_CHECK(ctl_metric(rp,
		    "graspd_relay_connections_refused_total"
		    "{role=\"relayd\",reason=\"per_ip\"}") == 1);
	/* Plain HTTP is not a websocket: NIP-11 still answers. */
	T_CHECK(http_get(relayproc_host(rp), relayproc_port(rp), "/",
		    "Accept: application/nostr+json\r\n", 5000, &status, NULL,
		    &body) == 0 &&
	    status == 200);
	free(body);
	/* A place freed is taken again. */
	T_CHECK(tint_freed_place_retaken(rp, ws, TINT_N(ws)) == 0);
	relayproc_free(rp);
}

/* Publishes a grasp list of key n on ws; 1 accepted, 0 refused, -1. */
static int
publish(struct wsc *ws, int n, char **msg)
{
	struct event *e;
	uint8_t	      sk[SECKEY_LEN];
	int	      ok = 0, rc;

	memset(sk, 0x2d, sizeof(sk));
	sk[31] = (uint8_t)n;
	if ((e = event_new_signed(sk, time(NULL), 10317,
		 "[[\"g\",\"wss://example.org\"]]", "")) == NULL)
		abort();
	rc = nostr_publish(ws, e, 5000, &ok, msg);
	event_destroy(e);
	return rc == -1 ? -1 : ok;
}

static void
test_events_per_ip_shared_by_connections(void)
{
	const char *env[] = { "NGIT_MAX_EVENTS_PER_MINUTE_PER_IP=4", NULL };
	struct relayproc *rp;
	struct wsc	 *a = NULL, *b = NULL;
	char		 *msg = NULL;
	int		  n;

	T_ASSERT((rp = relayproc_start("relayd", env)) != NULL);
	T_ASSERT((a = wsc_connect(relayproc_host(rp), relayproc_port(rp), "/",
		      5000)) != NULL);
	T_ASSERT((b = wsc_connect(relayproc_host(rp), relayproc_port(rp), "/",
		      5000)) != NULL);
	/* Two each from two connections: the address's four. */
	for (n = 1; n <= 4; n++)
		T_CHECK(publish(n % 2 ? a : b, n, NULL) == 1);
	T_CHECK(publish(a, 5, &msg) == 0);
	T_CHECK(msg != NULL &&
	    strcmp(msg,
		"rate-limited: too many events "
		"from your address") == 0);
	free(msg);
	msg = NULL;
	/* Every connection gone, a new one: the bucket is still empty. */
	wsc_close(a);
	wsc_close(b);
	for (n = 0; n < 50 &&
	     ctl_metric(rp,
		 "graspd_relay_connections_active"
		 "{role=\"relayd\"}") != 0;
	     n++)
		usleep(100000);
	T_CHECK(n < 50);
	T_ASSERT((a = wsc_connect(relayproc_host(rp), relayproc_port(rp), "/",
		      5000)) != NULL);
	T_CHECK(publish(a, 6, &msg) == 0);
	T_CHECK(msg != NULL && strncmp(msg, "rate-limited:", 13) == 0);
	free(msg);
	wsc_close(a);
	relayproc_free(rp);
}

/* The secret key of test owner n. */
static void
owner_key(int n, uint8_t sk[SECKEY_LEN], uint8_t pk[PUBKEY_LEN])
{
	memset(sk, 0x4e, SECKEY_LEN);
	sk[31] = (uint8_t)n;
	event_pubkey_of(sk, pk);
}

/* Publishes the announcement of d by sk at at: 1/0 for OK true/false. */
static int
announce(struct relayproc *rp, const uint8_t sk[SECKEY_LEN], int64_t at,
    const char *d, char *msg, size_t msglen)
{
	struct event *ann = client_announcement(rp, sk, at, d, NULL);
	int	      ok;

	ok = client_publish(rp, ann, msg, msglen);
	event_destroy(ann);
	return ok;
}

/* Waits at most ms for the /metrics sample name to read want. */
static int
wait_metric(struct relayproc *rp, const char *name, double want, int ms)
{
	int64_t end = wsc_now_ms() + ms;

	while (ctl_metric(rp, name) != want)
		if (wsc_now_ms() >= end)
			return 0;
		else
			usleep(50000);
	return 1;
}

#define GIT_PROCS "graspd_git_processes{role=\"relayd\"}"
/* The body a held request announces and does not send. */
#define HOLD_BODY 1000

/*
 * Opens an upload-pack request to path whose body is announced and not
 * sent: relayd runs git for it, which waits.  The socket, or -1.
 */
static int
hold(struct relayproc *rp, const char *path)
{
	char req[512];
	int  fd, n;

	if ((fd = wsc_tcp_connect(relayproc_host(rp), relayproc_port(rp),
		 TMO)) == -1)
		return -1;
	n = snprintf(req, sizeof(req),
	    "POST %s/git-upload-pack HTTP/1.1\r\n"
	    "Host: %s\r\nContent-Type: application/x-git-upload-pack-request"
	    "\r\nContent-Length: %d\r\n\r\n",
	    path, relayproc_domain(rp), HOLD_BODY);
	if (write(fd, req, (size_t)n) != n) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Reads fd until the server closes it (at most ms); the HTTP status. */
static int
status_at_close(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char	      head[64], chunk[4096];
	size_t	      got = 0;
	ssize_t	      n;
	int64_t	      end = wsc_now_ms() + ms;
	int	      status = 0;

	while (wsc_now_ms() < end) {
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		if ((n = read(fd, chunk, sizeof(chunk))) == 0)
			break;
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			break;
		}
		if (got < sizeof(head) - 1) {
			memcpy(head + got, chunk,
			    (size_t)n < sizeof(head) - 1 - got ?
				(size_t)n :
				sizeof(head) - 1 - got);
			got += (size_t)n < sizeof(head) - 1 - got ?
			    (size_t)n :
			    sizeof(head) - 1 - got;
		}
	}
	head[got] = '\0';
	if (sscanf(head, "HTTP/1.%*d %d", &status) != 1)
		return -1;
	return status;
}

/* GET info/refs of path: the status, with Retry-After and the body. */
static int
info_refs(struct relayproc *rp, const char *path, char **retry, char **body)
{
	char url[512], *hdrs = NULL;
	int  status = 0;

	snprintf(url, sizeof(url), "%s/info/refs?service=git-upload-pack",
	    path);
	if (http_get(relayproc_host(rp), relayproc_port(rp), url, NULL, TMO,
		&status, &hdrs, body) == -1)
		status = -1;
	if (retry != NULL)
		*retry = hdrs ? http_header_value(hdrs, "Retry-After") : NULL;
	free(hdrs);
	return status;
}

static void
test_git_requests_per_ip_capped(void)
{
	const char	 *env[] = { "NGIT_MAX_GIT_REQUESTS_PER_IP=3", NULL };
	struct relayproc *rp;
	uint8_t		  sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char		  npub[NIP19_KEY_BUFSZ], path[256], msg[256], url[300];
	char		  junk[HOLD_BODY], *retry = NULL, *body = NULL;
	int		  fd[PER_IP], i, status;
	int64_t		  end;

	for (i = 0; i < PER_IP; i++)
		fd[i] = -1;
	T_ASSERT((rp = relayproc_start("relayd", env)) != NULL);
	/* A held announcement is enough: its repository exists. */
	owner_key(1, sk, pk);
	T_ASSERT(announce(rp, sk, time(NULL), "held", msg, sizeof(msg)) == 1);
	nip19_encode("npub", pk, npub, sizeof(npub));
	snprintf(path, sizeof(path), "/%s/held.git", npub);
	T_EQ_INT(info_refs(rp, path, NULL, NULL), 200);
	for (i = 0; i < PER_IP; i++)
		T_CHECK((fd[i] = hold(rp, path)) != -1);
	T_ASSERT(wait_metric(rp, GIT_PROCS, PER_IP, TMO));
	status = info_refs(rp, path, &retry, &body);
	printf("# git request %d from one address: HTTP %d, Retry-After %s: "
	       "%s",
	    PER_IP + 1, status, retry ? retry : "(none)", body ? body : "\n");
	T_CHECK(status == 429);
	T_CHECK(retry != NULL && strcmp(retry, "10") == 0);
	T_CHECK(body != NULL &&
	    strcmp(body,
		"rate-limited: too many git "
		"requests from your address at once; try again shortly\n") ==
		0);
	free(retry);
	free(body);
	/* A POST with its body is refused the same way. */
	snprintf(url, sizeof(url), "%s/git-upload-pack", path);
	T_CHECK(
	    http_request(relayproc_host(rp), relayproc_port(rp), "POST", url,
		"Content-Type: application/x-git-upload-pack-request\r\n",
		"0000", 4, TMO, &status, NULL, NULL, NULL) == 0 &&
	    status == 429);
	T_CHECK(ctl_metric(rp,
		    "graspd_git_requests_refused_total"
		    "{role=\"relayd\",reason=\"per_ip\"}") == 2);
	/* A client gone mid-request frees its place. */
	close(fd[0]);
	fd[0] = -1;
	end = wsc_now_ms() + TMO;
	while ((status = info_refs(rp, path, NULL, NULL)) == 429 &&
	    wsc_now_ms() < end)
		usleep(50000);
	T_CHECK(status == 200);
	/*
	 * So does one whose git dies: the body is not pkt-lines.  It goes in
	 * one write: sent in parts, a part could meet the answer's close, as
	 * the sanitized suite once saw.
	 */
	memset(junk, 'z', sizeof(junk));
	T_CHECK(write(fd[1], junk, sizeof(junk)) == (ssize_t)sizeof(junk));
	T_CHECK(status_at_close(fd[1], TMO) == 500);
	close(fd[1]);
	fd[1] = -1;
	/* Two places were free: two held again, and the cap is back. */
	T_CHECK((fd[0] = hold(rp, path)) != -1);
	T_CHECK((fd[1] = hold(rp, path)) != -1);
	T_CHECK(wait_metric(rp, GIT_PROCS, PER_IP, TMO));
	T_CHECK(info_refs(rp, path, NULL, NULL) == 429);
	for (i = 0; i < PER_IP; i++)
		if (fd[i] != -1)
			close(fd[i]);
	if (t_case_failed)
		relayproc_dump_log(rp, 20);
	relayproc_free(rp);
}

static void
test_repos_per_owner_capped(void)
{
	const char	 *env[] = { "NGIT_MAX_REPOS_PER_OWNER=2", NULL };
	struct relayproc *rp;
	struct wsc	 *ws;
	uint8_t		  sk[SECKEY_LEN], pk[PUBKEY_LEN], sk2[SECKEY_LEN],
	    pk2[PUBKEY_LEN];
	char	msg[256], dir[512], npub[NIP19_KEY_BUFSZ], path[256];
	int64_t t = time(NULL);

	T_ASSERT((rp = relayproc_start("relayd", env)) != NULL);
	snprintf(dir, sizeof(dir), "%s/home", relayproc_dir(rp));
	T_ASSERT(gt_setup(dir) == 0);
	owner_key(2, sk, pk);
	T_CHECK(announce(rp, sk, t, "one", msg, sizeof(msg)) == 1);
	T_CHECK(announce(rp, sk, t, "two", msg, sizeof(msg)) == 1);
	T_CHECK(announce(rp, sk, t, "three", msg, sizeof(msg)) == 0);
	printf("# third repository: %s\n", msg);
	T_CHECK(strcmp(msg,
		    "blocked: this service hosts at most 2 "
		    "repositories per owner, and this key has 2") == 0);
	nip19_encode("npub", pk, npub, sizeof(npub));
	snprintf(path, sizeof(path), "/%s/three.git", npub);
	T_CHECK(info_refs(rp, path, NULL, NULL) == 404);
	/* Replacing a held one and a served one is no new repository. */
	T_CHECK(announce(rp, sk, t + 1, "one", msg, sizeof(msg)) == 1);
	T_ASSERT((ws = wsc_connect(relayproc_host(rp), relayproc_port(rp), "/",
		      TMO)) != NULL);
	snprintf(dir, sizeof(dir), "%s/two", relayproc_dir(rp));
	T_CHECK(
	    gt_release(ws, sk, relayproc_domain(rp), "two", dir, NULL) == 0);
	wsc_close(ws);
	T_CHECK(announce(rp, sk, t + 2, "two", msg, sizeof(msg)) == 1);
	printf("# the served one again: %s\n", msg);
	T_CHECK(announce(rp, sk, t + 3, "three", msg, sizeof(msg)) == 0);
	/* Another owner has its own count. */
	owner_key(3, sk2, pk2);
	T_CHECK(announce(rp, sk2, t, "three", msg, sizeof(msg)) == 1);
	if (t_case_failed)
		relayproc_dump_log(rp, 20);
	relayproc_free(rp);
}

/*
 * Limits of a few MiB: relayd holds at most RELAY_GIT_PIPE_BUF (1 MiB)
 * of a push that git has not read, so a push stopped past 1 MiB has
 * surely reached git's quarantine, which must go.
 */
#define MIB	   (1024 * 1024)
#define MAX_PUSH   (2 * MIB)
#define MAX_REPO   (5 * MIB)
/* A commit of this much random data pushes in under MAX_PUSH bytes. */
#define UNDER_PUSH (18 * MIB / 10)

/* git push of main from dir to url: its exit status, output in *out. */
static int
push(const char *dir, const char *url, char **out)
{
	free(*out);
	*out = NULL;
	return gt_git(dir, out, "push", url, "main", NULL);
}

/* Waits at most ms for repo to hold no quarantine. */
static int
wait_no_quarantine(const char *repo, int ms)
{
	int64_t end = wsc_now_ms() + ms;

	while (!gt_no_quarantine(repo))
		if (wsc_now_ms() >= end)
			return 0;
		else
			usleep(50000);
	return 1;
}

/* 1 if the relay's main of url is oid. */
static int
remote_main_is(const char *dir, const char *url, const char *oid)
{
	char *out = NULL;
	int   ok;

	ok =
	    gt_git(dir, &out, "ls-remote", url, "refs/heads/main", NULL) == 0 &&
	    out != NULL && strncmp(out, oid, 40) == 0;
	free(out);
	return ok;
}

/*
 * 1 if pushing main (commit oid) from dir to url fails with git printing
 * reason, the relay's main stays kept, and the relay's repository repo
 * holds neither oid nor a quarantine.
 */
static int
push_stopped(const char *dir, const char *url, const char *repo,
    const char *kept, const char *oid, const char *reason)
{
	char *out = NULL;
	int   ok;

	ok = push(dir, url, &out) != 0 && out != NULL &&
	    strstr(out, reason) != NULL;
	printf("# push refused%s: %s", ok ? "" : " (not as expected)",
	    out ? out : "\n");
	free(out);
	return ok && remote_main_is(dir, url, kept) &&
	    gt_git(repo, NULL, "cat-file", "-e", oid, NULL) != 0 &&
	    wait_no_quarantine(repo, TMO);
}

/* What test_push_bytes_capped pushes with. */
struct big {
	struct relayproc *rp;
	struct wsc	 *ws;
	const uint8_t	 *sk;
	const char	 *dir, *url, *repo;
};

/*
 * 1 if a new commit of size random bytes, announced in a state at at,
 * is stopped as push_stopped() says with reason, main stays kept, and
 * relayd counts one push over limit.
 */
static int
over_limit(const struct big *b, int64_t at, const char *file, size_t size,
    const char *kept, const char *reason, const char *limit)
{
	char   oid[41], name[160];
	double n;

	if (gt_commit_random(b->dir, file, size, oid) != 0 ||
	    gt_state(b->ws, b->sk, at, "big", oid) != 0 ||
	    !push_stopped(b->dir, b->url, b->repo, kept, oid, reason))
		return 0;
	snprintf(name, sizeof(name),
	    "graspd_git_pushes_over_limit_total"
	    "{role=\"relayd\",limit=\"%s\"}",
	    limit);
	if ((n = ctl_metric(b->rp, name)) != 1)
		printf("# %s is %g\n", name, n);
	return n == 1;
}

static void
test_push_bytes_capped(void)
{
	const char	 *env[] = { "NGIT_MAX_PUSH_BYTES=2097152",
		      "NGIT_MAX_REPO_BYTES=5242880", NULL };
	struct relayproc *rp;
	struct wsc	 *ws = NULL;
	uint8_t		  sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char		  msg[256], dir[512], repo[768], url[512];
	char		  npub[NIP19_KEY_BUFSZ], oid0[41], oid[41];
	char		 *out = NULL;
	int64_t		  t = time(NULL);
	int		  i;
	struct big	  b;

	T_ASSERT((rp = relayproc_start("relayd", env)) != NULL);
	snprintf(dir, sizeof(dir), "%s/home", relayproc_dir(rp));
	T_ASSERT(gt_setup(dir) == 0);
	owner_key(4, sk, pk);
	nip19_encode("npub", pk, npub, sizeof(npub));
	snprintf(repo, sizeof(repo), "%s/git/%s/big.git", relayproc_dir(rp),
	    npub);
	gt_url(url, sizeof(url), relayproc_domain(rp), pk, "big");
	snprintf(dir, sizeof(dir), "%s/work", relayproc_dir(rp));
	T_ASSERT(announce(rp, sk, t, "big", msg, sizeof(msg)) == 1);
	T_ASSERT((ws = wsc_connect(relayproc_host(rp), relayproc_port(rp), "/",
		      TMO)) != NULL);
	T_ASSERT(
	    gt_release(ws, sk, relayproc_domain(rp), "big", dir, oid0) == 0);
	b = (struct big){ rp, ws, sk, dir, url, repo };

	/* Over the per-push limit: stopped, git says why, nothing kept. */
	T_CHECK(over_limit(&b, t + 1, "big.bin", 3 * MAX_PUSH / 2, oid0,
	    "push too large: a push may send at most 2097152 bytes here",
	    "push_bytes"));

	/* Under it: two pushes fill the repository near its limit. */
	T_ASSERT(gt_git(dir, NULL, "reset", "-q", "--hard", oid0, NULL) == 0);
	for (i = 0; i < 2; i++) {
		T_ASSERT(gt_commit_random(dir, i ? "b.bin" : "a.bin",
			     UNDER_PUSH, oid) == 0);
		T_ASSERT(gt_state(ws, sk, t + 2 + i, "big", oid) == 0);
		T_CHECK(push(dir, url, &out) == 0);
		T_CHECK(remote_main_is(dir, url, oid));
	}
	memcpy(oid0, oid, sizeof(oid0));

	/* The next would pass the repository's limit. */
	T_CHECK(over_limit(&b, t + 4, "c.bin", UNDER_PUSH, oid0,
	    "repository too large: the repository would pass 5242880 bytes",
	    "repo_bytes"));
	free(out);
	wsc_close(ws);
	if (t_case_failed)
		relayproc_dump_log(rp, 20);
	relayproc_free(rp);
}

static const struct t_case cases[] = {
	T_CASE(test_connections_per_ip_capped),
	T_CASE(test_events_per_ip_shared_by_connections),
	T_CASE(test_git_requests_per_ip_capped),
	T_CASE(test_repos_per_owner_capped),
	T_CASE(test_push_bytes_capped),
};

T_MAIN_WITH(cases, NULL, NULL, T_IGN_SIGPIPE)
