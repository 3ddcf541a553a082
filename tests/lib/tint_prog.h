/*
 * tint_prog.h: what the integration programs around a graspd (or a
 * relayd) and its scripted peer relays share: the program's temporary
 * git home, the peers, a graspd allowed to dial them on loopback, the
 * test keys and events, checks of HTTP answers, and freeing what the
 * cases made.
 */
#ifndef GRASPD_TINT_PROG_H
#define GRASPD_TINT_PROG_H

#include <stddef.h>
#include <stdint.h>

struct event;
struct relayproc;
struct wsc;

/* The number of elements of the array a. */
#define TINT_N(a) (sizeof(a) / sizeof((a)[0]))

/* 1 when the suite runs under the sanitizers (RUN_LABEL=sanitize). */
int tint_sanitizing(void);

/*
 * Makes the program's temporary directory $TMPDIR/name.XXXXXX into dir
 * (len bytes) and sets git's HOME there (gt_setup()).  Returns 0, or -1
 * after printing "not ok - who: temp dir".
 */
int tint_home(char *dir, size_t len, const char *name, const char *who);
/*
 * Starts a scripted peer relay into each *peers[i] (i < n).  Returns 0,
 * or -1 after printing "not ok - who: peers did not start"; the caller
 * frees those started either way.
 */
int tint_peers_start(struct relayproc **const peers[], size_t n,
    const char *who);
/*
 * Starts graspd with NGIT_SYNC_ALLOW_PRIVATE_TARGETS=true (its peers are
 * on loopback), keys[i]=ws://127.0.0.1:PORT of peers[i] for each i < n,
 * and the NULL-terminated extra settings (may be NULL).  Returns it (the
 * caller frees), or NULL, after printing "not ok - who: graspd did not
 * start" when who is not NULL.
 */
struct relayproc *tint_sync_graspd(const char *const keys[],
    struct relayproc *const peers[], size_t n, const char *const extra[],
    const char *who);

/*
 * Publishes the announcement of d by user owner of the test's key fill
 * (tuser.h), created at at, with maint_hex as maintainer (or NULL), on
 * p, and makes it served: client_host_repo() with its git work in
 * dir/d-PORT.  Returns 0 once p serves it, else -1.
 */
int tint_host_repo(struct relayproc *p, uint8_t fill, int owner, int64_t at,
    const char *d, const char *maint_hex, const char *dir);

/*
 * A repository announcement (kind 30617) of d by user owner of the key
 * fill (tuser.h), created at at: "d" and "name" d; as "clone" the
 * gt_url() on each of the nclones domains (host or host:port); as
 * "relays" the nrelays URLs; maint_hex as "maintainers" when not NULL.
 * The caller destroys it; NULL if it could not be made.
 */
struct event *tint_announcement(uint8_t fill, int owner, int64_t at,
    const char *d, const char *const clones[], size_t nclones,
    const char *const relays[], size_t nrelays, const char *maint_hex);

/*
 * A test key: all zero but byte 0, b0 (each program its own), and byte
 * 31, n (the user).  tint_signed() is an event signed by it
 * (event_new_signed(); the caller destroys it, NULL on failure).
 */
void	      tint_key(uint8_t b0, int n, uint8_t sk[SECKEY_LEN]);
struct event *tint_signed(uint8_t b0, int n, int64_t at, uint32_t kind,
    const char *tags, const char *content);
/*
 * 1 when the HTTP header block hdrs has the CORS headers of every
 * relayd answer: Access-Control-Allow-Origin "*", -Allow-Methods naming
 * GET and POST, -Allow-Headers naming Content-Type.  Otherwise prints
 * which one is wrong as a "# " line and returns 0.
 */
int	      tint_cors_ok(const char *hdrs);

/* relayproc_free() of each of the n relays (NULL ones skipped). */
void tint_relays_free(struct relayproc *const rps[], size_t n);

/*
 * For a relay at its per-IP connection limit, holding ws[0..n-1]: closes
 * ws[0] and connects again (relayproc_ws_retry(), 5 s).  Returns 0 when
 * the freed place was taken, -1 when not; closes the new connection and
 * every ws[i] either way (and sets them to NULL).
 */
int tint_freed_place_retaken(struct relayproc *, struct wsc *ws[], size_t n);

#endif
