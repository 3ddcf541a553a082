/*
 * counter.c: a role's table of figures written as its `graspctl show`
 * view and as its metrics (see counter.h).  Linked by every process.
 */
#include <stdio.h>
#include <string.h>

#include "counter.h"
#include "log.h"

/* The sample name of the longest row with a label added, and then some. */
#define COUNTER_NAME_MAX 256

const char *
counter_type_name(enum counter_type t)
{
	return t == COUNTER ? "counter" : "gauge";
}

static uint64_t
value_of(const struct counter *c, const void *base)
{
	uint64_t v;

	memcpy(&v, (const char *)base + c->ct_off, sizeof(v));
	return v;
}

void
counters_show(cJSON *view, const struct counter *t, size_t n, const void *base)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (t[i].ct_show != NULL &&
		    cJSON_AddNumberToObject(view, t[i].ct_show,
			(double)value_of(&t[i], base)) == NULL)
			fatalx("counters_show: out of memory");
}

/* name with label put first among its labels, into out. */
static const char *
labelled(const char *name, const char *label, char *out, size_t len)
{
	const char *brace = strchr(name, '{');
	int	    w;

	if (label == NULL)
		return name;
	if (brace != NULL)
		w = snprintf(out, len, "%.*s{%s,%s", (int)(brace - name), name,
		    label, brace + 1);
	else
		w = snprintf(out, len, "%s{%s}", name, label);
	if (w < 0 || (size_t)w >= len)
		fatalx("counters_metrics: %s: name too long", name);
	return out;
}

void
counters_metrics(cJSON *metrics, const struct counter *t, size_t n,
    const void *base, const char *label)
{
	char   name[COUNTER_NAME_MAX];
	cJSON *m;
	size_t i;

	for (i = 0; i < n; i++) {
		if (t[i].ct_metric == NULL)
			continue;
		if ((m = cJSON_CreateArray()) == NULL ||
		    !cJSON_AddItemToArray(metrics, m) ||
		    !cJSON_AddItemToArray(m,
			cJSON_CreateString(labelled(t[i].ct_metric, label, name,
			    sizeof(name)))) ||
		    !cJSON_AddItemToArray(m,
			cJSON_CreateNumber((double)value_of(&t[i], base))) ||
		    !cJSON_AddItemToArray(m,
			cJSON_CreateString(counter_type_name(t[i].ct_type))) ||
		    (t[i].ct_help != NULL &&
			!cJSON_AddItemToArray(m,
			    cJSON_CreateString(t[i].ct_help))))
			fatalx("counters_metrics: out of memory");
	}
}
