/*
 * auth.c: the checks of a NIP-42 authentication event and of the NIP-70
 * protected tag (see auth.h).  Runs in relayd, on the loop, before the
 * event's signature goes to the verification thread.
 */
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "event.h"
#include "policy.h"

int
auth_check_event(const struct event *ev, const char *challenge,
    const struct policy *pl, int64_t now, char *msg, size_t msglen)
{
	const struct estr *v;

	if (ev->kind != AUTH_KIND) {
		snprintf(msg, msglen,
		    "invalid: an AUTH event must be of kind %d", AUTH_KIND);
		return -1;
	}
	if (event_check_id_msg(ev, msg, msglen) == -1)
		return -1;
	if (ev->created_at < now - AUTH_WINDOW_S ||
	    ev->created_at > now + AUTH_WINDOW_S) {
		snprintf(msg, msglen,
		    "invalid: an AUTH event's created_at must be within %d minutes of now",
		    AUTH_WINDOW_S / 60);
		return -1;
	}
	if ((v = event_tag_value(ev, "challenge")) == NULL ||
	    v->len != strlen(challenge) || memcmp(v->s, challenge, v->len)) {
		snprintf(msg, msglen,
		    "invalid: the challenge tag does not match this connection's challenge");
		return -1;
	}
	if ((v = event_tag_value(ev, "relay")) == NULL ||
	    !policy_url_is_service(pl, v->s, v->len)) {
		snprintf(msg, msglen,
		    "invalid: the relay tag does not name this relay");
		return -1;
	}
	return 0;
}

int
auth_protected(const struct event *ev)
{
	uint32_t i;

	for (i = 0; i < ev->ntags; i++)
		if (ev->tags[i].v[0].len == strlen(AUTH_PROTECTED_TAG) &&
		    memcmp(ev->tags[i].v[0].s, AUTH_PROTECTED_TAG,
			ev->tags[i].v[0].len) == 0)
			return 1;
	return 0;
}
