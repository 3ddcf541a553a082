/*
 * relay_job.c: relayd's queue of maintenance jobs that change refs: copy
 * objects between repositories with a local "git fetch", "git
 * update-ref", HEAD; and the jobs that keep a repository's objects in
 * shape: the prune of what placeholders left, and the background
 * maintenance that repacks a repository after enough pushes (counted
 * here) or hours.  Jobs run one at a time, in order, so the changes to
 * one repository never race each other; their git processes are
 * relay_repo.c's children.
 */
#define _GNU_SOURCE
#include <sys/mman.h>

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "event.h"
#include "log.h"
#include "relayd.h"

enum job_kind {
	JOB_ALIGN,
	JOB_SET_REF,
	JOB_DELETE_REF,
	JOB_CALL,
	JOB_PRUNE,
};

struct relay_job {
	TAILQ_ENTRY(relay_job) j_entry;
	enum job_kind	       j_kind;
	uint8_t		       j_owner[PUBKEY_LEN];
	uint8_t		       j_src[PUBKEY_LEN];
	int		       j_has_src;
	char		      *j_d;
	struct event	      *j_state;	   /* JOB_ALIGN */
	char		      *j_ref;	   /* JOB_SET_REF, JOB_DELETE_REF */
	char		      *j_src_path; /* JOB_SET_REF from a path */
	char		       j_oid[GIT_OID_HEX + 1];
	void (*j_fn)(void *);
	void *j_arg;
	int   j_step;
	int   j_changed; /* refs were written */
};

static TAILQ_HEAD(, relay_job) jobs = TAILQ_HEAD_INITIALIZER(jobs);
static struct relay_job *job_running;

static void job_next(void);
static int  job_git(struct relay_job *, const char *, const char *const *, int);
static void maint_child_done(pid_t, int, int, void *);

static struct relay_job *
job_new(enum job_kind kind, const uint8_t owner[PUBKEY_LEN], const char *d,
    const uint8_t src[PUBKEY_LEN])
{
	struct relay_job *j;

	if ((j = calloc(1, sizeof(*j))) == NULL)
		fatal("job_new");
	j->j_kind = kind;
	if (owner)
		memcpy(j->j_owner, owner, PUBKEY_LEN);
	if (src) {
		memcpy(j->j_src, src, PUBKEY_LEN);
		j->j_has_src = 1;
	}
	if (d && (j->j_d = strdup(d)) == NULL)
		fatal("job_new");
	return j;
}

static void
job_free(struct relay_job *j)
{
	event_destroy(j->j_state);
	free(j->j_d);
	free(j->j_ref);
	free(j->j_src_path);
	free(j);
}

static void
job_queue(struct relay_job *j)
{
	TAILQ_INSERT_TAIL(&jobs, j, j_entry);
	if (job_running == NULL)
		job_next();
}

void
relay_job_align(const uint8_t owner[PUBKEY_LEN], const char *d,
    const struct event *state, const uint8_t src[PUBKEY_LEN])
{
	struct relay_job *j = job_new(JOB_ALIGN, owner, d, src);
	char		  err[64];

	if ((j->j_state = event_parse(state->json, state->json_len, err,
		 sizeof(err))) == NULL)
		fatalx("relay_job_align: %s", err);
	job_queue(j);
}

/* Queues a job of kind on ref with oid (the new or the expected value). */
static void
job_queue_ref(enum job_kind kind, const uint8_t owner[PUBKEY_LEN],
    const char *d, const char *ref, const char *oid,
    const uint8_t src[PUBKEY_LEN], const char *src_path)
{
	struct relay_job *j = job_new(kind, owner, d, src);

	if ((j->j_ref = strdup(ref)) == NULL ||
	    (src_path != NULL && (j->j_src_path = strdup(src_path)) == NULL))
		fatal("relay_job: %s", ref);
	snprintf(j->j_oid, sizeof(j->j_oid), "%s", oid);
	job_queue(j);
}

void
relay_job_set_ref(const uint8_t owner[PUBKEY_LEN], const char *d,
    const char *ref, const char *oid, const uint8_t src[PUBKEY_LEN])
{
	job_queue_ref(JOB_SET_REF, owner, d, ref, oid, src, NULL);
}

void
relay_job_set_ref_from(const uint8_t owner[PUBKEY_LEN], const char *d,
    const char *ref, const char *oid, const char *src_path)
{
	job_queue_ref(JOB_SET_REF, owner, d, ref, oid, NULL, src_path);
}

void
relay_job_delete_ref(const uint8_t owner[PUBKEY_LEN], const char *d,
    const char *ref, const char *old)
{
	job_queue_ref(JOB_DELETE_REF, owner, d, ref, old, NULL, NULL);
}

void
relay_job_prune(const uint8_t owner[PUBKEY_LEN], const char *d)
{
	job_queue(job_new(JOB_PRUNE, owner, d, NULL));
}

/* A prune put off while a push runs in its repository. */
struct job_wait {
	lws_sorted_usec_list_t jw_sul;
	enum job_kind	       jw_kind;
	uint8_t		       jw_owner[PUBKEY_LEN];
	char		      *jw_d;
};

static void
job_retry(lws_sorted_usec_list_t *sul)
{
	struct job_wait *jw = lws_container_of(sul, struct job_wait, jw_sul);

	job_queue(job_new(jw->jw_kind, jw->jw_owner, jw->jw_d, NULL));
	free(jw->jw_d);
	free(jw);
}

/*
 * Puts j off by RELAY_PRUNE_RETRY_S when a push runs in repo, to be
 * queued again then.  1 if put off, else 0.
 */
static int
job_defer(struct relay_job *j, const char *repo)
{
	struct job_wait *jw;

	if (!relay_git_pushing(repo))
		return 0;
	if ((jw = calloc(1, sizeof(*jw))) == NULL ||
	    (jw->jw_d = strdup(j->j_d)) == NULL)
		fatal("job_defer");
	jw->jw_kind = j->j_kind;
	memcpy(jw->jw_owner, j->j_owner, PUBKEY_LEN);
	lws_sul_schedule(relayd->ctx, 0, &jw->jw_sul, job_retry,
	    (lws_usec_t)RELAY_PRUNE_RETRY_S * LWS_US_PER_SEC);
	return 1;
}

/*
 * Drops the objects of repo that no ref reaches and that are older than a
 * placeholder's life ("git gc --prune"): never while a push runs there
 * (put off by RELAY_PRUNE_RETRY_S), and the age guards objects a push
 * starting meanwhile brings.  1 if git runs, 0 if put off, -1.
 */
static int
prune_step(struct relay_job *j, const char *repo)
{
	char	    prune[64];
	const char *args[] = { "-c", "gc.auto=0", "gc", "--quiet", prune,
		NULL };

	if (job_defer(j, repo))
		return 0;
	snprintf(prune, sizeof(prune), "--prune=%lld.seconds.ago",
	    (long long)relay_purg_delay(PURG_EXPIRY_S));
	return job_git(j, repo, args, -1) == 0 ? 1 : -1;
}

/*
 * Background maintenance.  The repositories pushed to since their last
 * maintenance, each with its count of pushes and the time of the first;
 * kept in memory (after a restart the count starts over).  One repository
 * is maintained at a time, beside the job queue rather than in it: every
 * push's answer waits for a JOB_CALL behind the queue
 * (relay_purg_pushed()), and a repack queued there held the answers of
 * pushes to every repository for as long as it ran.  It starts only when
 * no push runs in the repository and no job on it is queued or runs; a
 * job or a push that comes while it runs goes ahead beside it, as git's
 * own "gc --auto" after a receive-pack runs beside the next push: git
 * repack deletes only the packs it read and keeps what they held, and
 * ref updates take their own locks.
 */
struct maint {
	LIST_ENTRY(maint) m_entry;
	uint8_t		  m_owner[PUBKEY_LEN];
	char		 *m_d;
	int		  m_pushes;
	int64_t		  m_since; /* ms */
	int		  m_due;   /* waits for its turn */
};

static LIST_HEAD(, maint) maints = LIST_HEAD_INITIALIZER(maints);
static int		      nmaints, ndue;
static struct maint	     *maint_cur; /* the one running */
static int		      maint_stepno;
static int64_t		      maint_t0; /* ms */
static lws_sorted_usec_list_t maint_sul, maint_retry_sul;
static int		      maint_sul_on, maint_retry_on;

static void maint_kick(void);

static struct maint *
maint_find(const uint8_t owner[PUBKEY_LEN], const char *d)
{
	struct maint *m;

	LIST_FOREACH(m, &maints, m_entry)
		if (memcmp(m->m_owner, owner, PUBKEY_LEN) == 0 &&
		    strcmp(m->m_d, d) == 0)
			return m;
	return NULL;
}

static void
maint_due(struct maint *m)
{
	if (m->m_due || m == maint_cur)
		return;
	m->m_due = 1;
	ndue++;
}

static void
maint_free(struct maint *m)
{
	if (m->m_due)
		ndue--;
	LIST_REMOVE(m, m_entry);
	nmaints--;
	free(m->m_d);
	free(m);
}

/* 1 if a job on (owner, d) is queued or runs. */
static int
job_on(const uint8_t owner[PUBKEY_LEN], const char *d)
{
	struct relay_job *j;

	if (job_running != NULL && job_running->j_d != NULL &&
	    memcmp(job_running->j_owner, owner, PUBKEY_LEN) == 0 &&
	    strcmp(job_running->j_d, d) == 0)
		return 1;
	TAILQ_FOREACH(j, &jobs, j_entry)
		if (j->j_d != NULL &&
		    memcmp(j->j_owner, owner, PUBKEY_LEN) == 0 &&
		    strcmp(j->j_d, d) == 0)
			return 1;
	return 0;
}

static void
maint_scan(lws_sorted_usec_list_t *sul)
{
	struct maint *m;
	double	      due = (double)relayd->cfg.git_maintenance_hours * 3600;

	(void)sul;
	maint_sul_on = 0;
	if (due == 0 || LIST_EMPTY(&maints))
		return;
	due = cfg_scale_delay(&relayd->cfg, due) * 1000;
	LIST_FOREACH(m, &maints, m_entry)
		if (m->m_pushes > 0 &&
		    (double)(relay_now_ms() - m->m_since) >= due)
			maint_due(m);
	maint_kick();
	maint_sul_on = 1;
	lws_sul_schedule(relayd->ctx, 0, &maint_sul, maint_scan,
	    (lws_usec_t)cfg_period(&relayd->cfg, RELAY_MAINT_SCAN_S) *
		LWS_US_PER_SEC);
}

static void
maint_retry(lws_sorted_usec_list_t *sul)
{
	(void)sul;
	maint_retry_on = 0;
	maint_kick();
}

void
relay_job_pushed(const uint8_t owner[PUBKEY_LEN], const char *d)
{
	struct maint *m;

	if (relayd->cfg.git_maintenance_pushes == 0 &&
	    relayd->cfg.git_maintenance_hours == 0)
		return;
	if ((m = maint_find(owner, d)) == NULL) {
		if (nmaints >= RELAY_MAINT_MAX_TRACKED)
			return;
		if ((m = calloc(1, sizeof(*m))) == NULL ||
		    (m->m_d = strdup(d)) == NULL)
			fatal("relay_job_pushed");
		memcpy(m->m_owner, owner, PUBKEY_LEN);
		LIST_INSERT_HEAD(&maints, m, m_entry);
		nmaints++;
	}
	if (m->m_pushes++ == 0)
		m->m_since = relay_now_ms();
	if (relayd->cfg.git_maintenance_pushes > 0 &&
	    m->m_pushes >= relayd->cfg.git_maintenance_pushes)
		maint_due(m);
	if (!maint_sul_on && relayd->cfg.git_maintenance_hours > 0) {
		maint_sul_on = 1;
		lws_sul_schedule(relayd->ctx, 0, &maint_sul, maint_scan,
		    (lws_usec_t)cfg_period(&relayd->cfg, RELAY_MAINT_SCAN_S) *
			LWS_US_PER_SEC);
	}
	maint_kick();
}

/* The running maintenance ended, its git done (ok) or failed. */
static void
maint_finish(int ok)
{
	struct maint *m = maint_cur;
	double	      secs = (double)(relay_now_ms() - maint_t0) / 1000;

	maint_cur = NULL;
	relayd->stats.git_maint[ok ? 1 : 0]++;
	relayd->stats.git_maint_running = 0;
	relayd->stats.git_maint_seconds += secs;
	log_info("git maintenance of %s %s in %.1f s", m->m_d,
	    ok ? "done" : "failed", secs);
	/* Pushes that landed meanwhile count toward the next one. */
	if (m->m_pushes == 0)
		maint_free(m);
	else if (relayd->cfg.git_maintenance_pushes > 0 &&
	    m->m_pushes >= relayd->cfg.git_maintenance_pushes)
		maint_due(m);
	maint_kick();
}

/*
 * Runs "nice -n RELAY_MAINT_NICE git --git-dir=repo args..." as the
 * running maintenance's git, with RELAY_MAINT_TIMEOUT_S.  0 or -1.
 */
static int
maint_git(const char *repo, const char *const *args)
{
	char  *argv[32], gitdir[PATH_MAX + 16];
	size_t n = 0, i;

	snprintf(gitdir, sizeof(gitdir), "--git-dir=%s", repo);
	argv[n++] = "nice";
	argv[n++] = "-n";
	argv[n++] = RELAY_MAINT_NICE;
	argv[n++] = "git";
	argv[n++] = gitdir;
	for (i = 0; args[i] != NULL && n < 31; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	return relay_child_spawn(argv, -1, -1, NULL, RELAY_MAINT_TIMEOUT_S,
		   maint_child_done, NULL) == -1 ?
	    -1 :
	    0;
}

/*
 * The steps of a maintenance: all objects into one pack with a
 * reachability bitmap (what upload-pack counts a clone with), nothing
 * dropped (--keep-unreachable: the prune decides what goes, by age),
 * then the commit-graph.  Under RELAY_MAINT_NICE with
 * RELAY_MAINT_THREADS.  Not "git pack-refs": relayd reads refs itself,
 * packed-refs then the loose ones, and a pack-refs between the two reads
 * would hide a ref from a push's authorisation.  Not "git gc": it
 * prunes.  0 if git runs, 1 when done, -1.
 */
static int
maint_next_step(void)
{
	static const char *const repack[] = { "-c", RELAY_MAINT_THREADS, "-c",
		"gc.auto=0", "repack", "-a", "-d", "-q", "--keep-unreachable",
		"--write-bitmap-index", NULL };
	static const char *const graph[] = { "-c", "gc.auto=0", "commit-graph",
		"write", "--reachable", "--no-progress", NULL };
	char			 repo[PATH_MAX];

	if (relay_repo_path(maint_cur->m_owner, maint_cur->m_d, repo,
		sizeof(repo)) == -1 ||
	    !relay_repo_exists(maint_cur->m_owner, maint_cur->m_d))
		return 1; /* gone meanwhile */
	switch (maint_stepno++) {
	case 0:
		return maint_git(repo, repack);
	case 1:
		return maint_git(repo, graph);
	default:
		return 1;
	}
}

static void
maint_child_done(pid_t pid, int status, int killed, void *arg)
{
	int rc;

	(void)pid;
	(void)killed;
	(void)arg;
	if (status != 0) {
		maint_finish(0);
		return;
	}
	if ((rc = maint_next_step()) != 0)
		maint_finish(rc == 1);
}

/*
 * Starts the maintenance of a due repository when none runs, skipping
 * those with a push running or a job queued (tried again
 * RELAY_PRUNE_RETRY_S later).
 */
static void
maint_kick(void)
{
	struct maint *m, *next;
	char	      repo[PATH_MAX];
	int	      waiting = 0, rc;

	if (maint_cur != NULL || ndue == 0)
		return;
	for (m = LIST_FIRST(&maints); m != NULL; m = next) {
		next = LIST_NEXT(m, m_entry);
		if (!m->m_due)
			continue;
		if (relay_repo_path(m->m_owner, m->m_d, repo, sizeof(repo)) ==
			-1 ||
		    !relay_repo_exists(m->m_owner, m->m_d)) {
			maint_free(m);
			continue;
		}
		if (relay_git_pushing(repo) || job_on(m->m_owner, m->m_d)) {
			waiting = 1;
			continue;
		}
		m->m_due = 0;
		ndue--;
		m->m_pushes = 0;
		maint_cur = m;
		maint_stepno = 0;
		maint_t0 = relay_now_ms();
		relayd->stats.git_maint_running = 1;
		if ((rc = maint_next_step()) != 0)
			maint_finish(rc == 1);
		return;
	}
	if (waiting) {
		relayd->stats.git_maint_deferred++;
		if (!maint_retry_on) {
			maint_retry_on = 1;
			lws_sul_schedule(relayd->ctx, 0, &maint_retry_sul,
			    maint_retry,
			    (lws_usec_t)RELAY_PRUNE_RETRY_S * LWS_US_PER_SEC);
		}
	}
}

void
relay_job_metrics(cJSON *arr)
{
	const struct relay_stats *st = &relayd->stats;

	relay_metric(arr, "graspd_git_maintenance_total{status=\"success\"}",
	    (double)st->git_maint[1]);
	relay_metric(arr, "graspd_git_maintenance_total{status=\"error\"}",
	    (double)st->git_maint[0]);
	relay_metric(arr, "graspd_git_maintenance_deferred_total",
	    (double)st->git_maint_deferred);
	relay_metric(arr, "graspd_git_maintenance_running",
	    st->git_maint_running);
	relay_metric(arr, "graspd_git_maintenance_seconds_total",
	    st->git_maint_seconds);
	relay_metric(arr, "graspd_git_maintenance_waiting", ndue);
}

void
relay_job_call(void (*fn)(void *), void *arg)
{
	struct relay_job *j = job_new(JOB_CALL, NULL, NULL, NULL);

	j->j_fn = fn;
	j->j_arg = arg;
	job_queue(j);
}

/* A state's desired refs: branches and tags, and HEAD's branch. */
struct desired {
	struct relay_refs refs;
	char		 *head;
};

static void desired_of(const struct event *, struct desired *);

void
relay_state_refs(const struct event *state, struct relay_refs *refs,
    char **headp)
{
	struct desired w;

	desired_of(state, &w);
	*refs = w.refs;
	*headp = w.head;
}

int
relay_state_values_ok(const struct event *state)
{
	const struct event_tag *t;
	uint32_t		i;
	size_t			len;

	for (i = 0; i < state->ntags; i++) {
		t = &state->tags[i];
		if (t->n < 2 ||
		    (strncmp(t->v[0].s, "refs/heads/", 11) != 0 &&
			strncmp(t->v[0].s, "refs/tags/", 10) != 0))
			continue;
		len = t->v[0].len;
		if (len >= 3 && strcmp(t->v[0].s + len - 3, "^{}") == 0)
			continue;
		if (!pkt_is_oid(t->v[1].s, t->v[1].len))
			return 0;
	}
	return 1;
}

void
relay_state_bad_refs(const struct event *state, struct relay_refs *refs)
{
	const struct event_tag *t;
	char			v[GIT_OID_HEX + 1];
	uint32_t		i;
	size_t			len;

	for (i = 0; i < state->ntags; i++) {
		t = &state->tags[i];
		if (t->n < 2 ||
		    (strncmp(t->v[0].s, "refs/heads/", 11) != 0 &&
			strncmp(t->v[0].s, "refs/tags/", 10) != 0))
			continue;
		len = t->v[0].len;
		if ((len >= 3 && strcmp(t->v[0].s + len - 3, "^{}") == 0) ||
		    pkt_is_oid(t->v[1].s, t->v[1].len) ||
		    memchr(t->v[0].s, '\n', len) || memchr(t->v[0].s, ' ', len))
			continue;
		/* Padded with NULs: relay_refs_set() copies 40 bytes.  A
		 * longer value is cut with "..." so that it stays no id. */
		memset(v, 0, sizeof(v));
		if (t->v[1].len > GIT_OID_HEX)
			snprintf(v, sizeof(v), "%.*s...", GIT_OID_HEX - 3,
			    t->v[1].s);
		else
			memcpy(v, t->v[1].s, t->v[1].len);
		relay_refs_set(refs, t->v[0].s, v);
	}
}

static void
desired_of(const struct event *state, struct desired *w)
{
	const struct event_tag *t;
	uint32_t		i;
	size_t			len;

	memset(w, 0, sizeof(*w));
	for (i = 0; i < state->ntags; i++) {
		t = &state->tags[i];
		if (t->n < 2)
			continue;
		if (strcmp(t->v[0].s, "HEAD") == 0) {
			const char *v = t->v[1].s;

			if (strncmp(v, "ref: ", 5) == 0)
				v += 5;
			if (strncmp(v, "refs/heads/", 11) == 0 &&
			    w->head == NULL && (w->head = strdup(v)) == NULL)
				fatal("desired_of");
			continue;
		}
		if (strncmp(t->v[0].s, "refs/heads/", 11) != 0 &&
		    strncmp(t->v[0].s, "refs/tags/", 10) != 0)
			continue;
		len = t->v[0].len;
		if (len >= 3 && strcmp(t->v[0].s + len - 3, "^{}") == 0)
			continue;
		if (!pkt_is_oid(t->v[1].s, t->v[1].len) ||
		    memchr(t->v[0].s, '\n', len) || memchr(t->v[0].s, ' ', len))
			continue;
		relay_refs_set(&w->refs, t->v[0].s, t->v[1].s);
	}
}

static void
desired_free(struct desired *w)
{
	relay_refs_free(&w->refs);
	free(w->head);
}

static void job_child_done(pid_t, int, int, void *);

/* Runs git with args in repo; the job waits for it.  0 or -1. */
static int
job_git(struct relay_job *j, const char *repo, const char *const *args,
    int fd_in)
{
	char  *argv[64], gitdir[PATH_MAX + 16];
	size_t n = 0, i;

	snprintf(gitdir, sizeof(gitdir), "--git-dir=%s", repo);
	argv[n++] = "git";
	argv[n++] = gitdir;
	for (i = 0; args[i] != NULL && n < 63; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	return relay_child_spawn(argv, fd_in, -1, NULL, RELAY_GIT_JOB_TIMEOUT_S,
		   job_child_done, j) == -1 ?
	    -1 :
	    0;
}

/*
 * Copies the objects of want missing from repo out of the source
 * repository.  1 if a fetch runs, 0 if nothing is missing, -1.
 */
static int
job_fetch(struct relay_job *j, const char *repo, const char *const *want,
    size_t n)
{
	char	    src[PATH_MAX];
	const char *args[64];
	size_t	    k = 0, i;

	for (i = 0; i < n; i++)
		if (!relay_repo_has_object(repo, want[i]))
			break;
	if (i == n)
		return 0;
	if (j->j_src_path != NULL)
		snprintf(src, sizeof(src), "%s", j->j_src_path);
	else if (!j->j_has_src ||
	    memcmp(j->j_src, j->j_owner, PUBKEY_LEN) == 0 ||
	    relay_repo_path(j->j_src, j->j_d, src, sizeof(src)) == -1)
		return -1;
	/* The source is ours and local: any object in it may be asked. */
	args[k++] = "-c";
	args[k++] = "uploadpack.allowAnySHA1InWant=true";
	for (i = 0; child_git_fetch[i] != NULL; i++)
		args[k++] = child_git_fetch[i];
	args[k++] = src;
	for (i = 0; i < n && k < 60; i++)
		if (!relay_repo_has_object(repo, want[i]))
			args[k++] = want[i];
	args[k] = NULL;
	return job_git(j, repo, args, -1) == 0 ? 1 : -1;
}

/* Writes HEAD as a symbolic ref to branch, the way git locks it. */
static int
write_head(const char *repo, const char *branch)
{
	char lock[PATH_MAX], path[PATH_MAX], text[PATH_MAX];
	int  fd, n;

	if (snprintf(path, sizeof(path), "%s/HEAD", repo) >=
		(int)sizeof(path) ||
	    snprintf(lock, sizeof(lock), "%s/HEAD.lock", repo) >=
		(int)sizeof(lock))
		return -1;
	n = snprintf(text, sizeof(text), "ref: %s\n", branch);
	if (n < 0 || n >= (int)sizeof(text))
		return -1;
	if ((fd = open(lock, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) ==
	    -1)
		return -1;
	if (write(fd, text, (size_t)n) != n || close(fd) == -1) {
		unlink(lock);
		return -1;
	}
	if (rename(lock, path) == -1) {
		unlink(lock);
		return -1;
	}
	return 0;
}

/* An anonymous file holding text, positioned at its start; or -1. */
static int
text_fd(const char *text, size_t len)
{
	int fd;

	if ((fd = memfd_create("graspd-stdin", MFD_CLOEXEC)) == -1)
		return -1;
	if (write(fd, text, len) != (ssize_t)len ||
	    lseek(fd, 0, SEEK_SET) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * One step of an align job.  1 if a git process runs (the job continues
 * when it ends), 0 when the job is done, -1 when it failed.
 */
static int
align_step(struct relay_job *j, const char *repo)
{
	static const char *const prefixes[] = { "refs/heads/", "refs/tags/",
		NULL };
	static const char *const update[] = { "update-ref", "--stdin", NULL };
	struct desired		 w;
	struct relay_refs	 cur;
	struct buf		 b = BUF_INIT;
	const char		*want[64] = { NULL }, *o;
	const char		*head = NULL;
	size_t			 i, n = 0;
	int			 rc = 0, fd;

	desired_of(j->j_state, &w);
	switch (j->j_step) {
	case 0:
		for (i = 0; i < w.refs.n && n < 56; i++)
			want[n++] = w.refs.v[i].rf_oid;
		j->j_step = 1;
		if ((rc = job_fetch(j, repo, want, n)) != 0)
			break;
		/* FALLTHROUGH */
	case 1:
		j->j_step = 2;
		if (relay_repo_read_refs(repo, prefixes, &cur) == -1) {
			rc = -1;
			break;
		}
		for (i = 0; i < cur.n; i++)
			if (relay_refs_get(&w.refs, cur.v[i].rf_name) == NULL)
				buf_printf(&b, "delete %s\n", cur.v[i].rf_name);
		for (i = 0; i < w.refs.n; i++) {
			o = relay_refs_get(&cur, w.refs.v[i].rf_name);
			if (o == NULL || strcmp(o, w.refs.v[i].rf_oid) != 0)
				buf_printf(&b, "update %s %s\n",
				    w.refs.v[i].rf_name, w.refs.v[i].rf_oid);
		}
		relay_refs_free(&cur);
		if (b.b_len > 0) {
			j->j_changed = 1;
			if ((fd = text_fd(b.b_data, b.b_len)) == -1) {
				rc = -1;
				break;
			}
			rc = job_git(j, repo, update, fd) == 0 ? 1 : -1;
			close(fd);
			break;
		}
		/* FALLTHROUGH */
	case 2:
		j->j_step = 3;
		if (w.head != NULL) {
			if (relay_refs_get(&w.refs, w.head))
				head = w.head;
		} else if (relay_repo_read_refs(repo, prefixes, &cur) == 0) {
			/* No HEAD in the state: keep a HEAD that names one
			 * of its branches, else point it at main, master
			 * or the first branch. */
			if (cur.head == NULL ||
			    relay_refs_get(&w.refs, cur.head) == NULL) {
				if (relay_refs_get(&w.refs, "refs/heads/main"))
					head = "refs/heads/main";
				else if (relay_refs_get(&w.refs,
					     "refs/heads/master"))
					head = "refs/heads/master";
				for (i = 0; head == NULL && i < w.refs.n; i++)
					if (strncmp(w.refs.v[i].rf_name,
						"refs/heads/", 11) == 0)
						head = w.refs.v[i].rf_name;
			}
			relay_refs_free(&cur);
		}
		if (head && write_head(repo, head) == -1)
			rc = -1;
		break;
	default:
		break;
	}
	if (w.refs.n > 0)
		j->j_changed = 1;
	desired_free(&w);
	buf_free(&b);
	return rc;
}

/* One step of any job; as align_step(). */
static int
job_step(struct relay_job *j)
{
	char	    repo[PATH_MAX];
	const char *want[1];
	int	    rc;

	if (j->j_kind == JOB_CALL) {
		j->j_fn(j->j_arg);
		return 0;
	}
	if (relay_repo_path(j->j_owner, j->j_d, repo, sizeof(repo)) == -1 ||
	    !relay_repo_exists(j->j_owner, j->j_d))
		return 0; /* gone meanwhile: nothing to align */
	switch (j->j_kind) {
	case JOB_ALIGN:
		return align_step(j, repo);
	case JOB_SET_REF:
		if (j->j_step == 0) {
			j->j_step = 1;
			want[0] = j->j_oid;
			if ((rc = job_fetch(j, repo, want, 1)) != 0)
				return rc;
		}
		if (j->j_step == 1) {
			const char *args[] = { "update-ref", j->j_ref, j->j_oid,
				NULL };

			j->j_step = 2;
			return job_git(j, repo, args, -1) == 0 ? 1 : -1;
		}
		return 0;
	case JOB_PRUNE:
		if (j->j_step == 0) {
			j->j_step = 1;
			return prune_step(j, repo);
		}
		return 0;

	case JOB_DELETE_REF:
		if (j->j_step == 0) {
			const char *args[] = { "update-ref", "-d", j->j_ref,
				j->j_oid, NULL };
			const char *pfx[] = { j->j_ref, NULL };
			struct relay_refs cur;
			const char	 *o;
			int		  gone;

			j->j_step = 1;
			/* Already gone or moved on: nothing to do. */
			if (relay_repo_read_refs(repo, pfx, &cur) == -1)
				return -1;
			o = relay_refs_get(&cur, j->j_ref);
			gone = o == NULL || strcmp(o, j->j_oid) != 0;
			relay_refs_free(&cur);
			if (gone)
				return 0;
			return job_git(j, repo, args, -1) == 0 ? 1 : -1;
		}
		return 0;
	default:
		return 0;
	}
}

static void
job_finish(struct relay_job *j, int ok)
{
	relayd->stats.git_jobs[ok ? 1 : 0]++;
	if (!ok)
		log_warnx("git job on %s failed", j->j_d ? j->j_d : "?");
	if (ok && j->j_kind == JOB_ALIGN && j->j_changed)
		relay_purg_git_arrived(j->j_owner, j->j_d);
	job_free(j);
}

static void
job_next(void)
{
	struct relay_job *j;
	int		  rc;

	while (job_running == NULL && (j = TAILQ_FIRST(&jobs)) != NULL) {
		TAILQ_REMOVE(&jobs, j, j_entry);
		job_running = j;
		rc = job_step(j);
		if (rc == 1)
			return;
		job_running = NULL;
		job_finish(j, rc == 0);
	}
	/* A maintenance may have waited for the queue. */
	if (job_running == NULL)
		maint_kick();
}

static void
job_child_done(pid_t pid, int status, int killed, void *arg)
{
	struct relay_job *j = arg;
	int		  rc;

	(void)pid;
	if (status != 0) {
		job_running = NULL;
		job_finish(j, 0);
		job_next();
		return;
	}
	if ((rc = job_step(j)) == 1)
		return;
	job_running = NULL;
	job_finish(j, rc == 0);
	job_next();
}
