/*
 * pktline_test.c: git's pkt-line command section as relayd reads it
 * before authorising a push, and the object-name check the roles share.
 */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "pktline.h"
#include "t.h"

#define OID_A "0123456789abcdef0123456789abcdef01234567"
#define OID_B "89abcdef0123456789abcdef0123456789abcdef"

/* One pkt-line of payload s: its four-hex-digit length, then s. */
static void
pkt(struct buf *b, const char *s, size_t len)
{
	buf_printf(b, "%04zx", len + GIT_PKT_LEN);
	buf_add(b, s, len);
}

static void
test_object_names_are_forty_lowercase_hex_digits(void)
{
	T_CHECK(pkt_is_oid(OID_A, strlen(OID_A)));
	/* The length counts, not a NUL: a longer buffer's prefix is fine. */
	T_CHECK(pkt_is_oid(OID_A "trailing", GIT_OID_HEX));
	T_CHECK(!pkt_is_oid(OID_A, GIT_OID_HEX - 1));
	T_CHECK(!pkt_is_oid(OID_A "0", GIT_OID_HEX + 1));
	T_CHECK(!pkt_is_oid("0123456789ABCDEF0123456789abcdef01234567",
	    GIT_OID_HEX));
	T_CHECK(!pkt_is_oid("0123456789abcdeg0123456789abcdef01234567",
	    GIT_OID_HEX));
	T_CHECK(!pkt_is_oid("", 0));
	T_CHECK(pkt_hexval('7') == 7 && pkt_hexval('f') == 15 &&
	    pkt_hexval('F') == 15 && pkt_hexval('g') == -1);
}

static void
test_command_section_reads_updates_then_flush(void)
{
	struct buf	  b = BUF_INIT;
	struct pkt_update u;
	char		  line[256], err[128];
	size_t		  off = 0;
	int		  sb = -1, n;

	n = snprintf(line, sizeof(line),
	    "%s %s refs/heads/main%creport-status"
	    " side-band-64k",
	    OID_A, OID_B, '\0');
	/* n counts the bytes after the NUL too. */
	pkt(&b, line, (size_t)n);
	n = snprintf(line, sizeof(line), "%s %s refs/heads/dev", OID_B, OID_A);
	pkt(&b, line, (size_t)n);
	buf_adds(&b, "0000");

	/* Every prefix short of a whole line asks for more, unmoved. */
	T_EQ_INT(pkt_command(b.b_data, 3, &off, &u, &sb, err, sizeof(err)),
	    PKT_MORE);
	T_EQ_INT((int)off, 0);
	T_EQ_INT(
	    pkt_command(b.b_data, b.b_len, &off, &u, &sb, err, sizeof(err)),
	    PKT_UPDATE);
	T_EQ_STR(u.pu_old, OID_A);
	T_EQ_STR(u.pu_new, OID_B);
	T_CHECK(u.pu_reflen == strlen("refs/heads/main") &&
	    memcmp(u.pu_ref, "refs/heads/main", u.pu_reflen) == 0);
	T_EQ_INT(sb, 1);
	T_EQ_INT(
	    pkt_command(b.b_data, b.b_len, &off, &u, &sb, err, sizeof(err)),
	    PKT_UPDATE);
	T_CHECK(u.pu_reflen == strlen("refs/heads/dev") &&
	    memcmp(u.pu_ref, "refs/heads/dev", u.pu_reflen) == 0);
	T_EQ_INT(sb, 1);
	T_EQ_INT(
	    pkt_command(b.b_data, b.b_len, &off, &u, &sb, err, sizeof(err)),
	    PKT_FLUSH);
	T_EQ_INT((int)off, (int)b.b_len);
	buf_free(&b);
}

static void
test_malformed_lines_are_errors_and_do_not_move(void)
{
	static const char *bad[] = {
		/* not hex in an object name */
		"0123456789abcdef0123456789abcdef0123456z " OID_B " refs/x",
		/* one space missing */
		OID_A OID_B " refs/heads/main",
		/* no ref */
		OID_A " " OID_B " ",
	};
	struct buf	  b = BUF_INIT;
	struct pkt_update u;
	char		  err[128];
	size_t		  i, off;
	int		  sb = 0;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		buf_reset(&b);
		pkt(&b, bad[i], strlen(bad[i]));
		off = 0;
		err[0] = '\0';
		T_EQ_INT(pkt_command(b.b_data, b.b_len, &off, &u, &sb, err,
			     sizeof(err)),
		    PKT_ERROR);
		T_EQ_INT((int)off, 0);
		T_CHECK(err[0] != '\0');
	}
	/* A length prefix that is not hex. */
	off = 0;
	T_EQ_INT(pkt_command("00zz", 4, &off, &u, &sb, err, sizeof(err)),
	    PKT_ERROR);
	buf_free(&b);
}

static void
test_capabilities_are_whole_words(void)
{
	const char *caps = "report-status side-band-64k ofs-delta";

	T_CHECK(pkt_has_cap(caps, strlen(caps), "side-band-64k"));
	T_CHECK(pkt_has_cap(caps, strlen(caps), "ofs-delta"));
	T_CHECK(!pkt_has_cap(caps, strlen(caps), "side-band"));
	T_CHECK(!pkt_has_cap(caps, strlen(caps), "report"));
}

static const struct t_case cases[] = {
	T_CASE(test_object_names_are_forty_lowercase_hex_digits),
	T_CASE(test_command_section_reads_updates_then_flush),
	T_CASE(test_malformed_lines_are_errors_and_do_not_move),
	T_CASE(test_capabilities_are_whole_words),
};

T_MAIN(cases)
