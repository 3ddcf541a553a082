/*
 * gitutil.h: the real git client for the integration tests and the
 * benchmarks: local repositories, commits, pushes and clones against
 * relayd's git smart HTTP on loopback, and the "announce, state, push"
 * step that makes a repository served (GRASP-01 purgatory).
 *
 * Every git run is bounded by GT_TIMEOUT_MS and killed past it.  git
 * runs with the environment gt_setup() prepared: HOME in a directory of
 * the test, no terminal prompts, no system configuration, fixed author.
 */
#ifndef GRASPD_GITUTIL_H
#define GRASPD_GITUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "tfix.h"

struct wsc;

/* How long one git command may run in a test. */
#define GT_TIMEOUT_MS 30000
/* The bound gt_git() applies, GT_TIMEOUT_MS unless a test raises it. */
extern int gt_timeout_ms;

/*
 * Sets the environment of the test process for git: HOME=home (created),
 * GIT_TERMINAL_PROMPT=0, GIT_CONFIG_NOSYSTEM=1, author and committer.
 * Returns 0 or -1.
 */
int			      gt_setup(const char *home);
/*
 * A fixture for T_MAIN_FIXTURE() with a struct tdir_prog (tdir.h) as arg:
 * tdir_fixture's directory, and gt_setup() with HOME in path/home.
 */
extern const struct t_fixture gt_fixture;

/*
 * Runs "git args..." (NULL-terminated) in dir (NULL: the current
 * directory), with stdout and stderr together in *out when out is not
 * NULL (the caller frees).  Returns git's exit status, or -1 if it could
 * not run or was killed at GT_TIMEOUT_MS.
 */
int gt_git(const char *dir, char **out, ...) __attribute__((sentinel));

/* git init -b main in dir (created).  0 or -1. */
int gt_init(const char *dir);
/*
 * Writes content to file in the work tree of dir, commits it with
 * message, and stores the new commit in oid.  0 or -1.
 */
int gt_commit(const char *dir, const char *file, const char *content,
    const char *message, char oid[41]);
/* The object name rev resolves to in dir.  0 or -1. */
int gt_rev(const char *dir, const char *rev, char oid[41]);
/*
 * Writes size random bytes (rand()) to file in the work tree of dir,
 * commits it, and stores the new commit in oid: a commit whose pack
 * does not compress below size.  0 or -1.
 */
int gt_commit_random(const char *dir, const char *file, size_t size,
    char oid[41]);
/* 1 if the bare repository repo holds no quarantine of a stopped
 * receive-pack (objects/tmp_objdir-incoming-*), else 0. */
int gt_no_quarantine(const char *repo);

/* http://<domain>/<npub of pk>/<d>.git into out. */
void gt_url(char *out, size_t outlen, const char *domain,
    const uint8_t pk[PUBKEY_LEN], const char *d);

/*
 * Publishes over ws the state event (kind 30618) by sk for d created at
 * at, naming oid as refs/heads/main and HEAD.  0 once the relay accepted
 * it (held or stored), else -1 (its answer printed as a "#" line).
 */
int gt_state(struct wsc *ws, const uint8_t sk[SECKEY_LEN], int64_t at,
    const char *d, const char *oid);
/*
 * Makes the repository (pubkey of sk, d) served: commits a file in a new
 * repository at dir, publishes over ws a state event by sk naming the
 * commit as refs/heads/main and HEAD, and pushes main to the relay at
 * domain.  The announcement must have been published.  The commit goes
 * to oid when not NULL.  Returns 0 when the state was accepted and the
 * push succeeded, -1 otherwise (a reason is printed as a "#" line).
 */
int gt_release(struct wsc *ws, const uint8_t sk[SECKEY_LEN], const char *domain,
    const char *d, const char *dir, char oid[41]);

#endif
