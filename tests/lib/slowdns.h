/*
 * slowdns.h: a name server on loopback that answers as slowly as a test
 * says, and a private /etc/resolv.conf naming it, for the tests of name
 * lookups off the roles' loops (issue 39, item 8).
 *
 * glibc's resolv.conf takes no port, so the server listens on port 53 of
 * a loopback address of its own (127.53.x.y, from the pid), and the test
 * process enters a private mount namespace in which a temporary
 * resolv.conf naming that address ("options timeout:30 attempts:1", so
 * the resolver waits for a slow answer instead of asking again) is bound
 * over /etc/resolv.conf.  Every process the test starts afterwards
 * (graspd, its roles) inherits the namespace; the machine's own file is
 * never touched and the namespace ends with the processes.  This needs
 * root (CAP_SYS_ADMIN) and a process with no thread yet.
 *
 * The server answers A queries for the names it was given with 127.0.0.1
 * and AAAA queries with no address (both after the name's delay), and
 * every other name with NXDOMAIN at once.
 */
#ifndef GRASPD_SLOWDNS_H
#define GRASPD_SLOWDNS_H

#include <stdint.h>

/* Never answered, for slowdns_add(). */
#define SLOWDNS_NEVER (-1)

struct slowdns;

/*
 * Enters the private mount namespace with the temporary resolv.conf
 * (written in dir) and starts the server's thread.  Call it before any
 * other thread starts.  Returns the server, or NULL with *why set: "not
 * root", or which step failed (the caller skips its cases then).
 */
struct slowdns *slowdns_start(const char *dir, const char **why);
/* Answers name (lowercase, no final dot) after delay_ms (SLOWDNS_NEVER:
 * never).  A name added again takes the new delay. */
void		slowdns_add(struct slowdns *, const char *name, int delay_ms);
/* Queries (A and AAAA) that came for name, and those answered. */
int		slowdns_queries(struct slowdns *, const char *name);
int		slowdns_answers(struct slowdns *, const char *name);
/* The server's address ("127.53.x.y"). */
const char     *slowdns_addr(const struct slowdns *);
/* Stops the thread and frees; the namespace stays until the process
 * ends. */
void		slowdns_stop(struct slowdns *);

#endif
