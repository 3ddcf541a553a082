/*
 * wswatch.h: a read-only watcher of the bytes a websocket server takes
 * from one client connection, for what a server library may not tell:
 * whether a client frame came unmasked (RFC 6455 5.1: the server MUST
 * close the connection) and since when the frame in progress has been
 * coming (a client stopped halfway through a frame header, which no
 * payload callback shows).  It follows the framing only (RFC 6455 5.2):
 * opcodes, extensions and payloads are not its business.  Before the
 * upgrade it reads HTTP and starts again after every "\r\n\r\n", the end
 * of a request's headers, so that at the upgrade its state is that of
 * the bytes after the upgrade request (frames a client sent before the
 * 101).  relayd's relay_wire.c keeps one per connection.  Nothing here
 * allocates or exits.
 */
#ifndef GRASPD_WSWATCH_H
#define GRASPD_WSWATCH_H

#include <stddef.h>
#include <stdint.h>

struct wswatch {
	int64_t	 ww_frame_at; /* ms the frame in progress began; 0: none */
	uint64_t ww_left;     /* payload bytes still to come */
	unsigned ww_state;    /* where in a frame (wswatch.c) */
	unsigned ww_need;     /* header bytes still to come */
	unsigned ww_crlf;     /* bytes of "\r\n\r\n" matched, before upgrade */
	unsigned ww_upgraded : 1; /* the bytes are frames now */
	unsigned ww_unmasked : 1; /* an unmasked frame came */
	unsigned ww_masked : 1;	  /* the frame in progress is masked */
};

/* A watcher of a connection that has sent nothing yet. */
#define WSWATCH_INIT \
	{ \
		0, 0, 0, 0, 0, 0, 0, 0 \
	}

/*
 * Watches the n bytes at p, the next the client sent, received at
 * now_ms (a clock above 0).  Returns 1 if they hold the first unmasked
 * frame since the upgrade, else 0.
 */
int  wswatch_feed(struct wswatch *, const void *p, size_t n, int64_t now_ms);
/* The upgrade is done: the bytes from now on are frames. */
void wswatch_upgraded(struct wswatch *);

#endif
