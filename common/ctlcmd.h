/*
 * ctlcmd.h: the one list of control commands (graspctl(8), "CONTROL
 * PROTOCOL") and the control-socket server every process runs: graspd
 * (sup_control.c), relayd (relay_chan.c) and the other roles (role.c).
 * graspctl.c takes the names from here too.
 *
 * A request is a CONTROL message {"cmd":"<name>","args":["...",...]};
 * the reply one CONTROL_REPLY, {"ok":true,...} or {"ok":false,
 * "error":"..."}.  Control sockets are written by clients, not siblings:
 * whatever arrives is answered and nothing a client sends ends the
 * process (msg_recv_client()).
 */
#ifndef GRASPD_CTLCMD_H
#define GRASPD_CTLCMD_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "log.h"
#include "msg.h"

/* Ours: no command takes more arguments. */
#define CTL_MAX_ARGS 4

/*
 * X(id, name, min args, max args, graspd, relayd, roles): the last three
 * say with Y or N whether graspd, relayd and the role.c roles (syncd,
 * discoveryd, historyd) answer it.  A process builds its handler table
 * with its CTL_COL_* below, so a Y without a handler does not compile
 * and a handler under N is an unused function (-Wall).  Append only.
 */
#define CTL_CMD_LIST(X) \
	X(status, "status", 0, 0, Y, Y, Y) \
	X(show, "show", 0, 1, Y, Y, Y) \
	X(stats, "stats", 0, 0, Y, Y, Y) \
	X(log, "log", 1, 1, Y, Y, Y) \
	X(stop, "stop", 0, 1, Y, Y, Y) \
	X(start, "start", 1, 1, Y, N, N) \
	X(restart, "restart", 1, 1, Y, N, N) \
	X(reload, "reload", 0, 0, Y, N, N) \
	X(shutdown, "shutdown", 0, 0, Y, N, N)

enum ctl_cmd {
#define CTL_ENUM(id, name, lo, hi, sup, relay, role) CTL_##id,
	CTL_CMD_LIST(CTL_ENUM)
#undef CTL_ENUM
	CTL_NCMDS
};

#define CTL_FN_Y(fn) fn
#define CTL_FN_N(fn) NULL

/*
 * A process's column of the list, as the initialisers of its handler
 * table, in the order of the enum (its handler, or NULL under N):
 *	static const ctl_fn fns[CTL_NCMDS] = { CTL_CMD_LIST(CTL_COL_SUP) };
 * graspd's handlers are named ctl_<id>, relayd's relay_ctl_<id> and the
 * roles' role_ctl_<id>.
 */
#define CTL_COL_SUP(id, name, lo, hi, sup, relay, role) CTL_FN_##sup(ctl_##id),
#define CTL_COL_RELAY(id, name, lo, hi, sup, relay, role) \
	CTL_FN_##relay(relay_ctl_##id),
#define CTL_COL_ROLE(id, name, lo, hi, sup, relay, role) \
	CTL_FN_##role(role_ctl_##id),

/*
 * One command's handler: argc strings in argv (counts already checked
 * against the table), members added to reply (which already says
 * "ok":true).  Returns 0, or -1 with err filled (the reply then is
 * {"ok":false,"error":err}).  arg is ctl_serve()'s.
 */
typedef int (*ctl_fn)(void *arg, int argc, const char **argv, cJSON *reply,
    char *err, size_t errlen);

/* "status", ...; NULL for no such command. */
const char *ctl_cmd_name(enum ctl_cmd);
/* The command named name, or -1. */
int	    ctl_cmd_find(const char *name);
/* 1 if process p (ROLE_SUPERVISOR, ROLE_RELAYD, a role.c role) answers
 * cmd, else 0. */
int	    ctl_cmd_answers(enum ctl_cmd, enum role p);

/*
 * Answers every request waiting on the REP socket sock (at most max;
 * 0: no bound) as process self, with fns[cmd] (indexed by enum
 * ctl_cmd, built with CTL_FN_*()) called with arg.  Malformed messages,
 * wrong types, bad JSON, unknown commands and wrong argument counts get
 * an error reply.  Returns the number of requests answered.  Exits only
 * when out of memory.
 */
int ctl_serve(int sock, enum role self, const ctl_fn fns[CTL_NCMDS], void *arg,
    int max);

/*
 * The "log" command of every process: "verbose" is debug; "brief" is
 * the configured level, at most info (graspctl(8)).  Sets the level,
 * adds "level" to reply; -1 with err for another argument.
 */
/*
 * Members of a reply (or of any object in one), for its readers:
 * ctl_jstr() gives the string member key, "" when it is missing or not a
 * string (the reply keeps it); ctl_jnum() the number member key, 0 when
 * missing or not a number.  Never exit.
 */
const char *ctl_jstr(const cJSON *obj, const char *key);
double	    ctl_jnum(const cJSON *obj, const char *key);

int ctl_log_level(const char *arg, enum log_level configured, cJSON *reply,
    char *err, size_t errlen);

#endif
