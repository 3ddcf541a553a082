/*
 * tint_prog.c: what the integration programs share: set-up, tear-down,
 * test keys and events, checks of HTTP answers (tint_prog.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "client.h"
#include "event.h"
#include "gitutil.h"
#include "relayproc.h"
#include "tdir.h"
#include "tint_prog.h"
#include "tuser.h"
#include "wsclient.h"

/* The most settings tint_sync_graspd() passes graspd. */
#define TINT_MAX_ENV 16

int
tint_sanitizing(void)
{
	const char *l = getenv("RUN_LABEL");

	return l != NULL && strcmp(l, "sanitize") == 0;
}

int
tint_home(char *dir, size_t len, const char *name, const char *who)
{
	if (tdir_make(dir, len, name) == -1 || gt_setup(dir) == -1) {
		printf("not ok - %s: temp dir\n", who);
		return -1;
	}
	return 0;
}

int
tint_peers_start(struct relayproc **const peers[], size_t n, const char *who)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((*peers[i] = relayproc_start_peer(NULL)) == NULL) {
			printf("not ok - %s: peers did not start\n", who);
			return -1;
		}
	return 0;
}

struct relayproc *
tint_sync_graspd(const char *const keys[], struct relayproc *const peers[],
    size_t n, const char *const extra[], const char *who)
{
	char		  set[TINT_MAX_ENV][256];
	const char	 *env[TINT_MAX_ENV + 1];
	struct relayproc *rp = NULL;
	size_t		  i, ne = 0;

	for (i = 0; i < n && ne < TINT_MAX_ENV; i++) {
		snprintf(set[ne], sizeof(set[ne]), "%s=ws://127.0.0.1:%d",
		    keys[i], relayproc_port(peers[i]));
		env[ne] = set[ne];
		ne++;
	}
	if (ne < TINT_MAX_ENV)
		env[ne++] = "NGIT_SYNC_ALLOW_PRIVATE_TARGETS=true";
	for (i = 0; extra != NULL && extra[i] != NULL && ne < TINT_MAX_ENV; i++)
		env[ne++] = extra[i];
	env[ne] = NULL;
	if (ne == TINT_MAX_ENV)
		printf("# tint_sync_graspd: more than %d settings\n",
		    TINT_MAX_ENV - 1);
	else
		rp = relayproc_start("graspd", env);
	if (rp == NULL && who != NULL)
		printf("not ok - %s: graspd did not start\n", who);
	return rp;
}

int
tint_host_repo(struct relayproc *p, uint8_t fill, int owner, int64_t at,
    const char *d, const char *maint_hex, const char *dir)
{
	uint8_t sk[SECKEY_LEN];
	char	work[512];

	tuser_sk(fill, owner, sk);
	snprintf(work, sizeof(work), "%s/%s-%d", dir, d, relayproc_port(p));
	return client_host_repo(p, sk, at, d, maint_hex, work);
}

struct event *
tint_announcement(uint8_t fill, int owner, int64_t at, const char *d,
    const char *const clones[], size_t nclones, const char *const relays[],
    size_t nrelays, const char *maint_hex)
{
	struct buf    t = BUF_INIT;
	struct event *e;
	uint8_t	      sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char	      url[512];
	size_t	      i;

	tuser_sk(fill, owner, sk);
	event_pubkey_of(sk, pk);
	buf_printf(&t, "[[\"d\",\"%s\"],[\"name\",\"%s\"],[\"clone\"", d, d);
	for (i = 0; i < nclones; i++) {
		gt_url(url, sizeof(url), clones[i], pk, d);
		buf_printf(&t, ",\"%s\"", url);
	}
	buf_adds(&t, "],[\"relays\"");
	for (i = 0; i < nrelays; i++)
		buf_printf(&t, ",\"%s\"", relays[i]);
	buf_addc(&t, ']');
	if (maint_hex != NULL)
		buf_printf(&t, ",[\"maintainers\",\"%s\"]", maint_hex);
	buf_addc(&t, ']');
	e = tuser_event(fill, owner, at, 30617, t.b_data, "");
	buf_free(&t);
	return e;
}

void
tint_key(uint8_t b0, int n, uint8_t sk[SECKEY_LEN])
{
	memset(sk, 0, SECKEY_LEN);
	sk[0] = b0;
	sk[31] = (uint8_t)n;
}

struct event *
tint_signed(uint8_t b0, int n, int64_t at, uint32_t kind, const char *tags,
    const char *content)
{
	uint8_t sk[SECKEY_LEN];

	tint_key(b0, n, sk);
	return event_new_signed(sk, at, kind, tags, content);
}

int
tint_cors_ok(const char *hdrs)
{
	static const struct {
		const char *name, *want[2];
		int	    exact;
	} cors[] = {
		{ "access-control-allow-origin", { "*", NULL }, 1 },
		{ "access-control-allow-methods", { "GET", "POST" }, 0 },
		{ "access-control-allow-headers", { "Content-Type", NULL }, 0 },
	};
	char  *v;
	size_t i, j;
	int    ok = 1;

	for (i = 0; i < TINT_N(cors) && ok; i++) {
		v = http_header_value(hdrs, cors[i].name);
		for (j = 0; j < 2 && cors[i].want[j] != NULL; j++)
			if (v == NULL ||
			    (cors[i].exact ?
				    strcmp(v, cors[i].want[j]) != 0 :
				    strstr(v, cors[i].want[j]) == NULL))
				ok = 0;
		if (!ok)
			printf("# CORS: %s: %s\n", cors[i].name,
			    v ? v : "(none)");
		free(v);
	}
	return ok;
}

void
tint_relays_free(struct relayproc *const rps[], size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		relayproc_free(rps[i]);
}


int
tint_freed_place_retaken(struct relayproc *rp, struct wsc *ws[], size_t n)
{
	struct wsc *extra;
	size_t	    i;

	wsc_close(ws[0]);
	ws[0] = NULL;
	extra = relayproc_ws_retry(rp, 5000);
	if (extra != NULL)
		wsc_close(extra);
	for (i = 0; i < n; i++)
		if (ws[i] != NULL) {
			wsc_close(ws[i]);
			ws[i] = NULL;
		}
	return extra != NULL ? 0 : -1;
}
