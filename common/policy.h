/*
 * policy.h: the GRASP-01 write policy: pure decisions over the store.
 *
 * relayd asks policy_check() about every event after its id and signature
 * have been verified and before it is stored, whether it came from a
 * client or from a sibling role through the ingest channel.  The policy
 * reads the store (inside relayd's write transaction, so it sees the
 * events accepted earlier in the same batch) and never writes.
 */
#ifndef GRASPD_POLICY_H
#define GRASPD_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "event.h" /* the KIND_* numbers */

struct config;
struct event;
struct purg;
struct store;

/* Ours: bound on the recursive maintainer walk (NIP-34 sets none). */
#define POLICY_MAX_MAINTAINERS 256

/* policy_check() verdicts. */
#define POLICY_ERROR  (-1)
#define POLICY_REFUSE 0
#define POLICY_ACCEPT 1 /* store it */
/*
 * A kind 30617 that lists this service (or that GRASP-05 archive mode
 * covers, policy_archived()): relayd hosts its repository, and
 * holds it in purgatory until git data arrives unless an earlier version
 * is stored (GRASP-01, reference brief 1.3).
 */
#define POLICY_HOST   2

struct policy {
	const struct config *pl_cfg;
	char		     pl_host[256];     /* NGIT_DOMAIN host, lower */
	int		     pl_port;	       /* its port, 0 when none */
	char		     pl_pub_host[256]; /* NGIT_PUBLIC_URL host */
	int		     pl_pub_port;      /* its port or scheme's */
	struct purg	    *pl_purg;	       /* held announcements, or NULL */
	/* GRASP-03 eligible identity authors: 1 if pk is one, 0 if not,
	 * -1 on an error; NULL: nobody is. */
	int (*pl_eligible)(void *arg, const uint8_t pk[PUBKEY_LEN]);
	void *pl_eligible_arg;
};

/* One announcement of a repository identifier, stored or held. */
struct policy_ann {
	struct event *an_ev;
	int	      an_held; /* in purgatory, not stored */
};

/* The announcements of one identifier, as policy_anns_load() finds them. */
struct policy_anns {
	size_t		  n;
	struct policy_ann v[POLICY_MAX_MAINTAINERS];
};

/*
 * Prepares a policy for cfg (which must outlive it).  Returns 0, or -1 with
 * a reason in err when NGIT_DOMAIN cannot be parsed as host[:port] or
 * NGIT_PUBLIC_URL as http[s]://host[:port].
 */
int policy_init(struct policy *, const struct config *cfg, char *err,
    size_t errlen);

/*
 * Lets the policy see the announcements held in purgatory (p outlives the
 * policy; NULL: none).  The maintainer exception and the state policy
 * count them (reference brief 1.3, 1.4).
 */
void policy_set_purgatory(struct policy *, struct purg *p);

/*
 * Lets the policy ask who is an eligible identity author (GRASP-03; fn
 * NULL: nobody): kind 0 and kind 10002 are accepted only from them.  fn
 * must answer for the events stored so far, those of the current write
 * transaction included, so that an author made eligible earlier in the
 * same transaction counts.
 */
void policy_set_eligible(struct policy *,
    int (*fn)(void *arg, const uint8_t pk[PUBKEY_LEN]), void *arg);

/*
 * Decides about ev.  Returns POLICY_ACCEPT, POLICY_HOST (a kind 30617 that
 * lists this service), POLICY_REFUSE with the client-facing OK message
 * ("blocked: ...", "invalid: ...") in msg, or POLICY_ERROR when the store
 * failed (msg says "error: ...": fail closed).  A kind 30618 or 1618/1619
 * is accepted when its author is authorised and its references hold;
 * whether its git data is present is relayd's question.  Never exits.
 */
int policy_check(const struct policy *, struct store *, const struct event *ev,
    char *msg, size_t msglen);

/*
 * 1 if url (http, https, ws or wss) names this service: the host of
 * NGIT_DOMAIN and the same port (the scheme's default port when
 * NGIT_DOMAIN has none), or the host and port of NGIT_PUBLIC_URL (each
 * side's port defaulting to its scheme's).
 */
int policy_url_is_service(const struct policy *, const char *url, size_t len);

/* GRASP-06's contributors' repositories: /<this>/<npub>/<d>.git. */
#define POLICY_PRS_DIR "prs"

/*
 * GRASP-06: 1 if GRASP-06 is enabled and a clone tag of the PR (or PR
 * update) ev names this service (policy_url_is_service()) with the path
 * /prs/<npub of its signer>/<d>.git, nothing after it; else 0.
 */
int policy_prs_clone(const struct policy *, const struct event *ev,
    const char *d);

/*
 * GRASP-05: 1 if the announcement ann is hosted here only because archive
 * mode covers it (it does not list this service in both clone and relays
 * tags, or misses the repository whitelist, and NGIT_ARCHIVE_ALL, the
 * archive whitelist or a clone URL on an archived service takes it),
 * else 0.  Never exits.
 */
int policy_archived(const struct policy *, const struct event *ann);

/*
 * Loads the announcements (kind 30617) with identifier d: the stored ones,
 * and with with_held also those held in purgatory.  At most
 * POLICY_MAX_MAINTAINERS.  Returns 0, or -1 on a store error; the caller
 * frees with policy_anns_free() either way.
 */
int  policy_anns_load(const struct policy *, struct store *, const char *d,
     size_t dlen, int with_held, struct policy_anns *out);
void policy_anns_free(struct policy_anns *);
/* The announcement by pubkey among a, or NULL. */
const struct policy_ann *policy_anns_by(const struct policy_anns *a,
    const uint8_t pubkey[PUBKEY_LEN]);
/*
 * 1 if who is in owner's recursive maintainer set over a (reference brief
 * 1.8): the owner, the keys of the owner's first "maintainers" tag, theirs
 * when they have an announcement in a, and so on; else 0.
 */
int			 policy_anns_authorised(const struct policy_anns *a,
			 const uint8_t owner[PUBKEY_LEN], const uint8_t who[PUBKEY_LEN]);

/*
 * 1 if d is a safe repository identifier (reference brief 1.3): not
 * empty, not "." or "..", without '/', '\' or NUL.
 */
int  policy_identifier_safe(const char *d, size_t len);
/*
 * The identifier of a PR's (or any event's) first "a 30617:..." tag into
 * d (dlen bytes), or "" when that tag is malformed, unsafe as a path, or
 * absent: the repository relayd files the PR under.
 */
void policy_pr_identifier(const struct event *ev, char *d, size_t dlen);

#endif
