/*
 * invdb.c: the GRASP-03 inventory in graspd's database (see invdb.h).
 * The writer does what inventory.c's inv_add() does, step for step, with
 * rows in place of records: the comments name the inventory.c function
 * each part follows.
 */
#include <malloc.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "config.h"
#include "db.h"
#include "event.h"
#include "feed.h"
#include "fnv.h"
#include "hmap.h"
#include "invdb.h"
#include "log.h"
#include "mem.h"
#include "ready.h"
#include "store.h"

/*
 * The number of descendants of root r: the place of its last node
 * (schema step 8), one seek to the end of its run in inv_nodes_root.
 */
#define NDESC "(SELECT max(x.n) FROM inv_nodes x WHERE x.root = r.num)"
/*
 * The seq of the node event whose id is ?1: stored, or gone from the
 * store since it became a node (inv_gone); NULL if neither.
 */
#define SEQ_OF_ID \
	"coalesce((SELECT seq FROM events WHERE id = ?1)," \
	" (SELECT seq FROM inv_gone WHERE id = ?1))"

/* The writer's statements, prepared once (invdb_sql[]). */
enum invdb_stmt {
	W_REPO_GET,
	W_REPO_PUT,
	W_REPO_DEL,
	W_ROOT_GET,
	W_ROOT_PUT,
	W_ROOT_DELETE,
	W_NODE_PARENT,
	W_NODE_PUT,
	W_NODE_UNAUTHOR,
	W_ADDR_PARENT,
	W_ADDR_DEPTH,
	W_ADDR_PUT,
	W_ADDR_LOWER,
	W_BUMP,
	W_ROOT_BY_NUM,
	W_MAX_SEQ,
	W_COUNT
};

static const char *const invdb_sql[W_COUNT] = {
	[W_REPO_GET] = "SELECT created_at FROM inv_repos WHERE coord = ?1",
	[W_REPO_PUT] = "INSERT OR REPLACE INTO inv_repos (coord, owner, d,"
		       " created_at, level, relays, refused, maintainers)"
		       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	[W_REPO_DEL] = "DELETE FROM inv_repos WHERE coord = ?1"
		       " AND created_at <= ?2",
	[W_ROOT_GET] =
	    "SELECT num, author, deleted FROM inv_roots WHERE id = ?1",
	[W_ROOT_PUT] =
	    "INSERT OR IGNORE INTO inv_roots (id, author, kind, coord,"
	    " deleted) VALUES (?1, ?2, ?3, ?4, 0)",
	[W_ROOT_DELETE] = "UPDATE inv_roots SET deleted = 1 WHERE num = ?1",
	[W_NODE_PARENT] = "SELECT n.root, n.depth, r.deleted, " NDESC ", r.id"
			  " FROM inv_nodes n JOIN inv_roots r ON r.num = n.root"
			  " WHERE n.seq = " SEQ_OF_ID,
	[W_NODE_PUT] =
	    "INSERT OR IGNORE INTO inv_nodes (seq, root, n, depth, author)"
	    " VALUES (?1, ?2, ?3, ?4, ?5)",
	[W_NODE_UNAUTHOR] = "UPDATE inv_nodes SET author = NULL"
			    " WHERE seq = " SEQ_OF_ID " AND author = ?2",
	[W_ADDR_PARENT] = "SELECT a.root, a.depth, r.deleted, " NDESC ", r.id"
			  " FROM inv_addrs a JOIN inv_roots r ON r.num = a.root"
			  " WHERE a.addr = ?1",
	[W_ADDR_DEPTH] = "SELECT min(depth) FROM inv_addrs WHERE addr = ?1",
	[W_ADDR_PUT] = "INSERT OR IGNORE INTO inv_addrs (addr, root, depth)"
		       " VALUES (?1, ?2, ?3)",
	[W_ADDR_LOWER] = "UPDATE inv_addrs SET depth = ?2"
			 " WHERE addr = ?1 AND depth > ?2",
	/* The events' seq is AUTOINCREMENT: a seq above this one is an
	 * event the tables never saw. */
	[W_BUMP] = "UPDATE inv_state SET generation = generation + ?1,"
		   " seq = max(seq, coalesce((SELECT max(seq) FROM events), 0))"
		   " WHERE id = 1",
	[W_ROOT_BY_NUM] = "SELECT r.deleted, " NDESC ", r.id FROM inv_roots r"
			  " WHERE r.num = ?1",
	[W_MAX_SEQ] = "SELECT coalesce(max(seq), 0) FROM inv_nodes",
};

/*
 * Ours: the writer's bounded memory of the nodes and roots it wrote or
 * read lately, so that a reply's parent costs no search of the store
 * (four random pages at 200,000 events: the parent's seq by id, its
 * node, its root, the root's last place).  Each table is direct-mapped,
 * by id and by number; a slot wanted by another is overwritten.  Rows
 * of inv_nodes are never removed but by invdb_build(), and a node's rows
 * are all written by the invdb_add() that makes it, so an entry stays
 * true until a rollback or a build, which empty both tables
 * (invdb_discard()); an event added again forgets its entry first (a
 * new seq may have other rows, or none).  A root's node is not
 * overwritten by a descendant's: every NIP-22 comment names its thread's
 * root (E), while a comment is the parent of its direct replies only.
 * The roots' table holds as many as the nodes' (slots by number: the
 * latest roots each have theirs).
 */
#define INVDB_NODE_SLOTS 32768 /* 64 bytes each */
#define INVDB_ROOT_SLOTS 32768 /* 56 bytes each */
/* The roots a cached node may descend from; a node of more is not kept. */
#define INVDB_NODE_ROOTS 3

struct node_slot {
	uint8_t ns_id[EVENT_ID_LEN];
	int32_t ns_depth;
	int32_t ns_nroots; /* 0: an empty slot */
	int64_t ns_roots[INVDB_NODE_ROOTS];
};

struct root_slot {
	int64_t rs_num; /* 0: an empty slot (num starts at 1) */
	int64_t rs_ndesc;
	int32_t rs_deleted;
	uint8_t rs_id[EVENT_ID_LEN];
};

struct invdb {
	struct store	    *w_store;
	sqlite3		    *w_db;
	sqlite3_stmt	    *w_stmt[W_COUNT];
	/* An empty inventory: inv_announcement_relays() reads its own
	 * relay keys and target flags. */
	struct inventory    *w_cfg;
	const struct config *w_config;	/* outlives the writer */
	int		     w_changed; /* since the last invdb_flush() */
	/* What of the configuration the tables depend on (conf_mark()). */
	int64_t		     w_conf;
	struct node_slot    *w_nodes; /* INVDB_NODE_SLOTS */
	struct root_slot    *w_roots; /* INVDB_ROOT_SLOTS */
	/* The rows the invdb_add() under way wrote for its event. */
	int64_t		     w_new[INVDB_NODE_ROOTS];
	int		     w_nnew;   /* -1: rows it cannot all name */
	int		     w_newdep; /* their depth */
	/* The largest seq with node rows, -1 until read: a larger one has
	 * none but what its invdb_add() writes. */
	int64_t		     w_max_seq;
};

/*
 * Ours: the page cache of the one transaction that builds the tables
 * from a whole store, in KiB; DB_CACHE_KIB again after it.  The rows go
 * into three indexes in id, root and author order at once: with relayd's
 * everyday cache most inserts spilled a page (measured in
 * tests/bench/inventory.c).
 */
#define INVDB_BUILD_CACHE_KIB 65536


/* A root an event descends from, as add_descendant() collects them. */
struct invdb_parent_root {
	int64_t pr_num;
	uint8_t pr_id[EVENT_ID_LEN];
	int64_t pr_ndesc;
};

/*
 * The mark inv_state.built holds for tables built with iv's relay keys
 * and target flags, the configuration the repositories' relays depend on
 * (inv_announcement_relays() leaves our own relay out, and private
 * targets unless allowed): FNV-1a 64 of both, above 1 (1 was any
 * configuration's, 0 is unbuilt).  A database built by another instance
 * or under another NGIT_DOMAIN has another, and is built again.
 */
static int64_t
conf_mark(const struct inventory *iv)
{
	char	 flags[32];
	uint64_t h = FNV1A64_BASIS;
	int	 i;

	snprintf(flags, sizeof(flags), "%u", iv->iv_urlflags);
	h = fnv1a64(h, flags, strlen(flags));
	for (i = 0; i < iv->iv_nself; i++) {
		h = fnv1a64(h, "\n", 1);
		h = fnv1a64(h, iv->iv_self[i], strlen(iv->iv_self[i]));
	}
	return (int64_t)((h >> 2) | (1ULL << 61));
}

struct invdb *
invdb_new(struct store *st, const struct config *cfg)
{
	struct invdb *w = xcalloc(1, sizeof(*w));

	w->w_store = st;
	w->w_db = store_sqlite(st);
	w->w_cfg = inv_new_parts(cfg, 0);
	w->w_config = cfg;
	w->w_conf = conf_mark(w->w_cfg);
	w->w_nodes = xcalloc(INVDB_NODE_SLOTS, sizeof(*w->w_nodes));
	w->w_roots = xcalloc(INVDB_ROOT_SLOTS, sizeof(*w->w_roots));
	w->w_max_seq = -1;
	return w;
}

void
invdb_free(struct invdb *w)
{
	int i;

	if (w == NULL)
		return;
	for (i = 0; i < W_COUNT; i++)
		sqlite3_finalize(w->w_stmt[i]);
	inv_free(w->w_cfg);
	free(w->w_nodes);
	free(w->w_roots);
	free(w);
}

static struct node_slot *
node_slot(struct invdb *w, const uint8_t id[EVENT_ID_LEN])
{
	uint32_t h;

	memcpy(&h, id, sizeof(h)); /* an id is a hash already */
	return &w->w_nodes[h & (INVDB_NODE_SLOTS - 1)];
}

/* The cached node of id, or NULL. */
static const struct node_slot *
node_cached(struct invdb *w, const uint8_t id[EVENT_ID_LEN])
{
	struct node_slot *ns = node_slot(w, id);

	if (ns->ns_nroots == 0 || memcmp(ns->ns_id, id, EVENT_ID_LEN) != 0)
		return NULL;
	return ns;
}

static void
node_forget(struct invdb *w, const uint8_t id[EVENT_ID_LEN])
{
	struct node_slot *ns = node_slot(w, id);

	if (memcmp(ns->ns_id, id, EVENT_ID_LEN) == 0)
		ns->ns_nroots = 0;
}

/*
 * Keeps the node of id: depth, and all n of its roots (n > 0), in
 * ascending order as the store gives them (its key is seq, root); a
 * descendant leaves a slot that holds a root as it is.
 */
static void
node_keep(struct invdb *w, const uint8_t id[EVENT_ID_LEN], int depth,
    const int64_t *roots, int n)
{
	struct node_slot *ns = node_slot(w, id);
	int64_t		  t;
	int		  i, j;

	if (n <= 0 || n > INVDB_NODE_ROOTS)
		return;
	if (depth > 0 && ns->ns_nroots > 0 && ns->ns_depth == 0 &&
	    memcmp(ns->ns_id, id, EVENT_ID_LEN) != 0)
		return;
	memcpy(ns->ns_id, id, EVENT_ID_LEN);
	ns->ns_depth = depth;
	ns->ns_nroots = n;
	memcpy(ns->ns_roots, roots, (size_t)n * sizeof(*roots));
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && ns->ns_roots[j - 1] > ns->ns_roots[j];
		     j--) {
			t = ns->ns_roots[j];
			ns->ns_roots[j] = ns->ns_roots[j - 1];
			ns->ns_roots[j - 1] = t;
		}
}

/* Forgets every node and root (a rollback, a build). */
static void
cache_clear(struct invdb *w)
{
	w->w_max_seq = -1;
	memset(w->w_nodes, 0, INVDB_NODE_SLOTS * sizeof(*w->w_nodes));
	memset(w->w_roots, 0, INVDB_ROOT_SLOTS * sizeof(*w->w_roots));
}

static void
root_keep(struct invdb *w, int64_t num, int64_t ndesc, int deleted,
    const uint8_t id[EVENT_ID_LEN])
{
	struct root_slot *rs = &w->w_roots[num & (INVDB_ROOT_SLOTS - 1)];

	rs->rs_num = num;
	rs->rs_ndesc = ndesc;
	rs->rs_deleted = deleted;
	memcpy(rs->rs_id, id, EVENT_ID_LEN);
}

/* The cached root num, or NULL. */
static struct root_slot *
root_cached(struct invdb *w, int64_t num)
{
	struct root_slot *rs = &w->w_roots[num & (INVDB_ROOT_SLOTS - 1)];

	return rs->rs_num == num ? rs : NULL;
}

/* Notes a node row the invdb_add() under way wrote (put 1) or met (0). */
static void
node_written(struct invdb *w, int64_t root, int depth, int put)
{
	if (w->w_nnew < 0)
		return;
	if (put != 1 || w->w_nnew == INVDB_NODE_ROOTS ||
	    (w->w_nnew > 0 && w->w_newdep != depth)) {
		w->w_nnew = -1;
		return;
	}
	w->w_newdep = depth;
	w->w_new[w->w_nnew++] = root;
}

static int
werr(struct invdb *w, const char *what)
{
	log_warnx("inventory tables: %s: %s", what, sqlite3_errmsg(w->w_db));
	return -1;
}

/* Statement which, reset and unbound; NULL after logging. */
static sqlite3_stmt *
wstmt(struct invdb *w, enum invdb_stmt which)
{
	sqlite3_stmt *st = w->w_stmt[which];

	if (st == NULL) {
		if (sqlite3_prepare_v3(w->w_db, invdb_sql[which], -1,
			SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
			werr(w, invdb_sql[which]);
			return NULL;
		}
		w->w_stmt[which] = st;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return st;
}

/* Steps st, a statement without rows: the rows it changed, or -1. */
static int
wdone(struct invdb *w, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return werr(w, sqlite3_sql(st));
	return sqlite3_changes(w->w_db);
}

/* add_announcement(): a Full repository, unless an older version. */
static int
add_announcement(struct invdb *w, const struct event *ev)
{
	const struct estr      *d = event_tag_value(ev, "d");
	const struct event_tag *mt = NULL;
	char	      coord[INV_COORD_MAX], *relays[INV_MAX_REPO_RELAYS];
	struct buf    rl = BUF_INIT;
	uint8_t	     *maint = NULL;
	size_t	      n, i, nmaint = 0, refused = 0;
	uint32_t      k;
	sqlite3_stmt *st;
	int	      rc;

	if (d == NULL || d->len == 0 || d->len > 1000)
		return 0;
	snprintf(coord, sizeof(coord), "30617:%s:%s", ev->pubkey_hex, d->s);
	if ((st = wstmt(w, W_REPO_GET)) == NULL ||
	    sqlite3_bind_text(st, 1, coord, -1, SQLITE_STATIC) != SQLITE_OK)
		return werr(w, "bind");
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && ev->created_at < sqlite3_column_int64(st, 0)) {
		/* Older announcements change nothing. */
		sqlite3_reset(st);
		return 0;
	}
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return werr(w, "repository");
	n = inv_announcement_relays(w->w_cfg, ev, relays, INV_MAX_REPO_RELAYS,
	    &refused);
	for (i = 0; i < n; i++) {
		buf_printf(&rl, "%s%s", i ? "\n" : "", relays[i]);
		free(relays[i]);
	}
	/* The first "maintainers" tag (reference brief 1.3). */
	for (k = 0; k < ev->ntags && mt == NULL; k++)
		if (strcmp(ev->tags[k].v[0].s, "maintainers") == 0)
			mt = &ev->tags[k];
	if (mt != NULL && mt->n > 1) {
		maint = xreallocarray(NULL, mt->n - 1, PUBKEY_LEN);
		for (k = 1; k < mt->n; k++)
			if (hex_decode(mt->v[k].s, mt->v[k].len,
				maint + nmaint * PUBKEY_LEN, PUBKEY_LEN) == 0)
				nmaint++;
	}
	rc = -1;
	if ((st = wstmt(w, W_REPO_PUT)) == NULL)
		goto out;
	if (sqlite3_bind_text(st, 1, coord, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_blob(st, 2, ev->pubkey, PUBKEY_LEN, SQLITE_STATIC) !=
		SQLITE_OK ||
	    sqlite3_bind_text(st, 3, d->s, (int)d->len, SQLITE_STATIC) !=
		SQLITE_OK ||
	    sqlite3_bind_int64(st, 4, ev->created_at) != SQLITE_OK ||
	    sqlite3_bind_int(st, 5, INV_FULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 6, rl.b_len ? rl.b_data : "", (int)rl.b_len,
		SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 7, (int64_t)refused) != SQLITE_OK ||
	    sqlite3_bind_blob(st, 8, maint ? (void *)maint : (void *)"",
		(int)(nmaint * PUBKEY_LEN), SQLITE_STATIC) != SQLITE_OK) {
		werr(w, "bind");
		goto out;
	}
	if (wdone(w, st) == -1)
		goto out;
	rc = INVDB_CHANGED | INVDB_WIDE;
out:
	buf_free(&rl);
	free(maint);
	return rc;
}

/* The root whose id is id: its num, author and deletion; 0 if none. */
static int
root_get(struct invdb *w, const uint8_t id[EVENT_ID_LEN], int64_t *num,
    uint8_t author[PUBKEY_LEN], int *deleted)
{
	sqlite3_stmt *st;
	int	      rc;

	if ((st = wstmt(w, W_ROOT_GET)) == NULL ||
	    sqlite3_bind_blob(st, 1, id, EVENT_ID_LEN, SQLITE_STATIC) !=
		SQLITE_OK)
		return werr(w, "bind");
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*num = sqlite3_column_int64(st, 0);
		if (author != NULL && sqlite3_column_bytes(st, 1) == PUBKEY_LEN)
			memcpy(author, sqlite3_column_blob(st, 1), PUBKEY_LEN);
		*deleted = sqlite3_column_int(st, 2);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return werr(w, "root");
	return rc == SQLITE_ROW;
}

/*
 * Adds the node of the event stored as seq for root num at place n (0
 * for the root's own, else its number of descendants so far plus one):
 * 1, or 0 if it was there.
 */
static int
node_put(struct invdb *w, int64_t seq, int64_t root, int64_t n, int depth,
    const uint8_t author[PUBKEY_LEN])
{
	sqlite3_stmt *st;

	if ((st = wstmt(w, W_NODE_PUT)) == NULL ||
	    sqlite3_bind_int64(st, 1, seq) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 2, root) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 3, n) != SQLITE_OK ||
	    sqlite3_bind_int(st, 4, depth) != SQLITE_OK ||
	    sqlite3_bind_blob(st, 5, author, PUBKEY_LEN, SQLITE_STATIC) !=
		SQLITE_OK)
		return werr(w, "bind");
	return wdone(w, st);
}

/*
 * add_root(): ev, a patch, PR or issue naming a repository ("a" of kind
 * 30617), becomes a root.  *is_root is set if ev is (now) one.
 */
static int
add_root(struct invdb *w, const struct event *ev, int64_t seq, int *is_root)
{
	const struct estr *a;
	sqlite3_stmt	  *st;
	int64_t		   num;
	int		   n;

	if ((a = inv_root_repo(ev)) == NULL)
		return 0;
	if ((st = wstmt(w, W_ROOT_PUT)) == NULL ||
	    sqlite3_bind_blob(st, 1, ev->id, EVENT_ID_LEN, SQLITE_STATIC) !=
		SQLITE_OK ||
	    sqlite3_bind_blob(st, 2, ev->pubkey, PUBKEY_LEN, SQLITE_STATIC) !=
		SQLITE_OK ||
	    sqlite3_bind_int64(st, 3, ev->kind) != SQLITE_OK ||
	    sqlite3_bind_text(st, 4, a->s, (int)a->len, SQLITE_STATIC) !=
		SQLITE_OK)
		return werr(w, "bind");
	/* A root already (the same event fed again): nothing new. */
	if ((n = wdone(w, st)) <= 0) {
		*is_root = n == 0;
		return n;
	}
	num = sqlite3_last_insert_rowid(w->w_db);
	/* The root's own node, depth 0: its author takes part. */
	if ((n = node_put(w, seq, num, 0, 0, ev->pubkey)) == -1)
		return -1;
	node_written(w, num, 0, n);
	root_keep(w, num, 0, 0, ev->id);
	*is_root = 1;
	return INVDB_CHANGED | INVDB_ROOTED;
}

/*
 * Root num's liveness, descendants and id into *out, from the cache or
 * the store: 1, 0 if there is no such root, -1 on a database error.
 */
static int
root_info(struct invdb *w, int64_t num, struct root_slot *out)
{
	struct root_slot *rs;
	sqlite3_stmt	 *st;
	int		  rc;

	if ((rs = root_cached(w, num)) != NULL) {
		*out = *rs;
		return 1;
	}
	if ((st = wstmt(w, W_ROOT_BY_NUM)) == NULL ||
	    sqlite3_bind_int64(st, 1, num) != SQLITE_OK)
		return werr(w, "bind");
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_bytes(st, 2) == EVENT_ID_LEN)
		root_keep(w, num, sqlite3_column_int64(st, 1),
		    sqlite3_column_int(st, 0), sqlite3_column_blob(st, 2));
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return werr(w, "root by number");
	if ((rs = root_cached(w, num)) == NULL)
		return 0;
	*out = *rs;
	return 1;
}

/* parent_roots() for a node the writer knows: the same answer. */
static int
cached_parent_roots(struct invdb *w, const struct node_slot *ns,
    struct invdb_parent_root *roots, size_t *nroots, int *depth)
{
	struct root_slot r;
	size_t		 k;
	int		 i, rc, found = 0;

	/* Every row of a node has the node's depth. */
	if (ns->ns_depth >= INV_MAX_DEPTH)
		return 0;
	for (i = 0; i < ns->ns_nroots; i++) {
		if ((rc = root_info(w, ns->ns_roots[i], &r)) == -1)
			return -1;
		if (rc == 0)
			continue;
		if (!found && ns->ns_depth + 1 < *depth)
			*depth = ns->ns_depth + 1;
		found = 1;
		if (r.rs_deleted)
			continue;
		for (k = 0; k < *nroots; k++)
			if (roots[k].pr_num == r.rs_num)
				break;
		if (k < *nroots || *nroots == INV_EV_ROOTS)
			continue;
		roots[k].pr_num = r.rs_num;
		roots[k].pr_ndesc = r.rs_ndesc;
		memcpy(roots[k].pr_id, r.rs_id, EVENT_ID_LEN);
		(*nroots)++;
	}
	return found;
}

/*
 * The roots, depth and liveness a parent (an id, or an address if addr
 * is not NULL) leads to, added to roots[*nroots] (deduplicated, live
 * ones, at most INV_EV_ROOTS); *depth lowered to its depth plus one.
 * Returns 1 if the parent is a node within the depth bound, 0 if not,
 * -1 on a database error.
 */
static int
parent_roots(struct invdb *w, const uint8_t *id, const struct estr *addr,
    struct invdb_parent_root *roots, size_t *nroots, int *depth)
{
	const struct node_slot *ns;
	sqlite3_stmt	       *st;
	size_t			k;
	int64_t			seen[INVDB_NODE_ROOTS];
	int			rc, found = 0, pd = 0, nseen = 0;

	if (addr == NULL && (ns = node_cached(w, id)) != NULL)
		return cached_parent_roots(w, ns, roots, nroots, depth);
	if (addr != NULL) {
		if ((st = wstmt(w, W_ADDR_PARENT)) == NULL ||
		    sqlite3_bind_text(st, 1, addr->s, (int)addr->len,
			SQLITE_STATIC) != SQLITE_OK)
			return werr(w, "bind");
	} else if ((st = wstmt(w, W_NODE_PARENT)) == NULL ||
	    sqlite3_bind_blob(st, 1, id, EVENT_ID_LEN, SQLITE_STATIC) !=
		SQLITE_OK)
		return werr(w, "bind");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t num = sqlite3_column_int64(st, 0);

		pd = sqlite3_column_int(st, 1);
		if (pd >= INV_MAX_DEPTH) {
			/* Every row of a node has the node's depth. */
			found = 0;
			break;
		}
		if (!found && pd + 1 < *depth)
			*depth = pd + 1;
		found = 1;
		if (sqlite3_column_bytes(st, 4) != EVENT_ID_LEN) {
			nseen = -1;
			continue;
		}
		root_keep(w, num, sqlite3_column_int64(st, 3),
		    sqlite3_column_int(st, 2), sqlite3_column_blob(st, 4));
		if (nseen >= 0 && nseen < INVDB_NODE_ROOTS)
			seen[nseen++] = num;
		else
			nseen = -1;
		if (sqlite3_column_int(st, 2))
			continue;
		for (k = 0; k < *nroots; k++)
			if (roots[k].pr_num == num)
				break;
		if (k < *nroots || *nroots == INV_EV_ROOTS)
			continue;
		roots[k].pr_num = num;
		roots[k].pr_ndesc = sqlite3_column_int64(st, 3);
		memcpy(roots[k].pr_id, sqlite3_column_blob(st, 4),
		    EVENT_ID_LEN);
		(*nroots)++;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		sqlite3_reset(st);
		return werr(w, "parent");
	}
	sqlite3_reset(st);
	/* Every row of the node was read: it is known from now on. */
	if (addr == NULL && found && nseen > 0)
		node_keep(w, id, pd, seen, nseen);
	return found;
}

/* addr_node_get() and node_add_root() for address addr and root. */
static int
addr_put(struct invdb *w, const char *addr, int64_t root, int depth)
{
	sqlite3_stmt *st;
	int	      rc;

	if ((st = wstmt(w, W_ADDR_DEPTH)) == NULL ||
	    sqlite3_bind_text(st, 1, addr, -1, SQLITE_STATIC) != SQLITE_OK)
		return werr(w, "bind");
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL &&
	    sqlite3_column_int(st, 0) < depth)
		depth = sqlite3_column_int(st, 0);
	sqlite3_reset(st);
	if (rc != SQLITE_ROW)
		return werr(w, "address depth");
	if ((st = wstmt(w, W_ADDR_PUT)) == NULL ||
	    sqlite3_bind_text(st, 1, addr, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 2, root) != SQLITE_OK ||
	    sqlite3_bind_int(st, 3, depth) != SQLITE_OK)
		return werr(w, "bind");
	if (wdone(w, st) == -1)
		return -1;
	if ((st = wstmt(w, W_ADDR_LOWER)) == NULL ||
	    sqlite3_bind_text(st, 1, addr, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int(st, 2, depth) != SQLITE_OK)
		return werr(w, "bind");
	return wdone(w, st) == -1 ? -1 : 0;
}

/*
 * The live roots ev's parents (e/E/q ids, a/A/q addresses already known
 * as nodes) descend from, in roots, and the depth ev's node takes.
 */
static int
collect_roots(struct invdb *w, const struct event *ev,
    struct invdb_parent_root *roots, size_t *nroots, int *depth)
{
	const struct estr *found[INV_EV_FOUND];
	size_t		   nfound = 0, f;
	uint8_t		   id[EVENT_ID_LEN];
	uint32_t	   t;
	int		   rc;

	for (t = 0; t < ev->ntags; t++) {
		const struct event_tag *tg = &ev->tags[t];
		const struct estr      *v = &tg->v[1];

		if (!inv_id_parent_tag(tg) && !inv_addr_parent_tag(tg))
			continue;
		/* A value that already led to a node adds nothing again
		 * (NIP-22 names a top-level comment's root twice, E and e). */
		for (f = 0; f < nfound; f++)
			if (found[f]->len == v->len &&
			    memcmp(found[f]->s, v->s, v->len) == 0)
				break;
		if (f < nfound)
			continue;
		if (inv_id_parent_tag(tg) &&
		    hex_decode(v->s, v->len, id, EVENT_ID_LEN) == 0)
			rc = parent_roots(w, id, NULL, roots, nroots, depth);
		else if (inv_addr_parent_tag(tg) && memchr(v->s, ':', v->len))
			rc = parent_roots(w, NULL, v, roots, nroots, depth);
		else
			continue;
		if (rc == -1)
			return -1;
		if (rc == 1 && nfound < INV_EV_FOUND)
			found[nfound++] = v;
	}
	return 0;
}

/*
 * add_descendant(): ev becomes a descendant of the roots its parents
 * descend from, within the bounds.  is_root: ev is a root itself (its
 * node keeps depth 0).
 */
static int
add_descendant(struct invdb *w, const struct event *ev, int64_t seq,
    int is_root)
{
	struct invdb_parent_root roots[INV_EV_ROOTS];
	size_t			 nroots = 0, k;
	int			 depth = INV_MAX_DEPTH + 1, n, changed = 0;
	char			 addr[INV_COORD_MAX];

	if (collect_roots(w, ev, roots, &nroots, &depth) == -1)
		return -1;
	if (nroots == 0)
		return 0;
	if (is_root)
		depth = 0;
	inv_event_addr(ev, addr, sizeof(addr));
	for (k = 0; k < nroots; k++) {
		if (memcmp(roots[k].pr_id, ev->id, EVENT_ID_LEN) == 0 ||
		    roots[k].pr_ndesc >= INV_MAX_DESCENDANTS)
			continue;
		if ((n = node_put(w, seq, roots[k].pr_num,
			 roots[k].pr_ndesc + 1, depth, ev->pubkey)) == -1)
			return -1;
		node_written(w, roots[k].pr_num, depth, n);
		if (n == 0)
			continue;
		/* A live root (collect_roots() skips the deleted). */
		root_keep(w, roots[k].pr_num, roots[k].pr_ndesc + 1, 0,
		    roots[k].pr_id);
		if (addr[0] && addr_put(w, addr, roots[k].pr_num, depth) == -1)
			return -1;
		changed = INVDB_CHANGED | INVDB_ROOTED;
	}
	return changed;
}

/* delete_descendant() and the root part of apply_deletion() for id. */
static int
delete_id(struct invdb *w, const struct event *ev,
    const uint8_t id[EVENT_ID_LEN])
{
	uint8_t		  author[PUBKEY_LEN];
	struct root_slot *rs;
	sqlite3_stmt	 *st;
	int64_t		  num;
	int		  deleted, rc, n;

	if ((rc = root_get(w, id, &num, author, &deleted)) == -1)
		return -1;
	if (rc == 1) {
		if (deleted || memcmp(author, ev->pubkey, PUBKEY_LEN) != 0)
			return 0;
		if ((st = wstmt(w, W_ROOT_DELETE)) == NULL ||
		    sqlite3_bind_int64(st, 1, num) != SQLITE_OK)
			return werr(w, "bind");
		if (wdone(w, st) == -1)
			return -1;
		if ((rs = root_cached(w, num)) != NULL)
			rs->rs_deleted = 1;
		return INVDB_CHANGED | INVDB_WIDE;
	}
	/* NIP-09: its author withdraws a descendant: the thread keeps it,
	 * but no longer counts them as taking part through it. */
	if ((st = wstmt(w, W_NODE_UNAUTHOR)) == NULL ||
	    sqlite3_bind_blob(st, 1, id, EVENT_ID_LEN, SQLITE_STATIC) !=
		SQLITE_OK ||
	    sqlite3_bind_blob(st, 2, ev->pubkey, PUBKEY_LEN, SQLITE_STATIC) !=
		SQLITE_OK)
		return werr(w, "bind");
	if ((n = wdone(w, st)) == -1)
		return -1;
	return n > 0 ? INVDB_CHANGED | INVDB_WIDE : 0;
}

/* apply_deletion(): NIP-09 by the author of a root, descendant or repo. */
static int
apply_deletion(struct invdb *w, const struct event *ev)
{
	uint8_t	      id[EVENT_ID_LEN], pk[PUBKEY_LEN];
	const char   *d;
	size_t	      dlen;
	uint32_t      t, kind;
	sqlite3_stmt *st;
	int	      rc, n, changed = 0;

	for (t = 0; t < ev->ntags; t++) {
		const struct event_tag *tg = &ev->tags[t];

		if (tg->n < 2)
			continue;
		if (strcmp(tg->v[0].s, "e") == 0) {
			if (hex_decode(tg->v[1].s, tg->v[1].len, id,
				EVENT_ID_LEN) == -1)
				continue;
			if ((rc = delete_id(w, ev, id)) == -1)
				return -1;
			changed |= rc;
		} else if (strcmp(tg->v[0].s, "a") == 0 &&
		    coord_parse(tg->v[1].s, tg->v[1].len, &kind, pk, &d,
			&dlen) == 0 &&
		    kind == KIND_REPO_ANNOUNCEMENT &&
		    memcmp(pk, ev->pubkey, PUBKEY_LEN) == 0) {
			/* NIP-09: versions up to the deletion's time only;
			 * a newer announcement stays (so does the store). */
			if ((st = wstmt(w, W_REPO_DEL)) == NULL ||
			    sqlite3_bind_text(st, 1, tg->v[1].s,
				(int)tg->v[1].len,
				SQLITE_STATIC) != SQLITE_OK ||
			    sqlite3_bind_int64(st, 2, ev->created_at) !=
				SQLITE_OK)
				return werr(w, "bind");
			if ((n = wdone(w, st)) == -1)
				return -1;
			if (n > 0)
				changed |= INVDB_CHANGED | INVDB_WIDE;
		}
	}
	return changed;
}

int
invdb_add(struct invdb *w, const struct event *ev, int64_t seq)
{
	int rc = 0, d, is_root = 0;

	/* Fed again, the event may have a new seq with other rows, or none;
	 * a seq that may have rows already is not kept (w_nnew -1). */
	node_forget(w, ev->id);
	w->w_nnew = 0;
	if (w->w_max_seq < 0) {
		sqlite3_stmt *st = wstmt(w, W_MAX_SEQ);

		if (st != NULL && sqlite3_step(st) == SQLITE_ROW)
			w->w_max_seq = sqlite3_column_int64(st, 0);
		if (st != NULL)
			sqlite3_reset(st);
	}
	if (w->w_max_seq < 0 || seq <= w->w_max_seq)
		w->w_nnew = -1;
	else
		w->w_max_seq = seq;
	switch (ev->kind) {
	case KIND_REPO_ANNOUNCEMENT:
		rc = add_announcement(w, ev);
		break;
	case KIND_DELETION:
		rc = apply_deletion(w, ev);
		break;
	case KIND_PATCH:
	case KIND_PR:
	case KIND_ISSUE:
		rc = add_root(w, ev, seq, &is_root);
		/* Roots may also answer another thread (patch revisions
		 * do). */
		if (rc != -1 && (d = add_descendant(w, ev, seq, is_root)) != 0)
			rc = d == -1 ? -1 : rc | d;
		break;
	default:
		rc = add_descendant(w, ev, seq, 0);
		break;
	}
	if (rc > 0)
		w->w_changed = 1;
	if (rc != -1 && w->w_nnew > 0)
		node_keep(w, ev->id, w->w_newdep, w->w_new, w->w_nnew);
	return rc;
}

int
invdb_flush(struct invdb *w)
{
	sqlite3_stmt *st;

	if ((st = wstmt(w, W_BUMP)) == NULL ||
	    sqlite3_bind_int(st, 1, w->w_changed != 0) != SQLITE_OK ||
	    wdone(w, st) != 1)
		return -1;
	w->w_changed = 0;
	return 0;
}

void
invdb_discard(struct invdb *w)
{
	w->w_changed = 0;
	cache_clear(w);
}

/* ------------------------------------------------------------------ */
/* Building from the store.                                            */

/*
 * The tables are built from an inventory made in memory the way the
 * roles made theirs at start (inv_rebuild(): about a second for a
 * million events), its rows written in the order of each table's key,
 * the indexes made after them: fed one event at a time through
 * invdb_add(), the three indexes' pages were inserted into at random and
 * a million events took minutes.
 */
struct build_node {
	uint8_t	 bn_id[EVENT_ID_LEN];
	uint8_t	 bn_author[PUBKEY_LEN];
	int64_t	 bn_seq;   /* events.seq, from bn_id */
	uint32_t bn_root;  /* inv_roots.num */
	uint32_t bn_place; /* inv_nodes.n */
	uint8_t	 bn_depth;
	uint8_t	 bn_has_author;
};

struct build_addr {
	char	*ba_addr;
	uint32_t ba_root;
	uint8_t	 ba_depth;
};

struct build {
	struct invdb	  *b_w;
	struct build_node *b_nodes;
	size_t		   b_nnodes, b_capnodes;
	struct build_addr *b_addrs;
	size_t		   b_naddrs, b_capaddrs;
	int		   b_failed;
};

static void
build_root(void *arg, const struct inv_root *rt)
{
	static const char sql[] =
	    "INSERT INTO inv_roots (num, id, author, kind, coord, deleted)"
	    " VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
	struct build *b = arg;
	sqlite3_stmt *st;

	if (b->b_failed)
		return;
	if ((st = store_cached(b->b_w->w_store, sql)) == NULL ||
	    sqlite3_bind_int64(st, 1, (int64_t)rt->rt_num + 1) != SQLITE_OK ||
	    sqlite3_bind_blob(st, 2, rt->rt_id, EVENT_ID_LEN, SQLITE_STATIC) !=
		SQLITE_OK ||
	    sqlite3_bind_blob(st, 3, rt->rt_author, PUBKEY_LEN,
		SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 4, rt->rt_kind) != SQLITE_OK ||
	    sqlite3_bind_text(st, 5, rt->rt_coord, -1, SQLITE_STATIC) !=
		SQLITE_OK ||
	    sqlite3_bind_int(st, 6, rt->rt_deleted) != SQLITE_OK ||
	    wdone(b->b_w, st) == -1)
		b->b_failed = 1;
}

static void
build_node(void *arg, const uint8_t id[EVENT_ID_LEN], uint32_t root,
    uint32_t place, unsigned depth, const uint8_t *author)
{
	struct build	  *b = arg;
	struct build_node *n;

	if (b->b_nnodes == b->b_capnodes) {
		b->b_capnodes = b->b_capnodes ? b->b_capnodes * 2 : 1024;
		b->b_nodes = xreallocarray(b->b_nodes, b->b_capnodes,
		    sizeof(*b->b_nodes));
	}
	n = &b->b_nodes[b->b_nnodes++];
	memcpy(n->bn_id, id, EVENT_ID_LEN);
	n->bn_root = root + 1;
	n->bn_place = place;
	n->bn_depth = (uint8_t)depth;
	n->bn_has_author = author != NULL;
	if (author != NULL)
		memcpy(n->bn_author, author, PUBKEY_LEN);
}

static void
build_addr(void *arg, const char *addr, uint32_t root, unsigned depth)
{
	struct build	  *b = arg;
	struct build_addr *a;

	if (b->b_naddrs == b->b_capaddrs) {
		b->b_capaddrs = b->b_capaddrs ? b->b_capaddrs * 2 : 64;
		b->b_addrs = xreallocarray(b->b_addrs, b->b_capaddrs,
		    sizeof(*b->b_addrs));
	}
	a = &b->b_addrs[b->b_naddrs++];
	a->ba_addr = xstrdup(addr);
	a->ba_root = root + 1;
	a->ba_depth = (uint8_t)depth;
}

static int
node_cmp(const void *x, const void *y)
{
	const struct build_node *a = x, *b = y;

	if (a->bn_seq != b->bn_seq)
		return (a->bn_seq > b->bn_seq) - (a->bn_seq < b->bn_seq);
	return (a->bn_root > b->bn_root) - (a->bn_root < b->bn_root);
}

/*
 * The seq of every node's event, from its id.  The inventory was fed the
 * stored events, so each has one; one that has not (a program deleting
 * beside the build's transaction cannot: it holds the write lock) is
 * left out, and the count of those is logged.
 */
static int
build_seqs(struct build *b)
{
	static const char sql[] = "SELECT seq FROM events WHERE id = ?1";
	struct store	 *s = b->b_w->w_store;
	sqlite3_stmt	 *st;
	size_t		  i, kept = 0;
	int		  rc;

	for (i = 0; i < b->b_nnodes; i++) {
		struct build_node *n = &b->b_nodes[i];

		if ((st = store_cached(s, sql)) == NULL ||
		    sqlite3_bind_blob(st, 1, n->bn_id, EVENT_ID_LEN,
			SQLITE_STATIC) != SQLITE_OK)
			return -1;
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			n->bn_seq = sqlite3_column_int64(st, 0);
			b->b_nodes[kept++] = *n;
		}
		sqlite3_reset(st);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			return werr(b->b_w, "node seq");
		if ((i & 1023) == 0)
			ready_progress();
	}
	if (kept < b->b_nnodes)
		log_warnx("inventory tables: %zu nodes without a stored event",
		    b->b_nnodes - kept);
	b->b_nnodes = kept;
	return 0;
}

static int
addr_cmp(const void *x, const void *y)
{
	const struct build_addr *a = x, *b = y;
	int			 c = strcmp(a->ba_addr, b->ba_addr);

	if (c != 0)
		return c;
	return (a->ba_root > b->ba_root) - (a->ba_root < b->ba_root);
}

/* Sets the page cache to kib KiB, giving back what it no longer needs. */
static int
set_cache(struct invdb *w, int kib)
{
	char sql[64];

	snprintf(sql, sizeof(sql), "PRAGMA cache_size = -%d", kib);
	if (sqlite3_exec(w->w_db, sql, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_db_release_memory(w->w_db) != SQLITE_OK)
		return werr(w, "cache size");
	/* The build's pages, freed, go back to the kernel. */
	malloc_trim(0);
	return 0;
}

/* Writes iv's repositories. */
static int
build_repos(struct invdb *w, const struct inventory *iv)
{
	struct inv_repo *r;
	struct buf	 rl = BUF_INIT;
	sqlite3_stmt	*st;
	size_t		 it, i;
	int		 rc = 0;

	for (it = 0; rc == 0 && (r = inv_repo_next(iv, &it)) != NULL;) {
		buf_reset(&rl);
		for (i = 0; i < r->ir_nrelays; i++)
			buf_printf(&rl, "%s%s", i ? "\n" : "", r->ir_relays[i]);
		if ((st = wstmt(w, W_REPO_PUT)) == NULL ||
		    sqlite3_bind_text(st, 1, r->ir_coord, -1, SQLITE_STATIC) !=
			SQLITE_OK ||
		    sqlite3_bind_blob(st, 2, r->ir_owner, PUBKEY_LEN,
			SQLITE_STATIC) != SQLITE_OK ||
		    sqlite3_bind_text(st, 3, r->ir_d, -1, SQLITE_STATIC) !=
			SQLITE_OK ||
		    sqlite3_bind_int64(st, 4, r->ir_created_at) != SQLITE_OK ||
		    sqlite3_bind_int(st, 5, r->ir_level) != SQLITE_OK ||
		    sqlite3_bind_text(st, 6, rl.b_len ? rl.b_data : "",
			(int)rl.b_len, SQLITE_STATIC) != SQLITE_OK ||
		    sqlite3_bind_int64(st, 7, (int64_t)r->ir_refused) !=
			SQLITE_OK ||
		    sqlite3_bind_blob(st, 8,
			r->ir_nmaint ? (const void *)r->ir_maint : "",
			(int)(r->ir_nmaint * PUBKEY_LEN),
			SQLITE_STATIC) != SQLITE_OK ||
		    wdone(w, st) == -1)
			rc = -1;
	}
	buf_free(&rl);
	return rc;
}

/* Writes the collected node and address rows in key order. */
static int
build_rows(struct build *b)
{
	static const char nsql[] =
	    "INSERT INTO inv_nodes (seq, root, n, depth, author)"
	    " VALUES (?1, ?2, ?3, ?4, ?5)";
	static const char asql[] =
	    "INSERT INTO inv_addrs (addr, root, depth) VALUES (?1, ?2, ?3)";
	struct store *s = b->b_w->w_store;
	sqlite3_stmt *st;
	size_t	      i;

	if (build_seqs(b) == -1)
		return -1;
	/* qsort() of NULL is undefined even for no element (an empty
	 * store): UBSan stops relayd there. */
	if (b->b_nnodes > 0)
		qsort(b->b_nodes, b->b_nnodes, sizeof(*b->b_nodes), node_cmp);
	if (b->b_naddrs > 0)
		qsort(b->b_addrs, b->b_naddrs, sizeof(*b->b_addrs), addr_cmp);
	for (i = 0; i < b->b_nnodes; i++) {
		const struct build_node *n = &b->b_nodes[i];

		if ((st = store_cached(s, nsql)) == NULL ||
		    sqlite3_bind_int64(st, 1, n->bn_seq) != SQLITE_OK ||
		    sqlite3_bind_int64(st, 2, n->bn_root) != SQLITE_OK ||
		    sqlite3_bind_int64(st, 3, n->bn_place) != SQLITE_OK ||
		    sqlite3_bind_int(st, 4, n->bn_depth) != SQLITE_OK ||
		    (n->bn_has_author &&
			sqlite3_bind_blob(st, 5, n->bn_author, PUBKEY_LEN,
			    SQLITE_STATIC) != SQLITE_OK) ||
		    wdone(b->b_w, st) == -1)
			return -1;
		if ((i & 1023) == 0)
			ready_progress();
	}
	for (i = 0; i < b->b_naddrs; i++) {
		const struct build_addr *a = &b->b_addrs[i];

		if ((st = store_cached(s, asql)) == NULL ||
		    sqlite3_bind_text(st, 1, a->ba_addr, -1, SQLITE_STATIC) !=
			SQLITE_OK ||
		    sqlite3_bind_int64(st, 2, a->ba_root) != SQLITE_OK ||
		    sqlite3_bind_int(st, 3, a->ba_depth) != SQLITE_OK ||
		    wdone(b->b_w, st) == -1)
			return -1;
	}
	return 0;
}

/*
 * The tables' secondary indexes, dropped for the build and made again
 * after it from their own SQL (sqlite_master), so that they are defined
 * once, in the schema (db.c).
 */
static int
indexes(struct invdb *w, struct buf *saved, int drop)
{
	static const char sql[] =
	    "SELECT name, sql FROM sqlite_master WHERE type = 'index'"
	    " AND tbl_name IN ('inv_nodes', 'inv_addrs') AND sql IS NOT NULL";
	sqlite3_stmt *st;
	char	     *p, *next, buf[128], name[64];
	int	      rc;

	if (!drop) {
		for (p = saved->b_data; p != NULL && *p != '\0'; p = next) {
			if ((next = strchr(p, '\n')) != NULL)
				*next++ = '\0';
			if (sqlite3_exec(w->w_db, p, NULL, NULL, NULL) !=
			    SQLITE_OK)
				return werr(w, "make index");
		}
		return 0;
	}
	buf_reset(saved);
	if (sqlite3_prepare_v2(w->w_db, sql, -1, &st, NULL) != SQLITE_OK)
		return werr(w, "indexes");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		buf_printf(saved, "%s\n", sqlite3_column_text(st, 1));
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return werr(w, "indexes");
	/* The names, to drop them: "CREATE INDEX name ON ...". */
	for (p = saved->b_data; p != NULL && *p != '\0';) {
		if (sscanf(p, "CREATE INDEX %63s", name) != 1)
			return werr(w, "index sql");
		snprintf(buf, sizeof(buf), "DROP INDEX %s", name);
		if (sqlite3_exec(w->w_db, buf, NULL, NULL, NULL) != SQLITE_OK)
			return werr(w, "drop index");
		if ((p = strchr(p, '\n')) != NULL)
			p++;
	}
	return 0;
}

int
invdb_build(struct invdb *w)
{
	const struct inv_rows cb = { build_root, build_node, build_addr };
	struct build	      b = { .b_w = w };
	struct inventory     *iv = NULL;
	struct buf	      saved = BUF_INIT;
	int64_t		      last;
	int		      n = -1;
	size_t		      i;
	char		      sql[80];

	cache_clear(w);
	if (set_cache(w, INVDB_BUILD_CACHE_KIB) == -1 ||
	    store_begin(w->w_store) == -1)
		return -1;
	if (sqlite3_exec(w->w_db,
		"DELETE FROM inv_repos; DELETE FROM inv_roots;"
		" DELETE FROM inv_nodes; DELETE FROM inv_addrs;"
		" DELETE FROM inv_gone;",
		NULL, NULL, NULL) != SQLITE_OK) {
		werr(w, "empty");
		goto fail;
	}
	iv = inv_new(w->w_config);
	if (store_last_seq(w->w_store, &last) == -1 ||
	    (n = inv_rebuild(iv, w->w_store, last)) == -1)
		goto fail;
	if (build_repos(w, iv) == -1)
		goto fail;
	inv_each_row(iv, &cb, &b);
	inv_free(iv);
	iv = NULL;
	if (b.b_failed || indexes(w, &saved, 1) == -1 || build_rows(&b) == -1 ||
	    indexes(w, &saved, 0) == -1)
		goto fail;
	w->w_changed = 1;
	snprintf(sql, sizeof(sql),
	    "UPDATE inv_state SET built = %lld WHERE id = 1",
	    (long long)w->w_conf);
	if (invdb_flush(w) == -1 ||
	    sqlite3_exec(w->w_db, sql, NULL, NULL, NULL) != SQLITE_OK) {
		werr(w, "built");
		goto fail;
	}
	if (store_commit(w->w_store) == -1)
		goto fail;
	goto done;
fail:
	n = -1;
	store_rollback(w->w_store);
	invdb_discard(w);
done:
	inv_free(iv);
	for (i = 0; i < b.b_naddrs; i++)
		free(b.b_addrs[i].ba_addr);
	free(b.b_addrs);
	free(b.b_nodes);
	buf_free(&saved);
	if (set_cache(w, DB_CACHE_KIB) == -1)
		n = -1;
	return n;
}

/* ------------------------------------------------------------------ */
/* Readers.                                                            */

/*
 * The roots of the nodes of author ?1 that still count (author not
 * NULL): its stored events through events_pubkey, and those gone from the
 * store through inv_gone (schema step 8: no index of nodes by author).
 */
#define AUTHOR_ROOTS \
	"SELECT n.root FROM events e JOIN inv_nodes n ON n.seq = e.seq" \
	" WHERE e.pubkey = ?1 AND n.author IS NOT NULL" \
	" UNION ALL SELECT n.root FROM inv_gone g" \
	" JOIN inv_nodes n ON n.seq = g.seq" \
	" WHERE g.pubkey = ?1 AND n.author IS NOT NULL"

static int
rerr(struct store *st, const char *what)
{
	log_warnx("inventory tables: %s: %s", what,
	    sqlite3_errmsg(store_sqlite(st)));
	return -1;
}

/* The one integer sql selects, in *out. */
static int
read_int(struct store *s, const char *sql, int64_t *out)
{
	sqlite3_stmt *st;
	int	      rc;

	if ((st = store_cached(s, sql)) == NULL)
		return -1;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return rc == SQLITE_ROW ? 0 : rerr(s, sql);
}

int
invdb_built(struct store *s)
{
	int64_t built;

	if (read_int(s, "SELECT built FROM inv_state WHERE id = 1", &built) ==
	    -1)
		return -1;
	return built != 0;
}

int
invdb_built_for(struct invdb *w)
{
	static const char sql[] =
	    "SELECT built = ?1 AND seq >= coalesce((SELECT max(seq) FROM"
	    " events), 0) FROM inv_state WHERE id = 1";
	sqlite3_stmt *st;
	int	      rc, built = 0;

	if ((st = store_cached(w->w_store, sql)) == NULL)
		return -1;
	if (sqlite3_bind_int64(st, 1, w->w_conf) != SQLITE_OK)
		return rerr(w->w_store, "bind");
	if ((rc = sqlite3_step(st)) == SQLITE_ROW)
		built = sqlite3_column_int(st, 0);
	sqlite3_reset(st);
	return rc == SQLITE_ROW ? built : rerr(w->w_store, "built");
}

int
invdb_read_begin(struct store *s)
{
	sqlite3 *db = store_sqlite(s);

	if (!sqlite3_get_autocommit(db))
		return 0;
	if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return rerr(s, "begin");
	return 1;
}

void
invdb_read_end(struct store *s, int opened)
{
	if (opened == 1 &&
	    sqlite3_exec(store_sqlite(s), "COMMIT", NULL, NULL, NULL) !=
		SQLITE_OK)
		rerr(s, "commit");
}

int
invdb_generation(struct store *s, int64_t *out)
{
	return read_int(s, "SELECT generation FROM inv_state WHERE id = 1",
	    out);
}

int
invdb_nrepos(struct store *s, size_t *n)
{
	int64_t v;

	if (read_int(s, "SELECT count(*) FROM inv_repos", &v) == -1)
		return -1;
	*n = (size_t)v;
	return 0;
}

/* Splits a relays column into r's list (freed by the caller). */
static void
split_relays(const char *s, struct invdb_repo *r)
{
	const char *p, *nl;

	r->ir_relays = NULL;
	r->ir_nrelays = 0;
	for (p = s; *p != '\0'; p = *nl ? nl + 1 : nl) {
		if ((nl = strchr(p, '\n')) == NULL)
			nl = p + strlen(p);
		r->ir_relays = xreallocarray(r->ir_relays, r->ir_nrelays + 1,
		    sizeof(*r->ir_relays));
		r->ir_relays[r->ir_nrelays++] = xstrndup(p, (size_t)(nl - p));
	}
}

int
invdb_repos(struct store *s, void (*cb)(void *, const struct invdb_repo *),
    void		 *arg)
{
	static const char sql[] =
	    "SELECT coord, owner, d, created_at, level, relays, refused,"
	    " maintainers FROM inv_repos ORDER BY coord";
	sqlite3_stmt	 *st;
	struct invdb_repo r;
	size_t		  i;
	int		  rc;

	if ((st = store_cached(s, sql)) == NULL)
		return -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (sqlite3_column_bytes(st, 1) != PUBKEY_LEN)
			continue;
		memset(&r, 0, sizeof(r));
		r.ir_coord = (const char *)sqlite3_column_text(st, 0);
		memcpy(r.ir_owner, sqlite3_column_blob(st, 1), PUBKEY_LEN);
		r.ir_d = (const char *)sqlite3_column_text(st, 2);
		r.ir_created_at = sqlite3_column_int64(st, 3);
		r.ir_level = (enum inv_level)sqlite3_column_int(st, 4);
		split_relays((const char *)sqlite3_column_text(st, 5), &r);
		r.ir_refused = (size_t)sqlite3_column_int64(st, 6);
		r.ir_maint = sqlite3_column_blob(st, 7);
		r.ir_nmaint = (size_t)sqlite3_column_bytes(st, 7) / PUBKEY_LEN;
		cb(arg, &r);
		for (i = 0; i < r.ir_nrelays; i++)
			free(r.ir_relays[i]);
		free(r.ir_relays);
	}
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : rerr(s, "repositories");
}

/* Columns of the root readers' SELECTs (ROOT_COLS), into rt. */
#define ROOT_COLS "r.num, r.id, r.author, r.kind, r.deleted, r.coord, p.level"

static int
root_row(sqlite3_stmt *st, struct invdb_root *rt)
{
	if (sqlite3_column_bytes(st, 1) != EVENT_ID_LEN ||
	    sqlite3_column_bytes(st, 2) != PUBKEY_LEN)
		return -1;
	rt->rt_num = sqlite3_column_int64(st, 0);
	memcpy(rt->rt_id, sqlite3_column_blob(st, 1), EVENT_ID_LEN);
	memcpy(rt->rt_author, sqlite3_column_blob(st, 2), PUBKEY_LEN);
	rt->rt_kind = (uint32_t)sqlite3_column_int64(st, 3);
	rt->rt_deleted = sqlite3_column_int(st, 4);
	rt->rt_coord = (const char *)sqlite3_column_text(st, 5);
	rt->rt_level = sqlite3_column_type(st, 6) == SQLITE_NULL ?
	    0 :
	    (enum inv_level)sqlite3_column_int(st, 6);
	return 0;
}

/* Steps st (bound), calling cb for each root row. */
static int
each_root(struct store *s, sqlite3_stmt			*st,
    void (*cb)(void *, const struct invdb_root *), void *arg)
{
	struct invdb_root rt;
	int		  rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (root_row(st, &rt) == 0)
			cb(arg, &rt);
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : rerr(s, "roots");
}

int
invdb_repo_roots(struct store *s, const char		*coord,
    void (*cb)(void *, const struct invdb_root *), void *arg)
{
	static const char sql[] =
	    "SELECT " ROOT_COLS " FROM inv_roots r"
	    " LEFT JOIN inv_repos p ON p.coord = r.coord"
	    " WHERE r.coord = ?1 AND r.deleted = 0 ORDER BY r.num";
	sqlite3_stmt *st;

	if ((st = store_cached(s, sql)) == NULL)
		return -1;
	if (sqlite3_bind_text(st, 1, coord, -1, SQLITE_STATIC) != SQLITE_OK)
		return rerr(s, "bind");
	return each_root(s, st, cb, arg);
}

int
invdb_author_roots(struct store *s, const uint8_t	 pubkey[PUBKEY_LEN],
    void (*cb)(void *, const struct invdb_root *), void *arg)
{
	static const char sql[] =
	    "SELECT " ROOT_COLS " FROM inv_roots r"
	    " LEFT JOIN inv_repos p ON p.coord = r.coord"
	    " WHERE r.num IN (" AUTHOR_ROOTS ") ORDER BY r.num";
	sqlite3_stmt *st;

	if ((st = store_cached(s, sql)) == NULL)
		return -1;
	if (sqlite3_bind_blob(st, 1, pubkey, PUBKEY_LEN, SQLITE_STATIC) !=
	    SQLITE_OK)
		return rerr(s, "bind");
	return each_root(s, st, cb, arg);
}

int
invdb_thread(struct store *s, int64_t num,
    void (*id_cb)(void *, const uint8_t[EVENT_ID_LEN]),
    void (*addr_cb)(void *, const char *), void *arg)
{
	/* Place 0 is the root's own node. */
	static const char ids[] = "SELECT coalesce(e.id, g.id) FROM inv_nodes n"
				  " LEFT JOIN events e ON e.seq = n.seq"
				  " LEFT JOIN inv_gone g ON g.seq = n.seq"
				  " WHERE n.root = ?1 AND n.n > 0";
	static const char addrs[] =
	    "SELECT addr FROM inv_addrs WHERE root = ?1";
	sqlite3_stmt *st;
	int	      rc;

	if (id_cb != NULL) {
		if ((st = store_cached(s, ids)) == NULL)
			return -1;
		if (sqlite3_bind_int64(st, 1, num) != SQLITE_OK)
			return rerr(s, "bind");
		while ((rc = sqlite3_step(st)) == SQLITE_ROW)
			if (sqlite3_column_bytes(st, 0) == EVENT_ID_LEN)
				id_cb(arg, sqlite3_column_blob(st, 0));
		sqlite3_reset(st);
		if (rc != SQLITE_DONE)
			return rerr(s, "thread");
	}
	if (addr_cb != NULL) {
		if ((st = store_cached(s, addrs)) == NULL)
			return -1;
		if (sqlite3_bind_int64(st, 1, num) != SQLITE_OK)
			return rerr(s, "bind");
		while ((rc = sqlite3_step(st)) == SQLITE_ROW)
			addr_cb(arg, (const char *)sqlite3_column_text(st, 0));
		sqlite3_reset(st);
		if (rc != SQLITE_DONE)
			return rerr(s, "thread");
	}
	return 0;
}

int
invdb_count_roots(struct store *s, size_t bykind[3], size_t *unlinked)
{
	/* One pass, no GROUP BY: its sorter held every root's row, memory
	 * the role's malloc kept (1.8 MB of syncd's at 15,000 roots).
	 * 1617 and 1618 are KIND_PATCH and KIND_PR. */
	static const char sql[] =
	    "SELECT total(p.coord IS NULL),"
	    " total(p.coord IS NOT NULL AND r.kind = 1617),"
	    " total(p.coord IS NOT NULL AND r.kind = 1618),"
	    " total(p.coord IS NOT NULL AND r.kind NOT IN (1617, 1618))"
	    " FROM inv_roots r LEFT JOIN inv_repos p ON p.coord = r.coord"
	    " WHERE r.deleted = 0";
	sqlite3_stmt *st;
	int	      rc;

	bykind[0] = bykind[1] = bykind[2] = 0;
	*unlinked = 0;
	if ((st = store_cached(s, sql)) == NULL)
		return -1;
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		*unlinked = (size_t)sqlite3_column_int64(st, 0);
		bykind[0] = (size_t)sqlite3_column_int64(st, 1);
		bykind[1] = (size_t)sqlite3_column_int64(st, 2);
		bykind[2] = (size_t)sqlite3_column_int64(st, 3);
		rc = sqlite3_step(st);
	}
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : rerr(s, "count roots");
}

/* 1 if pk owns or maintains a Full repository, 0 if not. */
static int
member(struct store *s, const uint8_t pk[PUBKEY_LEN])
{
	static const char sql[] =
	    "SELECT owner, maintainers FROM inv_repos WHERE level = 2";
	sqlite3_stmt  *st;
	const uint8_t *m;
	size_t	       i, n;
	int	       rc, found = 0;

	if ((st = store_cached(s, sql)) == NULL)
		return -1;
	while (!found && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (sqlite3_column_bytes(st, 0) == PUBKEY_LEN &&
		    memcmp(sqlite3_column_blob(st, 0), pk, PUBKEY_LEN) == 0)
			found = 1;
		m = sqlite3_column_blob(st, 1);
		n = (size_t)sqlite3_column_bytes(st, 1) / PUBKEY_LEN;
		for (i = 0; i < n && !found; i++)
			found = memcmp(m + i * PUBKEY_LEN, pk, PUBKEY_LEN) == 0;
	}
	sqlite3_reset(st);
	if (!found && rc != SQLITE_DONE)
		return rerr(s, "members");
	return found;
}

int
invdb_eligible(struct store *s, const uint8_t pk[PUBKEY_LEN])
{
	static const char sql[] =
	    "SELECT 1 FROM inv_roots r JOIN inv_repos p ON p.coord = r.coord"
	    " WHERE r.num IN (" AUTHOR_ROOTS ")"
	    " AND r.deleted = 0 AND p.level = 2 LIMIT 1";
	sqlite3_stmt *st;
	int	      rc;

	if ((st = store_cached(s, sql)) == NULL)
		return -1;
	if (sqlite3_bind_blob(st, 1, pk, PUBKEY_LEN, SQLITE_STATIC) !=
	    SQLITE_OK)
		return rerr(s, "bind");
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc == SQLITE_ROW)
		return 1;
	if (rc != SQLITE_DONE)
		return rerr(s, "eligible");
	return member(s, pk);
}

int
invdb_eligible_each(struct store *s,
    void (*cb)(void *, const uint8_t[PUBKEY_LEN]), void *arg)
{
	static const char sql[] =
	    "SELECT owner FROM inv_repos WHERE level = 2"
	    " UNION SELECT n.author FROM inv_nodes n"
	    " JOIN inv_roots r ON r.num = n.root"
	    " JOIN inv_repos p ON p.coord = r.coord"
	    " WHERE n.author IS NOT NULL AND r.deleted = 0 AND p.level = 2";
	static const char msql[] =
	    "SELECT maintainers FROM inv_repos WHERE level = 2";
	struct hmap    seen = HMAP_INIT;
	sqlite3_stmt  *st;
	const uint8_t *m;
	size_t	       i, n;
	int	       rc, count = -1;

	if ((st = store_cached(s, sql)) == NULL)
		return -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (sqlite3_column_bytes(st, 0) == PUBKEY_LEN &&
		    hmap_get(&seen, sqlite3_column_blob(st, 0), PUBKEY_LEN) ==
			NULL) {
			hmap_put(&seen, sqlite3_column_blob(st, 0), PUBKEY_LEN,
			    (void *)1);
			cb(arg, sqlite3_column_blob(st, 0));
		}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		rerr(s, "eligible");
		goto out;
	}
	if ((st = store_cached(s, msql)) == NULL)
		goto out;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		m = sqlite3_column_blob(st, 0);
		n = (size_t)sqlite3_column_bytes(st, 0) / PUBKEY_LEN;
		for (i = 0; i < n; i++)
			if (hmap_get(&seen, m + i * PUBKEY_LEN, PUBKEY_LEN) ==
			    NULL) {
				hmap_put(&seen, m + i * PUBKEY_LEN, PUBKEY_LEN,
				    (void *)1);
				cb(arg, m + i * PUBKEY_LEN);
			}
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		rerr(s, "maintainers");
		goto out;
	}
	count = (int)seen.hm_n;
out:
	hmap_free(&seen);
	return count;
}
