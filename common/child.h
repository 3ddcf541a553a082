/*
 * child.h: helper programs (git) a role runs, the one way: posix_spawn,
 * so that nothing runs in a forked copy of a process that holds nanomsg
 * sockets (design.md: nanomsg is not fork-safe); and the one table of
 * the children still running, each with a deadline and a completion
 * callback, reaped from the role's libwebsockets loop.
 *
 * The table belongs to the process (relayd's git requests, ref jobs and
 * web pages share it, as syncd's hunts do theirs); child_init() gives it
 * the loop.  Reaping happens in child_reap(), which runs from a timer
 * every check_ms while children run and may also be called when SIGCHLD
 * woke the loop (relayd does).  A child past its deadline gets SIGKILL
 * (git holds no state a graceful stop would save: receive-pack's
 * quarantine is dropped by the caller).
 */
#ifndef GRASPD_CHILD_H
#define GRASPD_CHILD_H

#include <sys/types.h>

#include <stdint.h>

struct lws_context;

/* For child_spawn()'s descriptors: keep the parent's one. */
#define CHILD_INHERIT (-2)

/*
 * "fetch" and the options with which a role's git fetch brings objects
 * and nothing else: no progress, no tags, no FETCH_HEAD, no gc
 * (git-fetch(1)).  NULL-terminated.
 */
extern const char *const child_git_fetch[];

/*
 * Runs argv[0] (looked up in PATH) with argv and envp.  Its standard
 * input, output and error come from fd_in, fd_out and fd_err: -1 means
 * /dev/null, CHILD_INHERIT the parent's.  Every other descriptor is
 * closed, no signal is blocked and SIGPIPE is at its default (the roles
 * ignore it; their children should not).  Returns the pid, or -1 with
 * errno set.  Never exits.  The child is not in the table: the caller
 * reaps it (child_start() is the usual way).
 */
pid_t child_spawn(char *const argv[], int fd_in, int fd_out, int fd_err,
    char *const envp[]);

/*
 * A child of the table ended: its pid, its status (exit code, 128 +
 * signal, or 255 if it could not be waited for), and killed, 1 when the
 * table killed it (its deadline passed, or child_kill()).  The entry is
 * gone from the table (child_count() no longer counts it); the callback
 * may start and abandon children.
 */
typedef void child_done_cb(pid_t pid, int status, int killed, void *arg);

/*
 * Gives the table its loop (kept, not owned) and how often, in ms,
 * children are checked while some run; before the first child_start()
 * (children started earlier are checked from then on).  Called again,
 * it replaces both.  Never exits.
 */
void child_init(struct lws_context *ctx, int64_t check_ms);

/*
 * child_spawn() with the child in the table: SIGKILL once timeout_ms
 * have passed, and cb(pid, status, killed, arg) from the loop once it is
 * reaped (cb may be NULL).  what names the program in the log line of a
 * deadline kill ("<what> process <pid> overran its time"); it is copied.
 * Returns the pid, or -1 with errno set (nothing is logged, no callback
 * runs).  Exits on allocation failure.
 */
pid_t child_start(char *const argv[], int fd_in, int fd_out, int fd_err,
    char *const envp[], int64_t timeout_ms, const char *what, child_done_cb *cb,
    void *arg);

/* Kills the child now (SIGKILL); its callback still runs when reaped. */
void child_kill(pid_t pid);

/*
 * Kills the child now (SIGKILL) and forgets its callback: the caller's
 * argument may be freed at once.  The table still reaps and counts it
 * until it has ended.  A pid not in the table is ignored.
 */
void child_abandon(pid_t pid);

/*
 * Reaps the children that ended and kills those past their deadline,
 * then runs the callbacks of the reaped ones.  Safe to call at any time,
 * from a callback too.  Never exits.
 */
void child_reap(void);

/* Children in the table: started and not yet reaped. */
int child_count(void);

/*
 * Kills every child of the table and waits for each (blocking), without
 * running any callback; the table is empty afterwards.  For a role's
 * shutdown.
 */
void child_kill_all(void);

#endif
