/*
 * bench.c: the benchmarks' shared helpers (bench.h).
 */
#include <sys/socket.h>
#include <sys/time.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "buf.h"
#include "wsclient.h"

char *
bench_opt(int argc, char **argv, const char *name)
{
	int i;

	for (i = 0; i + 1 < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return argv[i + 1];
	return NULL;
}

double
bench_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
is_loopback(const struct addrinfo *ai)
{
	const struct sockaddr_in  *s4 = (const void *)ai->ai_addr;
	const struct sockaddr_in6 *s6 = (const void *)ai->ai_addr;

	if (ai->ai_family == AF_INET)
		return (ntohl(s4->sin_addr.s_addr) >> 24) == 127;
	if (ai->ai_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr);
	return 0;
}

void
bench_loopback_only(const char *prog, const char *host)
{
	struct addrinfo hints, *res, *ai;
	int		ok = 0;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, NULL, &hints, &res) == 0) {
		for (ok = 1, ai = res; ai != NULL; ai = ai->ai_next)
			ok &= is_loopback(ai);
		freeaddrinfo(res);
	}
	if (!ok) {
		fprintf(stderr,
		    "%s: %s is not a loopback address; the "
		    "benchmark only talks to this machine\n",
		    prog, host);
		exit(2);
	}
}

double
bench_http_get(const char *host, int port, const char *path, int timeout_ms,
    struct buf *out)
{
	char	chunk[65536];
	double	t0 = bench_now_s(), t = -1;
	ssize_t n;
	int	fd, fl;

	buf_reset(out);
	if ((fd = wsc_tcp_connect(host, port, timeout_ms)) == -1)
		return -1;
	/* Blocking from here on; SO_RCVTIMEO bounds each read. */
	if ((fl = fcntl(fd, F_GETFL)) != -1)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO,
	    &(struct timeval){ timeout_ms / 1000, (timeout_ms % 1000) * 1000 },
	    sizeof(struct timeval));
	buf_printf(out,
	    "GET %s HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n",
	    path);
	if (write(fd, out->b_data, out->b_len) != (ssize_t)out->b_len)
		goto done;
	buf_reset(out);
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		buf_add(out, chunk, (size_t)n);
	t = (bench_now_s() - t0) * 1e3;
	buf_addc(out, '\0');
	out->b_len--;
done:
	close(fd);
	return t;
}

int
bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}
