/*
 * abuse_test.c: relayd's per-address limits (graspd.conf(5)).  A
 * websocket beyond max_connections_per_ip from one address is answered
 * with HTTP 429 and counted in /metrics, while plain HTTP still works;
 * a place freed is taken again.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
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

int
main(void)
{
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	T_RUN(test_connections_per_ip_capped);
	return t_done();
}
