/*
 * archive_test.c: GRASP-05 archive mode between real graspd instances on
 * loopback.  A hosts a repository whose announcement lists A only.  B
 * (NGIT_ARCHIVE_ALL) and then C (NGIT_ARCHIVE_GRASP_SERVICES naming A),
 * both bootstrapped from A, take the announcement although it does not
 * list them, sync its state and later issues like a served repository's,
 * hunt its git data from A's clone URL, and serve clones; pushes to them
 * are refused (read-only by default) with an ERR that says why, and
 * NIP-11 lists GRASP-05 with a curation text.  A NIP-70 protected issue
 * that A took from its authenticated author is not synced.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "event.h"
#include "gitutil.h"
#include "json.h"
#include "nip19.h"
#include "nostr.h"
#include "relayproc.h"
#include "t.h"
#include "tdir.h"
#include "wsclient.h"

#define TMO	       5000
/* Longest wait for sync, hunt and release on an archive. */
#define ARCHIVE_WAIT_S 40

static struct relayproc *a;
static char		 tmpdir[256];
static uint8_t		 sk[SECKEY_LEN], pk[PUBKEY_LEN];
static struct event	*ann, *state;
static char		 oid[41];

static struct wsc *
ws_to(struct relayproc *p)
{
	return wsc_connect(relayproc_host(p), relayproc_port(p), "/", TMO);
}

/* Waits up to secs for at least want events on p matching filter. */
static int
wait_count(struct relayproc *p, const char *filter, int want, int secs)
{
	return nostr_wait_count(relayproc_host(p), relayproc_port(p), filter,
	    want, secs, TMO);
}

static struct relayproc *
archive_start(const char *mode)
{
	char	    boot[200];
	const char *env[4];

	snprintf(boot, sizeof(boot), "NGIT_SYNC_BOOTSTRAP_RELAY_URL=%s",
	    relayproc_url(a));
	env[0] = boot;
	env[1] = "NGIT_SYNC_ALLOW_PRIVATE_TARGETS=true";
	env[2] = mode;
	env[3] = NULL;
	return relayproc_start("graspd", env);
}

/*
 * The checks both archives share: the repository of A arrives, is
 * served, takes later events, refuses pushes; NIP-11 says GRASP-05.
 */
static void
check_archive(struct relayproc *p, const char *name, const char *curation)
{
	struct json_doc *doc = NULL;
	struct json	*root, *g, *cur;
	struct event	*issue, *prot;
	struct wsc	*ws;
	char		 f[512], url[512], dir[512], got[41], tags[256];
	char		*out = NULL;
	int		 n, ok = 0, has05 = 0;

	snprintf(f, sizeof(f), "{\"ids\":[\"%s\",\"%s\"]}", ann->id_hex,
	    state->id_hex);
	T_EQ_INT(wait_count(p, f, 2, ARCHIVE_WAIT_S), 2);

	/* Served: the clone has A's commit. */
	gt_url(url, sizeof(url), relayproc_domain(p), pk, "arch");
	snprintf(dir, sizeof(dir), "%s/clone-%s", tmpdir, name);
	T_EQ_INT(gt_git(NULL, NULL, "clone", "-q", url, dir, NULL), 0);
	T_ASSERT(gt_rev(dir, "HEAD", got) == 0);
	T_EQ_STR(got, oid);

	/* Read-only: a push is refused, and says why. */
	T_ASSERT(gt_commit(dir, "more.txt", "more\n", "more", got) == 0);
	n = gt_git(dir, &out, "push", "-q", url, "HEAD:refs/heads/main", NULL);
	T_CHECK(n != 0);
	T_CHECK(out != NULL && strstr(out, "archived here read-only") != NULL);
	if (out && strstr(out, "archived here read-only") == NULL)
		printf("# push: %.400s\n", out);
	free(out);

	/*
	 * Synced like a served repository: a later issue on A arrives.
	 * A protected one (NIP-70), which A took from its authenticated
	 * author just before, never does: only its author may publish it.
	 */
	snprintf(tags, sizeof(tags), "[[\"a\",\"30617:%s:arch\"],[\"-\"]]",
	    ann->pubkey_hex);
	prot = event_new_signed(sk, time(NULL), KIND_ISSUE, tags, name);
	snprintf(tags, sizeof(tags), "[[\"a\",\"30617:%s:arch\"]]",
	    ann->pubkey_hex);
	issue = event_new_signed(sk, time(NULL), KIND_ISSUE, tags, name);
	T_ASSERT(issue != NULL && prot != NULL);
	T_ASSERT((ws = ws_to(a)) != NULL);
	T_CHECK(nostr_auth(ws, sk, relayproc_url(a), TMO) == 0);
	T_ASSERT(nostr_publish(ws, prot, TMO, &ok, NULL) == 0);
	T_CHECK(ok);
	T_ASSERT(nostr_publish(ws, issue, TMO, &ok, NULL) == 0);
	wsc_close(ws);
	T_CHECK(ok);
	snprintf(f, sizeof(f), "{\"ids\":[\"%s\"]}", issue->id_hex);
	T_EQ_INT(wait_count(p, f, 1, ARCHIVE_WAIT_S), 1);
	snprintf(f, sizeof(f), "{\"ids\":[\"%s\"]}", prot->id_hex);
	T_EQ_INT(nostr_count(relayproc_host(p), relayproc_port(p), f, TMO), 0);
	event_destroy(issue);
	event_destroy(prot);

	/* NIP-11. */
	T_ASSERT((root = relayproc_nip11(p, &doc)) != NULL);
	g = json_get(root, "supported_grasps");
	for (g = g ? json_at(g, 0) : NULL; g; g = g->next)
		has05 |=
		    g->type == JSON_STRING && strcmp(g->s, "GRASP-05") == 0;
	T_CHECK(has05);
	cur = json_get(root, "curation");
	T_CHECK(cur != NULL && cur->type == JSON_STRING &&
	    strstr(cur->s, curation) != NULL);
	json_free(doc);
}

static void
test_archive_all_takes_a_repository_listing_another_server(void)
{
	struct relayproc *b = archive_start("NGIT_ARCHIVE_ALL=true");

	T_ASSERT(b != NULL);
	check_archive(b, "all",
	    "Read-only archive (GRASP-05) of every "
	    "repository");
	if (t_case_failed)
		relayproc_dump_log(b, 40);
	relayproc_free(b);
}

static void
test_archive_grasp_services_takes_repositories_of_that_server(void)
{
	char		  mode[200];
	struct relayproc *c;

	snprintf(mode, sizeof(mode), "NGIT_ARCHIVE_GRASP_SERVICES=%s",
	    relayproc_domain(a));
	T_ASSERT((c = archive_start(mode)) != NULL);
	check_archive(c, "services", "listed GRASP servers");
	if (t_case_failed)
		relayproc_dump_log(c, 40);
	relayproc_free(c);
}

static int
archive_setup(void)
{
	struct wsc *ws;
	char	    npub[NIP19_KEY_BUFSZ], tags[1024], f[256], dir[512];
	char	    err[128];
	char	  **evs = NULL;

	size_t n = 0;
	int    ok = 0;

	snprintf(tmpdir, sizeof(tmpdir), "%s/graspd-archive.XXXXXX",
	    getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(tmpdir) == NULL || gt_setup(tmpdir) == -1) {
		printf("not ok - archive_setup: temp dir\n");
		return 1;
	}
	if ((a = relayproc_start("graspd", NULL)) == NULL) {
		printf("not ok - archive_setup: graspd A did not start\n");
		return 1;
	}
	/* The repository on A; its announcement names A only. */
	memset(sk, 0x5a, SECKEY_LEN);
	event_pubkey_of(sk, pk);
	nip19_encode("npub", pk, npub, sizeof(npub));
	snprintf(tags, sizeof(tags),
	    "[[\"d\",\"arch\"],[\"clone\",\"http://"
	    "%s/%s/arch.git\"],[\"relays\",\"%s\"]]",
	    relayproc_domain(a), npub, relayproc_url(a));
	ann = event_new_signed(sk, time(NULL) - 60, KIND_REPO_ANNOUNCEMENT,
	    tags, "");
	snprintf(dir, sizeof(dir), "%s/arch", tmpdir);
	snprintf(f, sizeof(f), "{\"kinds\":[30618],\"#d\":[\"arch\"]}");
	if (ann == NULL || (ws = ws_to(a)) == NULL ||
	    nostr_publish(ws, ann, TMO, &ok, NULL) != 0 || !ok ||
	    gt_release(ws, sk, relayproc_domain(a), "arch", dir, oid) != 0 ||
	    nostr_req(ws, "s", f, TMO, &evs, &n, NULL) != 0 || n != 1 ||
	    (state = event_parse(evs[0], strlen(evs[0]), err, sizeof(err))) ==
		NULL) {
		printf("not ok - archive_setup: repository on A\n");
		relayproc_dump_log(a, 30);
		relayproc_free(a);
		return 1;
	}
	nostr_events_free(evs);
	wsc_close(ws);
	return 0;
}

static void
archive_cleanup(void)
{
	if (t_fail)
		relayproc_dump_log(a, 30);
	relayproc_free(a);
	event_destroy(ann);
	event_destroy(state);
	tdir_remove(tmpdir);
}

static const struct t_case cases[] = {
	T_CASE(test_archive_all_takes_a_repository_listing_another_server),
	T_CASE(test_archive_grasp_services_takes_repositories_of_that_server),
};

T_MAIN_WITH(cases, archive_setup, archive_cleanup, 0)
