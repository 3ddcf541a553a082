/*
 * policy_test.c: which URLs the write policy takes for this service
 * (policy_url_is_service()): by NGIT_DOMAIN's host and port, and by
 * NGIT_PUBLIC_URL for a server behind a TLS proxy; and GRASP-05 archive
 * mode in the write policy
 * (common/policy.c): which announcements that do not list this service
 * NGIT_ARCHIVE_ALL, NGIT_ARCHIVE_WHITELIST and NGIT_ARCHIVE_GRASP_SERVICES
 * take (POLICY_HOST, so that relayd hosts and syncs them), that the
 * blacklist still wins, and policy_archived(), which tells relayd that a
 * repository is archived rather than hosted; and GRASP-06's relaxation,
 * which takes a PR whose clone tag is its signer's /prs/ path here.  The
 * store is a fresh one in a temporary directory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "event.h"
#include "nip19.h"
#include "policy.h"
#include "store.h"
#include "t.h"
#include "tstore.h"

#define DOMAIN "relay.example:7334"

static char		  tdir[256];
static struct store	 *st;
static struct tstore_prog tsp = { { tdir, sizeof(tdir), "policy_test" }, &st };

static void
sk_of(int n, uint8_t sk[SECKEY_LEN])
{
	memset(sk, 0x33, SECKEY_LEN);
	sk[31] = (uint8_t)n;
}

/* An announcement by key n of d with the given clone and relays URLs. */
static struct event *
ann(int n, const char *d, const char *clone, const char *relay)
{
	uint8_t sk[SECKEY_LEN];
	char	tags[1024];

	sk_of(n, sk);
	snprintf(tags, sizeof(tags),
	    "[[\"d\",\"%s\"],[\"clone\",\"%s\"],"
	    "[\"relays\",\"%s\"]]",
	    d, clone, relay);
	return event_new_signed(sk, time(NULL), KIND_REPO_ANNOUNCEMENT, tags,
	    "");
}

static void
npub_of(int n, char out[NIP19_KEY_BUFSZ])
{
	uint8_t sk[SECKEY_LEN], pk[PUBKEY_LEN];

	sk_of(n, sk);
	event_pubkey_of(sk, pk);
	nip19_encode("npub", pk, out, NIP19_KEY_BUFSZ);
}

/*
 * Loads a configuration with NGIT_DOMAIN and the given "KEY=VALUE"
 * settings (NULL-terminated), makes a policy of it and checks ev:
 * returns the verdict, and policy_archived(ev) in *archived.
 */
static int
verdict(const char *const *env, const struct event *ev, int *archived,
    char *msg, size_t msglen)
{
	struct config cfg;
	struct policy pl;
	char	      err[256], k[128];
	const char   *eq;
	size_t	      i;
	int	      rc;

	for (i = 0; env && env[i]; i++) {
		eq = strchr(env[i], '=');
		snprintf(k, sizeof(k), "%.*s", (int)(eq - env[i]), env[i]);
		setenv(k, eq + 1, 1);
	}
	setenv("NGIT_DOMAIN", DOMAIN, 1);
	rc = config_load(&cfg, NULL, err, sizeof(err));
	for (i = 0; env && env[i]; i++) {
		eq = strchr(env[i], '=');
		snprintf(k, sizeof(k), "%.*s", (int)(eq - env[i]), env[i]);
		unsetenv(k);
	}
	if (rc == -1) {
		printf("# config: %s\n", err);
		return -2;
	}
	if (policy_init(&pl, &cfg, err, sizeof(err)) == -1) {
		config_free(&cfg);
		return -2;
	}
	msg[0] = '\0';
	rc = policy_check(&pl, st, ev, msg, msglen);
	if (archived)
		*archived = policy_archived(&pl, ev);
	config_free(&cfg);
	return rc;
}

static void
unlisted_refused_without_archive_mode(void)
{
	struct event *ev =
	    ann(1, "r", "https://other.example/r.git", "wss://other.example");
	char msg[256];
	int  arch = -1;

	T_ASSERT(ev != NULL);
	T_EQ_INT(verdict(NULL, ev, &arch, msg, sizeof(msg)), POLICY_REFUSE);
	T_CHECK(strncmp(msg, "blocked: ", 9) == 0);
	T_EQ_INT(arch, 0);
	event_destroy(ev);
}

static void
archive_all_hosts_unlisted_announcements(void)
{
	static const char *const env[] = { "NGIT_ARCHIVE_ALL=true", NULL };
	struct event		*un =
	    ann(2, "r", "https://other.example/r.git", "wss://other.example");
	struct event *listed =
	    ann(2, "s", "http://" DOMAIN "/x/s.git", "ws://" DOMAIN);
	char msg[256];
	int  arch = -1;

	T_ASSERT(un != NULL && listed != NULL);
	T_EQ_INT(verdict(env, un, &arch, msg, sizeof(msg)), POLICY_HOST);
	T_EQ_INT(arch, 1);
	/* One that lists this service is hosted, not archived. */
	T_EQ_INT(verdict(env, listed, &arch, msg, sizeof(msg)), POLICY_HOST);
	T_EQ_INT(arch, 0);
	event_destroy(un);
	event_destroy(listed);
}

static void
archive_whitelist_forms(void)
{
	char	      npub[NIP19_KEY_BUFSZ], e1[256];
	const char   *env[2] = { e1, NULL };
	struct event *mine =
	    ann(3, "linux", "https://o.example/l.git", "wss://o.example");
	struct event *other_d =
	    ann(3, "bsd", "https://o.example/b.git", "wss://o.example");
	struct event *other_pk =
	    ann(4, "linux", "https://o.example/l.git", "wss://o.example");
	char msg[256];
	int  arch;

	T_ASSERT(mine && other_d && other_pk);
	npub_of(3, npub);
	snprintf(e1, sizeof(e1), "NGIT_ARCHIVE_WHITELIST=%s/linux", npub);
	T_EQ_INT(verdict(env, mine, &arch, msg, sizeof(msg)), POLICY_HOST);
	T_EQ_INT(arch, 1);
	T_EQ_INT(verdict(env, other_d, &arch, msg, sizeof(msg)), POLICY_REFUSE);
	T_EQ_INT(arch, 0);
	T_EQ_INT(verdict(env, other_pk, &arch, msg, sizeof(msg)),
	    POLICY_REFUSE);
	/* An npub alone: every repository of that key. */
	snprintf(e1, sizeof(e1), "NGIT_ARCHIVE_WHITELIST=%s", npub);
	T_EQ_INT(verdict(env, other_d, NULL, msg, sizeof(msg)), POLICY_HOST);
	T_EQ_INT(verdict(env, other_pk, NULL, msg, sizeof(msg)), POLICY_REFUSE);
	/* An identifier alone: that identifier of any key. */
	snprintf(e1, sizeof(e1), "NGIT_ARCHIVE_WHITELIST=linux");
	T_EQ_INT(verdict(env, other_pk, NULL, msg, sizeof(msg)), POLICY_HOST);
	T_EQ_INT(verdict(env, other_d, NULL, msg, sizeof(msg)), POLICY_REFUSE);
	event_destroy(mine);
	event_destroy(other_d);
	event_destroy(other_pk);
}

static void
archive_grasp_services_match_clone_host_and_port(void)
{
	static const char *const with_port[] = {
		"NGIT_ARCHIVE_GRASP_SERVICES=other.example:8443,b.example", NULL
	};
	/* arch: policy_archived()'s answer, or -1 where it is not checked. */
	static const struct {
		const char *d, *clone, *relay;
		int	    want, arch;
	} v[] = {
		{ "a", "https://Other.Example:8443/npub/a.git",
		    "wss://x.example", POLICY_HOST, 1 },
		{ "b", "https://other.example/b.git", "wss://x.example",
		    POLICY_REFUSE, -1 },
		{ "c", "http://B.example/c.git", "wss://x.example", POLICY_HOST,
		    -1 },
		{ "d", "https://b.example:443/d.git", "wss://x.example",
		    POLICY_HOST, -1 },
		/* Only clone URLs name the service an announcement is on. */
		{ "e", "https://x.example/e.git", "wss://b.example",
		    POLICY_REFUSE, -1 },
		{ "f", "https://b.example.evil/f.git", "wss://x.example",
		    POLICY_REFUSE, -1 },
	};
	struct event *ev;
	char	      msg[256], what[300];
	size_t	      i;
	int	      arch, got;

	for (i = 0; i < T_NCASES(v); i++) {
		ev = ann(5, v[i].d, v[i].clone, v[i].relay);
		T_ASSERT(ev != NULL);
		arch = -1;
		got = verdict(with_port, ev, &arch, msg, sizeof(msg));
		event_destroy(ev);
		if (got != v[i].want ||
		    (v[i].arch != -1 && arch != v[i].arch)) {
			snprintf(what, sizeof(what),
			    "%s: verdict %d (want %d), "
			    "archived %d (want %d)",
			    v[i].clone, got, v[i].want, arch, v[i].arch);
			t_fail_at(__FILE__, __LINE__, what);
		}
	}
}

static void
blacklist_beats_archive(void)
{
	static const char *const env[] = { "NGIT_ARCHIVE_ALL=true",
		"NGIT_REPOSITORY_BLACKLIST=evil", NULL };
	struct event		*ev =
	    ann(6, "evil", "https://o.example/e.git", "wss://o.example");
	char msg[256];

	T_ASSERT(ev != NULL);
	T_EQ_INT(verdict(env, ev, NULL, msg, sizeof(msg)), POLICY_REFUSE);
	T_CHECK(strstr(msg, "blacklisted") != NULL);
	event_destroy(ev);
}

static void
writable_archive_takes_listed_but_not_whitelisted(void)
{
	static const char *const env[] = { "NGIT_ARCHIVE_WHITELIST=w",
		"NGIT_ARCHIVE_READ_ONLY=false",
		"NGIT_REPOSITORY_WHITELIST=other", NULL };
	struct event		*ev =
	    ann(7, "w", "http://" DOMAIN "/x/w.git", "ws://" DOMAIN);
	char msg[256];
	int  arch;

	T_ASSERT(ev != NULL);
	T_EQ_INT(verdict(env, ev, &arch, msg, sizeof(msg)), POLICY_HOST);
	T_EQ_INT(arch, 1);
	event_destroy(ev);
}

static char url_err[256];

/* A policy for NGIT_DOMAIN = domain and NGIT_PUBLIC_URL = pub (or unset). */
static int
setup(struct config *c, struct policy *pl, const char *domain, const char *pub)
{
	setenv("NGIT_DOMAIN", domain, 1);
	if (pub)
		setenv("NGIT_PUBLIC_URL", pub, 1);
	else
		unsetenv("NGIT_PUBLIC_URL");
	if (config_load(c, NULL, url_err, sizeof(url_err)) == -1)
		return -1;
	return policy_init(pl, c, url_err, sizeof(url_err));
}

static int
is(const struct policy *pl, const char *url)
{
	return policy_url_is_service(pl, url, strlen(url));
}

static void
domain_host_and_port_match_as_before(void)
{
	struct config c;
	struct policy pl;

	T_ASSERT(setup(&c, &pl, "127.0.0.1:7334", NULL) == 0);
	T_CHECK(is(&pl, "http://127.0.0.1:7334/npub1x/r.git"));
	T_CHECK(is(&pl, "ws://127.0.0.1:7334"));
	/* A NUL in the host does not end it where the service's ends. */
	{
		static const char nul[] = "http://127.0.0.1\0x:7334/r.git";

		T_CHECK(!policy_url_is_service(&pl, nul, sizeof(nul) - 1));
	}
	T_CHECK(is(&pl, "https://127.0.0.1:7334/npub1x/r.git"));
	T_CHECK(!is(&pl, "http://127.0.0.1/npub1x/r.git"));
	T_CHECK(!is(&pl, "https://127.0.0.1/npub1x/r.git"));
	T_CHECK(!is(&pl, "http://127.0.0.2:7334/npub1x/r.git"));
	config_free(&c);
	T_ASSERT(setup(&c, &pl, "git.example.org", NULL) == 0);
	T_CHECK(is(&pl, "https://git.example.org/npub1x/r.git"));
	T_CHECK(is(&pl, "wss://GIT.example.org"));
	T_CHECK(is(&pl, "http://git.example.org:80/npub1x/r.git"));
	T_CHECK(!is(&pl, "https://git.example.org:8443/npub1x/r.git"));
	config_free(&c);
}

static void
public_url_matches_behind_tls(void)
{
	struct config c;
	struct policy pl;

	/* relayd's own port in NGIT_DOMAIN, TLS in front of it. */
	T_ASSERT(setup(&c, &pl, "git.example.org:7334",
		     "https://git.example.org") == 0);
	T_CHECK(is(&pl, "https://git.example.org/npub1x/r.git"));
	T_CHECK(is(&pl, "https://git.example.org:443/npub1x/r.git"));
	T_CHECK(is(&pl, "wss://git.example.org"));
	T_CHECK(is(&pl, "http://git.example.org:7334/npub1x/r.git"));
	T_CHECK(!is(&pl, "http://git.example.org/npub1x/r.git"));
	T_CHECK(!is(&pl, "https://other.example.org/npub1x/r.git"));
	T_CHECK(!is(&pl, "https://git.example.org:8443/npub1x/r.git"));
	config_free(&c);
	T_ASSERT(setup(&c, &pl, "127.0.0.1:7334",
		     "https://git.example.org:8443/") == 0);
	T_CHECK(is(&pl, "https://git.example.org:8443/npub1x/r.git"));
	T_CHECK(is(&pl, "wss://git.example.org:8443"));
	T_CHECK(!is(&pl, "https://git.example.org/npub1x/r.git"));
	config_free(&c);
}

/*
 * An event of kind by key n whose 'a' tags name identifier d (and d2
 * after it, unless NULL) of an owner never announced, with tip c and
 * one clone URL.
 */
static struct event *
pr_of(int n, uint32_t kind, const char *clone, const char *d, const char *d2)
{
	uint8_t	      sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char	      tags[2048], owner[PUBKEY_HEX_LEN + 1];
	struct event *ev;

	sk_of(90, sk);
	event_pubkey_of(sk, pk);
	hex_encode(pk, PUBKEY_LEN, owner);
	if (d2 != NULL)
		snprintf(tags, sizeof(tags),
		    "[[\"a\",\"30617:%s:%s\"],[\"a\",\"30617:%s:%s\"],"
		    "[\"c\",\"%040d\"],[\"clone\",\"%s\"]]",
		    owner, d, owner, d2, 1, clone);
	else
		snprintf(tags, sizeof(tags),
		    "[[\"a\",\"30617:%s:%s\"],[\"c\",\"%040d\"],"
		    "[\"clone\",\"%s\"]]",
		    owner, d, 1, clone);
	sk_of(n, sk);
	ev = event_new_signed(sk, time(NULL), kind, tags, "");
	return ev;
}

/* GRASP-06: a clone tag at the signer's /prs/ path stands in for a
 * repository announced here (issue 38 item 3). */
static void
grasp06_relaxes_prs_clone_of_the_signer(void)
{
	static const char *const on[] = { "NGIT_GRASP06_ENABLE=true",
		"NGIT_PUBLIC_URL=https://git.example.org", NULL };
	static const char *const refusal =
	    "blocked: PR event must reference an accepted repository or "
	    "accepted event";
	struct {
		uint32_t    kind;
		int	    signer, path_of; /* keys */
		const char *host, *d, *path_d, *d2, *tail;
		int	    want;
	} v[] = {
		{ KIND_PR, 3, 3, "http://" DOMAIN, "x", "x", NULL, "", 1 },
		{ KIND_PR_UPDATE, 3, 3, "http://" DOMAIN, "x", "x", NULL, "",
		    1 },
		{ KIND_PR, 3, 3, "https://git.example.org", "x", "x", NULL, "",
		    1 },
		{ KIND_PR, 3, 3, "https://GIT.example.org:443", "x", "x", NULL,
		    "", 1 },
		/* Another signer's path, host, port, identifier. */
		{ KIND_PR, 3, 4, "http://" DOMAIN, "x", "x", NULL, "", 0 },
		{ KIND_PR, 3, 3, "https://other.example", "x", "x", NULL, "",
		    0 },
		{ KIND_PR, 3, 3, "http://relay.example:7335", "x", "x", NULL,
		    "", 0 },
		{ KIND_PR, 3, 3, "http://" DOMAIN, "x", "y", NULL, "", 0 },
		/* The first 'a' tag's identifier is the PR's. */
		{ KIND_PR, 3, 3, "http://" DOMAIN, "y", "x", "x", "", 0 },
		{ KIND_PR, 3, 3, "http://" DOMAIN, "x", "x", "y", "", 1 },
		/* Nothing after the path. */
		{ KIND_PR, 3, 3, "http://" DOMAIN, "x", "x", NULL, "/info/refs",
		    0 },
		/* Only PRs and PR updates. */
		{ 1, 3, 3, "http://" DOMAIN, "x", "x", NULL, "", 0 },
		{ KIND_ISSUE, 3, 3, "http://" DOMAIN, "x", "x", NULL, "", 0 },
	};
	struct event *ev;
	char	      npub[NIP19_KEY_BUFSZ], url[512], msg[256];
	size_t	      i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		npub_of(v[i].path_of, npub);
		snprintf(url, sizeof(url), "%s/prs/%s/%s.git%s", v[i].host,
		    npub, v[i].path_d, v[i].tail);
		ev = pr_of(v[i].signer, v[i].kind, url, v[i].d, v[i].d2);
		T_ASSERT(ev != NULL);
		if (verdict(on, ev, NULL, msg, sizeof(msg)) != v[i].want) {
			printf("# case %zu: %s\n", i, msg);
			T_CHECK(0);
		}
		if (v[i].want == 0 && v[i].kind == KIND_PR)
			T_EQ_STR(msg, refusal);
		/* GRASP-06 off: never. */
		T_EQ_INT(verdict(NULL, ev, NULL, msg, sizeof(msg)),
		    POLICY_REFUSE);
		event_destroy(ev);
	}
}

static const struct t_case cases[] = {
	T_CASE(domain_host_and_port_match_as_before),
	T_CASE(public_url_matches_behind_tls),
	T_CASE(unlisted_refused_without_archive_mode),
	T_CASE(archive_all_hosts_unlisted_announcements),
	T_CASE(archive_whitelist_forms),
	T_CASE(archive_grasp_services_match_clone_host_and_port),
	T_CASE(blacklist_beats_archive),
	T_CASE(writable_archive_takes_listed_but_not_whitelisted),
	T_CASE(grasp06_relaxes_prs_clone_of_the_signer),
};

T_MAIN_FIXTURE(cases, &tstore_fixture, &tsp, 0)
