/*
 * peer.c: main of peer, the scriptable remote relay of graspd's
 * integration tests: options, NGIT_BIND_ADDRESS, the libwebsockets context
 * (one vhost serving websocket and HTTP), the hang port and the service
 * loop.  See peer.h for what it does and peer_http.c for how a test
 * scripts it.
 *
 * usage: peer [-d] [-v]
 *   -d  accepted for relayproc (peer always logs to stderr)
 *   -v  log every connection, REQ and configuration change
 */
#define _GNU_SOURCE /* accept4 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "peer.h"
#include "relayproc.h"

struct peer *peer;

static int hang_callback(struct lws *, enum lws_callback_reasons, void *,
    void *, size_t);

static struct lws_protocols protocols[] = { {
						.name = "nostr",
						.callback = peer_ws_callback,
						.per_session_data_size =
						    sizeof(struct peer_conn),
						.rx_buffer_size = 65536,
					    },
	{
	    .name = "hang",
	    .callback = hang_callback,
	},
	{ NULL, NULL, 0, 0, 0, NULL, 0 } };

static void
on_signal(int sig)
{
	(void)sig;
	if (peer != NULL) {
		peer->stop = 1;
		if (peer->ctx != NULL)
			lws_cancel_service(peer->ctx);
	}
}

static void
lws_log_emit(int level, const char *line)
{
	size_t n = strlen(line);

	(void)level;
	while (n > 0 && line[n - 1] == '\n')
		n--;
	log_debug("lws: %.*s", (int)n, line);
}

static __attribute__((noreturn)) void
usage(void)
{
	fprintf(stderr,
	    "usage: peer [-dv]   (listens on $NGIT_BIND_ADDRESS, "
	    "host:port)\n");
	exit(78);
}

void
peer_hang_release(void)
{
	size_t i;

	for (i = 0; i < peer->nhang; i++)
		close(peer->hang_conns[i]);
	peer->nhang = 0;
}

void
peer_hang_hold(int fd)
{
	if (fd == -1)
		return;
	if (peer->nhang == PEER_MAX_HANG) {
		close(peer->hang_conns[0]);
		memmove(&peer->hang_conns[0], &peer->hang_conns[1],
		    (PEER_MAX_HANG - 1) * sizeof(int));
		peer->nhang--;
	}
	peer->hang_conns[peer->nhang++] = fd;
	log_debug("holding a connection that will never be answered");
}

/*
 * The hang port: connections are accepted and then never read nor
 * answered, so a client's websocket handshake times out.  The oldest goes
 * when PEER_MAX_HANG are held.
 */
static int
hang_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	int fd;

	if (reason != LWS_CALLBACK_RAW_RX_FILE)
		return 0;
	while ((fd = accept4(peer->hang_fd, NULL, NULL,
		    SOCK_NONBLOCK | SOCK_CLOEXEC)) != -1) {
		peer_hang_hold(fd);
	}
	if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		log_warn("hang port: accept");
	return 0;
}

/* Listens on host, port 0, and adopts the socket into the loop. */
static void
hang_open(const char *host)
{
	struct in6_addr	      a;
	lws_sock_file_fd_type u;
	int		      fd;

	/* Not an address literal: the IPv4 loopback. */
	if (inet_pton(AF_INET, host, &a) != 1 &&
	    inet_pton(AF_INET6, host, &a) != 1)
		host = "127.0.0.1";
	fd = relayproc_listen(host, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    64, &peer->hang_port);
	if (fd == -1)
		fatal("hang port: socket/bind");
	peer->hang_fd = fd;
	u.filefd = fd;
	if (lws_adopt_descriptor_vhost(peer->vhost, LWS_ADOPT_RAW_FILE_DESC, u,
		"hang", NULL) == NULL)
		fatalx("cannot adopt the hang port into the loop");
}

int
main(int argc, char *argv[])
{
	struct lws_context_creation_info info;
	static struct peer		 pr;
	const char			*addr;
	char				 host[256];
	int				 ch, port, verbose = 0;

	while ((ch = getopt(argc, argv, "dv")) != -1) {
		switch (ch) {
		case 'd':
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	log_init("peer", 1);
	log_setlevel(verbose ? LOG_LVL_DEBUG : LOG_LVL_WARN);
	if ((addr = getenv("NGIT_BIND_ADDRESS")) == NULL ||
	    relayproc_split_addr(addr, host, sizeof(host), &port) == -1) {
		log_warnx("NGIT_BIND_ADDRESS must be host:port");
		exit(78);
	}
	peer = &pr;
	LIST_INIT(&pr.conns);
	pr.hang_fd = -1;
	/* Any valid secret key will do for junk; this one is below n. */
	memset(pr.junk_sk, 0x42, sizeof(pr.junk_sk));
	peer_reset();

	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGHUP, SIG_IGN);

	lws_set_log_level(verbose ? LLL_ERR | LLL_WARN | LLL_NOTICE : 0,
	    lws_log_emit);
	memset(&info, 0, sizeof(info));
	info.port = port;
	info.iface = host;
	info.protocols = protocols;
	info.max_http_header_pool = 64;
	info.timeout_secs = 30;
	if ((pr.ctx = lws_create_context(&info)) == NULL)
		fatalx("cannot listen on %s", addr);
	if ((pr.vhost = lws_get_vhost_by_name(pr.ctx, "default")) == NULL)
		fatalx("no default vhost");
	hang_open(host);
	log_info("listening on %s, hang port %d", addr, pr.hang_port);

	while (!pr.stop)
		if (lws_service(pr.ctx, 0) < 0)
			break;

	log_info("stopping");
	/* Connections close inside lws_context_destroy(). */
	lws_context_destroy(pr.ctx);
	peer_hang_release();
	memset(&pr.cfg, 0, sizeof(pr.cfg));
	peer_reset();
	cJSON_Delete(pr.log_reqs);
	cJSON_Delete(pr.log_closes);
	cJSON_Delete(pr.log_opens);
	cJSON_Delete(pr.log_auth);
	cJSON_Delete(pr.log_negs);
	return 0;
}
