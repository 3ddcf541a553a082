/*
 * event_check.h: the invariants of a parsed event, shared by the event,
 * client_msg and relaylist harnesses.
 *
 * An event that common/event.c accepted must: carry hex forms that match
 * its bytes; serialize (->json) to text that parses back to the same
 * fields and the same text (canonical form is a fixpoint); and have the
 * NIP-01 id that an independent serialization of
 * [0,pubkey,created_at,kind,tags,content] hashes to.
 */
#ifndef GRASPD_EVENT_CHECK_H
#define GRASPD_EVENT_CHECK_H

#include <openssl/sha.h>

#include "event.h"
#include "fuzz.h"

/* The NIP-01 id of ev, computed with fuzz_jstr() instead of buf.c. */
static inline void
fuzz_event_id(const struct event *ev, uint8_t out[EVENT_ID_LEN])
{
	struct buf b = BUF_INIT;
	char	   hex[65];
	uint32_t   i, j;

	hex_encode(ev->pubkey, PUBKEY_LEN, hex);
	buf_printf(&b, "[0,\"%s\",%lld,%u,[", hex, (long long)ev->created_at,
	    ev->kind);
	for (i = 0; i < ev->ntags; i++) {
		buf_adds(&b, i ? ",[" : "[");
		for (j = 0; j < ev->tags[i].n; j++) {
			if (j)
				buf_addc(&b, ',');
			fuzz_jstr(&b, ev->tags[i].v[j].s, ev->tags[i].v[j].len);
		}
		buf_addc(&b, ']');
	}
	buf_adds(&b, "],");
	fuzz_jstr(&b, ev->content.s, ev->content.len);
	buf_addc(&b, ']');
	SHA256((const unsigned char *)b.b_data, b.b_len, out);
	buf_free(&b);
}

static inline void
fuzz_same_estr(const struct estr *a, const struct estr *b)
{
	FUZZ_ASSERT(a->len == b->len && memcmp(a->s, b->s, a->len) == 0);
	FUZZ_ASSERT(a->s[a->len] == '\0' && b->s[b->len] == '\0');
}

/* Checks everything cheap about ev, which event_parse() returned. */
static inline void
fuzz_check_event(const struct event *ev)
{
	struct event *ev2;
	uint8_t	      id[EVENT_ID_LEN], id2[EVENT_ID_LEN];
	char	      hex[129], err[256];
	uint32_t      i, j;

	FUZZ_ASSERT(ev->kind <= EVENT_KIND_MAX && ev->created_at >= 0);
	hex_encode(ev->id, EVENT_ID_LEN, hex);
	FUZZ_ASSERT(strcmp(hex, ev->id_hex) == 0);
	hex_encode(ev->pubkey, PUBKEY_LEN, hex);
	FUZZ_ASSERT(strcmp(hex, ev->pubkey_hex) == 0);
	FUZZ_ASSERT(fuzz_utf8_ok(ev->content.s, ev->content.len));
	FUZZ_ASSERT(ev->content.s[ev->content.len] == '\0');
	for (i = 0; i < ev->ntags; i++) {
		FUZZ_ASSERT(ev->tags[i].n >= 1);
		for (j = 0; j < ev->tags[i].n; j++)
			FUZZ_ASSERT(fuzz_utf8_ok(ev->tags[i].v[j].s,
			    ev->tags[i].v[j].len));
	}
	/* Canonical escaping leaves no raw NUL or control byte. */
	FUZZ_ASSERT(ev->json != NULL && strlen(ev->json) == ev->json_len);
	for (i = 0; i < ev->json_len; i++)
		FUZZ_ASSERT((unsigned char)ev->json[i] >= 0x20);

	event_compute_id(ev, id);
	fuzz_event_id(ev, id2);
	FUZZ_ASSERT(memcmp(id, id2, EVENT_ID_LEN) == 0);
	FUZZ_ASSERT(
	    event_check_id(ev) == (memcmp(id, ev->id, EVENT_ID_LEN) == 0));

	ev2 = event_parse(ev->json, ev->json_len, err, sizeof(err));
	if (ev2 == NULL) {
		fprintf(stderr,
		    "canonical form does not re-parse: %s\n%.300s\n", err,
		    ev->json);
		FUZZ_ASSERT(ev2 != NULL);
	}
	FUZZ_ASSERT(ev2->json_len == ev->json_len &&
	    memcmp(ev2->json, ev->json, ev->json_len) == 0);
	FUZZ_ASSERT(memcmp(ev2->id, ev->id, EVENT_ID_LEN) == 0);
	FUZZ_ASSERT(memcmp(ev2->pubkey, ev->pubkey, PUBKEY_LEN) == 0);
	FUZZ_ASSERT(memcmp(ev2->sig, ev->sig, EVENT_SIG_LEN) == 0);
	FUZZ_ASSERT(ev2->kind == ev->kind && ev2->created_at == ev->created_at);
	FUZZ_ASSERT(ev2->ntags == ev->ntags);
	for (i = 0; i < ev->ntags; i++) {
		FUZZ_ASSERT(ev2->tags[i].n == ev->tags[i].n);
		for (j = 0; j < ev->tags[i].n; j++)
			fuzz_same_estr(&ev->tags[i].v[j], &ev2->tags[i].v[j]);
	}
	fuzz_same_estr(&ev->content, &ev2->content);
	event_compute_id(ev2, id2);
	FUZZ_ASSERT(memcmp(id, id2, EVENT_ID_LEN) == 0);

	/* The accessors relayd and the store use. */
	(void)event_kind_class(ev->kind);
	FUZZ_ASSERT(event_d(ev) != NULL);
	FUZZ_ASSERT(event_expiration(ev) >= 0);
	(void)event_tag_value(ev, "a");

	/* Only an event whose id holds gets the (costly) signature check. */
	if (memcmp(id, ev->id, EVENT_ID_LEN) == 0)
		(void)event_check_sig(ev);
	event_destroy(ev2);
}

#endif
