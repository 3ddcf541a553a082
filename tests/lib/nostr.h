/*
 * nostr.h: NIP-01 client conveniences for the integration tests and the
 * benchmarks, on top of wsclient.h: publish an event and wait for its OK,
 * run a REQ until EOSE or CLOSED, follow a live subscription.
 *
 * Relay messages are parsed with common/json.h; messages that do not
 * concern the call (NOTICE, AUTH, OKs of other events, EVENTs of other
 * subscriptions) are skipped.  Every wait is bounded by a timeout.
 */
#ifndef GRASPD_TESTS_NOSTR_H
#define GRASPD_TESTS_NOSTR_H

#include <stddef.h>
#include <stdint.h>

struct event;
struct json;
struct wsc;

/* ["EVENT",<ev->json>] as a new string; the caller frees it. */
char *nostr_event_msg(const struct event *);

/*
 * Sends ["EVENT",<ev->json>] and waits at most timeout_ms for the OK
 * naming ev's id.  On success returns 0 with *ok 1 or 0 and, if message
 * is not NULL, the OK's message (caller frees).  Returns -1 if sending
 * failed, the connection closed or no matching OK came in time.
 */
int nostr_publish(struct wsc *, const struct event *, int timeout_ms, int *ok,
    char **message);
/*
 * nostr_publish() of ev (NULL is fine: -1).  Returns 1 or 0 for OK true
 * or false, with the OK's message in msg (msglen bytes, "" if none) when
 * msg is not NULL, or -1 when no OK came.
 */
int nostr_publish_msg(struct wsc *, const struct event *ev, int timeout_ms,
    char *msg, size_t msglen);
/* nostr_publish_msg() of ev, which it then destroys. */
int nostr_publish_take(struct wsc *, struct event *ev, int timeout_ms,
    char *msg, size_t msglen);
/*
 * The same for event JSON text that may be malformed on purpose: sends
 * ["EVENT",<event_json>] verbatim and waits for the OK naming id_hex.
 */
int nostr_publish_json(struct wsc *, const char *event_json, const char *id_hex,
    int timeout_ms, int *ok, char **message);

/*
 * NIP-42: sends ["AUTH",<event_json>] and waits for the OK naming id_hex,
 * like nostr_publish_json().
 */
int  nostr_auth_json(struct wsc *, const char *event_json, const char *id_hex,
     int timeout_ms, int *ok, char **message);
/*
 * NIP-42: waits at most timeout_ms for the relay's ["AUTH",<challenge>]
 * (which must not have been read yet), answers it with a kind 22242 event
 * signed by sk naming relay_url, and waits for its OK.  Returns 0 once
 * the relay accepted it, -1 otherwise.
 */
int  nostr_auth(struct wsc *, const uint8_t sk[SECKEY_LEN],
     const char *relay_url, int timeout_ms);
/*
 * Sends ["REQ",subid,<filters>] where filters_json is one filter object
 * or a JSON array of filter objects, and collects the events of subid
 * until EOSE or CLOSED, at most timeout_ms in all.  *events_out receives
 * a NULL-terminated array of the events' JSON (re-serialized, members in
 * the order received) and *n_out their count; closed_reason, when not
 * NULL, receives the CLOSED message or NULL.  The caller frees with
 * nostr_events_free().  Returns 0 after EOSE, 1 after CLOSED, -1 on
 * timeout, close or a send failure (the events seen so far are still
 * returned).  The subscription stays open after EOSE.
 */
int  nostr_req(struct wsc *, const char *subid, const char *filters_json,
     int timeout_ms, char ***events_out, size_t *n_out, char **closed_reason);
void nostr_events_free(char **events);
/*
 * nostr_req() of the filter {"ids":[id_hex]} as subid, then CLOSE: its
 * result (0 after EOSE, 1 after CLOSED, -1), the events' count in *n.
 */
int  nostr_count_id(struct wsc *, const char *subid, const char *id_hex,
     int timeout_ms, size_t *n);

/*
 * Waits at most timeout_ms for the next EVENT of subid (a live
 * subscription) and returns its event JSON, or NULL on timeout, close, or
 * a CLOSED for subid (its message then goes to *closed_reason when not
 * NULL).  Caller frees.
 */
char *nostr_wait_event(struct wsc *, const char *subid, int timeout_ms,
    char **closed_reason);
/* Sends ["CLOSE",subid].  0 or -1. */
int   nostr_close_sub(struct wsc *, const char *subid);
/*
 * 1 when no event of subid arrives within timeout_ms (nostr_wait_event():
 * a CLOSED ends the wait too), 0 when one does (it is dropped).
 */
int   nostr_no_event(struct wsc *, const char *subid, int timeout_ms);
/*
 * 1 when the next event of subid, within timeout_ms (nostr_wait_event()),
 * is the one whose id is id_hex; 0 otherwise (a printed "# " line says
 * what came instead).
 */
int   nostr_event_arrives(struct wsc *, const char *subid, const char *id_hex,
      int timeout_ms);

/*
 * Waits at most timeout_ms for the next relay message whose first element
 * is the string type ("NOTICE", "AUTH", ...), returning the whole message
 * text, or NULL.  Other messages are dropped.  Caller frees.
 */
char *nostr_wait_msg(struct wsc *, const char *type, int timeout_ms);
/*
 * 1 when the next message of that type, within timeout_ms, has needle in
 * its text (NULL: any text); 0 otherwise.  The message is dropped.
 */
int   nostr_msg_has(struct wsc *, const char *type, const char *needle,
      int timeout_ms);

/*
 * Opens a websocket to host:port, runs nostr_req() for filters_json and
 * closes it.  Returns the number of events, or -1 on failure.
 */
int   nostr_count(const char *host, int port, const char *filters_json,
      int timeout_ms);
/*
 * Polls nostr_count() every 200 ms for at most secs seconds until it
 * reaches want; returns the last count.
 */
int   nostr_wait_count(const char *host, int port, const char *filters_json,
      int want, int secs, int timeout_ms);
/* Appends the JSON text of a parsed value to a new string; caller frees. */
char *nostr_json_text(const struct json *);

#endif
