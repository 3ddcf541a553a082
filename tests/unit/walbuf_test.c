/*
 * walbuf_test.c: the write-gathering VFS of the database's writer
 * (walbuf.c, used by db_open()).  A commit's frames reach the file in a
 * few writes; readers on other connections see every commit at once; a
 * writer killed right after its commits loses none; transactions larger
 * than the buffer, rollbacks and WAL restarts after checkpoints keep the
 * database whole.  Zeros written past the WAL's end by another thread
 * (walbuf_fill(), relayd's room for the next burst) never land on a
 * frame, and a WAL read back after them holds every commit.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "db.h"
#include "log.h"
#include "walbuf.h"
#include "t.h"
#include "tdir.h"

static char		tmpdir[64];
static struct tdir_prog tp = { tmpdir, sizeof(tmpdir), "walbuf_test" };

static int
walbuf_setup(void)
{
	srandom(7);
	return 0;
}
static int dbcount;

/* A fresh writer (through db_open(), so with the VFS) and its path. */
static sqlite3 *
fresh(char *path, size_t len)
{
	sqlite3 *db;
	char	 err[256];

	snprintf(path, len, "%s/db%d/graspd.db", tmpdir, ++dbcount);
	if (db_open(path, 0, &db, err, sizeof(err)) == -1) {
		printf("# db_open: %s\n", err);
		return NULL;
	}
	if (sqlite3_exec(db,
		"CREATE TABLE t (k INTEGER PRIMARY KEY, "
		"v BLOB NOT NULL); CREATE INDEX t_v ON t(v);",
		NULL, NULL, NULL) != SQLITE_OK) {
		printf("# create: %s\n", sqlite3_errmsg(db));
		db_close(db);
		return NULL;
	}
	return db;
}

/* A plain reader with SQLite's default VFS, as syncd and the others. */
static sqlite3 *
reader(const char *path)
{
	sqlite3 *db;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) !=
	    SQLITE_OK) {
		sqlite3_close(db);
		return NULL;
	}
	return db;
}

static long long
count(sqlite3 *db)
{
	sqlite3_stmt *st;
	long long     n = -1;

	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM t", -1, &st, NULL) !=
	    SQLITE_OK)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

static int
integrity_ok(sqlite3 *db)
{
	sqlite3_stmt *st;
	int	      ok = 0;

	if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) !=
	    SQLITE_OK)
		return 0;
	if (sqlite3_step(st) == SQLITE_ROW)
		ok =
		    strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0;
	sqlite3_finalize(st);
	return ok;
}

/* Inserts n rows of size bytes of random-looking data in one transaction
 * (or in none when txn is 0: one commit each). */
static int
insert(sqlite3 *db, int n, int size, int txn)
{
	sqlite3_stmt  *st;
	unsigned char *v;
	int	       i, j, rc = 0;

	if ((v = malloc((size_t)size)) == NULL)
		return -1;
	if (txn && sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
		free(v);
		return -1;
	}
	if (sqlite3_prepare_v2(db, "INSERT INTO t (v) VALUES (?)", -1, &st,
		NULL) != SQLITE_OK) {
		free(v);
		return -1;
	}
	for (i = 0; i < n && rc == 0; i++) {
		for (j = 0; j < size; j++)
			v[j] = (unsigned char)(random() >> 7);
		sqlite3_bind_blob(st, 1, v, size, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE)
			rc = -1;
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	free(v);
	if (txn &&
	    sqlite3_exec(db, rc == 0 ? "COMMIT" : "ROLLBACK", NULL, NULL,
		NULL) != SQLITE_OK)
		rc = -1;
	return rc;
}

static long long
wal_size(const char *path)
{
	char	    wal[256];
	struct stat sb;

	snprintf(wal, sizeof(wal), "%s-wal", path);
	return stat(wal, &sb) == 0 ? (long long)sb.st_size : -1;
}


/*
 * A fresh database (path in path, len bytes) and a reader on it in *rd;
 * NULL, with neither open, if either does not open.
 */
static sqlite3 *
fresh_with_reader(char *path, size_t len, sqlite3 **rd)
{
	sqlite3 *db;

	if ((db = fresh(path, len)) == NULL)
		return NULL;
	if ((*rd = reader(path)) == NULL) {
		db_close(db);
		return NULL;
	}
	return db;
}

/* 1 if rd finds the database whole; closes the reader rd and db. */
static int
whole_then_closed(sqlite3 *db, sqlite3 *rd)
{
	int ok = integrity_ok(rd);

	sqlite3_close(rd);
	db_close(db);
	return ok;
}

static void
a_commit_goes_out_in_few_writes(void)
{
	sqlite3		  *db, *rd;
	char		   path[128];
	unsigned long long before;
	long long	   wal0, wal1;

	T_ASSERT((db = fresh_with_reader(path, sizeof(path), &rd)) != NULL);
	wal0 = wal_size(path);
	before = walbuf_writes();
	/* 500 rows of random keys in t_v: hundreds of dirty pages. */
	T_CHECK(insert(db, 500, 200, 1) == 0);
	wal1 = wal_size(path);
	/* At least 40 frames (header and page each) went into the WAL... */
	T_CHECK(wal1 - wal0 >= 40 * (24 + 4096));
	/* ...in at most one write per 31 frames, not two per frame. */
	T_CHECK(walbuf_writes() - before <=
	    (unsigned long long)((wal1 - wal0) / (31 * 4096) + 2));
	T_CHECK(count(rd) == 500);
	T_CHECK(whole_then_closed(db, rd));
}

static void
readers_see_each_commit_at_once(void)
{
	sqlite3 *db, *rd;
	char	 path[128];
	int	 i;

	T_ASSERT((db = fresh_with_reader(path, sizeof(path), &rd)) != NULL);
	for (i = 1; i <= 50; i++) {
		if (insert(db, 3, 300, i % 2) == -1)
			break;
		if (count(rd) != 3 * i)
			break;
	}
	T_EQ_INT(i, 51);
	T_CHECK(whole_then_closed(db, rd));
}

static void
a_killed_writer_keeps_every_commit(void)
{
	sqlite3 *db;
	char	 path[128], c;
	int	 fds[2], status, n = 0;
	pid_t	 pid;

	snprintf(path, sizeof(path), "%s/db%d/graspd.db", tmpdir, ++dbcount);
	T_ASSERT(pipe(fds) == 0);
	if ((pid = fork()) == 0) {
		char err[256];

		close(fds[0]);
		if (db_open(path, 0, &db, err, sizeof(err)) == -1 ||
		    sqlite3_exec(db,
			"CREATE TABLE t (k INTEGER PRIMARY KEY,"
			" v BLOB NOT NULL); CREATE INDEX t_v ON t(v);",
			NULL, NULL, NULL) != SQLITE_OK)
			_exit(2);
		/* Each commit is reported, then the next one starts. */
		for (;;) {
			if (insert(db, 20, 150, 1) == -1)
				_exit(3);
			if (write(fds[1], "c", 1) != 1)
				_exit(4);
		}
	}
	T_ASSERT(pid > 0);
	close(fds[1]);
	while (n < 40 && read(fds[0], &c, 1) == 1)
		n++;
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	/* Commits reported after our 40th read count too. */
	while (read(fds[0], &c, 1) == 1)
		n++;
	close(fds[0]);
	T_EQ_INT(n >= 40, 1);
	T_ASSERT((db = reader(path)) != NULL);
	T_CHECK(count(db) >= 20LL * n);
	T_CHECK(integrity_ok(db));
	sqlite3_close(db);
}

static void
a_transaction_larger_than_the_buffer(void)
{
	sqlite3 *db, *rd;
	char	 path[128];

	T_ASSERT((db = fresh_with_reader(path, sizeof(path), &rd)) != NULL);
	/* About 3 x WALBUF_MAX of rows, one transaction. */
	T_CHECK(insert(db, 6000, 4000, 1) == 0);
	T_CHECK(count(rd) == 6000);
	T_CHECK(whole_then_closed(db, rd));
}

static void
rollbacks_and_wal_restarts_keep_it_whole(void)
{
	sqlite3 *db, *rd;
	char	 path[128];
	int	 i;

	T_ASSERT((db = fresh_with_reader(path, sizeof(path), &rd)) != NULL);
	for (i = 0; i < 10; i++) {
		T_CHECK(insert(db, 50, 300, 1) == 0);
		/* Frames written, then thrown away. */
		T_CHECK(
		    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK);
		T_CHECK(sqlite3_exec(db, "DELETE FROM t", NULL, NULL, NULL) ==
		    SQLITE_OK);
		T_CHECK(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL) ==
		    SQLITE_OK);
		/* Every other round the WAL starts again from its header. */
		if (i % 2 == 1)
			T_CHECK(
			    sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)",
				NULL, NULL, NULL) == SQLITE_OK);
		T_CHECK(count(rd) == 50 * (i + 1));
	}
	T_CHECK(whole_then_closed(db, rd));
	/* And it opens again as a writer. */
	{
		char err[256];

		T_ASSERT(db_open(path, 0, &db, err, sizeof(err)) == 0);
		T_CHECK(count(db) == 500);
		T_CHECK(integrity_ok(db));
		db_close(db);
	}
}

/* The database at path and its WAL as a power cut would leave them: copied
 * while the writer is open, opened by a connection that recovers the WAL
 * from the file alone.  Its rows, or -1. */
static long long
count_of_copy(const char *path)
{
	static const char *const sfx[] = { "", "-wal" };
	sqlite3			*db;
	char			 from[256], to[256], buf[65536];
	long long		 n;
	ssize_t			 r;
	int			 i, in, out, ok = 1;

	for (i = 0; i < 2; i++) {
		snprintf(from, sizeof(from), "%s%s", path, sfx[i]);
		snprintf(to, sizeof(to), "%s.copy%s", path, sfx[i]);
		if ((in = open(from, O_RDONLY)) == -1)
			return -1;
		if ((out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644)) ==
		    -1) {
			close(in);
			return -1;
		}
		while ((r = read(in, buf, sizeof(buf))) > 0)
			if (write(out, buf, (size_t)r) != r)
				ok = 0;
		close(in);
		close(out);
		if (r != 0 || !ok)
			return -1;
	}
	snprintf(to, sizeof(to), "%s.copy", path);
	if (sqlite3_open_v2(to, &db, SQLITE_OPEN_READWRITE, NULL) !=
	    SQLITE_OK) {
		sqlite3_close(db);
		return -1;
	}
	n = integrity_ok(db) ? count(db) : -1;
	sqlite3_close(db);
	return n;
}

struct filler {
	char wal[256];
	int  stop; /* atomic */
	long calls, grew;
};

/* Fills a few frames past the WAL's end each time the writer's frames
 * went past the last fill: right where its next frames go. */
static void *
filler_main(void *arg)
{
	struct filler *f = arg;
	struct stat    sb;
	long long      size, last = -1;
	int	       fd;

	if ((fd = open(f->wal, O_WRONLY)) == -1)
		return NULL;
	while (!__atomic_load_n(&f->stop, __ATOMIC_RELAXED)) {
		if (fstat(fd, &sb) == -1)
			break;
		if (sb.st_size == last) {
			sched_yield();
			continue;
		}
		if ((size = walbuf_fill(fd, sb.st_size + 3 * (4096 + 24))) ==
		    -1)
			break;
		f->calls++;
		f->grew += size > sb.st_size;
		last = size;
	}
	close(fd);
	return NULL;
}

static void
fills_beside_commits_keep_every_frame(void)
{
	struct filler f = { .stop = 0 };
	pthread_t     th;
	sqlite3	     *db, *rd;
	char	      path[128];
	int	      round, i, ok = 1;

	T_ASSERT((db = fresh_with_reader(path, sizeof(path), &rd)) != NULL);
	snprintf(f.wal, sizeof(f.wal), "%s-wal", path);
	T_ASSERT(pthread_create(&th, NULL, filler_main, &f) == 0);
	for (round = 0; round < 20 && ok; round++) {
		for (i = 0; i < 30 && ok; i++)
			ok = insert(db, 4, 300, 1) == 0;
		/* The WAL starts over from nothing: fills meet its header. */
		if (round % 4 == 1 && round < 16)
			ok = ok &&
			    sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)",
				NULL, NULL, NULL) == SQLITE_OK;
	}
	__atomic_store_n(&f.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	printf("# %ld fills, %ld of them past a frame just written\n", f.calls,
	    f.grew);
	T_CHECK(ok);
	T_CHECK(f.grew > 100);
	T_CHECK(count(rd) == 20 * 30 * 4);
	/* Recovery reads every frame written since the last truncation. */
	T_CHECK(count_of_copy(path) == 20 * 30 * 4);
	T_CHECK(whole_then_closed(db, rd));
}

static void
a_fill_writes_zeros_past_the_end_only(void)
{
	sqlite3	 *db, *rd;
	char	  path[128], wal[160], page[4096], zero[4096] = { 0 };
	long long size0;
	int	  fd;

	T_ASSERT((db = fresh_with_reader(path, sizeof(path), &rd)) != NULL);
	T_CHECK(insert(db, 200, 300, 1) == 0);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	size0 = wal_size(path);
	T_ASSERT(size0 > 0 && (fd = open(wal, O_RDWR)) != -1);
	/* Short of the end: nothing. */
	T_CHECK(walbuf_fill(fd, size0 - 100) == size0);
	T_CHECK(wal_size(path) == size0);
	/* Past it: zeros, more than a chunk of them. */
	T_CHECK(walbuf_fill(fd, size0 + WALBUF_FILL_CHUNK + 4100) ==
	    size0 + WALBUF_FILL_CHUNK + 4100);
	T_CHECK(wal_size(path) == size0 + WALBUF_FILL_CHUNK + 4100);
	T_CHECK(pread(fd, page, sizeof(page), size0) == sizeof(page) &&
	    memcmp(page, zero, sizeof(page)) == 0);
	T_CHECK(pread(fd, page, sizeof(page), size0 + WALBUF_FILL_CHUNK) ==
		(ssize_t)sizeof(page) &&
	    memcmp(page, zero, sizeof(page)) == 0);
	close(fd);
	T_CHECK(count_of_copy(path) == 200);
	/* The writer goes on over the zeros. */
	T_CHECK(insert(db, 100, 300, 1) == 0);
	T_CHECK(count(rd) == 300);
	T_CHECK(count_of_copy(path) == 300);
	T_CHECK(whole_then_closed(db, rd));
}

static const struct t_case cases[] = {
	T_CASE(a_commit_goes_out_in_few_writes),
	T_CASE(readers_see_each_commit_at_once),
	T_CASE(a_killed_writer_keeps_every_commit),
	T_CASE(a_transaction_larger_than_the_buffer),
	T_CASE(rollbacks_and_wal_restarts_keep_it_whole),
	T_CASE(fills_beside_commits_keep_every_frame),
	T_CASE(a_fill_writes_zeros_past_the_end_only),
};

T_MAIN_ALL(cases, walbuf_setup, NULL, &tdir_log_fixture, &tp, 0)
