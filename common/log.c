/*
 * log.c: logging for every graspd process (see log.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "log.h"

static const char    *log_procname = "graspd";
static int	      log_stderr = 1;
static enum log_level log_level = LOG_LVL_INFO;

void
log_init(const char *procname, int to_stderr)
{
	log_procname = procname;
	log_stderr = to_stderr;
	if (!to_stderr)
		openlog(procname, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void
log_setlevel(enum log_level lvl)
{
	log_level = lvl;
}

enum log_level
log_getlevel(void)
{
	return log_level;
}

int
log_parse_level(const char *s)
{
	if (strcmp(s, "error") == 0)
		return LOG_LVL_ERROR;
	if (strcmp(s, "warn") == 0 || strcmp(s, "warning") == 0)
		return LOG_LVL_WARN;
	if (strcmp(s, "info") == 0)
		return LOG_LVL_INFO;
	if (strcmp(s, "debug") == 0 || strcmp(s, "trace") == 0)
		return LOG_LVL_DEBUG;
	return -1;
}

static void
vlog(enum log_level lvl, const char *errstr, const char *fmt, va_list ap)
{
	char msg[2048];
	int  prio;

	if (lvl > log_level)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (log_stderr) {
		struct timespec ts;
		struct tm	tm;
		char		tbuf[32];

		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		strftime(tbuf, sizeof(tbuf), "%H:%M:%S", &tm);
		if (errstr)
			fprintf(stderr, "%s.%03ld %s: %s: %s\n", tbuf,
			    ts.tv_nsec / 1000000, log_procname, msg, errstr);
		else
			fprintf(stderr, "%s.%03ld %s: %s\n", tbuf,
			    ts.tv_nsec / 1000000, log_procname, msg);
		return;
	}
	switch (lvl) {
	case LOG_LVL_ERROR:
		prio = LOG_ERR;
		break;
	case LOG_LVL_WARN:
		prio = LOG_WARNING;
		break;
	case LOG_LVL_INFO:
		prio = LOG_INFO;
		break;
	default:
		prio = LOG_DEBUG;
		break;
	}
	if (errstr)
		syslog(prio, "%s: %s", msg, errstr);
	else
		syslog(prio, "%s", msg);
}

void
log_warn(const char *fmt, ...)
{
	va_list ap;
	int	saved = errno;

	va_start(ap, fmt);
	vlog(LOG_LVL_WARN, strerror(saved), fmt, ap);
	va_end(ap);
	errno = saved;
}

void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_LVL_WARN, NULL, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_LVL_INFO, NULL, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_LVL_DEBUG, NULL, fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	va_list ap;
	int	saved = errno;

	va_start(ap, fmt);
	vlog(LOG_LVL_ERROR, strerror(saved), fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_LVL_ERROR, NULL, fmt, ap);
	va_end(ap);
	exit(1);
}
