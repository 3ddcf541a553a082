/*
 * child.c: helper programs started with posix_spawn (see child.h).  Used
 * by relayd (git upload-pack/receive-pack and ref alignment) and syncd
 * (git-data hunting).
 */
#define _GNU_SOURCE	/* posix_spawn_file_actions_addclosefrom_np */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>

#include "child.h"

static void
std_fd(posix_spawn_file_actions_t *fa, int fd, int target, int flags)
{
	if (fd == CHILD_INHERIT)
		return;
	if (fd >= 0)
		posix_spawn_file_actions_adddup2(fa, fd, target);
	else
		posix_spawn_file_actions_addopen(fa, target, "/dev/null", flags,
		    0);
}

pid_t
child_spawn(char *const argv[], int fd_in, int fd_out, int fd_err,
    char *const envp[])
{
	posix_spawn_file_actions_t	 fa;
	posix_spawnattr_t		 attr;
	sigset_t			 none, dflt;
	pid_t				 pid;
	int				 rc;

	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	sigemptyset(&dflt);
	sigaddset(&dflt, SIGPIPE);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &dflt);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK |
	    POSIX_SPAWN_SETSIGDEF);
	posix_spawn_file_actions_init(&fa);
	std_fd(&fa, fd_in, 0, O_RDONLY);
	std_fd(&fa, fd_out, 1, O_WRONLY);
	std_fd(&fa, fd_err, 2, O_WRONLY);
	/* Sockets, the database and nanomsg stay with the role. */
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	return pid;
}
