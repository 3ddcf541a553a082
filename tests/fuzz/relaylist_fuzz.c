/*
 * relaylist_fuzz.c: libFuzzer harness for reading a NIP-65 relay list
 * (kind 10002), as discoveryd and syncd will read a participant's
 * mailboxes: the event is parsed (common/event.c) and every "r" tag value
 * goes through common/relayurl.c with and without flags.  The list parser
 * itself comes later; until then this harness stands in for it with the
 * same two calls.  The kind is not checked, so any event's r tags count.
 *
 * Invariants: the parsed event passes fuzz_check_event() (event_check.h),
 * every r value passes fuzz_check_url() (relayurl_check.h), and merging
 * the accepted keys as NIP-65 reads them ("read", "write" or no marker
 * for both; another marker is not a mailbox) gives each key once.
 */
#include "event_check.h"
#include "relayurl_check.h"

struct mailbox {
	char	key[RELAYURL_MAX + 1];
	int	read, write;
};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct event		*ev;
	struct mailbox		*mb = NULL;
	const struct estr	*v, *mark;
	char			 key[RELAYURL_MAX + 1], err[256];
	size_t			 nmb = 0, j;
	uint32_t		 i;
	int			 rd, wr;

	fuzz_init_log();
	if ((ev = event_parse((const char *)data, size, err,
	    sizeof(err))) == NULL)
		return 0;
	fuzz_check_event(ev);
	for (i = 0; i < ev->ntags; i++) {
		if (ev->tags[i].n < 2 || ev->tags[i].v[0].len != 1 ||
		    ev->tags[i].v[0].s[0] != 'r')
			continue;
		v = &ev->tags[i].v[1];
		if (!fuzz_check_url(v->s, v->len))
			continue;
		FUZZ_ASSERT(relayurl_canon(v->s, v->len, 0, key, sizeof(key),
		    NULL) == 0);
		mark = ev->tags[i].n >= 3 ? &ev->tags[i].v[2] : NULL;
		rd = mark == NULL || strcmp(mark->s, "read") == 0;
		wr = mark == NULL || strcmp(mark->s, "write") == 0;
		if (mark && mark->len != strlen(mark->s))
			rd = wr = 0;
		if (!rd && !wr)
			continue;
		for (j = 0; j < nmb; j++)
			if (strcmp(mb[j].key, key) == 0)
				break;
		if (j == nmb) {
			if ((mb = realloc(mb, (nmb + 1) * sizeof(*mb))) == NULL)
				abort();
			memset(&mb[nmb], 0, sizeof(*mb));
			memcpy(mb[nmb].key, key, sizeof(key));
			nmb++;
		}
		mb[j].read |= rd;
		mb[j].write |= wr;
	}
	for (j = 0; j < nmb; j++) {
		FUZZ_ASSERT(mb[j].read || mb[j].write);
		for (size_t k = j + 1; k < nmb; k++)
			FUZZ_ASSERT(strcmp(mb[j].key, mb[k].key) != 0);
	}
	free(mb);
	event_destroy(ev);
	return 0;
}
