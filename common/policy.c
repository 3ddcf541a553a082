/*
 * policy.c: the GRASP-01 write policy (see policy.h).  Runs in relayd,
 * inside the write transaction, for client and ingested events alike.
 *
 * The rules follow ngit-grasp (reference brief 1.2-1.8) with its quirks
 * fixed: "lists this service" compares parsed host and port instead of a
 * substring, and a blacklisted repository cannot come back as a
 * maintainer's announcement.  The policy decides who may write; whether
 * git data is present, and so whether an event is stored or held in
 * purgatory, is relayd's decision (relayd/relay_purg.c).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "config.h"
#include "event.h"
#include "filter.h"
#include "json.h"
#include "nip19.h"
#include "policy.h"
#include "purg.h"
#include "store.h"

/*
 * Splits "host[:port]" or "[v6]:port"; host lowercased into host.
 * Returns 0 or -1.
 */
static int
split_hostport(const char *s, size_t len, char *host, size_t hostlen, int *port)
{
	const char *colon = NULL, *hend;
	size_t	    i, hn;
	long	    v = 0;

	*port = 0;
	if (len == 0)
		return -1;
	if (s[0] == '[') {
		const char *rb = memchr(s, ']', len);

		if (rb == NULL)
			return -1;
		hend = rb + 1;
		if (hend < s + len) {
			if (*hend != ':')
				return -1;
			colon = hend;
		}
	} else {
		colon = memchr(s, ':', len);
		hend = colon ? colon : s + len;
	}
	if (colon) {
		const char *p = colon + 1;

		if (p == s + len || s + len - p > 5)
			return -1;
		for (; p < s + len; p++) {
			if (*p < '0' || *p > '9')
				return -1;
			v = v * 10 + (*p - '0');
		}
		if (v < 1 || v > 65535)
			return -1;
		*port = (int)v;
	}
	hn = (size_t)(hend - s);
	if (hn == 0 || hn >= hostlen)
		return -1;
	for (i = 0; i < hn; i++)
		host[i] = (char)tolower((unsigned char)s[i]);
	host[hn] = '\0';
	/* One trailing dot names the same host. */
	if (hn > 1 && host[hn - 1] == '.')
		host[hn - 1] = '\0';
	return 0;
}

int
policy_init(struct policy *pl, const struct config *cfg, char *err,
    size_t errlen)
{
	const char *dom = cfg->domain;
	size_t	    n = strlen(dom);
	int	    n1;

	memset(pl, 0, sizeof(*pl));
	pl->pl_cfg = cfg;
	while (n > 0 && dom[n - 1] == '/')
		n--;
	if (split_hostport(dom, n, pl->pl_host, sizeof(pl->pl_host),
		&pl->pl_port) == -1) {
		snprintf(err, errlen, "NGIT_DOMAIN: \"%s\" is not host[:port]",
		    dom);
		return -1;
	}
	/* The public base URL names the service too (behind a proxy). */
	if ((dom = cfg->public_url) == NULL)
		return 0;
	if (strncmp(dom, "https://", 8) == 0) {
		dom += 8;
		pl->pl_pub_port = 443;
	} else if (strncmp(dom, "http://", 7) == 0) {
		dom += 7;
		pl->pl_pub_port = 80;
	} else
		dom = NULL;
	if (dom == NULL ||
	    split_hostport(dom, strcspn(dom, "/"), pl->pl_pub_host,
		sizeof(pl->pl_pub_host), &n1) == -1) {
		snprintf(err, errlen,
		    "NGIT_PUBLIC_URL: \"%s\" is not http[s]://host[:port]",
		    cfg->public_url);
		return -1;
	}
	if (n1 != 0)
		pl->pl_pub_port = n1;
	return 0;
}

/*
 * 1 if url (http, https, ws or wss) is on host (lower case) and port (0:
 * the scheme's default port).
 */
static int
url_names(const char *url, size_t len, const char *host, int port)
{
	static const struct {
		const char *scheme;
		int	    port;
	} schemes[] = {
		{ "https://", 443 },
		{ "http://", 80 },
		{ "wss://", 443 },
		{ "ws://", 80 },
	};
	const char *p = NULL, *auth_end;
	char	    uhost[256];
	int	    uport, defport = 0;
	size_t	    i, sl;

	for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
		sl = strlen(schemes[i].scheme);
		if (len > sl && strncasecmp(url, schemes[i].scheme, sl) == 0) {
			p = url + sl;
			defport = schemes[i].port;
			break;
		}
	}
	/* A NUL would end the host early in the comparison below. */
	if (p == NULL || memchr(url, '\0', len) != NULL)
		return 0;
	for (auth_end = p; auth_end < url + len && *auth_end != '/' &&
	     *auth_end != '?' && *auth_end != '#';
	     auth_end++)
		;
	if (memchr(p, '@', (size_t)(auth_end - p)) != NULL)
		return 0;
	if (split_hostport(p, (size_t)(auth_end - p), uhost, sizeof(uhost),
		&uport) == -1)
		return 0;
	if (strcmp(uhost, host) != 0)
		return 0;
	if (uport == 0)
		uport = defport;
	return uport == (port ? port : defport);
}

int
policy_url_is_service(const struct policy *pl, const char *url, size_t len)
{
	/* Behind a TLS proxy announcements list the public URL. */
	if (pl->pl_pub_port != 0 &&
	    url_names(url, len, pl->pl_pub_host, pl->pl_pub_port))
		return 1;
	return url_names(url, len, pl->pl_host, pl->pl_port);
}

int
policy_prs_clone(const struct policy *pl, const struct event *ev, const char *d)
{
	const struct event_tag *t;
	char			npub[NIP19_KEY_BUFSZ], want[1400];
	const char	       *v, *path;
	uint32_t		i, k;

	if (!pl->pl_cfg->grasp06_enable || d[0] == '\0' ||
	    nip19_encode("npub", ev->pubkey, npub, sizeof(npub)) == -1 ||
	    snprintf(want, sizeof(want), "/%s/%s/%s.git", POLICY_PRS_DIR, npub,
		d) >= (int)sizeof(want))
		return 0;
	for (i = 0; i < ev->ntags; i++) {
		t = &ev->tags[i];
		if (t->n < 2 || strcmp(t->v[0].s, "clone") != 0)
			continue;
		for (k = 1; k < t->n; k++) {
			v = t->v[k].s;
			if ((path = strstr(v, "://")) == NULL ||
			    (path = strchr(path + 3, '/')) == NULL)
				continue;
			if (strcmp(path, want) == 0 &&
			    policy_url_is_service(pl, v, t->v[k].len))
				return 1;
		}
	}
	return 0;
}

static const struct event_tag *
find_tag(const struct event *ev, const char *name,
    const struct event_tag *after)
{
	uint32_t i = after ? (uint32_t)(after - ev->tags) + 1 : 0;

	for (; i < ev->ntags; i++)
		if (strcmp(ev->tags[i].v[0].s, name) == 0)
			return &ev->tags[i];
	return NULL;
}

/* 1 if some value (elements 1..) of the tags named name is this service. */
static int
tag_lists_service(const struct policy *pl, const struct event *ev,
    const char *name)
{
	const struct event_tag *t = NULL;
	uint32_t		j;

	while ((t = find_tag(ev, name, t)) != NULL)
		for (j = 1; j < t->n; j++)
			if (policy_url_is_service(pl, t->v[j].s, t->v[j].len))
				return 1;
	return 0;
}

int
policy_identifier_safe(const char *d, size_t len)
{
	if (len == 0 || memchr(d, '\0', len) != NULL)
		return 0;
	if (strcmp(d, ".") == 0 || strcmp(d, "..") == 0)
		return 0;
	return strpbrk(d, "/\\") == NULL;
}

static int
rule_matches(const struct cfg_repo_rule *r, size_t n,
    const uint8_t pk[PUBKEY_LEN], const char *d)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (r[i].has_pubkey && memcmp(r[i].pubkey, pk, 32) != 0)
			continue;
		if (r[i].identifier && strcmp(r[i].identifier, d) != 0)
			continue;
		return 1;
	}
	return 0;
}

void
policy_set_purgatory(struct policy *pl, struct purg *p)
{
	pl->pl_purg = p;
}

void
policy_set_eligible(struct policy *pl,
    int (*fn)(void *, const uint8_t[PUBKEY_LEN]), void *arg)
{
	pl->pl_eligible = fn;
	pl->pl_eligible_arg = arg;
}

static int
collect_cb(const char *json, size_t len, int64_t seq, void *arg)
{
	struct policy_anns *a = arg;
	char		    err[64];

	(void)seq;
	if (a->n >= POLICY_MAX_MAINTAINERS)
		return 1;
	if ((a->v[a->n].an_ev = event_parse(json, len, err, sizeof(err))) !=
	    NULL) {
		a->v[a->n].an_held = 0;
		a->n++;
	}
	return 0;
}

int
policy_anns_load(const struct policy *pl, struct store *st, const char *d,
    size_t dlen, int with_held, struct policy_anns *a)
{
	struct buf	 b = BUF_INIT;
	struct json_doc *doc;
	struct json	*root;
	struct filter	 f;
	struct purg_ann *held = NULL;
	size_t		 nheld = 0, i;
	char		 err[128];
	int		 rc = -1;

	a->n = 0;
	buf_printf(&b, "{\"kinds\":[%d],\"#d\":[", KIND_REPO_ANNOUNCEMENT);
	buf_add_jstr(&b, d, dlen);
	buf_adds(&b, "]}");
	if ((root = json_parse(b.b_data, b.b_len, &doc, err, sizeof(err))) ==
	    NULL)
		goto done;
	if (filter_parse(root, &f, err, sizeof(err)) == 0) {
		if (store_query(st, &f, 1, POLICY_MAX_MAINTAINERS,
			POLICY_MAX_MAINTAINERS, 0, collect_cb, a) >= 0)
			rc = 0;
		filter_free(&f);
	}
	json_free(doc);
	if (rc == -1 || !with_held || pl->pl_purg == NULL ||
	    memchr(d, '\0', dlen) != NULL)
		goto done;
	if (purg_ann_list_d(pl->pl_purg, d, &held, &nheld) == -1) {
		rc = -1;
		goto done;
	}
	for (i = 0; i < nheld && a->n < POLICY_MAX_MAINTAINERS; i++) {
		/* A stored version takes precedence; none should exist. */
		if (policy_anns_by(a, held[i].pa_pubkey) != NULL)
			continue;
		a->v[a->n].an_ev = event_parse(held[i].pa_json,
		    strlen(held[i].pa_json), err, sizeof(err));
		if (a->v[a->n].an_ev == NULL)
			continue;
		a->v[a->n].an_held = 1;
		a->n++;
	}
	purg_ann_free_list(held, nheld);
done:
	buf_free(&b);
	return rc;
}

void
policy_anns_free(struct policy_anns *a)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		event_destroy(a->v[i].an_ev);
	a->n = 0;
}

const struct policy_ann *
policy_anns_by(const struct policy_anns *a, const uint8_t pk[PUBKEY_LEN])
{
	size_t i;

	for (i = 0; i < a->n; i++)
		if (memcmp(a->v[i].an_ev->pubkey, pk, 32) == 0)
			return &a->v[i];
	return NULL;
}

int
policy_anns_authorised(const struct policy_anns *a,
    const uint8_t owner[PUBKEY_LEN], const uint8_t who[PUBKEY_LEN])
{
	uint8_t			 set[POLICY_MAX_MAINTAINERS][32];
	size_t			 n = 0, i, k;
	const struct policy_ann *ann;
	const struct event_tag	*t;
	uint32_t		 j;
	uint8_t			 pk[PUBKEY_LEN];

	memcpy(set[n++], owner, 32);
	for (i = 0; i < n; i++) {
		if (memcmp(set[i], who, 32) == 0)
			return 1;
		if ((ann = policy_anns_by(a, set[i])) == NULL)
			continue;
		if ((t = find_tag(ann->an_ev, "maintainers", NULL)) == NULL)
			continue;
		for (j = 1; j < t->n && n < POLICY_MAX_MAINTAINERS; j++) {
			if (hex_decode(t->v[j].s, t->v[j].len, pk, 32) == -1)
				continue;
			for (k = 0; k < n; k++)
				if (memcmp(set[k], pk, 32) == 0)
					break;
			if (k == n)
				memcpy(set[n++], pk, 32);
		}
	}
	return 0;
}

/*
 * GRASP-05: 1 if the archive settings take the announcement ev of
 * identifier d whether it lists this service or not: NGIT_ARCHIVE_ALL,
 * an NGIT_ARCHIVE_WHITELIST entry, or a clone URL on one of the
 * NGIT_ARCHIVE_GRASP_SERVICES (host and port compared as for this
 * service, host names without regard to case).
 */
static int
archive_covers(const struct policy *pl, const struct event *ev, const char *d)
{
	const struct config    *cfg = pl->pl_cfg;
	const struct event_tag *t = NULL;
	const char	       *svc;
	char			host[256];
	size_t			i;
	uint32_t		j;
	int			port;

	if (cfg->archive_all)
		return 1;
	if (rule_matches(cfg->archive_whitelist.v, cfg->archive_whitelist.n,
		ev->pubkey, d))
		return 1;
	for (i = 0; i < cfg->archive_grasp_services.n; i++) {
		svc = cfg->archive_grasp_services.v[i];
		if (split_hostport(svc, strlen(svc), host, sizeof(host),
			&port) == -1)
			continue;
		while ((t = find_tag(ev, "clone", t)) != NULL)
			for (j = 1; j < t->n; j++)
				if (url_names(t->v[j].s, t->v[j].len, host,
					port))
					return 1;
	}
	return 0;
}

int
policy_archived(const struct policy *pl, const struct event *ann)
{
	const struct estr *d = event_tag_value(ann, "d");

	if (d == NULL || memchr(d->s, '\0', d->len) != NULL)
		return 0;
	if (tag_lists_service(pl, ann, "clone") &&
	    tag_lists_service(pl, ann, "relays") &&
	    (pl->pl_cfg->repo_whitelist.n == 0 ||
		rule_matches(pl->pl_cfg->repo_whitelist.v,
		    pl->pl_cfg->repo_whitelist.n, ann->pubkey, d->s)))
		return 0;
	return archive_covers(pl, ann, d->s);
}

static void
npub_of(const uint8_t pk[PUBKEY_LEN], char *out, size_t outlen)
{
	if (nip19_encode("npub", pk, out, outlen) == -1)
		hex_encode(pk, 32, out);
}

/*
 * 1, with the refusal in msg, if an 'a' tag of ev names a repository
 * whose announcement is held in purgatory: the push is what is missing.
 */
static int
held_repo(const struct policy *pl, const struct event *ev, char *msg,
    size_t msglen)
{
	const struct event_tag *t = NULL;
	struct purg_ann	       *held;
	size_t			nheld, i;
	uint8_t			pk[PUBKEY_LEN];
	char			npub[NIP19_KEY_BUFSZ], d[256], pfx[16];
	int			found = 0, pl_len;

	if (pl->pl_purg == NULL)
		return 0;
	pl_len = snprintf(pfx, sizeof(pfx), "%d:", KIND_REPO_ANNOUNCEMENT);
	while (!found && (t = find_tag(ev, "a", t)) != NULL) {
		const struct estr *v = t->n > 1 ? &t->v[1] : NULL;

		/* "30617:<64 hex>:<d>" */
		if (v == NULL || v->len <= (size_t)pl_len + 65 ||
		    strncmp(v->s, pfx, (size_t)pl_len) != 0 ||
		    v->s[pl_len + 64] != ':' ||
		    hex_decode(v->s + pl_len, 64, pk, 32) == -1 ||
		    snprintf(d, sizeof(d), "%s", v->s + pl_len + 65) >=
			(int)sizeof(d) ||
		    memchr(v->s, '\0', v->len) != NULL)
			continue;
		held = NULL;
		nheld = 0;
		if (purg_ann_list_d(pl->pl_purg, d, &held, &nheld) == -1)
			continue;
		for (i = 0; i < nheld && !found; i++)
			found = memcmp(held[i].pa_pubkey, pk, 32) == 0;
		purg_ann_free_list(held, nheld);
	}
	if (!found)
		return 0;
	npub_of(pk, npub, sizeof(npub));
	snprintf(msg, msglen,
	    "blocked: repository %s/%s is announced but its git data has not been pushed yet: push to %s/%s/%s.git, then send this event again",
	    npub, d, pl->pl_cfg->public_url, npub, d);
	return 1;
}

/*
 * The blacklist's verdict on an announcement of owner (npub) and d: 1
 * with the "blocked:" reason in msg when a rule matches, else 0.
 */
static int
announcement_blacklisted(const struct config *cfg, const struct event *ev,
    const char *npub, const char *d, char *msg, size_t msglen)
{
	const struct cfg_repo_rule *r;
	size_t			    i;

	for (i = 0; i < cfg->repo_blacklist.n; i++) {
		r = &cfg->repo_blacklist.v[i];
		if (!rule_matches(r, 1, ev->pubkey, d))
			continue;
		if (r->has_pubkey && r->identifier == NULL)
			snprintf(msg, msglen,
			    "blocked: Repository owner %s is blacklisted",
			    npub);
		else if (r->has_pubkey)
			snprintf(msg, msglen,
			    "blocked: Repository %s/%s is blacklisted", npub,
			    d);
		else
			snprintf(msg, msglen,
			    "blocked: Repository identifier %s is blacklisted",
			    d);
		return 1;
	}
	return 0;
}

/*
 * The maintainer exception: the owner or a recursive maintainer of an
 * announcement with identifier d, stored or held in purgatory, is
 * accepted as is.  POLICY_ACCEPT, POLICY_REFUSE, or POLICY_ERROR with
 * msg set.
 */
static int
announcement_by_maintainer(const struct policy *pl, struct store *st,
    const struct event *ev, const struct estr *d, char *msg, size_t msglen)
{
	struct policy_anns a;
	int		   rc = POLICY_REFUSE;
	size_t		   i;

	if (policy_anns_load(pl, st, d->s, d->len, 1, &a) == -1) {
		policy_anns_free(&a);
		snprintf(msg, msglen, "error: database query failed");
		return POLICY_ERROR;
	}
	for (i = 0; i < a.n && rc == POLICY_REFUSE; i++) {
		/*
		 * The author's own held announcement does not count: a
		 * newer one that no longer lists this service evicts it
		 * (reference brief 1.3, checked before the exception).
		 */
		if (a.v[i].an_held &&
		    memcmp(a.v[i].an_ev->pubkey, ev->pubkey, 32) == 0)
			continue;
		if (memcmp(a.v[i].an_ev->pubkey, ev->pubkey, 32) == 0 ||
		    policy_anns_authorised(&a, a.v[i].an_ev->pubkey,
			ev->pubkey))
			rc = POLICY_ACCEPT;
	}
	policy_anns_free(&a);
	return rc;
}

static int
check_announcement(const struct policy *pl, struct store *st,
    const struct event *ev, char *msg, size_t msglen)
{
	const struct config    *cfg = pl->pl_cfg;
	const struct estr      *d = event_tag_value(ev, "d");
	const struct event_tag *t;
	char			npub[NIP19_KEY_BUFSZ], relay[512];
	int			nclone = 0, listed, rc, in_clone, in_relays;

	if (d == NULL) {
		snprintf(msg, msglen,
		    "invalid: missing required 'd' tag (identifier)");
		return 0;
	}
	if (!policy_identifier_safe(d->s, d->len)) {
		snprintf(msg, msglen,
		    "invalid: Invalid identifier: must be non-empty, not '.' or '..', without '/' or '\\'");
		return 0;
	}
	for (t = NULL; (t = find_tag(ev, "clone", t)) != NULL;)
		nclone++;
	if (nclone > 1) {
		snprintf(msg, msglen,
		    "invalid: Invalid announcement: multiple clone tags found. correct format is single clone tag with multiple values");
		return 0;
	}
	npub_of(ev->pubkey, npub, sizeof(npub));
	if (announcement_blacklisted(cfg, ev, npub, d->s, msg, msglen))
		return 0;

	in_clone = tag_lists_service(pl, ev, "clone");
	in_relays = tag_lists_service(pl, ev, "relays");
	listed = in_clone && in_relays;
	if (listed &&
	    (cfg->repo_whitelist.n == 0 ||
		rule_matches(cfg->repo_whitelist.v, cfg->repo_whitelist.n,
		    ev->pubkey, d->s)))
		return POLICY_HOST;
	if (listed)
		snprintf(msg, msglen,
		    "blocked: Announcement lists service but does not match repository whitelist. Repository %s/%s not in whitelist",
		    npub, d->s);
	else {
		/* Say which domain is expected, and where it is missing;
		 * the examples are the URLs people are shown. */
		config_relay_url(cfg, relay, sizeof(relay));
		snprintf(msg, msglen,
		    "blocked: Announcement must list service in both 'clone' and 'relays' tags: this service is %s, missing from %s (e.g. clone %s/%s/%s.git, relays %s)",
		    cfg->domain,
		    !in_clone && !in_relays ? "both" :
			!in_clone	    ? "'clone'" :
					      "'relays'",
		    cfg->public_url, npub, d->s, relay);
	}
	rc = announcement_by_maintainer(pl, st, ev, d, msg, msglen);
	/* GRASP-05, after GRASP-01 and the maintainer exception. */
	if (rc == POLICY_REFUSE && archive_covers(pl, ev, d->s))
		rc = POLICY_HOST;
	return rc;
}

static int
check_state(const struct policy *pl, struct store *st, const struct event *ev,
    char *msg, size_t msglen)
{
	const struct estr *d = event_tag_value(ev, "d");
	struct policy_anns a;
	size_t		   i;
	int		   rc = POLICY_REFUSE;

	if (d == NULL) {
		snprintf(msg, msglen,
		    "invalid: missing required 'd' tag (identifier)");
		return 0;
	}
	/* Announcements held in purgatory count (reference brief 1.4). */
	if (policy_anns_load(pl, st, d->s, d->len, 1, &a) == -1) {
		policy_anns_free(&a);
		snprintf(msg, msglen, "error: database query failed");
		return POLICY_ERROR;
	}
	if (a.n == 0) {
		policy_anns_free(&a);
		snprintf(msg, msglen,
		    "invalid: no announcement exists for this repository");
		return POLICY_REFUSE;
	}
	for (i = 0; i < a.n && rc == POLICY_REFUSE; i++)
		if (policy_anns_authorised(&a, a.v[i].an_ev->pubkey,
			ev->pubkey))
			rc = POLICY_ACCEPT;
	policy_anns_free(&a);
	if (rc == 0)
		snprintf(msg, msglen,
		    "invalid: author not authorized for this repository");
	return rc;
}

/*
 * The related-event rule (reference brief 1.6): accepted when it points at
 * a stored address (a/A/q) or id (e/E/q), or a stored event points at it.
 * Returns 1, 0 or -1 on a store error.
 */
static int
is_related(struct store *st, const struct event *ev)
{
	uint32_t    i, kind;
	uint8_t	    pk[PUBKEY_LEN], id[EVENT_ID_LEN];
	const char *d;
	size_t	    dlen;
	char	    dbuf[1024], coord[1200];
	int	    r;

	for (i = 0; i < ev->ntags; i++) {
		const struct event_tag *t = &ev->tags[i];
		const char	       *name = t->v[0].s;
		const struct estr      *v;

		if (t->n < 2 || t->v[0].len != 1 || !strchr("aAqeE", name[0]))
			continue;
		v = &t->v[1];
		if ((name[0] == 'a' || name[0] == 'A' || name[0] == 'q') &&
		    memchr(v->s, ':', v->len) != NULL) {
			if (coord_parse(v->s, v->len, &kind, pk, &d, &dlen) ==
				-1 ||
			    dlen >= sizeof(dbuf))
				continue;
			memcpy(dbuf, d, dlen);
			dbuf[dlen] = '\0';
			r = store_has_address(st, kind, pk, dbuf);
		} else if (hex_decode(v->s, v->len, id, 32) == 0) {
			r = store_has_id(st, id);
		} else
			continue;
		if (r != 0)
			return r;
	}

	/* Forward references: something stored already points here. */
	switch (event_kind_class(ev->kind)) {
	case KIND_REPLACEABLE:
		snprintf(coord, sizeof(coord), "%u:%s", ev->kind,
		    ev->pubkey_hex);
		if ((r = store_tag_exists(st, "aAq", coord)) != 0)
			return r;
		strncat(coord, ":", sizeof(coord) - strlen(coord) - 1);
		return store_tag_exists(st, "aAq", coord);
	case KIND_ADDRESSABLE:
		snprintf(coord, sizeof(coord), "%u:%s:%s", ev->kind,
		    ev->pubkey_hex, event_d(ev));
		return store_tag_exists(st, "aAq", coord);
	default:
		return store_tag_exists(st, "eEq", ev->id_hex);
	}
}

void
policy_pr_identifier(const struct event *ev, char *d, size_t dlen)
{
	const struct event_tag *t;
	const char	       *dv;
	size_t			dvlen;
	uint32_t		i, kind;
	uint8_t			pk[PUBKEY_LEN];

	d[0] = '\0';
	for (i = 0; i < ev->ntags; i++) {
		t = &ev->tags[i];
		if (t->n < 2 || strcmp(t->v[0].s, "a") != 0 ||
		    strncmp(t->v[1].s, "30617:", 6) != 0)
			continue;
		if (coord_parse(t->v[1].s, t->v[1].len, &kind, pk, &dv,
			&dvlen) == 0 &&
		    dvlen < dlen && policy_identifier_safe(dv, dvlen)) {
			memcpy(d, dv, dvlen);
			d[dvlen] = '\0';
		}
		return;
	}
}

/*
 * GRASP-06's relaxation of the related-event rule: 1 if ev is a PR or PR
 * update whose first "a 30617:<key>:<d>" tag's d is the identifier of
 * the /prs/ path its clone tag names here (policy_prs_clone()).
 */
static int
prs_relaxed(const struct policy *pl, const struct event *ev)
{
	char d[256];

	if (ev->kind != KIND_PR && ev->kind != KIND_PR_UPDATE)
		return 0;
	/* The first such tag, as relayd files the PR under it. */
	policy_pr_identifier(ev, d, sizeof(d));
	return d[0] != '\0' && policy_prs_clone(pl, ev, d);
}

int
policy_check(const struct policy *pl, struct store *st, const struct event *ev,
    char *msg, size_t msglen)
{
	const struct config *cfg = pl->pl_cfg;
	char		     npub[NIP19_KEY_BUFSZ];
	size_t		     i;
	int		     r;

	msg[0] = '\0';
	for (i = 0; i < cfg->event_blacklist.n; i++) {
		if (memcmp(cfg->event_blacklist.v[i], ev->pubkey, 32) == 0) {
			npub_of(ev->pubkey, npub, sizeof(npub));
			snprintf(msg, msglen,
			    "blocked: Event author %s is blacklisted", npub);
			return 0;
		}
	}

	switch (ev->kind) {
	case KIND_REPO_ANNOUNCEMENT:
		return check_announcement(pl, st, ev, msg, msglen);
	case KIND_REPO_STATE:
		return check_state(pl, st, ev, msg, msglen);
	case KIND_USER_GRASP_LIST:
	case KIND_DELETION:
		return 1;
	case KIND_PROFILE:
	case KIND_RELAY_LIST:
		/* GRASP-03: identity storage for eligible authors only. */
		r = pl->pl_eligible != NULL ?
		    pl->pl_eligible(pl->pl_eligible_arg, ev->pubkey) :
		    0;
		if (r == 1)
			return 1;
		if (r == -1) {
			snprintf(msg, msglen, "error: database query failed");
			return POLICY_ERROR;
		}
		snprintf(msg, msglen,
		    "blocked: profiles and relay lists are accepted only from owners and maintainers of hosted repositories and authors of their accepted threads");
		return 0;
	default:
		break;
	}

	if ((r = is_related(st, ev)) == -1) {
		snprintf(msg, msglen, "error: database query failed");
		return -1;
	}
	/* GRASP-06: a PR whose clone tag is its signer's /prs/ repository
	 * here needs no accepted repository; it waits for that push. */
	if (r == 0 && prs_relaxed(pl, ev))
		r = 1;
	if (r == 0 && held_repo(pl, ev, msg, msglen))
		return 0;
	if (r == 0) {
		if (ev->kind == KIND_PR || ev->kind == KIND_PR_UPDATE)
			snprintf(msg, msglen,
			    "blocked: PR event must reference an accepted repository or accepted event");
		else
			snprintf(msg, msglen,
			    "blocked: event must reference an accepted repository or accepted event");
		return 0;
	}
	if ((ev->kind == KIND_PR || ev->kind == KIND_PR_UPDATE) &&
	    event_tag_value(ev, "c") == NULL) {
		snprintf(msg, msglen,
		    "invalid: PR event has no 'c' tag (tip commit)");
		return 0;
	}
	return 1;
}
