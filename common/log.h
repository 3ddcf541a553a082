/*
 * log.h: the one logging interface of every graspd process.
 *
 * Each line starts with the process name given to log_init().  Foreground
 * processes log to stderr, daemons to syslog.  fatal()/fatalx() log and
 * exit(1) so that the supervisor restarts the role.
 */
#ifndef GRASPD_LOG_H
#define GRASPD_LOG_H

#include <stdarg.h>

enum log_level {
	LOG_LVL_ERROR = 0,
	LOG_LVL_WARN = 1,
	LOG_LVL_INFO = 2,
	LOG_LVL_DEBUG = 3,
};

/* Sets the process name and destination; to_stderr 0 means syslog. */
void	       log_init(const char *procname, int to_stderr);
/* Sets the most verbose level printed. */
void	       log_setlevel(enum log_level);
enum log_level log_getlevel(void);
/* Parses "error", "warn", "info", "debug" (also "trace" = debug); -1 if bad. */
int	       log_parse_level(const char *);

/* log_warn appends ": strerror(errno)"; the x variants do not. */
void log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
/* Log and exit(1).  Never return. */
void fatal(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
