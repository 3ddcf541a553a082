/*
 * conn_pack.c: splitting a set of ids, authors or tag values into the
 * fewest filters whose REQs each stay under a byte budget, and grouping
 * filters into few REQs under the same budget (see conn.h), for every
 * role that subscribes on a remote relay.  Pure: no I/O, no
 * state; allocation failure is fatal.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "conn.h"
#include "json.h"
#include "log.h"
#include "mem.h"

size_t
conn_req_size(size_t filter_len)
{
	/* ["REQ","<subid>",<filter>] */
	return strlen("[\"REQ\",\"") + CONN_SUBID_MAX + strlen("\",") +
	    filter_len + strlen("]");
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void
conn_filters_free(struct conn_filters *f)
{
	if (f == NULL)
		return;
	strv_clear(&f->cf_v, &f->cf_n);
}

int
conn_pack_filters(const char *base, const char *field,
    const char *const values[], size_t n, size_t budget, size_t max_values,
    struct conn_filters *out, const char **why)
{
	struct json_doc	   *doc = NULL;
	const struct json  *root;
	struct conn_filters add = { NULL, 0 };
	struct buf	    prefix = BUF_INIT, f = BUF_INIT, v = BUF_INIT;
	const char	  **sorted = NULL, *dummy;
	char		    name[16], err[128];
	size_t		    i, m = 0, inf, suffix = strlen("]}");
	int		    rc = -1;

	if (why == NULL)
		why = &dummy;
	if (strcmp(field, "ids") == 0 || strcmp(field, "authors") == 0)
		snprintf(name, sizeof(name), "%s", field);
	else if (strlen(field) == 1 && isalpha((unsigned char)field[0]) &&
	    isascii((unsigned char)field[0]))
		snprintf(name, sizeof(name), "#%c", field[0]);
	else {
		*why = "field must be ids, authors or one tag letter";
		return -1;
	}
	root = json_parse(base, strlen(base), &doc, err, sizeof(err));
	if (root == NULL || root->type != JSON_OBJECT) {
		*why = "base is not a JSON object";
		goto done;
	}
	if (json_get(root, name) != NULL) {
		*why = "base already has the member to pack";
		goto done;
	}
	if (n == 0) {
		rc = 0;
		goto done;
	}

	if ((sorted = calloc(n, sizeof(*sorted))) == NULL)
		fatal("conn_pack_filters");
	memcpy(sorted, values, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_str);
	for (i = 0; i < n; i++)
		if (m == 0 || strcmp(sorted[m - 1], sorted[i]) != 0)
			sorted[m++] = sorted[i];

	buf_addc(&prefix, '{');
	if (json_write_members(&prefix, root, NULL) > 0)
		buf_addc(&prefix, ',');
	buf_add_jstr(&prefix, name, strlen(name));
	buf_adds(&prefix, ":[");

	for (i = 0; i < m;) {
		buf_reset(&f);
		buf_add(&f, prefix.b_data, prefix.b_len);
		inf = 0;
		while (i < m && (max_values == 0 || inf < max_values)) {
			buf_reset(&v);
			if (inf > 0)
				buf_addc(&v, ',');
			buf_add_jstr(&v, sorted[i], strlen(sorted[i]));
			if (conn_req_size(f.b_len + v.b_len + suffix) > budget)
				break;
			buf_add(&f, v.b_data, v.b_len);
			inf++;
			i++;
		}
		if (inf == 0) {
			*why = "one value alone does not fit the byte budget";
			conn_filters_free(&add);
			goto done;
		}
		buf_adds(&f, "]}");
		add.cf_v =
		    reallocarray(add.cf_v, add.cf_n + 1, sizeof(*add.cf_v));
		if (add.cf_v == NULL)
			fatal("conn_pack_filters");
		add.cf_v[add.cf_n++] = buf_release(&f, NULL);
	}

	out->cf_v =
	    reallocarray(out->cf_v, out->cf_n + add.cf_n, sizeof(*out->cf_v));
	if (out->cf_v == NULL)
		fatal("conn_pack_filters");
	memcpy(out->cf_v + out->cf_n, add.cf_v, add.cf_n * sizeof(*add.cf_v));
	out->cf_n += add.cf_n;
	rc = (int)add.cf_n;
	free(add.cf_v);
done:
	free(sorted);
	buf_free(&prefix);
	buf_free(&f);
	buf_free(&v);
	json_free(doc);
	return rc;
}

/* The order of first-fit decreasing: longer first, then as given. */
struct group_item {
	size_t gi_len;
	size_t gi_i;
};

static int
cmp_group_item(const void *a, const void *b)
{
	const struct group_item *x = a, *y = b;

	if (x->gi_len != y->gi_len)
		return x->gi_len > y->gi_len ? -1 : 1;
	return x->gi_i < y->gi_i ? -1 : x->gi_i > y->gi_i;
}

size_t
conn_group_filters(const char *const filters[], size_t n, size_t budget,
    size_t max, struct conn_filters *reqs, size_t *over)
{
	struct group_item *it;
	struct buf	  *bins;
	size_t		  *bin_of, nbins = 0, nover = 0, i, k, len, need;

	if (n == 0)
		return 0;
	if ((it = calloc(n, sizeof(*it))) == NULL ||
	    (bins = calloc(n, sizeof(*bins))) == NULL ||
	    (bin_of = calloc(n, sizeof(*bin_of))) == NULL)
		fatal("conn_group_filters");
	for (i = 0; i < n; i++) {
		it[i].gi_len = strlen(filters[i]);
		it[i].gi_i = i;
		bin_of[i] = SIZE_MAX;
	}
	qsort(it, n, sizeof(*it), cmp_group_item);
	for (i = 0; i < n; i++) {
		len = it[i].gi_len;
		for (k = 0; k < nbins; k++) {
			/* Its comma, and the closing bracket. */
			need = bins[k].b_len + 1 + len + 1;
			if (conn_req_size(need) <= budget)
				break;
		}
		if (k == nbins) {
			if (nbins == max)
				continue;
			nbins++; /* calloc made it an empty buf */
		}
		buf_addc(&bins[k], bins[k].b_len == 0 ? '[' : ',');
		buf_add(&bins[k], filters[it[i].gi_i], len);
		bin_of[it[i].gi_i] = k;
	}
	for (i = 0; i < n; i++)
		if (bin_of[i] == SIZE_MAX)
			over[nover++] = i;
	reqs->cf_v =
	    reallocarray(reqs->cf_v, reqs->cf_n + nbins, sizeof(*reqs->cf_v));
	if (reqs->cf_v == NULL)
		fatal("conn_group_filters");
	for (k = 0; k < nbins; k++) {
		buf_addc(&bins[k], ']');
		reqs->cf_v[reqs->cf_n++] = buf_release(&bins[k], NULL);
	}
	free(bins);
	free(bin_of);
	free(it);
	return nover;
}
