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

struct config;
struct event;
struct store;

/* NIP-34 kinds the policy dispatches on. */
#define KIND_DELETION		5	/* NIP-09 */
#define KIND_PROFILE		0	/* NIP-01 metadata */
#define KIND_RELAY_LIST		10002	/* NIP-65 */
#define KIND_PATCH		1617	/* NIP-34 */
#define KIND_PR			1618	/* NIP-34 */
#define KIND_PR_UPDATE		1619	/* NIP-34 */
#define KIND_ISSUE		1621	/* NIP-34 */
#define KIND_USER_GRASP_LIST	10317	/* NIP-34 */
#define KIND_REPO_ANNOUNCEMENT	30617	/* NIP-34 */
#define KIND_REPO_STATE		30618	/* NIP-34 */

/* Ours: bound on the recursive maintainer walk (NIP-34 sets none). */
#define POLICY_MAX_MAINTAINERS	256

struct policy {
	const struct config	*pl_cfg;
	char			 pl_host[256];	/* NGIT_DOMAIN host, lower */
	int			 pl_port;	/* its port, 0 when none */
};

/*
 * Prepares a policy for cfg (which must outlive it).  Returns 0, or -1 with
 * a reason in err when NGIT_DOMAIN cannot be parsed as host[:port].
 */
int	policy_init(struct policy *, const struct config *cfg, char *err,
	    size_t errlen);

/*
 * Decides about ev.  Returns 1 to accept, 0 to refuse with the client-facing
 * OK message ("blocked: ...", "invalid: ...") in msg, or -1 when the store
 * failed (msg says "error: ...": fail closed).  Never exits.
 */
int	policy_check(const struct policy *, struct store *,
	    const struct event *ev, char *msg, size_t msglen);

/*
 * 1 if url (http, https, ws or wss) names this service: same host, and the
 * same port (the scheme's default port when NGIT_DOMAIN has none).
 */
int	policy_url_is_service(const struct policy *, const char *url,
	    size_t len);

/*
 * Splits a "kind:pubkey:d" coordinate (d may contain ':').  Returns 0 and
 * fills the outputs (d points into coord) when kind is numeric and pubkey
 * 64 lowercase hex, else -1.
 */
int	coord_parse(const char *coord, size_t len, uint32_t *kind,
	    uint8_t pubkey[32], const char **d, size_t *dlen);

#endif
