/*
 * tuser.h: the numbered users of a test.  User n's secret key is 32
 * bytes of the test's fill byte with n in the last byte (and n >> 8 in
 * the one before when n > 255), so each test has keys of its own and
 * user n is the same key in every run.
 */
#ifndef GRASPD_TUSER_H
#define GRASPD_TUSER_H

#include <stddef.h>
#include <stdint.h>

struct event;

/* User n's secret key (n from 0 to 65535). */
void	      tuser_sk(uint8_t fill, int n, uint8_t sk[SECKEY_LEN]);
/* User n's public key in hex. */
void	      tuser_hex(uint8_t fill, int n, char out[PUBKEY_HEX_LEN + 1]);
/*
 * An event by user n (event_new_signed(): tags is a JSON array or NULL);
 * the caller destroys it.  NULL if it could not be made.
 */
struct event *tuser_event(uint8_t fill, int n, int64_t at, uint32_t kind,
    const char *tags, const char *content);
/* Destroys evs[0..n) (the array itself stays the caller's). */
void	      tuser_events_destroy(struct event **evs, size_t n);
/* The coordinate "30617:<user n's hex>:<d>" of n's repository d. */
void tuser_coord(uint8_t fill, int n, const char *d, char *out, size_t outlen);

#endif
