/*
 * policy_test.c: which URLs the write policy takes for this service
 * (policy_url_is_service() in common/policy.c): by NGIT_DOMAIN's host and
 * port as before, and by NGIT_PUBLIC_URL for a server behind a TLS proxy.
 */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "policy.h"
#include "t.h"

static char	err[256];

/* A policy for NGIT_DOMAIN = domain and NGIT_PUBLIC_URL = pub (or unset). */
static int
setup(struct config *c, struct policy *pl, const char *domain,
    const char *pub)
{
	setenv("NGIT_DOMAIN", domain, 1);
	if (pub)
		setenv("NGIT_PUBLIC_URL", pub, 1);
	else
		unsetenv("NGIT_PUBLIC_URL");
	if (config_load(c, NULL, err, sizeof(err)) == -1)
		return -1;
	return policy_init(pl, c, err, sizeof(err));
}

static int
is(const struct policy *pl, const char *url)
{
	return policy_url_is_service(pl, url, strlen(url));
}

static void
domain_host_and_port_match_as_before(void)
{
	struct config	c;
	struct policy	pl;

	T_ASSERT(setup(&c, &pl, "127.0.0.1:7334", NULL) == 0);
	T_CHECK(is(&pl, "http://127.0.0.1:7334/npub1x/r.git"));
	T_CHECK(is(&pl, "ws://127.0.0.1:7334"));
	T_CHECK(is(&pl, "https://127.0.0.1:7334/npub1x/r.git"));
	T_CHECK(!is(&pl, "http://127.0.0.1/npub1x/r.git"));
	T_CHECK(!is(&pl, "https://127.0.0.1/npub1x/r.git"));
	T_CHECK(!is(&pl, "http://127.0.0.2:7334/npub1x/r.git"));
	config_free(&c);
	T_ASSERT(setup(&c, &pl, "git.example.org", NULL) == 0);
	T_CHECK(is(&pl, "https://git.example.org/npub1x/r.git"));
	T_CHECK(is(&pl, "wss://GIT.example.org"));
	T_CHECK(is(&pl, "http://git.example.org:80/npub1x/r.git"));
	T_CHECK(!is(&pl, "https://git.example.org:8443/npub1x/r.git"));
	config_free(&c);
}

static void
public_url_matches_behind_tls(void)
{
	struct config	c;
	struct policy	pl;

	/* relayd's own port in NGIT_DOMAIN, TLS in front of it. */
	T_ASSERT(setup(&c, &pl, "git.example.org:7334",
	    "https://git.example.org") == 0);
	T_CHECK(is(&pl, "https://git.example.org/npub1x/r.git"));
	T_CHECK(is(&pl, "https://git.example.org:443/npub1x/r.git"));
	T_CHECK(is(&pl, "wss://git.example.org"));
	T_CHECK(is(&pl, "http://git.example.org:7334/npub1x/r.git"));
	T_CHECK(!is(&pl, "http://git.example.org/npub1x/r.git"));
	T_CHECK(!is(&pl, "https://other.example.org/npub1x/r.git"));
	T_CHECK(!is(&pl, "https://git.example.org:8443/npub1x/r.git"));
	config_free(&c);
	T_ASSERT(setup(&c, &pl, "127.0.0.1:7334",
	    "https://git.example.org:8443/") == 0);
	T_CHECK(is(&pl, "https://git.example.org:8443/npub1x/r.git"));
	T_CHECK(is(&pl, "wss://git.example.org:8443"));
	T_CHECK(!is(&pl, "https://git.example.org/npub1x/r.git"));
	config_free(&c);
}

int
main(void)
{
	T_RUN(domain_host_and_port_match_as_before);
	T_RUN(public_url_matches_behind_tls);
	return t_done();
}
