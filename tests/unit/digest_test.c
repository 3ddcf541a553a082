/*
 * digest_test.c: SHA-256 and SHA-1 (common/digest.c) against the FIPS
 * 180-4 examples and OpenSSL's EVP interface, and the reason digest.c
 * exists: hashing does not load OpenSSL's provider machinery.
 */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "event.h"
#include "t.h"

/* Resident kB of libcrypto's mappings in this process, or -1. */
static long
libcrypto_rss_kb(void)
{
	FILE	     *f;
	char	      line[512], perms[8];
	unsigned long lo, hi;
	long	      kb = 0, v;
	int	      in = 0;

	if ((f = fopen("/proc/self/smaps", "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		/* A mapping's first line: "lo-hi perms offset dev inode path". */
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3)
			in = strstr(line, "libcrypto") != NULL;
		else if (in && sscanf(line, "Rss: %ld kB", &v) == 1)
			kb += v;
	}
	fclose(f);
	return kb;
}

/*
 * Runs first, before any case has used EVP: a thousand digests bring in
 * a few pages of libcrypto, one EVP digest its configuration and default
 * provider (about 1.8 MB on Debian 12).
 */
static void
test_hashing_does_not_load_the_provider(void)
{
	uint8_t md[DIGEST_SHA256_LEN];
	char	in[64] = "warm";
	long	before, after_digest, after_evp;
	int	i;

	before = libcrypto_rss_kb();
	T_ASSERT(before > 0);
	for (i = 0; i < 1000; i++) {
		digest_sha256(in, sizeof(in), md);
		digest_sha1(in, sizeof(in), md);
		memcpy(in, md, 16);
	}
	after_digest = libcrypto_rss_kb();
	T_ASSERT(EVP_Digest(in, sizeof(in), md, NULL, EVP_sha256(), NULL));
	after_evp = libcrypto_rss_kb();
	printf("# libcrypto resident: %ld kB, after 2000 digests %ld kB, "
	       "after one EVP digest %ld kB\n",
	    before, after_digest, after_evp);
	T_CHECK(after_evp - after_digest > 512);
	T_CHECK(after_digest - before < (after_evp - after_digest) / 4);
}

static void
test_fips_180_examples(void)
{
	static const struct {
		const char *in;
		const char *sha256;
		const char *sha1;
	} v[] = {
		{ "",
		    "e3b0c44298fc1c149afbf4c8996fb924"
		    "27ae41e4649b934ca495991b7852b855",
		    "da39a3ee5e6b4b0d3255bfef95601890afd80709" },
		{ "abc",
		    "ba7816bf8f01cfea414140de5dae2223"
		    "b00361a396177a9cb410ff61f20015ad",
		    "a9993e364706816aba3e25717850c26c9cd0d89d" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		    "248d6a61d20638b8e5c026930c3e6039"
		    "a33ce45964ff2167f6ecedd419db06c1",
		    "84983e441c3bd26ebaae4aa1f95129e5e54670f1" },
	};
	uint8_t md[DIGEST_SHA256_LEN];
	char	hex[2 * DIGEST_SHA256_LEN + 1];
	size_t	i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		digest_sha256(v[i].in, strlen(v[i].in), md);
		hex_encode(md, DIGEST_SHA256_LEN, hex);
		T_EQ_STR(hex, v[i].sha256);
		digest_sha1(v[i].in, strlen(v[i].in), md);
		hex_encode(md, DIGEST_SHA1_LEN, hex);
		T_EQ_STR(hex, v[i].sha1);
	}
}

/* One million 'a's, FIPS 180's long example, crossing many blocks. */
static void
test_a_million_as(void)
{
	uint8_t md[DIGEST_SHA256_LEN];
	char	hex[2 * DIGEST_SHA256_LEN + 1];
	char   *a;

	T_ASSERT((a = malloc(1000000)) != NULL);
	memset(a, 'a', 1000000);
	digest_sha256(a, 1000000, md);
	hex_encode(md, DIGEST_SHA256_LEN, hex);
	T_EQ_STR(hex,
	    "cdc76e5c9914fb9281a1c7e284d73e67"
	    "f1809a48a497200e046d39ccc7112cd0");
	digest_sha1(a, 1000000, md);
	hex_encode(md, DIGEST_SHA1_LEN, hex);
	T_EQ_STR(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
	free(a);
}

/* Every length from 0 to 300 bytes (each padding case) against EVP. */
static void
test_every_short_length_matches_evp(void)
{
	uint8_t	     in[300], md[DIGEST_SHA256_LEN], ev[EVP_MAX_MD_SIZE];
	unsigned int evlen;
	size_t	     n;

	for (n = 0; n < sizeof(in); n++)
		in[n] = (uint8_t)(n * 131 + 7);
	for (n = 0; n <= sizeof(in); n++) {
		digest_sha256(in, n, md);
		T_ASSERT(EVP_Digest(in, n, ev, &evlen, EVP_sha256(), NULL));
		T_EQ_INT((int)evlen, DIGEST_SHA256_LEN);
		T_CHECK(memcmp(md, ev, DIGEST_SHA256_LEN) == 0);
		digest_sha1(in, n, md);
		T_ASSERT(EVP_Digest(in, n, ev, &evlen, EVP_sha1(), NULL));
		T_EQ_INT((int)evlen, DIGEST_SHA1_LEN);
		T_CHECK(memcmp(md, ev, DIGEST_SHA1_LEN) == 0);
	}
}

static const struct t_case cases[] = {
	T_CASE(test_hashing_does_not_load_the_provider),
	T_CASE(test_fips_180_examples),
	T_CASE(test_a_million_as),
	T_CASE(test_every_short_length_matches_evp),
};

T_MAIN(cases)
