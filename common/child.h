/*
 * child.h: starting a helper program (git) from a role, the one way:
 * posix_spawn, so that nothing runs in a forked copy of a process that
 * holds nanomsg sockets (design.md: nanomsg is not fork-safe).
 */
#ifndef GRASPD_CHILD_H
#define GRASPD_CHILD_H

#include <sys/types.h>

/* For child_spawn()'s descriptors: keep the parent's one. */
#define CHILD_INHERIT	(-2)

/*
 * Runs argv[0] (looked up in PATH) with argv and envp.  Its standard
 * input, output and error come from fd_in, fd_out and fd_err: -1 means
 * /dev/null, CHILD_INHERIT the parent's.  Every other descriptor is
 * closed, no signal is blocked and SIGPIPE is at its default (the roles
 * ignore it; their children should not).  Returns the pid, or -1 with
 * errno set.  Never exits.
 */
pid_t	child_spawn(char *const argv[], int fd_in, int fd_out, int fd_err,
	    char *const envp[]);

#endif
