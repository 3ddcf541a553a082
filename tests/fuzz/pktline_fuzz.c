/*
 * pktline_fuzz.c: libFuzzer harness for common/pktline.c, the command
 * section of a receive-pack request that relayd reads from every push
 * before it runs git (relay_git.c's parse_commands()).
 *
 * The input is the request body.  It is read once whole, as relayd reads
 * a body that arrived in one piece, and once fed in two pieces split at a
 * point the first byte picks, as a slow client sends it.  Invariants: the
 * offset only moves forward, by the line's own length, never past the
 * bytes held; an incomplete line or an error leaves it unchanged; a ref
 * update has two 40-digit hex object names and a ref of at least one
 * byte without NUL inside the line; both readings give the same updates,
 * the same side-band answer and the same end (flush, error or waiting);
 * and each update written back as a pkt-line (a trailing newline, which
 * the reader drops once) reads as the same update.
 */
#include "fuzz.h"
#include "pktline.h"

/* Enough updates to compare the two readings; more are only parsed. */
#define MAX_KEEP 64

struct reading {
	struct pkt_update u[MAX_KEEP];
	size_t		  n;
	enum pkt_result	  last;
	int		  sideband;
};

static int
ishex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
			(s[i] >= 'a' && s[i] <= 'f') ||
			(s[i] >= 'A' && s[i] <= 'F')))
			return 0;
	return 1;
}

static void
check_update(const char *p, size_t before, size_t after,
    const struct pkt_update *u)
{
	FUZZ_ASSERT(
	    strlen(u->pu_old) == GIT_OID_HEX && ishex(u->pu_old, GIT_OID_HEX));
	FUZZ_ASSERT(
	    strlen(u->pu_new) == GIT_OID_HEX && ishex(u->pu_new, GIT_OID_HEX));
	FUZZ_ASSERT(u->pu_reflen >= 1);
	FUZZ_ASSERT(
	    u->pu_ref >= p + before + GIT_PKT_LEN + 2 * GIT_OID_HEX + 2 &&
	    u->pu_ref + u->pu_reflen <= p + after);
	FUZZ_ASSERT(memchr(u->pu_ref, '\0', u->pu_reflen) == NULL);
}

/*
 * Reads p[0..size) as it arrives in pieces: first split bytes, then the
 * rest.  Returns with r filled in.
 */
static void
read_body(const char *p, size_t size, size_t split, struct reading *r)
{
	struct pkt_update u;
	enum pkt_result	  res;
	size_t		  off = 0, before, have = split;
	char		  err[128];

	memset(r, 0, sizeof(*r));
	r->sideband = -1;
	for (;;) {
		before = off;
		err[0] = '\0';
		res = pkt_command(p, have, &off, &u, &r->sideband, err,
		    sizeof(err));
		switch (res) {
		case PKT_ERROR:
			FUZZ_ASSERT(off == before && err[0] != '\0');
			r->last = res;
			return;
		case PKT_MORE:
			FUZZ_ASSERT(off == before);
			if (have < size) {
				have = size;
				continue;
			}
			r->last = res;
			return;
		case PKT_FLUSH:
			FUZZ_ASSERT(off == before + GIT_PKT_LEN && off <= have);
			r->last = res;
			return;
		case PKT_SHALLOW:
			FUZZ_ASSERT(off > before + GIT_PKT_LEN && off <= have &&
			    off - before <= GIT_PKT_MAX);
			continue;
		case PKT_UPDATE:
			FUZZ_ASSERT(off > before + GIT_PKT_LEN && off <= have &&
			    off - before <= GIT_PKT_MAX);
			check_update(p, before, off, &u);
			if (r->n < MAX_KEEP)
				r->u[r->n] = u;
			r->n++;
			continue;
		}
		FUZZ_ASSERT(!"unknown pkt_command() result");
	}
}

/* Writes u back as a pkt-line and reads it again. */
static void
round_trip(const struct pkt_update *u)
{
	struct pkt_update v;
	char		 *line, err[128];
	size_t		  len, off = 0;
	int		  sb = -1;

	len = GIT_PKT_LEN + 2 * GIT_OID_HEX + 2 + u->pu_reflen + 1;
	if (len > GIT_PKT_MAX)
		return;
	if ((line = malloc(len + 1)) == NULL)
		abort();
	snprintf(line, len + 1, "%04zx%s %s %.*s\n", len, u->pu_old, u->pu_new,
	    (int)u->pu_reflen, u->pu_ref);
	FUZZ_ASSERT(pkt_command(line, len, &off, &v, &sb, err, sizeof(err)) ==
		PKT_UPDATE &&
	    off == len);
	FUZZ_ASSERT(strcmp(v.pu_old, u->pu_old) == 0 &&
	    strcmp(v.pu_new, u->pu_new) == 0);
	FUZZ_ASSERT(v.pu_reflen == u->pu_reflen &&
	    memcmp(v.pu_ref, u->pu_ref, u->pu_reflen) == 0);
	/* No capabilities, so the side-band answer is left alone. */
	FUZZ_ASSERT(sb == -1);
	free(line);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct reading whole, pieces;
	const char	     *p;
	char		     *copy;
	size_t		      i, split;

	fuzz_init_log();
	if (size == 0)
		return 0;
	split = data[0] % size;
	/* An exact-size copy, so ASan sees any read past the body. */
	if ((copy = malloc(size - 1 + 1)) == NULL)
		abort();
	memcpy(copy, data + 1, size - 1);
	p = copy;
	read_body(p, size - 1, size - 1, &whole);
	read_body(p, size - 1, split, &pieces);
	FUZZ_ASSERT(whole.last == pieces.last);
	FUZZ_ASSERT(whole.n == pieces.n);
	FUZZ_ASSERT(whole.sideband == pieces.sideband);
	for (i = 0; i < whole.n && i < MAX_KEEP; i++) {
		FUZZ_ASSERT(
		    strcmp(whole.u[i].pu_old, pieces.u[i].pu_old) == 0 &&
		    strcmp(whole.u[i].pu_new, pieces.u[i].pu_new) == 0 &&
		    whole.u[i].pu_ref == pieces.u[i].pu_ref &&
		    whole.u[i].pu_reflen == pieces.u[i].pu_reflen);
		round_trip(&whole.u[i]);
	}
	FUZZ_ASSERT(
	    pkt_has_cap("report-status side-band-64k", 27, "side-band-64k") &&
	    !pkt_has_cap("side-band-64", 12, "side-band-64k"));
	free(copy);
	return 0;
}
