/*
 * event_fuzz.c: libFuzzer harness for common/event.c: event_parse() and
 * event_from_json() on raw text, as relayd reads a client's EVENT and a
 * worker's ingested event.
 *
 * A refusal must say "invalid: ..." (it goes into an OK message).  An
 * accepted event must pass fuzz_check_event() (event_check.h): its
 * canonical JSON re-parses to the same fields and the same text, and its
 * computed id equals an independent NIP-01 serialization's hash.
 */
#include "event_check.h"
#include "json.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct event *ev;
	char	      err[256];

	fuzz_init_log();
	err[0] = '\0';
	ev = event_parse((const char *)data, size, err, sizeof(err));
	if (ev == NULL) {
		FUZZ_ASSERT(strncmp(err, "invalid: ", 9) == 0);
		return 0;
	}
	fuzz_check_event(ev);
	event_destroy(ev);
	return 0;
}
