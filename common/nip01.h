/*
 * nip01.h: the sizes of NIP-01's ids, keys and signatures, and the
 * machine-readable prefixes of OK, CLOSED and NEG-ERR messages that
 * graspd's code acts on, named once for the relay that writes them
 * (relayd) and the client that reads them (conn.c).
 */
#ifndef GRASPD_NIP01_H
#define GRASPD_NIP01_H

/*
 * NIP-01: an event id is the SHA-256 of the event's serialisation, a key
 * is a secp256k1 key (x-only when public), a signature a BIP-340 Schnorr
 * signature; in JSON, ids and keys are lowercase hex (the _HEX_LEN
 * digits, without a NUL).
 */
#define EVENT_ID_LEN	 32
#define EVENT_ID_HEX_LEN 64
#define PUBKEY_LEN	 32
#define PUBKEY_HEX_LEN	 64
#define SECKEY_LEN	 32
#define EVENT_SIG_LEN	 64

/* nips.md 1.8 (NIP-01): "slow down", a rate limit was hit. */
#define NIP01_RATE_LIMITED  "rate-limited:"
/* nips.md 1.8 (NIP-42): refused until the client authenticates. */
#define NIP01_AUTH_REQUIRED "auth-required:"

#endif
