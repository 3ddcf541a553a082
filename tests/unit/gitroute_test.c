/*
 * gitroute_test.c: where relayd sends a path that names a repository
 * (relayd/relay_route.c, relay_git_route(), compiled in): the git
 * endpoints, the repository page and the pages below it, GRASP-06's
 * /prs/ prefix on and off, and the paths that are not a repository's
 * (another handler's), a bad npub, an unsafe or overlong identifier.
 */
#include <stdio.h>
#include <string.h>

#include "../../relayd/relay_route.c"
#include "nip19.h"
#include "t.h"

static char    npub[NIP19_MAX_LEN + 1];
static uint8_t owner[PUBKEY_LEN];

/* relay_git_route() on the path fmt (with %s: the npub), GRASP-06 on. */
static enum git_route_kind
route(int grasp06, struct git_route *rt, const char *fmt)
{
	char path[4096];

	snprintf(path, sizeof(path), fmt, npub);
	return relay_git_route(path, strlen(path), grasp06, rt);
}

static void
setup(void)
{
	memset(owner, 0x42, sizeof(owner));
	nip19_encode("npub", owner, npub, sizeof(npub));
}

static void
git_endpoints_and_the_repository(void)
{
	struct git_route rt;

	setup();
	T_EQ_INT(route(1, &rt, "/%s/repo.git/info/refs"), GR_INFO_REFS);
	T_EQ_STR(rt.rt_d, "repo");
	T_EQ_STR(rt.rt_npub, npub);
	T_CHECK(memcmp(rt.rt_owner, owner, PUBKEY_LEN) == 0);
	T_CHECK(!rt.rt_prs && !rt.rt_web);
	T_EQ_INT(route(1, &rt, "/%s/repo.git/git-upload-pack"), GR_UPLOAD);
	T_EQ_INT(route(1, &rt, "/%s/repo.git/git-receive-pack"), GR_RECEIVE);
	T_EQ_INT(route(1, &rt, "/%s/repo.git"), GR_REPO_PAGE);
	T_CHECK(rt.rt_web);
	T_EQ_INT(route(1, &rt, "/%s/repo.git/"), GR_REPO_PAGE);
	/* Identifiers may hold dots, and ".git" more than once. */
	T_EQ_INT(route(1, &rt, "/%s/a.b.git.git/info/refs"), GR_INFO_REFS);
	T_EQ_STR(rt.rt_d, "a.b.git");
}

static void
pages_below_the_repository(void)
{
	struct git_route rt;

	setup();
	T_EQ_INT(route(1, &rt, "/%s/repo.git/tree/main/src"), GR_SUB);
	T_CHECK(rt.rt_web);
	T_EQ_INT((int)rt.rt_restlen, (int)strlen("/tree/main/src"));
	T_CHECK(memcmp(rt.rt_rest, "/tree/main/src", rt.rt_restlen) == 0);
	/* A git client's path with more after it: not a page, not git. */
	T_EQ_INT(route(1, &rt, "/%s/repo.git/info/refs/x"), GR_SUB);
	T_CHECK(!rt.rt_web);
	T_EQ_INT(route(1, &rt, "/%s/repo.git/git-upload-packs"), GR_SUB);
	T_CHECK(!rt.rt_web);
}

static void
other_paths_are_not_mine(void)
{
	struct git_route rt;

	setup();
	T_EQ_INT(relay_git_route("/", 1, 1, &rt), GR_NOT_MINE);
	T_EQ_INT(relay_git_route("", 0, 1, &rt), GR_NOT_MINE);
	T_EQ_INT(relay_git_route("x/y.git", 7, 1, &rt), GR_NOT_MINE);
	T_EQ_INT(route(1, &rt, "/metrics"), GR_NOT_MINE);
	T_EQ_INT(route(1, &rt, "/%s"), GR_NOT_MINE);
	T_EQ_INT(route(1, &rt, "/%s/repo"), GR_NOT_MINE);
	T_EQ_INT(route(1, &rt, "/%s/.git"), GR_NOT_MINE);
	T_EQ_INT(route(1, &rt, "/%s/repo.gitx/info/refs"), GR_NOT_MINE);
}

static void
bad_owner_and_identifier(void)
{
	struct git_route rt;
	char		 path[2200];

	setup();
	T_EQ_INT(relay_git_route("//repo.git", 10, 1, &rt), GR_BAD_NPUB);
	T_EQ_INT((int)rt.rt_status, 400);
	T_EQ_INT(route(1, &rt, "/npub1nothing/repo.git/info/refs"),
	    GR_BAD_NPUB);
	T_CHECK(!rt.rt_web);
	T_EQ_INT(route(1, &rt, "/npub1nothing/repo.git"), GR_BAD_NPUB);
	T_CHECK(rt.rt_web);
	/* Longer than any npub. */
	memset(path, 'n', 120);
	path[0] = '/';
	memcpy(path + 120, "/r.git", 7);
	T_EQ_INT(relay_git_route(path, strlen(path), 1, &rt), GR_BAD_NPUB);
	/* An identifier of 1,024 bytes or more, or an unsafe one. */
	snprintf(path, sizeof(path), "/%s/", npub);
	memset(path + strlen(path), 'd', 1030);
	memcpy(path + strlen(npub) + 2 + 1030, ".git", 5);
	T_EQ_INT(relay_git_route(path, strlen(path), 1, &rt), GR_NO_REPO);
	T_EQ_INT(route(1, &rt, "/%s/...git"), GR_NO_REPO);
	T_EQ_INT(route(1, &rt, "/%s/a\\b.git/info/refs"), GR_NO_REPO);
}

static void
grasp06_prs_prefix(void)
{
	struct git_route rt;

	setup();
	T_EQ_INT(route(1, &rt, "/prs/%s/repo.git/info/refs"), GR_INFO_REFS);
	T_CHECK(rt.rt_prs && !rt.rt_web);
	T_EQ_STR(rt.rt_d, "repo");
	T_EQ_INT(route(1, &rt, "/prs/%s/repo.git/git-receive-pack"),
	    GR_RECEIVE);
	/* No page there: the repository's path and the rest are 404. */
	T_EQ_INT(route(1, &rt, "/prs/%s/repo.git"), GR_NOT_FOUND);
	T_EQ_INT(route(1, &rt, "/prs/%s/repo.git/tree/main"), GR_SUB);
	T_CHECK(rt.rt_prs);
	T_EQ_INT(route(1, &rt, "/prs/%s"), GR_NOT_FOUND);
	T_EQ_INT(route(1, &rt, "/prs/%s/repo"), GR_NOT_FOUND);
	T_EQ_INT(route(1, &rt, "/prs/npub1bad/repo.git/info/refs"),
	    GR_BAD_NPUB);
	T_EQ_INT((int)rt.rt_status, 404);
	/* GRASP-06 off: nothing under /prs/ is served. */
	T_EQ_INT(route(0, &rt, "/prs/%s/repo.git/info/refs"), GR_NOT_FOUND);
	T_EQ_INT(route(0, &rt, "/prs/repo.git"), GR_NOT_FOUND);
	/* Under /prs/, a path with too few parts is no repository. */
	T_EQ_INT(route(1, &rt, "/prs/x.git/info/refs"), GR_NOT_FOUND);
	T_EQ_INT(relay_git_route("/prs", 4, 1, &rt), GR_NOT_MINE);
}

static const struct t_case cases[] = {
	T_CASE(git_endpoints_and_the_repository),
	T_CASE(pages_below_the_repository),
	T_CASE(other_paths_are_not_mine),
	T_CASE(bad_owner_and_identifier),
	T_CASE(grasp06_prs_prefix),
};

T_MAIN(cases)
