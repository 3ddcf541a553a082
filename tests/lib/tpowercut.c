/*
 * tpowercut.c: rebuilding a recorded database after a simulated power cut
 * (tpowercut.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "powercut.h"
#include "tpowercut.h"

/* A file's bytes, in a buffer that grows by doubling. */
struct bytes {
	unsigned char *b_p;
	size_t	       b_len, b_cap;
};

/* One file as the log leaves it. */
struct img {
	char	    *i_name;
	struct bytes i_dur;  /* its content up to its last sync */
	size_t	    *i_pend; /* its operations since (offsets) */
	size_t	     i_npend, i_cappend;
	int	     i_gone;
};

struct replay {
	const char *r_log; /* the whole log */
	struct img *r_img;
	size_t	    r_nimg;
	size_t	   *r_ids; /* file number -> image, or SIZE_MAX */
	size_t	    r_nids;
	uint64_t    r_rng;
};

static uint64_t
rng_next(struct replay *r)
{
	/* splitmix64: the same draws on every machine for one seed. */
	uint64_t z = (r->r_rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void *
xrealloc(void *p, size_t n)
{
	if ((p = realloc(p, n ? n : 1)) == NULL)
		abort();
	return p;
}

static char *
slurp(const char *path, size_t *lenp)
{
	FILE  *f;
	char  *b = NULL;
	size_t cap = 0, len = 0, n;

	if ((f = fopen(path, "rb")) == NULL)
		return NULL;
	for (;;) {
		if (cap - len < 1 << 20) {
			cap = cap ? cap * 2 : 4 << 20;
			b = xrealloc(b, cap);
		}
		if ((n = fread(b + len, 1, cap - len, f)) == 0)
			break;
		len += n;
	}
	fclose(f);
	*lenp = len;
	return b;
}

/* Sets the size of an image's content to n; new bytes are fill's. */
/*
 * Sets the size of b to n; the bytes past the old end are garbage (drawn
 * from r) or zeros.
 */
static void
resize(struct bytes *b, size_t n, struct replay *r, int garbage)
{
	size_t i;

	if (n > b->b_cap) {
		b->b_cap = b->b_cap ? b->b_cap : 1 << 16;
		while (b->b_cap < n)
			b->b_cap *= 2;
		b->b_p = xrealloc(b->b_p, b->b_cap);
	}
	for (i = b->b_len; i < n; i++)
		b->b_p[i] = garbage ? (unsigned char)rng_next(r) : 0;
	b->b_len = n;
}

/* Writes n bytes at off; a gap before them is garbage or zeros. */
static void
put(struct bytes *b, size_t off, const void *data, size_t n, struct replay *r,
    int garbage)
{
	if (off > b->b_len)
		resize(b, off, r, garbage);
	if (off + n > b->b_len) {
		/* Written over at once: nothing to fill. */
		b->b_len = off;
		if (off + n > b->b_cap)
			resize(b, off + n, r, 0);
		b->b_len = off + n;
	}
	memcpy(b->b_p + off, data, n);
}

static struct img *
img_named(struct replay *r, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < r->r_nimg; i++)
		if (strlen(r->r_img[i].i_name) == len &&
		    memcmp(r->r_img[i].i_name, name, len) == 0)
			return &r->r_img[i];
	r->r_img = xrealloc(r->r_img, (r->r_nimg + 1) * sizeof(*r->r_img));
	memset(&r->r_img[r->r_nimg], 0, sizeof(*r->r_img));
	r->r_img[r->r_nimg].i_name = xrealloc(NULL, len + 1);
	memcpy(r->r_img[r->r_nimg].i_name, name, len);
	r->r_img[r->r_nimg].i_name[len] = '\0';
	return &r->r_img[r->r_nimg++];
}

/* The record at off of the log (records are not aligned: copied). */
static struct powercut_rec
rec_at(const char *log, size_t off)
{
	struct powercut_rec rec;

	memcpy(&rec, log + off, sizeof(rec));
	return rec;
}

/* Carries out one operation whole, as a sync makes it durable. */
static void
apply(struct img *im, size_t off, struct replay *r)
{
	struct powercut_rec rec = rec_at(r->r_log, off);

	if (rec.pr_op == PC_WRITE)
		put(&im->i_dur, (size_t)rec.pr_off,
		    r->r_log + off + sizeof(rec), rec.pr_len, r, 0);
	else if (rec.pr_op == PC_TRUNC)
		resize(&im->i_dur, (size_t)rec.pr_off, r, 0);
}

long
tpc_ops(const char *path)
{
	struct powercut_rec rec;
	size_t		    len, off;
	char		   *b;
	long		    n = 0;

	if ((b = slurp(path, &len)) == NULL)
		return -1;
	for (off = 0; off + sizeof(rec) <= len;) {
		rec = rec_at(b, off);
		if (off + sizeof(rec) + rec.pr_len > len)
			break;
		if (rec.pr_op != PC_OPEN && rec.pr_op != PC_CUT)
			n++;
		off += sizeof(rec) + rec.pr_len;
	}
	free(b);
	return n;
}

/* The file as the cut leaves it: its durable part, then the draws. */
static int
write_out(struct img *im, const char *outdir, struct replay *r, int flags,
    struct tpc_stats *st)
{
	struct powercut_rec  rec;
	const unsigned char *data;
	struct bytes	     f = { NULL, 0, 0 };
	const char	    *base;
	char		     path[4096];
	size_t		     i, o, e, n;
	FILE		    *out;
	int		     keep = flags & TPC_KEEP_ALL, rc = 0;

	resize(&f, im->i_dur.b_len, r, 0);
	if (im->i_dur.b_len > 0)
		memcpy(f.b_p, im->i_dur.b_p, im->i_dur.b_len);
	for (i = 0; i < im->i_npend; i++) {
		rec = rec_at(r->r_log, im->i_pend[i]);
		st->pending++;
		if (rec.pr_op == PC_TRUNC) {
			if (keep || rng_next(r) % 2 == 0) {
				resize(&f, (size_t)rec.pr_off, r, 0);
				st->kept++;
			} else
				st->lost++;
			continue;
		}
		data = (const unsigned char *)r->r_log + im->i_pend[i] +
		    sizeof(rec);
		switch (keep ? 1 : rng_next(r) % 3) {
		case 0:
			st->lost++;
			break;
		case 1:
			put(&f, (size_t)rec.pr_off, data, rec.pr_len, r, 1);
			st->kept++;
			break;
		default:
			/* Each sector-aligned piece on its own. */
			st->torn++;
			for (o = (size_t)rec.pr_off;
			     o < (size_t)rec.pr_off + rec.pr_len; o = e) {
				e = (o / TPC_SECTOR + 1) * TPC_SECTOR;
				if (e > (size_t)rec.pr_off + rec.pr_len)
					e = (size_t)rec.pr_off + rec.pr_len;
				n = e - o;
				if (rng_next(r) % 2 == 0)
					put(&f, o,
					    data + (o - (size_t)rec.pr_off), n,
					    r, 1);
			}
			break;
		}
	}
	base = strrchr(im->i_name, '/');
	base = base != NULL ? base + 1 : im->i_name;
	snprintf(path, sizeof(path), "%s/%s", outdir, base);
	if ((out = fopen(path, "wb")) == NULL ||
	    (f.b_len > 0 && fwrite(f.b_p, 1, f.b_len, out) != f.b_len)) {
		printf("# tpc_replay: %s: %s\n", path, strerror(errno));
		rc = -1;
	}
	if (out != NULL && fclose(out) != 0)
		rc = -1;
	free(f.b_p);
	return rc;
}

int
tpc_replay(const char *path, const char *outdir, uint64_t seed, int flags,
    struct tpc_stats *st)
{
	struct powercut_rec rec;
	struct replay	    r;
	struct img	   *im;
	const char	   *name;
	size_t		    len, off, i, nl;
	char		   *b;
	int		    rc = -1;

	memset(st, 0, sizeof(*st));
	memset(&r, 0, sizeof(r));
	r.r_rng = seed;
	if ((b = slurp(path, &len)) == NULL) {
		printf("# tpc_replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	r.r_log = b;
	for (off = 0; off + sizeof(rec) <= len;
	     off += sizeof(rec) + rec.pr_len) {
		rec = rec_at(b, off);
		/* A record the kill cut short never happened. */
		if (off + sizeof(rec) + rec.pr_len > len)
			break;
		name = b + off + sizeof(rec);
		if (rec.pr_op == PC_CUT) {
			st->cut = 1;
			break;
		}
		if (rec.pr_op == PC_OPEN) {
			im = img_named(&r, name, rec.pr_len);
			if (im->i_gone) {
				im->i_gone = 0;
				im->i_dur.b_len = im->i_npend = 0;
			} else if (im->i_dur.b_len == 0 && im->i_npend == 0 &&
			    rec.pr_off > 0) {
				printf("# tpc_replay: %s held %lld bytes "
				       "before the log began\n",
				    im->i_name, (long long)rec.pr_off);
				goto done;
			}
			if (rec.pr_file >= r.r_nids) {
				nl = rec.pr_file + 64;
				r.r_ids =
				    xrealloc(r.r_ids, nl * sizeof(*r.r_ids));
				for (i = r.r_nids; i < nl; i++)
					r.r_ids[i] = SIZE_MAX;
				r.r_nids = nl;
			}
			r.r_ids[rec.pr_file] = (size_t)(im - r.r_img);
			continue;
		}
		st->ops++;
		if (rec.pr_op == PC_DELETE) {
			im = img_named(&r, name, rec.pr_len);
			im->i_gone = 1;
			im->i_dur.b_len = im->i_npend = 0;
			continue;
		}
		if (rec.pr_file >= r.r_nids ||
		    r.r_ids[rec.pr_file] == SIZE_MAX) {
			printf("# tpc_replay: file %u was never opened\n",
			    rec.pr_file);
			goto done;
		}
		im = &r.r_img[r.r_ids[rec.pr_file]];
		if (rec.pr_op == PC_SYNC) {
			nl = strlen(im->i_name);
			if (nl > 4 && strcmp(im->i_name + nl - 4, "-wal") == 0)
				st->wal_syncs++;
			else
				st->db_syncs++;
			for (i = 0; i < im->i_npend; i++)
				apply(im, im->i_pend[i], &r);
			im->i_npend = 0;
			continue;
		}
		if (im->i_npend == im->i_cappend) {
			im->i_cappend = im->i_cappend ? 2 * im->i_cappend : 64;
			im->i_pend = xrealloc(im->i_pend,
			    im->i_cappend * sizeof(*im->i_pend));
		}
		im->i_pend[im->i_npend++] = off;
	}
	rc = 0;
	for (i = 0; i < r.r_nimg && rc == 0; i++) {
		im = &r.r_img[i];
		nl = strlen(im->i_name);
		if (im->i_gone ||
		    (nl > 4 && strcmp(im->i_name + nl - 4, "-shm") == 0))
			continue;
		rc = write_out(im, outdir, &r, flags, st);
	}
done:
	for (i = 0; i < r.r_nimg; i++) {
		free(r.r_img[i].i_name);
		free(r.r_img[i].i_dur.b_p);
		free(r.r_img[i].i_pend);
	}
	free(r.r_img);
	free(r.r_ids);
	free(b);
	return rc;
}
