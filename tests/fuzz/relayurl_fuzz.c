/*
 * relayurl_fuzz.c: libFuzzer harness for common/relayurl.c, the target
 * hygiene every relay URL from a peer (kind 10002 "r" tags, 30617
 * "relays", 10317 "g") and from the operator passes before a role dials
 * it.
 *
 * The input is one URL.  fuzz_check_url() (relayurl_check.h) runs it with
 * every flag set and checks the keys and how the flags relate; the input
 * is also tried as NGIT_DOMAIN with relayurl_self_keys(), whose keys must
 * parse and name the relay itself.  Nothing here touches DNS.
 */
#include "relayurl_check.h"

#define MAX_SELF 4

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	    domain[RELAYURL_MAX + 2];
	char	    self[MAX_SELF][RELAYURL_MAX + 1];
	const char *selfp[MAX_SELF];
	int	    n, i;

	fuzz_init_log();
	(void)fuzz_check_url((const char *)data, size);

	if (size > RELAYURL_MAX || memchr(data, '\0', size) != NULL)
		return 0;
	memcpy(domain, data, size);
	domain[size] = '\0';
	/* Any spelling may be compared with the self keys. */
	selfp[0] = "wss://relay.example.com/";
	(void)relayurl_is_self(domain, selfp, 1);
	n = relayurl_self_keys(domain, self, MAX_SELF);
	FUZZ_ASSERT(n == -1 || n == 2);
	for (i = 0; i < n; i++)
		selfp[i] = self[i];
	for (i = 0; i < n; i++) {
		fuzz_check_key(self[i], RELAYURL_TRUSTED);
		FUZZ_ASSERT(strncmp(self[i], i == 0 ? "wss://" : "ws://",
				i == 0 ? 6 : 5) == 0);
		FUZZ_ASSERT(relayurl_is_self(self[i], selfp, (size_t)n) == 1);
	}
	return 0;
}
