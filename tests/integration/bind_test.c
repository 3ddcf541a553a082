/*
 * bind_test.c: relayd listens on exactly what NGIT_BIND_ADDRESS names.
 * An IPv4 literal is that address alone (no IPv6 socket, ::1 refused), an
 * IPv6 literal likewise the other way round, and a host name every
 * address it resolves to, never the wildcard.  The listening sockets are
 * read from /proc/net/tcp and /proc/net/tcp6 (what ss shows), and a
 * websocket on the bound address is served (the accepted connection
 * reaches lws).  A taken port ends relayd at once with exit 78 and the
 * address and its cause.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "relayproc.h"
#include "t.h"
#include "wsclient.h"

#define TMO		10000
#define MAX_LISTEN	16
/* The state of a listening socket in /proc/net/tcp{,6} (TCP_LISTEN). */
#define PROC_TCP_LISTEN 0x0A

struct listeners {
	int  n;
	char addr[MAX_LISTEN][64]; /* numeric, as inet_ntop() */
};

/*
 * Adds the listening sockets of port in /proc/net/<file> (tcp or tcp6)
 * to l, as numeric addresses.  0, or -1 if the file cannot be read.
 */
static int
proc_listeners(const char *file, int port, struct listeners *l)
{
	char	 path[64], line[512], hex[64];
	unsigned lport, st;
	FILE	*fp;
	int	 v6 = strcmp(file, "tcp6") == 0;

	snprintf(path, sizeof(path), "/proc/net/%s", file);
	if ((fp = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), fp) != NULL) {
		uint8_t	 a[16];
		unsigned w, i;
		size_t	 hl;

		if (sscanf(line,
			" %*u: %63[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x "
			"%x",
			hex, &lport, &st) != 3)
			continue;
		if ((int)lport != port || st != PROC_TCP_LISTEN ||
		    l->n == MAX_LISTEN)
			continue;
		hl = strlen(hex);
		if (hl != (v6 ? 32u : 8u))
			continue;
		/* The kernel prints each 32-bit word in host byte order. */
		for (i = 0; i < hl / 8; i++) {
			char word[9];

			memcpy(word, hex + i * 8, 8);
			word[8] = '\0';
			w = (unsigned)strtoul(word, NULL, 16);
			memcpy(a + i * 4, &w, 4);
		}
		inet_ntop(v6 ? AF_INET6 : AF_INET, a, l->addr[l->n],
		    sizeof(l->addr[l->n]));
		l->n++;
	}
	fclose(fp);
	return 0;
}

/* Every listening socket of port, IPv4 and IPv6.  0 or -1. */
static int
listeners_of(int port, struct listeners *l)
{
	memset(l, 0, sizeof(*l));
	if (proc_listeners("tcp", port, l) == -1 ||
	    proc_listeners("tcp6", port, l) == -1)
		return -1;
	return 0;
}

/* 1 if l holds addr. */
static int
listens_on(const struct listeners *l, const char *addr)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->addr[i], addr) == 0)
			return 1;
	return 0;
}

/* A REQ on host:port gets its EOSE: the accepted connection is served. */
static int
serves_websocket(const char *host, int port)
{
	const char *req = "[\"REQ\",\"b\",{\"limit\":1}]";
	struct wsc *w;
	char	   *m;
	int	    ok = 0;

	if ((w = wsc_connect(host, port, "/", TMO)) == NULL)
		return 0;
	if (wsc_send_text(w, req, strlen(req)) == 0) {
		/* The NIP-42 challenge may come first. */
		while (!ok && (m = wsc_recv(w, TMO, NULL)) != NULL) {
			ok = strstr(m, "\"EOSE\"") != NULL ||
			    strstr(m, "\"EVENT\"") != NULL;
			if (!ok && strncmp(m, "[\"AUTH\"", 7) != 0) {
				free(m);
				break;
			}
			free(m);
		}
	}
	wsc_close(w);
	return ok;
}

/* 1 if a TCP connect to host:port is refused (nothing listens there). */
static int
refused(const char *host, int port)
{
	int fd;

	if ((fd = wsc_tcp_connect(host, port, 2000)) == -1)
		return 1;
	close(fd);
	return 0;
}

/* relayd on bind (with "%d" for a free port of host), or NULL. */
static struct relayproc *
start_on(const char *fmt, const char *host)
{
	char	    bind[128], kv[160], domain[160];
	const char *env[] = { kv, domain, NULL };
	int	    port;

	if ((port = relayproc_free_port(host)) == -1)
		return NULL;
	snprintf(bind, sizeof(bind), fmt, port);
	snprintf(kv, sizeof(kv), "NGIT_BIND_ADDRESS=%s", bind);
	snprintf(domain, sizeof(domain), "NGIT_DOMAIN=%s", bind);
	return relayproc_start("relayd", env);
}

/*
 * relayd bound to the address literal fmt (with "%d" for a free port of
 * host) listens there alone: not on other, the loopback of the other
 * family, and serves a websocket.
 */
static void
literal_listens_alone(const char *fmt, const char *host, const char *other)
{
	struct relayproc *rp;
	struct listeners  l;
	int		  port;

	T_ASSERT((rp = start_on(fmt, host)) != NULL);
	port = relayproc_port(rp);
	T_CHECK(listeners_of(port, &l) == 0);
	T_EQ_INT(l.n, 1);
	T_CHECK(listens_on(&l, host));
	T_CHECK(refused(other, port));
	T_CHECK(serves_websocket(host, port));
	relayproc_free(rp);
}

static void
ipv4_literal_listens_on_it_alone(void)
{
	literal_listens_alone("127.0.0.1:%d", "127.0.0.1", "::1");
}

static void
ipv6_literal_listens_on_it_alone(void)
{
	literal_listens_alone("[::1]:%d", "::1", "127.0.0.1");
}

static void
host_name_listens_on_its_addresses(void)
{
	struct addrinfo	  hints, *res, *ai;
	struct relayproc *rp;
	struct listeners  l;
	char		  a[64];
	int		  port, want = 0;

	T_ASSERT((rp = start_on("localhost:%d", "127.0.0.1")) != NULL);
	port = relayproc_port(rp);
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	T_ASSERT(getaddrinfo("localhost", NULL, &hints, &res) == 0);
	T_CHECK(listeners_of(port, &l) == 0);
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		getnameinfo(ai->ai_addr, ai->ai_addrlen, a, sizeof(a), NULL, 0,
		    NI_NUMERICHOST);
		T_CHECK(listens_on(&l, a));
		want++;
	}
	freeaddrinfo(res);
	T_EQ_INT(l.n, want);
	T_CHECK(!listens_on(&l, "0.0.0.0"));
	T_CHECK(!listens_on(&l, "::"));
	T_CHECK(serves_websocket("localhost", port));
	relayproc_free(rp);
}

static void
taken_port_is_a_configuration_error(void)
{
	struct relayproc *rp, *second;
	char		  kv[64], want[128], buf[4096];
	const char	 *env[] = { kv, NULL };
	FILE		 *fp;
	size_t		  n = 0;

	T_ASSERT((rp = relayproc_start("relayd", NULL)) != NULL);
	snprintf(kv, sizeof(kv), "NGIT_BIND_ADDRESS=127.0.0.1:%d",
	    relayproc_port(rp));
	/* The port answers (the first relayd): the second one's exit is
	 * what tells. */
	second = relayproc_start("relayd", env);
	T_ASSERT(second != NULL);
	T_EQ_INT(relayproc_wait(second, 10000), 78);
	snprintf(want, sizeof(want),
	    "relayd: 127.0.0.1:%d: Address already "
	    "in use",
	    relayproc_port(rp));
	if ((fp = fopen(relayproc_log_path(second), "r")) != NULL) {
		n = fread(buf, 1, sizeof(buf) - 1, fp);
		fclose(fp);
	}
	buf[n] = '\0';
	T_CHECK(strstr(buf, want) != NULL);
	relayproc_free(second);
	relayproc_free(rp);
}

static const struct t_case cases[] = {
	T_CASE(ipv4_literal_listens_on_it_alone),
	T_CASE(ipv6_literal_listens_on_it_alone),
	T_CASE(host_name_listens_on_its_addresses),
	T_CASE(taken_port_is_a_configuration_error),
};

T_MAIN(cases)
