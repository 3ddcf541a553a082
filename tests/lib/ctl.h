/*
 * ctl.h: what a test reads from a running graspd besides the websocket:
 * graspctl's JSON answers (show, status) and relayd's /metrics lines.
 */
#ifndef GRASPD_CTL_H
#define GRASPD_CTL_H

#include <cjson/cJSON.h>

struct relayproc;

/*
 * Runs a shell command; its stdout in *out (caller frees) when out is
 * not NULL.  Returns its exit status, or -1 if it did not run or exit.
 */
int	 ctl_run(const char *cmd, char **out);
/*
 * graspctl -j -r <run of rp> args ($GRASPD_BIN/graspctl, GRASPD_BIN
 * defaulting to "bin"), parsed.  NULL if it failed; caller deletes.
 */
cJSON	*ctl_json(struct relayproc *rp, const char *args);
/* A list of a `graspctl -j show` answer ("relays", "connections"). */
cJSON	*ctl_view_list(const cJSON *show, const char *name);
/* The entry of an array of objects whose "relay" is url plus "/" (the
 * canonical key of "ws://host:port"); NULL if none. */
cJSON	*ctl_by_relay(const cJSON *arr, const char *url);
/* The number o[key], or -1 if it is not a number. */
double	 ctl_num(const cJSON *o, const char *key);
/* The string o[key], or "" if it is not a string. */
const char *ctl_str(const cJSON *o, const char *key);
/*
 * The value of rp's /metrics sample named name (with its labels, e.g.
 * graspd_relay_events_stored{role="relayd"}), or -1 if absent.
 */
double	 ctl_metric(struct relayproc *rp, const char *name);
/* The same from the relay at host:port. */
double	 ctl_metric_at(const char *host, int port, const char *name);

#endif
