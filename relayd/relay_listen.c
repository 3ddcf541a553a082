/*
 * relay_listen.c: relayd's listening sockets.  relayd binds
 * NGIT_BIND_ADDRESS itself, one socket per address the host resolves to,
 * rather than giving the host to libwebsockets as its "iface": lws 4.1
 * opens one IPv6 socket for every vhost, and an IPv4 address given to it
 * ends up listening on every interface.  Each socket sits in the lws loop
 * as a raw descriptor; a connection accepted on it is handed to the vhost
 * as an HTTP (and so websocket) connection, with Nagle's algorithm off
 * (lws sets TCP_NODELAY only on the sockets it accepts itself): a REQ's
 * last write, its EOSE, would otherwise wait for the client's delayed
 * ACK of the write before it, 40 ms on Linux.  The accept is also where
 * a connection is first counted for its address: one beyond
 * max_pending_per_ip of its address's connections still sending their
 * request headers is closed at once (relay_addr.c), before it can take
 * a header buffer of lws, and the rest are watched by relay_wire.c.
 *
 * A connection from an address of trusted_proxies (a reverse proxy)
 * speaks for a client the proxy names: in the PROXY header it starts
 * with when proxy_protocol is set (relay_wire.c reads it), otherwise in
 * each request's X-Forwarded-For (relay_proxy_forwarded()).  Its name
 * and key below are then that client's, and so are every per-address
 * limit, log line and metric that use them.  Such a connection is not
 * counted against max_pending_per_ip: only the proxy's address is known
 * at the accept, the proxy bounds its clients' header time itself, and
 * counting it would let eight slow clients of the proxy lock everyone
 * out; header_timeout still closes it if its headers do not come.
 *
 * Beside them, the import socket: a unix socket in the run directory
 * where graspctl import connects (graspctl(8)).  Its connections are
 * served like any websocket, and marked as the operator's, which lets
 * them publish NIP-70 protected events (relay_ingest.c): the mark comes
 * from the socket a connection arrived on, so nothing a TCP client
 * sends can set it.
 */
#define _GNU_SOURCE /* accept4 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addrkey.h"
#include "log.h"
#include "msg.h"
#include "proxyhdr.h"
#include "relayd.h"

/* Accepted per wake-up, so that a connection flood cannot starve clients. */
#define LISTEN_ACCEPT_BURST 64
/*
 * Ours: the longest X-Forwarded-For read, all its headers joined; a
 * chain of proxies writes some tens of bytes each.  lws's header buffer
 * (4096 bytes by default) holds less anyway.
 */
#define LISTEN_XFF_MAX	    4096

static int  listen_fd[RELAY_LISTEN_MAX];
static int  nlisten;
static char import_path[sizeof(((struct sockaddr_un *)NULL)->sun_path)];
static struct proxy_net *trusted; /* trusted_proxies */
static size_t		 ntrusted;
static int		 warned_untrusted_xff;
static int		 warned_untrusted_proxy;

/* Reads trusted_proxies, which config.c has checked. */
static void
trusted_init(void)
{
	const struct cfg_strs *ts = &relayd->cfg.trusted_proxies;
	const char	      *why;
	size_t		       i;

	free(trusted);
	trusted = NULL;
	ntrusted = 0;
	if (ts->n == 0)
		return;
	if ((trusted = calloc(ts->n, sizeof(*trusted))) == NULL)
		fatal("trusted_init");
	for (i = 0; i < ts->n; i++)
		if (proxy_net_parse(ts->v[i], &trusted[ntrusted], &why) == 0)
			ntrusted++;
		else
			fatalx("trusted_proxies: \"%s\" %s", ts->v[i], why);
}

/* "a.b.c.d:port" or "[v6]:port" of sa into out. */
static void
sa_text(const struct sockaddr *sa, socklen_t salen, char *out, size_t len)
{
	char host[NI_MAXHOST], serv[NI_MAXSERV];

	if (getnameinfo(sa, salen, host, sizeof(host), serv, sizeof(serv),
		NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
		snprintf(out, len, "?");
		return;
	}
	snprintf(out, len, sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s",
	    host, serv);
}

/* One listening socket on ai; the descriptor, or -1 with errno set. */
static int
listen_one(const struct addrinfo *ai)
{
	const struct sockaddr_in6 *sin6;
	int			   fd, one = 1, v6only, saved;

	fd = socket(ai->ai_family,
	    ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
	if (fd == -1)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1)
		goto fail;
	if (ai->ai_family == AF_INET6) {
		/*
		 * "[::]" written means every address, IPv4 too, whatever
		 * net.ipv6.bindv6only says; any other IPv6 address is that
		 * address alone.
		 */
		sin6 = (const struct sockaddr_in6 *)ai->ai_addr;
		v6only = !IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr);
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only,
			sizeof(v6only)) == -1)
			goto fail;
	}
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) == -1 ||
	    listen(fd, SOMAXCONN) == -1)
		goto fail;
	return fd;
fail:
	saved = errno;
	close(fd);
	errno = saved;
	return -1;
}

int
relay_listen_open(const char *host, int port, char *err, size_t errlen)
{
	struct addrinfo hints, *res = NULL, *ai;
	char		serv[16], where[NI_MAXHOST + NI_MAXSERV + 4];
	int		rc, fd;

	trusted_init();
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(serv, sizeof(serv), "%d", port);
	if ((rc = getaddrinfo(host, serv, &hints, &res)) != 0) {
		snprintf(err, errlen, "%s: %s", host, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
			continue;
		sa_text(ai->ai_addr, ai->ai_addrlen, where, sizeof(where));
		if (nlisten == RELAY_LISTEN_MAX) {
			snprintf(err, errlen, "%s: more than %d addresses",
			    host, RELAY_LISTEN_MAX);
			goto fail;
		}
		if ((fd = listen_one(ai)) == -1) {
			snprintf(err, errlen, "%s: %s", where, strerror(errno));
			goto fail;
		}
		listen_fd[nlisten++] = fd;
		log_debug("bound %s", where);
	}
	freeaddrinfo(res);
	if (nlisten == 0) {
		snprintf(err, errlen, "%s: no IPv4 or IPv6 address", host);
		return -1;
	}
	return nlisten;
fail:
	freeaddrinfo(res);
	relay_listen_close();
	return -1;
}

void
relay_listen_start(void)
{
	lws_sock_file_fd_type u;
	int		      i;

	for (i = 0; i < nlisten; i++) {
		u.filefd = listen_fd[i];
		if (lws_adopt_descriptor_vhost(relayd->vhost,
			LWS_ADOPT_RAW_FILE_DESC, u, "listen", NULL) == NULL)
			fatalx("cannot adopt listening socket %d", i);
		/* lws owns and closes it from now on. */
		listen_fd[i] = -1;
	}
	nlisten = 0;
}

void
relay_listen_close(void)
{
	int i;

	for (i = 0; i < nlisten; i++)
		if (listen_fd[i] != -1)
			close(listen_fd[i]);
	nlisten = 0;
}

/*
 * Hands fd, just accepted from sa, to the vhost, unless its address
 * already has max_pending_per_ip connections whose headers are not
 * complete: then it is closed before lws sees it.  Connections of the
 * import socket (unix_listener) all count under one key, "import".
 */
static void
listen_adopt(int fd, const struct sockaddr *sa, socklen_t salen,
    int unix_listener)
{
	struct relay_addr *pending = NULL;
	struct lws	  *wsi;
	char		   key[ADDRKEY_LEN];
	int		   one = 1, from_proxy, proxy_header;

	if (unix_listener)
		snprintf(key, sizeof(key), "import");
	else if (addrkey_of(sa, salen, relayd->cfg.ipv6_prefix, key,
		     sizeof(key)) == -1)
		snprintf(key, sizeof(key), "?");
	from_proxy = !unix_listener && proxy_net_match(trusted, ntrusted, sa);
	proxy_header = !unix_listener && relayd->cfg.proxy_protocol;
	if (proxy_header && !from_proxy) {
		relayd->stats.connections_refused_proxy++;
		/* Once loud: a proxy missing from trusted_proxies. */
		if (!warned_untrusted_proxy++)
			log_warnx(
			    "closing a connection from %s: proxy_protocol is set and %s is not in trusted_proxies",
			    key, key);
		else
			log_debug(
			    "closing a connection from %s: not a trusted proxy",
			    key);
		close(fd);
		return;
	}
	if (!from_proxy && !relay_addr_pending_begin(key, &pending)) {
		relayd->stats.connections_refused_pending++;
		log_debug(
		    "closing a connection from %s: %d sending headers from it",
		    key, relayd->cfg.max_pending_per_ip);
		close(fd);
		return;
	}
	if (!unix_listener &&
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == -1)
		log_warn("TCP_NODELAY");
	/* lws closes fd itself when it cannot adopt it. */
	if ((wsi = lws_adopt_socket_vhost(relayd->vhost, fd)) == NULL) {
		log_warnx("cannot adopt an accepted connection");
		relay_addr_pending_end(pending);
		return;
	}
	relay_wire_accept(wsi, fd, pending, proxy_header);
}

int
relay_listen_import(const char *run_path)
{
	struct sockaddr_un    sun;
	lws_sock_file_fd_type u;
	mode_t		      mask;
	int		      fd, saved;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if ((size_t)snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/%s",
		run_path, CHAN_IMPORT_SOCKET) >= sizeof(sun.sun_path)) {
		log_warnx(
		    "%s/%s: name too long for a unix socket: graspctl import cannot reach relayd",
		    run_path, CHAN_IMPORT_SOCKET);
		return -1;
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		 0)) == -1) {
		log_warn("import socket");
		return -1;
	}
	/* A socket left by a relayd that did not stop cleanly. */
	unlink(sun.sun_path);
	/* Created 0600: the run directory may be 0755 (not started as root). */
	mask = umask(077);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    listen(fd, SOMAXCONN) == -1) {
		saved = errno;
		umask(mask);
		close(fd);
		errno = saved;
		log_warn("%s", sun.sun_path);
		return -1;
	}
	umask(mask);
	snprintf(import_path, sizeof(import_path), "%s", sun.sun_path);
	u.filefd = fd;
	if (lws_adopt_descriptor_vhost(relayd->vhost, LWS_ADOPT_RAW_FILE_DESC,
		u, "listen", NULL) == NULL)
		fatalx("cannot adopt the import socket");
	return 0;
}

void
relay_listen_unlink(void)
{
	if (import_path[0] != '\0')
		unlink(import_path);
	import_path[0] = '\0';
}

/* The address family of the socket fd is bound to, or -1. */
static int
sock_family(int fd)
{
	struct sockaddr_storage ss;
	socklen_t		sslen = sizeof(ss);

	if (fd < 0 || getsockname(fd, (struct sockaddr *)&ss, &sslen) == -1)
		return -1;
	return ss.ss_family;
}

int
relay_listen_is_import(struct lws *wsi)
{
	/* The import socket is relayd's only unix listener. */
	return sock_family(lws_get_socket_fd(lws_get_network_wsi(wsi))) ==
	    AF_UNIX;
}

int
relay_listen_callback(struct lws *wsi, enum lws_callback_reasons reason,
    void *user, void *in, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t		sslen;
	int			lfd, fd, n, unix_listener;

	if (reason != LWS_CALLBACK_RAW_RX_FILE)
		return 0;
	lfd = lws_get_socket_fd(wsi);
	unix_listener = sock_family(lfd) == AF_UNIX;
	for (n = 0; n < LISTEN_ACCEPT_BURST; n++) {
		sslen = sizeof(ss);
		fd = accept4(lfd, (struct sockaddr *)&ss, &sslen,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno != EAGAIN && errno != EWOULDBLOCK &&
			    errno != ECONNABORTED && errno != EINTR)
				log_warn("accept");
			break;
		}
		listen_adopt(fd, (struct sockaddr *)&ss, sslen, unix_listener);
	}
	return 0;
}

/*
 * The client address of wsi into ss: the one a trusted proxy named
 * (relay_wire.c), else the socket's peer.  Returns 0; 1 for the import
 * socket, with out set to "import"; -1 when there is none.
 */
static int
peer_addr(struct lws *wsi, struct sockaddr_storage *ss, socklen_t *sslen,
    char *out, size_t len)
{
	int fd;

	out[0] = '\0';
	*sslen = sizeof(*ss);
	fd = lws_get_socket_fd(lws_get_network_wsi(wsi));
	/* The import socket's clients share one name and key. */
	if (sock_family(fd) == AF_UNIX) {
		snprintf(out, len, "import");
		return 1;
	}
	if (relay_wire_client(wsi, ss))
		return 0;
	if (fd < 0 || getpeername(fd, (struct sockaddr *)ss, sslen) == -1)
		return -1;
	return 0;
}

const char *
relay_peer_name(struct lws *wsi, char *out, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t		sslen;
	char			host[NI_MAXHOST];
	const char	       *h = host;

	if (peer_addr(wsi, &ss, &sslen, out, len) != 0)
		return out;
	if (getnameinfo((struct sockaddr *)&ss, sslen, host, sizeof(host), NULL,
		0, NI_NUMERICHOST) != 0)
		return out;
	/* An IPv4 client of "[::]" is shown as IPv4. */
	if (strncmp(h, "::ffff:", 7) == 0 && strchr(h + 7, ':') == NULL)
		h += 7;
	snprintf(out, len, "%s", h);
	return out;
}

const char *
relay_peer_key(struct lws *wsi, char *out, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t		sslen;

	if (peer_addr(wsi, &ss, &sslen, out, len) != 0)
		return out;
	if (addrkey_of((struct sockaddr *)&ss, sslen, relayd->cfg.ipv6_prefix,
		out, len) == -1)
		out[0] = '\0';
	return out;
}

void
relay_listen_bad_header(int fd, const char *why)
{
	struct sockaddr_storage ss;
	socklen_t		sslen = sizeof(ss);
	char			key[ADDRKEY_LEN] = "?";

	if (getpeername(fd, (struct sockaddr *)&ss, &sslen) == 0)
		addrkey_of((struct sockaddr *)&ss, sslen,
		    relayd->cfg.ipv6_prefix, key, sizeof(key));
	relayd->stats.connections_refused_proxy++;
	log_info("closing a connection from %s: %s", key, why);
}

int
relay_proxy_forwarded(struct lws *wsi)
{
	struct sockaddr_storage ss;
	socklen_t		sslen = sizeof(ss);
	struct lws	       *nwsi = lws_get_network_wsi(wsi);
	char			xff[LISTEN_XFF_MAX + 1], key[ADDRKEY_LEN];
	int			fd, n, r;

	fd = lws_get_socket_fd(nwsi);
	/* The PROXY header named the client once for the connection. */
	if (relayd->cfg.proxy_protocol || fd < 0 ||
	    getpeername(fd, (struct sockaddr *)&ss, &sslen) == -1 ||
	    (ss.ss_family != AF_INET && ss.ss_family != AF_INET6))
		return 0;
	n = lws_hdr_total_length(wsi, WSI_TOKEN_X_FORWARDED_FOR);
	if (!proxy_net_match(trusted, ntrusted, (struct sockaddr *)&ss)) {
		if (n > 0 && !warned_untrusted_xff++) {
			addrkey_of((struct sockaddr *)&ss, sslen,
			    relayd->cfg.ipv6_prefix, key, sizeof(key));
			log_warnx(
			    "ignoring X-Forwarded-For from %s, which is not in trusted_proxies: if it is your proxy, per-address limits count all its clients as one (graspd.conf(5))",
			    key);
		}
		return 0;
	}
	/* A kept-alive connection's earlier request named another. */
	relay_wire_set_client(nwsi, NULL);
	if (n <= 0)
		return 0;
	if (n > LISTEN_XFF_MAX ||
	    lws_hdr_copy(wsi, xff, sizeof(xff), WSI_TOKEN_X_FORWARDED_FOR) < 0)
		r = -1;
	else
		r = proxy_xff_client(xff, trusted, ntrusted, &ss);
	if (r == -1) {
		relayd->stats.requests_refused_xff++;
		log_info(
		    "refusing a request from proxy %s: bad X-Forwarded-For header",
		    relay_peer_key(wsi, key, sizeof(key)));
		lws_return_http_status(wsi, HTTP_STATUS_BAD_REQUEST,
		    "bad X-Forwarded-For header");
		return -1;
	}
	if (r == 1)
		relay_wire_set_client(nwsi, &ss);
	return 0;
}
