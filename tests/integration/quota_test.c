/*
 * quota_test.c: concurrent pushes against the byte quotas (issue 39 item
 * 6), as the attack does it: four receive-pack requests on raw sockets
 * each send their commands and half their pack, so that all four are
 * authorised (and their room measured on the disk) before any lands,
 * then the rest.  Their bytes in flight are reserved: the repository
 * never stores more than max_repo_bytes, the late ones are refused with
 * "repository too large".  (Before, each saw the whole room and all four
 * landed.)  And an expired placeholder's ref and objects go.
 */
#include <sys/socket.h>

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "client.h"
#include "config.h"
#include "event.h"
#include "gitutil.h"
#include "nip19.h"
#include "relayproc.h"
#include "t.h"
#include "tdir.h"
#include "wsclient.h"

#define TMO	   5000
#define NPUSH	   4
#define LIMIT	   (2 * 1024 * 1024) /* max_repo_bytes */
#define BLOB	   (800 * 1024)	     /* each push: two fit, three do not */
#define ZERO	   "0000000000000000000000000000000000000000"
/*
 * Seconds a placeholder lasts in the relayds of the expiry cases (30 by
 * NGIT_TEST's scale): long enough for a push and its checks on a loaded
 * machine, short enough not to sleep through the suite.
 */
#define EXPIRY_S   "12"
#define EXPIRY_ENV CONFIG_TEST_PURG_EXPIRY_ENV "=" EXPIRY_S

static void
owner_key(int n, uint8_t sk[SECKEY_LEN], uint8_t pk[PUBKEY_LEN])
{
	memset(sk, 0x51, SECKEY_LEN);
	sk[31] = (uint8_t)n;
	event_pubkey_of(sk, pk);
}

/* git pack-objects --revs of revs in dir; the pack, its length. */
static char *
make_pack(const char *dir, const char *revs, size_t *len)
{
	char  in[600], outp[600], cmd[2000], *p = NULL;
	FILE *f;
	long  n;

	snprintf(in, sizeof(in), "%s/packrevs", dir);
	snprintf(outp, sizeof(outp), "%s/pack.out", dir);
	if ((f = fopen(in, "w")) == NULL)
		return NULL;
	fputs(revs, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
	    "git -C '%s' pack-objects --stdout --revs -q < '%s' > '%s'", dir,
	    in, outp);
	if (system(cmd) != 0 || (f = fopen(outp, "rb")) == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (p = malloc((size_t)n)) != NULL &&
	    fread(p, 1, (size_t)n, f) != (size_t)n) {
		free(p);
		p = NULL;
	}
	if (p != NULL)
		*len = (size_t)n;
	fclose(f);
	return p;
}

static int
send_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		if ((w = send(fd, p, n, MSG_NOSIGNAL)) <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads until the server closes (or ms pass); the bytes in b. */
static void
read_all(int fd, struct buf *b, int ms)
{
	struct pollfd pfd = { fd, POLLIN, 0 };
	int64_t	      end = wsc_now_ms() + ms;
	char	      chunk[4096];
	ssize_t	      n;

	while (wsc_now_ms() < end) {
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		if ((n = recv(fd, chunk, sizeof(chunk), 0)) <= 0)
			break;
		buf_add(b, chunk, (size_t)n);
	}
}

static void
test_concurrent_pushes_share_max_repo_bytes(void)
{
	const char	 *env[] = { "NGIT_MAX_REPO_BYTES=2097152",
		      "NGIT_MAX_PUSH_BYTES=0", "NGIT_MAX_GIT_REQUESTS_PER_IP=0",
		      NULL };
	struct relayproc *rp;
	struct buf	  body[NPUSH], resp[NPUSH];
	uint8_t		  sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char   dir[512], base[41], oid[NPUSH][41], npub[NIP19_KEY_BUFSZ];
	char   name[32], revs[256], head[1200], url[512];
	char   repo[700], *out = NULL, *pack;
	size_t packlen, half;
	int    fd[NPUSH], i, landed = 0, refused = 0;

	T_ASSERT((rp = relayproc_start("relayd", env)) != NULL);
	snprintf(dir, sizeof(dir), "%s/home", relayproc_dir(rp));
	T_ASSERT(gt_setup(dir) == 0);
	owner_key(1, sk, pk);
	nip19_encode("npub", pk, npub, sizeof(npub));
	snprintf(repo, sizeof(repo), "%s/git/%s/q.git", relayproc_dir(rp),
	    npub);
	gt_url(url, sizeof(url), relayproc_domain(rp), pk, "q");
	snprintf(dir, sizeof(dir), "%s/work", relayproc_dir(rp));
	T_ASSERT(client_host_repo(rp, sk, time(NULL), "q", NULL, dir) == 0);
	T_ASSERT(gt_rev(dir, "HEAD", base) == 0);

	/*
	 * Four commits of incompressible bytes, each pushed as a PR's
	 * placeholder ref (refs/nostr/<id>, which anyone may push before
	 * the event).
	 */
	for (i = 0; i < NPUSH; i++) {
		T_ASSERT(gt_git(dir, NULL, "checkout", "-q", "-B", "work", base,
			     NULL) == 0);
		snprintf(name, sizeof(name), "b%d.bin", i);
		T_ASSERT(gt_commit_random(dir, name, BLOB, oid[i]) == 0);
	}

	for (i = 0; i < NPUSH; i++) {
		char ref[80];

		body[i] = (struct buf)BUF_INIT;
		resp[i] = (struct buf)BUF_INIT;
		snprintf(revs, sizeof(revs), "%s\n^%s\n", oid[i], base);
		T_ASSERT((pack = make_pack(dir, revs, &packlen)) != NULL);
		snprintf(ref, sizeof(ref), "refs/nostr/%02x%062d", 0xc0 + i, 0);
		buf_printf(&body[i], "%04zx%s %s %s",
		    4 + strlen(ZERO) + 1 + 40 + 1 + strlen(ref) + 1 +
			strlen("report-status"),
		    ZERO, oid[i], ref);
		buf_addc(&body[i], '\0');
		buf_adds(&body[i], "report-status");
		buf_adds(&body[i], "0000");
		buf_add(&body[i], pack, packlen);
		free(pack);
	}
	/* Every request authorised, half its pack sent, none ended. */
	for (i = 0; i < NPUSH; i++) {
		T_ASSERT((fd[i] = wsc_tcp_connect(relayproc_host(rp),
			      relayproc_port(rp), TMO)) >= 0);
		fcntl(fd[i], F_SETFL, fcntl(fd[i], F_GETFL) & ~O_NONBLOCK);
		snprintf(head, sizeof(head),
		    "POST /%s/q.git/git-receive-pack HTTP/1.1\r\n"
		    "Host: %s\r\n"
		    "Content-Type: application/x-git-receive-pack-request\r\n"
		    "Content-Length: %zu\r\n\r\n",
		    npub, relayproc_domain(rp), body[i].b_len);
		half = body[i].b_len / 2;
		T_ASSERT(send_all(fd[i], head, strlen(head)) == 0);
		T_ASSERT(send_all(fd[i], body[i].b_data, half) == 0);
	}
	usleep(500000);
	for (i = 0; i < NPUSH; i++) {
		half = body[i].b_len / 2;
		/* A refused one may have closed: its answer still counts. */
		(void)send_all(fd[i], body[i].b_data + half,
		    body[i].b_len - half);
	}
	for (i = 0; i < NPUSH; i++) {
		read_all(fd[i], &resp[i], 4 * TMO);
		close(fd[i]);
		buf_addc(&resp[i], '\0');
		if (strstr(resp[i].b_data, "ok refs/nostr/") != NULL)
			landed++;
		else if (strstr(resp[i].b_data, "repository too large") != NULL)
			refused++;
		else
			printf("# push %d: %.300s\n", i, resp[i].b_data);
		buf_free(&resp[i]);
		buf_free(&body[i]);
	}
	printf("# %d landed, %d refused\n", landed, refused);
	T_CHECK(landed >= 1 && landed <= 2);
	T_CHECK(landed + refused == NPUSH);
	/* What the relay advertises agrees. */
	T_CHECK(gt_git(dir, &out, "ls-remote", url, "refs/nostr/*", NULL) == 0);
	for (i = 0, landed = 0; out != NULL && i < NPUSH; i++)
		landed += strstr(out, oid[i]) != NULL;
	T_CHECK(landed >= 1 && landed <= 2);
	free(out);
	if (t_case_failed)
		relayproc_dump_log(rp, 30);
	relayproc_free(rp);
}

/*
 * Issue 39 item 4: an anonymous refs/nostr/<id> push whose event never
 * comes loses, when its placeholder expires (EXPIRY_S here), its
 * ref (no longer advertised) and its objects (no longer counted toward
 * max_repo_bytes).  Before, only the database row went.
 */
static void
test_expired_placeholder_loses_ref_and_objects(void)
{
	const char	 *env[] = { EXPIRY_ENV, NULL };
	struct relayproc *rp;
	uint8_t		  sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char		  dir[512], repo[700], url[512], oid[41], spec[120];
	char		  npub[NIP19_KEY_BUFSZ], *out = NULL;
	int64_t		  end;
	int		  ref_gone = 0, obj_gone = 0;

	T_ASSERT((rp = relayproc_start("relayd", env)) != NULL);
	snprintf(dir, sizeof(dir), "%s/home", relayproc_dir(rp));
	T_ASSERT(gt_setup(dir) == 0);
	owner_key(2, sk, pk);
	nip19_encode("npub", pk, npub, sizeof(npub));
	snprintf(repo, sizeof(repo), "%s/git/%s/p.git", relayproc_dir(rp),
	    npub);
	gt_url(url, sizeof(url), relayproc_domain(rp), pk, "p");
	snprintf(dir, sizeof(dir), "%s/work", relayproc_dir(rp));
	T_ASSERT(client_host_repo(rp, sk, time(NULL), "p", NULL, dir) == 0);
	/* The attacker: no key, a commit of 1 MiB, a PR ref of its own. */
	T_ASSERT(gt_commit_random(dir, "junk.bin", 1024 * 1024, oid) == 0);
	snprintf(spec, sizeof(spec), "HEAD:refs/nostr/%064d", 7);
	T_ASSERT(gt_git(dir, &out, "push", url, spec, NULL) == 0);
	free(out);
	out = NULL;
	T_CHECK(gt_git(dir, &out, "ls-remote", url, NULL) == 0 && out != NULL &&
	    strstr(out, oid) != NULL);
	free(out);
	out = NULL;
	T_CHECK(gt_git(repo, NULL, "cat-file", "-e", oid, NULL) == 0);
	end = wsc_now_ms() + 120000;
	while (wsc_now_ms() < end && !(ref_gone && obj_gone)) {
		sleep(1);
		if (!ref_gone &&
		    gt_git(dir, &out, "ls-remote", url, NULL) == 0 &&
		    out != NULL && strstr(out, oid) == NULL)
			ref_gone = 1;
		free(out);
		out = NULL;
		obj_gone = gt_git(repo, NULL, "cat-file", "-e", oid, NULL) != 0;
	}
	printf("# ref %s, objects %s\n", ref_gone ? "gone" : "kept",
	    obj_gone ? "gone" : "kept");
	T_CHECK(ref_gone);
	T_CHECK(obj_gone);
	if (t_case_failed)
		relayproc_dump_log(rp, 30);
	relayproc_free(rp);
}

/* A new repository at rp's dir/w-name with one commit of size bytes. */
static int
fresh(struct relayproc *rp, char *dir, size_t len, const char *name,
    size_t size, char oid[41])
{
	snprintf(dir, len, "%s/w-%s", relayproc_dir(rp), name);
	if (gt_init(dir) == -1)
		return -1;
	return gt_commit_random(dir, "r.bin", size, oid);
}

/* git push of HEAD to /prs/<npub of signer n>/<d>.git as refs/nostr/<id>. */
static int
prs_push(struct relayproc *rp, const char *dir, int n, const char *d, int id,
    char **out)
{
	uint8_t sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char	npub[NIP19_KEY_BUFSZ], url[600], spec[120];

	owner_key(n, sk, pk);
	nip19_encode("npub", pk, npub, sizeof(npub));
	snprintf(url, sizeof(url), "http://%s/prs/%s/%s.git",
	    relayproc_domain(rp), npub, d);
	snprintf(spec, sizeof(spec), "HEAD:refs/nostr/%064d", id);
	free(*out);
	*out = NULL;
	return gt_git(dir, out, "push", url, spec, NULL);
}

/*
 * Issue 39 item 5: git-first /prs/ pushes (no PR event yet) are charged
 * to the pushing address, not to the npub the attacker puts in the path:
 * they do not use up the victim's GRASP-06 quota, a fresh npub per push
 * gives no fresh budget, and they go when a placeholder would.
 */
static void
test_unclaimed_prs_pushes_charged_to_the_address(void)
{
	const char	 *env[] = { "NGIT_GRASP06_ENABLE=true",
		      "NGIT_GRASP06_MAX_BYTES_PER_REF=1000000",
		      "NGIT_GRASP06_MAX_BYTES_PER_SIGNER=150000",
		      "NGIT_GRASP06_UNCLAIMED_BYTES_PER_IP=250000", EXPIRY_ENV,
		      NULL };
	struct relayproc *rp;
	uint8_t		  sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char dir[512], oid[41], pdir[700], hex[PUBKEY_HEX_LEN + 1], *out = NULL;
	int64_t end;

	T_ASSERT((rp = relayproc_start("relayd", env)) != NULL);
	snprintf(dir, sizeof(dir), "%s/home", relayproc_dir(rp));
	T_ASSERT(gt_setup(dir) == 0);
	owner_key(3, sk, pk);
	hex_encode(pk, PUBKEY_LEN, hex);
	snprintf(pdir, sizeof(pdir), "%s/git/prs/%s/a.git", relayproc_dir(rp),
	    hex);
	/* 120 kB into the victim's path, then 100 kB more: past the
	 * victim's 150 kB, within the address's 250 kB. */
	T_ASSERT(fresh(rp, dir, sizeof(dir), "a", 120000, oid) == 0);
	T_CHECK(prs_push(rp, dir, 3, "a", 1, &out) == 0);
	T_ASSERT(fresh(rp, dir, sizeof(dir), "b", 100000, oid) == 0);
	T_CHECK(prs_push(rp, dir, 3, "b", 2, &out) == 0);
	if (t_case_failed)
		printf("# %s", out ? out : "\n");
	/* A fresh npub is no fresh budget. */
	T_ASSERT(fresh(rp, dir, sizeof(dir), "c", 100000, oid) == 0);
	T_CHECK(prs_push(rp, dir, 4, "c", 3, &out) != 0 && out != NULL &&
	    strstr(out,
		"pushes from your address that no PR event claims "
		"yet would pass 250000 bytes") != NULL);
	printf("# %s", out ? out : "\n");
	free(out);
	/* Unclaimed, they go as a placeholder would (EXPIRY_S here). */
	T_CHECK(access(pdir, F_OK) == 0);
	for (end = wsc_now_ms() + 90000;
	     access(pdir, F_OK) == 0 && wsc_now_ms() < end;)
		sleep(1);
	T_CHECK(access(pdir, F_OK) != 0);
	if (t_case_failed)
		relayproc_dump_log(rp, 30);
	relayproc_free(rp);
}

/*
 * Issue 39 item 4, the room: two anonymous placeholder pushes nearly fill
 * a 3 MiB repository; the owner's signed push still fits, since data no
 * PR event claims is not the owner's.  (Before: "repository too large".)
 */
static void
test_placeholders_leave_the_owner_room(void)
{
	const char	 *env[] = { "NGIT_MAX_REPO_BYTES=3145728", NULL };
	struct relayproc *rp;
	struct wsc	 *ws;
	uint8_t		  sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char		  dir[512], pdir[512], url[512], oid[41], spec[120];
	char		 *out = NULL;
	int		  i;

	T_ASSERT((rp = relayproc_start("relayd", env)) != NULL);
	snprintf(dir, sizeof(dir), "%s/home", relayproc_dir(rp));
	T_ASSERT(gt_setup(dir) == 0);
	owner_key(5, sk, pk);
	gt_url(url, sizeof(url), relayproc_domain(rp), pk, "r");
	snprintf(dir, sizeof(dir), "%s/work", relayproc_dir(rp));
	T_ASSERT(client_host_repo(rp, sk, time(NULL), "r", NULL, dir) == 0);
	for (i = 0; i < 2; i++) {
		char name[16];

		snprintf(name, sizeof(name), "ph%d", i);
		T_ASSERT(
		    fresh(rp, pdir, sizeof(pdir), name, 1400 * 1024, oid) == 0);
		snprintf(spec, sizeof(spec), "HEAD:refs/nostr/%064d", 10 + i);
		T_CHECK(gt_git(pdir, &out, "push", url, spec, NULL) == 0);
		free(out);
		out = NULL;
	}
	/* The owner: a state naming a new commit of 1 MiB, then its push. */
	T_ASSERT(gt_commit_random(dir, "own.bin", 1024 * 1024, oid) == 0);
	T_ASSERT((ws = client_ws(rp)) != NULL);
	T_ASSERT(gt_state(ws, sk, time(NULL) + 1, "r", oid) == 0);
	wsc_close(ws);
	T_CHECK(gt_git(dir, &out, "push", url, "main", NULL) == 0);
	printf("# owner's push: %s", out ? out : "\n");
	free(out);
	if (t_case_failed)
		relayproc_dump_log(rp, 30);
	relayproc_free(rp);
}

static const struct t_case cases[] = {
	T_CASE(test_placeholders_leave_the_owner_room),
	T_CASE(test_unclaimed_prs_pushes_charged_to_the_address),
	T_CASE(test_concurrent_pushes_share_max_repo_bytes),
	T_CASE(test_expired_placeholder_loses_ref_and_objects),
};

T_MAIN_WITH(cases, NULL, NULL, T_IGN_SIGPIPE)
