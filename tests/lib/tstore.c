/*
 * tstore.c: the shared store fixture of the unit tests, and the made-up
 * pubkeys and unsigned events of the tests and benchmarks (tstore.h).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "event.h"
#include "log.h"

#include "store.h"
#include "tdir.h"
#include "tfix.h"
#include "tstore.h"

static int
tstore_fixture_open(void *arg)
{
	struct tstore_prog *tp = arg;
	char		    path[PATH_MAX], err[256];

	if (tdir_fixture.setup(&tp->dir) != 0)
		return 2;
	snprintf(path, sizeof(path), "%s/graspd.db", tp->dir.path);
	if ((*tp->st = store_open(path, 0, err, sizeof(err))) == NULL) {
		printf("not ok - store_open: %s\n", err);
		return 1;
	}
	return 0;
}

static void
tstore_fixture_close(void *arg, int failed)
{
	struct tstore_prog *tp = arg;

	store_close(*tp->st);
	*tp->st = NULL;
	tdir_fixture.cleanup(&tp->dir, failed);
}

const struct t_fixture tstore_fixture = { tstore_fixture_open,
	tstore_fixture_close };

void
tstore_fake_pubkey(uint8_t fill, uint32_t n, char out[PUBKEY_HEX_LEN + 1])
{
	uint8_t pk[PUBKEY_LEN];

	memset(pk, fill, sizeof(pk));
	pk[28] = (uint8_t)(n >> 24);
	pk[29] = (uint8_t)(n >> 16);
	pk[30] = (uint8_t)(n >> 8);
	pk[31] = (uint8_t)n;
	hex_encode(pk, sizeof(pk), out);
}

struct event *
tstore_unsigned_event(const char *pk, int64_t at, uint32_t kind,
    const char *tags, const char *content)
{
	struct buf    b = BUF_INIT;
	struct event *ev;
	char	      err[256];

	buf_printf(&b,
	    "{\"id\":\"%064d\",\"pubkey\":\"%s\",\"created_at\":%lld,"
	    "\"kind\":%u,\"tags\":%s,\"content\":\"%s\",\"sig\":\"%0128d\"}",
	    0, pk, (long long)at, kind, tags, content, 0);
	if ((ev = event_parse(b.b_data, b.b_len, err, sizeof(err))) == NULL)
		fatalx("tstore: %s: %s", err, b.b_data);
	buf_free(&b);
	/* The real id, patched into the stored text ({"id":"<hex>"...). */
	event_compute_id(ev, ev->id);
	hex_encode(ev->id, EVENT_ID_LEN, ev->id_hex);
	if (ev->json_len < 71 || memcmp(ev->json, "{\"id\":\"", 7) != 0)
		fatalx("tstore: unexpected canonical form");
	memcpy(ev->json + 7, ev->id_hex, EVENT_ID_HEX_LEN);
	return ev;
}
