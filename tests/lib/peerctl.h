/*
 * peerctl.h: the HTTP control API of the scriptable peer relay
 * (tests/peer/peer.h) as the integration tests drive it: seed events,
 * change its behaviour, read its request log.  Every call waits at most
 * PEERCTL_TIMEOUT_MS (the POSTs are relayproc_post()'s, which waits as
 * long).
 */
#ifndef GRASPD_PEERCTL_H
#define GRASPD_PEERCTL_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* How long one control request may take. */
#define PEERCTL_TIMEOUT_MS 10000

struct event;
struct relayproc;

/* POST /events with evs[0..n) as JSON lines: 0 if it answered 200, or -1. */
int    peerctl_seed(struct relayproc *, struct event *const *evs, size_t n);
/* POST /config with the JSON object json: 0 if it answered 200, or -1. */
int    peerctl_config(struct relayproc *, const char *json);
/*
 * POSTs body (a string) to the control endpoint path: the HTTP status,
 * or -1 if there was no answer; the answer's body in *resp (caller
 * frees) when resp is not NULL.
 */
int    peerctl_post(struct relayproc *, const char *path, const char *body,
       char **resp);
/* GET /log: the body (caller frees), or NULL unless it answered 200. */
char  *peerctl_log_text(struct relayproc *);
/* GET /log, parsed (caller deletes), or NULL. */
cJSON *peerctl_log(struct relayproc *);
/* How many REQs the log holds (0 if it cannot be read). */
int    peerctl_nreqs(struct relayproc *);
/* How many entries the log's list ("reqs", "closes", "opens", ...)
 * holds, or -1 if the log cannot be read. */
int    peerctl_log_count(struct relayproc *, const char *list);
/* The log's number key ("connections", "open", ...), or -1. */
int    peerctl_log_num(struct relayproc *, const char *key);

#endif
