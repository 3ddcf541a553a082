/*
 * resolve.h: host name lookups off the role's loop, for syncd,
 * discoveryd and historyd (conn.c before a dial, syncd's git source
 * before a fetch).
 *
 * getaddrinfo blocks for as long as a DNS server takes to answer (or
 * not), so a peer that names its relay on a slow or silent name server
 * would stall the whole role.  Here a few threads per process run the
 * system getaddrinfo (so /etc/hosts, nsswitch and resolv.conf behave as
 * they always did), and the answer is vetted and handed back on the loop
 * with relayurl_vet_addrinfo(), the same checks as
 * relayurl_resolve_checked().  IP literals never come here: they need no
 * lookup and are checked at once.
 *
 * A lookup is named by an id, never by a pointer the loop may free: the
 * requester cancels it by id when it goes away, and an answer that comes
 * after its timeout or its cancellation is dropped by the thread that
 * got it.  Callbacks run only from resolve_poll(), on the loop: a thread
 * wakes the loop with lws_cancel_service(), and conn.c's protocol
 * callback (LWS_CALLBACK_EVENT_WAIT_CANCELLED) and proc_run (after every
 * turn) poll; a timer of its own ends lookups at their deadline.
 * Nothing here exits except on allocation failure (fatal).
 */
#ifndef GRASPD_RESOLVE_H
#define GRASPD_RESOLVE_H

#include <sys/socket.h>

#include <libwebsockets.h>
#include <stdint.h>

/* Ours: lookup threads per process, started as lookups need them.  One
 * slow name then holds one thread; the others keep answering (an answer
 * from /etc/hosts or a working server takes milliseconds). */
#define RESOLVE_THREADS	  4
/* Ours: lookups waiting or running per process; one more fails at once
 * ("too many lookups") rather than queueing behind slow ones.  A role
 * dials at most a few dozen relays at a time. */
#define RESOLVE_QUEUE_MAX 64
/* Ours: a lookup not answered in this many seconds fails ("timed out")
 * and its late answer is dropped.  glibc's own resolver gives up after
 * 2 tries of 5 s per server (resolv.conf(5)), so this cuts one slow
 * server short.  Not shrunk by NGIT_TEST: a name server's pace is not
 * ours to scale. */
#define RESOLVE_TIMEOUT	  10.0

/*
 * The answer to a lookup, called once from resolve_poll() on the loop:
 * rc and why as relayurl_resolve_checked() gives them (0 with the first
 * vetted address in ss, sl bytes; -1 refused; -2 no address, including
 * "timed out" and "too many lookups").  ss is NULL unless rc is 0.  why
 * is a static string.  It may call resolve_start() and resolve_cancel().
 */
typedef void resolve_done_fn(void *arg, int rc,
    const struct sockaddr_storage *ss, socklen_t sl, const char *why);

/*
 * Starts the lookup of the host of the canonical relay key (a name, not
 * an IP literal: those take relayurl_resolve_checked()), to be vetted
 * with flags (RELAYURL_*).  timeout is in seconds (RESOLVE_TIMEOUT
 * normally).  ctx is the role's libwebsockets context, woken when the
 * answer is in (NULL: no wake and no timer, the caller calls
 * resolve_poll() itself, as the unit tests do).  done(arg, ...) is
 * called exactly once, later, from resolve_poll(), unless the lookup is
 * cancelled first; never from inside this call.  Returns the lookup's id
 * (never 0), or 0 with *why set if the key is not canonical, the queue
 * holds RESOLVE_QUEUE_MAX lookups or no thread can be started.
 */
uint64_t resolve_start(struct lws_context *ctx, const char *key, unsigned flags,
    double timeout, resolve_done_fn *done, void *arg, const char **why);

/*
 * Cancels lookup id: its callback will not be called.  An id already
 * answered, cancelled or 0 is ignored.  The thread running it, if any,
 * finishes the lookup and drops the answer.
 */
void resolve_cancel(uint64_t id);

/*
 * Delivers the answers that are in and the timeouts that are due, one
 * callback at a time, and sets the timer for the next deadline.  Called
 * by the loop; cheap when nothing is in.
 */
void resolve_poll(void);

/*
 * Drops every lookup without calling back and stops waking ctx: called
 * before the role destroys its libwebsockets context.  Threads stay, to
 * end with the process.
 */
void resolve_shutdown(void);

/* Lookups waiting, running or answered but not yet delivered (for the
 * unit tests and `graspctl show`). */
unsigned resolve_pending(void);
/* Threads started so far (at most RESOLVE_THREADS). */
unsigned resolve_threads(void);

#endif
