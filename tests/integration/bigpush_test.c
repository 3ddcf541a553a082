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
owner_key(int n, uint8_t sk[32], uint8_t pk[32])
{
	memset(sk, 0x46, 32);
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
	uint8_t	    sk[32], pk[32];
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

static const struct t_case cases[] = {
	T_CASE(test_pushes_land_whole_chunked),
	T_CASE(test_pushes_land_whole_content_length),
	T_CASE(test_default_limit_refuses_with_err),
};

T_MAIN_WITH(cases, setup, cleanup, T_IGN_SIGPIPE)
