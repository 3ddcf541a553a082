/*
 * ready.c: a role's side of the readiness protocol (ready.h), used by
 * relayd and by every role through role.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "ready.h"

static int    ready_calls;
static double ready_last;
static double ready_every = READY_EXTEND_EVERY;

/* The readiness descriptor, or -1 when there is none (or it is bad). */
static int
ready_fd(void)
{
	const char *s = getenv(READY_ENV);
	char	   *ep;
	long	    fd;

	if (s == NULL || *s == '\0')
		return -1;
	errno = 0;
	fd = strtol(s, &ep, 10);
	if (errno != 0 || *ep != '\0' || fd <= 2 || fd > 65535) {
		log_warnx("%s=%s: not a descriptor, readiness not signalled",
		    READY_ENV, s);
		unsetenv(READY_ENV);
		return -1;
	}
	return (int)fd;
}

void
ready_notify(void)
{
	int fd;

	if ((fd = ready_fd()) == -1)
		return;
	if (write(fd, READY_MSG, sizeof(READY_MSG) - 1) !=
	    (ssize_t)sizeof(READY_MSG) - 1)
		log_warn("readiness notification on descriptor %d", fd);
	close(fd);
	unsetenv(READY_ENV);
}

void
ready_progress(void)
{
	struct timespec ts;
	double		now;
	int		fd;

	/* The clock is read every 1024th call only. */
	if ((ready_calls++ & 1023) != 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	if (ready_last == 0) {
		/* The first call starts the clock: a short start says nothing. */
		ready_last = now;
		return;
	}
	if (now - ready_last < ready_every || (fd = ready_fd()) == -1)
		return;
	ready_last = now;
	if (write(fd, READY_EXTEND, sizeof(READY_EXTEND) - 1) !=
	    (ssize_t)sizeof(READY_EXTEND) - 1)
		log_warn("readiness progress on descriptor %d", fd);
}

void
ready_config_fail(const char *fmt, ...)
{
	char	msg[READY_ERROR_MAX - sizeof(READY_ERROR) - 1];
	va_list ap;
	int	fd;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* One line: a newline in a value would end it early. */
	msg[strcspn(msg, "\n")] = '\0';
	log_warnx("%s", msg);
	if ((fd = ready_fd()) != -1)
		dprintf(fd, READY_ERROR "%s\n", msg);
	exit(CONFIG_EXIT);
}

void
ready_progress_every(double secs)
{
	ready_every = secs;
}
