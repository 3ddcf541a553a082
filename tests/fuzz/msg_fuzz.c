/*
 * msg_fuzz.c: libFuzzer harness for common/msg.c's reader: the header
 * checks of msg_recv() (through msg_check(), which msg_recv() uses and
 * which reports instead of exiting) and the payload decoders that follow
 * them: INGEST (msg_ingest_decode(), then the event and its relay URL as
 * relayd reads them), ACCEPTED (feed.c's size check), PLUSMARK
 * (msg_plusmark_decode()) and the JSON text of CONTROL, CONTROL_REPLY and
 * STATS.
 *
 * Each input is read twice: as the raw buffer nanomsg would hand over,
 * and as the payload of a well-formed message of the type its first byte
 * selects (so the decoders see fuzzed payloads every run).  Invariants: a
 * refusal has a reason and leaves the message empty; an accepted one
 * covers exactly the buffer; an INGEST payload that msg_ingest_decode()
 * would take (it exits otherwise, so the harness checks its conditions
 * first) splits so that msg_ingest_encode() rebuilds the same bytes.
 */
#include "event_check.h"
#include "json.h"
#include "msg.h"
#include "relayurl.h"

static void
ingest(const struct msg *m)
{
	struct msg_ingest mi;
	struct buf	  b = BUF_INIT;
	struct event	 *ev;
	char		 *url, err[256], key[RELAYURL_MAX + 1];
	uint16_t	  u16;

	/* msg_ingest_decode()'s conditions, which it enforces by exiting. */
	if (m->m_len < 3 || m->m_data[0] >= ROLE_COUNT)
		return;
	memcpy(&u16, m->m_data + 1, sizeof(u16));
	if ((size_t)u16 + 3 > m->m_len)
		return;
	msg_ingest_decode(m, &mi);
	FUZZ_ASSERT(mi.mi_origin == m->m_data[0]);
	FUZZ_ASSERT(mi.mi_url == (const char *)m->m_data + 3);
	FUZZ_ASSERT(mi.mi_urllen == u16);
	FUZZ_ASSERT(3 + mi.mi_urllen + mi.mi_jsonlen == m->m_len);
	FUZZ_ASSERT(role_name(mi.mi_origin) != NULL);

	if ((url = malloc(mi.mi_urllen + 1)) == NULL)
		abort();
	memcpy(url, mi.mi_url, mi.mi_urllen);
	url[mi.mi_urllen] = '\0';
	/* The encoder takes a C string, so only a URL without NUL. */
	if (strlen(url) == mi.mi_urllen) {
		msg_ingest_encode(&b, mi.mi_origin, url, mi.mi_json,
		    mi.mi_jsonlen);
		FUZZ_ASSERT(b.b_len == m->m_len &&
		    memcmp(b.b_data, m->m_data, m->m_len) == 0);
	}
	/* relay_ingest_remote(): the event; the URL is only logged. */
	if ((ev = event_parse(mi.mi_json, mi.mi_jsonlen, err, sizeof(err))) !=
	    NULL) {
		fuzz_check_event(ev);
		event_destroy(ev);
	}
	(void)relayurl_canon(mi.mi_url, mi.mi_urllen, 0, key, sizeof(key),
	    NULL);
	free(url);
	buf_free(&b);
}

static void
payload(const struct msg *m)
{
	struct json_doc *doc;
	char		 err[128];

	switch (m->m_type) {
	case MSG_INGEST:
		ingest(m);
		break;
	case MSG_ACCEPTED: {
		/* What feed.c takes: 1 to MSG_ACCEPTED_MAX whole notices. */
		size_t sz = sizeof(struct msg_accepted);
		size_t n = msg_accepted_count(m);

		FUZZ_ASSERT((n != 0) ==
		    (m->m_len > 0 && m->m_len % sz == 0 &&
			m->m_len <= MSG_ACCEPTED_MAX * sz));
		FUZZ_ASSERT(n == 0 || n * sz == m->m_len);
		break;
	}
	case MSG_PLUSMARK:
		/* msg_plusmark_decode()'s conditions (it exits otherwise);
		 * what it takes, msg_plusmark_encode() rebuilds. */
		if (m->m_len == MSG_PLUSMARK_LEN &&
		    m->m_data[PUBKEY_LEN] <= 1) {
			uint8_t pk[PUBKEY_LEN], b[MSG_PLUSMARK_LEN];
			int	set = msg_plusmark_decode(m, pk);

			FUZZ_ASSERT(set == m->m_data[PUBKEY_LEN]);
			msg_plusmark_encode(b, pk, set);
			FUZZ_ASSERT(memcmp(b, m->m_data, sizeof(b)) == 0);
		}
		break;
	case MSG_CONTROL:
	case MSG_CONTROL_REPLY:
	case MSG_STATS:
		if (json_parse((const char *)m->m_data, m->m_len, &doc, err,
			sizeof(err)) != NULL)
			json_free(doc);
		break;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum msg_type types[] = { MSG_INGEST, MSG_ACCEPTED,
		MSG_CONTROL, MSG_CONTROL_REPLY, MSG_STATS, MSG_PLUSMARK };
	struct msg_hdr		   h;
	struct msg		   m;
	uint8_t			  *wrapped;
	char			   err[160];

	fuzz_init_log();
	err[0] = '\0';
	if (msg_check(data, size, &m, err, sizeof(err)) == -1) {
		FUZZ_ASSERT(strncmp(err, "malformed ", 10) == 0);
		FUZZ_ASSERT(m.m_data == NULL && m.m_len == 0 && m.m_nn == NULL);
	} else {
		FUZZ_ASSERT(size >= sizeof(h));
		FUZZ_ASSERT(m.m_data == data + sizeof(h));
		FUZZ_ASSERT(m.m_len == size - sizeof(h));
		FUZZ_ASSERT(strcmp(msg_type_name(m.m_type), "UNKNOWN") != 0);
		FUZZ_ASSERT(m.m_nn == NULL);
		payload(&m);
		msg_free(&m);
	}

	/* The same bytes as a payload, framed as msg_send() frames it. */
	if (size == 0 || size - 1 > MSG_MAX_PAYLOAD)
		return 0;
	memset(&h, 0, sizeof(h));
	h.mh_magic = MSG_MAGIC;
	h.mh_version = MSG_VERSION;
	h.mh_type =
	    (uint16_t)types[data[0] % (sizeof(types) / sizeof(types[0]))];
	h.mh_len = (uint32_t)(size - 1);
	h.mh_pid = 1;
	if ((wrapped = malloc(sizeof(h) + size - 1)) == NULL)
		abort();
	memcpy(wrapped, &h, sizeof(h));
	memcpy(wrapped + sizeof(h), data + 1, size - 1);
	FUZZ_ASSERT(msg_check(wrapped, sizeof(h) + size - 1, &m, err,
			sizeof(err)) == 0);
	FUZZ_ASSERT(m.m_type == (enum msg_type)h.mh_type && m.m_pid == 1 &&
	    m.m_len == size - 1);
	payload(&m);
	free(wrapped);
	return 0;
}
