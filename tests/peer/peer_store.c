/*
 * peer_store.c: the test peer's state that outlives a connection: the
 * in-memory event store (kept newest first, deduplicated by id), the
 * scripted configuration and the log that GET /log returns.  Runs in
 * peer, the scriptable relay of the integration tests.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "peer.h"

/* NIP-01 order: newer first, then the lower id. */
static int
newer(const struct event *a, const struct event *b)
{
	if (a->created_at != b->created_at)
		return a->created_at > b->created_at;
	return memcmp(a->id, b->id, EVENT_ID_LEN) < 0;
}

int
peer_store_add(struct event *ev)
{
	struct event **n;
	size_t	       i, lo, hi, mid;

	for (i = 0; i < peer->nevents; i++) {
		if (memcmp(peer->events[i]->id, ev->id, EVENT_ID_LEN) == 0) {
			event_destroy(ev);
			return 0;
		}
	}
	if (peer->nevents >= PEER_MAX_EVENTS) {
		event_destroy(ev);
		return -1;
	}
	if (peer->nevents == peer->capevents) {
		peer->capevents = peer->capevents ? peer->capevents * 2 : 256;
		n = reallocarray(peer->events, peer->capevents, sizeof(*n));
		if (n == NULL)
			fatal("peer_store_add");
		peer->events = n;
	}
	lo = 0;
	hi = peer->nevents;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (newer(peer->events[mid], ev))
			lo = mid + 1;
		else
			hi = mid;
	}
	memmove(&peer->events[lo + 1], &peer->events[lo],
	    (peer->nevents - lo) * sizeof(*peer->events));
	peer->events[lo] = ev;
	peer->nevents++;
	return 1;
}

void
peer_store_query(const struct filter *f, size_t nf, size_t max,
    void (*cb)(const struct event *, void *), void *arg)
{
	unsigned char *sel;
	size_t	       i, j, sent = 0;
	int64_t	       taken;

	if (peer->nevents == 0)
		return;
	if ((sel = calloc(peer->nevents, 1)) == NULL)
		fatal("peer_store_query");
	for (j = 0; j < nf; j++) {
		taken = 0;
		for (i = 0; i < peer->nevents; i++) {
			if (f[j].f_has_limit && taken >= f[j].f_limit)
				break;
			if (filter_match(&f[j], peer->events[i])) {
				sel[i] = 1;
				taken++;
			}
		}
	}
	for (i = 0; i < peer->nevents; i++) {
		if (!sel[i])
			continue;
		if (max != 0 && sent >= max)
			break;
		cb(peer->events[i], arg);
		sent++;
	}
	free(sel);
}

/* Each key of POST /config, its type and where it goes. */
enum cfg_type {
	CFG_INT,
	CFG_BOOL,
	CFG_IGNORED,
};

static const struct {
	const char   *name;
	enum cfg_type type;
	size_t	      off;
	int	      max;
} cfg_keys[] = {
#define K(n, t, m) \
	{ \
#n, t, offsetof(struct peer_config, n), m \
	}
	K(eose_delay_ms, CFG_INT, 3600000),
	K(drop_eose, CFG_BOOL, 1),
	K(max_results, CFG_INT, 1000000),
	K(closed_rate_limited, CFG_BOOL, 1),
	K(closed_tag, CFG_INT, 127),
	K(notice_rate_limit, CFG_BOOL, 1),
	K(ok_rate_limited, CFG_BOOL, 1),
	K(close_after_events, CFG_INT, 100000000),
	K(garbage, CFG_BOOL, 1),
	K(forge, CFG_BOOL, 1),
	K(oversized_bytes, CFG_INT, PEER_MAX_OVERSIZED),
	K(flood, CFG_INT, PEER_MAX_FLOOD),
	K(auth, CFG_BOOL, 1),
	K(refuse, CFG_BOOL, 1),
	K(hang, CFG_BOOL, 1),
	K(verify, CFG_BOOL, 1),
	K(neg, CFG_BOOL, 1),
#undef K
};

#define NCFG (sizeof(cfg_keys) / sizeof(cfg_keys[0]))

int
peer_config_apply(const cJSON *obj, char *err, size_t errlen)
{
	struct peer_config nc = peer->cfg;
	const cJSON	  *m;
	size_t		   i;
	int		  *slot;

	if (!cJSON_IsObject(obj)) {
		snprintf(err, errlen, "the body must be a JSON object");
		return -1;
	}
	cJSON_ArrayForEach(m, obj) {
		for (i = 0; i < NCFG; i++)
			if (strcmp(m->string, cfg_keys[i].name) == 0)
				break;
		if (i == NCFG) {
			snprintf(err, errlen, "unknown key \"%.60s\"",
			    m->string);
			return -1;
		}
		slot = (int *)((char *)&nc + cfg_keys[i].off);
		switch (cfg_keys[i].type) {
		case CFG_IGNORED:
			break;
		case CFG_BOOL:
			if (!cJSON_IsBool(m)) {
				snprintf(err, errlen,
				    "\"%s\" takes true or "
				    "false",
				    m->string);
				return -1;
			}
			*slot = cJSON_IsTrue(m);
			break;
		case CFG_INT:
			if (!cJSON_IsNumber(m) || m->valuedouble < 0 ||
			    m->valuedouble > cfg_keys[i].max ||
			    m->valuedouble != (double)(int)m->valuedouble) {
				snprintf(err, errlen,
				    "\"%s\" takes an integer "
				    "in 0..%d",
				    m->string, cfg_keys[i].max);
				return -1;
			}
			*slot = (int)m->valuedouble;
			break;
		}
	}
	peer->cfg = nc;
	return 0;
}

cJSON *
peer_config_json(void)
{
	cJSON *o;
	size_t i;
	int    v;

	if ((o = cJSON_CreateObject()) == NULL)
		fatal("peer_config_json");
	for (i = 0; i < NCFG; i++) {
		if (cfg_keys[i].type == CFG_IGNORED)
			continue;
		v = *(int *)((char *)&peer->cfg + cfg_keys[i].off);
		if (cfg_keys[i].type == CFG_BOOL)
			cJSON_AddBoolToObject(o, cfg_keys[i].name, v);
		else
			cJSON_AddNumberToObject(o, cfg_keys[i].name, v);
	}
	return o;
}

void
peer_log_add(cJSON *list, cJSON *item)
{
	if (cJSON_GetArraySize(list) >= PEER_MAX_LOG) {
		cJSON_Delete(item);
		return;
	}
	cJSON_AddItemToArray(list, item);
}

static cJSON *
new_array(void)
{
	cJSON *a;

	if ((a = cJSON_CreateArray()) == NULL)
		fatal("cJSON_CreateArray");
	return a;
}

void
peer_reset(void)
{
	memset(&peer->cfg, 0, sizeof(peer->cfg));
	events_destroy(peer->events, peer->nevents);
	peer->events = NULL;
	peer->nevents = peer->capevents = 0;
	cJSON_Delete(peer->log_reqs);
	cJSON_Delete(peer->log_closes);
	cJSON_Delete(peer->log_opens);
	cJSON_Delete(peer->log_auth);
	cJSON_Delete(peer->log_negs);
	peer->log_negs = new_array();
	peer->log_reqs = new_array();
	peer->log_closes = new_array();
	peer->log_opens = new_array();
	peer->log_auth = new_array();
	peer->log_connections = 0;
	peer->log_nreqs = peer->log_nnegs = 0;
	peer->log_last_ms = 0;
	peer->log_events_received = 0;
	peer->log_bytes_in = peer->log_bytes_out = 0;
	peer->log_max_concurrent_subs = 0;
	peer->log_max_total_subs = peer->nsubs;
	peer_hang_release();
}

char *
peer_log_text(void)
{
	cJSON *o;
	char  *s;

	if ((o = cJSON_CreateObject()) == NULL)
		fatal("peer_log_text");
	cJSON_AddNumberToObject(o, "connections",
	    (double)peer->log_connections);
	cJSON_AddNumberToObject(o, "open", peer->nconns);
	/* References: deleting o leaves the lists alone. */
	cJSON_AddItemReferenceToObject(o, "reqs", peer->log_reqs);
	cJSON_AddItemReferenceToObject(o, "closes", peer->log_closes);
	cJSON_AddItemReferenceToObject(o, "opens", peer->log_opens);
	cJSON_AddItemReferenceToObject(o, "negs", peer->log_negs);
	cJSON_AddNumberToObject(o, "events_received",
	    (double)peer->log_events_received);
	cJSON_AddNumberToObject(o, "stored", (double)peer->nevents);
	cJSON_AddItemReferenceToObject(o, "auth", peer->log_auth);
	cJSON_AddNumberToObject(o, "max_concurrent_subs",
	    peer->log_max_concurrent_subs);
	cJSON_AddNumberToObject(o, "max_total_subs", peer->log_max_total_subs);
	cJSON_AddNumberToObject(o, "bytes_in", (double)peer->log_bytes_in);
	cJSON_AddNumberToObject(o, "bytes_out", (double)peer->log_bytes_out);
	cJSON_AddNumberToObject(o, "hang_port", peer->hang_port);
	cJSON_AddItemToObject(o, "config", peer_config_json());
	if ((s = cJSON_PrintUnformatted(o)) == NULL)
		fatal("peer_log_text");
	cJSON_Delete(o);
	return s;
}

char *
peer_stats_text(void)
{
	struct peer_conn *c;
	struct peer_sub	 *s;
	struct buf	  b = BUF_INIT;
	int64_t		  live_last = 0;
	size_t		  subs = 0, live = 0;

	LIST_FOREACH(c, &peer->conns, pc_entry) {
		LIST_FOREACH(s, &c->pc_subs, ps_entry) {
			subs++;
			if (!s->ps_live)
				continue;
			live++;
			if (s->ps_at_ms > live_last)
				live_last = s->ps_at_ms;
		}
	}
	buf_printf(&b,
	    "{\"connections\":%llu,\"open\":%d,\"subs\":%zu,"
	    "\"live\":%zu,\"live_last_ms\":%lld,\"reqs\":%llu,"
	    "\"negs\":%llu,\"last_ms\":%lld,\"bytes_in\":%llu}",
	    (unsigned long long)peer->log_connections, peer->nconns, subs, live,
	    (long long)live_last, (unsigned long long)peer->log_nreqs,
	    (unsigned long long)peer->log_nnegs, (long long)peer->log_last_ms,
	    (unsigned long long)peer->log_bytes_in);
	return buf_release(&b, NULL);
}
