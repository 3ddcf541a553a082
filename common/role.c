/*
 * role.c: what syncd, discoveryd and historyd add to the process
 * skeleton (proc.c; see role.h).  One libwebsockets service loop per process, with no listening
 * port: the nanomsg descriptors (control, accepted feed) are adopted into
 * it as raw files, and the periodic work (database retry, feed poll,
 * stats) runs on lws_sul timers.
 */
#include <sys/stat.h>

#include <errno.h>
#include <nanomsg/nn.h>
#include <nanomsg/pipeline.h>
#include <nanomsg/reqrep.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "ctlcmd.h"
#include "event.h"
#include "fs.h"
#include "log.h"
#include "proc.h"
#include "ready.h"
#include "resolve.h"
#include "role.h"
#include "store.h"

/* The name of the raw-file protocol our nanomsg descriptors use. */
#define ROLE_CHAN_PROTOCOL "graspd-chan"

/* What an adopted descriptor is, kept as its wsi's opaque data. */
enum role_chan {
	RCHAN_CONTROL = 1,
	RCHAN_FEED,
};

/* One role per process; the lws callbacks need it. */
static struct role_ctx *role_self;

static void role_sched(struct role_ctx *, lws_sorted_usec_list_t *, sul_cb_t,
    double);

int64_t
role_now_ms(void)
{
	return proc_now_ms();
}

int64_t
role_uptime(const struct role_ctx *ctx)
{
	return proc_uptime(&ctx->r_proc);
}

void
role_metric(cJSON *metrics, const char *name, double value)
{
	cJSON *pair;

	if ((pair = cJSON_CreateArray()) == NULL ||
	    !cJSON_AddItemToArray(pair, cJSON_CreateString(name)) ||
	    !cJSON_AddItemToArray(pair, cJSON_CreateNumber(value)) ||
	    !cJSON_AddItemToArray(metrics, pair))
		fatalx("role_metric: out of memory");
}

int
role_ingest(struct role_ctx *ctx, const char *relay_url, const char *json,
    size_t len)
{
	struct buf b = BUF_INIT;
	int	   rc, saved;

	msg_ingest_encode(&b, ctx->r_role, relay_url, json, len);
	rc = msg_send(ctx->r_sock_ingest, MSG_INGEST, b.b_data, b.b_len,
	    NN_DONTWAIT);
	/*
	 * Backpressure: when relayd lags, wait for it a little (bounded by
	 * the socket's send timeout) rather than drop what a relay sent;
	 * after one such wait fails, drop without waiting for a while so
	 * that a dead relayd cannot stall the loop.
	 */
	if (rc == -1 && errno == EAGAIN &&
	    role_now_ms() >= ctx->r_ingest_congested_until) {
		rc = msg_send(ctx->r_sock_ingest, MSG_INGEST, b.b_data, b.b_len,
		    0);
		if (rc == -1)
			ctx->r_ingest_congested_until =
			    role_now_ms() + ROLE_INGEST_BACKOFF_MS;
	}
	saved = errno;
	buf_free(&b);
	if (rc == -1) {
		ctx->r_ingest_dropped++;
		errno = saved;
		return -1;
	}
	ctx->r_ingest_sent++;
	return 0;
}

/* Adopts a nanomsg descriptor into the loop (proc_adopt()). */
static void
role_adopt(struct role_ctx *ctx, int fd, enum role_chan kind, const char *what)
{
	proc_adopt(ctx->r_vhost, fd, ROLE_CHAN_PROTOCOL, kind, what);
}

static void
role_metrics(struct role_ctx *ctx, cJSON *metrics)
{
	const struct feed_stats *fs = feed_stats(&ctx->r_feed);

	role_metric(metrics, "graspd_role_uptime_seconds",
	    (double)role_uptime(ctx));
	role_metric(metrics, "graspd_role_ready", ctx->r_ready);
	role_metric(metrics, "graspd_feed_seq",
	    (double)(ctx->r_feed_open ? feed_last_seq(&ctx->r_feed) :
					ctx->r_start_seq));
	role_metric(metrics, "graspd_feed_events_total", (double)fs->fs_events);
	role_metric(metrics, "graspd_feed_notices_total",
	    (double)fs->fs_notices);
	role_metric(metrics, "graspd_feed_notice_gaps_total",
	    (double)fs->fs_gaps);
	role_metric(metrics, "graspd_feed_unnoticed_events_total",
	    (double)fs->fs_unnoticed);
	role_metric(metrics, "graspd_feed_unreadable_events_total",
	    (double)fs->fs_unreadable);
	role_metric(metrics, "graspd_role_ingest_sent_total",
	    (double)ctx->r_ingest_sent);
	role_metric(metrics, "graspd_role_ingest_dropped_total",
	    (double)ctx->r_ingest_dropped);
	if (ctx->r_ready && ctx->r_ops->stats != NULL)
		ctx->r_ops->stats(ctx, metrics);
}

static int
role_ctl_status(void *arg, int argc, const char **argv, cJSON *rep, char *err,
    size_t errlen)
{
	struct role_ctx *ctx = arg;

	proc_status(&ctx->r_proc, ctx->r_ready, rep);
	cJSON_AddNumberToObject(rep, "feed_seq",
	    (double)(ctx->r_feed_open ? feed_last_seq(&ctx->r_feed) :
					ctx->r_start_seq));
	if (!ctx->r_ready)
		cJSON_AddStringToObject(rep, "waiting", ctx->r_waiting);
	return 0;
}

static int
role_ctl_show(void *arg, int argc, const char **argv, cJSON *rep, char *err,
    size_t errlen)
{
	struct role_ctx *ctx = arg;
	cJSON		*view;

	cJSON_AddStringToObject(rep, "role", ctx->r_name);
	if ((view = cJSON_AddObjectToObject(rep, "view")) == NULL)
		fatalx("control: out of memory");
	if (!ctx->r_ready) {
		cJSON_AddBoolToObject(view, "ready", 0);
		cJSON_AddStringToObject(view, "waiting", ctx->r_waiting);
	} else if (ctx->r_ops->show != NULL)
		ctx->r_ops->show(ctx, view);
	return 0;
}

static int
role_ctl_stats(void *arg, int argc, const char **argv, cJSON *rep, char *err,
    size_t errlen)
{
	role_metrics(arg, cJSON_AddArrayToObject(rep, "metrics"));
	return 0;
}

static int
role_ctl_log(void *arg, int argc, const char **argv, cJSON *rep, char *err,
    size_t errlen)
{
	struct role_ctx *ctx = arg;

	return ctl_log_level(argv[0], ctx->r_cfg.log_level, rep, err, errlen);
}

static int
role_ctl_stop(void *arg, int argc, const char **argv, cJSON *rep, char *err,
    size_t errlen)
{
	struct role_ctx *ctx = arg;

	/* "stop <role>" is graspd's; here it would stop the wrong one. */
	if (argc != 0) {
		snprintf(err, errlen, "stop takes no argument in %s",
		    ctx->r_name);
		return -1;
	}
	log_info("stop requested on the control socket");
	/* The reply leaves through nanomsg's own thread; give it a moment
	 * before the socket closes. */
	role_sched(ctx, &ctx->r_sul_stop, NULL, ROLE_STOP_GRACE);
	return 0;
}

/* The roles' column of ctlcmd.h's list. */
static const ctl_fn role_ctl_fns[CTL_NCMDS] = { CTL_CMD_LIST(CTL_COL_ROLE) };

/* feed_drain() (notice set) or feed_poll(), then ops->caught_up(). */
static void
role_feed_read(struct role_ctx *ctx, int notice)
{
	int64_t before = feed_last_seq(&ctx->r_feed);

	if (notice)
		feed_drain(&ctx->r_feed);
	else
		feed_poll(&ctx->r_feed);
	if (feed_last_seq(&ctx->r_feed) != before &&
	    ctx->r_ops->caught_up != NULL)
		ctx->r_ops->caught_up(ctx);
}

static int
role_chan_callback(struct lws *wsi, enum lws_callback_reasons reason,
    void *user, void *in, size_t len)
{
	struct role_ctx *ctx = role_self;

	if (reason != LWS_CALLBACK_RAW_RX_FILE || ctx == NULL)
		return 0;
	switch ((intptr_t)lws_get_opaque_user_data(wsi)) {
	case RCHAN_CONTROL:
		ctx->r_control_requests +=
		    (uint64_t)proc_control_serve(&ctx->r_proc, 0);
		break;
	case RCHAN_FEED:
		role_feed_read(ctx, 1);
		break;
	}
	return 0;
}

static void
role_on_feed_event(void *arg, int64_t seq, const struct event *ev)
{
	struct role_ctx *ctx = arg;

	log_debug("feed: seq %lld kind %u id %s", (long long)seq, ev->kind,
	    ev->id_hex);
	if (ctx->r_ops->accepted != NULL)
		ctx->r_ops->accepted(ctx, seq, ev);
}

static void
role_sul_stop(lws_sorted_usec_list_t *sul)
{
	struct role_ctx *ctx =
	    lws_container_of(sul, struct role_ctx, r_sul_stop);

	ctx->r_proc.p_stop = 1;
}

/* Schedules sul in secs seconds (cb NULL: the stop timer). */
static void
role_sched(struct role_ctx *ctx, lws_sorted_usec_list_t *sul, sul_cb_t cb,
    double secs)
{
	lws_sul_schedule(ctx->r_lws, 0, sul, cb ? cb : role_sul_stop,
	    (lws_usec_t)(secs * LWS_US_PER_SEC));
}

static void
role_sul_poll(lws_sorted_usec_list_t *sul)
{
	struct role_ctx *ctx =
	    lws_container_of(sul, struct role_ctx, r_sul_poll);

	role_feed_read(ctx, 0);
	role_sched(ctx, sul, role_sul_poll,
	    cfg_period(&ctx->r_cfg, ROLE_FEED_POLL_PERIOD));
}

static void
role_sul_stats(lws_sorted_usec_list_t *sul)
{
	struct role_ctx *ctx =
	    lws_container_of(sul, struct role_ctx, r_sul_stats);
	cJSON *doc;
	char  *out;

	if ((doc = cJSON_CreateObject()) == NULL)
		fatalx("stats: out of memory");
	cJSON_AddStringToObject(doc, "role", ctx->r_name);
	cJSON_AddNumberToObject(doc, "pid", (double)getpid());
	role_metrics(ctx, cJSON_AddArrayToObject(doc, "metrics"));
	if ((out = cJSON_PrintUnformatted(doc)) == NULL)
		fatalx("stats: out of memory");
	cJSON_Delete(doc);
	/* Without relayd the snapshot is dropped: stats are not worth
	 * a queue. */
	if (msg_send(ctx->r_sock_stats, MSG_STATS, out, strlen(out),
		NN_DONTWAIT) == -1) {
		ctx->r_stats_dropped++;
		if (errno != EAGAIN)
			log_warn("stats: send");
	} else
		ctx->r_stats_sent++;
	free(out);
	role_sched(ctx, sul, role_sul_stats,
	    ctx->r_cfg.test ? ROLE_STATS_PERIOD_TEST : ROLE_STATS_PERIOD);
}

/*
 * Opens the store and, once it is there, runs init, starts the feed and
 * signals readiness.  Returns 0 when ready, -1 to try again later.
 */
static int
role_open_store(struct role_ctx *ctx)
{
	struct store *s;
	struct stat   sb;
	char	      err[512], why[sizeof(ctx->r_waiting)];
	int64_t	      start;

	ctx->r_db_attempts++;
	if (stat(ctx->r_dbpath, &sb) == -1) {
		snprintf(why, sizeof(why),
		    "database %s: %s (relayd creates it)", ctx->r_dbpath,
		    strerror(errno));
		goto wait;
	}
	if ((s = store_open(ctx->r_dbpath, 1, err, sizeof(err))) == NULL) {
		snprintf(why, sizeof(why), "database: %s", err);
		goto wait;
	}
	if (store_last_seq(s, &start) == -1) {
		store_close(s);
		snprintf(why, sizeof(why),
		    "database %s: cannot read the last seq", ctx->r_dbpath);
		goto wait;
	}
	ctx->r_store = s;
	ctx->r_start_seq = start;
	if (ctx->r_ops->init != NULL && ctx->r_ops->init(ctx) == -1)
		fatalx("initialisation from the database failed");
	ctx->r_init_done = 1;
	if (feed_open(&ctx->r_feed, &ctx->r_cfg, s, start, role_on_feed_event,
		ctx) == -1)
		fatal("cannot connect to the accepted channel");
	ctx->r_feed_open = 1;
	if (ctx->r_ops->nkinds > 0)
		feed_only_kinds(&ctx->r_feed, ctx->r_ops->kinds,
		    ctx->r_ops->nkinds);
	role_adopt(ctx, feed_fd(&ctx->r_feed), RCHAN_FEED, "accepted");
	ctx->r_ready = 1;
	ctx->r_waiting[0] = '\0';
	log_info("ready: database %s, feed from seq %lld", ctx->r_dbpath,
	    (long long)start);
	ready_notify();
	/* Whatever was stored while init ran is delivered now. */
	role_feed_read(ctx, 0);
	role_sched(ctx, &ctx->r_sul_poll, role_sul_poll,
	    cfg_period(&ctx->r_cfg, ROLE_FEED_POLL_PERIOD));
	return 0;
wait:
	/* Say it once per distinct reason, not once per attempt. */
	if (strcmp(why, ctx->r_waiting) != 0)
		log_info("waiting: %s", why);
	else
		log_debug("waiting: %s", why);
	snprintf(ctx->r_waiting, sizeof(ctx->r_waiting), "%s", why);
	return -1;
}

static void
role_sul_db(lws_sorted_usec_list_t *sul)
{
	struct role_ctx *ctx = lws_container_of(sul, struct role_ctx, r_sul_db);
	double		 max;

	if (role_open_store(ctx) == 0)
		return;
	max = cfg_period(&ctx->r_cfg, ROLE_DB_RETRY_MAX);
	ctx->r_db_retry = ctx->r_db_retry * 2 > max ? max : ctx->r_db_retry * 2;
	role_sched(ctx, sul, role_sul_db, ctx->r_db_retry);
}

/* Our raw-file protocol, then the role's, then the terminator. */
static struct lws_protocols *
role_protocols(const struct role_ops *ops)
{
	struct lws_protocols *p;
	size_t		      n = 0, i;

	while (ops->protocols != NULL && ops->protocols[n].name != NULL)
		n++;
	if ((p = calloc(n + 2, sizeof(*p))) == NULL)
		fatal("calloc");
	p[0].name = ROLE_CHAN_PROTOCOL;
	p[0].callback = role_chan_callback;
	for (i = 0; i < n; i++)
		p[i + 1] = ops->protocols[i];
	return p;
}

static int
role_connect(struct role_ctx *ctx, const char *chan)
{
	char ep[512];
	int  s;

	if (chan_endpoint(ctx->r_cfg.run_path, chan, ep, sizeof(ep)) == -1)
		fatalx("run path too long for the %s channel", chan);
	if ((s = chan_open(NN_PUSH, ep, 0)) == -1)
		fatal("cannot connect to %s", ep);
	return s;
}

int
role_main(int argc, char **argv, enum role role, const struct role_ops *ops)
{
	static struct role_ctx		 ctx;
	struct lws_context_creation_info info;
	char				 ep[512];

	memset(&ctx, 0, sizeof(ctx));
	proc_start(&ctx.r_proc, argc, argv, role, &ctx.r_cfg);
	ctx.r_role = role;
	ctx.r_name = ctx.r_proc.p_name;
	ctx.r_ops = ops;
	ctx.r_sock_control = ctx.r_sock_stats = ctx.r_sock_ingest = -1;
	ctx.r_feed.f_sock = ctx.r_feed.f_fd = -1;
	ctx.r_db_retry = ROLE_DB_RETRY_FIRST;
	snprintf(ctx.r_waiting, sizeof(ctx.r_waiting), "starting");
	role_self = &ctx;

	proc_db_path(&ctx.r_proc, ctx.r_dbpath, sizeof(ctx.r_dbpath));

	proc_signals(&ctx.r_proc, NULL, 0);

	if (mkdir_p(ctx.r_cfg.run_path, 0700) == -1)
		fatal("cannot create the run directory %s", ctx.r_cfg.run_path);

	proc_lws_log();
	ctx.r_protocols = role_protocols(ops);
	memset(&info, 0, sizeof(info));
	info.port = CONTEXT_PORT_NO_LISTEN;
	/* No TLS yet: conn.c starts OpenSSL and adds the vhost's client TLS
	 * context on the first wss:// dial. */
	info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS;
	info.protocols = ctx.r_protocols;
	info.gid = -1;
	info.uid = -1;
	if ((ctx.r_lws = lws_create_context(&info)) == NULL)
		fatalx("cannot create the libwebsockets context");
	ctx.r_proc.p_lws = ctx.r_lws;
	info.options = 0;
	info.vhost_name = "default";
	if ((ctx.r_vhost = lws_create_vhost(ctx.r_lws, &info)) == NULL)
		fatalx("cannot create the libwebsockets vhost");

	ctx.r_sock_control =
	    proc_control_open(&ctx.r_proc, role_ctl_fns, &ctx, ep, sizeof(ep));
	role_adopt(&ctx, chan_rcvfd(ctx.r_sock_control), RCHAN_CONTROL,
	    "control");
	ctx.r_sock_stats = role_connect(&ctx, CHAN_STATS);
	ctx.r_sock_ingest = role_connect(&ctx, CHAN_INGEST);
	if (ctx.r_sock_ingest >= 0) {
		int tmo = ROLE_INGEST_WAIT_MS;

		if (nn_setsockopt(ctx.r_sock_ingest, NN_SOL_SOCKET, NN_SNDTIMEO,
			&tmo, sizeof(tmo)) < 0)
			log_warn("ingest send timeout");
	}
	log_info("started, control socket %s", ep);

	if (role_open_store(&ctx) == -1)
		role_sched(&ctx, &ctx.r_sul_db, role_sul_db, ctx.r_db_retry);
	role_sched(&ctx, &ctx.r_sul_stats, role_sul_stats,
	    ctx.r_cfg.test ? ROLE_STATS_PERIOD_TEST : ROLE_STATS_PERIOD);

	proc_run(&ctx.r_proc);

	log_info("stopping");
	lws_sul_cancel(&ctx.r_sul_db);
	lws_sul_cancel(&ctx.r_sul_poll);
	lws_sul_cancel(&ctx.r_sul_stats);
	lws_sul_cancel(&ctx.r_sul_stop);
	if (ctx.r_init_done && ops->fini != NULL)
		ops->fini(&ctx);
	feed_close(&ctx.r_feed);
	resolve_shutdown();
	lws_context_destroy(ctx.r_lws);
	ctx.r_lws = ctx.r_proc.p_lws = NULL;
	chan_close(ctx.r_sock_control);
	chan_close(ctx.r_sock_stats);
	chan_close(ctx.r_sock_ingest);
	store_close(ctx.r_store);
	free(ctx.r_protocols);
	config_free(&ctx.r_cfg);
	role_self = NULL;
	return 0;
}
