/*
 * client.h: one-shot Nostr client calls on a relay under test (a
 * relayproc): connect, publish or count, close.  Each connection and
 * each answer waits at most CLIENT_TIMEOUT_MS.
 */
#ifndef GRASPD_CLIENT_H
#define GRASPD_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "nip01.h"

/* How long connecting, and each answer, may take. */
#define CLIENT_TIMEOUT_MS 5000

struct event;
struct relayproc;
struct wsc;

/* A websocket to the relay's "/", or NULL; the caller closes it. */
struct wsc *client_ws(struct relayproc *);
/*
 * Publishes e: 1 if the relay answered OK true, 0 if OK false, -1 if it
 * could not be asked.  The OK message (or "") goes to msg (msglen bytes,
 * may be 0).
 */
int	    client_publish(struct relayproc *, const struct event *e, char *msg,
	    size_t msglen);
/* How many stored events match the filter JSON (one REQ), or -1. */
int	    client_count(struct relayproc *, const char *filter);
/*
 * Asks client_count() every 100 ms for at most secs until it is at least
 * want; returns the last count.
 */
int	    client_wait_count(struct relayproc *, const char *filter, int want,
	    int secs);
/* client_count() of the filter {"ids":[e's id]}: 1 if the relay has e. */
int	    client_has_id(struct relayproc *, const struct event *e);
/*
 * client_wait_count() of that filter for at most secs: 1 once the relay
 * has e, else the last count.
 */
int	    client_wait_id(struct relayproc *, const struct event *e, int secs);
/*
 * The repository announcement (kind 30617) of d by the key sk, created
 * at at, naming the relay as clone ("http://DOMAIN/npub/d.git") and
 * relay, and maint_hex as its maintainer when not NULL; the caller
 * destroys it.  NULL on failure.
 */
struct event *client_announcement(struct relayproc *,
    const uint8_t sk[SECKEY_LEN], int64_t at, const char *d,
    const char *maint_hex);
/*
 * Publishes the repository announcement of d by the key sk, created at
 * at, naming the relay as clone ("http://DOMAIN/npub/d.git") and relay
 * (and maint_hex as its maintainer when not NULL), then releases it
 * (gt_release(): a one-commit repository made in dir, state, push) and
 * waits until the relay returns the announcement.  Returns 0 once it
 * does, -1 otherwise (a refusal's message printed as a "# " line).
 */
int	      client_host_repo(struct relayproc *, const uint8_t sk[SECKEY_LEN],
	      int64_t at, const char *d, const char *maint_hex, const char *dir);

struct buf;
/*
 * For a test's scripted websocket server: appends to b the "101
 * Switching Protocols" answer to the HTTP upgrade request req (a
 * string), its Sec-WebSocket-Accept from req's Sec-WebSocket-Key (an
 * empty key when req has none).
 */
void client_ws_accept(struct buf *b, const char *req);

#endif
