/*
 * nip19.c: bech32 (BIP-173) npub/nsec encoding and the operator key
 * spellings (see nip19.h).  Linked into every process through libcommon;
 * config.c is its main user.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "nip01.h"
#include "nip19.h"

/* BIP-173: the data alphabet, and the checksum length in characters. */
static const char bech32_charset[] = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";
#define BECH32_CHECKSUM_LEN 6

/* secp256k1 group order n, big-endian (SEC 2, section 2.4.1). */
/* clang-format off */
static const uint8_t secp256k1_order[32] = {
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,
	0xba, 0xae, 0xdc, 0xe6, 0xaf, 0x48, 0xa0, 0x3b,
	0xbf, 0xd2, 0x5e, 0x8c, 0xd0, 0x36, 0x41, 0x41,
};
/* clang-format on */

/* One step of the BIP-173 checksum: feeds the 5-bit value v into chk. */
static uint32_t
bech32_step(uint32_t chk, uint8_t v)
{
	/* The BCH generator polynomial's coefficients, from BIP-173. */
	static const uint32_t gen[5] = { 0x3b6a57b2, 0x26508e6d, 0x1ea119fa,
		0x3d4233dd, 0x2a1462b3 };
	uint32_t	      top = chk >> 25;
	int		      i;

	chk = ((chk & 0x1ffffff) << 5) ^ v;
	for (i = 0; i < 5; i++)
		if ((top >> i) & 1)
			chk ^= gen[i];
	return chk;
}

/* The checksum state after the expanded human-readable part. */
static uint32_t
bech32_hrp_chk(const char *hrp, size_t len)
{
	uint32_t chk = 1;
	size_t	 i;

	for (i = 0; i < len; i++)
		chk = bech32_step(chk, (uint8_t)hrp[i] >> 5);
	chk = bech32_step(chk, 0);
	for (i = 0; i < len; i++)
		chk = bech32_step(chk, (uint8_t)hrp[i] & 31);
	return chk;
}

static int
lower(int c)
{
	return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c;
}

static int
bech32_value(int c)
{
	const char *p;

	if (c == '\0')
		return -1;
	p = strchr(bech32_charset, lower(c));
	return p ? (int)(p - bech32_charset) : -1;
}

int
nip19_decode(const char *s, const char *hrp, uint8_t out[32])
{
	size_t	 len, hrplen, sep, i, nout = 0;
	uint32_t chk, acc = 0;
	int	 has_lower = 0, has_upper = 0, bits = 0, v;

	len = strlen(s);
	hrplen = strlen(hrp);
	if (len > NIP19_MAX_LEN || hrplen == 0)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < 33 || s[i] > 126)
			return -1;
		if (s[i] >= 'a' && s[i] <= 'z')
			has_lower = 1;
		if (s[i] >= 'A' && s[i] <= 'Z')
			has_upper = 1;
	}
	if (has_lower && has_upper)
		return -1;
	/* The separator is the last '1'; the hrp itself may contain '1's. */
	for (sep = len; sep > 0 && s[sep - 1] != '1'; sep--)
		;
	if (sep == 0)
		return -1;
	sep--;
	if (sep != hrplen || len - sep - 1 < BECH32_CHECKSUM_LEN)
		return -1;

	for (i = 0; i < hrplen; i++)
		if (lower(s[i]) != hrp[i])
			return -1;
	chk = bech32_hrp_chk(hrp, hrplen);

	for (i = sep + 1; i < len; i++) {
		if ((v = bech32_value(s[i])) < 0)
			return -1;
		chk = bech32_step(chk, (uint8_t)v);
		if (i >= len - BECH32_CHECKSUM_LEN)
			continue;
		/* Regroup 5-bit values into bytes, without padding. */
		acc = (acc << 5) | (uint32_t)v;
		bits += 5;
		if (bits >= 8) {
			bits -= 8;
			if (nout == 32)
				return -1;
			out[nout++] = (acc >> bits) & 0xff;
		}
	}
	if (chk != 1)
		return -1;
	/* BIP-173: at most 4 padding bits, all zero. */
	if (bits >= 5 || (acc & ((1u << bits) - 1)) != 0)
		return -1;
	return nout == 32 ? 0 : -1;
}

int
nip19_encode(const char *hrp, const uint8_t in[32], char *out, size_t outlen)
{
	/* 32 bytes are 256 bits: 52 groups of 5, the last one padded. */
	if (strlen(hrp) + 1 + 52 + BECH32_CHECKSUM_LEN > NIP19_MAX_LEN)
		return -1;
	return nip19_encode_bytes(hrp, in, 32, out, outlen);
}

int
nip19_encode_bytes(const char *hrp, const uint8_t *in, size_t len, char *out,
    size_t outlen)
{
	size_t	 hrplen, i, n = 0;
	uint32_t chk, acc = 0;
	uint8_t	 v;
	int	 bits = 0;

	hrplen = strlen(hrp);
	if (hrplen == 0 ||
	    outlen < hrplen + 1 + (len * 8 + 4) / 5 + BECH32_CHECKSUM_LEN + 1)
		return -1;
	for (i = 0; i < hrplen; i++)
		if (hrp[i] < 33 || hrp[i] > 126 ||
		    (hrp[i] >= 'A' && hrp[i] <= 'Z'))
			return -1;
	memcpy(out, hrp, hrplen);
	n = hrplen;
	out[n++] = '1';
	chk = bech32_hrp_chk(hrp, hrplen);
	for (i = 0; i < len; i++) {
		acc = (acc << 8) | in[i];
		bits += 8;
		while (bits >= 5) {
			bits -= 5;
			v = (acc >> bits) & 31;
			chk = bech32_step(chk, v);
			out[n++] = bech32_charset[v];
		}
	}
	if (bits > 0) {
		v = (acc << (5 - bits)) & 31;
		chk = bech32_step(chk, v);
		out[n++] = bech32_charset[v];
	}
	for (i = 0; i < BECH32_CHECKSUM_LEN; i++)
		chk = bech32_step(chk, 0);
	chk ^= 1;
	for (i = 0; i < BECH32_CHECKSUM_LEN; i++)
		out[n++] = bech32_charset[(chk >> (5 * (5 - i))) & 31];
	out[n] = '\0';
	return 0;
}

/* Appends the NIP-19 TLV (t, len bytes of v) at *n in p; -1 if no room. */
static int
tlv_add(uint8_t *p, size_t cap, size_t *n, uint8_t t, const void *v, size_t len)
{
	if (len > 255 || *n + 2 + len > cap)
		return -1;
	p[(*n)++] = t;
	p[(*n)++] = (uint8_t)len;
	memcpy(p + *n, v, len);
	*n += len;
	return 0;
}

/* The TLVs nostr-tools writes, in its order: kind, author, relay, special. */
static int
tlv_encode(const char *hrp, const void *special, size_t slen, const char *relay,
    const uint8_t *author, long kind, char *out, size_t outlen)
{
	uint8_t p[NIP19_TLV_MAX], k[4];
	size_t	n = 0;

	if (kind >= 0) {
		k[0] = (uint8_t)(kind >> 24);
		k[1] = (uint8_t)(kind >> 16);
		k[2] = (uint8_t)(kind >> 8);
		k[3] = (uint8_t)kind;
		if (tlv_add(p, sizeof(p), &n, NIP19_TLV_KIND, k, 4) == -1)
			return -1;
	}
	if (author != NULL &&
	    tlv_add(p, sizeof(p), &n, NIP19_TLV_AUTHOR, author, PUBKEY_LEN) ==
		-1)
		return -1;
	if (relay != NULL && *relay != '\0' &&
	    tlv_add(p, sizeof(p), &n, NIP19_TLV_RELAY, relay, strlen(relay)) ==
		-1)
		return -1;
	if (tlv_add(p, sizeof(p), &n, NIP19_TLV_SPECIAL, special, slen) == -1)
		return -1;
	return nip19_encode_bytes(hrp, p, n, out, outlen);
}

int
nip19_nevent(const uint8_t id[EVENT_ID_LEN], const char *relay,
    const uint8_t author[PUBKEY_LEN], long kind, char *out, size_t outlen)
{
	return tlv_encode("nevent", id, EVENT_ID_LEN, relay, author, kind, out,
	    outlen);
}

int
nip19_naddr(long kind, const uint8_t pubkey[PUBKEY_LEN], const char *d,
    const char *relay, char *out, size_t outlen)
{
	return tlv_encode("naddr", d, strlen(d), relay, pubkey, kind, out,
	    outlen);
}

static int
hexval(int c, int allow_upper)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (allow_upper && c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Parses exactly 64 hex digits into 32 bytes; -1 if s is anything else. */
static int
hex32(const char *s, uint8_t out[32], int allow_upper)
{
	int i, hi, lo;

	if (strlen(s) != 64)
		return -1;
	for (i = 0; i < 32; i++) {
		hi = hexval(s[2 * i], allow_upper);
		lo = hexval(s[2 * i + 1], allow_upper);
		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

int
key_parse_pubkey(const char *s, uint8_t out[PUBKEY_LEN])
{
	if (hex32(s, out, 0) == 0)
		return 0;
	return nip19_decode(s, "npub", out);
}

int
key_seckey_valid(const uint8_t sk[SECKEY_LEN])
{
	uint8_t any = 0;
	int	i;

	for (i = 0; i < 32; i++)
		any |= sk[i];
	if (any == 0)
		return 0;
	for (i = 0; i < 32; i++) {
		if (sk[i] != secp256k1_order[i])
			return sk[i] < secp256k1_order[i];
	}
	return 0;
}

int
key_parse_seckey(const char *s, uint8_t out[SECKEY_LEN])
{
	if ((hex32(s, out, 1) == 0 || nip19_decode(s, "nsec", out) == 0) &&
	    key_seckey_valid(out))
		return 0;
	memset(out, 0, 32);
	return -1;
}
