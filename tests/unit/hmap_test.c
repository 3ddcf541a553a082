/*
 * hmap_test.c: the keyed hash map against a brute-force model, through
 * growth and backward-shift deletions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hmap.h"
#include "t.h"

#define N 5000

static void
test_matches_a_model_through_inserts_and_deletes(void)
{
	struct hmap m = HMAP_INIT;
	static int  present[N];
	static int  vals[N];
	char	    key[32];
	int	    i, round, k;
	size_t	    it = 0, count = 0;

	srand(7);
	for (i = 0; i < N; i++)
		vals[i] = i;
	for (round = 0; round < 40000; round++) {
		k = rand() % N;
		snprintf(key, sizeof(key), "k%d", k);
		if (rand() % 3) {
			void *old = hmap_put(&m, key, strlen(key), &vals[k]);
			T_CHECK(present[k] ? old == &vals[k] : old == NULL);
			present[k] = 1;
		} else {
			void *old = hmap_del(&m, key, strlen(key));
			T_CHECK(present[k] ? old == &vals[k] : old == NULL);
			present[k] = 0;
		}
	}
	for (i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		T_CHECK((hmap_get(&m, key, strlen(key)) != NULL) == present[i]);
		count += present[i];
	}
	T_EQ_INT(m.hm_n, count);
	for (i = 0; hmap_next(&m, &it, NULL, NULL, NULL); i++)
		;
	T_EQ_INT(i, count);
	hmap_free(&m);
}

static void
test_binary_keys_and_empty_key(void)
{
	struct hmap m = HMAP_INIT;
	uint8_t	    a[32] = { 0 }, b[32] = { 0 };
	int	    x = 1, y = 2, z = 3;

	b[31] = 1;
	hmap_put(&m, a, 32, &x);
	hmap_put(&m, b, 32, &y);
	hmap_put(&m, "", 0, &z);
	T_CHECK(hmap_get(&m, a, 32) == &x);
	T_CHECK(hmap_get(&m, b, 32) == &y);
	T_CHECK(hmap_get(&m, "", 0) == &z);
	T_CHECK(hmap_get(&m, a, 31) == NULL);
	hmap_free(&m);
}

static const struct t_case cases[] = {
	T_CASE(test_matches_a_model_through_inserts_and_deletes),
	T_CASE(test_binary_keys_and_empty_key),
};

T_MAIN(cases)
