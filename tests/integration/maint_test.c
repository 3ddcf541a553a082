/*
 * maint_test.c: background maintenance of hosted repositories (issue 44).
 * After git_maintenance_pushes pushes relayd repacks the repository on its
 * own (one pack with a reachability bitmap, the loose objects the pushes
 * left packed); clones and pushes made while that repack runs all
 * succeed, and the refs and objects are whole afterwards (git fsck).
 * Loopback only, with the real git client.
 */
#include <sys/wait.h>

#include <dirent.h>
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

#define TMO	     5000
/* Pushes that trigger maintenance here (git_maintenance_pushes). */
#define MAINT_PUSHES 4
/* Random bytes per pushed commit: a repack of some seconds. */
#define PUSH_BYTES   (8 * 1024 * 1024)
/* How long the maintenance may take on a loaded machine. */
#define MAINT_MS     (5 * 60 * 1000)

#define RUNNING "graspd_git_maintenance_running{role=\"relayd\"}"
#define DONE_OK \
	"graspd_git_maintenance_total{role=\"relayd\",status=\"success\"}"
#define DONE_FAIL \
	"graspd_git_maintenance_total{role=\"relayd\",status=\"error\"}"

static char		 tmp[256];
static struct relayproc *rp;

static int
setup(void)
{
	const char *env[] = { "NGIT_MAX_PUSH_BYTES=0", "NGIT_MAX_REPO_BYTES=0",
		"NGIT_MAX_GIT_REQUESTS_PER_IP=0",
		"NGIT_GIT_MAINTENANCE_PUSHES=4", NULL };
	char	    home[300];

	if (tdir_make(tmp, sizeof(tmp), "maint") == -1)
		return 1;
	snprintf(home, sizeof(home), "%s/home", tmp);
	if (gt_setup(home) == -1)
		return 1;
	gt_timeout_ms = MAINT_MS;
	if ((rp = relayproc_start("relayd", env)) == NULL) {
		printf("not ok - maint_test: relayd did not start\n");
		return 1;
	}
	return 0;
}

static void
cleanup(void)
{
	if (t_fail && rp != NULL)
		relayproc_dump_log(rp, 40);
	relayproc_free(rp);
	tdir_remove(tmp);
}

/* Files in dir whose name ends with suffix. */
static int
count_files(const char *dir, const char *suffix)
{
	struct dirent *de;
	DIR	      *d;
	size_t	       sl = strlen(suffix), l;
	int	       n = 0;

	if ((d = opendir(dir)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		l = strlen(de->d_name);
		if (l > sl && strcmp(de->d_name + l - sl, suffix) == 0)
			n++;
	}
	closedir(d);
	return n;
}

/* Commits PUSH_BYTES random bytes in work, publishes the state, pushes. */
static int
push_one(struct wsc *ws, const uint8_t sk[SECKEY_LEN], const char *url,
    const char *work, int n, int64_t at, char oid[41])
{
	char file[32], *out = NULL;
	int  rc;

	snprintf(file, sizeof(file), "b%d.bin", n);
	if (gt_commit_random(work, file, PUSH_BYTES, oid) == -1 ||
	    gt_state(ws, sk, at, "maint", oid) != 0)
		return -1;
	rc = gt_git(work, &out, "push", "-q", url, "main", NULL);
	if (rc != 0)
		printf("# push %d: %s", n, out ? out : "(no output)\n");
	free(out);
	return rc == 0 ? 0 : -1;
}

/*
 * MAINT_PUSHES pushes (the first releases the announcement) bring loose
 * objects; then relayd repacks on its own.  While the repack runs a clone
 * and a push go on; both succeed, the pushed commit is main's tip, the
 * repository passes git fsck, and it ends with a bitmap.
 */
static void
test_maintenance_after_pushes_beside_clone_and_push(void)
{
	uint8_t	      sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char	      url[512], repo[768], pack[800], work[300], clone[300];
	char	      oid[41], tip[41], msg[256], *out = NULL;
	struct event *ann;
	struct wsc   *ws;
	int64_t	      at = (int64_t)time(NULL) - 100, t0;
	int	      i, overlap = 0, st, cst;
	pid_t	      kid;

	memset(sk, 0x44, sizeof(sk));
	event_pubkey_of(sk, pk);
	gt_url(url, sizeof(url), relayproc_domain(rp), pk, "maint");
	{
		char npub[NIP19_KEY_BUFSZ];

		nip19_encode("npub", pk, npub, sizeof(npub));
		snprintf(repo, sizeof(repo), "%s/git/%s/maint.git",
		    relayproc_dir(rp), npub);
	}
	snprintf(pack, sizeof(pack), "%s/objects/pack", repo);
	snprintf(work, sizeof(work), "%s/work", tmp);
	snprintf(clone, sizeof(clone), "%s/clone", tmp);
	T_ASSERT(gt_init(work) == 0);
	ann = client_announcement(rp, sk, at, "maint", NULL);
	T_ASSERT(client_publish(rp, ann, msg, sizeof(msg)) == 1);
	event_destroy(ann);
	T_ASSERT((ws = client_ws(rp)) != NULL);
	for (i = 0; i < MAINT_PUSHES - 1; i++)
		T_ASSERT(push_one(ws, sk, url, work, i, ++at, oid) == 0);
	/* Small pushes are unpacked into loose objects: no pack yet. */
	T_CHECK(count_files(pack, ".pack") == 0);
	T_CHECK(ctl_metric(rp, DONE_OK) == 0);

	/*
	 * From the push that triggers the repack until it is done: clones
	 * one after another in a child, pushes of small commits here, each
	 * noting whether the repack ran when it started.
	 */
	if ((kid = fork()) == 0) {
		int k = 0, during = 0;

		usleep(200000);
		do {
			int run = ctl_metric(rp, RUNNING) == 1;

			snprintf(clone, sizeof(clone), "%s/clone%d", tmp, k++);
			if (gt_git(NULL, NULL, "clone", "-q", "--bare", url,
				clone, NULL) != 0 ||
			    gt_git(clone, NULL, "fsck", "--no-progress",
				NULL) != 0)
				_exit(100);
			during += run;
		} while (ctl_metric(rp, DONE_OK) < 1 && k < 50);
		_exit(during > 0 ? 1 : 0);
	}
	T_ASSERT(kid > 0);
	T_ASSERT(push_one(ws, sk, url, work, i++, ++at, oid) == 0);
	for (t0 = wsc_now_ms(); overlap < 10 && ctl_metric(rp, DONE_OK) < 1 &&
	     wsc_now_ms() - t0 < MAINT_MS;) {
		int run = ctl_metric(rp, RUNNING) == 1;

		snprintf(msg, sizeof(msg), "during %d\n", i++);
		T_ASSERT(gt_commit(work, "during.txt", msg, msg, tip) == 0);
		T_ASSERT(gt_state(ws, sk, ++at, "maint", tip) == 0);
		st = gt_git(work, &out, "push", "-q", url, "main", NULL);
		if (st != 0)
			printf("# push during maintenance: %s",
			    out ? out : "(no output)\n");
		T_CHECK(st == 0);
		free(out);
		out = NULL;
		overlap += run;
	}
	T_ASSERT(waitpid(kid, &cst, 0) == kid);
	T_CHECK(WIFEXITED(cst) && WEXITSTATUS(cst) != 100);
	printf("# pushes started during the repack: %d; clones: %s\n", overlap,
	    WEXITSTATUS(cst) == 1 ? "some" : "none");
	/* Something ran beside the repack, or this proved nothing. */
	T_CHECK(overlap > 0 || WEXITSTATUS(cst) == 1);

	for (t0 = wsc_now_ms(); wsc_now_ms() - t0 < MAINT_MS; usleep(100000))
		if (ctl_metric(rp, DONE_OK) >= 1 &&
		    ctl_metric(rp, RUNNING) == 0)
			break;
	T_CHECK(ctl_metric(rp, DONE_OK) >= 1);
	T_CHECK(ctl_metric(rp, DONE_FAIL) == 0);
	/* The push landed whole: main is its commit, every object there. */
	T_CHECK(gt_git(NULL, &out, "ls-remote", url, "refs/heads/main", NULL) ==
		0 &&
	    out != NULL && strncmp(out, tip, 40) == 0);
	free(out);
	out = NULL;
	st = gt_git(repo, &out, "fsck", "--no-progress", "--no-dangling", NULL);
	if (st != 0)
		printf("# fsck: %s", out ? out : "(no output)\n");
	T_CHECK(st == 0);
	free(out);
	/* One pack with its bitmap (and the push's own objects, loose). */
	T_CHECK(count_files(pack, ".bitmap") == 1);
	T_CHECK(count_files(pack, ".pack") == 1);
	wsc_close(ws);
}

static const struct t_case cases[] = {
	T_CASE(test_maintenance_after_pushes_beside_clone_and_push),
};

T_MAIN_WITH(cases, setup, cleanup, T_IGN_SIGPIPE)
