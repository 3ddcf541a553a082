/*
 * pktline.h: git's pkt-line framing and the command section of a
 * receive-pack request (git's gitprotocol-pack(5): "old new ref\0caps",
 * "old new ref", "shallow oid", up to a flush-pkt).  relayd reads it from
 * every push before deciding whether to run git; the bytes come from the
 * network, so nothing in them is trusted to be in bounds.
 */
#ifndef GRASPD_PKTLINE_H
#define GRASPD_PKTLINE_H

#include <stddef.h>

/* gitprotocol-common(5): a pkt-line is at most 65520 bytes, length included. */
#define GIT_PKT_MAX	   65520
/* gitprotocol-common(5): the length prefix, four hex digits. */
#define GIT_PKT_LEN	   4
/* A SHA-1 object name in hex. */
#define GIT_OID_HEX	   40
/* A SHA-256 object name in hex (gitformat-pack(5), object-format). */
#define GIT_OID_SHA256_HEX 64

/* What pkt_command() found. */
enum pkt_result {
	PKT_ERROR = -1, /* malformed; the reason is in err */
	PKT_MORE = 0,	/* the line is not complete yet */
	PKT_FLUSH,	/* flush-pkt: the command section is over */
	PKT_SHALLOW,	/* "shallow oid", skipped */
	PKT_UPDATE,	/* a ref update, in *u */
};

/*
 * One ref update.  pu_ref points into the caller's buffer (not
 * NUL-terminated; pu_reflen bytes, at least one, none of them NUL).
 */
struct pkt_update {
	char	    pu_old[GIT_OID_HEX + 1];
	char	    pu_new[GIT_OID_HEX + 1];
	const char *pu_ref;
	size_t	    pu_reflen;
};

/*
 * Reads the pkt-line at p[*off..have) of a receive-pack command section.
 * On PKT_FLUSH, PKT_SHALLOW and PKT_UPDATE, *off moves past the line; on
 * PKT_MORE and PKT_ERROR it is unchanged, so a caller can resume once more
 * bytes arrive.  A line carrying capabilities (after a NUL) sets *sideband
 * to 1 if they ask for side-band or side-band-64k, else 0; other lines
 * leave it alone.  Signed pushes (push-cert) are refused.  Never exits.
 */
enum pkt_result pkt_command(const char *p, size_t have, size_t *off,
    struct pkt_update *u, int *sideband, char *err, size_t errlen);

/* The value of the hex digit c (either case), or -1. */
int pkt_hexval(int c);
/*
 * 1 if the len bytes at s are an object name as git writes it: GIT_OID_HEX
 * lowercase hex digits; else 0.  s need not be NUL-terminated.
 */
int pkt_is_oid(const char *s, size_t len);

/* 1 if the space-separated capability list caps[0..len) has cap, else 0. */
int pkt_has_cap(const char *caps, size_t len, const char *cap);

#endif
