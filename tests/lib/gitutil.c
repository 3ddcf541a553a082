/*
 * gitutil.c: the git client side of the tests (see gitutil.h).  Runs in
 * the test process; each git command is a child with a deadline.
 */
#define _GNU_SOURCE
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "event.h"
#include "gitutil.h"
#include "tproc_dir.h"
#include "tdir.h"
#include "nip19.h"
#include "nostr.h"
#include "wsclient.h"

extern char **environ;

int
gt_setup(const char *home)
{
	if (mkdir(home, 0700) == -1 && errno != EEXIST)
		return -1;
	if (setenv("HOME", home, 1) == -1 ||
	    setenv("GIT_TERMINAL_PROMPT", "0", 1) == -1 ||
	    setenv("GIT_CONFIG_NOSYSTEM", "1", 1) == -1 ||
	    setenv("GIT_AUTHOR_NAME", "graspd test", 1) == -1 ||
	    setenv("GIT_AUTHOR_EMAIL", "test@graspd.invalid", 1) == -1 ||
	    setenv("GIT_COMMITTER_NAME", "graspd test", 1) == -1 ||
	    setenv("GIT_COMMITTER_EMAIL", "test@graspd.invalid", 1) == -1)
		return -1;
	return 0;
}

int gt_timeout_ms = GT_TIMEOUT_MS;

static int
run_argv(const char *dir, char **out, char *const argv[])
{
	posix_spawn_file_actions_t fa;
	struct buf		   b = BUF_INIT;
	struct pollfd		   pfd;
	char			   chunk[4096];
	int			   p[2], st, rc = -1;
	int64_t			   deadline = wsc_now_ms() + gt_timeout_ms;
	pid_t			   pid;
	ssize_t			   n;

	if (pipe(p) == -1)
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_adddup2(&fa, p[1], 2);
	posix_spawn_file_actions_addclose(&fa, p[0]);
	if (dir != NULL)
		posix_spawn_file_actions_addchdir_np(&fa, dir);
	if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		close(p[0]);
		close(p[1]);
		return -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	pfd.fd = p[0];
	pfd.events = POLLIN;
	for (;;) {
		int64_t left = deadline - wsc_now_ms();

		if (left <= 0) {
			kill(pid, SIGKILL);
			printf("# git %s: killed after %d ms\n", argv[1],
			    gt_timeout_ms);
			break;
		}
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		if ((n = read(p[0], chunk, sizeof(chunk))) <= 0)
			break;
		buf_add(&b, chunk, (size_t)n);
	}
	close(p[0]);
	while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
	if (wsc_now_ms() < deadline && WIFEXITED(st))
		rc = WEXITSTATUS(st);
	if (out != NULL) {
		if (b.b_data == NULL)
			buf_adds(&b, "");
		*out = buf_release(&b, NULL);
	} else
		buf_free(&b);
	return rc;
}

int
gt_git(const char *dir, char **out, ...)
{
	char   *argv[64];
	va_list ap;
	int	n = 0;

	argv[n++] = "git";
	va_start(ap, out);
	while (n < 63 && (argv[n] = va_arg(ap, char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	return run_argv(dir, out, argv);
}

int
gt_init(const char *dir)
{
	if (mkdir(dir, 0755) == -1 && errno != EEXIST)
		return -1;
	return gt_git(dir, NULL, "init", "-q", "-b", "main", NULL) == 0 ? 0 :
									  -1;
}

int
gt_rev(const char *dir, const char *rev, char oid[41])
{
	char *out = NULL;
	int   rc = -1;

	if (gt_git(dir, &out, "rev-parse", rev, NULL) == 0 && out != NULL &&
	    strlen(out) >= 40) {
		memcpy(oid, out, 40);
		oid[40] = '\0';
		rc = 0;
	}
	free(out);
	return rc;
}

/* Writes len bytes of data to file in dir and commits it with message. */
static int
commit_bytes(const char *dir, const char *file, const void *data, size_t len,
    const char *message, char oid[41])
{
	char  path[1024];
	FILE *f;
	int   bad;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if ((f = fopen(path, "w")) == NULL)
		return -1;
	bad = fwrite(data, 1, len, f) != len;
	if (fclose(f) == EOF || bad)
		return -1;
	if (gt_git(dir, NULL, "add", file, NULL) != 0 ||
	    gt_git(dir, NULL, "commit", "-q", "-m", message, NULL) != 0)
		return -1;
	return gt_rev(dir, "HEAD", oid);
}

int
gt_commit(const char *dir, const char *file, const char *content,
    const char *message, char oid[41])
{
	return commit_bytes(dir, file, content, strlen(content), message, oid);
}

int
gt_commit_random(const char *dir, const char *file, size_t size, char oid[41])
{
	unsigned char *data;
	size_t	       i;
	int	       rc;

	if ((data = malloc(size + 1)) == NULL)
		return -1;
	for (i = 0; i < size; i++)
		data[i] = (unsigned char)(rand() & 0xff);
	rc = commit_bytes(dir, file, data, size, file, oid);
	free(data);
	return rc;
}

int
gt_no_quarantine(const char *repo)
{
	char dir[1024];

	snprintf(dir, sizeof(dir), "%s/objects", repo);
	return tproc_dir_count(dir, "tmp_objdir-incoming-") <= 0;
}

void
gt_url(char *out, size_t outlen, const char *domain,
    const uint8_t pk[PUBKEY_LEN], const char *d)
{
	char npub[NIP19_KEY_BUFSZ];

	nip19_encode("npub", pk, npub, sizeof(npub));
	snprintf(out, outlen, "http://%s/%s/%s.git", domain, npub, d);
}

int
gt_state(struct wsc *ws, const uint8_t sk[SECKEY_LEN], int64_t at,
    const char *d, const char *oid)
{
	struct buf    tags = BUF_INIT;
	struct event *ev;
	char	     *msg = NULL;
	int	      ok = 0, rc = -1;

	buf_adds(&tags, "[[\"d\",");
	buf_add_jstr(&tags, d, strlen(d));
	buf_printf(&tags,
	    "],[\"refs/heads/main\",\"%s\"],[\"HEAD\","
	    "\"ref: refs/heads/main\"]]",
	    oid);
	ev = event_new_signed(sk, at, 30618, tags.b_data, "");
	buf_free(&tags);
	if (ev != NULL && nostr_publish(ws, ev, 5000, &ok, &msg) == 0 && ok)
		rc = 0;
	else
		printf("# state refused: %s\n", msg ? msg : "");
	free(msg);
	event_destroy(ev);
	return rc;
}

int
gt_release(struct wsc *ws, const uint8_t sk[SECKEY_LEN], const char *domain,
    const char *d, const char *dir, char oid_out[41])
{
	uint8_t pk[PUBKEY_LEN];
	char	oid[41], url[1024], *out = NULL;
	int	rc = -1;

	if (event_pubkey_of(sk, pk) == -1 || gt_init(dir) == -1 ||
	    gt_commit(dir, "README", d, "first commit", oid) == -1) {
		printf("# gt_release: cannot make the local repository\n");
		return -1;
	}
	if (gt_state(ws, sk, time(NULL), d, oid) == -1)
		return -1;
	gt_url(url, sizeof(url), domain, pk, d);
	if (gt_git(dir, &out, "push", "-q", url, "main", NULL) != 0) {
		printf("# gt_release: push failed: %s\n", out ? out : "");
		goto done;
	}
	if (oid_out != NULL)
		memcpy(oid_out, oid, 41);
	rc = 0;
done:
	free(out);
	return rc;
}

static int
gt_fixture_setup(void *arg)
{
	struct tdir_prog *tp = arg;
	char		  home[PATH_MAX];

	if (tdir_fixture.setup(arg) != 0)
		return 1;
	snprintf(home, sizeof(home), "%s/home", tp->path);
	if (gt_setup(home) == -1) {
		printf("not ok - %s: no git home in %s\n", tp->name, tp->path);
		return 1;
	}
	return 0;
}

static void
gt_fixture_remove(void *arg, int failed)
{
	tdir_fixture.cleanup(arg, failed);
}

const struct t_fixture gt_fixture = { gt_fixture_setup, gt_fixture_remove };
