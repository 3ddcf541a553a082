/*
 * auth.h: NIP-42 client authentication and the NIP-70 protected tag, as
 * relayd checks them: pure decisions over a parsed event, shared by
 * relayd and the client message fuzz harness.  syncd's side of NIP-42
 * (answering a remote relay's challenge) is in common/conn.c.
 */
#ifndef GRASPD_AUTH_H
#define GRASPD_AUTH_H

#include <stddef.h>
#include <stdint.h>

struct event;
struct policy;

/* NIP-42 (nips.md 1.9): the kind of the signed authentication event. */
#define AUTH_KIND	   22242
/* NIP-42: its created_at must be near now, "on the order of 10 minutes". */
#define AUTH_WINDOW_S	   600
/* NIP-70 (nips.md 1.9): the name of the tag ["-"] that protects an event. */
#define AUTH_PROTECTED_TAG "-"

/*
 * Checks ev, the event of a client's ["AUTH", <event>], against the
 * challenge this relay sent on the connection (a NUL-terminated string)
 * and the relay's address (policy_url_is_service(): the "relay" tag must
 * name this service by host and port, as clone URLs do): kind AUTH_KIND,
 * a valid id, created_at within AUTH_WINDOW_S of now, a "challenge" tag
 * equal to challenge, a "relay" tag naming this relay.  Does not check
 * the signature (the caller does, on its verification path).  Returns 0,
 * or -1 with an "invalid: ..." OK message in msg.  Never exits.
 */
int auth_check_event(const struct event *ev, const char *challenge,
    const struct policy *pl, int64_t now, char *msg, size_t msglen);

/* 1 if ev carries the NIP-70 tag ["-"], else 0. */
int auth_protected(const struct event *ev);

#endif
