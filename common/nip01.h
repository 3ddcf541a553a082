/*
 * nip01.h: the machine-readable prefixes of OK, CLOSED and NEG-ERR
 * messages that graspd's code acts on, named once for the relay that
 * writes them (relayd) and the client that reads them (conn.c).
 */
#ifndef GRASPD_NIP01_H
#define GRASPD_NIP01_H

/* nips.md 1.8 (NIP-01): "slow down", a rate limit was hit. */
#define NIP01_RATE_LIMITED  "rate-limited:"
/* nips.md 1.8 (NIP-42): refused until the client authenticates. */
#define NIP01_AUTH_REQUIRED "auth-required:"

#endif
