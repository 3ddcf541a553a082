/*
 * tuser.c: a test's numbered users (tuser.h).
 */
#include <stdio.h>
#include <string.h>

#include "event.h"
#include "tuser.h"

void
tuser_sk(uint8_t fill, int n, uint8_t sk[SECKEY_LEN])
{
	memset(sk, fill, SECKEY_LEN);
	if (n > 0xff)
		sk[30] = (uint8_t)(n >> 8);
	sk[31] = (uint8_t)n;
}

void
tuser_hex(uint8_t fill, int n, char out[PUBKEY_HEX_LEN + 1])
{
	uint8_t sk[SECKEY_LEN], pk[PUBKEY_LEN];

	tuser_sk(fill, n, sk);
	event_pubkey_of(sk, pk);
	hex_encode(pk, PUBKEY_LEN, out);
}

struct event *
tuser_event(uint8_t fill, int n, int64_t at, uint32_t kind, const char *tags,
    const char *content)
{
	uint8_t sk[SECKEY_LEN];

	tuser_sk(fill, n, sk);
	return event_new_signed(sk, at, kind, tags, content);
}

void
tuser_coord(uint8_t fill, int n, const char *d, char *out, size_t outlen)
{
	char hex[PUBKEY_HEX_LEN + 1];

	tuser_hex(fill, n, hex);
	snprintf(out, outlen, "30617:%s:%s", hex, d);
}

void
tuser_events_destroy(struct event **evs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		event_destroy(evs[i]);
}
