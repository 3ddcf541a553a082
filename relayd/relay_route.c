/*
 * relay_route.c: where a path on the relay port that names a repository
 * goes (relay_git_route(), relay_proto.h): GRASP-01's git smart HTTP at
 * /<npub>/<d>.git/{info/refs,git-upload-pack,git-receive-pack}, GRASP-06's
 * /prs/<npub>/<d>.git/..., the repository page and the pages below it.
 * Pure: a function of the path and whether GRASP-06 is on; the caller
 * (relay_git.c) checks the method and answers.
 */
#include <string.h>

#include "nip19.h"
#include "policy.h"
#include "relay_proto.h"

/* GRASP-06's prefix, followed by the repository's /<npub>/<d>.git. */
#define ROUTE_PRS     "/prs/"
#define ROUTE_PRS_LEN (sizeof(ROUTE_PRS) - 1)

/* The git endpoints after <d>.git, and their routes. */
static const struct {
	const char	   *path;
	enum git_route_kind kind;
} git_paths[] = {
	{ "/info/refs", GR_INFO_REFS },
	{ "/git-upload-pack", GR_UPLOAD },
	{ "/git-receive-pack", GR_RECEIVE },
};
#define NGIT_PATHS (sizeof(git_paths) / sizeof(git_paths[0]))

/* 1 if rest (n bytes) starts with a git endpoint: a git client's path,
 * whose errors are answered as text, not as pages. */
static int
git_prefix(const char *rest, size_t n)
{
	size_t i, l;

	for (i = 0; i < NGIT_PATHS; i++) {
		l = strlen(git_paths[i].path);
		if (n >= l && memcmp(rest, git_paths[i].path, l) == 0)
			return 1;
	}
	return 0;
}

enum git_route_kind
relay_git_route(const char *uri, size_t len, int grasp06, struct git_route *rt)
{
	const char *seg2, *rest, *end;
	size_t	    n1, n2, i;

	memset(rt, 0, sizeof(*rt));
	rt->rt_status = 400;
	if (len > ROUTE_PRS_LEN && memcmp(uri, ROUTE_PRS, ROUTE_PRS_LEN) == 0) {
		if (!grasp06)
			return rt->rt_kind = GR_NOT_FOUND;
		rt->rt_prs = 1;
		rt->rt_status = 404;
		uri += ROUTE_PRS_LEN - 1;
		len -= ROUTE_PRS_LEN - 1;
	}
	if (len < 2 || uri[0] != '/')
		return rt->rt_kind = GR_NOT_MINE;
	end = uri + len;
	if ((seg2 = memchr(uri + 1, '/', (size_t)(end - uri - 1))) == NULL)
		return rt->rt_kind = rt->rt_prs ? GR_NOT_FOUND : GR_NOT_MINE;
	n1 = (size_t)(seg2 - uri - 1);
	seg2++;
	if ((rest = memchr(seg2, '/', (size_t)(end - seg2))) == NULL)
		rest = end;
	n2 = (size_t)(rest - seg2);
	if (n2 <= 4 || memcmp(rest - 4, ".git", 4) != 0)
		return rt->rt_kind = rt->rt_prs ? GR_NOT_FOUND : GR_NOT_MINE;
	rt->rt_rest = rest;
	rt->rt_restlen = (size_t)(end - rest);
	/* A page for people answers its errors as a page. */
	rt->rt_web = !rt->rt_prs && !git_prefix(rest, rt->rt_restlen);
	if (n1 == 0 || n1 > NIP19_MAX_LEN)
		return rt->rt_kind = GR_BAD_NPUB;
	memcpy(rt->rt_npub, uri + 1, n1);
	rt->rt_npub[n1] = '\0';
	if (nip19_decode(rt->rt_npub, "npub", rt->rt_owner) == -1)
		return rt->rt_kind = GR_BAD_NPUB;
	if (n2 - 4 >= sizeof(rt->rt_d))
		return rt->rt_kind = GR_NO_REPO;
	memcpy(rt->rt_d, seg2, n2 - 4);
	rt->rt_d[n2 - 4] = '\0';
	if (!policy_identifier_safe(rt->rt_d, n2 - 4))
		return rt->rt_kind = GR_NO_REPO;
	if (rt->rt_restlen == 0 || (rt->rt_restlen == 1 && *rest == '/'))
		return rt->rt_kind = rt->rt_prs ? GR_NOT_FOUND : GR_REPO_PAGE;
	for (i = 0; i < NGIT_PATHS; i++)
		if (rt->rt_restlen == strlen(git_paths[i].path) &&
		    memcmp(rest, git_paths[i].path, rt->rt_restlen) == 0)
			return rt->rt_kind = git_paths[i].kind;
	return rt->rt_kind = GR_SUB;
}
