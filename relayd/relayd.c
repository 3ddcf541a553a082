/*
 * relayd.c: relayd's main, on the process skeleton (proc.h): the
 * listening sockets, the owner key, the store, the libwebsockets
 * context with one vhost serving websocket and HTTP on the sockets
 * relay_listen.c binds to NGIT_BIND_ADDRESS, and the service loop.
 * relayd is the only writer of events.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "event.h"
#include "fs.h"
#include "log.h"
#include "ready.h"
#include "relayd.h"

struct relayd *relayd;

static struct lws_protocols protocols[] = { {
						.name = "nostr",
						.callback = relay_ws_callback,
						.per_session_data_size =
						    sizeof(struct relay_conn),
						.rx_buffer_size = 65536,
					    },
	{
	    .name = "nn",
	    .callback = relay_chan_callback,
	},
	{
	    .name = "gitpipe",
	    .callback = relay_git_pipe_callback,
	},
	{
	    .name = "batch",
	    .callback = relay_ingest_timer_callback,
	},
	{
	    .name = "listen",
	    .callback = relay_listen_callback,
	},
	{ NULL, NULL, 0, 0, 0, NULL, 0 } };

int64_t
relay_now_ms(void)
{
	return proc_now_ms();
}

/* A git child ended: wake the loop, which reaps it (relay_repo.c). */
static void
on_sigchld(int sig)
{
	int saved = errno;

	(void)sig;
	if (relayd && relayd->ctx)
		lws_cancel_service(relayd->ctx);
	errno = saved;
}

/* 0 if a file can be created in the directory path, else -1 (errno). */
static int
dir_writable(const char *path)
{
	char probe[4096];
	int  fd;

	if (snprintf(probe, sizeof(probe), "%s/.graspd-write-test.XXXXXX",
		path) >= (int)sizeof(probe)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((fd = mkstemp(probe)) == -1)
		return -1;
	close(fd);
	unlink(probe);
	return 0;
}

/*
 * What relayd checks and opens before its store: the policy's settings,
 * the data paths, the repositories on disk, the listening sockets and the
 * owner key (its public half into r->owner_hex).  A fault the operator
 * must mend ends relayd with exit 78 (ready_config_fail()), which graspd
 * does not retry.
 */
static void
startup_checks(struct relayd *r)
{
	char	err[512];
	uint8_t sk[SECKEY_LEN], pk[PUBKEY_LEN];

	if (policy_init(&r->policy, &r->cfg, err, sizeof(err)) == -1) {
		ready_config_fail("configuration: %s", err);
	}
	if (mkdir_p(r->cfg.relay_data_path, 0755) == -1)
		fatal("cannot create %s", r->cfg.relay_data_path);
	/* Found now, not at the first announcement's repository. */
	if (mkdir_p(r->cfg.git_data_path, 0755) == -1 ||
	    dir_writable(r->cfg.git_data_path) == -1)
		ready_config_fail("git_data_path %s: %s", r->cfg.git_data_path,
		    strerror(errno));
	/*
	 * The start-up scan of the git data runs before the port listens:
	 * the kernel queues connections from listen() on, and a client (or
	 * a test) that got one must not see a repository the scan removes.
	 */
	relay_repo_init();
	/* A taken port or a wrong address is the operator's to mend. */
	if (relay_listen_open(r->cfg.bind_host, r->cfg.bind_port, err,
		sizeof(err)) == -1)
		ready_config_fail("%s", err);
	if (config_owner_key(&r->cfg, sk, err, sizeof(err)) == -1) {
		ready_config_fail("configuration: %s", err);
	}
	if (event_pubkey_of(sk, pk) == -1) {
		ready_config_fail(
		    "configuration: NGIT_RELAY_OWNER_NSEC: invalid key");
	}
	explicit_bzero(sk, sizeof(sk));
	hex_encode(pk, PUBKEY_LEN, r->owner_hex);
}

/*
 * The libwebsockets context of relayd: no listener of its own (relay_listen.c
 * binds and adopts), header buffers, idle timeouts and keepalive from the
 * configuration.  Exits if lws cannot create it.
 */
static struct lws_context *
context_create(const struct config *cfg)
{
	struct lws_context_creation_info info;
	static lws_retry_bo_t		 idle_policy;
	struct lws_context		*ctx;
	int				 pool;

	proc_lws_log();
	memset(&info, 0, sizeof(info));
	/* relay_listen.c binds; the vhost serves what it accepts. */
	info.port = CONTEXT_PORT_NO_LISTEN_SERVER;
	info.protocols = protocols;
	/* No LWS_SERVER_OPTION_VALIDATE_UTF8: lws would drop the connection,
	 * while our JSON reader answers bad UTF-8 with a NOTICE. */
	info.options = 0;
	/*
	 * A header buffer for every connection lws may hold, allocated as
	 * connections need them: a connection never waits for one, so the
	 * connections one address may keep sending headers
	 * (max_pending_per_ip, relay_listen.c) cannot hold up another's.
	 * header_timeout counts from the accept (lws's "ah idle" timeout,
	 * which more bytes do not extend).
	 */
	pool = cfg->max_connections + RELAY_SPARE_FDS;
	info.max_http_header_pool =
	    (unsigned short)(pool > UINT16_MAX ? UINT16_MAX : pool);
	info.timeout_secs_ah_idle = (unsigned)cfg->header_timeout;
	info.timeout_secs = 30;
	if (cfg->ws_ping_interval > 0) {
		/*
		 * lws pings a websocket ws_ping_interval seconds after its
		 * last pong (or its upgrade) and closes it ws_pong_timeout
		 * later unless a pong came.
		 */
		idle_policy.secs_since_valid_ping =
		    (uint16_t)cfg->ws_ping_interval;
		idle_policy.secs_since_valid_hangup =
		    (uint16_t)(cfg->ws_ping_interval + cfg->ws_pong_timeout);
		info.retry_and_idle_policy = &idle_policy;
	}
	info.ka_time = 60;
	info.ka_probes = 3;
	info.ka_interval = 10;
	info.fd_limit_per_thread =
	    (unsigned)cfg->max_connections + RELAY_SPARE_FDS;
	if ((ctx = lws_create_context(&info)) == NULL)
		fatalx("cannot create the libwebsockets context");
	return ctx;
}

int
main(int argc, char *argv[])
{
	static struct relayd rd;
	char		     err[512], dbpath[4096];

	proc_start(&rd.proc, argc, argv, ROLE_RELAYD, &rd.cfg);
	relayd = &rd;
	/*
	 * First, as the roles do: a SIGTERM during the start-up (once the
	 * port listens, a test or an init system may send one) ends relayd
	 * at its loop's first turn with status 0, rather than by the signal.
	 * signal()'s SA_RESTART, which relayd's blocking calls rely on.
	 */
	proc_signals(&rd.proc, on_sigchld, SA_RESTART);
	LIST_INIT(&rd.conns);
	rd.sock_ingest = rd.sock_accepted = rd.sock_stats = -1;
	rd.sock_gitdata = -1;
	rd.sock_control = -1;
	startup_checks(&rd);

	proc_db_path(&rd.proc, dbpath, sizeof(dbpath));
	if ((rd.store = store_open(dbpath, 0, err, sizeof(err))) == NULL)
		fatalx("store %s: %s", dbpath, err);
	if ((rd.rstore = store_open(dbpath, 1, err, sizeof(err))) == NULL)
		fatalx("store %s: %s", dbpath, err);
	if (relay_nip11_build() == -1)
		fatalx("cannot build the NIP-11 document");
	/* Checkpoints run beside the loop, in a commit only as a last
	 * resort (relay_ckpt.c). */
	if (relay_ckpt_init(dbpath) == 0)
		store_set_autocheckpoint(rd.store, 2 * RELAY_CKPT_MAX_FRAMES);
	relay_ingest_init();
	relay_ids_init(dbpath);
	relay_inv_init();

	rd.ctx = context_create(&rd.cfg);
	rd.proc.p_lws = rd.ctx;
	if ((rd.vhost = lws_get_vhost_by_name(rd.ctx, "default")) == NULL)
		fatalx("no default vhost");
	relay_wire_init();
	relay_ingest_timer_init();
	relay_listen_start();
	relay_children_init();
	if (mkdir_p(rd.cfg.run_path, 0755) == -1)
		fatal("cannot create %s", rd.cfg.run_path);
	relay_listen_import(rd.cfg.run_path);
	relay_purg_init();
	relay_chan_open();
	rd.started = time(NULL);
	ready_notify();
	log_info("listening on %s (database %s, %lld events)",
	    rd.cfg.bind_address, dbpath, (long long)store_count(rd.store));

	proc_run(&rd.proc);

	log_info("stopping");
	relay_ingest_stop();
	relay_ingest_flush_now();
	relay_ids_stop();
	relay_sync_stop();
	relay_listen_unlink();
	lws_context_destroy(rd.ctx);
	rd.ctx = rd.proc.p_lws = NULL;
	/* Before the store: its close is the last, which checkpoints. */
	relay_ckpt_stop();
	relay_chan_close();
	relay_purg_close();
	relay_inv_free();
	relay_wire_free();
	relay_addr_free();
	store_close(rd.rstore);
	relay_ckpt_keep_room(store_sqlite(rd.store));
	store_close(rd.store);
	free(rd.nip11);
	config_free(&rd.cfg);
	return 0;
}
