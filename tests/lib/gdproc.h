/*
 * gdproc.h: a whole graspd (the supervisor and its roles) for the
 * reliability tests (crash, load, hostile): started with -d in a process
 * group of its own, on a free loopback port, in a temporary directory
 * that survives a restart, so a test can kill -9 one role or the whole
 * of it and start it again on the same store.
 *
 * Role states and pids come from "graspctl -j status".  Every child dies
 * with the test (PR_SET_PDEATHSIG; the roles die with graspd).
 */
#ifndef GRASPD_GDPROC_H
#define GRASPD_GDPROC_H

#include <sys/types.h>

#include <stdint.h>

#include "nip01.h"

/* The roles graspd supervises, in status order. */
#define GD_NROLES    4
/* How long graspd may take to have every role running. */
#define GD_SETTLE_MS 20000

struct buf;
struct event;
struct gdproc;

extern const char *const gd_roles[GD_NROLES];

/*
 * Creates the directory and starts graspd -d there with the test
 * instance's NGIT_* settings (as relayproc.h lists them) plus extra_env
 * ("KEY=VALUE", NULL-terminated, may be NULL), then waits until every
 * role runs; on another port (up to three) if the log says the port was
 * taken meanwhile.  Graspd comes from $GRASPD_BIN (default "bin"), the
 * roles from $GRASPD_LIBEXEC (default: the same).  Returns the handle or
 * NULL (log tail printed, directory removed).
 */
struct gdproc *gd_start(const char *const extra_env[]);
/*
 * Starts graspd again on the same directory and port after it has gone
 * (gd_kill_group(), gd_power_cut()), and waits as gd_start() does.  0 or
 * -1.
 */
int	       gd_restart(struct gdproc *);
/*
 * SIGKILL to graspd's process group; waits for graspd's exit and for its
 * roles, which follow it (SIGTERM, PR_SET_PDEATHSIG) and stop as they
 * would on a SIGTERM.
 */
void	       gd_kill_group(struct gdproc *);
/*
 * A power cut: graspd, every role and their children killed with SIGKILL
 * at once (graspd stopped first, so that it starts nothing again); waits
 * until they are gone.
 */
void	       gd_power_cut(struct gdproc *);
/* SIGTERM, a bounded wait, SIGKILL; removes the directory; frees. */
void	       gd_free(struct gdproc *);

/*
 * Reads every role's state and pid (graspctl -j status) into states
 * (each at most 15 characters, "" when unknown) and pids (0 when none).
 * Returns 0, or -1 if graspctl failed.
 */
int gd_roles_now(struct gdproc *, char states[GD_NROLES][16],
    long pids[GD_NROLES]);
/* Index of a role name in gd_roles, or -1. */
int gd_role_index(const char *name);

int	      gd_port(const struct gdproc *);
pid_t	      gd_pid(const struct gdproc *);
const char   *gd_dir(const struct gdproc *);
/* The store relayd writes: DIR/relay/graspd.db. */
const char   *gd_db_path(const struct gdproc *);
/*
 * Publishes e to g's relayd; 0 if it answered OK true (a refusal's
 * message is printed), -1 otherwise.
 */
int	      gd_publish(struct gdproc *, const struct event *e);
/* 1 if g's relayd returns the event with id_hex, 0 if not, -1 on error. */
int	      gd_has_event(struct gdproc *, const char *id_hex);
/*
 * Publishes to g the announcement (kind 30617) of repository d by the key
 * sk, created now, with d as its name, g as its clone URL
 * ("http://127.0.0.1:PORT/npub/d.git") and first relay, then the relays
 * of extra_relays (JSON strings, each after a comma; "" for none); then
 * releases it (gt_release(): a one-commit repository made in dir, state,
 * push), the commit's id into oid when not NULL.  Returns the
 * announcement (the caller destroys it), or NULL when a step failed (the
 * reason printed as a "# " line).
 */
struct event *gd_host_repo(struct gdproc *, const uint8_t sk[SECKEY_LEN],
    const char *d, const char *extra_relays, const char *dir, char oid[41]);
/*
 * Appends every URL the shared relay URL vectors refuse
 * ($GRASPD_VECTORS/relay-urls.tsv, default tests/vectors) as a JSON
 * string, each as ",<prefix>\"url\"<suffix>".  Returns how many, or -1
 * if the file cannot be read.
 */
int  gd_refused_urls(struct buf *out, const char *prefix, const char *suffix);
/* Prints the last nlines lines of graspd's log as "# " lines. */
void gd_dump_log(const struct gdproc *, int nlines);

#endif
