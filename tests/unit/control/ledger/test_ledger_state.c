/*
 * test_ledger_state.c: the ledger's order decides, with no broker and no
 * clock: records applied to a mirror, own intents read back, outcomes,
 * TTLs and hostile records; and, with several simulated sidecars sharing
 * one log, the two-phase check never admits more than a limit allows
 * whatever the interleaving.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ka_ledger_record.h"
#include "ka_ledger_state.h"

#define TTL  120000
#define WALL 1700000000000LL /* the wall clock of the simulated sidecars */

static const ka_broker_delta_t three[] = {{1, 1}, {2, 1}, {3, 1}};

static ka_reservation_spec_t topic_spec(const char *name)
{
    return (ka_reservation_spec_t){.kind = KA_RESERVATION_PARTITIONS,
                                   .topic = {(const uint8_t *)name, (int32_t)strlen(name)},
                                   .partition_count = 1,
                                   .partition = -1,
                                   .new_partitions = 1,
                                   .deltas = three,
                                   .delta_count = 3,
                                   .expires_at_ms = TTL};
}

/* One record of the shared log. */
typedef struct entry {
    char *bytes;
    size_t len;
} entry_t;

typedef struct log {
    entry_t e[512];
    size_t n;
} log_t;

static void append_intent(log_t *log, const char *sidecar, uint64_t seq, const char *topic,
                          int64_t ts)
{
    ka_reservation_spec_t spec = topic_spec(topic);
    assert_true(log->n < 512);
    entry_t *e = &log->e[log->n++];
    assert_int_equal(ka_ledger_encode_intent(sidecar, seq, ts, &spec, 1, &e->bytes, &e->len), 0);
}

static void append_outcome(log_t *log, const char *sidecar, uint64_t seq, uint8_t admitted)
{
    assert_true(log->n < 512);
    entry_t *e = &log->e[log->n++];
    assert_int_equal(ka_ledger_encode_outcome(sidecar, seq, &admitted, 1, &e->bytes, &e->len), 0);
}

static void log_free(log_t *log)
{
    for (size_t i = 0; i < log->n; i++)
        free(log->e[i].bytes);
}

static enum ka_ledger_applied apply(ka_ledger_state_t *s, const log_t *log, size_t at,
                                    uint64_t *own)
{
    char err[256] = "";
    return ka_ledger_state_apply(s, log->e[at].bytes, log->e[at].len, at, WALL, 0, own, err,
                                 sizeof(err));
}

/* Sidecar "a" with an empty mirror, and an empty log. */
typedef struct fx {
    ka_reservations_t *mirror;
    ka_ledger_state_t *s;
    log_t log;
} fx_t;

static int fx_open(void **state)
{
    fx_t *f = calloc(1, sizeof(*f));
    if (f == NULL || ka_reservations_new(&f->mirror) < 0 ||
        ka_ledger_state_new("a", f->mirror, TTL, &f->s) < 0)
        return -1;
    *state = f;
    return 0;
}

static int fx_close(void **state)
{
    fx_t *f = *state;
    ka_ledger_state_free(f->s);
    ka_reservations_free(f->mirror);
    log_free(&f->log);
    free(f);
    return 0;
}

static void test_own_intent_read_back_is_ordered_after_earlier_ones(void **state)
{
    fx_t *f = *state;
    ka_reservations_t *mirror = f->mirror, *before;
    ka_ledger_state_t *s = f->s;
    log_t *log = &f->log;
    uint64_t id, own = 0;
    /* Phase 1 of a's decision reserved "mine" before appending it. */
    ka_reservation_spec_t mine = topic_spec("mine");
    assert_int_equal(ka_reservations_add(mirror, &mine, &id), 0);
    assert_int_equal(ka_ledger_state_own_begin(s, 42, &id, 1, 0), 0);
    append_intent(log, "b", 1, "theirs", WALL); /* b got in first */
    append_intent(log, "a", 42, "mine", WALL);
    append_intent(log, "c", 1, "later", WALL);
    assert_int_equal(apply(s, log, 0, &own), KA_LEDGER_APPLIED);
    assert_int_equal(apply(s, log, 1, &own), KA_LEDGER_OWN_INTENT);
    assert_int_equal(own, 42);
    assert_int_equal(apply(s, log, 2, &own), KA_LEDGER_APPLIED);
    assert_int_equal(ka_reservations_count(mirror), 3);
    assert_int_equal(ka_ledger_state_live(s), 3);
    /* The check of a's decision counts b's intent, not its own nor c's. */
    assert_int_equal(ka_reservations_copy_before(mirror, 1, &before), 0);
    assert_int_equal(ka_reservations_count(before), 1);
    assert_true(ka_reservations_has_topic(before, (ka_slice_t){(const uint8_t *)"theirs", 6}));
    ka_reservations_free(before);
    ka_ledger_state_own_end(s, 42);
    assert_int_equal(ka_ledger_state_live(s), 2);
    assert_int_equal(ka_reservations_count(mirror), 3); /* admitted: stays reserved */
}

static void test_outcome_releases_only_the_released_items(void **state)
{
    fx_t *f = *state;
    ka_reservations_t *mirror = f->mirror;
    ka_ledger_state_t *s = f->s;
    log_t *log = &f->log;
    uint64_t own = 0;
    append_intent(log, "b", 1, "kept", WALL);
    append_intent(log, "b", 2, "failed", WALL);
    append_outcome(log, "b", 1, 1);
    append_outcome(log, "b", 2, 0);
    append_outcome(log, "b", 3, 0); /* of an intent never seen */
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(apply(s, log, i, &own), KA_LEDGER_APPLIED);
    assert_int_equal(apply(s, log, 4, &own), KA_LEDGER_IGNORED);
    assert_int_equal(ka_reservations_count(mirror), 1);
    assert_true(ka_reservations_has_topic(mirror, (ka_slice_t){(const uint8_t *)"kept", 4}));
    assert_int_equal(ka_ledger_state_live(s), 0);
}

static void test_abandoned_own_intent_is_skipped_when_read_back(void **state)
{
    fx_t *f = *state;
    ka_reservations_t *mirror = f->mirror;
    ka_ledger_state_t *s = f->s;
    log_t *log = &f->log;
    uint64_t id, own = 0;
    ka_reservation_spec_t mine = topic_spec("mine");
    assert_int_equal(ka_reservations_add(mirror, &mine, &id), 0);
    assert_int_equal(ka_ledger_state_own_begin(s, 7, &id, 1, 0), 0);
    assert_int_equal(ka_ledger_state_own_abandon(s, 7), 1);
    assert_int_equal(ka_reservations_count(mirror), 0);
    append_intent(log, "a", 7, "mine", WALL);
    append_intent(log, "a", 8, "before-restart", WALL); /* a seq of an earlier run of a */
    assert_int_equal(apply(s, log, 0, &own), KA_LEDGER_OWN_ABANDONED);
    assert_int_equal(apply(s, log, 1, &own), KA_LEDGER_APPLIED);
    assert_int_equal(ka_reservations_count(mirror), 1);
    assert_int_equal(ka_ledger_state_own_abandon(s, 99), KA_EINVALID);
}

static void test_ttl_bounds_what_a_record_can_reserve(void **state)
{
    fx_t *f = *state;
    ka_reservations_t *mirror = f->mirror;
    ka_ledger_state_t *s = f->s;
    log_t *log = &f->log;
    uint64_t own = 0;
    append_intent(log, "b", 1, "old", WALL - TTL);
    append_intent(log, "b", 2, "recent", WALL - TTL + 1000);
    append_intent(log, "b", 3, "future", WALL + 10 * TTL);
    append_intent(log, "b", 3, "future", WALL + 10 * TTL); /* written twice */
    assert_int_equal(apply(s, log, 0, &own), KA_LEDGER_TOO_OLD);
    assert_int_equal(apply(s, log, 1, &own), KA_LEDGER_APPLIED);
    assert_int_equal(apply(s, log, 2, &own), KA_LEDGER_APPLIED);
    assert_int_equal(apply(s, log, 3, &own), KA_LEDGER_REPLAYED); /* counted once */
    assert_int_equal(ka_reservations_count(mirror), 2);
    /* "recent" has 1 s left; "future" no more than one TTL. */
    assert_int_equal(ka_reservations_expire(mirror, 1000), 1);
    assert_int_equal(ka_ledger_state_expire(s, 1000), 1);
    assert_int_equal(ka_reservations_expire(mirror, TTL), 1);
    assert_int_equal(ka_ledger_state_expire(s, TTL), 1);
}

/* Another sidecar's item dates from its intent's append, not from when it was read: a view
 * requested after the append (a sidecar starting and reading a minute of the ledger, or one
 * whose reader lags) may show its result. */
static void test_a_foreign_item_dates_from_its_intents_append(void **state)
{
    fx_t *f = *state;
    ka_reservation_spec_t spec;
    uint64_t own = 0;
    append_intent(&f->log, "b", 1, "x", WALL - 50000);
    append_intent(&f->log, "b", 2, "y", WALL + 3000); /* a clock ahead: never later than now */
    assert_int_equal(apply(f->s, &f->log, 0, &own), KA_LEDGER_APPLIED);
    assert_int_equal(apply(f->s, &f->log, 1, &own), KA_LEDGER_APPLIED);
    ka_reservations_spec_at(f->mirror, 0, &spec);
    assert_int_equal(spec.added_at_ms, -50000);
    ka_reservations_spec_at(f->mirror, 1, &spec);
    assert_int_equal(spec.added_at_ms, 0);
}

/* Copies of authentic records produced again: an intent whose seq its
 * sidecar already used reserves nothing (also after its outcome dropped it,
 * which is when a copy would otherwise count again), a copy of an outcome
 * finds nothing to release, and this sidecar's next seq stays above its
 * own earlier ones. */
static void test_replayed_intents_and_outcomes_change_nothing(void **state)
{
    fx_t *f = *state;
    ka_reservations_t *mirror = f->mirror;
    ka_ledger_state_t *s = f->s;
    log_t *log = &f->log;
    uint64_t own = 0;
    append_intent(log, "b", 5, "released", WALL); /* 0 */
    append_outcome(log, "b", 5, 0);               /* 1: b released it */
    append_intent(log, "b", 5, "released", WALL); /* 2: copy of 0 */
    append_intent(log, "b", 6, "kept", WALL);     /* 3 */
    append_outcome(log, "b", 6, 1);               /* 4: admitted */
    append_intent(log, "b", 4, "older", WALL);    /* 5: a copy of an older one */
    append_outcome(log, "b", 6, 0);               /* 6: an outcome of 6 again: it is gone */
    append_outcome(log, "b", 5, 0);               /* 7: copy of 1 */
    append_intent(log, "a", 900, "mine-earlier-run", WALL); /* 8 */
    assert_int_equal(apply(s, log, 0, &own), KA_LEDGER_APPLIED);
    assert_int_equal(apply(s, log, 1, &own), KA_LEDGER_APPLIED);
    assert_int_equal(ka_reservations_count(mirror), 0);
    assert_int_equal(apply(s, log, 2, &own), KA_LEDGER_REPLAYED);
    assert_int_equal(ka_reservations_count(mirror), 0);
    assert_int_equal(apply(s, log, 3, &own), KA_LEDGER_APPLIED);
    assert_int_equal(apply(s, log, 4, &own), KA_LEDGER_APPLIED);
    assert_int_equal(ka_reservations_count(mirror), 1);
    assert_int_equal(apply(s, log, 5, &own), KA_LEDGER_REPLAYED);
    assert_int_equal(apply(s, log, 6, &own), KA_LEDGER_IGNORED);
    assert_int_equal(apply(s, log, 7, &own), KA_LEDGER_IGNORED);
    assert_int_equal(ka_reservations_count(mirror), 1);
    assert_true(ka_reservations_has_topic(mirror, (ka_slice_t){(const uint8_t *)"kept", 4}));
    assert_int_equal(ka_ledger_state_live(s), 0);
    /* a's own earlier run: its next intent must take a higher seq. */
    assert_int_equal(ka_ledger_state_seq_floor(s), 0);
    assert_int_equal(apply(s, log, 8, &own), KA_LEDGER_APPLIED);
    assert_int_equal(ka_ledger_state_seq_floor(s), 901);
    /* A TTL on, the highest seqs are forgotten: a copy is then older
     * than its TTL by its own timestamp. */
    ka_ledger_state_expire(s, TTL - 1);
    assert_int_equal(ka_ledger_state_seq_floor(s), 901);
    ka_ledger_state_expire(s, TTL);
    assert_int_equal(ka_ledger_state_seq_floor(s), 0);
    char err[256] = "";
    assert_int_equal(ka_ledger_state_apply(s, log->e[5].bytes, log->e[5].len, 9, WALL + TTL, TTL,
                                           &own, err, sizeof(err)),
                     KA_LEDGER_TOO_OLD);
}

static void test_malformed_records_change_nothing(void **state)
{
    fx_t *f = *state;
    ka_reservations_t *mirror = f->mirror;
    ka_ledger_state_t *s = f->s;
    uint64_t own = 0;
    char err[256] = "";
    static const char *bad[] = {
        "{", "{\"type\":\"intent\"}", "\x00\x01\x02",
        "{\"type\":\"intent\",\"sidecar\":\"b\",\"seq\":1,\"ts\":1700000000000,\"items\":[{}]}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t len = strlen(bad[i]) ? strlen(bad[i]) : 3;
        assert_int_equal(ka_ledger_state_apply(s, bad[i], len, i, WALL, 0, &own, err, sizeof(err)),
                         KA_LEDGER_MALFORMED);
        assert_true(err[0] != '\0');
    }
    assert_int_equal(ka_reservations_count(mirror), 0);
    assert_int_equal(ka_ledger_state_live(s), 0);
}

/*
 * N sidecars, one log, a cluster with room for LIMIT partitions. Each step
 * one sidecar either starts a decision (phase 1 against its mirror: fits,
 * reserve, append an intent) or reads the next record of the log; reading
 * its own intent back runs phase 2 against the intents ordered before it.
 */
#define SIDECARS 3
#define LIMIT    10
#define ATTEMPTS 34

typedef struct sim {
    log_t log;
    ka_reservations_t *mirror[SIDECARS];
    ka_ledger_state_t *state[SIDECARS];
    size_t cursor[SIDECARS];
    uint64_t next_seq[SIDECARS];
    uint64_t pending_id[SIDECARS][ATTEMPTS + 1]; /* by seq */
    int attempts, admitted;
} sim_t;

static const char *names[SIDECARS] = {"s0", "s1", "s2"};

static void sim_start(sim_t *m, int i)
{
    char topic[32];
    uint64_t id;
    m->attempts++;
    if (ka_reservations_partitions(m->mirror[i]) + 1 > LIMIT)
        return; /* phase 1 rejects: the ledger is not touched */
    snprintf(topic, sizeof(topic), "t%d", m->attempts);
    ka_reservation_spec_t spec = topic_spec(topic);
    uint64_t seq = ++m->next_seq[i];
    assert_int_equal(ka_reservations_add(m->mirror[i], &spec, &id), 0);
    m->pending_id[i][seq] = id;
    assert_int_equal(ka_ledger_state_own_begin(m->state[i], seq, &id, 1, 0), 0);
    append_intent(&m->log, names[i], seq, topic, WALL);
}

static void sim_read(sim_t *m, int i)
{
    uint64_t own = 0;
    size_t at = m->cursor[i]++;
    if (apply(m->state[i], &m->log, at, &own) != KA_LEDGER_OWN_INTENT)
        return;
    ka_reservations_t *before;
    assert_int_equal(ka_reservations_copy_before(m->mirror[i], at, &before), 0);
    int fits = ka_reservations_partitions(before) + 1 <= LIMIT;
    ka_reservations_free(before);
    if (fits) {
        m->admitted++;
    } else {
        ka_reservations_release(m->mirror[i], m->pending_id[i][own]);
        append_outcome(&m->log, names[i], own, 0);
    }
    ka_ledger_state_own_end(m->state[i], own);
}

static int sim_run(unsigned seed, int interleave)
{
    sim_t m = {0};
    srand(seed);
    for (int i = 0; i < SIDECARS; i++) {
        assert_int_equal(ka_reservations_new(&m.mirror[i]), 0);
        assert_int_equal(ka_ledger_state_new(names[i], m.mirror[i], TTL, &m.state[i]), 0);
    }
    for (;;) {
        int i = rand() % SIDECARS;
        int can_read = m.cursor[i] < m.log.n;
        if (m.attempts < ATTEMPTS && (!can_read || (interleave && rand() % 2))) {
            sim_start(&m, m.attempts % SIDECARS); /* a client rotating over sidecars */
            if (!interleave)                      /* everyone catches up before the next request */
                for (int j = 0; j < SIDECARS; j++)
                    while (m.cursor[j] < m.log.n)
                        sim_read(&m, j);
        } else if (can_read) {
            sim_read(&m, i);
        } else if (m.attempts >= ATTEMPTS) {
            int idle = 1;
            for (int j = 0; j < SIDECARS; j++)
                idle &= m.cursor[j] == m.log.n;
            if (idle)
                break;
        }
    }
    for (int i = 0; i < SIDECARS; i++) {
        ka_ledger_state_free(m.state[i]);
        ka_reservations_free(m.mirror[i]);
    }
    log_free(&m.log);
    return m.admitted;
}

static void test_no_interleaving_of_sidecars_admits_more_than_the_limit(void **state)
{
    (void)state;
    for (unsigned seed = 1; seed <= 300; seed++) {
        int admitted = sim_run(seed, 1);
        if (admitted > LIMIT)
            fail_msg("seed %u: %d admitted against a limit of %d", seed, admitted, LIMIT);
    }
}

static void test_sequential_requests_use_all_the_headroom(void **state)
{
    (void)state;
    assert_int_equal(sim_run(1, 0), LIMIT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_own_intent_read_back_is_ordered_after_earlier_ones,
                                        fx_open, fx_close),
        cmocka_unit_test_setup_teardown(test_outcome_releases_only_the_released_items, fx_open,
                                        fx_close),
        cmocka_unit_test_setup_teardown(test_abandoned_own_intent_is_skipped_when_read_back,
                                        fx_open, fx_close),
        cmocka_unit_test_setup_teardown(test_ttl_bounds_what_a_record_can_reserve, fx_open,
                                        fx_close),
        cmocka_unit_test_setup_teardown(test_a_foreign_item_dates_from_its_intents_append, fx_open,
                                        fx_close),
        cmocka_unit_test_setup_teardown(test_replayed_intents_and_outcomes_change_nothing, fx_open,
                                        fx_close),
        cmocka_unit_test_setup_teardown(test_malformed_records_change_nothing, fx_open, fx_close),
        cmocka_unit_test(test_no_interleaving_of_sidecars_admits_more_than_the_limit),
        cmocka_unit_test(test_sequential_requests_use_all_the_headroom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
