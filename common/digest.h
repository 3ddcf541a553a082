/*
 * digest.h: the SHA-256 of event ids (NIP-01) and negentropy fingerprints
 * (NIP-77), and the SHA-1 of the websocket accept key (RFC 6455), from
 * OpenSSL's libcrypto.
 */
#ifndef GRASPD_DIGEST_H
#define GRASPD_DIGEST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define DIGEST_SHA256_LEN 32 /* FIPS 180-4 */
#define DIGEST_SHA1_LEN	  20 /* FIPS 180-4 */

/* out = SHA-256 of the n bytes at p.  Never fails. */
void digest_sha256(const void *p, size_t n, uint8_t out[DIGEST_SHA256_LEN]);
/* out = SHA-1 of the n bytes at p.  Never fails. */
/* SHA-256 of the n pieces of v, one after another. */
void digest_sha256v(const struct iovec *v, int n,
    uint8_t out[DIGEST_SHA256_LEN]);
void digest_sha1(const void *p, size_t n, uint8_t out[DIGEST_SHA1_LEN]);

#endif
