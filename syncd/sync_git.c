/*
 * sync_git.c: syncd's git-data hunt for purgatory (reference brief 3.15,
 * the "git" half of GRASP-02).  relayd holds a state (30618), PR (1618)
 * or PR update (1619) whose objects no repository has; syncd reads those
 * held events from the purgatory tables (read-only), and for each
 * repository identifier d fetches the missing objects from the http(s)
 * clone URLs of the announcements with that d and of the held PRs into
 * the repository relayd created for d, then tells relayd (a GIT_DATA
 * request on its control socket, msg.h), which releases what the data satisfies exactly as
 * after a push.
 *
 * Every git command is a child process (posix_spawn) polled from timers
 * with waitpid(WNOHANG) and killed past its deadline, so a hostile git
 * server can only fail its own fetch.  Clone URLs pass the relay target
 * hygiene (relayurl.h) and their host is resolved and vetted before every
 * attempt; git gets the vetted address pinned (http.curloptResolve), no
 * redirects, no protocol but http(s), no prompt and no credential helper.
 * The DNS lookup itself blocks, as conn.c's does before a dial.
 *
 * The same scan feeds held announcements to the inventory as StateOnly
 * repositories (reference brief 3.13), so that their state events, and
 * with them the git data, can be synced at all.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <nanomsg/nn.h>
#include <nanomsg/reqrep.h>

#include "buf.h"
#include "event.h"
#include "filter.h"
#include "json.h"
#include "log.h"
#include "child.h"
#include "msg.h"
#include "nip19.h"
#include "pktline.h"
#include "policy.h"
#include "purg.h"
#include "relayurl.h"
#include "store.h"
#include "syncd.h"
#include "sync_git.h"

extern char **environ;

/* One held event and what it waits for. */
struct git_ev {
	LIST_ENTRY(git_ev)	 ge_entry;	/* in its hunt */
	uint8_t			 ge_id[32];
	struct git_hunt		*ge_hunt;
	char			**ge_oids;
	size_t			 ge_noids;
	char			**ge_clone;	/* a PR's clone URLs */
	size_t			 ge_nclone;
	uint64_t		 ge_seen;	/* scan generation */
};

/* A GIT_DATA notice (msg.h) waiting for relayd. */
struct git_notice {
	TAILQ_ENTRY(git_notice)	 gn_entry;
	uint8_t			 gn_owner[32];
	char			*gn_d;
};

const struct config *
sync_git_cfg(const struct sync_git *sg)
{
	return &sg->sg_sd->sd_ctx->r_cfg;
}

static int64_t
delay_ms(const struct sync_git *sg, double secs)
{
	return (int64_t)(cfg_scale_delay(sync_git_cfg(sg), secs) * 1000.0 +
	    0.5);
}

static char *
xstrdup(const char *s)
{
	char	*d;

	if ((d = strdup(s)) == NULL)
		fatal("sync_git: strdup");
	return d;
}

void
sync_git_strv_add(char ***v, size_t *n, const char *s)
{
	size_t	i;

	for (i = 0; i < *n; i++)
		if (strcmp((*v)[i], s) == 0)
			return;
	if ((*v = reallocarray(*v, *n + 1, sizeof(**v))) == NULL)
		fatal("sync_git: reallocarray");
	(*v)[(*n)++] = xstrdup(s);
}

void
sync_git_strv_free(char **v, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Held events. */

/*
 * What a held event waits for: a state's branch and tag objects (names
 * ending "^{}" and "ref: " values skipped, as relayd reads them), a PR's
 * "c" commit and its clone URLs.  NULL if it does not parse.
 */
static struct git_ev *
ev_new(const struct purg_ev *pe)
{
	struct git_ev		*ge;
	struct event		*ev;
	const struct event_tag	*t;
	char			 err[64];
	uint32_t		 i, j;
	int			 have_c = 0;

	if ((ev = event_parse(pe->pe_json, strlen(pe->pe_json), err,
	    sizeof(err))) == NULL)
		return NULL;
	if ((ge = calloc(1, sizeof(*ge))) == NULL)
		fatal("sync_git: ev_new");
	memcpy(ge->ge_id, pe->pe_id, 32);
	for (i = 0; i < ev->ntags; i++) {
		t = &ev->tags[i];
		if (t->n < 2)
			continue;
		if (ev->kind == KIND_REPO_STATE) {
			size_t len = t->v[0].len;

			if ((strncmp(t->v[0].s, "refs/heads/", 11) != 0 &&
			    strncmp(t->v[0].s, "refs/tags/", 10) != 0) ||
			    (len >= 3 && strcmp(t->v[0].s + len - 3, "^{}") ==
			    0) || !pkt_is_oid(t->v[1].s, t->v[1].len))
				continue;
			if (ge->ge_noids < SYNC_GIT_MAX_OBJECTS)
				sync_git_strv_add(&ge->ge_oids, &ge->ge_noids,
				    t->v[1].s);
			continue;
		}
		if (strcmp(t->v[0].s, "c") == 0 && !have_c) {
			have_c = 1;
			if (pkt_is_oid(t->v[1].s, t->v[1].len))
				sync_git_strv_add(&ge->ge_oids, &ge->ge_noids,
				    t->v[1].s);
		} else if (strcmp(t->v[0].s, "clone") == 0) {
			for (j = 1; j < t->n && ge->ge_nclone <
			    SYNC_GIT_MAX_URLS; j++)
				if (t->v[j].len <= RELAYURL_MAX)
					sync_git_strv_add(&ge->ge_clone,
					    &ge->ge_nclone, t->v[j].s);
		}
	}
	event_destroy(ev);
	return ge;
}

static void
ev_free(struct git_ev *ge)
{
	sync_git_strv_free(ge->ge_oids, ge->ge_noids);
	sync_git_strv_free(ge->ge_clone, ge->ge_nclone);
	free(ge);
}

/* Hunts. */

static void
attempt_clear(struct git_hunt *h)
{
	size_t	i;

	free(h->gh_repo);
	h->gh_repo = NULL;
	free(h->gh_wants);
	h->gh_wants = NULL;
	h->gh_nwants = 0;
	for (i = 0; i < h->gh_nurls; i++)
		free(h->gh_urls[i].gu_url);
	free(h->gh_urls);
	h->gh_urls = NULL;
	h->gh_nurls = 0;
	free(h->gh_batch);
	h->gh_batch = NULL;
	h->gh_nbatch = 0;
	h->gh_url = 0;
	h->gh_vetted = 0;
	h->gh_single = 0;
	h->gh_fetched = 0;
	h->gh_final = 0;
}

static struct git_hunt *
hunt_get(struct sync_git *sg, const char *d)
{
	struct git_hunt	*h = hmap_get(&sg->sg_hunts, d, strlen(d));

	if (h != NULL) {
		/* Its child was killed when it had no event; keep it. */
		if (h->gh_gone) {
			h->gh_gone = 0;
			h->gh_abort = 1;
		}
		return h;
	}
	if ((h = calloc(1, sizeof(*h))) == NULL)
		fatal("sync_git: hunt_get");
	h->gh_d = xstrdup(d);
	LIST_INIT(&h->gh_events);
	h->gh_next_ms = INT64_MAX;
	h->gh_out = h->gh_err = -1;
	hmap_put(&sg->sg_hunts, h->gh_d, strlen(h->gh_d), h);
	return h;
}

static void
hunt_free(struct sync_git *sg, struct git_hunt *h)
{
	hmap_del(&sg->sg_hunts, h->gh_d, strlen(h->gh_d));
	attempt_clear(h);
	buf_free(&h->gh_errtail);
	free(h->gh_d);
	free(h);
}

/* A new held event for h: attempts start over, maybe sooner. */
static void
hunt_new_event(struct sync_git *sg, struct git_hunt *h, int remote)
{
	int64_t	due = role_now_ms() + delay_ms(sg, remote ?
		    SYNC_GIT_DELAY_SYNCED : SYNC_GIT_DELAY_USER);

	h->gh_attempts = 0;
	if (h->gh_step != HS_IDLE)
		h->gh_renewed = 1;
	if (due < h->gh_next_ms)
		h->gh_next_ms = due;
}

/* The hunts, copied out so that the map may change meanwhile. */
static struct git_hunt **
hunts_array(struct sync_git *sg, size_t *n)
{
	struct git_hunt	**v;
	size_t		  it, k = 0;
	void		 *val;

	if ((v = calloc(sg->sg_hunts.hm_n + 1, sizeof(*v))) == NULL)
		fatal("sync_git: hunts_array");
	for (it = 0; hmap_next(&sg->sg_hunts, &it, NULL, NULL, &val); )
		v[k++] = val;
	*n = k;
	return v;
}

static double
backoff(int attempts)
{
	double	s = SYNC_GIT_BACKOFF_FIRST;

	while (--attempts > 0 && s < SYNC_GIT_BACKOFF_MAX)
		s *= 2;
	return s < SYNC_GIT_BACKOFF_MAX ? s : SYNC_GIT_BACKOFF_MAX;
}

void
sync_git_set_error(struct git_hunt *h, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(h->gh_error, sizeof(h->gh_error), fmt, ap);
	va_end(ap);
}

/* Ends an attempt and schedules the next one (reference brief 3.15). */
void
sync_git_finish(struct sync_git *sg, struct git_hunt *h)
{
	int64_t	now = role_now_ms(), next;

	h->gh_step = HS_IDLE;
	h->gh_nurls_last = h->gh_nurls;
	attempt_clear(h);
	h->gh_attempts++;
	next = now + delay_ms(sg, backoff(h->gh_attempts));
	if (h->gh_renewed) {
		h->gh_attempts = 0;
		if (h->gh_next_ms < next)
			next = h->gh_next_ms;
	}
	h->gh_renewed = 0;
	h->gh_next_ms = next;
	if (h->gh_error[0])
		log_debug("git hunt %s: attempt %d incomplete: %s", h->gh_d,
		    h->gh_attempts, h->gh_error);
}

/* Notices to relayd. */

void
sync_git_notify(struct sync_git *sg, struct git_hunt *h)
{
	struct git_notice	*gn;

	if (!h->gh_has_owner)
		return;
	h->gh_notified = 1;
	/* One waiting notice covers both; one already out may not. */
	TAILQ_FOREACH(gn, &sg->sg_notices, gn_entry)
		if ((gn != TAILQ_FIRST(&sg->sg_notices) ||
		    !sg->sg_notice_sent) &&
		    memcmp(gn->gn_owner, h->gh_owner, 32) == 0 &&
		    strcmp(gn->gn_d, h->gh_d) == 0)
			return;
	if ((gn = calloc(1, sizeof(*gn))) == NULL)
		fatal("sync_git: notify");
	memcpy(gn->gn_owner, h->gh_owner, 32);
	gn->gn_d = xstrdup(h->gh_d);
	TAILQ_INSERT_TAIL(&sg->sg_notices, gn, gn_entry);
	sync_git_arm_poll(sg);
}

static void
notice_pop(struct sync_git *sg, int ok)
{
	struct git_notice	*gn = TAILQ_FIRST(&sg->sg_notices);

	if (ok)
		sg->sg_notice_ok++;
	else
		sg->sg_notice_failed++;
	TAILQ_REMOVE(&sg->sg_notices, gn, gn_entry);
	free(gn->gn_d);
	free(gn);
	sg->sg_notice_sent = 0;
	sg->sg_notice_at = 0;
}

/*
 * Sends the notices one at a time on the REQ socket without waiting: a
 * send that would block is tried again from the poll timer, a reply is
 * read there, and a notice unanswered after SYNC_GIT_NOTICE_TIMEOUT is
 * given up (the next attempt of that hunt finds the objects present and
 * sends it again).
 */
static void
notices_run(struct sync_git *sg)
{
	struct git_notice	*gn;
	int64_t			 now = role_now_ms();
	int64_t			 tmo;
	struct msg		 m;
	cJSON			*rep, *ok;
	uint8_t			 req[MSG_GIT_DATA_MAX];
	int			 r, n;

	tmo = (int64_t)(SYNC_GIT_NOTICE_TIMEOUT * 1000);
	while (sg->sg_sock >= 0 && (gn = TAILQ_FIRST(&sg->sg_notices))) {
		if (sg->sg_notice_at == 0)
			sg->sg_notice_at = now;
		if (!sg->sg_notice_sent) {
			if ((n = msg_git_data_encode(req, gn->gn_owner,
			    gn->gn_d)) == -1) {
				log_warnx("git-data notice for %s: identifier "
				    "too long", gn->gn_d);
				notice_pop(sg, 0);
				continue;
			}
			r = msg_send(sg->sg_sock, MSG_GIT_DATA, req, (size_t)n,
			    NN_DONTWAIT);
			if (r == 0) {
				sg->sg_notice_sent = 1;
				sg->sg_notice_at = now;
				return;
			}
			if (errno != EAGAIN) {
				log_warn("git-data notice to relayd");
				notice_pop(sg, 0);
				continue;
			}
			if (now - sg->sg_notice_at < tmo)
				return;
			log_warnx("git-data notice for %s: relayd is not "
			    "there", gn->gn_d);
			notice_pop(sg, 0);
			continue;
		}
		if ((r = msg_recv(sg->sg_sock, &m, NN_DONTWAIT)) == 0) {
			if (now - sg->sg_notice_at < tmo)
				return;
			log_warnx("git-data notice for %s: no answer from "
			    "relayd", gn->gn_d);
			notice_pop(sg, 0);
			continue;
		}
		if (r == -1) {
			log_warn("git-data notice: receive");
			notice_pop(sg, 0);
			continue;
		}
		rep = m.m_type == MSG_CONTROL_REPLY ? cJSON_ParseWithLength(
		    (const char *)m.m_data, m.m_len) : NULL;
		ok = rep ? cJSON_GetObjectItem(rep, "ok") : NULL;
		if (!cJSON_IsTrue(ok)) {
			const cJSON *e = rep ? cJSON_GetObjectItem(rep,
			    "error") : NULL;

			log_warnx("git-data notice for %s refused: %s",
			    gn->gn_d, cJSON_IsString(e) ? e->valuestring :
			    "malformed reply");
		} else
			log_debug("git hunt %s: relayd told", gn->gn_d);
		notice_pop(sg, cJSON_IsTrue(ok));
		cJSON_Delete(rep);
		msg_free(&m);
	}
}

/* Domains. */

struct git_domain *
sync_git_domain_get(struct sync_git *sg, const char *host)
{
	struct git_domain	*gd = hmap_get(&sg->sg_domains, host,
				    strlen(host));

	if (gd == NULL) {
		if ((gd = calloc(1, sizeof(*gd))) == NULL)
			fatal("sync_git: domain_get");
		hmap_put(&sg->sg_domains, host, strlen(host), gd);
	}
	return gd;
}

/* 1 if a fetch from gd may start now (reference brief 3.15). */
int
sync_git_domain_allows(const struct git_domain *gd, int64_t now)
{
	int64_t	oldest = gd->gd_starts[gd->gd_next];

	return gd->gd_running < SYNC_GIT_DOMAIN_CONCURRENT && (oldest == 0 ||
	    now - oldest >= (int64_t)(SYNC_GIT_DOMAIN_WINDOW * 1000));
}

void
sync_git_domain_start(struct git_domain *gd, int64_t now)
{
	gd->gd_running++;
	gd->gd_starts[gd->gd_next] = now;
	gd->gd_next = (gd->gd_next + 1) % SYNC_GIT_DOMAIN_RATE;
}

/* Forgets domains with nothing running and no start in the window. */
static void
domains_prune(struct sync_git *sg)
{
	int64_t		 now = role_now_ms();
	size_t		 it;
	const void	*key;
	size_t		 keylen;
	void		*v;
	int		 removed;

	do {
		removed = 0;
		for (it = 0; hmap_next(&sg->sg_domains, &it, &key, &keylen,
		    &v); ) {
			struct git_domain *gd = v;
			size_t last = (gd->gd_next + SYNC_GIT_DOMAIN_RATE - 1) %
			    SYNC_GIT_DOMAIN_RATE;

			if (gd->gd_running > 0 || now - gd->gd_starts[last] <
			    (int64_t)(SYNC_GIT_DOMAIN_WINDOW * 1000))
				continue;
			hmap_del(&sg->sg_domains, key, keylen);
			free(gd);
			removed = 1;
			break;
		}
	} while (removed);
}

/* Children. */

/*
 * syncd's environment for git: without GIT_* (GIT_CONFIG_PARAMETERS and
 * friends), proxies (git must reach the pinned address itself), askpass
 * programs and locale; then no system or global configuration, no
 * terminal prompt, the C locale (error texts are parsed).
 */
static char **
git_env(void)
{
	static const char *const drop[] = { "GIT_", "http_proxy=",
		"https_proxy=", "all_proxy=", "no_proxy=", "ftp_proxy=",
		"SSH_ASKPASS=", "LC_", "LANG=", "LANGUAGE=", NULL };
	static const char *const add[] = { "GIT_TERMINAL_PROMPT=0",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"LC_ALL=C", NULL };
	char	**e;
	size_t	  n = 0, k = 0, i, j;

	for (i = 0; environ[i] != NULL; i++)
		n++;
	if ((e = calloc(n + 8, sizeof(*e))) == NULL)
		fatal("sync_git: git_env");
	for (i = 0; environ[i] != NULL; i++) {
		for (j = 0; drop[j] != NULL; j++)
			if (strncasecmp(environ[i], drop[j],
			    strlen(drop[j])) == 0)
				break;
		if (drop[j] == NULL)
			e[k++] = environ[i];
	}
	for (j = 0; add[j] != NULL; j++)
		e[k++] = (char *)add[j];
	e[k] = NULL;
	return e;
}

/*
 * Spawns git with argv, stdin/stdout/stderr from fd_in, fd_out, fd_err
 * (-1: /dev/null), every other descriptor closed, SIGPIPE at its default
 * and no signal blocked.  The pid, or -1 after logging.
 */
static pid_t
git_spawn(char *const argv[], int fd_in, int fd_out, int fd_err)
{
	char	**envp = git_env();
	pid_t	  pid;

	pid = child_spawn(argv, fd_in, fd_out, fd_err, envp);
	free(envp);
	if (pid == -1)
		log_warn("cannot run git");
	return pid;
}

static void
child_started(struct sync_git *sg, struct git_hunt *h, pid_t pid,
    double timeout)
{
	h->gh_pid = pid;
	h->gh_killed = 0;
	h->gh_deadline_ms = role_now_ms() + (int64_t)(timeout * 1000);
	sg->sg_children++;
	sync_git_arm_poll(sg);
}

/* Reads what a fetch wrote on stderr, keeping the last bytes only. */
void
sync_gitsrc_drain_err(struct git_hunt *h)
{
	char	chunk[4096];
	ssize_t	n;

	if (h->gh_err < 0)
		return;
	while ((n = read(h->gh_err, chunk, sizeof(chunk))) > 0) {
		buf_add(&h->gh_errtail, chunk, (size_t)n);
		if (h->gh_errtail.b_len > 2 * SYNC_GIT_ERR_KEEP) {
			memmove(h->gh_errtail.b_data, h->gh_errtail.b_data +
			    h->gh_errtail.b_len - SYNC_GIT_ERR_KEEP,
			    SYNC_GIT_ERR_KEEP);
			h->gh_errtail.b_len = SYNC_GIT_ERR_KEEP;
			h->gh_errtail.b_data[h->gh_errtail.b_len] = '\0';
		}
	}
}

void
sync_gitsrc_child_close(struct sync_git *sg, struct git_hunt *h)
{
	if (h->gh_out >= 0)
		close(h->gh_out);
	if (h->gh_err >= 0)
		close(h->gh_err);
	h->gh_out = h->gh_err = -1;
	h->gh_pid = 0;
	sg->sg_children--;
}

/* The check: which wanted objects the repository holds. */

int
sync_gitsrc_check(struct sync_git *sg, struct git_hunt *h)
{
	char		 gitdir[PATH_MAX + 16];
	char		*argv[] = { "git", gitdir, "cat-file",
			    "--batch-check", NULL };
	struct buf	 in = BUF_INIT;
	size_t		 i;
	int		 fd_in = -1, fd_out = -1;
	pid_t		 pid;

	snprintf(gitdir, sizeof(gitdir), "--git-dir=%s", h->gh_repo);
	for (i = 0; i < h->gh_nwants; i++)
		buf_printf(&in, "%s\n", h->gh_wants[i].gw_oid);
	if ((fd_in = memfd_create("graspd-check-in", MFD_CLOEXEC)) == -1 ||
	    (fd_out = memfd_create("graspd-check-out", MFD_CLOEXEC)) == -1 ||
	    write(fd_in, in.b_data, in.b_len) != (ssize_t)in.b_len ||
	    lseek(fd_in, 0, SEEK_SET) == -1) {
		log_warn("git hunt %s: check input", h->gh_d);
		goto fail;
	}
	if ((pid = git_spawn(argv, fd_in, fd_out, -1)) == -1)
		goto fail;
	close(fd_in);
	buf_free(&in);
	h->gh_out = fd_out;
	h->gh_step = HS_CHECK;
	child_started(sg, h, pid, SYNC_GIT_CHECK_TIMEOUT);
	return 0;
fail:
	if (fd_in >= 0)
		close(fd_in);
	if (fd_out >= 0)
		close(fd_out);
	buf_free(&in);
	sync_git_set_error(h, "cannot check the repository's objects");
	return -1;
}

struct git_want *
sync_gitsrc_want_find(struct git_hunt *h, const char *oid)
{
	size_t	i;

	for (i = 0; i < h->gh_nwants; i++)
		if (strcmp(h->gh_wants[i].gw_oid, oid) == 0)
			return &h->gh_wants[i];
	return NULL;
}

/* Reads "<oid> <type> <size>" and "<oid> missing" lines. */
static int
read_check(struct git_hunt *h)
{
	struct stat	 sb;
	char		*text, *line, *save = NULL;
	struct git_want	*w;
	size_t		 i;
	ssize_t		 n;

	for (i = 0; i < h->gh_nwants; i++)
		h->gh_wants[i].gw_have = 0;
	if (fstat(h->gh_out, &sb) == -1 || sb.st_size < 0 ||
	    (size_t)sb.st_size > h->gh_nwants * 128 + 1 ||
	    lseek(h->gh_out, 0, SEEK_SET) == -1)
		return -1;
	if ((text = malloc((size_t)sb.st_size + 1)) == NULL)
		fatal("sync_git: read_check");
	n = read(h->gh_out, text, (size_t)sb.st_size);
	if (n != sb.st_size) {
		free(text);
		return -1;
	}
	text[n] = '\0';
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (strlen(line) < GIT_OID_HEX + 2 || line[GIT_OID_HEX] != ' ')
			continue;
		line[GIT_OID_HEX] = '\0';
		if ((w = sync_gitsrc_want_find(h, line)) != NULL)
			w->gw_have = strcmp(line + GIT_OID_HEX + 1,
			    "missing") != 0;
	}
	free(text);
	return 0;
}

void
sync_gitsrc_check_done(struct sync_git *sg, struct git_hunt *h, int status)
{
	size_t	i, missing = 0;
	int	bad;

	bad = h->gh_killed || status != 0 || read_check(h) == -1;
	close(h->gh_out);
	h->gh_out = -1;
	if (bad) {
		sync_git_set_error(h, "git cat-file failed (status %d)",
		    status);
		sync_git_finish(sg, h);
		return;
	}
	for (i = 0; i < h->gh_nwants; i++)
		missing += !h->gh_wants[i].gw_have;
	h->gh_missing = missing;
	if (missing == 0) {
		/* Here, yet still held: relayd releases what it can. */
		h->gh_error[0] = '\0';
		sync_git_notify(sg, h);
		sync_git_finish(sg, h);
		return;
	}
	if (h->gh_final) {
		if (h->gh_fetched)
			sync_git_notify(sg, h);
		if (h->gh_error[0] == '\0')
			sync_git_set_error(h,
			    "%zu of %zu objects still missing", missing,
			    h->gh_nwants);
		sync_git_finish(sg, h);
		return;
	}
	h->gh_url = 0;
	h->gh_vetted = 0;
	h->gh_step = HS_FETCH_WAIT;
	sync_gitsrc_fetch_next(sg, h);
}

/* Fetches. */

static void
next_url(struct git_hunt *h)
{
	size_t	i;

	h->gh_url++;
	h->gh_vetted = 0;
	h->gh_single = 0;
	for (i = 0; i < h->gh_nwants; i++)
		h->gh_wants[i].gw_skip = 0;
}

/* No URL left: a last check if anything came, else the end. */
static void
end_fetching(struct sync_git *sg, struct git_hunt *h)
{
	if (h->gh_fetched) {
		h->gh_final = 1;
		if (sync_gitsrc_check(sg, h) == 0)
			return;
	} else if (h->gh_nurls == 0)
		sync_git_set_error(h, "no usable clone URL");
	else if (h->gh_error[0] == '\0')
		sync_git_set_error(h, "no clone URL had the objects");
	sync_git_finish(sg, h);
}

/*
 * Resolves the current URL's host and vets every address (relayurl.h);
 * the first one is pinned for git.  0, or -1 with the error set.
 */
static int
vet_url(struct sync_git *sg, struct git_hunt *h, struct git_url *u)
{
	struct sockaddr_storage	 ss;
	socklen_t		 sl = sizeof(ss);
	const char		*why = NULL;
	char			 addr[NI_MAXHOST];
	int			 rc;

	rc = relayurl_resolve_checked(u->gu_key, sg->sg_urlflags, &ss, &sl,
	    &why);
	if (rc == -1) {
		sg->sg_refused++;
		sync_git_set_error(h, "%s: refused: %s", u->gu_ru.ru_authority,
		    why ? why : "address not allowed");
		return -1;
	}
	if (rc != 0) {
		sync_git_set_error(h, "%s: dns: %s", u->gu_ru.ru_authority,
		    why ? why : "no address");
		return -1;
	}
	h->gh_pin[0] = '\0';
	/* IP literals are never looked up; names are pinned. */
	if (u->gu_ru.ru_family != AF_UNSPEC)
		return 0;
	if (getnameinfo((struct sockaddr *)&ss, sl, addr, sizeof(addr), NULL,
	    0, NI_NUMERICHOST) != 0) {
		sync_git_set_error(h, "%s: cannot print the resolved address",
		    u->gu_ru.ru_authority);
		return -1;
	}
	snprintf(h->gh_pin, sizeof(h->gh_pin),
	    "http.curloptResolve=%s:%d:%s%s%s", u->gu_ru.ru_host, u->gu_ru.ru_port, ss.ss_family == AF_INET6 ?
	    "[" : "", addr, ss.ss_family == AF_INET6 ? "]" : "");
	return 0;
}

static int
spawn_fetch(struct sync_git *sg, struct git_hunt *h, struct git_url *u)
{
	char		 lowspeed[32], gitdir[PATH_MAX + 16];
	char		*argv[40 + SYNC_GIT_MAX_WANTS];
	size_t		 n = 0, i;
	int		 p[2];
	pid_t		 pid;

	snprintf(gitdir, sizeof(gitdir), "--git-dir=%s", h->gh_repo);
	snprintf(lowspeed, sizeof(lowspeed), "http.lowSpeedTime=%d",
	    SYNC_GIT_STALL_SECS);
	argv[n++] = "git";
	argv[n++] = gitdir;
	argv[n++] = "-c";
	argv[n++] = "protocol.allow=never";
	argv[n++] = "-c";
	argv[n++] = "protocol.http.allow=always";
	argv[n++] = "-c";
	argv[n++] = "protocol.https.allow=always";
	argv[n++] = "-c";
	argv[n++] = "http.followRedirects=false";
	argv[n++] = "-c";
	argv[n++] = "credential.helper=";
	argv[n++] = "-c";
	argv[n++] = "http.lowSpeedLimit=1";
	argv[n++] = "-c";
	argv[n++] = lowspeed;
	if (h->gh_pin[0]) {
		argv[n++] = "-c";
		argv[n++] = h->gh_pin;
	}
	argv[n++] = "fetch";
	argv[n++] = "--quiet";
	argv[n++] = "--no-tags";
	argv[n++] = "--no-write-fetch-head";
	argv[n++] = "--no-auto-gc";
	argv[n++] = "--no-recurse-submodules";
	argv[n++] = u->gu_url;
	for (i = 0; i < h->gh_nbatch; i++)
		argv[n++] = h->gh_wants[h->gh_batch[i]].gw_oid;
	argv[n] = NULL;
	if (pipe2(p, O_CLOEXEC) == -1) {
		log_warn("git hunt: pipe");
		return -1;
	}
	if (fcntl(p[0], F_SETFL, O_NONBLOCK) == -1 ||
	    (pid = git_spawn(argv, -1, -1, p[1])) == -1) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	close(p[1]);
	h->gh_err = p[0];
	buf_reset(&h->gh_errtail);
	h->gh_step = HS_FETCH;
	child_started(sg, h, pid, cfg_scale_delay(sync_git_cfg(sg),
	    SYNC_GIT_FETCH_TIMEOUT));
	log_debug("git hunt %s: fetching %zu object(s) from %s", h->gh_d,
	    h->gh_nbatch, u->gu_url);
	return 0;
}

/*
 * Starts the next fetch of the attempt: the objects still missing and
 * not refused by the current URL (one of them in single mode), from the
 * current URL once its address is vetted and its domain allows another
 * fetch.  Moves on to the next URL when nothing is left to ask this one.
 */
void
sync_gitsrc_fetch_next(struct sync_git *sg, struct git_hunt *h)
{
	struct git_url	*u;
	size_t		 i, max;
	int64_t		 now;

	for (;;) {
		if (h->gh_url >= h->gh_nurls) {
			end_fetching(sg, h);
			return;
		}
		u = &h->gh_urls[h->gh_url];
		if (h->gh_batch == NULL && (h->gh_batch = calloc(
		    SYNC_GIT_MAX_WANTS, sizeof(*h->gh_batch))) == NULL)
			fatal("sync_git: batch");
		max = h->gh_single ? 1 : SYNC_GIT_MAX_WANTS;
		h->gh_nbatch = 0;
		for (i = 0; i < h->gh_nwants && h->gh_nbatch < max; i++)
			if (!h->gh_wants[i].gw_have && !h->gh_wants[i].gw_skip)
				h->gh_batch[h->gh_nbatch++] = i;
		if (h->gh_nbatch == 0) {
			for (i = 0; i < h->gh_nwants; i++)
				if (!h->gh_wants[i].gw_have)
					break;
			if (i == h->gh_nwants) {
				end_fetching(sg, h);
				return;
			}
			next_url(h);
			continue;
		}
		if (!h->gh_vetted) {
			if (vet_url(sg, h, u) == -1) {
				next_url(h);
				continue;
			}
			h->gh_vetted = 1;
		}
		now = role_now_ms();
		h->gh_domain = sync_git_domain_get(sg, u->gu_ru.ru_host);
		if (!sync_git_domain_allows(h->gh_domain, now) ||
		    sg->sg_children >= SYNC_GIT_MAX_CHILDREN) {
			h->gh_domain = NULL;
			h->gh_step = HS_FETCH_WAIT;
			sync_git_arm_poll(sg);
			return;
		}
		if (spawn_fetch(sg, h, u) == -1) {
			h->gh_domain = NULL;
			sync_git_set_error(h, "cannot run git fetch");
			next_url(h);
			continue;
		}
		sync_git_domain_start(h->gh_domain, now);
		return;
	}
}

/* The object a fetch failure names ("not our ref <oid>"), or -1. */
static ssize_t
failed_oid(struct git_hunt *h)
{
	static const char *const pats[] = { "not our ref ",
		"unadvertised object ", NULL };
	const char	*t = h->gh_errtail.b_data, *p, *end;
	size_t		 i, k, len = h->gh_errtail.b_len;

	if (t == NULL)
		return -1;
	end = t + len;
	for (k = 0; pats[k] != NULL; k++) {
		size_t pl = strlen(pats[k]);

		for (p = t; (p = memmem(p, (size_t)(end - p), pats[k],
		    pl)) != NULL; p += pl) {
			if ((size_t)(end - p) < pl + GIT_OID_HEX ||
			    !pkt_is_oid(p + pl, GIT_OID_HEX))
				continue;
			for (i = 0; i < h->gh_nbatch; i++)
				if (memcmp(h->gh_wants[h->gh_batch[i]].gw_oid,
				    p + pl, GIT_OID_HEX) == 0)
					return (ssize_t)h->gh_batch[i];
		}
	}
	return -1;
}

/* The last non-empty line of a fetch's errors, printable. */
static void
error_line(struct git_hunt *h, char *out, size_t outlen)
{
	const char	*t = h->gh_errtail.b_data;
	size_t		 len = h->gh_errtail.b_len, s, e, i, k = 0;

	out[0] = '\0';
	if (t == NULL)
		return;
	while (len > 0 && (t[len - 1] == '\n' || t[len - 1] == '\r' ||
	    t[len - 1] == ' '))
		len--;
	e = len;
	for (s = e; s > 0 && t[s - 1] != '\n'; s--)
		;
	for (i = s; i < e && k + 1 < outlen; i++)
		out[k++] = t[i] >= 0x20 && t[i] < 0x7f ? t[i] : '?';
	out[k] = '\0';
}

void
sync_gitsrc_fetch_done(struct sync_git *sg, struct git_hunt *h, int status)
{
	struct git_url	*u = &h->gh_urls[h->gh_url];
	char		 line[160];
	ssize_t		 bad;
	size_t		 i;

	if (h->gh_domain != NULL)
		h->gh_domain->gd_running--;
	h->gh_domain = NULL;
	if (!h->gh_killed && status == 0) {
		sg->sg_fetch_ok++;
		sg->sg_objects += h->gh_nbatch;
		for (i = 0; i < h->gh_nbatch; i++)
			h->gh_wants[h->gh_batch[i]].gw_have = 1;
		h->gh_fetched = 1;
		log_info("git hunt %s: fetched %zu object(s) from %s",
		    h->gh_d, h->gh_nbatch, u->gu_ru.ru_authority);
	} else if (h->gh_killed) {
		/* A server that does not answer fails only its own fetch. */
		sg->sg_fetch_timeout++;
		sync_git_set_error(h, "%s: no answer in %.0f s",
		    u->gu_ru.ru_authority, cfg_scale_delay(sync_git_cfg(sg),
		    SYNC_GIT_FETCH_TIMEOUT));
		next_url(h);
	} else {
		sg->sg_fetch_failed++;
		error_line(h, line, sizeof(line));
		sync_git_set_error(h, "%s: git fetch failed (status %d): %s",
		    u->gu_ru.ru_authority, status, line);
		if (!h->gh_single && (bad = failed_oid(h)) >= 0)
			h->gh_wants[bad].gw_skip = 1;
		else if (!h->gh_single && h->gh_nbatch > 1)
			h->gh_single = 1;
		else
			for (i = 0; i < h->gh_nbatch; i++)
				h->gh_wants[h->gh_batch[i]].gw_skip = 1;
	}
	h->gh_nbatch = 0;
	h->gh_step = HS_FETCH_WAIT;
	sync_gitsrc_fetch_next(sg, h);
}

/* Attempts. */

void
sync_gitsrc_sources_add(struct git_sources *so, const struct event *ev,
    int owner)
{
	const struct event_tag	*t;
	uint32_t		 i, j;

	if (owner) {
		if ((so->so_owners = reallocarray(so->so_owners,
		    so->so_nowners + 1, 32)) == NULL)
			fatal("sync_git: sources_add");
		memcpy(so->so_owners[so->so_nowners++], ev->pubkey, 32);
	}
	for (i = 0; i < ev->ntags; i++) {
		t = &ev->tags[i];
		if (strcmp(t->v[0].s, "clone") != 0)
			continue;
		for (j = 1; j < t->n && so->so_nurls < 4 * SYNC_GIT_MAX_URLS;
		    j++)
			if (t->v[j].len <= RELAYURL_MAX)
				sync_git_strv_add(&so->so_urls, &so->so_nurls,
				    t->v[j].s);
	}
}

static int
stored_cb(const char *json, size_t len, int64_t seq, void *arg)
{
	struct event	*ev;
	char		 err[64];

	(void)seq;
	if ((ev = event_parse(json, len, err, sizeof(err))) != NULL) {
		sync_gitsrc_sources_add(arg, ev, 1);
		event_destroy(ev);
	}
	return 0;
}

/* The stored announcements with d (filter {"kinds":[30617],"#d":[d]}). */
int
sync_gitsrc_sources_stored(struct sync_git *sg, const char *d,
    struct git_sources *so)
{
	struct buf	 b = BUF_INIT;
	struct json_doc	*doc = NULL;
	struct json	*root;
	struct filter	 f;
	char		 err[128];
	int		 rc = -1;

	buf_adds(&b, "{\"kinds\":[30617],\"#d\":[");
	buf_add_jstr(&b, d, strlen(d));
	buf_adds(&b, "]}");
	if ((root = json_parse(b.b_data, b.b_len, &doc, err,
	    sizeof(err))) != NULL) {
		if (filter_parse(root, &f, err, sizeof(err)) == 0) {
			if (store_query(sg->sg_sd->sd_ctx->r_store, &f, 1,
			    STORE_MAX_LIMIT, STORE_MAX_LIMIT, 0, stored_cb,
			    so) >= 0)
				rc = 0;
			filter_free(&f);
		}
		json_free(doc);
	}
	buf_free(&b);
	return rc;
}

void
sync_gitsrc_sources_free(struct git_sources *so)
{
	free(so->so_owners);
	sync_git_strv_free(so->so_urls, so->so_nurls);
}

/*
 * A clone URL as a candidate: http or https only, checked and
 * canonicalized like a relay target (as ws or wss, under the relay
 * targets' flags), not this service, not twice.  Refusals are counted.
 */
void
sync_gitsrc_url_add(struct sync_git *sg, struct git_hunt *h, const char *raw)
{
	char		 ws[RELAYURL_MAX + 16], key[RELAYURL_MAX + 1];
	struct git_url	*u;
	struct buf	 b = BUF_INIT;
	const char	*why = NULL, *rest;
	size_t		 i;
	int		 tls, n;

	if (h->gh_nurls >= SYNC_GIT_MAX_URLS)
		return;
	if (strncasecmp(raw, "https://", 8) == 0) {
		tls = 1;
		rest = raw + 8;
	} else if (strncasecmp(raw, "http://", 7) == 0) {
		tls = 0;
		rest = raw + 7;
	} else
		return;		/* ssh, git, ...: not ours to try */
	n = snprintf(ws, sizeof(ws), "%s://%s", tls ? "wss" : "ws", rest);
	if (n < 0 || (size_t)n >= sizeof(ws) || relayurl_canon(ws, (size_t)n,
	    sg->sg_urlflags, key, sizeof(key), &why) == -1) {
		sg->sg_refused++;
		sync_git_set_error(h, "clone URL refused: %s",
		    why ? why : "too long");
		log_debug("git hunt %s: clone URL %s refused: %s", h->gh_d,
		    raw, why ? why : "too long");
		return;
	}
	if (relayurl_is_self(key, sg->sg_selfp, sg->sg_nself))
		return;
	for (i = 0; i < h->gh_nurls; i++)
		if (strcmp(h->gh_urls[i].gu_key, key) == 0)
			return;
	if ((h->gh_urls = reallocarray(h->gh_urls, h->gh_nurls + 1,
	    sizeof(*h->gh_urls))) == NULL)
		fatal("sync_git: url_add");
	u = &h->gh_urls[h->gh_nurls];
	memset(u, 0, sizeof(*u));
	snprintf(u->gu_key, sizeof(u->gu_key), "%s", key);
	if (relayurl_parse(key, &u->gu_ru) == -1)
		return;
	buf_printf(&b, "%s://%s%s", tls ? "https" : "http",
	    u->gu_ru.ru_authority, u->gu_ru.ru_target);
	u->gu_url = buf_release(&b, NULL);
	h->gh_nurls++;
}

/* <git_data_path>/<npub>/<d>.git into out if that directory exists. */
int
sync_gitsrc_repo_of(struct sync_git *sg, const uint8_t owner[32], const char *d,
    char *out, size_t outlen)
{
	char		npub[NIP19_KEY_BUFSZ];
	struct stat	sb;
	int		n;

	if (nip19_encode("npub", owner, npub, sizeof(npub)) == -1)
		return -1;
	n = snprintf(out, outlen, "%s/%s/%s.git",
	    sync_git_cfg(sg)->git_data_path, npub, d);
	if (n < 0 || (size_t)n >= outlen || stat(out, &sb) == -1 ||
	    !S_ISDIR(sb.st_mode))
		return -1;
	return 0;
}

/*
 * Starts an attempt for h: the objects its held events wait for, the
 * repository to fetch into (the first of the stored, then the held
 * announcements with d whose repository exists), the candidate URLs
 * (their clone URLs, then the held PRs'), and the check of what is there.
 */
static void
start_attempt(struct sync_git *sg, struct git_hunt *h)
{
	struct git_sources	 so;
	struct purg_ann	*held = NULL;
	struct git_ev	*ge;
	struct event	*ev;
	char		 repo[PATH_MAX], err[64];
	size_t		 nheld = 0, i, k;

	memset(&so, 0, sizeof(so));
	attempt_clear(h);
	sg->sg_attempts++;
	h->gh_next_ms = INT64_MAX;
	h->gh_renewed = 0;
	h->gh_has_owner = 0;
	/* The objects. */
	LIST_FOREACH(ge, &h->gh_events, ge_entry) {
		for (k = 0; k < ge->ge_noids && h->gh_nwants <
		    SYNC_GIT_MAX_OBJECTS; k++) {
			if (sync_gitsrc_want_find(h, ge->ge_oids[k]) != NULL)
				continue;
			if ((h->gh_wants = reallocarray(h->gh_wants,
			    h->gh_nwants + 1, sizeof(*h->gh_wants))) == NULL)
				fatal("sync_git: start_attempt");
			memset(&h->gh_wants[h->gh_nwants], 0,
			    sizeof(*h->gh_wants));
			snprintf(h->gh_wants[h->gh_nwants++].gw_oid,
			    GIT_OID_HEX + 1, "%s", ge->ge_oids[k]);
		}
	}
	h->gh_needed = h->gh_nwants;
	if (h->gh_nwants == 0) {
		sync_git_set_error(h, "its held events name no object");
		goto done;
	}
	/* Where the objects go, and where they may be. */
	if (sync_gitsrc_sources_stored(sg, h->gh_d, &so) == -1) {
		sync_git_set_error(h, "cannot read the stored announcements");
		goto done;
	}
	if (purg_ann_list_d(sg->sg_purg, h->gh_d, &held, &nheld) == -1) {
		sync_git_set_error(h, "cannot read the held announcements");
		goto done;
	}
	for (i = 0; i < nheld; i++) {
		if ((ev = event_parse(held[i].pa_json,
		    strlen(held[i].pa_json), err, sizeof(err))) == NULL)
			continue;
		/* A soft-expired one has no repository, but its URLs. */
		sync_gitsrc_sources_add(&so, ev, !held[i].pa_soft_expired);
		event_destroy(ev);
	}
	for (i = 0; i < so.so_nowners && !h->gh_has_owner; i++) {
		if (sync_gitsrc_repo_of(sg, so.so_owners[i], h->gh_d, repo,
		    sizeof(repo)) == -1)
			continue;
		memcpy(h->gh_owner, so.so_owners[i], 32);
		h->gh_has_owner = 1;
		h->gh_repo = xstrdup(repo);
	}
	if (!h->gh_has_owner) {
		sync_git_set_error(h,
		    "no repository with this identifier on disk");
		goto done;
	}
	for (i = 0; i < so.so_nurls; i++)
		sync_gitsrc_url_add(sg, h, so.so_urls[i]);
	LIST_FOREACH(ge, &h->gh_events, ge_entry)
		for (k = 0; k < ge->ge_nclone; k++)
			sync_gitsrc_url_add(sg, h, ge->ge_clone[k]);
	h->gh_nurls_last = h->gh_nurls;
	if (sync_gitsrc_check(sg, h) == 0) {
		purg_ann_free_list(held, nheld);
		sync_gitsrc_sources_free(&so);
		return;
	}
done:
	purg_ann_free_list(held, nheld);
	sync_gitsrc_sources_free(&so);
	sync_git_finish(sg, h);
}

/* The scan of the purgatory tables. */

/*
 * Held announcements not seen before go to the inventory as StateOnly
 * repositories (reference brief 3.13): syncd then asks their relays for
 * the states of d, which the hunt needs.  The inventory never drops one.
 */
static void
feed_held_announcements(struct sync_git *sg)
{
	struct syncd	 *sd = sg->sg_sd;
	struct purg_ann	 *v = NULL;
	struct event	 *ev;
	uint8_t		(*stale)[32] = NULL;
	char		  err[64];
	size_t		  n = 0, i, nstale = 0, it;
	const void	 *key;
	void		 *val;
	void		 *gen = (void *)(uintptr_t)sg->sg_gen;

	/* Every held announcement: all expire before the end of time. */
	if (purg_ann_due(sg->sg_purg, INT64_MAX, &v, &n) == -1)
		return;
	for (i = 0; i < n; i++) {
		if (hmap_get(&sg->sg_anns, v[i].pa_id, 32) == NULL &&
		    (ev = event_parse(v[i].pa_json, strlen(v[i].pa_json), err,
		    sizeof(err))) != NULL) {
			inv_add_stateonly(sd->sd_inv, ev);
			event_destroy(ev);
		}
		hmap_put(&sg->sg_anns, v[i].pa_id, 32, gen);
	}
	purg_ann_free_list(v, n);
	for (it = 0; hmap_next(&sg->sg_anns, &it, &key, NULL, &val); ) {
		if (val == gen)
			continue;
		if ((stale = reallocarray(stale, nstale + 1, 32)) == NULL)
			fatal("sync_git: feed_held_announcements");
		memcpy(stale[nstale++], key, 32);
	}
	for (i = 0; i < nstale; i++)
		hmap_del(&sg->sg_anns, stale[i], 32);
	free(stale);
	sync_inventory_changed(sd);
}

/*
 * Reads the held states, PRs and PR updates, starts the hunt of every
 * identifier with a new one, and drops the events (and hunts) that left
 * purgatory.  Returns -1 on a database error (nothing dropped then).
 */
static int
scan_held_events(struct sync_git *sg)
{
	static const uint32_t	 kinds[] = { KIND_REPO_STATE, KIND_PR,
		KIND_PR_UPDATE };
	struct purg_ev		*v;
	struct git_ev		*ge, **stale = NULL;
	struct git_hunt		*h;
	size_t			 n, i, k, nstale = 0, it;
	void			*val;

	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		if (purg_ev_list_kind(sg->sg_purg, kinds[k], &v, &n) == -1)
			return -1;
		for (i = 0; i < n; i++) {
			const struct purg_ev *pe = &v[i];

			if (!policy_identifier_safe(pe->pe_d,
			    strlen(pe->pe_d)))
				continue;
			if ((ge = hmap_get(&sg->sg_events, pe->pe_id, 32)) ==
			    NULL) {
				if ((ge = ev_new(pe)) == NULL)
					continue;
				h = hunt_get(sg, pe->pe_d);
				ge->ge_hunt = h;
				LIST_INSERT_HEAD(&h->gh_events, ge, ge_entry);
				h->gh_nevents++;
				hmap_put(&sg->sg_events, ge->ge_id, 32, ge);
				hunt_new_event(sg, h, pe->pe_remote);
			}
			ge->ge_seen = sg->sg_gen;
			ge->ge_hunt->gh_seen = sg->sg_gen;
		}
		purg_ev_free_list(v, n);
	}
	for (it = 0; hmap_next(&sg->sg_events, &it, NULL, NULL, &val); ) {
		ge = val;
		if (ge->ge_seen == sg->sg_gen)
			continue;
		if ((stale = reallocarray(stale, nstale + 1,
		    sizeof(*stale))) == NULL)
			fatal("sync_git: scan_held_events");
		stale[nstale++] = ge;
	}
	for (i = 0; i < nstale; i++) {
		ge = stale[i];
		hmap_del(&sg->sg_events, ge->ge_id, 32);
		LIST_REMOVE(ge, ge_entry);
		ge->ge_hunt->gh_nevents--;
		/* Gone after relayd was told: released, most likely. */
		sg->sg_released += ge->ge_hunt->gh_notified != 0;
		ev_free(ge);
	}
	free(stale);
	return 0;
}

/* Drops hunts without held events; starts those that are due. */
static void
run_hunts(struct sync_git *sg)
{
	struct git_hunt	**v, *h;
	int64_t		  now = role_now_ms();
	size_t		  n, i;

	v = hunts_array(sg, &n);
	for (i = 0; i < n; i++) {
		h = v[i];
		if (h->gh_nevents == 0) {
			/* Reference brief 3.15: it leaves the queue. */
			if (h->gh_pid == 0)
				hunt_free(sg, h);
			else if (!h->gh_gone) {
				h->gh_gone = 1;
				kill(h->gh_pid, SIGKILL);
				h->gh_killed = 1;
			}
			continue;
		}
		if (h->gh_step == HS_IDLE && now >= h->gh_next_ms &&
		    sg->sg_children < SYNC_GIT_MAX_CHILDREN)
			start_attempt(sg, h);
	}
	free(v);
}

/* Timers. */

static void
child_reaped(struct sync_git *sg, struct git_hunt *h, int status)
{
	enum hunt_step	step = h->gh_step;
	int		out = h->gh_out;

	sync_gitsrc_drain_err(h);
	/* A check's output is read before its descriptor goes. */
	h->gh_out = -1;
	sync_gitsrc_child_close(sg, h);
	h->gh_out = out;
	if (step == HS_CHECK && !h->gh_gone && !h->gh_abort) {
		sync_gitsrc_check_done(sg, h, status);
		return;
	}
	if (h->gh_out >= 0)
		close(h->gh_out);
	h->gh_out = -1;
	if (h->gh_gone || h->gh_abort) {
		if (h->gh_domain != NULL)
			h->gh_domain->gd_running--;
		h->gh_domain = NULL;
		if (h->gh_gone)
			hunt_free(sg, h);
		else {
			h->gh_abort = 0;
			sync_git_set_error(h, "attempt abandoned");
			sync_git_finish(sg, h);
		}
		return;
	}
	sync_gitsrc_fetch_done(sg, h, status);
}

static void
poll_cb(lws_sorted_usec_list_t *sul)
{
	struct sync_git	 *sg = lws_container_of(sul, struct sync_git,
			    sg_sul_poll);
	struct git_hunt	**v, *h;
	int64_t		  now = role_now_ms();
	size_t		  n, i;
	pid_t		  r;
	int		  st;

	sg->sg_poll_armed = 0;
	v = hunts_array(sg, &n);
	for (i = 0; i < n; i++) {
		h = v[i];
		if (h->gh_pid == 0)
			continue;
		sync_gitsrc_drain_err(h);
		r = waitpid(h->gh_pid, &st, WNOHANG);
		if (r == h->gh_pid || (r == -1 && errno == ECHILD)) {
			child_reaped(sg, h, r == -1 ? 255 : WIFEXITED(st) ?
			    WEXITSTATUS(st) : 128 + WTERMSIG(st));
			continue;
		}
		if (!h->gh_killed && now >= h->gh_deadline_ms) {
			log_warnx("git hunt %s: git process %ld overran its "
			    "time; killing it", h->gh_d, (long)h->gh_pid);
			kill(h->gh_pid, SIGKILL);
			h->gh_killed = 1;
		}
	}
	free(v);
	/* Hunts waiting for a domain or a slot (the map may have shrunk). */
	v = hunts_array(sg, &n);
	for (i = 0; i < n; i++)
		if (v[i]->gh_step == HS_FETCH_WAIT && v[i]->gh_pid == 0)
			sync_gitsrc_fetch_next(sg, v[i]);
	free(v);
	notices_run(sg);
	sync_git_arm_poll(sg);
}

void
sync_git_arm_poll(struct sync_git *sg)
{
	size_t	 it;
	void	*v;
	int	 need = sg->sg_children > 0 ||
		    !TAILQ_EMPTY(&sg->sg_notices);

	for (it = 0; !need && hmap_next(&sg->sg_hunts, &it, NULL, NULL,
	    &v); )
		need = ((struct git_hunt *)v)->gh_step == HS_FETCH_WAIT;
	if (!need || sg->sg_poll_armed || !sg->sg_running)
		return;
	sg->sg_poll_armed = 1;
	lws_sul_schedule(sg->sg_sd->sd_ctx->r_lws, 0, &sg->sg_sul_poll,
	    poll_cb, (lws_usec_t)(SYNC_GIT_POLL * 1e6));
}

static void
tick_cb(lws_sorted_usec_list_t *sul)
{
	struct sync_git	*sg = lws_container_of(sul, struct sync_git,
			    sg_sul_tick);

	sg->sg_gen++;
	feed_held_announcements(sg);
	if (scan_held_events(sg) == 0)
		run_hunts(sg);
	domains_prune(sg);
	notices_run(sg);
	sync_git_arm_poll(sg);
	lws_sul_schedule(sg->sg_sd->sd_ctx->r_lws, 0, &sg->sg_sul_tick,
	    tick_cb, (lws_usec_t)(cfg_period(sync_git_cfg(sg), SYNC_GIT_TICK) *
	    1e6));
}

/* The role hooks. */

void
sync_git_init(struct syncd *sd)
{
	struct sync_git	*sg;
	const struct config *cfg = &sd->sd_ctx->r_cfg;
	char		 ep[PATH_MAX + 64];
	int		 n, i;

	if ((sg = calloc(1, sizeof(*sg))) == NULL)
		fatal("sync_git_init");
	sd->sd_git = sg;
	sg->sg_sd = sd;
	sg->sg_sock = -1;
	TAILQ_INIT(&sg->sg_notices);
	if (!cfg->sync_enabled)
		return;
	sg->sg_purg = purg_open(sd->sd_ctx->r_store);
	sg->sg_urlflags = cfg->sync_allow_private_targets ?
	    RELAYURL_ALLOW_PRIVATE : 0;
	n = cfg->domain != NULL ? relayurl_self_keys(cfg->domain, sg->sg_self,
	    4) : 0;
	for (i = 0; i < n; i++)
		sg->sg_selfp[sg->sg_nself++] = sg->sg_self[i];
	if (chan_control_endpoint(cfg->run_path, ROLE_RELAYD, ep,
	    sizeof(ep)) == -1 || (sg->sg_sock = chan_open(NN_REQ, ep, 0)) ==
	    -1)
		log_warn("git hunt: no notice socket to relayd; fetched data "
		    "waits for the next push");
	sg->sg_running = 1;
	lws_sul_schedule(sd->sd_ctx->r_lws, 0, &sg->sg_sul_tick, tick_cb,
	    (lws_usec_t)(cfg_period(cfg, SYNC_GIT_TICK) * 1e6));
}

void
sync_git_fini(struct syncd *sd)
{
	struct sync_git		*sg = sd->sd_git;
	struct git_hunt		**v;
	struct git_notice	*gn;
	size_t			 n, i, it;
	void			*val;
	int			 st;

	if (sg == NULL)
		return;
	sg->sg_running = 0;
	lws_sul_cancel(&sg->sg_sul_tick);
	lws_sul_cancel(&sg->sg_sul_poll);
	v = hunts_array(sg, &n);
	for (i = 0; i < n; i++) {
		if (v[i]->gh_pid > 0) {
			kill(v[i]->gh_pid, SIGKILL);
			while (waitpid(v[i]->gh_pid, &st, 0) == -1 &&
			    errno == EINTR)
				;
			sync_gitsrc_child_close(sg, v[i]);
		}
		hunt_free(sg, v[i]);
	}
	free(v);
	for (it = 0; hmap_next(&sg->sg_events, &it, NULL, NULL, &val); )
		ev_free(val);
	hmap_free(&sg->sg_events);
	hmap_free(&sg->sg_hunts);
	hmap_free(&sg->sg_anns);
	for (it = 0; hmap_next(&sg->sg_domains, &it, NULL, NULL, &val); )
		free(val);
	hmap_free(&sg->sg_domains);
	while ((gn = TAILQ_FIRST(&sg->sg_notices)) != NULL) {
		TAILQ_REMOVE(&sg->sg_notices, gn, gn_entry);
		free(gn->gn_d);
		free(gn);
	}
	if (sg->sg_sock >= 0)
		chan_close(sg->sg_sock);
	purg_close(sg->sg_purg);
	free(sg);
	sd->sd_git = NULL;
}

static const char *
step_name(const struct git_hunt *h)
{
	switch (h->gh_step) {
	case HS_CHECK:
		return "checking";
	case HS_FETCH_WAIT:
		return "throttled";
	case HS_FETCH:
		return "fetching";
	default:
		return "waiting";
	}
}

void
sync_git_show(struct syncd *sd, cJSON *view)
{
	struct sync_git	*sg = sd->sd_git;
	cJSON		*arr, *o, *tot;
	int64_t		 now = role_now_ms();
	char		 hex[65];
	size_t		 it;
	void		*v;

	arr = cJSON_AddArrayToObject(view, "git_hunting");
	tot = cJSON_AddObjectToObject(view, "git_hunt");
	if (sg == NULL)
		return;
	for (it = 0; hmap_next(&sg->sg_hunts, &it, NULL, NULL, &v); ) {
		struct git_hunt *h = v;

		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "d", h->gh_d);
		if (h->gh_has_owner)
			hex_encode(h->gh_owner, 32, hex);
		cJSON_AddStringToObject(o, "owner", h->gh_has_owner ? hex :
		    "");
		cJSON_AddStringToObject(o, "state", step_name(h));
		cJSON_AddNumberToObject(o, "held_events",
		    (double)h->gh_nevents);
		cJSON_AddNumberToObject(o, "needed", (double)h->gh_needed);
		cJSON_AddNumberToObject(o, "missing", (double)h->gh_missing);
		cJSON_AddNumberToObject(o, "clone_urls",
		    (double)h->gh_nurls_last);
		cJSON_AddNumberToObject(o, "attempts", h->gh_attempts);
		cJSON_AddNumberToObject(o, "next_attempt_in",
		    h->gh_step != HS_IDLE || h->gh_next_ms == INT64_MAX ? -1 :
		    h->gh_next_ms <= now ? 0 : (double)(h->gh_next_ms - now) /
		    1000.0);
		cJSON_AddStringToObject(o, "last_error", h->gh_error);
		cJSON_AddItemToArray(arr, o);
	}
	cJSON_AddNumberToObject(tot, "attempts", (double)sg->sg_attempts);
	cJSON_AddNumberToObject(tot, "fetches_ok", (double)sg->sg_fetch_ok);
	cJSON_AddNumberToObject(tot, "fetches_failed",
	    (double)sg->sg_fetch_failed);
	cJSON_AddNumberToObject(tot, "fetches_timed_out",
	    (double)sg->sg_fetch_timeout);
	cJSON_AddNumberToObject(tot, "objects_fetched",
	    (double)sg->sg_objects);
	cJSON_AddNumberToObject(tot, "urls_refused", (double)sg->sg_refused);
	cJSON_AddNumberToObject(tot, "notices_ok", (double)sg->sg_notice_ok);
	cJSON_AddNumberToObject(tot, "notices_failed",
	    (double)sg->sg_notice_failed);
	cJSON_AddNumberToObject(tot, "events_released",
	    (double)sg->sg_released);
	cJSON_AddNumberToObject(tot, "git_processes", sg->sg_children);
}

void
sync_git_stats(struct syncd *sd, cJSON *metrics)
{
	struct sync_git	*sg = sd->sd_git;

	if (sg == NULL)
		return;
	role_metric(metrics, "graspd_syncd_git_hunts",
	    (double)sg->sg_hunts.hm_n);
	role_metric(metrics, "graspd_syncd_git_attempts_total",
	    (double)sg->sg_attempts);
	role_metric(metrics, "graspd_syncd_git_fetches_total{result=\"ok\"}",
	    (double)sg->sg_fetch_ok);
	role_metric(metrics,
	    "graspd_syncd_git_fetches_total{result=\"failed\"}",
	    (double)sg->sg_fetch_failed);
	role_metric(metrics,
	    "graspd_syncd_git_fetches_total{result=\"timeout\"}",
	    (double)sg->sg_fetch_timeout);
	role_metric(metrics, "graspd_syncd_git_objects_fetched_total",
	    (double)sg->sg_objects);
	role_metric(metrics, "graspd_syncd_git_urls_refused_total",
	    (double)sg->sg_refused);
	role_metric(metrics, "graspd_syncd_git_notices_total{result=\"ok\"}",
	    (double)sg->sg_notice_ok);
	role_metric(metrics,
	    "graspd_syncd_git_notices_total{result=\"failed\"}",
	    (double)sg->sg_notice_failed);
	role_metric(metrics, "graspd_syncd_git_events_released_total",
	    (double)sg->sg_released);
}
