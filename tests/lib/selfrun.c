/*
 * selfrun.c: a test program's child copy of itself (selfrun.h).
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <stdio.h>
#include <unistd.h>

#include "selfrun.h"

int
selfrun(const char *argv0, const char *dir, const char *what, char *out,
    size_t outlen)
{
	char   *argv[5];
	int	p[2], st;
	ssize_t n;
	size_t	got = 0;
	pid_t	pid;

	if (mkdir(dir, 0700) == -1 || pipe(p) == -1)
		return -1;
	argv[0] = (char *)argv0;
	argv[1] = "child";
	argv[2] = (char *)dir;
	argv[3] = (char *)what;
	argv[4] = NULL;
	fflush(NULL);
	if ((pid = fork()) == -1) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	close(p[1]);
	while (got + 1 < outlen &&
	    (n = read(p[0], out + got, outlen - got - 1)) > 0)
		got += (size_t)n;
	if (outlen > 0)
		out[got] = '\0';
	close(p[0]);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}
