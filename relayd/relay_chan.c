/*
 * relay_chan.c: relayd's side of the nanomsg channels
 * (doc/architecture.md, "Channels and messages"): it binds ingest (PULL:
 * events fetched by the other roles, and discoveryd's GRASP-03 fallback
 * marks, written in the same batched transactions), accepted (PUB: one
 * notice per stored event), stats (PULL: the other processes' counters,
 * served at /metrics), gitdata (REP: syncd's GIT_DATA requests) and its
 * own control socket (REP, for graspctl and the supervisor).  The
 * descriptors nanomsg exposes are adopted into the libwebsockets loop as
 * raw files, and one table, chans[], names each sibling channel's
 * handler, relay_dispatch_<channel>.  A malformed message on a sibling
 * channel ends relayd; the control socket, which clients write, answers
 * anything.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stddef.h>
#include <nanomsg/nn.h>
#include <nanomsg/pipeline.h>
#include <nanomsg/pubsub.h>
#include <nanomsg/reqrep.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctlcmd.h"
#include "event.h"
#include "log.h"
#include "msg.h"
#include "plusmark.h"
#include "role.h"
#include "relayd.h"

/* Ours: messages read from one channel per loop pass. */
#define RELAY_CHAN_BATCH 256

/* Latest stats snapshot of each role, for /metrics. */
static cJSON  *role_stats[ROLE_COUNT];
static int64_t role_stats_at[ROLE_COUNT]; /* relay_now_ms() */

/* relayd's column of ctlcmd.h's list, below. */
static const ctl_fn relay_ctl_fns[CTL_NCMDS];

static int
open_bound(int proto, const char *name, char *ep, size_t eplen)
{
	int s;

	if (chan_endpoint(relayd->cfg.run_path, name, ep, eplen) == -1)
		fatalx("run path too long for %s", name);
	if ((s = chan_open(proto, ep, 1)) < 0)
		fatal("cannot bind %s", ep);
	return s;
}

/* The descriptor's tag is the socket + 1 (0 would read as no data). */
static void
adopt(int sock, const char *what)
{
	proc_adopt(relayd->vhost, chan_rcvfd(sock), "nn", (intptr_t)(sock + 1),
	    what);
}

void
relay_chan_open(void)
{
	char ep[512];

	relayd->sock_ingest = open_bound(NN_PULL, CHAN_INGEST, ep, sizeof(ep));
	relayd->sock_accepted =
	    open_bound(NN_PUB, CHAN_ACCEPTED, ep, sizeof(ep));
	relayd->sock_stats = open_bound(NN_PULL, CHAN_STATS, ep, sizeof(ep));
	relayd->sock_gitdata = open_bound(NN_REP, CHAN_GITDATA, ep, sizeof(ep));
	relayd->sock_control = proc_control_open(&relayd->proc, relay_ctl_fns,
	    NULL, ep, sizeof(ep));
	adopt(relayd->sock_ingest, "ingest");
	adopt(relayd->sock_stats, "stats");
	adopt(relayd->sock_gitdata, "gitdata");
	adopt(relayd->sock_control, "control");
}

void
relay_chan_close(void)
{
	size_t i;

	chan_close(relayd->sock_ingest);
	chan_close(relayd->sock_accepted);
	chan_close(relayd->sock_stats);
	chan_close(relayd->sock_gitdata);
	chan_close(relayd->sock_control);
	for (i = 0; i < ROLE_COUNT; i++) {
		cJSON_Delete(role_stats[i]);
		role_stats[i] = NULL;
	}
}

/* The notices of the commits being published, sent by send_notices(). */
static struct msg_accepted    notices[MSG_ACCEPTED_MAX];
static size_t		      nnotices;
static int64_t		      notices_sent_ms; /* the last message */
static lws_sorted_usec_list_t notice_sul;
static int		      notice_timer;

static void
send_notices(void)
{
	notices_sent_ms = relay_now_ms();
	if (nnotices == 0)
		return;
	/* A PUB socket drops rather than blocks; the feed's readers catch
	 * up from the database. */
	if (msg_send(relayd->sock_accepted, MSG_ACCEPTED, notices,
		nnotices * sizeof(notices[0]), NN_DONTWAIT) == -1 &&
	    errno != EAGAIN)
		log_warn("publishing %zu accepted notices", nnotices);
	nnotices = 0;
}

static void
notice_cb(lws_sorted_usec_list_t *sul)
{
	(void)sul;
	notice_timer = 0;
	send_notices();
}

void
relay_chan_publish(int64_t seq, const struct event *ev)
{
	struct msg_accepted *ma;

	if (nnotices == MSG_ACCEPTED_MAX)
		send_notices();
	ma = &notices[nnotices++];
	memset(ma, 0, sizeof(*ma));
	ma->ma_seq = seq;
	ma->ma_kind = ev->kind;
	memcpy(ma->ma_id, ev->id, EVENT_ID_LEN);
	memcpy(ma->ma_pubkey, ev->pubkey, PUBKEY_LEN);
}

void
relay_chan_send(void)
{
	int64_t wait;

	if (nnotices == 0 || notice_timer)
		return;
	wait = notices_sent_ms + RELAY_NOTICE_GAP_MS - relay_now_ms();
	if (wait <= 0) {
		send_notices();
		return;
	}
	notice_timer = 1;
	lws_sul_schedule(relayd->ctx, 0, &notice_sul, notice_cb,
	    wait * LWS_US_PER_MS);
}

/* A GRASP-03 fallback mark from discoveryd (plusmark.h). */
struct plus_mark {
	uint8_t pm_pubkey[PUBKEY_LEN];
	int	pm_set;
};

static void
plus_mark_run(void *arg)
{
	struct plus_mark *pm = arg;

	char hex[PUBKEY_HEX_LEN + 1];

	if (plusmark_set(store_sqlite(relayd->store), pm->pm_pubkey, pm->pm_set,
		time(NULL)) == 1) {
		hex_encode(pm->pm_pubkey, PUBKEY_LEN, hex);
		log_debug("%s: fallback mark %s", hex,
		    pm->pm_set ? "set" : "cleared");
	}
}

static void
plus_mark_done(void *arg, int committed)
{
	(void)committed; /* discoveryd re-reads the table and resends */
	free(arg);
}

static void
relay_dispatch_ingest(const struct msg *m)
{
	struct msg_ingest mi;
	struct plus_mark *pm;

	if (m->m_type == MSG_PLUSMARK) {
		if ((pm = calloc(1, sizeof(*pm))) == NULL)
			fatal("plus mark");
		pm->pm_set = msg_plusmark_decode(m, pm->pm_pubkey);
		/* In the batched transaction, after the events ingested
		 * before it. */
		relay_ingest_task(plus_mark_run, plus_mark_done, pm);
		return;
	}
	if (m->m_type != MSG_INGEST)
		fatalx("unexpected %s message on the ingest channel",
		    msg_type_name(m->m_type));
	msg_ingest_decode(m, &mi);
	relay_ingest_remote(mi.mi_origin, mi.mi_url, mi.mi_urllen, mi.mi_json,
	    mi.mi_jsonlen);
}

/*
 * NIP-11 lists GRASP-03 only while syncd runs (relay_nip11_build()): the
 * document is built again when the supervisor's snapshot says syncd was
 * stopped on request, or started again.
 */
static void
syncd_stopped_changed(void)
{
	static int was;
	int	   now = relay_chan_role_stopped(ROLE_SYNCD);

	if (now == was)
		return;
	was = now;
	log_info("syncd %s: NIP-11 %s GRASP-03", now ? "stopped" : "running",
	    now ? "drops" : "lists");
	if (relay_nip11_build() == -1)
		log_warnx("NIP-11 document not rebuilt");
}

static void
relay_dispatch_stats(const struct msg *m)
{
	cJSON *doc, *role;
	int    r;

	if (m->m_type != MSG_STATS)
		fatalx("unexpected %s message on the stats channel",
		    msg_type_name(m->m_type));
	doc = cJSON_ParseWithLength((const char *)m->m_data, m->m_len);
	if (doc == NULL || (role = cJSON_GetObjectItem(doc, "role")) == NULL ||
	    !cJSON_IsString(role) ||
	    (r = role_from_name(role->valuestring)) < 0 ||
	    !cJSON_IsArray(cJSON_GetObjectItem(doc, "metrics")))
		fatalx("malformed STATS message from pid %u", m->m_pid);
	cJSON_Delete(role_stats[r]);
	role_stats[r] = doc;
	role_stats_at[r] = relay_now_ms();
	if (r == ROLE_SUPERVISOR)
		syncd_stopped_changed();
}

static cJSON *
show_view(void)
{
	cJSON		  *view = cJSON_CreateObject(), *arr, *o;
	struct relay_conn *c;

	arr = cJSON_AddArrayToObject(view, "connections");
	LIST_FOREACH(c, &relayd->conns, rc_entry) {
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "peer", c->rc_peer);
		cJSON_AddNumberToObject(o, "subscriptions", c->rc_nsubs);
		cJSON_AddNumberToObject(o, "queued_bytes",
		    (double)c->rc_out.wq_bytes);
		cJSON_AddItemToArray(arr, o);
	}
	relay_show_counters(view);
	cJSON_AddStringToObject(view, "listen", relayd->cfg.bind_address);
	/* Where graspctl export, import and backup find the data (-r). */
	cJSON_AddStringToObject(view, "relay_data_path",
	    relayd->cfg.relay_data_path);
	cJSON_AddStringToObject(view, "git_data_path",
	    relayd->cfg.git_data_path);
	return view;
}

/*
 * A GIT_DATA request (msg.h) from syncd: its git-data hunt fetched
 * objects into <owner>/<d>.git; run the release a successful push runs
 * ("newly available git data", reference brief 7), which stores only what
 * the git data on disk satisfies.  Only syncd writes this channel, so a
 * malformed request is a bug (fatal); an identifier that is not safe or
 * a repository removed meanwhile is answered.
 */
static void
relay_dispatch_gitdata(const struct msg *m)
{
	struct msg_git_data mg;
	char		    err[160];
	const char	   *e = NULL;
	cJSON		   *rep;
	char		   *text;

	if (m->m_type != MSG_GIT_DATA)
		fatalx("unexpected %s message on the gitdata channel",
		    msg_type_name(m->m_type));
	if (msg_git_data_decode(m, &mg, err, sizeof(err)) == -1)
		fatalx("malformed GIT_DATA message from pid %u: %s", m->m_pid,
		    err);
	if (!policy_identifier_safe(mg.mg_d, strlen(mg.mg_d)))
		e = "not a safe repository identifier";
	else if (relay_purg_hosted(mg.mg_owner, mg.mg_d) == 0)
		e = "no such repository";
	else
		relay_purg_git_arrived(mg.mg_owner, mg.mg_d);
	if ((rep = cJSON_CreateObject()) == NULL ||
	    cJSON_AddBoolToObject(rep, "ok", e == NULL) == NULL ||
	    (e != NULL && cJSON_AddStringToObject(rep, "error", e) == NULL) ||
	    (text = cJSON_PrintUnformatted(rep)) == NULL)
		fatalx("gitdata: out of memory");
	cJSON_Delete(rep);
	if (msg_send(relayd->sock_gitdata, MSG_CONTROL_REPLY, text,
		strlen(text), NN_DONTWAIT) == -1)
		log_warn("gitdata: reply");
	free(text);
}

/* The sibling channels relayd reads: its socket in struct relayd, and
 * the handler of a message that came on it. */
static const struct {
	size_t sock;
	void (*dispatch)(const struct msg *);
} chans[] = {
	{ offsetof(struct relayd, sock_ingest), relay_dispatch_ingest },
	{ offsetof(struct relayd, sock_stats), relay_dispatch_stats },
	{ offsetof(struct relayd, sock_gitdata), relay_dispatch_gitdata },
};

static int
relay_ctl_status(void *arg, int argc, const char **argv, cJSON *rep, char *err,
    size_t errlen)
{
	proc_status(&relayd->proc, 1, rep);
	return 0;
}

static int
relay_ctl_show(void *arg, int argc, const char **argv, cJSON *rep, char *err,
    size_t errlen)
{
	cJSON_AddStringToObject(rep, "role", "relayd");
	cJSON_AddItemToObject(rep, "view", show_view());
	return 0;
}

static int
relay_ctl_stats(void *arg, int argc, const char **argv, cJSON *rep, char *err,
    size_t errlen)
{
	cJSON_AddItemToObject(rep, "metrics", relay_own_metrics());
	return 0;
}

static int
relay_ctl_log(void *arg, int argc, const char **argv, cJSON *rep, char *err,
    size_t errlen)
{
	return ctl_log_level(argv[0], relayd->cfg.log_level, rep, err, errlen);
}

static int
relay_ctl_stop(void *arg, int argc, const char **argv, cJSON *rep, char *err,
    size_t errlen)
{
	/* "stop <role>" is graspd's; here it would stop the wrong one. */
	if (argc != 0) {
		snprintf(err, errlen, "stop takes no argument in relayd");
		return -1;
	}
	proc_stop(&relayd->proc);
	return 0;
}

/* relayd's column of ctlcmd.h's list. */
static const ctl_fn relay_ctl_fns[CTL_NCMDS] = { CTL_CMD_LIST(CTL_COL_RELAY) };

/* The raw-file protocol callback for the adopted nanomsg descriptors. */
int
relay_chan_callback(struct lws *wsi, enum lws_callback_reasons reason,
    void *user, void *in, size_t len)
{
	intptr_t   tag;
	int	   sock, n;
	size_t	   c;
	struct msg m;

	if (reason != LWS_CALLBACK_RAW_RX_FILE)
		return 0;
	tag = (intptr_t)lws_get_opaque_user_data(wsi);
	sock = (int)tag - 1;
	/* Bounded so that a flood on one channel cannot starve clients. */
	if (sock == relayd->sock_control) {
		/* A client, not a sibling: ctl_serve() answers anything. */
		proc_control_serve(&relayd->proc, RELAY_CHAN_BATCH);
		return 0;
	}
	for (c = 0; c < sizeof(chans) / sizeof(chans[0]); c++)
		if (*(int *)((char *)relayd + chans[c].sock) == sock)
			break;
	if (c == sizeof(chans) / sizeof(chans[0]))
		return 0;
	for (n = 0; n < RELAY_CHAN_BATCH; n++) {
		int r = msg_recv(sock, &m, NN_DONTWAIT);

		if (r == 0)
			break;
		if (r < 0) {
			log_warn("channel receive");
			break;
		}
		chans[c].dispatch(&m);
		msg_free(&m);
	}
	return 0;
}

const cJSON *
relay_chan_role_stats(enum role r, int64_t *at)
{
	if (r >= ROLE_COUNT)
		return NULL;
	*at = role_stats_at[r];
	return role_stats[r];
}

int
relay_chan_role_stopped(enum role r)
{
	const cJSON *rs = role_stats[ROLE_SUPERVISOR], *pair, *name, *val;
	char	     key[128];
	int64_t	     max_age;

	max_age = (int64_t)(ROLE_STATS_EXPIRE_PERIODS * 1000 *
	    (relayd->cfg.test ? ROLE_STATS_PERIOD_TEST : ROLE_STATS_PERIOD));
	if (rs == NULL ||
	    relay_now_ms() - role_stats_at[ROLE_SUPERVISOR] > max_age)
		return 0;
	snprintf(key, sizeof(key), "graspd_role_stopped{role=\"%s\"}",
	    role_name(r));
	cJSON_ArrayForEach(pair, cJSON_GetObjectItem(rs, "metrics")) {
		name = cJSON_GetArrayItem(pair, 0);
		val = cJSON_GetArrayItem(pair, 1);
		if (cJSON_IsString(name) && strcmp(name->valuestring, key) == 0)
			return cJSON_IsNumber(val) && val->valuedouble == 1;
	}
	return 0;
}
