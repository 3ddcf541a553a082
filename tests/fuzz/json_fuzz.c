/*
 * json_fuzz.c: libFuzzer harness for common/json.c, the strict JSON reader
 * every role uses on client and remote-relay input.
 *
 * Invariants beyond "no crash, no leak, no UB": a refusal comes with a
 * reason; an accepted document nests at most JSON_MAX_DEPTH containers,
 * its counts match its children, every string is NUL-terminated at its
 * length and valid UTF-8; json_at()/json_get() find what a walk finds;
 * and the tree written back out as JSON parses to an equal tree whose
 * own writing is byte-identical (a fixpoint).
 */
#include <math.h>

#include "fuzz.h"
#include "json.h"

/* Writes v as JSON: strings escaped, numbers so that they read back. */
static void
emit(struct buf *b, const struct json *v)
{
	const struct json *e;

	switch (v->type) {
	case JSON_NULL:
		buf_adds(b, "null");
		break;
	case JSON_FALSE:
		buf_adds(b, "false");
		break;
	case JSON_TRUE:
		buf_adds(b, "true");
		break;
	case JSON_NUMBER:
		if (v->is_int)
			buf_printf(b, "%lld", (long long)v->i);
		else if (isfinite(v->d))
			/* An exponent keeps it a non-integer (-0e0 stays). */
			buf_printf(b, "%.17e", v->d);
		else
			/* The reader turns an overflowing number into inf. */
			buf_adds(b, v->d < 0 ? "-1e999" : "1e999");
		break;
	case JSON_STRING:
		fuzz_jstr(b, v->s, v->len);
		break;
	case JSON_ARRAY:
	case JSON_OBJECT:
		buf_addc(b, v->type == JSON_ARRAY ? '[' : '{');
		for (e = v->child; e; e = e->next) {
			if (e != v->child)
				buf_addc(b, ',');
			if (v->type == JSON_OBJECT) {
				fuzz_jstr(b, e->key, e->keylen);
				buf_addc(b, ':');
			}
			emit(b, e);
		}
		buf_addc(b, v->type == JSON_ARRAY ? ']' : '}');
		break;
	}
}

/* Checks the shape of v, a value at nesting depth depth. */
static void
check_tree(const struct json *v, int depth)
{
	const struct json *e;
	size_t		   n = 0;

	switch (v->type) {
	case JSON_NULL:
	case JSON_FALSE:
	case JSON_TRUE:
		FUZZ_ASSERT(v->child == NULL);
		break;
	case JSON_NUMBER:
		FUZZ_ASSERT(!isnan(v->d));
		/* Both are the correctly rounded value of one integer. */
		if (v->is_int)
			FUZZ_ASSERT((double)v->i == v->d);
		break;
	case JSON_STRING:
		FUZZ_ASSERT(v->s != NULL && v->s[v->len] == '\0');
		FUZZ_ASSERT(fuzz_utf8_ok(v->s, v->len));
		break;
	case JSON_ARRAY:
	case JSON_OBJECT:
		/* Containers open at depths 0 .. JSON_MAX_DEPTH - 1. */
		FUZZ_ASSERT(depth < JSON_MAX_DEPTH);
		for (e = v->child; e; e = e->next) {
			if (v->type == JSON_OBJECT) {
				FUZZ_ASSERT(e->key != NULL &&
				    e->key[e->keylen] == '\0');
				FUZZ_ASSERT(fuzz_utf8_ok(e->key, e->keylen));
				/* The first member of a name wins. */
				if (memchr(e->key, '\0', e->keylen) == NULL) {
					const struct json *f =
					    json_get(v, e->key);

					FUZZ_ASSERT(f != NULL);
					FUZZ_ASSERT(f->keylen == e->keylen &&
					    memcmp(f->key, e->key, e->keylen) ==
						0);
				}
			} else {
				FUZZ_ASSERT(e->key == NULL);
				if (n < 64)
					FUZZ_ASSERT(json_at(v, n) == e);
			}
			check_tree(e, depth + 1);
			n++;
		}
		FUZZ_ASSERT(n == v->n);
		if (v->type == JSON_ARRAY)
			FUZZ_ASSERT(json_at(v, n) == NULL);
		else
			FUZZ_ASSERT(json_at(v, 0) == NULL);
		break;
	default:
		FUZZ_ASSERT(!"bad type");
	}
}

/* Checks that a and b, from the input and from emit(), are the same. */
static void
same_tree(const struct json *a, const struct json *b)
{
	const struct json *x, *y;

	FUZZ_ASSERT(a->type == b->type);
	switch (a->type) {
	case JSON_NUMBER:
		FUZZ_ASSERT(a->d == b->d);
		if (a->is_int)
			FUZZ_ASSERT(b->is_int && a->i == b->i);
		break;
	case JSON_STRING:
		FUZZ_ASSERT(
		    a->len == b->len && memcmp(a->s, b->s, a->len) == 0);
		break;
	case JSON_ARRAY:
	case JSON_OBJECT:
		FUZZ_ASSERT(a->n == b->n);
		for (x = a->child, y = b->child; x && y;
		     x = x->next, y = y->next) {
			if (a->type == JSON_OBJECT)
				FUZZ_ASSERT(x->keylen == y->keylen &&
				    memcmp(x->key, y->key, x->keylen) == 0);
			same_tree(x, y);
		}
		FUZZ_ASSERT(x == NULL && y == NULL);
		break;
	default:
		break;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_doc *doc = NULL, *doc2 = NULL, *doc3 = NULL;
	struct json	*root, *root2, *root3;
	struct buf	 b1 = BUF_INIT, b2 = BUF_INIT;
	char		 err[128], tiny[4];

	fuzz_init_log();
	err[0] = '\0';
	root = json_parse((const char *)data, size, &doc, err, sizeof(err));
	if (root == NULL) {
		FUZZ_ASSERT(doc == NULL);
		FUZZ_ASSERT(err[0] != '\0' && strstr(err, " at byte ") != NULL);
		/* A short error buffer is cut, not overrun. */
		FUZZ_ASSERT(json_parse((const char *)data, size, &doc, tiny,
				sizeof(tiny)) == NULL &&
		    doc == NULL);
		FUZZ_ASSERT(strlen(tiny) < sizeof(tiny));
		FUZZ_ASSERT(json_parse((const char *)data, size, &doc, NULL,
				0) == NULL);
		return 0;
	}
	FUZZ_ASSERT(doc != NULL);
	check_tree(root, 0);

	emit(&b1, root);
	root2 = json_parse(b1.b_data, b1.b_len, &doc2, err, sizeof(err));
	if (root2 == NULL) {
		fprintf(stderr, "re-parse of %.200s failed: %s\n", b1.b_data,
		    err);
		FUZZ_ASSERT(root2 != NULL);
	}
	same_tree(root, root2);
	emit(&b2, root2);
	FUZZ_ASSERT(b1.b_len == b2.b_len &&
	    memcmp(b1.b_data, b2.b_data, b1.b_len) == 0);

	/* Leading and trailing JSON whitespace change nothing. */
	buf_reset(&b2);
	buf_adds(&b2, " \t\r\n");
	buf_add(&b2, data, size);
	buf_adds(&b2, "\n ");
	root3 = json_parse(b2.b_data, b2.b_len, &doc3, err, sizeof(err));
	FUZZ_ASSERT(root3 != NULL);
	same_tree(root, root3);

	json_free(doc3);
	json_free(doc2);
	json_free(doc);
	buf_free(&b1);
	buf_free(&b2);
	return 0;
}
