/*
 * relaylist_test.c: NIP-65 kind 10002 lists read into GRASP-03's
 * per-purpose selections: hygiene before any slot, canonical dedupe with
 * OR'd markers, strict markers, at most four relays per purpose in
 * published tag order, hostile lists (bad URLs, fifty relays, variant
 * spellings, odd markers), the shared relay URL vectors, and the NIP-09
 * deletion of a stored list.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "event.h"
#include "relaylist.h"
#include "relayurl.h"
#include "t.h"

static uint8_t sk[SECKEY_LEN];

static int
relaylist_setup(void)
{
	memset(sk, 0x33, sizeof(sk));
	return 0;
}

/* A kind (10002 unless said) with the given tags JSON. */
static struct event *
list_kind(uint32_t kind, const char *tags)
{
	return event_new_signed(sk, 1700000000, kind, tags, "");
}

static struct event *
list_of(const char *tags)
{
	return list_kind(10002, tags);
}

/* Parses tags as a 10002 (urlflags 0, no self) into rl. */
static int
parse(const char *tags, struct relaylist *rl)
{
	struct event *ev = list_of(tags);
	int	      rc;

	if (ev == NULL)
		return -2;
	rc = relaylist_parse(ev, 0, NULL, 0, rl);
	event_destroy(ev);
	return rc;
}

/*
 * The keys of purpose p joined by spaces, for one comparison; valid
 * until the call after next (two may be compared).
 */
static const char *
sel(const struct relaylist *rl, enum relaylist_purpose p)
{
	static struct buf out[2];
	static int	  turn;
	struct buf	 *b = &out[turn ^= 1];
	size_t		  i;
	const char	 *k;

	buf_reset(b);
	buf_adds(b, "");
	for (i = 0; (k = relaylist_get(rl, p, i)) != NULL; i++)
		buf_printf(b, "%s%s", i > 0 ? " " : "", k);
	return b->b_data;
}

static void
test_markers_choose_purposes_in_tag_order(void)
{
	struct relaylist rl;

	T_ASSERT(parse("[[\"r\",\"wss://w1.example\",\"write\"],"
		       "[\"r\",\"wss://r1.example\",\"read\"],"
		       "[\"r\",\"wss://u1.example\"],"
		       "[\"p\",\"wss://not-a-relay-tag.example\"],"
		       "[\"relay\",\"wss://also-not.example\"],"
		       "[\"r\",\"wss://w2.example\",\"write\"],"
		       "[\"r\",\"wss://r2.example\",\"read\"]]",
		     &rl) == 0);
	T_EQ_STR(sel(&rl, RELAYLIST_INBOX),
	    "wss://r1.example/ "
	    "wss://u1.example/ wss://r2.example/");
	T_EQ_STR(sel(&rl, RELAYLIST_OUTBOX),
	    "wss://w1.example/ "
	    "wss://u1.example/ wss://w2.example/");
	/* Write/unmarked first, then read-only fills the last slot. */
	T_EQ_STR(sel(&rl, RELAYLIST_HISTORY),
	    "wss://w1.example/ "
	    "wss://u1.example/ wss://w2.example/ wss://r1.example/");
	T_EQ_STR(sel(&rl, RELAYLIST_REPO_INBOX), sel(&rl, RELAYLIST_INBOX));
	T_EQ_INT(rl.rl_r_tags, 5);
	T_EQ_INT(rl.rl_distinct, 5);
	T_EQ_INT(rl.rl_nkeys, 5);
	T_CHECK(relaylist_get(&rl, RELAYLIST_OUTBOX, 3) == NULL);
	T_CHECK(relaylist_get(&rl, RELAYLIST_NPURPOSES, 0) == NULL);
	T_EQ_STR(relaylist_purpose_name(RELAYLIST_REPO_INBOX), "repo_inbox");
	relaylist_clear(&rl);
	relaylist_clear(&rl);
	T_EQ_INT(rl.rl_nkeys, 0);
}

static void
test_history_prefers_write_then_read_only(void)
{
	struct relaylist rl;

	T_ASSERT(parse("[[\"r\",\"wss://r1.example\",\"read\"],"
		       "[\"r\",\"wss://r2.example\",\"read\"],"
		       "[\"r\",\"wss://r3.example\",\"read\"],"
		       "[\"r\",\"wss://w1.example\",\"write\"],"
		       "[\"r\",\"wss://r4.example\",\"read\"],"
		       "[\"r\",\"wss://r5.example\",\"read\"]]",
		     &rl) == 0);
	T_EQ_STR(sel(&rl, RELAYLIST_HISTORY),
	    "wss://w1.example/ "
	    "wss://r1.example/ wss://r2.example/ wss://r3.example/");
	T_EQ_STR(sel(&rl, RELAYLIST_INBOX),
	    "wss://r1.example/ "
	    "wss://r2.example/ wss://r3.example/ wss://r4.example/");
	T_EQ_STR(sel(&rl, RELAYLIST_OUTBOX), "wss://w1.example/");
	relaylist_clear(&rl);

	/* Only read relays: no outbox, history from the reads. */
	T_ASSERT(parse("[[\"r\",\"wss://r1.example\",\"read\"]]", &rl) == 0);
	T_EQ_INT(rl.rl_n[RELAYLIST_OUTBOX], 0);
	T_EQ_STR(sel(&rl, RELAYLIST_HISTORY), "wss://r1.example/");
	relaylist_clear(&rl);
}

static void
test_variant_spellings_share_one_slot_and_or_markers(void)
{
	struct relaylist rl;

	/* One relay in five spellings, read then write: one entry, both
	 * markers, at the position of its first spelling. */
	T_ASSERT(parse("[[\"r\",\"wss://Relay.Example.COM\",\"read\"],"
		       "[\"r\",\"wss://other.example\",\"write\"],"
		       "[\"r\",\"wss://relay.example.com:443/\",\"write\"],"
		       "[\"r\",\"WSS://relay.example.com./\"],"
		       "[\"r\",\"  wss://relay.example.com/#x  \",\"read\"],"
		       "[\"r\",\"wss://relay.example.com/\"],"
		       "[\"r\",\"wss://relay.example.com/inbox\",\"write\"]]",
		     &rl) == 0);
	T_EQ_INT(rl.rl_distinct, 3);
	T_EQ_INT(rl.rl_duplicates, 4);
	T_EQ_STR(sel(&rl, RELAYLIST_OUTBOX),
	    "wss://relay.example.com/ "
	    "wss://other.example/ wss://relay.example.com/inbox");
	T_EQ_STR(sel(&rl, RELAYLIST_INBOX), "wss://relay.example.com/");
	T_EQ_INT(rl.rl_flags[rl.rl_slot[RELAYLIST_INBOX][0]],
	    RELAYLIST_READ | RELAYLIST_WRITE);
	/* A default port on ws:// too; a non-default port is another. */
	relaylist_clear(&rl);
	T_ASSERT(parse("[[\"r\",\"ws://relay.example.com:80\"],"
		       "[\"r\",\"ws://relay.example.com\"],"
		       "[\"r\",\"ws://relay.example.com:443\"]]",
		     &rl) == 0);
	T_EQ_STR(sel(&rl, RELAYLIST_OUTBOX),
	    "ws://relay.example.com/ "
	    "ws://relay.example.com:443/");
	relaylist_clear(&rl);
}

static void
test_other_markers_ignore_the_tag(void)
{
	struct relaylist rl;

	T_ASSERT(parse("[[\"r\",\"wss://both.example\",\"both\"],"
		       "[\"r\",\"wss://empty.example\",\"\"],"
		       "[\"r\",\"wss://upper.example\",\"READ\"],"
		       "[\"r\",\"wss://space.example\",\"write \"],"
		       "[\"r\",\"wss://nul.example\",\"read\\u0000x\"],"
		       "[\"r\",\"wss://inbox.example\",\"inbox\"],"
		       "[\"r\"],"
		       "[\"r\",\"wss://ok.example\",\"read\",\"extra\"]]",
		     &rl) == 0);
	T_EQ_INT(rl.rl_r_tags, 7);
	T_EQ_INT(rl.rl_bad_marker, 6);
	T_EQ_INT(rl.rl_distinct, 1);
	T_EQ_STR(sel(&rl, RELAYLIST_INBOX), "wss://ok.example/");
	T_EQ_INT(rl.rl_n[RELAYLIST_OUTBOX], 0);
	/* A marked-off spelling cannot lend its flag to a good one. */
	relaylist_clear(&rl);
	T_ASSERT(parse("[[\"r\",\"wss://a.example\",\"read\"],"
		       "[\"r\",\"wss://a.example/\",\"Write\"]]",
		     &rl) == 0);
	T_EQ_INT(rl.rl_n[RELAYLIST_OUTBOX], 0);
	T_EQ_INT(rl.rl_n[RELAYLIST_INBOX], 1);
	relaylist_clear(&rl);
}

static void
test_hostile_urls_never_take_a_slot(void)
{
	struct relaylist rl;

	T_ASSERT(
	    parse(
		"[[\"r\",\"relay.example.com\"],"
		"[\"r\",\"https://relay.example.com\"],"
		"[\"r\",\"wss://127.0.0.1\"],"
		"[\"r\",\"wss://localhost:7777\"],"
		"[\"r\",\"wss://user:pw@relay.example.com\"],"
		"[\"r\",\"wss://relay.example.com,wss://other.example\"],"
		"[\"r\",\"wss://[::1]\"],"
		"[\"r\",\"wss://169.254.169.254\"],"
		"[\"r\",\"wss://0x7f000001\"],"
		"[\"r\",\"wss://pi.local\"],"
		"[\"r\",\"wss://nos lol\"],"
		"[\"r\",\"\"],"
		"[\"r\",\"ws://abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrstu"
		"vwx.onion\"],"
		"[\"r\",\"wss://good1.example\"],"
		"[\"r\",\"wss://relay.example.com/a/../b\"],"
		"[\"r\",\"wss://good2.example\"]]",
		&rl) == 0);
	T_EQ_INT(rl.rl_refused, 14);
	T_EQ_STR(sel(&rl, RELAYLIST_OUTBOX),
	    "wss://good1.example/ "
	    "wss://good2.example/");
	T_EQ_STR(sel(&rl, RELAYLIST_HISTORY), sel(&rl, RELAYLIST_OUTBOX));
	relaylist_clear(&rl);
}

static void
test_fifty_relays_give_four_per_purpose(void)
{
	struct relaylist rl;
	struct buf	 tags = BUF_INIT;
	size_t		 p;
	int		 i, rc;

	buf_addc(&tags, '[');
	for (i = 0; i < 50; i++)
		buf_printf(&tags, "%s[\"r\",\"wss://relay%02d.example\"%s]",
		    i ? "," : "", i,
		    i % 5 == 0	   ? ",\"read\"" :
			i % 5 == 1 ? ",\"write\"" :
				     "");
	buf_addc(&tags, ']');
	rc = parse(tags.b_data, &rl);
	buf_free(&tags);
	T_EQ_INT(rc, 0);
	T_EQ_INT(rl.rl_distinct, 50);
	for (p = 0; p < RELAYLIST_NPURPOSES; p++)
		T_EQ_INT(rl.rl_n[p], RELAYLIST_PER_PURPOSE);
	T_CHECK(rl.rl_nkeys <= RELAYLIST_MAX_KEYS);
	T_EQ_STR(sel(&rl, RELAYLIST_INBOX),
	    "wss://relay00.example/ "
	    "wss://relay02.example/ wss://relay03.example/ "
	    "wss://relay04.example/");
	T_EQ_STR(sel(&rl, RELAYLIST_OUTBOX),
	    "wss://relay01.example/ "
	    "wss://relay02.example/ wss://relay03.example/ "
	    "wss://relay04.example/");
	T_EQ_STR(sel(&rl, RELAYLIST_HISTORY), sel(&rl, RELAYLIST_OUTBOX));
	relaylist_clear(&rl);

	/* Four write-only, then four read-only: eight distinct keys,
	 * the most any list can make the selections name. */
	T_ASSERT(parse("[[\"r\",\"wss://w1.example\",\"write\"],"
		       "[\"r\",\"wss://w2.example\",\"write\"],"
		       "[\"r\",\"wss://w3.example\",\"write\"],"
		       "[\"r\",\"wss://w4.example\",\"write\"],"
		       "[\"r\",\"wss://w5.example\",\"write\"],"
		       "[\"r\",\"wss://r1.example\",\"read\"],"
		       "[\"r\",\"wss://r2.example\",\"read\"],"
		       "[\"r\",\"wss://r3.example\",\"read\"],"
		       "[\"r\",\"wss://r4.example\",\"read\"],"
		       "[\"r\",\"wss://r5.example\",\"read\"]]",
		     &rl) == 0);
	T_EQ_INT(rl.rl_nkeys, RELAYLIST_MAX_KEYS);
	T_EQ_STR(sel(&rl, RELAYLIST_HISTORY), sel(&rl, RELAYLIST_OUTBOX));
	relaylist_clear(&rl);
}

static void
test_two_thousand_duplicates_stay_one_entry(void)
{
	struct relaylist rl;
	struct buf	 tags = BUF_INIT;
	int		 i, rc;

	buf_addc(&tags, '[');
	for (i = 0; i < 2000; i++)
		buf_printf(&tags, "%s%s", i ? "," : "",
		    i % 2 ? "[\"r\",\"wss://SPAM.example:443\"]" :
			    "[\"r\",\"wss://spam.example/\",\"read\"]");
	buf_addc(&tags, ']');
	rc = parse(tags.b_data, &rl);
	buf_free(&tags);
	T_EQ_INT(rc, 0);
	T_EQ_INT(rl.rl_distinct, 1);
	T_EQ_INT(rl.rl_duplicates, 1999);
	T_EQ_INT(rl.rl_nkeys, 1);
	T_EQ_STR(sel(&rl, RELAYLIST_OUTBOX), "wss://spam.example/");
	relaylist_clear(&rl);
}

static void
test_this_relay_and_private_targets(void)
{
	struct relaylist rl;
	struct event	*ev;
	char		 self[4][RELAYURL_MAX + 1];
	const char	*sv[4];
	int		 n, i;

	n = relayurl_self_keys("grasp.example.com", self, 4);
	T_ASSERT(n > 0);
	for (i = 0; i < n; i++)
		sv[i] = self[i];
	ev = list_of("[[\"r\",\"wss://GRASP.example.com/\"],"
		     "[\"r\",\"ws://grasp.example.com/some/path\"],"
		     "[\"r\",\"ws://127.0.0.1:7777\"],"
		     "[\"r\",\"relay.example.net\"],"
		     "[\"r\",\"wss://other.example\"]]");
	T_ASSERT(ev != NULL);
	T_EQ_INT(relaylist_parse(ev, 0, sv, (size_t)n, &rl), 0);
	T_EQ_INT(rl.rl_refused, 4);
	T_EQ_STR(sel(&rl, RELAYLIST_OUTBOX), "wss://other.example/");
	relaylist_clear(&rl);
	/* NGIT_SYNC_ALLOW_PRIVATE_TARGETS lets loopback through; the
	 * operator's trust never applies to a peer's list. */
	T_EQ_INT(relaylist_parse(ev, RELAYURL_ALLOW_PRIVATE | RELAYURL_TRUSTED,
		     sv, (size_t)n, &rl),
	    0);
	T_EQ_STR(sel(&rl, RELAYLIST_OUTBOX),
	    "ws://127.0.0.1:7777/ "
	    "wss://other.example/");
	relaylist_clear(&rl);
	event_destroy(ev);
}

static void
test_other_kinds_are_not_relay_lists(void)
{
	struct relaylist rl;
	struct event	*ev = list_kind(3, "[[\"r\",\"wss://a.example\"]]");

	T_ASSERT(ev != NULL);
	T_EQ_INT(relaylist_parse(ev, 0, NULL, 0, &rl), -1);
	T_EQ_INT(rl.rl_nkeys, 0);
	T_CHECK(relaylist_get(&rl, RELAYLIST_OUTBOX, 0) == NULL);
	relaylist_clear(&rl);
	event_destroy(ev);
}

/*
 * NIP-09 by the list's author: a kind 5 withdraws the stored list by its
 * id, or by its address when the deletion is not older than the list.
 * "%s" in a row's tags stands for the list's id, "%a" for its author.
 */
static void
test_deletion_by_id_or_address(void)
{
	static const struct {
		const char *tags;
		int64_t	    at; /* the deletion's created_at */
		int	    want;
	} rows[] = {
		{ "[[\"e\",\"%s\"]]", 1700000000, 1 },
		{ "[[\"e\",\""
		  "00000000000000000000000000000000"
		  "00000000000000000000000000000000\"]]",
		    1700000000, 0 },
		{ "[[\"e\"]]", 1700000000, 0 },
		{ "[[\"a\",\"10002:%a:\"]]", 1700000000, 1 },
		{ "[[\"a\",\"10002:%a:\"]]", 1700000001, 1 },
		{ "[[\"a\",\"10002:%a:\"]]", 1699999999, 0 },
		{ "[[\"a\",\"10002:%a:x\"]]", 1700000000, 0 },
		{ "[[\"a\",\"10003:%a:\"]]", 1700000000, 0 },
		{ "[[\"p\",\"%a\"],[\"e\",\"%s\"]]", 1700000000, 1 },
	};
	struct event *list = list_of("[[\"r\",\"wss://a.example\"]]"), *del;
	char   id[EVENT_ID_HEX_LEN + 1], author[PUBKEY_HEX_LEN + 1], tags[400];
	size_t i, j, k;

	T_ASSERT(list != NULL);
	hex_encode(list->id, EVENT_ID_LEN, id);
	hex_encode(list->pubkey, PUBKEY_LEN, author);
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		for (j = k = 0;
		     rows[i].tags[j] != '\0' && k + 65 < sizeof(tags); j++) {
			if (rows[i].tags[j] == '%' &&
			    (rows[i].tags[j + 1] == 's' ||
				rows[i].tags[j + 1] == 'a')) {
				memcpy(tags + k,
				    rows[i].tags[++j] == 's' ? id : author, 64);
				k += 64;
			} else
				tags[k++] = rows[i].tags[j];
		}
		tags[k] = '\0';
		del = event_new_signed(sk, rows[i].at, 5, tags, "");
		T_ASSERT(del != NULL);
		if (relaylist_deleted_by(del, list->id, list->created_at) !=
		    rows[i].want) {
			printf("# row %zu: %s at %lld\n", i, tags,
			    (long long)rows[i].at);
			T_CHECK(0);
		}
		event_destroy(del);
	}
	event_destroy(list);
}

/* Each vector of relay-urls.tsv as a one-tag list, then all in one. */
static void
test_shared_url_vectors(void)
{
	char		 path[1024], *line = NULL, *tab, msg[900];
	char		*tags, *first[4];
	const char	*expect;
	cJSON		*all, *tag;
	struct relaylist rl;
	struct event	*ev;
	size_t		 cap = 0, n, nfirst = 0, i;
	ssize_t		 len;
	int		 checked = 0, bad = 0, dup;
	FILE		*f;

	snprintf(path, sizeof(path), "%s/relay-urls.tsv", t_vectors_dir());
	if ((f = fopen(path, "r")) == NULL) {
		snprintf(msg, sizeof(msg), "cannot open %.800s", path);
		t_fail_at(__FILE__, __LINE__, msg);
		return;
	}
	all = cJSON_CreateArray();
	while ((len = getline(&line, &cap, f)) != -1) {
		n = (size_t)len;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n == 0 || line[0] == '#' ||
		    (tab = strrchr(line, '\t')) == NULL)
			continue;
		*tab = '\0';
		expect = tab + 1;
		checked++;
		tag = cJSON_CreateArray();
		cJSON_AddItemToArray(tag, cJSON_CreateString("r"));
		cJSON_AddItemToArray(tag, cJSON_CreateString(line));
		cJSON_AddItemToArray(all, tag);
		{
			cJSON *one = cJSON_CreateArray();

			cJSON_AddItemToArray(one, cJSON_Duplicate(tag, 1));
			tags = cJSON_PrintUnformatted(one);
			cJSON_Delete(one);
		}
		ev = list_of(tags);
		free(tags);
		if (ev == NULL || relaylist_parse(ev, 0, NULL, 0, &rl) != 0) {
			bad++;
			event_destroy(ev);
			continue;
		}
		if (strcmp(expect, "REJECT") == 0 ?
			rl.rl_nkeys != 0 || rl.rl_refused != 1 :
			rl.rl_nkeys != 1 || strcmp(rl.rl_key[0], expect) != 0) {
			snprintf(msg, sizeof(msg), "\"%.300s\": want %.300s",
			    line, expect);
			t_fail_at(__FILE__, __LINE__, msg);
			bad++;
		} else if (strcmp(expect, "REJECT") != 0 && nfirst < 4) {
			for (i = 0, dup = 0; i < nfirst; i++)
				dup |= strcmp(first[i], expect) == 0;
			if (!dup && (first[nfirst] = strdup(expect)) != NULL)
				nfirst++;
		}
		relaylist_clear(&rl);
		event_destroy(ev);
	}
	free(line);
	fclose(f);
	T_CHECK(checked >= 60);
	T_EQ_INT(bad, 0);

	/* All of them in one list: the first four distinct keys win. */
	tags = cJSON_PrintUnformatted(all);
	cJSON_Delete(all);
	ev = list_of(tags);
	free(tags);
	T_ASSERT(ev != NULL);
	T_EQ_INT(relaylist_parse(ev, 0, NULL, 0, &rl), 0);
	T_EQ_INT(rl.rl_n[RELAYLIST_OUTBOX], 4);
	for (i = 0; i < nfirst; i++) {
		T_EQ_STR(relaylist_get(&rl, RELAYLIST_OUTBOX, i), first[i]);
		free(first[i]);
	}
	T_EQ_INT(rl.rl_r_tags, checked);
	relaylist_clear(&rl);
	event_destroy(ev);
}

static const struct t_case cases[] = {
	T_CASE(test_markers_choose_purposes_in_tag_order),
	T_CASE(test_history_prefers_write_then_read_only),
	T_CASE(test_variant_spellings_share_one_slot_and_or_markers),
	T_CASE(test_other_markers_ignore_the_tag),
	T_CASE(test_hostile_urls_never_take_a_slot),
	T_CASE(test_fifty_relays_give_four_per_purpose),
	T_CASE(test_two_thousand_duplicates_stay_one_entry),
	T_CASE(test_this_relay_and_private_targets),
	T_CASE(test_other_kinds_are_not_relay_lists),
	T_CASE(test_deletion_by_id_or_address),
	T_CASE(test_shared_url_vectors),
};

T_MAIN_WITH(cases, relaylist_setup, NULL, 0)
