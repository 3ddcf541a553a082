/*
 * walbuf.h: an SQLite VFS for the one writer of the database (relayd)
 * that gathers a transaction's WAL frames in memory and hands them to the
 * kernel in one write, instead of two system calls per page.
 *
 * SQLite writes every frame of a commit as a 24-byte header and a page,
 * each with its own pwrite: a stored event dirties several index pages,
 * so a batch of events costs thousands of calls.  This VFS wraps the
 * default one.  Writes to a "-wal" file that continue the previous one
 * are appended to a buffer; everything else passes through.  The buffer
 * goes to the file before SQLite can make the frames visible: on the
 * memory barrier SQLite issues on the main database file right before it
 * publishes a new WAL index header (the moment a commit becomes visible
 * to readers), on any lock change of that file, and before every read,
 * size query, truncation, sync or close of the WAL that could see it.
 * So a committed transaction is in the kernel's page cache when the
 * commit returns, exactly as without the buffer: a process killed after
 * its commit loses nothing.  Durability against power loss is SQLite's
 * synchronous setting: under FULL (the writer's, db.h) SQLite syncs the
 * WAL at the end of each commit, and the buffer goes out on that sync,
 * before the real one.  relayd itself commits under NORMAL and syncs the
 * WAL on a thread of its own (walbuf_wal_real(), relayd/relay_sync.c):
 * the buffer is empty once a commit returned, so that sync needs none of
 * this file's state.
 */
#ifndef GRASPD_WALBUF_H
#define GRASPD_WALBUF_H

#include <sqlite3.h>

/* The name to pass to sqlite3_open_v2() once walbuf_register() ran. */
#define WALBUF_VFS "graspd-walbuf"
/* Ours: bytes of frames gathered before they go out mid-transaction. */
#define WALBUF_MAX (8 * 1024 * 1024)

/* Registers the VFS (not as the default); 0, or -1 if SQLite refused. */
int walbuf_register(void);

/*
 * Frees the buffer of every WAL file that holds no pending frames (a
 * large commit leaves one of several MiB); the next write makes it
 * again.  For a writer going idle.
 */
void walbuf_trim(void);

/*
 * The file of the VFS under this one behind db's open WAL (db opened on
 * WALBUF_VFS, in WAL mode, after its first transaction), or NULL.  Its
 * xSync may be called from another thread while db goes on: it is the
 * default VFS's, which syncs the file descriptor and shares nothing with
 * our buffer.  Valid until db is closed.
 */
sqlite3_file *walbuf_wal_real(sqlite3 *db);

/* Ours: bytes of zeros walbuf_fill() writes at a time. */
#define WALBUF_FILL_CHUNK (1024 * 1024)

/*
 * Writes zeros past the end of the WAL file open as fd (this process's
 * writer's, opened apart by another thread) until it is `to' bytes long,
 * so that the writer's later frames go over blocks the file system has
 * already allocated: appending a fresh block cost the writer's thread
 * about twice what writing over one does (doc/performance.md).  Zeros
 * are never a valid WAL frame, and SQLite reads a WAL only as far as its
 * last valid frame, as it does over the stale frames a WAL that started
 * over leaves behind.  Only bytes past the file's end are written, and
 * never bytes a write of the writer is putting there: a fill waits for a
 * write past the end, and a write (or truncation) waits for the
 * WALBUF_FILL_CHUNK under way in its range.  Returns the file's size, or
 * -1 with errno.
 */
long long walbuf_fill(int fd, long long to);

/* Write calls the buffered WAL files passed to the file system so far. */
unsigned long long walbuf_writes(void);

#endif
