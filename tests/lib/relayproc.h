/*
 * relayproc.h: start and stop a graspd program (relayd, graspd, ...) for
 * one test, on a free loopback port, in a temporary directory of its own.
 *
 * The program gets the NGIT_* environment of a test instance and writes
 * its stdout and stderr to <dir>/log.  Every wait is bounded, and the
 * child dies with the test process (PR_SET_PDEATHSIG), so a crashed test
 * leaves no server behind.
 */
#ifndef GRASPD_RELAYPROC_H
#define GRASPD_RELAYPROC_H

#include <sys/types.h>

#include "tfix.h"

/* How long relayproc_start() waits for the port to accept connections. */
#define RELAYPROC_START_TIMEOUT_MS 10000
/* How long relayproc_stop() waits after SIGTERM before SIGKILL. */
#define RELAYPROC_STOP_TIMEOUT_MS  5000

/*
 * The WAL file's room of a test's relayd (wal_room_mb): one fill step, so
 * that every test runs the fill without each writing 640 MiB of zeros.
 * tproc_shell.sh says the same for the shell's relays.
 */
#define TPROC_WAL_ROOM "NGIT_WAL_ROOM_MB=4"

struct relayproc;
struct wsc;

/*
 * Picks a free port, creates a temporary directory ($TMPDIR or /tmp) with
 * relay/, git/ and run/ inside, and starts program ($GRASPD_BIN/program,
 * GRASPD_BIN defaulting to "bin"; a program with a '/' is used as it is)
 * in that directory with the environment of the test plus
 *   NGIT_BIND_ADDRESS=127.0.0.1:PORT  NGIT_DOMAIN=127.0.0.1:PORT
 *   NGIT_RELAY_DATA_PATH=DIR/relay    NGIT_GIT_DATA_PATH=DIR/git
 *   NGIT_RUN_PATH=DIR/run  NGIT_TEST=1  NGIT_MAX_EVENTS_PER_MINUTE=0
 *   TPROC_WAL_ROOM
 * then extra_env ("KEY=VALUE" strings, NULL-terminated, may be NULL),
 * which overrides any of them.  Waits until the bind address accepts TCP
 * connections; if the program exits first saying its port was taken,
 * starts it again on another (up to three ports; not when extra_env
 * names NGIT_BIND_ADDRESS).  Returns the handle, or NULL (after printing
 * the log tail and cleaning up) if the program could not start or never
 * listened.
 */
struct relayproc *relayproc_start(const char *program,
    const char *const			      extra_env[]);
/*
 * relayproc_start() for the scriptable peer relay of the tests
 * (tests/peer/peer.h): $GRASPD_PEER if set, else $O/tests/peer/peer with
 * O defaulting to "build", as tests/run.sh runs from the top of the tree.
 */
struct relayproc *relayproc_start_peer(const char *const extra_env[]);
/*
 * POSTs body (len bytes) to path on rp, e.g. a test peer's /config or
 * /events control endpoint; 0 if it answered 200, else -1.
 */
int  relayproc_post(struct relayproc *, const char *path, const char *body,
     size_t len);
/*
 * Stops the program (see relayproc_stop) and starts it again with the same
 * port, directory and environment.  Returns 0, or -1 if it did not come
 * back listening in time.
 */
int  relayproc_restart(struct relayproc *);
/* Sets or replaces "KEY=VALUE" in the environment of the next restart. */
void relayproc_setenv(struct relayproc *, const char *kv);
/* Sends sig to the program.  0, or -1 if it is not running. */
int  relayproc_kill(struct relayproc *, int sig);
/*
 * Waits at most timeout_ms for the program to exit.  Returns its status
 * as relayproc_stop() does, or -1 if it is still running.
 */
int  relayproc_wait(struct relayproc *, int timeout_ms);
/* Sleeps ms milliseconds (the poll interval of the waits here). */
void relayproc_sleep_ms(int ms);
/*
 * Waits at most timeout_ms (0: one look) for the child *pidp (none when
 * -1) to end; then sets *pidp to -1 and *statusp to its status as a shell
 * gives it (the exit code, or 128 plus the signal; 255 when it cannot be
 * waited for).  Returns *statusp, or -1 while the child runs.
 */
int  relayproc_reap(pid_t *pidp, int *statusp, int timeout_ms);
/*
 * Stops the child *pidp (none when -1): SIGTERM, then, when it has not
 * ended within timeout_ms, SIGKILL to it and its process group (said on
 * stderr, naming it what), each time waiting as relayproc_reap() does.
 * Returns its status, or 255 (said on stderr) if it outlives SIGKILL.
 */
int  relayproc_terminate(pid_t *pidp, int *statusp, int timeout_ms,
     const char *what);
/*
 * SIGTERM, up to RELAYPROC_STOP_TIMEOUT_MS for the exit, then SIGKILL.
 * Returns the exit status (0..255), 128 + the signal number if a signal
 * ended it (so 137 means it had to be killed), or the status of the
 * earlier exit if it was no longer running.
 */
int  relayproc_stop(struct relayproc *);
/*
 * Stops the program if it runs, removes the directory (kept, and its path
 * printed, when GRASPD_KEEP_TMP is set) and frees.  NULL is fine.
 */
void relayproc_free(struct relayproc *);
/* Prints the last nlines lines of the log on stderr as "# " lines. */
void relayproc_dump_log(const struct relayproc *, int nlines);
/*
 * Fixtures for T_MAIN_FIXTURE(): one relayd (no extra environment), or one
 * test peer, for all the cases of a program, in the struct relayproc *
 * that arg points to; the last RELAYPROC_FIXTURE_LOG lines of its log are
 * shown when a case failed, then it is stopped and freed.
 */
#define RELAYPROC_FIXTURE_LOG 30
extern const struct t_fixture relayproc_relayd_fixture;
extern const struct t_fixture relayproc_peer_fixture;

int	    relayproc_port(const struct relayproc *);
/* The host to connect to: the host part of NGIT_BIND_ADDRESS. */
const char *relayproc_host(const struct relayproc *);
const char *relayproc_dir(const struct relayproc *);
const char *relayproc_log_path(const struct relayproc *);
/* How many times needle is in the program's log so far (every start). */
int	    relayproc_log_count(const struct relayproc *, const char *needle);
/* Pid of the running program, or -1. */
pid_t	    relayproc_pid(const struct relayproc *);

struct json;
struct json_doc;
/*
 * Fetches the NIP-11 document of the relay (GET / with Accept:
 * application/nostr+json) and parses it: returns its root, the arena in
 * *docp (the caller json_free()s it), or NULL with *docp NULL when the
 * request failed, the status was not 200 or the body is not JSON (said
 * in a "# " line).
 */
struct json *relayproc_nip11(const struct relayproc *, struct json_doc **docp);
/* The NGIT_DOMAIN it runs with (by default "127.0.0.1:PORT"). */
const char  *relayproc_domain(const struct relayproc *);
/* "ws://" + NGIT_DOMAIN: what announcements put in their relays tag. */
const char  *relayproc_url(const struct relayproc *);
/* "ws://HOST:PORT/", the canonical URL of the bind address. */
const char  *relayproc_bind_url(const struct relayproc *);

/*
 * A loopback TCP port that was free a moment ago (bound, then closed):
 * host "127.0.0.1" or "::1".  When GRASPD_TEST_PORTS is "LO-HI"
 * (tests/run.sh gives each test program its own block below the
 * ephemeral range), the port comes from that block, in turn, so none is
 * handed out twice before the block wraps; else the kernel picks one
 * (bind to port 0).  Returns the port or -1.
 */
int relayproc_free_port(const char *host);
/*
 * The value of field name ("VmRSS", "Uid", "CapEff", ...) in
 * /proc/<pid>/status, blanks after the colon skipped, into out (outlen
 * bytes, the newline dropped).  0, or -1 if it cannot be read or has
 * no such field.
 */
int relayproc_proc_status(long pid, const char *name, char *out, size_t outlen);
/*
 * A listening TCP socket on host (an IPv4 or IPv6 literal), any port:
 * socket(2) type (SOCK_STREAM, maybe | SOCK_NONBLOCK | SOCK_CLOEXEC),
 * listen(2) backlog.  The descriptor (caller closes) with the port in
 * *port, or -1 if host is no address literal or a call failed.
 */
int relayproc_listen(const char *host, int type, int backlog, int *port);
/*
 * Splits "host:port" or "[v6]:port" (v may be NULL): the host into host
 * (hostlen bytes), the port (1..65535) into *port.  0, or -1 when v is
 * not of that form or the host does not fit.
 */
int relayproc_split_addr(const char *v, char *host, size_t hostlen, int *port);
/*
 * The environment of a whole graspd under test (gdproc.c,
 * supervisor_test.c): calls add(arg, "KEY=VALUE") for NGIT_* settings
 * for 127.0.0.1:port with relay, git and run directories under dir, no
 * rate limits, roles as the test's own user, and GRASPD_LIBEXEC=libexec.
 * The string is valid only during the call.
 */
void	    relayproc_graspd_env(int port, const char *dir, const char *libexec,
	   void (*add)(void *arg, const char *kv), void *arg);
/*
 * 1 if the log file at path (its first 64 KiB) says a program could not
 * have its listening address ("cannot listen on", as relayd and the peer
 * say when libwebsockets cannot bind, or "Address already in use"), else
 * 0, also when it cannot be read.
 */
int	    relayproc_log_port_taken(const char *path);
/* Waits at most timeout_ms until host:port accepts a connection.  0 / -1. */
int	    relayproc_wait_port(const char *host, int port, int timeout_ms);
/*
 * Opens a websocket to rp, trying again every 100 ms for at most
 * timeout_ms while relayd refuses the upgrade (a place that a closed
 * connection frees is free once relayd saw the close).  The connection
 * (caller closes it) or NULL.
 */
struct wsc *relayproc_ws_retry(struct relayproc *rp, int timeout_ms);

#endif
