/*
 * digest.c: SHA-256 and SHA-1 (see digest.h).
 *
 * OpenSSL 3's one-shot SHA256() and SHA1() go through EVP: the first call
 * reads the system's openssl.cnf and loads the default provider, which
 * brings about 1.8 MB of the library's pages into each process that
 * hashes, and every call then allocates and frees a digest context.  The
 * SHA256_Init() family runs the same assembly directly, with the context
 * on the stack; OpenSSL 3 keeps it, marked deprecated, so this file asks
 * for the 1.1.1 API, in which it is not.
 */
#define OPENSSL_API_COMPAT 10101

#include <openssl/sha.h>

#include "digest.h"

void
digest_sha256(const void *p, size_t n, uint8_t out[DIGEST_SHA256_LEN])
{
	SHA256_CTX c;

	SHA256_Init(&c);
	SHA256_Update(&c, p, n);
	SHA256_Final(out, &c);
}

void
digest_sha256v(const struct iovec *v, int n, uint8_t out[DIGEST_SHA256_LEN])
{
	SHA256_CTX c;
	int	   i;

	SHA256_Init(&c);
	for (i = 0; i < n; i++)
		SHA256_Update(&c, v[i].iov_base, v[i].iov_len);
	SHA256_Final(out, &c);
}

void
digest_sha1(const void *p, size_t n, uint8_t out[DIGEST_SHA1_LEN])
{
	SHA_CTX c;

	SHA1_Init(&c);
	SHA1_Update(&c, p, n);
	SHA1_Final(out, &c);
}
