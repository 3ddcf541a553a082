/*
 * bench.h: what the benchmarks (tests/bench/) share: options, the
 * clock, and the rule that they only talk to this machine.
 */
#ifndef GRASPD_BENCH_H
#define GRASPD_BENCH_H

/* The value after the argument name in argv ("--name value"), or NULL. */
char  *bench_opt(int argc, char **argv, const char *name);
/* Seconds on the monotonic clock. */
double bench_now_s(void);
/*
 * Exits with status 2, after saying why on stderr as prog, unless every
 * address host resolves to is a loopback one (127/8 or ::1).
 */
void   bench_loopback_only(const char *prog, const char *host);

struct buf;

/*
 * GETs path from host:port over a new connection ("Connection: close")
 * with reads bounded by timeout_ms, the whole answer (status line,
 * headers, body) NUL-terminated into out.  Returns the milliseconds from
 * connect to the last byte, or -1 if it could not connect or send.
 */
double bench_http_get(const char *host, int port, const char *path,
    int timeout_ms, struct buf *out);
/* qsort's comparison of two doubles, ascending. */
int    bench_cmp_double(const void *a, const void *b);

#endif
