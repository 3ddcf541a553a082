/*
 * nip19.h: NIP-19 bech32 keys (npub, nsec) and the key spellings that
 * graspd accepts wherever an operator writes a key.
 *
 * Decoding handles 32-byte payloads only (npub, nsec, note); nevent and
 * naddr are encoded (the web pages show them), not decoded.  Bech32 is BIP-173 (not bech32m).  Used by
 * common/config.c and by any role that prints or reads keys.
 */
#ifndef GRASPD_NIP19_H
#define GRASPD_NIP19_H

#include <stddef.h>
#include <stdint.h>

#include "nip01.h"

/* BIP-173: a bech32 string is at most 90 characters. */
#define NIP19_MAX_LEN	90
/* "npub1" or "nsec1", 52 data characters, 6 checksum characters, NUL. */
#define NIP19_KEY_BUFSZ 64

/*
 * Decodes the bech32 string s, whose human-readable part must be hrp
 * (lowercase, e.g. "npub"), into the 32 bytes at out.  s may be all
 * lowercase or all uppercase, never mixed (BIP-173).  Returns 0, or -1
 * if s is not valid bech32, has another hrp, a bad checksum, non-zero
 * padding, or a payload that is not 32 bytes; out is then unspecified.
 */
int nip19_decode(const char *s, const char *hrp, uint8_t out[32]);

/*
 * Writes the lowercase bech32 encoding of the 32 bytes at in, with human
 * readable part hrp, as a NUL-terminated string into out (outlen bytes;
 * NIP19_KEY_BUFSZ is enough for npub and nsec).  Returns 0, or -1 if hrp
 * is empty or not lowercase printable ASCII, or out is too small.
 */
int nip19_encode(const char *hrp, const uint8_t in[32], char *out,
    size_t outlen);

/*
 * NIP-19 TLV types of the shareable identifiers (nevent, naddr), and the
 * most bytes graspd puts in one: the spec sets no limit beyond a TLV's
 * 255-byte value.
 */
#define NIP19_TLV_SPECIAL 0
#define NIP19_TLV_RELAY	  1
#define NIP19_TLV_AUTHOR  2
#define NIP19_TLV_KIND	  3
#define NIP19_TLV_MAX	  600
/* Ours: room for the bech32 form of NIP19_TLV_MAX bytes (8/5 of them). */
#define NIP19_TLV_BUFSZ	  1000

/*
 * Writes the lowercase bech32 encoding of len bytes at in, with human
 * readable part hrp, NUL-terminated, into out (outlen bytes).  Unlike
 * nip19_encode(), any length: NIP-19's TLV forms exceed BIP-173's 90
 * characters.  Returns 0, or -1 if hrp is bad or out too small.
 */
int nip19_encode_bytes(const char *hrp, const uint8_t *in, size_t len,
    char *out, size_t outlen);

/*
 * NIP-19 nevent of the event id, with relay (NULL or "": none), author
 * (NULL: none) and kind (-1: none), TLVs in nostr-tools' order, into out
 * (NIP19_TLV_BUFSZ is enough).  0, or -1 if it does not fit.
 */
int nip19_nevent(const uint8_t id[EVENT_ID_LEN], const char *relay,
    const uint8_t author[PUBKEY_LEN], long kind, char *out, size_t outlen);

/* NIP-19 naddr of (kind, pubkey, d) with relay (NULL: none); as above. */
int nip19_naddr(long kind, const uint8_t pubkey[PUBKEY_LEN], const char *d,
    const char *relay, char *out, size_t outlen);

/*
 * Parses a public key written as an npub or as 64 lowercase hex digits
 * (the Nostr wire form).  Returns 0, or -1 if s is neither.
 */
int key_parse_pubkey(const char *s, uint8_t out[PUBKEY_LEN]);

/*
 * Parses a secret key written as an nsec or as 64 hex digits (either
 * case).  The key must also be a valid secp256k1 secret key: not zero and
 * below the group order.  Returns 0, or -1 (out is then zeroed).
 */
int key_parse_seckey(const char *s, uint8_t out[SECKEY_LEN]);

/* Returns 1 if the 32 bytes are a valid secp256k1 secret key, else 0. */
int key_seckey_valid(const uint8_t sk[SECKEY_LEN]);

#endif
