/*
 * wsclient.h: a small blocking RFC 6455 websocket client and an HTTP/1.1
 * helper, written on plain TCP sockets, for the integration tests, the
 * benchmarks and "graspctl import" (never linked into a daemon).
 *
 * A connection is a struct wsc owned by the caller and released with
 * wsc_close() or wsc_drop().  Its socket is non-blocking; every call that
 * waits takes a timeout in milliseconds, so a test can never hang on a
 * silent server.  Received frames go into a per-connection buffer, so a
 * tool that serves many connections can poll wsc_fd() itself and call
 * wsc_read_available() and wsc_next() when one is readable.
 */
#ifndef GRASPD_WSCLIENT_H
#define GRASPD_WSCLIENT_H

#include <stddef.h>
#include <stdint.h>

struct buf;

/* RFC 6455 section 5.2: frame opcodes. */
#define WS_OP_CONT	  0x0
#define WS_OP_TEXT	  0x1
#define WS_OP_BINARY	  0x2
#define WS_OP_CLOSE	  0x8
#define WS_OP_PING	  0x9
#define WS_OP_PONG	  0xa
/* RFC 6455 section 5.5: control frame payloads are at most 125 bytes. */
#define WS_CONTROL_MAX	  125
/* RFC 6455 section 5.2: longest frame header (2 + 8 length + 4 mask). */
#define WS_HEADER_MAX	  14
/* RFC 6455 section 7.4.1: status codes used here. */
#define WS_CLOSE_NORMAL	  1000
#define WS_CLOSE_PROTOCOL 1002

/* Largest message the client assembles before it gives up. */
#define WSC_MESSAGE_MAX	    (64u * 1024 * 1024)
/* How long one send may wait for the peer to drain its socket. */
#define WSC_SEND_TIMEOUT_MS 10000

struct wsc;

/* One decoded frame header. */
struct ws_frame {
	int	 fin;
	int	 rsv; /* the three RSV bits, 0 if none set */
	int	 opcode;
	int	 masked;
	uint8_t	 mask[4];
	uint64_t len;	 /* payload length */
	size_t	 hdrlen; /* bytes before the payload */
};

/* Monotonic clock in milliseconds, for the deadlines of the test tools. */
int64_t wsc_now_ms(void);

/*
 * Connects a non-blocking TCP socket to host:port (an IPv4 or IPv6 literal
 * or a name such as "localhost"), waiting at most timeout_ms.  Returns the
 * descriptor, owned by the caller, or -1.
 */
int wsc_tcp_connect(const char *host, int port, int timeout_ms);

/*
 * Opens a websocket to ws://host:port/path and completes the opening
 * handshake (checking Sec-WebSocket-Accept) within timeout_ms.  Returns
 * the connection or NULL; the reason is printed on stderr as a "#" line.
 */
struct wsc *wsc_connect(const char *host, int port, const char *path,
    int timeout_ms);
/*
 * The same with extra request header lines (each ending "\r\n", or NULL)
 * and the HTTP status of the answer in *http_status when not NULL (0 if no
 * answer came), so a test can see a refused upgrade.
 */
struct wsc *wsc_connect_ex(const char *host, int port, const char *path,
    const char *extra_headers, int timeout_ms, int *http_status);
/*
 * Runs the client side of the opening handshake on a connected socket fd
 * (host and port only fill the Host header).  On success the connection
 * owns fd; on failure fd is closed.  Returns NULL on failure.
 */
struct wsc *wsc_handshake(int fd, const char *host, int port, const char *path,
    const char *extra_headers, int timeout_ms, int *http_status);
/* Wraps a socket whose handshake is already done (unit tests).  Owns fd. */
struct wsc *wsc_adopt(int fd);

/*
 * Send one unfragmented text or binary message in a masked frame.  Return
 * 0, or -1 if the connection is closed or the peer did not take the bytes
 * within WSC_SEND_TIMEOUT_MS.
 */
int wsc_send_text(struct wsc *, const char *, size_t);
int wsc_send_binary(struct wsc *, const void *, size_t);
/* Sends one masked frame with any opcode and FIN bit (fragments, pings). */
int wsc_send_frame(struct wsc *, int opcode, int fin, const void *, size_t);
/* Sends raw bytes as they are, for malformed-frame tests. */
int wsc_send_raw(struct wsc *, const void *, size_t);

/*
 * Waits at most timeout_ms for one complete data message (fragments
 * joined; pings answered on the way).  Returns it NUL-terminated with its
 * length in *len (len may be NULL); the caller frees it.  Returns NULL on
 * timeout, on close and on a protocol error; wsc_is_closed() tells which.
 * Binary messages are returned too; wsc_last_opcode() tells them apart.
 */
char *wsc_recv(struct wsc *, int timeout_ms, size_t *len);

/* The socket, for poll(2) on many connections.  Still owned by the wsc. */
int   wsc_fd(const struct wsc *);
/*
 * Reads what the socket holds now without waiting.  Returns 1 if bytes
 * arrived, 0 if none were there, -1 at end of stream or on error (frames
 * already buffered can still be taken with wsc_next()).
 */
int   wsc_read_available(struct wsc *);
/*
 * Takes the next complete data message out of the buffer, answering
 * pings and a close on the way, without reading the socket.  Returns it
 * like wsc_recv() (opcode, WS_OP_TEXT or WS_OP_BINARY, in *opcode when not
 * NULL), or NULL when no complete message is buffered.
 */
char *wsc_next(struct wsc *, size_t *len, int *opcode);

/* 1 once a close frame, end of stream or a protocol error was seen. */
int	    wsc_is_closed(const struct wsc *);
/* Status code of the close frame received, 1005 if it had none, else 0. */
int	    wsc_close_code(const struct wsc *);
/* Why the connection ended, or "" while it is open. */
const char *wsc_error(const struct wsc *);
/* Opcode of the last message returned. */
int	    wsc_last_opcode(const struct wsc *);

/* Sends a close frame (best effort), closes the socket and frees. */
void wsc_close(struct wsc *);
/* Closes the socket without a close frame and frees (abrupt client). */
void wsc_drop(struct wsc *);

/*
 * Frame codec, shared with scripted server sides.  wsc_frame_encode
 * appends one frame to b; mask is 4 bytes, or NULL for an unmasked
 * (server) frame.  wsc_frame_parse parses a header from p[0..n): returns
 * 1 and fills f, 0 if more bytes are needed, -1 if the header is invalid
 * (a length not in its minimal form, or a 64-bit length with the top bit
 * set).
 */
void wsc_frame_encode(struct buf *b, int opcode, int fin, const uint8_t *mask,
    const void *payload, size_t len);
int  wsc_frame_parse(const uint8_t *p, size_t n, struct ws_frame *f);
/* XORs p[0..n) with mask, the byte at p[i] with mask[(off + i) % 4]. */
void wsc_unmask(uint8_t *p, size_t n, const uint8_t mask[4], uint64_t off);
/* The Sec-WebSocket-Accept value for key (RFC 6455 section 4.2.2). */
void wsc_accept_key(const char *key, char out[29]);

/*
 * HTTP/1.1 request with "Connection: close": method, path, extra header
 * lines (each ending "\r\n", or NULL), and a body (Content-Length is added
 * when body is not NULL).  Waits at most timeout_ms in all.  On success
 * returns 0 with the status code, the header lines after the status line
 * (NUL-terminated, "\r\n" between lines) and the de-chunked body with its
 * length; headers, resp_body and resp_len may be NULL when not wanted, and
 * the caller frees what it receives.  Returns -1 on failure.
 */
int   http_request(const char *host, int port, const char *method,
      const char *path, const char *extra_headers, const void *body,
      size_t body_len, int timeout_ms, int *status, char **headers,
      char **resp_body, size_t *resp_len);
/* A GET with http_request(). */
int   http_get(const char *host, int port, const char *path,
      const char *extra_headers, int timeout_ms, int *status, char **headers,
      char **body);
/*
 * The value of the first header called name (case-insensitive) in a
 * header block from http_request(), without surrounding blanks; the
 * caller frees it.  NULL if absent.
 */
char *http_header_value(const char *headers, const char *name);

#endif
