/*
 * conn_budget.c: the budget of one remote relay that syncd, discoveryd
 * and historyd share: the REQ pacing and the subscription ledger summed
 * over the roles (GRASP-03: discovery draws "from the same pacer and
 * subscription ledger as historic work").  Run by those roles through
 * conn.c; doc/architecture.md, "One budget per remote relay", says why
 * it is built this way.
 *
 * The kernel is the broker.  Each relay key has a small file in
 * <NGIT_RUN_PATH>/CONN_BUDGET_DIR, named by the SHA-256 of the key; every
 * role that talks to the relay opens it once per connection.  A
 * subscription slot is a write lock (an open file description lock,
 * F_OFD_SETLK) on one of the bytes 1..CONN_MAX_SUBS; the time of the
 * last REQ any role sent (CLOCK_MONOTONIC microseconds, the same clock
 * in every process) is 8 bytes at offset 0, read and written under a
 * lock on byte 0.  No call waits for a lock: a busy ledger is "try again
 * later".  A role that exits, crashes or is killed closes the file and
 * the kernel drops its locks, so a dead role's leases never outlive it;
 * nothing a sibling writes is parsed beyond one timestamp, and a
 * timestamp in the future (only a broken sibling writes one) is ignored.
 *
 * A slot is lent to one open request.  When the request ends with a
 * CLOSE, the slot stays with the connection ("spare") until that CLOSE
 * has left on the wire: the connection may reuse it at once (its own
 * CLOSE precedes its next REQ on the link), a sibling only once the
 * relay has been told.
 */
#define _GNU_SOURCE /* F_OFD_SETLK */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "digest.h"
#include "event.h"
#include "fs.h"

/* The lock bytes: the ledger's mutex, then one per slot. */
#define CB_MUTEX 0
#define CB_SLOT0 1

/* A non-blocking OFD lock (F_WRLCK) or unlock (F_UNLCK) of one byte:
 * 0, or -1 when another description holds it (or on error). */
static int
cb_lock(int fd, short type, off_t byte)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = byte;
	fl.l_len = 1;
	return fcntl(fd, F_OFD_SETLK, &fl);
}

void
conn_budget_init(struct conn_budget *b)
{
	memset(b, 0, sizeof(*b));
	b->cb_fd = -1;
}

int
conn_budget_open(struct conn_budget *b, const char *run_path, const char *key)
{
	uint8_t	    h[DIGEST_SHA256_LEN];
	char	    hex[2 * DIGEST_SHA256_LEN + 1], path[PATH_MAX];
	int	    n;
	struct stat st;

	conn_budget_close(b);
	n = snprintf(path, sizeof(path), "%s/%s", run_path, CONN_BUDGET_DIR);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (mkdir_p(path, 0700) == -1)
		return -1;
	digest_sha256(key, strlen(key), h);
	hex_encode(h, sizeof(h), hex);
	n = snprintf(path, sizeof(path), "%s/%s/%s", run_path, CONN_BUDGET_DIR,
	    hex);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((b->cb_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
		 0600)) == -1)
		return -1;
	if (fstat(b->cb_fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		close(b->cb_fd);
		b->cb_fd = -1;
		errno = EINVAL;
		return -1;
	}
	return 0;
}

void
conn_budget_close(struct conn_budget *b)
{
	if (b->cb_fd != -1)
		close(b->cb_fd); /* drops every lock we hold */
	conn_budget_init(b);
}

int
conn_budget_take(struct conn_budget *b, double interval, int64_t now, int *slot,
    int64_t *wait_us)
{
	int64_t	 last = 0, next;
	unsigned spare;
	int	 i, got = -1;

	*slot = -1;
	*wait_us = 0;
	if (b->cb_fd == -1)
		return 1; /* this role alone: its own ledger decides */
	if (cb_lock(b->cb_fd, F_WRLCK, CB_MUTEX) == -1) {
		*wait_us = 1000;
		return 0;
	}
	if (pread(b->cb_fd, &last, sizeof(last), 0) != (ssize_t)sizeof(last) ||
	    last > now)
		last = 0; /* a new ledger, or a broken sibling's time */
	next = last + (int64_t)(interval * 1e6);
	if (last != 0 && now < next) {
		*wait_us = next - now;
		goto out;
	}
	spare = b->cb_held & ~b->cb_busy;
	for (i = 0; i < CONN_MAX_SUBS && got == -1; i++)
		if (spare & (1u << i))
			got = i;
	for (i = 0; i < CONN_MAX_SUBS && got == -1; i++)
		if (!(b->cb_held & (1u << i)) &&
		    cb_lock(b->cb_fd, F_WRLCK, CB_SLOT0 + i) == 0) {
			b->cb_held |= 1u << i;
			got = i;
		}
	if (got == -1) {
		*wait_us = (int64_t)(CONN_BUDGET_POLL * 1e6);
		goto out;
	}
	/* A failed write leaves the slot bounding us; pacing is then only
	 * our own. */
	(void)!pwrite(b->cb_fd, &now, sizeof(now), 0);
	b->cb_busy |= 1u << got;
	*slot = got;
out:
	cb_lock(b->cb_fd, F_UNLCK, CB_MUTEX);
	return *slot != -1;
}

/* Unlocks slot if nothing of ours uses it or still has to CLOSE it. */
static void
cb_maybe_free(struct conn_budget *b, int slot)
{
	unsigned bit = 1u << slot;

	if (!(b->cb_held & bit) || (b->cb_busy & bit) ||
	    b->cb_closing[slot] > 0)
		return;
	cb_lock(b->cb_fd, F_UNLCK, CB_SLOT0 + slot);
	b->cb_held &= ~bit;
}

void
conn_budget_give(struct conn_budget *b, int slot)
{
	if (slot < 0 || slot >= CONN_MAX_SUBS || b->cb_fd == -1)
		return;
	b->cb_busy &= ~(1u << slot);
	cb_maybe_free(b, slot);
}

void
conn_budget_closing(struct conn_budget *b, int slot)
{
	if (slot < 0 || slot >= CONN_MAX_SUBS || b->cb_fd == -1)
		return;
	b->cb_closing[slot]++;
	b->cb_busy &= ~(1u << slot);
}

void
conn_budget_closed(struct conn_budget *b, int slot)
{
	if (slot < 0 || slot >= CONN_MAX_SUBS || b->cb_fd == -1)
		return;
	if (b->cb_closing[slot] > 0)
		b->cb_closing[slot]--;
	cb_maybe_free(b, slot);
}

unsigned
conn_budget_held(const struct conn_budget *b)
{
	unsigned i, n = 0;

	for (i = 0; i < CONN_MAX_SUBS; i++)
		if (b->cb_held & (1u << i))
			n++;
	return n;
}
