/*
 * config_fuzz.c: libFuzzer harness for common/config.c's graspd.conf
 * reader (config_load()), which every process runs at start and the
 * supervisor runs on "graspd -n" and on reload.
 *
 * config_load() reads a file, so each input is written to a memfd and
 * loaded through its /proc/self/fd path; the NGIT_* environment is
 * cleared first so that only the file counts.  Invariants: a refusal
 * names the file or the key; an accepted file's config_dump() loads again
 * and dumps to the same text (the dump is a fixpoint), apart from the
 * secret key line, which the dump redacts by design.
 */
#define _GNU_SOURCE
#include <sys/mman.h>

#include <unistd.h>

#include "config.h"
#include "fuzz.h"

extern char **environ;

/* The file line config_dump() writes for the redacted secret key. */
#define SECKEY_LINE "relay_owner_nsec = #"

static int  memfd = -1;
static char memfd_path[64];

/* Removes every NGIT_* variable, so the environment overrides nothing. */
static void
clear_env(void)
{
	char   name[256];
	size_t i, n;

	for (i = 0; environ[i] != NULL;) {
		n = strcspn(environ[i], "=");
		if (strncmp(environ[i], "NGIT_", 5) == 0 && n < sizeof(name)) {
			memcpy(name, environ[i], n);
			name[n] = '\0';
			unsetenv(name);
			continue;
		}
		i++;
	}
}

static int
load(struct config *cfg, const void *text, size_t len, char *err, size_t errlen)
{
	FUZZ_ASSERT(ftruncate(memfd, 0) == 0);
	FUZZ_ASSERT(pwrite(memfd, text, len, 0) == (ssize_t)len);
	return config_load(cfg, memfd_path, err, errlen);
}

/* Cuts the secret key line out of a dump, in place. */
static void
drop_seckey(struct buf *b)
{
	char *l, *e;

	/* At a line start: a value may hold the same text. */
	if ((l = strstr(b->b_data, "\n" SECKEY_LINE)) == NULL)
		return;
	l++;
	e = strchr(l, '\n');
	e = e ? e + 1 : b->b_data + b->b_len;
	memmove(l, e, (size_t)(b->b_data + b->b_len - e) + 1);
	b->b_len -= (size_t)(e - l);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config cfg, cfg2;
	struct buf    d1 = BUF_INIT, d2 = BUF_INIT;
	char	      err[512];

	fuzz_init_log();
	if (memfd == -1) {
		clear_env();
		if ((memfd = memfd_create("graspd-fuzz.conf", 0)) == -1)
			abort();
		snprintf(memfd_path, sizeof(memfd_path), "/proc/self/fd/%d",
		    memfd);
	}
	err[0] = '\0';
	if (load(&cfg, data, size, err, sizeof(err)) == -1) {
		FUZZ_ASSERT(err[0] != '\0');
		FUZZ_ASSERT(strncmp(err, memfd_path, strlen(memfd_path)) == 0 ||
		    strncmp(err, "NGIT_", 5) == 0);
		config_free(&cfg);
		return 0;
	}
	FUZZ_ASSERT(cfg.domain != NULL && cfg.bind_address != NULL &&
	    cfg.bind_host != NULL && cfg.relay_name != NULL &&
	    cfg.relay_data_path != NULL && cfg.run_path != NULL);
	FUZZ_ASSERT(cfg.bind_port >= 1 && cfg.bind_port <= 65535);
	FUZZ_ASSERT(cfg.sync_max_backoff_secs >= cfg.sync_base_backoff_secs);
	(void)cfg_scale_delay(&cfg, 300);
	(void)cfg_period(&cfg, 60);

	config_dump(&cfg, &d1);
	if (load(&cfg2, d1.b_data, d1.b_len, err, sizeof(err)) == -1) {
		fprintf(stderr, "dump does not load: %s\n%s", err, d1.b_data);
		FUZZ_ASSERT(!"dump loads");
	}
	config_dump(&cfg2, &d2);
	drop_seckey(&d1);
	drop_seckey(&d2);
	if (d1.b_len != d2.b_len ||
	    memcmp(d1.b_data, d2.b_data, d1.b_len) != 0) {
		fprintf(stderr, "dump changed on reload:\n%s---\n%s", d1.b_data,
		    d2.b_data);
		FUZZ_ASSERT(!"dump is a fixpoint");
	}
	config_free(&cfg2);
	config_free(&cfg);
	buf_free(&d1);
	buf_free(&d2);
	return 0;
}
