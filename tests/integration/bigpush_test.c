/*
 * bigpush_test.c: pushes larger than 100 MiB (issue 46) with the real git
 * client.  A push's body reaches git whole, whatever its size below the
 * limits, chunked (git's default past http.postBuffer) or with a
 * Content-Length (a large http.postBuffer); and a push over the default
 * max_push_bytes (100 MiB) gets its "push too large" ERR, not git's
 * "early EOF".  libwebsockets 4.1 takes a POST body without a length as
 * 100 MiB long and dropped the rest, which git saw as a pack cut short.
 *
 * The packs are generated once, deterministically (git fast-import of
 * blobs from a fixed-seed generator, random so that they do not
 * compress), as one history whose commits make packs of each size; each
 * is pushed into an empty repository, checked (git fsck, ls-remote) and
 * its hosted pack deleted.  GRASPD_BIGPUSH_MIB lists the sizes (default
 * "99,101"; make soak runs "99,101,150,300").
 */
#include <sys/socket.h>

#include <fcntl.h>
#include <poll.h>
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
#include "relayproc.h"
#include "t.h"
#include "tdir.h"
#include "wsclient.h"

#define MIB	   (1024ULL * 1024)
#define TMO	   5000
#define MAXSIZE	   8
/* Large enough that git sends the largest pack with a Content-Length. */
#define POSTBUF	   "http.postBuffer=1073741824"
/* What one git push or fsck of 300 MiB may take on a loaded machine. */
#define BIG_GIT_MS (10 * 60 * 1000)

static char		 tmp[256];	 /* everything of this test */
static char		 src[512];	 /* the generated history */
static int		 sizes[MAXSIZE]; /* MiB, ascending */
static char		 tips[MAXSIZE][41];
static int		 nsizes;
static struct relayproc *rp_open; /* limits off */
static struct relayproc *rp_dflt; /* default limits */

static void
owner_key(int n, uint8_t sk[SECKEY_LEN], uint8_t pk[PUBKEY_LEN])
{
	memset(sk, 0x46, SECKEY_LEN);
	sk[31] = (uint8_t)n;
	event_pubkey_of(sk, pk);
}

/* splitmix64: a fixed sequence for a fixed seed. */
static uint64_t
next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * The history: commit k adds a blob of random bytes so that a pack of
 * commits 1..k is about sizes[k] MiB (less 64 KiB for the commands, trees
 * and zlib's framing); branch s<size> names it.
 */
static int
generate(void)
{
	static uint64_t block[64 * 1024 / 8];
	char		cmd[700];
	uint64_t	seed = 46, prev = 0, len, done, i;
	FILE	       *f;
	int		k, rc;

	snprintf(src, sizeof(src), "%s/src", tmp);
	if (gt_git(NULL, NULL, "init", "-q", "--bare", src, NULL) != 0)
		return -1;
	snprintf(cmd, sizeof(cmd), "cd '%s' && git fast-import --quiet", src);
	if ((f = popen(cmd, "w")) == NULL)
		return -1;
	for (k = 0; k < nsizes; k++) {
		len = (uint64_t)sizes[k] * MIB - 64 * 1024 - prev;
		prev += len;
		fprintf(f, "blob\nmark :%d\ndata %llu\n", 2 * k + 1,
		    (unsigned long long)len);
		for (done = 0; done < len; done += sizeof(block)) {
			for (i = 0; i < sizeof(block) / 8; i++)
				block[i] = next_rand(&seed);
			fwrite(block, 1,
			    len - done < sizeof(block) ? len - done :
							 sizeof(block),
			    f);
		}
		fprintf(f,
		    "\ncommit refs/heads/main\nmark :%d\n"
		    "committer t <t@graspd.invalid> %d +0000\n"
		    "data 6\nsize%d\nM 100644 :%d b%d.bin\n\n",
		    2 * k + 2, 1700000000 + k, k, 2 * k + 1, k);
		fprintf(f, "reset refs/heads/s%d\nfrom :%d\n\n", sizes[k],
		    2 * k + 2);
	}
	rc = pclose(f);
	if (rc != 0)
		return -1;
	for (k = 0; k < nsizes; k++) {
		snprintf(cmd, sizeof(cmd), "refs/heads/s%d", sizes[k]);
		if (gt_rev(src, cmd, tips[k]) == -1)
			return -1;
	}
	return 0;
}

static int
setup(void)
{
	const char *open_env[] = { "NGIT_MAX_PUSH_BYTES=0",
		"NGIT_MAX_REPO_BYTES=0", "NGIT_MAX_GIT_REQUESTS_PER_IP=0",
		NULL };
	const char *list = getenv("GRASPD_BIGPUSH_MIB"), *p;
	char	    home[300];
	int	    v;

	snprintf(tmp, sizeof(tmp), "%s/bigpush.XXXXXX",
	    getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(tmp) == NULL)
		return 1;
	snprintf(home, sizeof(home), "%s/home", tmp);
	if (gt_setup(home) == -1)
		return 1;
	gt_timeout_ms = BIG_GIT_MS;
	for (p = list != NULL && *list != '\0' ? list : "99,101";
	     p != NULL && nsizes < MAXSIZE; p = strchr(p, ',')) {
		if (*p == ',')
			p++;
		if ((v = atoi(p)) > 0 && (nsizes == 0 || v > sizes[nsizes - 1]))
			sizes[nsizes++] = v;
	}
	if (nsizes == 0 || generate() == -1) {
		printf("not ok - bigpush_test: cannot generate the packs\n");
		return 1;
	}
	if ((rp_open = relayproc_start("relayd", open_env)) == NULL ||
	    (rp_dflt = relayproc_start("relayd", NULL)) == NULL) {
		printf("not ok - bigpush_test: relayd did not start\n");
		return 1;
	}
	return 0;
}

static void
cleanup(void)
{
	if (t_fail) {
		if (rp_open != NULL)
			relayproc_dump_log(rp_open, 30);
		if (rp_dflt != NULL)
			relayproc_dump_log(rp_dflt, 30);
	}
	relayproc_free(rp_open);
	relayproc_free(rp_dflt);
	tdir_remove(tmp);
}

/*
 * Announces (owner n, d) on rp, publishes a state naming oid as main, and
 * pushes src's branch s<size> as main, with a Content-Length when clen.
 * The push's exit status; its output in *out; url and the hosted
 * repository's path in url, repo.
 */
static int
push_new(struct relayproc *rp, int n, const char *d, int size, const char *oid,
    int clen, char **out, char *url, size_t urllen, char *repo, size_t repolen)
{
	uint8_t	    sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char	    msg[256], npub[NIP19_KEY_BUFSZ], refspec[64];
	struct wsc *ws;
	int64_t	    t0;
	int	    rc;

	owner_key(n, sk, pk);
	nip19_encode("npub", pk, npub, sizeof(npub));
	snprintf(repo, repolen, "%s/git/%s/%s.git", relayproc_dir(rp), npub, d);
	gt_url(url, urllen, relayproc_domain(rp), pk, d);
	if ((ws = client_ws(rp)) == NULL)
		return -1;
	{
		struct event *ann =
		    client_announcement(rp, sk, time(NULL), d, NULL);

		rc = client_publish(rp, ann, msg, sizeof(msg));
		event_destroy(ann);
	}
	if (rc != 1 || gt_state(ws, sk, time(NULL), d, oid) != 0) {
		printf("# %s: announcement or state refused: %s\n", d, msg);
		wsc_close(ws);
		return -1;
	}
	wsc_close(ws);
	snprintf(refspec, sizeof(refspec), "s%d:refs/heads/main", size);
	t0 = wsc_now_ms();
	if (clen)
		rc = gt_git(src, out, "-c", POSTBUF, "push", "--porcelain", url,
		    refspec, NULL);
	else
		rc =
		    gt_git(src, out, "push", "--porcelain", url, refspec, NULL);
	printf("# push of %d MiB (%s): status %d in %lld ms\n", size,
	    clen ? "Content-Length" : "chunked", rc,
	    (long long)(wsc_now_ms() - t0));
	return rc;
}

/* 1 if url advertises oid as main. */
static int
tip_advertised(const char *url, const char *oid)
{
	char *out = NULL;
	int   ok;

	ok = gt_git(NULL, &out, "ls-remote", url, "refs/heads/main", NULL) ==
		0 &&
	    out != NULL && strncmp(out, oid, 40) == 0;
	if (!ok)
		printf("# ls-remote: %s\n", out ? out : "(nothing)");
	free(out);
	return ok;
}

/* Pushes size k into a new repository on rp_open; checks it landed. */
static void
lands_whole(int k, int clen)
{
	char d[64], url[512], repo[768], path[800], *out = NULL;
	int  rc;

	snprintf(d, sizeof(d), "big-%d-%s", sizes[k],
	    clen ? "clen" : "chunked");
	rc = push_new(rp_open, 1, d, sizes[k], tips[k], clen, &out, url,
	    sizeof(url), repo, sizeof(repo));
	T_CHECK(rc == 0);
	if (rc != 0)
		printf("# %s", out ? out : "(no output)\n");
	free(out);
	out = NULL;
	T_CHECK(tip_advertised(url, tips[k]));
	rc = gt_git(repo, &out, "fsck", "--no-progress", "--no-dangling", NULL);
	T_CHECK(rc == 0);
	if (rc != 0)
		printf("# fsck: %s", out ? out : "(no output)\n");
	free(out);
	/* The disk back for the next. */
	snprintf(path, sizeof(path), "%s/objects/pack", repo);
	tdir_remove(path);
}

static void
test_pushes_land_whole_chunked(void)
{
	int k;

	for (k = 0; k < nsizes; k++)
		lands_whole(k, 0);
}

static void
test_pushes_land_whole_content_length(void)
{
	int k;

	for (k = 0; k < nsizes; k++)
		lands_whole(k, 1);
}

/*
 * At the default max_push_bytes (100 MiB) the first size past it is
 * refused with the limit's ERR, both ways, counted, nothing kept.
 */
static void
test_default_limit_refuses_with_err(void)
{
	static const char *err =
	    "push too large: a push may send at most 104857600 bytes";
	char   d[64], url[512], repo[768], *out = NULL;
	int    k, clen, rc;
	double n;

	for (k = 0; k < nsizes && sizes[k] <= 100; k++)
		;
	if (k == nsizes) {
		printf("# no size over 100 MiB\n");
		return;
	}
	for (clen = 0; clen < 2; clen++) {
		snprintf(d, sizeof(d), "over-%s", clen ? "clen" : "chunked");
		rc = push_new(rp_dflt, 2, d, sizes[k], tips[k], clen, &out, url,
		    sizeof(url), repo, sizeof(repo));
		T_CHECK(rc != 0 && out != NULL && strstr(out, err) != NULL);
		printf("# %s", out ? out : "(no output)\n");
		T_CHECK(out == NULL || strstr(out, "early EOF") == NULL);
		free(out);
		out = NULL;
		T_CHECK(
		    gt_git(repo, NULL, "cat-file", "-e", tips[k], NULL) != 0);
		for (rc = 0; rc < 100 && !gt_no_quarantine(repo); rc++)
			usleep(50000);
		T_CHECK(gt_no_quarantine(repo));
	}
	n = ctl_metric(rp_dflt,
	    "graspd_git_pushes_over_limit_total"
	    "{role=\"relayd\",limit=\"push_bytes\"}");
	T_CHECK(n == 2);
	n = ctl_metric(rp_dflt,
	    "graspd_git_requests_ended_early_total"
	    "{role=\"relayd\",cause=\"limit\"}");
	T_CHECK(n == 2);
	n = ctl_metric(rp_open,
	    "graspd_git_requests_ended_early_total"
	    "{role=\"relayd\",cause=\"body_cut\"}");
	T_CHECK(n == 0);
}

/* A connection to rp with the request head of a receive-pack POST. */
static int
raw_post(struct relayproc *rp, const char *npub, const char *d,
    const char *framing)
{
	char head[1200];
	int  fd;

	if ((fd = wsc_tcp_connect(relayproc_host(rp), relayproc_port(rp),
		 TMO)) < 0)
		return -1;
	/* Blocking: the body is sent whole, whatever relayd reads. */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	snprintf(head, sizeof(head),
	    "POST /%s/%s.git/git-receive-pack HTTP/1.1\r\nHost: %s\r\n"
	    "Content-Type: application/x-git-receive-pack-request\r\n"
	    "%s\r\n",
	    npub, d, relayproc_domain(rp), framing);
	if (send(fd, head, strlen(head), MSG_NOSIGNAL) !=
	    (ssize_t)strlen(head)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Sends n bytes of filler in 64 KiB pieces; -1 at the first failure. */
static int
send_filler(int fd, uint64_t n, char c)
{
	static char buf[64 * 1024];
	size_t	    k;
	ssize_t	    w;

	memset(buf, c, sizeof(buf));
	while (n > 0) {
		k = n < sizeof(buf) ? (size_t)n : sizeof(buf);
		if ((w = send(fd, buf, k, MSG_NOSIGNAL)) <= 0)
			return -1;
		n -= (uint64_t)w;
	}
	return 0;
}

/* What the server answers before it closes (at most ms), NUL-ended. */
static char *
answer(int fd, int ms)
{
	struct pollfd pfd = { fd, POLLIN, 0 };
	int64_t	      end = wsc_now_ms() + ms;
	char	     *b = NULL, chunk[4096];
	size_t	      len = 0;
	ssize_t	      n;

	while (wsc_now_ms() < end) {
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		if ((n = recv(fd, chunk, sizeof(chunk), 0)) <= 0)
			break;
		if ((b = realloc(b, len + (size_t)n + 1)) == NULL)
			return NULL;
		memcpy(b + len, chunk, (size_t)n);
		len += (size_t)n;
	}
	if (b == NULL && (b = malloc(1)) == NULL)
		return NULL;
	b[len] = '\0';
	return b;
}

/*
 * Issue 38 item 8: a request refused early (here a malformed command
 * section) while the client still sends 12 MiB: relayd reads and drops
 * the rest, then answers, so the client reads the reason instead of a
 * reset.  A body cut by broken chunked framing is counted as
 * malformed_body, a client that leaves mid-body as client_gone.
 */
static void
test_early_refusal_reaches_a_client_still_sending(void)
{
	uint8_t sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char	npub[NIP19_KEY_BUFSZ], url[512], repo[768], clen[64];
	char   *a = NULL, *out = NULL;
	int	fd, sent;
	double	n;

	/* A repository to post to (its announcement is enough). */
	owner_key(9, sk, pk);
	nip19_encode("npub", pk, npub, sizeof(npub));
	(void)push_new(rp_dflt, 9, "raw", sizes[0], tips[0], 0, &out, url,
	    sizeof(url), repo, sizeof(repo));
	free(out);
	snprintf(clen, sizeof(clen), "Content-Length: %llu\r\n",
	    12ULL * 1024 * 1024);
	T_ASSERT((fd = raw_post(rp_dflt, npub, "raw", clen)) >= 0);
	/* "zzzz" is no pkt-line length: refused at once. */
	sent = send_filler(fd, 12ULL * 1024 * 1024, 'z') == 0;
	a = answer(fd, 4 * TMO);
	close(fd);
	printf("# sent all: %d; answer: %.80s\n", sent, a ? a : "(none)");
	T_CHECK(sent);
	T_CHECK(
	    a != NULL && strstr(a, "malformed receive-pack request") != NULL);
	free(a);

	/* Broken chunked framing: 400 and counted. */
	T_ASSERT((fd = raw_post(rp_dflt, npub, "raw",
		      "Transfer-Encoding: chunked\r\n")) >= 0);
	T_CHECK(send(fd, "zz\r\n", 4, MSG_NOSIGNAL) == 4);
	a = answer(fd, TMO);
	close(fd);
	T_CHECK(a != NULL && strstr(a, "400") != NULL);
	free(a);
	n = ctl_metric(rp_dflt,
	    "graspd_git_requests_ended_early_total"
	    "{role=\"relayd\",cause=\"malformed_body\"}");
	T_CHECK(n >= 1);

	/* A client that leaves mid-body: logged and counted. */
	T_ASSERT((fd = raw_post(rp_dflt, npub, "raw", clen)) >= 0);
	T_CHECK(send(fd, "0000", 4, MSG_NOSIGNAL) == 4);
	T_CHECK(send_filler(fd, 256 * 1024, 'P') == 0);
	usleep(200000);
	close(fd);
	for (sent = 0; sent < 50; sent++) {
		n = ctl_metric(rp_dflt,
		    "graspd_git_requests_ended_early_total"
		    "{role=\"relayd\",cause=\"client_gone\"}");
		if (n >= 1)
			break;
		usleep(100000);
	}
	T_CHECK(n >= 1);
}

static const struct t_case cases[] = {
	T_CASE(test_early_refusal_reaches_a_client_still_sending),
	T_CASE(test_pushes_land_whole_chunked),
	T_CASE(test_pushes_land_whole_content_length),
	T_CASE(test_default_limit_refuses_with_err),
};

T_MAIN_WITH(cases, setup, cleanup, T_IGN_SIGPIPE)
