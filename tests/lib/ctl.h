/*
 * ctl.h: what a test reads from a running graspd besides the websocket:
 * graspctl's JSON answers (show, status), a role's control socket, and
 * relayd's /metrics lines.
 */
#ifndef GRASPD_CTL_H
#define GRASPD_CTL_H

#include <cjson/cJSON.h>

#include "msg.h"

struct relayproc;

/*
 * Runs a shell command; its stdout in *out (caller frees) when out is
 * not NULL.  Returns its exit status, or -1 if it did not run or exit.
 */
int    ctl_run(const char *cmd, char **out);
/*
 * graspctl -j -r <run of rp> args ($GRASPD_BIN/graspctl, GRASPD_BIN
 * defaulting to "bin"), parsed.  NULL if it failed; caller deletes.
 */
cJSON *ctl_json(struct relayproc *rp, const char *args);
/*
 * Sends payload as a message of type on role's control socket under the
 * run directory run (chan_control_endpoint()), waiting at most tmo_ms
 * each way, and returns the parsed MSG_CONTROL_REPLY (caller deletes),
 * or NULL if there was none.
 */
cJSON *ctl_role(const char *run, enum role role, enum msg_type type,
    const char *payload, int tmo_ms);
/* ctl_role() with a binary payload of len bytes. */
cJSON *ctl_role_msg(const char *run, enum role role, enum msg_type type,
    const void *payload, size_t len, int tmo_ms);
/*
 * ctl_role_msg() on the sibling REQ/REP channel chan (CHAN_GITDATA,
 * msg.h) instead of a control socket, as the sibling that uses it sends:
 * the parsed MSG_CONTROL_REPLY, or NULL if none came within tmo_ms.
 */
cJSON *ctl_chan_msg(const char *run, const char *chan, enum msg_type type,
    const void *payload, size_t len, int tmo_ms);
/*
 * ctl_role() with the whole message, header included, as n raw bytes
 * (garbage, a truncated header, a lying length), so a test can send what
 * msg_send() never would.  The parsed MSG_CONTROL_REPLY, or NULL.
 */
cJSON *ctl_role_raw(const char *run, enum role role, const void *bytes,
    size_t n, int tmo_ms);
/*
 * The "view" of role's `show` answer in rp (run directory DIR/run), once
 * it has the member ready (any answer when ready is NULL), asked every
 * 100 ms for at most secs.  Caller deletes; NULL if it never had it.
 */
cJSON *ctl_role_view(struct relayproc *rp, enum role role, const char *ready,
    int secs);
/* A list of a `graspctl -j show` answer ("relays", "connections"). */
cJSON *ctl_view_list(const cJSON *show, const char *name);
/* The entry of an array of objects whose "relay" is url plus "/" (the
 * canonical key of "ws://host:port"); NULL if none. */
cJSON *ctl_by_relay(const cJSON *arr, const char *url);
/* The number o[key], or -1 if it is not a number. */
double ctl_num(const cJSON *o, const char *key);
/* 1 or 0 for the boolean o[key], -1 if it is not a boolean. */
int    ctl_bool(const cJSON *o, const char *key);
/* The string o[key], or "" if it is not a string. */
const char *ctl_str(const cJSON *o, const char *key);
/*
 * The value of rp's /metrics sample named name (with its labels, e.g.
 * graspd_relay_events_stored{role="relayd"}), or -1 if absent.
 */
double	    ctl_metric(struct relayproc *rp, const char *name);
/* The same from the relay at host:port. */
double	    ctl_metric_at(const char *host, int port, const char *name);

#endif
