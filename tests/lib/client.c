/*
 * client.c: one-shot client calls on a relay under test (client.h).
 */
#define _GNU_SOURCE /* strcasestr */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "client.h"
#include "event.h"
#include "gitutil.h"
#include "nip19.h"
#include "nostr.h"
#include "relayproc.h"
#include "wsclient.h"

struct wsc *
client_ws(struct relayproc *p)
{
	return wsc_connect(relayproc_host(p), relayproc_port(p), "/",
	    CLIENT_TIMEOUT_MS);
}

int
client_publish(struct relayproc *p, const struct event *e, char *msg,
    size_t msglen)
{
	struct wsc *ws;
	char	   *m = NULL;
	int	    ok = -1;

	if (msglen > 0)
		msg[0] = '\0';
	if ((ws = client_ws(p)) == NULL)
		return -1;
	if (nostr_publish(ws, e, CLIENT_TIMEOUT_MS, &ok, &m) != 0)
		ok = -1;
	if (msglen > 0)
		snprintf(msg, msglen, "%s", m ? m : "");
	free(m);
	wsc_close(ws);
	return ok;
}

int
client_count(struct relayproc *p, const char *filter)
{
	return nostr_count(relayproc_host(p), relayproc_port(p), filter,
	    CLIENT_TIMEOUT_MS);
}

int
client_wait_count(struct relayproc *p, const char *filter, int want, int secs)
{
	int n = -1, i;

	for (i = 0; i < secs * 10; i++) {
		if ((n = client_count(p, filter)) >= want)
			return n;
		usleep(100000);
	}
	return n;
}

int
client_has_id(struct relayproc *p, const struct event *e)
{
	char f[128];

	snprintf(f, sizeof(f), "{\"ids\":[\"%s\"]}", e->id_hex);
	return client_count(p, f);
}

int
client_wait_id(struct relayproc *p, const struct event *e, int secs)
{
	char f[128];

	snprintf(f, sizeof(f), "{\"ids\":[\"%s\"]}", e->id_hex);
	return client_wait_count(p, f, 1, secs);
}

struct event *
client_announcement(struct relayproc *p, const uint8_t sk[SECKEY_LEN],
    int64_t at, const char *d, const char *maint_hex)
{
	uint8_t pk[PUBKEY_LEN];
	char	npub[NIP19_KEY_BUFSZ], tags[1024];

	event_pubkey_of(sk, pk);
	nip19_encode("npub", pk, npub, sizeof(npub));
	snprintf(tags, sizeof(tags),
	    "[[\"d\",\"%s\"],[\"clone\",\"http://%s/"
	    "%s/%s.git\"],[\"relays\",\"ws://%s\"]%s%s%s]",
	    d, relayproc_domain(p), npub, d, relayproc_domain(p),
	    maint_hex ? ",[\"maintainers\",\"" : "", maint_hex ? maint_hex : "",
	    maint_hex ? "\"]" : "");
	return event_new_signed(sk, at, 30617, tags, "");
}

int
client_host_repo(struct relayproc *p, const uint8_t sk[SECKEY_LEN], int64_t at,
    const char *d, const char *maint_hex, const char *dir)
{
	char	      msg[256];
	struct event *ann;
	struct wsc   *ws;
	int	      rc = -1;

	if ((ann = client_announcement(p, sk, at, d, maint_hex)) == NULL)
		return -1;
	if (client_publish(p, ann, msg, sizeof(msg)) != 1) {
		printf("# announcement refused: %s\n", msg);
		goto done;
	}
	if ((ws = client_ws(p)) == NULL)
		goto done;
	rc = gt_release(ws, sk, relayproc_domain(p), d, dir, NULL);
	wsc_close(ws);
	if (rc == 0 && client_wait_id(p, ann, 10) != 1)
		rc = -1;
done:
	event_destroy(ann);
	return rc;
}

void
client_ws_accept(struct buf *b, const char *req)
{
	char	    accept[29], key[64];
	const char *k;

	key[0] = '\0';
	if ((k = strcasestr(req, "Sec-WebSocket-Key:")) != NULL)
		sscanf(k + 18, " %63[^\r\n ]", key);
	wsc_accept_key(key, accept);
	buf_printf(b,
	    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: "
	    "websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s"
	    "\r\n\r\n",
	    accept);
}
