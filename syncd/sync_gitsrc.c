/*
 * sync_gitsrc.c: the git source of syncd's git-data hunt (reference
 * brief 3.15; the hunt itself, one state machine per repository
 * identifier, is sync_git.c).  For an attempt it checks which wanted
 * objects the repository holds (git cat-file), fetches the missing ones
 * from each candidate clone URL in turn (git fetch, batched, then one at
 * a time when a server refuses one), and gathers the candidates: the
 * owners and clone URLs of the stored announcements with d, and the
 * repository on disk to fetch into.
 *
 * Every git command is a child process (posix_spawn) in a cleaned
 * environment, in common/child.c's table, which reaps it and kills it
 * past its deadline.  Clone URLs pass the relay target hygiene
 * (relayurl.h) and their host is resolved and vetted before every
 * attempt; git gets the vetted address pinned (http.curloptResolve), no
 * redirects, no protocol but http(s), no prompt and no credential helper.
 * The lookup runs on a resolver thread (common/resolve.h), as conn.c's
 * does before a dial, so a slow name server stalls only its own hunt.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "buf.h"
#include "child.h"
#include "event.h"
#include "filter.h"
#include "json.h"
#include "log.h"
#include "mem.h"
#include "nip19.h"
#include "pktline.h"
#include "relayurl.h"
#include "resolve.h"
#include "store.h"
#include "syncd.h"
#include "sync_git.h"

extern char **environ;

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
	static const char *const drop[] = { "GIT_",
		"http_proxy=", "https_proxy=", "all_proxy=", "no_proxy=",
		"ftp_proxy=", "SSH_ASKPASS=", "LC_",
		"LANG=", "LANGUAGE=", NULL };
	static const char *const add[] = { "GIT_TERMINAL_PROMPT=0",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"LC_ALL=C", NULL };
	char		       **e;
	size_t			 n = 0, k = 0, i, j;

	for (i = 0; environ[i] != NULL; i++)
		n++;
	if ((e = calloc(n + 8, sizeof(*e))) == NULL)
		fatal("sync_git: git_env");
	for (i = 0; environ[i] != NULL; i++) {
		for (j = 0; drop[j] != NULL; j++)
			if (strncasecmp(environ[i], drop[j], strlen(drop[j])) ==
			    0)
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
 * and no signal blocked, as h's child in common/child.c's table: killed
 * after timeout seconds, sync_git_child_done() once reaped.  0, or -1
 * after logging.
 */
static int
git_spawn(struct sync_git *sg, struct git_hunt *h, char *const argv[],
    int fd_in, int fd_out, int fd_err, double timeout)
{
	char **envp = git_env();
	char   what[512];
	pid_t  pid;

	snprintf(what, sizeof(what), "git hunt %s: git", h->gh_d);
	pid = child_start(argv, fd_in, fd_out, fd_err, envp,
	    (int64_t)(timeout * 1000), what, sync_git_child_done, h);
	free(envp);
	if (pid == -1) {
		log_warn("cannot run git");
		return -1;
	}
	h->gh_sg = sg;
	h->gh_pid = pid;
	h->gh_killed = 0;
	sync_git_arm_poll(sg);
	return 0;
}

/* Reads what a fetch wrote on stderr, keeping the last bytes only. */
void
sync_gitsrc_drain_err(struct git_hunt *h)
{
	char	chunk[4096];
	ssize_t n;

	if (h->gh_err < 0)
		return;
	while ((n = read(h->gh_err, chunk, sizeof(chunk))) > 0) {
		buf_add(&h->gh_errtail, chunk, (size_t)n);
		if (h->gh_errtail.b_len > 2 * SYNC_GIT_ERR_KEEP) {
			memmove(h->gh_errtail.b_data,
			    h->gh_errtail.b_data + h->gh_errtail.b_len -
				SYNC_GIT_ERR_KEEP,
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
}

/* The check: which wanted objects the repository holds. */

int
sync_gitsrc_check(struct sync_git *sg, struct git_hunt *h)
{
	char  gitdir[PATH_MAX + 16];
	char *argv[] = { "git", gitdir, "cat-file", "--batch-check", NULL };
	struct buf in = BUF_INIT;
	size_t	   i;
	int	   fd_in = -1, fd_out = -1;

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
	if (git_spawn(sg, h, argv, fd_in, fd_out, -1, SYNC_GIT_CHECK_TIMEOUT) ==
	    -1)
		goto fail;
	close(fd_in);
	buf_free(&in);
	h->gh_out = fd_out;
	h->gh_step = HS_CHECK;
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
	size_t i;

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
	struct git_want *w;
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
			w->gw_have =
			    strcmp(line + GIT_OID_HEX + 1, "missing") != 0;
	}
	free(text);
	return 0;
}

void
sync_gitsrc_check_done(struct sync_git *sg, struct git_hunt *h, int status)
{
	size_t i, missing = 0;
	int    bad;

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
	size_t i;

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
 * The current URL's host resolved (rc, ss and why as
 * relayurl_resolve_checked() gives them, every address vetted): the
 * first address is pinned for git.  0, or -1 with the error set.
 */
static int
vet_answer(struct sync_git *sg, struct git_hunt *h, struct git_url *u, int rc,
    const struct sockaddr_storage *ss, socklen_t sl, const char *why)
{
	char addr[NI_MAXHOST];

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
	if (getnameinfo((const struct sockaddr *)ss, sl, addr, sizeof(addr),
		NULL, 0, NI_NUMERICHOST) != 0) {
		sync_git_set_error(h, "%s: cannot print the resolved address",
		    u->gu_ru.ru_authority);
		return -1;
	}
	snprintf(h->gh_pin, sizeof(h->gh_pin),
	    "http.curloptResolve=%s:%d:%s%s%s", u->gu_ru.ru_host,
	    u->gu_ru.ru_port, ss->ss_family == AF_INET6 ? "[" : "", addr,
	    ss->ss_family == AF_INET6 ? "]" : "");
	return 0;
}

/* The lookup of the current URL's host answered (on the loop). */
static void
url_resolved(void *arg, int rc, const struct sockaddr_storage *ss, socklen_t sl,
    const char *why)
{
	struct git_hunt *h = arg;
	struct sync_git *sg = h->gh_sg;

	h->gh_resolve = 0;
	h->gh_step = HS_FETCH_WAIT;
	if (vet_answer(sg, h, &h->gh_urls[h->gh_url], rc, ss, sl, why) == -1)
		next_url(h);
	else
		h->gh_vetted = 1;
	sync_gitsrc_fetch_next(sg, h);
}

/*
 * Vets the current URL's host (relayurl.h): an IP literal at once (0, or
 * -1 with the error set), a name on a resolver thread (1: the hunt waits
 * in HS_RESOLVE and url_resolved() goes on), so a slow name server does
 * not stall syncd.
 */
static int
vet_url(struct sync_git *sg, struct git_hunt *h, struct git_url *u)
{
	struct sockaddr_storage ss;
	socklen_t		sl = sizeof(ss);
	const char	       *why = NULL;
	int			rc;

	if (u->gu_ru.ru_family != AF_UNSPEC) {
		rc = relayurl_resolve_checked(u->gu_key, sg->sg_urlflags, &ss,
		    &sl, &why);
		return vet_answer(sg, h, u, rc, &ss, sl, why);
	}
	h->gh_sg = sg;
	h->gh_resolve = resolve_start(sg->sg_sd->sd_ctx->r_lws, u->gu_key,
	    sg->sg_urlflags, RESOLVE_TIMEOUT, url_resolved, h, &why);
	if (h->gh_resolve == 0)
		return vet_answer(sg, h, u, -2, NULL, 0, why);
	h->gh_step = HS_RESOLVE;
	return 1;
}

static int
spawn_fetch(struct sync_git *sg, struct git_hunt *h, struct git_url *u)
{
	char   lowspeed[32], gitdir[PATH_MAX + 16];
	char  *argv[40 + SYNC_GIT_MAX_WANTS];
	size_t n = 0, i;
	int    p[2];

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
	for (i = 0; child_git_fetch[i] != NULL; i++)
		argv[n++] = (char *)child_git_fetch[i];
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
	    git_spawn(sg, h, argv, -1, -1, p[1],
		cfg_scale_delay(sync_git_cfg(sg), SYNC_GIT_FETCH_TIMEOUT)) ==
		-1) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	close(p[1]);
	h->gh_err = p[0];
	buf_reset(&h->gh_errtail);
	h->gh_step = HS_FETCH;
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
	struct git_url *u;
	size_t		i, max;
	int64_t		now;
	int		rc;

	for (;;) {
		if (h->gh_url >= h->gh_nurls) {
			end_fetching(sg, h);
			return;
		}
		u = &h->gh_urls[h->gh_url];
		if (h->gh_batch == NULL &&
		    (h->gh_batch = calloc(SYNC_GIT_MAX_WANTS,
			 sizeof(*h->gh_batch))) == NULL)
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
			if ((rc = vet_url(sg, h, u)) == -1) {
				next_url(h);
				continue;
			}
			if (rc == 1)
				return; /* url_resolved() goes on */
			h->gh_vetted = 1;
		}
		now = role_now_ms();
		h->gh_domain = sync_git_domain_get(sg, u->gu_ru.ru_host);
		if (!sync_git_domain_allows(h->gh_domain, now) ||
		    child_count() >= SYNC_GIT_MAX_CHILDREN) {
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
	const char		*t = h->gh_errtail.b_data, *p, *end;
	size_t			 i, k, len = h->gh_errtail.b_len;

	if (t == NULL)
		return -1;
	end = t + len;
	for (k = 0; pats[k] != NULL; k++) {
		size_t pl = strlen(pats[k]);

		for (p = t;
		     (p = memmem(p, (size_t)(end - p), pats[k], pl)) != NULL;
		     p += pl) {
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
	const char *t = h->gh_errtail.b_data;
	size_t	    len = h->gh_errtail.b_len, s, e, i, k = 0;

	out[0] = '\0';
	if (t == NULL)
		return;
	while (len > 0 &&
	    (t[len - 1] == '\n' || t[len - 1] == '\r' || t[len - 1] == ' '))
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
	struct git_url *u = &h->gh_urls[h->gh_url];
	char		line[160];
	ssize_t		bad;
	size_t		i;

	if (h->gh_domain != NULL)
		h->gh_domain->gd_running--;
	h->gh_domain = NULL;
	if (!h->gh_killed && status == 0) {
		sg->sg_fetch_ok++;
		sg->sg_objects += h->gh_nbatch;
		for (i = 0; i < h->gh_nbatch; i++)
			h->gh_wants[h->gh_batch[i]].gw_have = 1;
		h->gh_fetched = 1;
		log_info("git hunt %s: fetched %zu object(s) from %s", h->gh_d,
		    h->gh_nbatch, u->gu_ru.ru_authority);
	} else if (h->gh_killed) {
		/* A server that does not answer fails only its own fetch. */
		sg->sg_fetch_timeout++;
		sync_git_set_error(h, "%s: no answer in %.0f s",
		    u->gu_ru.ru_authority,
		    cfg_scale_delay(sync_git_cfg(sg), SYNC_GIT_FETCH_TIMEOUT));
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

/* Sources: the owners with identifier d and their clone URLs. */

void
sync_gitsrc_sources_add(struct git_sources *so, const struct event *ev,
    int owner)
{
	const struct event_tag *t;
	uint32_t		i, j;

	if (owner) {
		if ((so->so_owners = reallocarray(so->so_owners,
			 so->so_nowners + 1, 32)) == NULL)
			fatal("sync_git: sources_add");
		memcpy(so->so_owners[so->so_nowners++], ev->pubkey, PUBKEY_LEN);
	}
	for (i = 0; i < ev->ntags; i++) {
		t = &ev->tags[i];
		if (strcmp(t->v[0].s, "clone") != 0)
			continue;
		for (j = 1; j < t->n && so->so_nurls < 4 * SYNC_GIT_MAX_URLS;
		     j++)
			if (t->v[j].len <= RELAYURL_MAX)
				strv_add(&so->so_urls, &so->so_nurls,
				    t->v[j].s);
	}
}

static int
stored_cb(const char *json, size_t len, int64_t seq, void *arg)
{
	struct event *ev;
	char	      err[64];

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
	struct json_doc *doc = NULL;
	struct json	*root;
	struct filter	 f;
	char		 err[128];
	int		 rc = -1;

	buf_adds(&b, "{\"kinds\":[30617],\"#d\":[");
	buf_add_jstr(&b, d, strlen(d));
	buf_adds(&b, "]}");
	if ((root = json_parse(b.b_data, b.b_len, &doc, err, sizeof(err))) !=
	    NULL) {
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
	strv_free(so->so_urls, so->so_nurls);
}

/*
 * A clone URL as a candidate: http or https only, checked and
 * canonicalized like a relay target (as ws or wss, under the relay
 * targets' flags), not this service, not twice.  Refusals are counted.
 */
void
sync_gitsrc_url_add(struct sync_git *sg, struct git_hunt *h, const char *raw)
{
	char		ws[RELAYURL_MAX + 16], key[RELAYURL_MAX + 1];
	struct git_url *u;
	struct buf	b = BUF_INIT;
	const char     *why = NULL, *rest;
	size_t		i;
	int		tls, n;

	if (h->gh_nurls >= SYNC_GIT_MAX_URLS)
		return;
	if (strncasecmp(raw, "https://", 8) == 0) {
		tls = 1;
		rest = raw + 8;
	} else if (strncasecmp(raw, "http://", 7) == 0) {
		tls = 0;
		rest = raw + 7;
	} else
		return; /* ssh, git, ...: not ours to try */
	n = snprintf(ws, sizeof(ws), "%s://%s", tls ? "wss" : "ws", rest);
	if (n < 0 || (size_t)n >= sizeof(ws) ||
	    relayurl_canon(ws, (size_t)n, sg->sg_urlflags, key, sizeof(key),
		&why) == -1) {
		sg->sg_refused++;
		sync_git_set_error(h, "clone URL refused: %s",
		    why ? why : "too long");
		log_debug("git hunt %s: clone URL %s refused: %s", h->gh_d, raw,
		    why ? why : "too long");
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
sync_gitsrc_repo_of(struct sync_git *sg, const uint8_t owner[PUBKEY_LEN],
    const char *d, char *out, size_t outlen)
{
	char	    npub[NIP19_KEY_BUFSZ];
	struct stat sb;
	int	    n;

	if (nip19_encode("npub", owner, npub, sizeof(npub)) == -1)
		return -1;
	n = snprintf(out, outlen, "%s/%s/%s.git",
	    sync_git_cfg(sg)->git_data_path, npub, d);
	if (n < 0 || (size_t)n >= outlen || stat(out, &sb) == -1 ||
	    !S_ISDIR(sb.st_mode))
		return -1;
	return 0;
}
