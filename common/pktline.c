/*
 * pktline.c: the command section of a git receive-pack request, read by
 * relayd before it authorises a push (see pktline.h).
 */
#include <stdio.h>
#include <string.h>

#include "pktline.h"

int
pkt_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
pkt_is_oid(const char *s, size_t len)
{
	size_t i;

	if (len != GIT_OID_HEX)
		return 0;
	for (i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
			(s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

int
pkt_has_cap(const char *caps, size_t len, const char *cap)
{
	const char *p = caps, *end = caps + len, *sp;
	size_t	    n = strlen(cap);

	while (p < end) {
		if ((sp = memchr(p, ' ', (size_t)(end - p))) == NULL)
			sp = end;
		if ((size_t)(sp - p) == n && memcmp(p, cap, n) == 0)
			return 1;
		p = sp + 1;
	}
	return 0;
}

enum pkt_result
pkt_command(const char *p, size_t have, size_t *off, struct pkt_update *u,
    int *sideband, char *err, size_t errlen)
{
	const char *line, *sp1, *sp2, *end;
	size_t	    len, i;
	int	    v;

	if (*off > have || have - *off < GIT_PKT_LEN)
		return PKT_MORE;
	for (len = 0, i = 0; i < GIT_PKT_LEN; i++) {
		if ((v = pkt_hexval((unsigned char)p[*off + i])) < 0) {
			snprintf(err, errlen, "bad pkt-line length");
			return PKT_ERROR;
		}
		len = len * 16 + (size_t)v;
	}
	if (len == 0) {
		*off += GIT_PKT_LEN;
		return PKT_FLUSH;
	}
	if (len <= GIT_PKT_LEN || len > GIT_PKT_MAX) {
		snprintf(err, errlen, "bad pkt-line length");
		return PKT_ERROR;
	}
	if (have - *off < len)
		return PKT_MORE;
	line = p + *off + GIT_PKT_LEN;
	end = p + *off + len;
	/* Capabilities follow a NUL on the first line. */
	if ((sp1 = memchr(line, '\0', (size_t)(end - line))) != NULL) {
		*sideband = pkt_has_cap(sp1 + 1, (size_t)(end - sp1 - 1),
				"side-band-64k") ||
		    pkt_has_cap(sp1 + 1, (size_t)(end - sp1 - 1), "side-band");
		end = sp1;
	}
	if (end > line && end[-1] == '\n')
		end--;
	if ((size_t)(end - line) > 8 && memcmp(line, "shallow ", 8) == 0) {
		*off += len;
		return PKT_SHALLOW;
	}
	if ((size_t)(end - line) >= 9 && memcmp(line, "push-cert", 9) == 0) {
		snprintf(err, errlen, "signed pushes are not supported");
		return PKT_ERROR;
	}
	if (end - line < 2 * GIT_OID_HEX + 3) {
		snprintf(err, errlen, "bad ref update line");
		return PKT_ERROR;
	}
	sp1 = line + GIT_OID_HEX;
	sp2 = sp1 + 1 + GIT_OID_HEX;
	if (*sp1 != ' ' || *sp2 != ' ') {
		snprintf(err, errlen, "bad ref update line");
		return PKT_ERROR;
	}
	for (i = 0; i < GIT_OID_HEX; i++)
		if (pkt_hexval((unsigned char)line[i]) < 0 ||
		    pkt_hexval((unsigned char)sp1[1 + i]) < 0) {
			snprintf(err, errlen, "bad object name");
			return PKT_ERROR;
		}
	memcpy(u->pu_old, line, GIT_OID_HEX);
	u->pu_old[GIT_OID_HEX] = '\0';
	memcpy(u->pu_new, sp1 + 1, GIT_OID_HEX);
	u->pu_new[GIT_OID_HEX] = '\0';
	u->pu_ref = sp2 + 1;
	u->pu_reflen = (size_t)(end - sp2 - 1);
	*off += len;
	return PKT_UPDATE;
}
