/*
 * tpowercut.h: the test side of common/powercut.h.  Reads the log a
 * recording relayd wrote and rebuilds its database files as a power cut
 * at the log's end leaves them, the way SQLite's crash tests do (test6.c):
 * everything written to a file before its last sync is there; each write
 * after it is, by a seeded draw, lost, kept, or torn (each 512-byte piece
 * of it kept or not on its own, the unwritten part of a file that grew
 * holding garbage, as the default VFS claims power-safe overwrite but not
 * safe append); a truncation after the last sync happens or not.  Removals
 * count as done.  The same log and seed give the same files.
 */
#ifndef GRASPD_TPOWERCUT_H
#define GRASPD_TPOWERCUT_H

#include <stdint.h>

/* Ours: the granularity of a torn write (a disk sector). */
#define TPC_SECTOR 512

/* tpc_replay() flags: every write kept (what a killed process leaves). */
#define TPC_KEEP_ALL 0x01

struct tpc_stats {
	long ops;	/* writes, truncations, syncs, removals */
	long wal_syncs; /* syncs of a "-wal" file */
	long db_syncs;	/* syncs of any other file (the database) */
	long pending;	/* writes and truncations after the last sync */
	long lost, torn, kept;
	int  cut; /* the log ends with the VFS's own cut */
};

/*
 * The operations in the log at path so far, counted as the VFS counts
 * them for GRASPD_POWERCUT_AT (opens are not counted), or -1 when it
 * cannot be read.
 */
long tpc_ops(const char *path);

/*
 * Writes into the directory outdir (which exists) each file of the log at
 * path as it is after a power cut at the log's end, under its base name
 * ("-shm" files, which SQLite rebuilds, never), drawing from seed, or
 * every write kept with TPC_KEEP_ALL; fills *st.  0, or -1 after a "# "
 * line saying why (unreadable log, a file that held data before the log
 * began).
 */
int tpc_replay(const char *path, const char *outdir, uint64_t seed, int flags,
    struct tpc_stats *st);

#endif
