/*
 * graspctl.h: private header of graspctl, the operator's command
 * (graspctl(8)).  Its own names start with gctl_.
 *
 * graspctl.c     main, options, the control requests (one CONTROL
 *                message per process over nanomsg REQ) and their printing
 * gctl_jsonl.c   export and import: events as JSON lines, import through
 *                relayd's import socket
 * gctl_backup.c  backup: an online copy of the database, the relay key
 *                and the git data
 *
 * The data commands (export, import, backup) work on the store and the
 * git data rather than through a control socket; each runs in the
 * short-lived graspctl process, beside a running graspd or not.
 */
#ifndef GRASPD_GRASPCTL_H
#define GRASPD_GRASPCTL_H

#include <limits.h>

#include "config.h"

/* Ours: exit status of graspctl after a usage error (sysexits EX_USAGE). */
#define GCTL_USAGE_EXIT 64

/*
 * Where the data commands find graspd's data, found as the other
 * commands find the running graspd (graspctl.c, data_where()): the
 * configuration of -f; else, with -r, the data paths the relayd running
 * in that directory reports; else NGIT_RELAY_DATA_PATH; else the paths
 * of a relayd running in the run directory; else the defaults.
 */
struct gctl_where {
	struct config cw_cfg;
	char	      cw_run[PATH_MAX];	      /* the run directory */
	char	      cw_from[PATH_MAX + 64]; /* "-f FILE", ..., for errors */
};

/*
 * Runs the data command argv[0] ("export", "import" or "backup") with its
 * arguments argv[1..argc), on the data and run directory w names; jflag
 * asks for a JSON summary.  Returns
 * graspctl's exit status: 0, 1 on failure (the reason on stderr), or
 * GCTL_USAGE_EXIT when the arguments are wrong.  Never returns -1; exits
 * only when memory runs out.
 */
int gctl_data(const struct gctl_where *w, int argc, char *argv[], int jflag);
/*
 * The database of w into out ("<relay_data_path>/graspd.db").  Returns 0,
 * or -1 after saying on stderr, in one line, that there is none and how
 * to name the right one (-f, -r).
 */
int gctl_db_path(const struct gctl_where *w, char *out, size_t len);

/*
 * export [--since T] [FILTER]: writes the stored events and those held in
 * purgatory to stdout, one JSON object a line, from one read-only
 * snapshot of the database, in an order import can take: announcements,
 * then states, then the rest, each by created_at.  Returns the exit
 * status.
 */
int gctl_export(const struct gctl_where *, int argc, char *argv[]);
/*
 * import [FILE]: publishes every line of FILE ("-" or none: stdin) to
 * relayd over its import socket (msg.h), so that each event passes
 * relayd's whole pipeline as the operator's, sends again the events
 * refused for want of one that came later, in passes, and prints what
 * relayd answered.  Returns the exit status.
 */
int gctl_import(const struct gctl_where *, int argc, char *argv[], int jflag);
/*
 * backup DIR: copies the database (VACUUM INTO, one snapshot), the relay
 * key file and the git repositories into DIR, which must not exist or
 * be empty.  Returns the exit status.
 */
int gctl_backup(const struct gctl_where *, int argc, char *argv[], int jflag);

#endif
