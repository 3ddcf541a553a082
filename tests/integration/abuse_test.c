/*
 * abuse_test.c: relayd's per-address limits (graspd.conf(5)).  A
 * websocket beyond max_connections_per_ip from one address is answered
 * with HTTP 429 and counted in /metrics, while plain HTTP still works;
 * a place freed is taken again.  The EVENTs of one address's
 * connections share max_events_per_minute_per_ip, and a new connection
 * does not refill it.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "event.h"
#include "nostr.h"
#include "relayproc.h"
#include "t.h"
#include "wsclient.h"

#define PER_IP		3

static void
test_connections_per_ip_capped(void)
{
	const char	 *env[] = { "NGIT_MAX_CONNECTIONS_PER_IP=3", NULL };
	struct relayproc *rp;
	struct wsc	 *ws[PER_IP], *extra;
	char		 *body = NULL;
	int		  i, status = 0;

	memset(ws, 0, sizeof(ws));
	T_ASSERT((rp = relayproc_start("relayd", env)) != NULL);
	for (i = 0; i < PER_IP; i++)
		T_CHECK((ws[i] = wsc_connect(relayproc_host(rp),
		    relayproc_port(rp), "/", 5000)) != NULL);
	extra = wsc_connect_ex(relayproc_host(rp), relayproc_port(rp), "/",
	    NULL, 5000, &status);
	printf("# websocket %d from one address: HTTP %d\n", PER_IP + 1,
	    status);
	T_CHECK(extra == NULL && status == 429);
	if (extra != NULL)
		wsc_close(extra);
	T_CHECK(ctl_metric(rp, "graspd_relay_connections_refused_total"
	    "{role=\"relayd\",reason=\"per_ip\"}") == 1);
	/* Plain HTTP is not a websocket: NIP-11 still answers. */
	T_CHECK(http_get(relayproc_host(rp), relayproc_port(rp), "/",
	    "Accept: application/nostr+json\r\n", 5000, &status, NULL,
	    &body) == 0 && status == 200);
	free(body);
	/* A place freed is taken again. */
	wsc_close(ws[0]);
	ws[0] = NULL;
	T_CHECK((extra = relayproc_ws_retry(rp, 5000)) != NULL);
	if (extra != NULL)
		wsc_close(extra);
	for (i = 0; i < PER_IP; i++)
		if (ws[i] != NULL)
			wsc_close(ws[i]);
	relayproc_free(rp);
}

/* Publishes a grasp list of key n on ws; 1 accepted, 0 refused, -1. */
static int
publish(struct wsc *ws, int n, char **msg)
{
	struct event	*e;
	uint8_t		 sk[32];
	int		 ok = 0, rc;

	memset(sk, 0x2d, sizeof(sk));
	sk[31] = (uint8_t)n;
	if ((e = event_new_signed(sk, time(NULL), 10317,
	    "[[\"g\",\"wss://example.org\"]]", "")) == NULL)
		abort();
	rc = nostr_publish(ws, e, 5000, &ok, msg);
	event_destroy(e);
	return rc == -1 ? -1 : ok;
}

static void
test_events_per_ip_shared_by_connections(void)
{
	const char	 *env[] = { "NGIT_MAX_EVENTS_PER_MINUTE_PER_IP=4",
			    NULL };
	struct relayproc *rp;
	struct wsc	 *a = NULL, *b = NULL;
	char		 *msg = NULL;
	int		  n;

	T_ASSERT((rp = relayproc_start("relayd", env)) != NULL);
	T_ASSERT((a = wsc_connect(relayproc_host(rp), relayproc_port(rp), "/",
	    5000)) != NULL);
	T_ASSERT((b = wsc_connect(relayproc_host(rp), relayproc_port(rp), "/",
	    5000)) != NULL);
	/* Two each from two connections: the address's four. */
	for (n = 1; n <= 4; n++)
		T_CHECK(publish(n % 2 ? a : b, n, NULL) == 1);
	T_CHECK(publish(a, 5, &msg) == 0);
	T_CHECK(msg != NULL && strcmp(msg, "rate-limited: too many events "
	    "from your address") == 0);
	free(msg);
	msg = NULL;
	/* Every connection gone, a new one: the bucket is still empty. */
	wsc_close(a);
	wsc_close(b);
	for (n = 0; n < 50 && ctl_metric(rp, "graspd_relay_connections_active"
	    "{role=\"relayd\"}") != 0; n++)
		usleep(100000);
	T_CHECK(n < 50);
	T_ASSERT((a = wsc_connect(relayproc_host(rp), relayproc_port(rp), "/",
	    5000)) != NULL);
	T_CHECK(publish(a, 6, &msg) == 0);
	T_CHECK(msg != NULL && strncmp(msg, "rate-limited:", 13) == 0);
	free(msg);
	wsc_close(a);
	relayproc_free(rp);
}

int
main(void)
{
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	T_RUN(test_connections_per_ip_capped);
	T_RUN(test_events_per_ip_shared_by_connections);
	return t_done();
}
