/*
 * bench.c: the benchmarks' shared helpers (bench.h).
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

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
