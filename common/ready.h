/*
 * ready.h: the readiness protocol between the supervisor and its roles
 * (s6's notification descriptor, with progress).  The supervisor starts a
 * role with the write end of a pipe in descriptor GRASPD_READY_FD.  The
 * role writes READY_EXTEND while its start-up work (rebuilding its state
 * from a large store, migrating the database) makes progress, at most
 * every READY_EXTEND_EVERY seconds (a 60th of it under NGIT_TEST, set by
 * proc_start()), and READY_MSG once it is ready, then closes the
 * descriptor.
 * A role that neither becomes ready nor reports progress for the
 * supervisor's readiness timeout is stopped; progress extends the wait up
 * to a cap (supervisor.h), so that a big store is not a crash loop.
 */
#ifndef GRASPD_READY_H
#define GRASPD_READY_H

/* The environment variable naming the descriptor. */
#define READY_ENV	   "GRASPD_READY_FD"
/* The role is ready. */
#define READY_MSG	   "READY=1\n"
/* The role is still starting and made progress. */
#define READY_EXTEND	   "EXTEND=1\n"
/* Ours: the role exits CONFIG_EXIT; the rest of the line says why. */
#define READY_ERROR	   "ERROR="
/* Ours: longest READY_ERROR line the supervisor keeps, with its newline. */
#define READY_ERROR_MAX	   320
/* Ours: seconds between two progress lines of one role. */
#define READY_EXTEND_EVERY 5.0

/*
 * Writes READY_MSG to the readiness descriptor if the supervisor gave one,
 * closes it and forgets it.  Never exits; a bad descriptor is logged.
 */
void ready_notify(void);

/*
 * Cheap enough to call for every row of a start-up scan: writes
 * READY_EXTEND at most every READY_EXTEND_EVERY seconds (or what
 * ready_progress_every() set) while the readiness descriptor is open.
 */
void ready_progress(void);
/* Seconds between two progress lines from now on (test timing). */
void ready_progress_every(double secs);

/*
 * A configuration error found at start: logs the message (log_warnx),
 * writes it as a READY_ERROR line to the readiness descriptor so that the
 * supervisor can show it (graspctl status, the console of graspd -D), and
 * exits CONFIG_EXIT.
 */
void ready_config_fail(const char *fmt, ...)
    __attribute__((noreturn, format(printf, 1, 2)));

#endif
