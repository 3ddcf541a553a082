/*
 * wswatch_fuzz.c: libFuzzer harness for common/wswatch.c, the frame
 * watcher relayd runs over every byte its clients send.  The input's
 * first byte picks the read sizes (a client's bytes come in any split)
 * and whether the watcher starts upgraded; the rest is the stream.
 * Invariants: the state after the stream fed in pieces is the state
 * after it fed whole (a split cannot hide a frame or invent one); an
 * unmasked frame is reported at most once; a frame in progress has a
 * start time and none does not.
 */
#include "fuzz.h"
#include "wswatch.h"

/* The state a split must not change. */
static int
same(const struct wswatch *a, const struct wswatch *b)
{
	return a->ww_state == b->ww_state && a->ww_left == b->ww_left &&
	    a->ww_need == b->ww_need && a->ww_crlf == b->ww_crlf &&
	    a->ww_unmasked == b->ww_unmasked && a->ww_masked == b->ww_masked &&
	    (a->ww_frame_at != 0) == (b->ww_frame_at != 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wswatch whole = WSWATCH_INIT, split = WSWATCH_INIT;
	size_t	       step, i, n;
	int	       rwhole, rsplit = 0;

	if (size < 1)
		return 0;
	step = (size_t)(data[0] & 0x3f) + 1;
	if (data[0] & 0x80) {
		wswatch_upgraded(&whole);
		wswatch_upgraded(&split);
	}
	data++, size--;
	rwhole = wswatch_feed(&whole, data, size, 1);
	for (i = 0; i < size; i += n) {
		n = size - i < step ? size - i : step;
		rsplit += wswatch_feed(&split, data + i, n, 1);
		/* Past a frame's first byte, it has a start time. */
		FUZZ_ASSERT(split.ww_state == 0 || split.ww_frame_at != 0);
	}
	FUZZ_ASSERT(same(&whole, &split));
	FUZZ_ASSERT(rwhole == rsplit && rwhole <= 1);
	FUZZ_ASSERT(rwhole == 0 || (whole.ww_upgraded && whole.ww_unmasked));
	return 0;
}
