/*
 * relay_addr.c: relayd's per-address limits (graspd.conf(5)): the
 * connections from one address still sending their request headers
 * (max_pending_per_ip), the websockets open from it
 * (max_connections_per_ip), the EVENTs they send together
 * (max_events_per_minute_per_ip, a token bucket shared by the address's
 * connections, beside each connection's own) and the git smart HTTP
 * requests it has in progress (max_git_requests_per_ip).  An address is
 * its addrkey.h key: IPv4 by address, IPv6 by its ipv6_prefix network.
 * One record per key, in a list: it lives while a connection or a git
 * request from the address is open, and afterwards until its bucket is
 * full again, so that reconnecting does not refill it.  Stale records go
 * when a new address comes.  Runs in relayd's loop.
 */
#include <stdlib.h>
#include <string.h>

#include "addrkey.h"
#include "log.h"
#include "relayd.h"

struct relay_addr {
	LIST_ENTRY(relay_addr) ra_entry;
	char		       ra_peer[ADDRKEY_LEN]; /* its key */
	int		       ra_pending; /* headers not complete yet */
	int		       ra_conns;   /* open websockets */
	int		       ra_git;	   /* git requests in progress */
	double		       ra_tokens;  /* EVENT bucket */
	int64_t		       ra_at;	   /* last refill, ms */
};

static LIST_HEAD(, relay_addr) addrs = LIST_HEAD_INITIALIZER(addrs);

static double
addr_rate(void)
{
	return relayd->cfg.max_events_per_minute_per_ip;
}

static void
refill(struct relay_addr *a, int64_t now)
{
	double per_min = addr_rate();

	a->ra_tokens += (double)(now - a->ra_at) * per_min / 60000.0;
	if (a->ra_tokens > per_min)
		a->ra_tokens = per_min;
	a->ra_at = now;
}

/* The record of peer, or NULL; records nobody needs go on the way. */
static struct relay_addr *
addr_find(const char *peer)
{
	struct relay_addr *a, *next, *found = NULL;
	int64_t		   now = relay_now_ms();

	for (a = LIST_FIRST(&addrs); a != NULL; a = next) {
		next = LIST_NEXT(a, ra_entry);
		if (strcmp(a->ra_peer, peer) == 0) {
			found = a;
			continue;
		}
		if (a->ra_conns == 0 && a->ra_git == 0 && a->ra_pending == 0) {
			refill(a, now);
			if (addr_rate() <= 0 || a->ra_tokens >= addr_rate()) {
				LIST_REMOVE(a, ra_entry);
				free(a);
			}
		}
	}
	return found;
}

int
relay_addr_conns(const char *peer)
{
	struct relay_addr *a = addr_find(peer);

	return a != NULL ? a->ra_conns : 0;
}

/* The record of peer, made if there is none. */
static struct relay_addr *
addr_get(const char *peer)
{
	struct relay_addr *a;

	if ((a = addr_find(peer)) != NULL)
		return a;
	if ((a = calloc(1, sizeof(*a))) == NULL)
		fatal("addr_get");
	snprintf(a->ra_peer, sizeof(a->ra_peer), "%s", peer);
	a->ra_tokens = addr_rate();
	a->ra_at = relay_now_ms();
	LIST_INSERT_HEAD(&addrs, a, ra_entry);
	return a;
}

void
relay_addr_attach(struct relay_conn *c, const char *key)
{
	struct relay_addr *a = addr_get(key);

	a->ra_conns++;
	c->rc_addr = a;
}

void
relay_addr_detach(struct relay_conn *c)
{
	if (c->rc_addr == NULL)
		return;
	c->rc_addr->ra_conns--;
	c->rc_addr = NULL;
}

int
relay_addr_event_ok(struct relay_conn *c)
{
	struct relay_addr *a = c->rc_addr;

	if (addr_rate() <= 0 || a == NULL)
		return 1;
	refill(a, relay_now_ms());
	if (a->ra_tokens < 1.0)
		return 0;
	a->ra_tokens -= 1.0;
	return 1;
}

int
relay_addr_git_begin(struct lws *wsi, struct relay_addr **ap)
{
	struct relay_addr *a;
	char		   peer[sizeof(a->ra_peer)];
	int		   cap = relayd->cfg.max_git_requests_per_ip;

	*ap = NULL;
	if (cap <= 0)
		return 1;
	a = addr_get(relay_peer_key(wsi, peer, sizeof(peer)));
	if (a->ra_git >= cap) {
		relayd->stats.git_refused_ip++;
		log_info(
		    "refusing a git request from %s: %d in progress from it",
		    peer, a->ra_git);
		return 0;
	}
	a->ra_git++;
	*ap = a;
	return 1;
}

void
relay_addr_git_end(struct relay_addr *a)
{
	if (a != NULL)
		a->ra_git--;
}

int
relay_addr_pending_begin(const char *key, struct relay_addr **ap)
{
	struct relay_addr *a;
	int		   cap = relayd->cfg.max_pending_per_ip;

	*ap = NULL;
	if (cap <= 0)
		return 1;
	a = addr_get(key);
	if (a->ra_pending >= cap)
		return 0;
	a->ra_pending++;
	*ap = a;
	return 1;
}

void
relay_addr_pending_end(struct relay_addr *a)
{
	if (a != NULL)
		a->ra_pending--;
}

void
relay_addr_free(void)
{
	struct relay_addr *a;

	while ((a = LIST_FIRST(&addrs)) != NULL) {
		LIST_REMOVE(a, ra_entry);
		free(a);
	}
}
