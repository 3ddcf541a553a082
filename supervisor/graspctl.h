/*
 * graspctl.h: the data commands of graspctl (graspctl(8)), which work on
 * the store and the git data rather than through a control socket:
 * export and import (ctl_jsonl.c) and backup (ctl_backup.c).  Each runs
 * in the short-lived graspctl process, beside a running graspd or not.
 */
#ifndef GRASPD_GRASPCTL_H
#define GRASPD_GRASPCTL_H

struct config;

/* Ours: exit status of graspctl after a usage error (sysexits EX_USAGE). */
#define CTL_USAGE_EXIT 64

/*
 * Runs the data command argv[0] ("export", "import" or "backup") with its
 * arguments argv[1..argc), on the configuration of file (NULL: defaults
 * and the NGIT_* environment); jflag asks for a JSON summary.  Returns
 * graspctl's exit status: 0, 1 on failure (the reason on stderr), or
 * CTL_USAGE_EXIT when the arguments are wrong.  Never returns -1; exits
 * only when memory runs out.
 */
int ctl_data(int argc, char *argv[], const char *file, int jflag);

/*
 * export [--since T] [FILTER]: writes the stored events to stdout, one
 * JSON object a line, in the order they were stored (seq), from one
 * read-only snapshot of the database.  Returns the exit status.
 */
int ctl_export(const struct config *, int argc, char *argv[]);
/*
 * import [FILE]: publishes every line of FILE ("-" or none: stdin) to
 * relayd over its websocket, so that each event passes relayd's whole
 * pipeline, and prints what relayd answered.  Returns the exit status.
 */
int ctl_import(const struct config *, int argc, char *argv[], int jflag);
/*
 * backup DIR: copies the database (VACUUM INTO, one snapshot), the relay
 * key file and the git repositories into DIR, which must not exist or
 * be empty.  Returns the exit status.
 */
int ctl_backup(const struct config *, int argc, char *argv[], int jflag);

#endif
