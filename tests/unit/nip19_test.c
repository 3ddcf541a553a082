/*
 * nip19_test.c: bech32 npub/nsec and the operator key spellings
 * (common/nip19.c).
 */
#include <stdint.h>
#include <string.h>

#include "nip01.h"
#include "nip19.h"
#include "t.h"

/*
 * NIP-19's published examples.  The nsec's key ends in ...ffa (as in
 * NIP-19 itself and every implementation), not ...ffe.
 */
#define NPUB "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg"
#define NPUB_HEX \
	"7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e"
#define NSEC "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5"
#define NSEC_HEX \
	"67dea2ed018072d675f5415ecfaed7d2597555e202d85b3d65ea4e58d2d92ffa"

static void
hex_of(const uint8_t *b, char out[65])
{
	static const char d[] = "0123456789abcdef";
	int		  i;

	for (i = 0; i < 32; i++) {
		out[2 * i] = d[b[i] >> 4];
		out[2 * i + 1] = d[b[i] & 15];
	}
	out[64] = '\0';
}

static void
upper(char *s)
{
	for (; *s; s++)
		if (*s >= 'a' && *s <= 'z')
			*s -= 'a' - 'A';
}

static void
decode_npub_example(void)
{
	uint8_t k[32];
	char	hex[65];

	T_EQ_INT(nip19_decode(NPUB, "npub", k), 0);
	hex_of(k, hex);
	T_EQ_STR(hex, NPUB_HEX);
}

static void
decode_nsec_example(void)
{
	uint8_t k[32];
	char	hex[65];

	T_EQ_INT(nip19_decode(NSEC, "nsec", k), 0);
	hex_of(k, hex);
	T_EQ_STR(hex, NSEC_HEX);
}

static void
encode_round_trips_examples(void)
{
	uint8_t k[32];
	char	s[NIP19_KEY_BUFSZ];

	T_EQ_INT(key_parse_pubkey(NPUB_HEX, k), 0);
	T_EQ_INT(nip19_encode("npub", k, s, sizeof(s)), 0);
	T_EQ_STR(s, NPUB);
	T_EQ_INT(key_parse_seckey(NSEC_HEX, k), 0);
	T_EQ_INT(nip19_encode("nsec", k, s, sizeof(s)), 0);
	T_EQ_STR(s, NSEC);
	T_EQ_INT((int)strlen(s), NIP19_KEY_BUFSZ - 1);
}

static void
encode_refuses_small_buffer_and_bad_hrp(void)
{
	uint8_t k[32] = { 1 };
	char	s[NIP19_KEY_BUFSZ];

	T_EQ_INT(nip19_encode("npub", k, s, NIP19_KEY_BUFSZ - 1), -1);
	T_EQ_INT(nip19_encode("NPUB", k, s, sizeof(s)), -1);
	T_EQ_INT(nip19_encode("", k, s, sizeof(s)), -1);
	T_EQ_INT(nip19_encode("n pub", k, s, sizeof(s)), -1);
}

static void
bad_checksum_is_refused(void)
{
	uint8_t k[32];
	char	s[] = NPUB;

	s[sizeof(s) - 2] = 'h';
	T_EQ_INT(nip19_decode(s, "npub", k), -1);
	/* A substitution in the middle of the data part. */
	strcpy(s, NPUB);
	s[20] = s[20] == 'q' ? 'p' : 'q';
	T_EQ_INT(nip19_decode(s, "npub", k), -1);
}

static void
wrong_hrp_is_refused(void)
{
	uint8_t k[32];

	T_EQ_INT(nip19_decode(NPUB, "nsec", k), -1);
	T_EQ_INT(nip19_decode(NSEC, "npub", k), -1);
	T_EQ_INT(nip19_decode(NPUB, "np", k), -1);
	/* Valid bech32 with hrp "nsec", but the payload is a public key. */
	T_EQ_INT(nip19_decode("nsec10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js"
			      "35mp4dma8qw6eqda",
		     "npub", k),
	    -1);
}

static void
uppercase_only_when_all_uppercase(void)
{
	uint8_t k[32];
	char	hex[65], s[] = NPUB;

	upper(s);
	T_EQ_INT(nip19_decode(s, "npub", k), 0);
	hex_of(k, hex);
	T_EQ_STR(hex, NPUB_HEX);
	/* One letter of the other case makes it mixed. */
	strcpy(s, NPUB);
	s[sizeof(s) - 2] = 'G';
	T_EQ_INT(nip19_decode(s, "npub", k), -1);
	strcpy(s, NPUB);
	s[0] = 'N';
	T_EQ_INT(nip19_decode(s, "npub", k), -1);
}

/* The case that owns each row of refused[] and parses[]. */
enum owner {
	BAD_LENGTH,
	BAD_PADDING,
	BAD_JUNK,
	KEY_PUB,
	KEY_SEC,
	KEY_GROUP
};

/* Strings nip19_decode(s, "npub", k) must refuse. */
static const struct {
	enum owner  why;
	const char *s;
} refused[] = {
	/* 33- and 31-byte payloads with valid checksums. */
	{ BAD_LENGTH,
	    "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js"
	    "35mp4dma8qzvjptfp" },
	{ BAD_LENGTH,
	    "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js"
	    "35mp4dmup82t8f" },
	/* 32 bytes and an extra, zero 5-bit group: too much padding. */
	{ BAD_LENGTH,
	    "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js"
	    "35mp4dma8qqlhqg6v" },
	{ BAD_LENGTH, "npub1" },
	{ BAD_LENGTH, "" },
	{ BAD_LENGTH, "npub1qqqqqq" },
	{ BAD_PADDING,
	    "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js"
	    "35mp4dma8pl6x5k6" },
	{ BAD_JUNK,
	    "npub1 0elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038"
	    "js35mp4dma8qzvjptg" },
	/* 'b', 'i', 'o' and '1' are not in the data alphabet. */
	{ BAD_JUNK,
	    "npub1belfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js"
	    "35mp4dma8qzvjptg" },
	{ BAD_JUNK,
	    "npub0elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js"
	    "35mp4dma8qzvjptg" },
	{ BAD_JUNK,
	    "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js"
	    "35mp4dma8qzvjptgqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq" },
};

/* Checks that each of refused[]'s inputs owned by why is refused. */
static void
refuses(enum owner why)
{
	uint8_t k[32];
	char	msg[200];
	size_t	i, n = 0;

	for (i = 0; i < T_NCASES(refused); i++) {
		if (refused[i].why != why)
			continue;
		n++;
		if (nip19_decode(refused[i].s, "npub", k) != -1) {
			snprintf(msg, sizeof(msg), "accepted \"%s\"",
			    refused[i].s);
			t_fail_at(__FILE__, __LINE__, msg);
		}
	}
	T_CHECK(n > 0);
}

static void
wrong_length_is_refused(void)
{
	refuses(BAD_LENGTH);
}

static void
nonzero_padding_is_refused(void)
{
	refuses(BAD_PADDING);
}

static void
junk_is_refused(void)
{
	refuses(BAD_JUNK);
}

/*
 * Parses bech and hex with parse: 0 if both give the same key, 1 if bech
 * is refused, 2 if hex is, 3 if the keys differ.
 */
static int
spellings_agree(int (*parse)(const char *, uint8_t *), const char *bech,
    const char *hex)
{
	uint8_t a[32], b[32];

	if (parse(bech, a) != 0)
		return 1;
	if (parse(hex, b) != 0)
		return 2;
	return memcmp(a, b, 32) == 0 ? 0 : 3;
}

/* What key_parse_pubkey() or key_parse_seckey() returns for s. */
static const struct {
	enum owner why;
	int (*parse)(const char *, uint8_t *);
	const char *s;
	int	    want;
} parses[] = {
	{ KEY_PUB, key_parse_pubkey, NSEC, -1 },
	{ KEY_PUB, key_parse_pubkey, NPUB_HEX "00", -1 },
	{ KEY_PUB, key_parse_pubkey, "7e7e", -1 },
	{ KEY_PUB, key_parse_pubkey, "", -1 },
	{ KEY_SEC, key_parse_seckey, NPUB, -1 },
	{ KEY_SEC, key_parse_seckey, "nope", -1 },
	{ KEY_GROUP, key_parse_seckey,
	    "00000000000000000000000000000000"
	    "00000000000000000000000000000000",
	    -1 },
	{ KEY_GROUP, key_parse_seckey,
	    "nsec1qqqqqqqqqqqqqqqqqqqqqqqqqq"
	    "qqqqqqqqqqqqqqqqqqqqqqqqqqwkhnav",
	    -1 },
	/* The group order itself, and order - 1, the largest valid key. */
	{ KEY_GROUP, key_parse_seckey,
	    "fffffffffffffffffffffffffffffffe"
	    "baaedce6af48a03bbfd25e8cd0364141",
	    -1 },
	{ KEY_GROUP, key_parse_seckey,
	    "nsec1lllllllllllllllllllllllll6"
	    "a2ah8x4ay2qwal6f0ge5pkg9qstu3zum",
	    -1 },
	{ KEY_GROUP, key_parse_seckey,
	    "fffffffffffffffffffffffffffffffe"
	    "baaedce6af48a03bbfd25e8cd0364140",
	    0 },
	{ KEY_GROUP, key_parse_seckey,
	    "00000000000000000000000000000000"
	    "00000000000000000000000000000001",
	    0 },
};

/* Checks each of parses[]'s rows owned by why. */
static void
parses_as_listed(enum owner why)
{
	uint8_t k[32];
	char	msg[200];
	size_t	i, n = 0;
	int	got;

	for (i = 0; i < T_NCASES(parses); i++) {
		if (parses[i].why != why)
			continue;
		n++;
		if ((got = parses[i].parse(parses[i].s, k)) != parses[i].want) {
			snprintf(msg, sizeof(msg), "\"%s\": want %d, got %d",
			    parses[i].s, parses[i].want, got);
			t_fail_at(__FILE__, __LINE__, msg);
		}
	}
	T_CHECK(n > 0);
}

static void
pubkey_accepts_npub_and_lowercase_hex(void)
{
	uint8_t b[32];
	char	up[] = NPUB_HEX;

	T_EQ_INT(spellings_agree(key_parse_pubkey, NPUB, NPUB_HEX), 0);
	upper(up);
	T_EQ_INT(key_parse_pubkey(up, b), -1);
	parses_as_listed(KEY_PUB);
}

static void
seckey_accepts_nsec_and_hex_of_either_case(void)
{
	char up[] = NSEC_HEX;

	T_EQ_INT(spellings_agree(key_parse_seckey, NSEC, NSEC_HEX), 0);
	upper(up);
	T_EQ_INT(spellings_agree(key_parse_seckey, NSEC, up), 0);
	parses_as_listed(KEY_SEC);
}

static void
seckey_outside_the_group_is_refused(void)
{
	parses_as_listed(KEY_GROUP);
}

/* nostr-tools 2's neventEncode and naddrEncode give the same strings. */
static void
nevent_and_naddr_match_nostr_tools(void)
{
	uint8_t id[EVENT_ID_LEN], pk[PUBKEY_LEN];
	char	out[NIP19_TLV_BUFSZ];

	memset(id, 0xaa, EVENT_ID_LEN);
	memset(pk, 0xbb, PUBKEY_LEN);
	T_EQ_INT(
	    nip19_nevent(id, "wss://relay.example", pk, 1621, out, sizeof(out)),
	    0);
	T_EQ_STR(out,
	    "nevent1qvzqqqqx25pzpwamhwamhwamhwamhwamhwamhwamhwamhwamhwamhwam"
	    "hwamhwamqyfhwumn8ghj7un9d3shjtn90psk6urvv5qzp2424242424242424242"
	    "42424242424242424242424242424242e8ruke");
	T_EQ_INT(nip19_naddr(30617, pk, "my-repo", "wss://relay.example", out,
		     sizeof(out)),
	    0);
	T_EQ_STR(out,
	    "naddr1qvzqqqrhnypzpwamhwamhwamhwamhwamhwamhwamhwamhwamhwamhwamh"
	    "wamhwamqyfhwumn8ghj7un9d3shjtn90psk6urvv5qqwmte94ex2ur0m0cxv4");
	/* Too small a buffer, and a relay over a TLV's 255 bytes. */
	T_EQ_INT(nip19_nevent(id, NULL, NULL, -1, out, 20), -1);
	memset(out, 'r', 300);
	out[300] = '\0';
	T_EQ_INT(nip19_naddr(30617, pk, "d", out, out + 400, 500), -1);
}

static const struct t_case cases[] = {
	T_CASE(decode_npub_example),
	T_CASE(decode_nsec_example),
	T_CASE(encode_round_trips_examples),
	T_CASE(encode_refuses_small_buffer_and_bad_hrp),
	T_CASE(bad_checksum_is_refused),
	T_CASE(wrong_hrp_is_refused),
	T_CASE(uppercase_only_when_all_uppercase),
	T_CASE(wrong_length_is_refused),
	T_CASE(nonzero_padding_is_refused),
	T_CASE(junk_is_refused),
	T_CASE(pubkey_accepts_npub_and_lowercase_hex),
	T_CASE(seckey_accepts_nsec_and_hex_of_either_case),
	T_CASE(seckey_outside_the_group_is_refused),
	T_CASE(nevent_and_naddr_match_nostr_tools),
};

T_MAIN(cases)
