/*
 * relay_neg.c: relayd's NIP-77 negentropy sync, the server side.
 * NEG-OPEN takes a filter (or, as NDK's sync sends it, an array of
 * filters: their union) and the client's first message: the set is every
 * stored event matching it (no limit, expired events left out), and
 * relayd answers with NEG-MSG; each NEG-MSG is answered the
 * same way until the client stops; NEG-CLOSE frees the session.  Errors
 * go back as NEG-ERR with a NIP-01 prefix, after which the session is
 * gone.  The reconciliation itself is common/negentropy.c.
 *
 * Sessions hang off their connection (rc_negs) and are freed with it.
 * Their ids are a namespace apart from REQ subscriptions.  A session
 * that hears no NEG-MSG for RELAY_NEG_IDLE is closed with NEG-ERR
 * "closed: ..." (NIP-77's reason for timed-out state), and a set larger
 * than RELAY_NEG_MAX_ITEMS is refused with "blocked: too many query
 * results", so that building one never holds the loop for long.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json.h"
#include "log.h"
#include "negentropy.h"
#include "relayd.h"

struct relay_neg {
	LIST_ENTRY(relay_neg)  rn_entry;
	struct relay_conn     *rn_conn;
	char		       rn_id[RELAY_MAX_SUBID + 1];
	struct neg	      *rn_neg;
	lws_sorted_usec_list_t rn_sul; /* the idle timeout */
};

/* Items held by every open session of this relayd together. */
static size_t neg_items_held;

static void
send_neg(struct relay_conn *c, const char *verb, const char *subid,
    const char *text, size_t len, long long extra)
{
	struct buf b = BUF_INIT;

	buf_adds(&b, "[\"");
	buf_adds(&b, verb);
	buf_adds(&b, "\",");
	buf_add_jstr(&b, subid, strlen(subid));
	buf_addc(&b, ',');
	buf_add_jstr(&b, text, len);
	if (extra >= 0)
		buf_printf(&b, ",%lld", extra);
	buf_addc(&b, ']');
	relay_send(c, b.b_data, b.b_len);
	buf_free(&b);
}

static void
send_err(struct relay_conn *c, const char *subid, const char *reason)
{
	send_neg(c, "NEG-ERR", subid, reason, strlen(reason), -1);
}

static struct relay_neg *
neg_find(struct relay_conn *c, const char *id)
{
	struct relay_neg *n;

	LIST_FOREACH(n, &c->rc_negs, rn_entry)
		if (strcmp(n->rn_id, id) == 0)
			return n;
	return NULL;
}

static void
neg_remove(struct relay_conn *c, struct relay_neg *n)
{
	lws_sul_cancel(&n->rn_sul);
	LIST_REMOVE(n, rn_entry);
	c->rc_nnegs--;
	neg_items_held -= neg_size(n->rn_neg);
	neg_free(n->rn_neg);
	free(n);
}

static void
neg_idle(lws_sorted_usec_list_t *sul)
{
	struct relay_neg  *n = lws_container_of(sul, struct relay_neg, rn_sul);
	struct relay_conn *c = n->rn_conn;
	char		   reason[96];

	snprintf(reason, sizeof(reason),
	    "closed: negentropy session idle for %.0f s", relay_neg_idle());
	send_err(c, n->rn_id, reason);
	neg_remove(c, n);
}

/* (Re)starts n's idle timeout. */
static void
neg_touch(struct relay_neg *n)
{
	lws_sul_schedule(relayd->ctx, 0, &n->rn_sul, neg_idle,
	    (lws_usec_t)(relay_neg_idle() * LWS_US_PER_SEC));
}

double
relay_neg_idle(void)
{
	return config_test_mode(&relayd->cfg) ? RELAY_NEG_IDLE_TEST :
						RELAY_NEG_IDLE;
}

void
relay_neg_release(struct relay_conn *c)
{
	struct relay_neg *n;

	while ((n = LIST_FIRST(&c->rc_negs)) != NULL)
		neg_remove(c, n);
}

/*
 * Copies the subscription id (element 1) into subid.  Returns 0, or -1
 * after telling the client what is wrong.
 */
static int
neg_subid(struct relay_conn *c, const struct json *msg, const char *verb,
    char subid[RELAY_MAX_SUBID + 1])
{
	const struct json *sid = json_at(msg, 1);
	char		   notice[128];

	if (sid == NULL || sid->type != JSON_STRING || sid->len == 0) {
		snprintf(notice, sizeof(notice),
		    "invalid: %s needs a subscription id string", verb);
		relay_send_notice(c, notice);
		return -1;
	}
	if (sid->len > RELAY_MAX_SUBID || memchr(sid->s, '\0', sid->len)) {
		send_err(c, sid->s,
		    "invalid: subscription id longer than 64 "
		    "characters");
		return -1;
	}
	memcpy(subid, sid->s, sid->len + 1);
	return 0;
}

/*
 * Answers the client's message hex (element of msg, maybe NULL) with
 * session ng and sends the answer as NEG-MSG.  Returns 0, or -1 after
 * sending NEG-ERR (the caller then drops the session).
 */
static int
neg_answer(struct relay_conn *c, const char *subid, struct neg *ng,
    const struct json *hex)
{
	struct buf out = BUF_INIT;
	char	   err[160], reason[200];

	if (hex == NULL || hex->type != JSON_STRING) {
		send_err(c, subid,
		    "invalid: the negentropy message must be a "
		    "hex string");
		return -1;
	}
	if (neg_server_reconcile(ng, hex->s, hex->len, &out, err,
		sizeof(err)) == -1) {
		snprintf(reason, sizeof(reason), "invalid: %s", err);
		send_err(c, subid, reason);
		return -1;
	}
	send_neg(c, "NEG-MSG", subid, out.b_data, out.b_len, -1);
	buf_free(&out);
	return 0;
}

/*
 * NEG-OPEN's filter: NIP-77's one object, or an array of 1 to
 * RELAY_MAX_FILTERS objects (NDK's sync), parsed into *fp (filters_free()
 * it).  Returns how many, or 0 after a NEG-ERR.
 */
static size_t
neg_filters(struct relay_conn *c, const char *subid, const struct json *fj,
    struct filter **fp)
{
	const struct json *e;
	struct filter	  *f;
	char		   err[256];
	size_t		   n = 0;

	*fp = NULL;
	if (fj->type == JSON_OBJECT)
		e = fj;
	else if (fj->type == JSON_ARRAY && fj->n > 0 &&
	    fj->n <= RELAY_MAX_FILTERS)
		e = json_at(fj, 0);
	else {
		snprintf(err, sizeof(err),
		    "invalid: a filter must be a JSON object, or an array of 1 to %d of them",
		    RELAY_MAX_FILTERS);
		send_err(c, subid, err);
		return 0;
	}
	if ((f = calloc(fj->type == JSON_ARRAY ? fj->n : 1, sizeof(*f))) ==
	    NULL)
		fatal("neg_filters");
	for (; e != NULL; e = fj->type == JSON_ARRAY ? e->next : NULL) {
		if (e->type != JSON_OBJECT) {
			send_err(c, subid,
			    "invalid: a filter must be a JSON object");
			break;
		}
		/* A filter that fails to parse is left empty, safe to free. */
		if (filter_parse(e, &f[n++], err, sizeof(err)) == -1) {
			send_err(c, subid, err);
			break;
		}
	}
	if (e != NULL) {
		filters_free(f, n);
		return 0;
	}
	*fp = f;
	return n;
}

static void
neg_open(struct relay_conn *c, const struct json *msg)
{
	const struct json *fj = json_at(msg, 2);
	struct relay_neg  *n, *old;
	struct neg_items   it = { NULL, 0, 0 };
	struct filter	  *f = NULL;
	char		   subid[RELAY_MAX_SUBID + 1], err[256];
	size_t		   nf = 0, i;
	int		   more = 0, m;

	if (neg_subid(c, msg, "NEG-OPEN", subid) == -1)
		return;
	/* NIP-77: opening an id that is open replaces that session. */
	if ((old = neg_find(c, subid)) != NULL)
		neg_remove(c, old);
	if (msg->n != 4) {
		send_err(c, subid,
		    "invalid: NEG-OPEN takes a subscription "
		    "id, a filter (or an array of filters) and a message");
		return;
	}
	if (c->rc_nnegs >= RELAY_MAX_NEGS) {
		snprintf(err, sizeof(err),
		    "blocked: too many negentropy sessions (at most %d per connection)",
		    RELAY_MAX_NEGS);
		send_err(c, subid, err);
		return;
	}
	if ((nf = neg_filters(c, subid, fj, &f)) == 0)
		return;
	/* The union: neg_server_new() drops what two filters both found. */
	for (i = 0; i < nf && !more; i++) {
		if (store_query_items(relay_reader(), &f[i],
			(int64_t)time(NULL), RELAY_NEG_MAX_ITEMS - it.ni_n,
			neg_items_add, &it, &m) == -1) {
			send_err(c, subid, "error: database query failed");
			goto done;
		}
		more = m;
	}
	if (more) {
		/* STRFRY's reason, with its limit as a 4th element. */
		static const char reason[] = "blocked: too many query results";

		send_neg(c, "NEG-ERR", subid, reason, sizeof(reason) - 1,
		    RELAY_NEG_MAX_ITEMS);
		goto done;
	}
	if (neg_items_held + it.ni_n > RELAY_NEG_MAX_HELD) {
		send_err(c, subid,
		    "rate-limited: too many negentropy "
		    "syncs in progress, try again later");
		goto done;
	}
	if ((n = calloc(1, sizeof(*n))) == NULL)
		fatal("neg_open");
	memcpy(n->rn_id, subid, sizeof(subid));
	n->rn_conn = c;
	n->rn_neg = neg_server_new(it.ni_v, it.ni_n, NEG_FRAME_DEFAULT, err,
	    sizeof(err));
	it.ni_v = NULL;
	if (n->rn_neg == NULL) {
		/* Cannot happen with the bounds above; say so if it does. */
		log_warnx("negentropy: %s", err);
		send_err(c, subid, "error: cannot start negentropy");
		free(n);
		goto done;
	}
	LIST_INSERT_HEAD(&c->rc_negs, n, rn_entry);
	c->rc_nnegs++;
	neg_items_held += neg_size(n->rn_neg);
	if (neg_answer(c, subid, n->rn_neg, json_at(msg, 3)) == -1)
		neg_remove(c, n);
	else
		neg_touch(n);
done:
	free(it.ni_v);
	filters_free(f, nf);
}

static void
neg_msg(struct relay_conn *c, const struct json *msg)
{
	struct relay_neg *n;
	char		  subid[RELAY_MAX_SUBID + 1];

	if (neg_subid(c, msg, "NEG-MSG", subid) == -1)
		return;
	if ((n = neg_find(c, subid)) == NULL) {
		send_err(c, subid, "closed: subscription not found");
		return;
	}
	if (msg->n != 3) {
		send_err(c, subid,
		    "invalid: NEG-MSG takes a subscription id "
		    "and a message");
		neg_remove(c, n);
		return;
	}
	if (neg_answer(c, subid, n->rn_neg, json_at(msg, 2)) == -1)
		neg_remove(c, n);
	else
		neg_touch(n);
}

static void
neg_close(struct relay_conn *c, const struct json *msg)
{
	struct relay_neg *n;
	char		  subid[RELAY_MAX_SUBID + 1];

	if (neg_subid(c, msg, "NEG-CLOSE", subid) == -1)
		return;
	if ((n = neg_find(c, subid)) != NULL)
		neg_remove(c, n);
}

void
relay_neg_message(struct relay_conn *c, const struct json *msg)
{
	const char *verb = json_at(msg, 0)->s;
	char	    notice[128];

	relayd->stats.msgs_in_neg++;
	if (strcmp(verb, "NEG-OPEN") == 0)
		neg_open(c, msg);
	else if (strcmp(verb, "NEG-MSG") == 0)
		neg_msg(c, msg);
	else if (strcmp(verb, "NEG-CLOSE") == 0)
		neg_close(c, msg);
	else {
		snprintf(notice, sizeof(notice),
		    "error: unknown message type \"%.40s\"", verb);
		relay_send_notice(c, notice);
	}
}
