/*
 * test_ledger_sim.c: three simulated sidecars against one simulated
 * cluster, through the real engine, the real ledger records and the real
 * ledger state, where the views lag the cluster.
 *
 * The cluster is the truth: three brokers with topics placed on them.
 * Each sidecar decides on its own view, a snapshot taken at its last
 * refresh, so a view lists topics deleted since, lacks topics created
 * since, and may not know that a broker was fenced. A step does one of:
 * a create through a random sidecar (phase 1: judged on its view and its
 * mirror, reserved, its intent appended to the shared log), a sidecar
 * reading one record (its own intent read back runs phase 2 against the
 * intents before it, then the broker does what Kafka would: create the
 * topic if the name is free, placing it as assigned or over every
 * registered broker, and the outcome is appended), a refresh of a view, a
 * delete of a topic (which no sidecar judges), a broker fenced or
 * unfenced. After every step the checker compares every broker's real
 * count with its limit. Names are drawn from a small pool, so topics are
 * deleted and created again under the same name all the time.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ka_codec.h"
#include "ka_cluster.h"
#include "ka_engine.h"
#include "ka_ledger_record.h"
#include "ka_ledger_state.h"
#include "ka_policy.h"
#include "ka_reservations.h"

#define SIDECARS   3
#define BROKERS    3
#define LIMIT      24
#define NAMES      12
#define MAX_TOPICS 64
#define MAX_LOG    4096
#define MAX_REPL   3
#define MAX_PARTS  6
#define TTL        30000
#define WALL       1700000000000LL

typedef struct topic {
    int used;
    char name[16];
    uint8_t id[16];
    int32_t partitions, rf;
    int32_t replicas[MAX_PARTS][MAX_REPL];
} topic_t;

typedef struct cluster {
    topic_t topics[MAX_TOPICS];
    int fenced[BROKERS + 1];
    uint32_t next_id;
} cluster_t;

typedef struct request {
    int active;
    uint64_t seq;
    ka_create_topic_t item;
    char name[16];
    ka_verdict_t verdict;
    uint64_t mirror_id; /* the phase-1 reservation in the mirror */
} request_t;

typedef struct sidecar {
    char id[8];
    ka_cluster_t *view;
    ka_reservations_t *mirror;
    ka_ledger_state_t *state;
    size_t cursor;
    uint64_t next_seq;
    request_t req;
} sidecar_t;

typedef struct sim {
    cluster_t truth;
    sidecar_t sc[SIDECARS];
    char *log[MAX_LOG];
    size_t log_len[MAX_LOG], log_n;
    int64_t log_ms[MAX_LOG]; /* when each record was appended (the leader's clock) */
    ka_policy_t *policy;
    int64_t now_ms;
    unsigned seed, first_seed; /* the generator's state, and the seed the run started from */
    int64_t skew_ms[SIDECARS]; /* how far each sidecar's wall clock is off */
    int admitted, created, refused, deferred;
} sim_t;

static unsigned next_rand(sim_t *m)
{
    m->seed = m->seed * 1103515245u + 12345u;
    return (m->seed >> 16) & 0x7fff;
}

static int64_t broker_count(const cluster_t *c, int32_t broker)
{
    int64_t n = 0;

    for (int t = 0; t < MAX_TOPICS; t++)
        for (int32_t p = 0; c->topics[t].used && p < c->topics[t].partitions; p++)
            for (int32_t r = 0; r < c->topics[t].rf; r++)
                n += c->topics[t].replicas[p][r] == broker;
    return n;
}

static topic_t *find(cluster_t *c, const char *name)
{
    for (int t = 0; t < MAX_TOPICS; t++)
        if (c->topics[t].used && strcmp(c->topics[t].name, name) == 0)
            return &c->topics[t];
    return NULL;
}

static ka_cluster_t *snapshot(const cluster_t *c, int64_t now_ms)
{
    ka_cluster_builder_t *b = NULL;
    ka_cluster_t *view = NULL;

    assert_int_equal(ka_cluster_builder_new(now_ms, &b), 0);
    ka_cluster_builder_set_lists_fenced(b, true);
    ka_cluster_builder_set_defaults(b, &(ka_broker_defaults_t){1, 3, true});
    for (int32_t id = 1; id <= BROKERS; id++)
        assert_int_equal(ka_cluster_builder_add_broker(b, id, KA_SLICE_NULL, c->fenced[id] != 0),
                         0);
    for (int t = 0; t < MAX_TOPICS; t++) {
        const topic_t *tp = &c->topics[t];
        ka_slice_t name = {(const uint8_t *)tp->name, (int32_t)strlen(tp->name)};

        if (!tp->used)
            continue;
        for (int32_t p = 0; p < tp->partitions; p++)
            assert_int_equal(ka_cluster_builder_add_partition(b, name, p, tp->replicas[p], tp->rf),
                             0);
        assert_int_equal(ka_cluster_builder_set_topic_id(b, name, tp->id), 0);
    }
    assert_int_equal(ka_cluster_builder_finish(b, &view), 0);
    return view;
}

static void refresh(sim_t *m, sidecar_t *s)
{
    ka_cluster_unref(s->view);
    s->view = snapshot(&m->truth, m->now_ms);
    ka_reservations_reconcile(s->mirror, s->view);
}

static void append(sim_t *m, char *bytes, size_t len)
{
    assert_true(m->log_n < MAX_LOG);
    m->log[m->log_n] = bytes;
    m->log_ms[m->log_n] = m->now_ms;
    m->log_len[m->log_n++] = len;
}

/* Kafka's controller: the name must be free; a placement it makes itself stripes over every
 * registered broker, fenced ones included, from a random start. Returns 1 when created. */
static int broker_creates(sim_t *m, const request_t *r)
{
    const ka_verdict_t *v = &r->verdict;
    cluster_t *c = &m->truth;
    int32_t partitions = r->item.num_partitions, rf = r->item.replication_factor, start;
    topic_t *t;
    int slot = 0;

    if (find(c, r->name) != NULL || rf > BROKERS)
        return 0;
    while (slot < MAX_TOPICS - 1 && c->topics[slot].used)
        slot++;
    assert_false(c->topics[slot].used);
    t = &c->topics[slot];
    memset(t, 0, sizeof(*t));
    t->used = 1;
    snprintf(t->name, sizeof(t->name), "%s", r->name);
    c->next_id++;
    memcpy(t->id, &c->next_id, sizeof(c->next_id));
    t->id[15] = 0x5a;
    t->partitions = partitions;
    t->rf = rf;
    start = (int32_t)(next_rand(m) % BROKERS);
    for (int32_t p = 0; p < partitions; p++)
        for (int32_t k = 0; k < rf; k++)
            t->replicas[p][k] = v->kind == KA_VERDICT_ADMIT_WITH_ASSIGNMENT
                                    ? v->assignment[p * v->assignment_replication + k]
                                    : (start + p + k) % BROKERS + 1;
    return 1;
}

static ka_decision_context_t context(sim_t *m, sidecar_t *s, ka_reservations_t *ledger)
{
    return (ka_decision_context_t){.policy = m->policy,
                                   .view = s->view,
                                   .ledger = ledger,
                                   .now_ms = m->now_ms,
                                   .seed = next_rand(m),
                                   .view_follows_request = false};
}

/* Phase 1 on sidecar i: judged on its view and mirror; an admission is announced. */
static void start_create(sim_t *m, int i)
{
    sidecar_t *s = &m->sc[i];
    request_t *r = &s->req;
    ka_decision_context_t ctx = context(m, s, s->mirror);
    ka_reservation_spec_t spec;
    char *bytes;
    size_t len;

    memset(r, 0, sizeof(*r));
    snprintf(r->name, sizeof(r->name), "t%u", next_rand(m) % NAMES);
    r->item = (ka_create_topic_t){.name = {(const uint8_t *)r->name, (int32_t)strlen(r->name)},
                                  .num_partitions = (int32_t)(next_rand(m) % MAX_PARTS) + 1,
                                  .replication_factor = (int16_t)(next_rand(m) % MAX_REPL + 1)};
    assert_int_equal(ka_engine_create_topics(&ctx, &r->item, 1, &r->verdict), 0);
    if (r->verdict.kind == KA_VERDICT_REJECT) {
        m->refused++;
        ka_verdict_release(&r->verdict);
        return;
    }
    if (r->verdict.kind == KA_VERDICT_DEFER_TO_BROKER) {
        m->deferred++;
        if (broker_creates(m, r))
            m->created++;
        ka_verdict_release(&r->verdict);
        return;
    }
    r->mirror_id = r->verdict.reservation_id;
    assert_true(r->mirror_id != 0);
    r->seq = ++s->next_seq;
    assert_int_equal(ka_reservations_describe(s->mirror, r->mirror_id, &spec, NULL), 0);
    assert_int_equal(ka_ledger_encode_intent(s->id, r->seq, WALL + m->now_ms + m->skew_ms[i], &spec,
                                             1, &bytes, &len),
                     0);
    assert_int_equal(ka_ledger_state_own_begin(s->state, r->seq, &r->mirror_id, 1, m->now_ms), 0);
    append(m, bytes, len);
    r->active = 1;
}

/* Phase 2, once sidecar i read its intent back at `offset`; then the broker and the outcome. */
static void finish_create(sim_t *m, int i, uint64_t offset)
{
    sidecar_t *s = &m->sc[i];
    request_t *r = &s->req;
    ka_reservations_t *before = NULL;
    ka_decision_context_t ctx;
    uint8_t admitted = 0;
    char *bytes;
    size_t len;

    ka_reservations_reconcile(s->mirror, s->view);
    assert_int_equal(ka_reservations_copy_before(s->mirror, offset, &before), 0);
    ctx = context(m, s, before);
    assert_int_equal(ka_engine_recheck(&ctx, &r->verdict, 1, KA_REASON_CONCURRENT), 0);
    ka_reservations_free(before);
    if (r->verdict.kind != KA_VERDICT_REJECT) {
        m->admitted++;
        admitted = (uint8_t)broker_creates(m, r);
        m->created += admitted;
    } else {
        m->refused++;
    }
    if (!admitted) /* refused in phase 2, or TOPIC_ALREADY_EXISTS: nothing was created */
        ka_reservations_release(s->mirror, r->mirror_id);
    assert_int_equal(ka_ledger_encode_outcome(s->id, r->seq, &admitted, 1, &bytes, &len), 0);
    append(m, bytes, len);
    ka_ledger_state_own_end(s->state, r->seq);
    ka_verdict_release(&r->verdict);
    r->active = 0;
}

static void read_one(sim_t *m, int i)
{
    sidecar_t *s = &m->sc[i];
    size_t at = s->cursor++;
    uint64_t own = 0;
    char err[256];
    /* The log is appended at once: a record's append time is the step that wrote it; the
     * reader's lower bound of the ledger's clock is taken as now. */
    enum ka_ledger_applied a =
        ka_ledger_state_apply_at(s->state, m->log[at], m->log_len[at], at, WALL + m->log_ms[at],
                                 WALL + m->now_ms, m->now_ms, &own, err, sizeof(err));

    assert_int_not_equal(a, KA_LEDGER_MALFORMED);
    if (a == KA_LEDGER_OWN_INTENT && s->req.active && own == s->req.seq)
        finish_create(m, i, at);
}

static void delete_some(sim_t *m)
{
    int t = (int)(next_rand(m) % MAX_TOPICS);

    for (int k = 0; k < MAX_TOPICS; k++, t = (t + 1) % MAX_TOPICS)
        if (m->truth.topics[t].used) {
            m->truth.topics[t].used = 0;
            return;
        }
}

static void toggle_fence(sim_t *m)
{
    int32_t b = (int32_t)(next_rand(m) % BROKERS) + 1;
    int fenced = 0;

    for (int32_t id = 1; id <= BROKERS; id++)
        fenced += m->truth.fenced[id];
    if (m->truth.fenced[b] || fenced == 0) /* at most one broker down at a time */
        m->truth.fenced[b] = !m->truth.fenced[b];
}

static void check_limits(const sim_t *m, int step)
{
    for (int32_t b = 1; b <= BROKERS; b++) {
        int64_t n = broker_count(&m->truth, b);

        if (n > LIMIT)
            fail_msg("seed %u, step %d: broker %d hosts %lld replicas against a limit of %d",
                     m->first_seed, step, b, (long long)n, LIMIT);
    }
}

static void sim_run(unsigned seed, int steps, const int64_t *skew_ms, sim_t *out)
{
    static const char policy[] = "{\"max.broker.partitions\": 24}";
    char err[256];
    sim_t *m = calloc(1, sizeof(*m));

    assert_non_null(m);
    m->seed = m->first_seed = seed;
    for (int i = 0; skew_ms != NULL && i < SIDECARS; i++)
        m->skew_ms[i] = skew_ms[i];
    assert_int_equal(ka_policy_parse(policy, strlen(policy), 1, &m->policy, err, sizeof(err)), 0);
    for (int i = 0; i < SIDECARS; i++) {
        sidecar_t *s = &m->sc[i];

        snprintf(s->id, sizeof(s->id), "s%d", i);
        assert_int_equal(ka_reservations_new(&s->mirror), 0);
        assert_int_equal(ka_ledger_state_new(s->id, s->mirror, TTL, &s->state), 0);
        refresh(m, s);
    }
    for (int step = 0; step < steps; step++) {
        unsigned what = next_rand(m) % 100;
        int i = (int)(next_rand(m) % SIDECARS);
        sidecar_t *s = &m->sc[i];

        m->now_ms += 50;
        if (what < 30 && !s->req.active)
            start_create(m, i);
        else if (what < 75 && s->cursor < m->log_n)
            read_one(m, i);
        else if (what < 88)
            refresh(m, s);
        else if (what < 96)
            delete_some(m);
        else
            toggle_fence(m);
        check_limits(m, step);
    }
    *out = *m;
    for (int i = 0; i < SIDECARS; i++) {
        ka_verdict_release(&m->sc[i].req.verdict);
        ka_ledger_state_free(m->sc[i].state);
        ka_reservations_free(m->sc[i].mirror);
        ka_cluster_unref(m->sc[i].view);
    }
    for (size_t k = 0; k < m->log_n; k++)
        free(m->log[k]);
    ka_policy_unref(m->policy);
    free(m);
}

/* Deletes, creates again under the same names, fenced brokers and views that lag: no step
 * ever finds a broker over its limit. Before kadmit judged a re-create of a listed topic and a
 * factor above the unfenced brokers, this failed within a few hundred steps. */
static void test_lagging_views_never_let_a_broker_past_its_limit(void **state)
{
    sim_t r;

    (void)state;
    for (unsigned seed = 1; seed <= 200; seed++)
        sim_run(seed, 1500, NULL, &r);
}

/* The simulation is no stub: it admits, creates and refuses, and fills the headroom. */
static void test_the_simulation_admits_and_refuses(void **state)
{
    int admitted = 0, created = 0, refused = 0;
    sim_t r;

    (void)state;
    for (unsigned seed = 1; seed <= 20; seed++) {
        sim_run(seed, 1500, NULL, &r);
        admitted += r.admitted;
        created += r.created;
        refused += r.refused;
    }
    assert_true(admitted > 100);
    assert_true(created > 100);
    assert_true(refused > 50);
}

/* Clocks off by 90 s ahead and 20 s behind, with an intent TTL of 30 s: on the ledger's clock
 * no step finds a broker past its limit either. */
static void test_sidecars_whose_clocks_are_off_keep_the_limit(void **state)
{
    static const int64_t skew[SIDECARS] = {0, -20000, 90000};
    sim_t r;

    (void)state;
    for (unsigned seed = 1; seed <= 100; seed++)
        sim_run(seed, 1500, skew, &r);
}

/* A reader whose wall clock is 90 s ahead, TTL 30 s, reads an intent appended a moment ago by a
 * sidecar with a correct clock. On the ledger's clock it counts it; aged by the writer's "ts"
 * against its own wall clock, as before, it thought it expired and counted nothing. */
static void test_an_intent_is_aged_on_the_ledgers_clock_not_the_readers(void **state)
{
    const ka_broker_delta_t deltas[] = {{1, 5}};
    ka_reservation_spec_t spec = {.kind = KA_RESERVATION_PARTITIONS,
                                  .topic = {(const uint8_t *)"t", 1},
                                  .partition_count = 5,
                                  .partition = -1,
                                  .new_partitions = 5,
                                  .deltas = deltas,
                                  .delta_count = 1};
    const int64_t appended = WALL + 1000, reader_wall = appended + 90000;
    ka_reservations_t *mirror;
    ka_ledger_state_t *st;
    char *bytes, err[256];
    size_t len;
    uint64_t own = 0;

    (void)state;
    assert_int_equal(ka_ledger_encode_intent("writer", 1, appended, &spec, 1, &bytes, &len), 0);
    assert_int_equal(ka_reservations_new(&mirror), 0);
    assert_int_equal(ka_ledger_state_new("reader", mirror, TTL, &st), 0);
    assert_int_equal(ka_ledger_state_apply_at(st, bytes, len, 0, appended, appended + 200, 0, &own,
                                              err, sizeof(err)),
                     KA_LEDGER_APPLIED);
    assert_int_equal(ka_reservations_broker_replicas(mirror, 1), 5);
    ka_ledger_state_free(st);
    ka_reservations_free(mirror);

    assert_int_equal(ka_reservations_new(&mirror), 0);
    assert_int_equal(ka_ledger_state_new("reader", mirror, TTL, &st), 0);
    assert_int_equal(
        ka_ledger_state_apply(st, bytes, len, 0, reader_wall, 0, &own, err, sizeof(err)),
        KA_LEDGER_TOO_OLD);
    assert_int_equal(ka_reservations_broker_replicas(mirror, 1), 0);
    /* A heartbeat (the record a sidecar appends at start to learn the clock) changes nothing. */
    free(bytes);
    assert_int_equal(ka_ledger_encode_heartbeat("writer", appended, &bytes, &len), 0);
    assert_int_equal(
        ka_ledger_state_apply_at(st, bytes, len, 1, appended, appended, 0, &own, err, sizeof(err)),
        KA_LEDGER_IGNORED);
    assert_int_equal(ka_reservations_count(mirror), 0);
    ka_ledger_state_free(st);
    ka_reservations_free(mirror);
    free(bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lagging_views_never_let_a_broker_past_its_limit),
        cmocka_unit_test(test_the_simulation_admits_and_refuses),
        cmocka_unit_test(test_sidecars_whose_clocks_are_off_keep_the_limit),
        cmocka_unit_test(test_an_intent_is_aged_on_the_ledgers_clock_not_the_readers),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
