/*
 * ka_engine_requests.c: the four admission APIs in front of the judging
 * core.
 *
 * Each walks its items in request order and first sorts out what is not a
 * limit question. kadmit only judges limits, and leaves an item to the
 * broker unjudged (DEFER_TO_BROKER, never masked with the rejection code)
 * only when the broker refuses it whatever the cluster's state is now
 * (ARCHITECTURE invariant 10): a bad name, a name twice in one request, a
 * malformed assignment, counts no state allows. A view lags the broker by
 * a second as a matter of course, so "the view says the broker will
 * refuse" is never enough by itself:
 *   - a topic the view still lists may have been deleted a moment ago, so
 *     creating it again is judged in full, as a new topic;
 *   - a replication factor above the brokers the view lists is left to the
 *     broker only on a view taken after the request arrived that lists
 *     every registered broker, fenced ones included (Kafka's placer uses
 *     them); otherwise it waits for such a view, or is refused;
 *   - CreatePartitions to no more partitions than the view shows is left to
 *     the broker only on such a fresh view with nothing of that topic
 *     reserved (no create or growth of it in flight); assignments whose
 *     number differs from the view's count are judged as given.
 * docs/admission.md lists every deferral and why it is safe.
 *
 * A topic, partition or broker the view does not know is different: it
 * may exist already (created a moment ago, through this or another
 * sidecar), so forwarding it unjudged could exceed a limit. Such an item is
 * KA_REASON_UNKNOWN_TOPIC or KA_REASON_UNKNOWN_BROKER; the caller may wait
 * for a fresher view and ask again, and otherwise it is rejected (audit:
 * flagged) with a message saying what the view lacks.
 */
#include <stdlib.h>
#include <string.h>

#include "ka_engine.h"
#include "ka_engine_work.h"
#include "ka_message.h"

#define ADVICE_CREATE                                                                              \
    "Raise max.broker.partitions for these brokers, add brokers, or create fewer partitions."
#define ADVICE_REASSIGN                                                                            \
    "Raise max.broker.partitions for these brokers, or choose other target brokers."

struct item_key {
    ka_slice_t name;
    int32_t partition;
    size_t index;
};

static int compare_key(const void *a, const void *b)
{
    const struct item_key *x = a, *y = b;
    int c;

    if (x->name.len != y->name.len)
        return x->name.len < y->name.len ? -1 : 1;
    c = x->name.len > 0 ? memcmp(x->name.ptr, y->name.ptr, (size_t)x->name.len) : 0;
    if (c != 0)
        return c;
    return (x->partition > y->partition) - (x->partition < y->partition);
}

/* FNV-1a over the name, then the partition. */
static uint64_t key_hash(const struct item_key *k)
{
    uint64_t h = 0xcbf29ce484222325ull;

    for (int32_t i = 0; i < k->name.len; i++)
        h = (h ^ k->name.ptr[i]) * 0x100000001b3ull;
    h = (h ^ (uint32_t)k->partition) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

/* Marks every item whose (name, partition) occurs more than once: a hash table of
 * the first of each (linear probing, at most half full), else, without memory for
 * it, a sort. */
static int mark_duplicates(struct item_key *keys, size_t n, bool *dup)
{
    size_t cap = 16, mask;
    uint32_t *slot; /* index + 1 of the first item with that key; 0: empty */

    if (n < 2)
        return 0;
    while (cap < 2 * n)
        cap *= 2;
    if (n >= UINT32_MAX || (slot = calloc(cap, sizeof(*slot))) == NULL) {
        qsort(keys, n, sizeof(*keys), compare_key);
        for (size_t i = 1; i < n; i++)
            if (compare_key(&keys[i - 1], &keys[i]) == 0)
                dup[keys[i - 1].index] = dup[keys[i].index] = true;
        return 0;
    }
    mask = cap - 1;
    for (size_t i = 0; i < n; i++) {
        size_t h = (size_t)key_hash(&keys[i]) & mask;

        for (; slot[h] != 0; h = (h + 1) & mask) {
            const struct item_key *first = &keys[slot[h] - 1];

            if (compare_key(first, &keys[i]) == 0) {
                dup[first->index] = dup[keys[i].index] = true;
                break;
            }
        }
        if (slot[h] == 0)
            slot[h] = (uint32_t)i + 1;
    }
    free(slot);
    return 0;
}

/* A deferral from take_rows: 1, or KA_ENOMEM. */
#define defer_row(v, ...) (ka_work_defer((v), __VA_ARGS__) < 0 ? KA_ENOMEM : 1)

/* An unknown broker in a row: 1 with the verdict filled, or KA_ENOMEM. */
static int unknown_broker(const struct ka_work *w, ka_verdict_t *v, int32_t partition,
                          int32_t broker_id)
{
    int rc = ka_work_unknown(
        w, v, KA_REASON_UNKNOWN_BROKER, ka_policy_reject_error_code(w->ctx->policy),
        "Cannot decide on this request: kadmit's cluster view does not know broker %d (named for "
        "partition %d) even after a refresh, so it cannot count that broker's partitions. Name "
        "brokers the cluster lists, or retry once the broker has registered.",
        broker_id, partition);

    return rc < 0 ? KA_ENOMEM : 1;
}

/* A topic (or, with partition >= 0, a partition) the view does not know. */
static int unknown_topic(const struct ka_work *w, ka_verdict_t *v, ka_slice_t name,
                         int32_t partition)
{
    int n = name.len > 0 ? (int)name.len : 0;

    if (partition >= 0)
        return ka_work_unknown(w, v, KA_REASON_UNKNOWN_TOPIC, KA_ENGINE_UNKNOWN_TOPIC_OR_PARTITION,
                               "kadmit's cluster view does not know partition %d of topic %.*s "
                               "even after a refresh, so it cannot judge this request. Check the "
                               "partition, or retry shortly if it was just created.",
                               partition, n, (const char *)name.ptr);
    if (ka_reservations_has_topic(w->ctx->ledger, name))
        return ka_work_unknown(w, v, KA_REASON_UNKNOWN_TOPIC, KA_ENGINE_UNKNOWN_TOPIC_OR_PARTITION,
                               "Topic %.*s was admitted moments ago, but kadmit's cluster view "
                               "does not show it yet even after a refresh, so it cannot judge "
                               "this request. Retry shortly.",
                               n, (const char *)name.ptr);
    return ka_work_unknown(w, v, KA_REASON_UNKNOWN_TOPIC, KA_ENGINE_UNKNOWN_TOPIC_OR_PARTITION,
                           "kadmit's cluster view does not know topic %.*s even after a refresh, "
                           "so it cannot judge this request. Check the topic name, or retry "
                           "shortly if it was just created.",
                           n, (const char *)name.ptr);
}

/*
 * A replication factor Kafka's placer may refuse. The placer uses every
 * registered broker, fenced ones included, and refuses a factor above their
 * number, or any factor when every broker is fenced (INVALID_REPLICATION_FACTOR).
 * Brokers register and unfence at any moment, so that refusal is left to the
 * broker only on a view taken after the request arrived, and only when the
 * view lists fenced brokers (DescribeCluster v2, Kafka 4.0 and later);
 * before such a view the item waits for one. On a view that cannot list
 * fenced brokers, a factor above the brokers it lists may still be placed
 * on brokers kadmit cannot count, so it is refused with a message.
 * Returns 0 when the factor is within the brokers (judge the item), 1 with
 * v filled, or KA_ENOMEM.
 */
static int replication_beyond_brokers(const struct ka_work *w, ka_verdict_t *v, int32_t replication)
{
    int rc;

    if ((size_t)replication <= w->broker_count && w->unfenced_count > 0)
        return 0;
    if (!w->ctx->view_follows_request)
        rc = ka_work_unknown(w, v, KA_REASON_UNKNOWN_BROKER,
                             ka_policy_reject_error_code(w->ctx->policy),
                             "Cannot decide on this request: replication factor %d is above the "
                             "%zu brokers (%zu unfenced) in kadmit's cluster view, which may lag "
                             "brokers that register or unfence. Retry shortly.",
                             replication, w->broker_count, w->unfenced_count);
    else if (ka_cluster_lists_fenced(w->ctx->view))
        return ka_work_defer(v,
                             "replication factor %d is above the %zu registered brokers (%zu "
                             "unfenced) of a view taken after the request",
                             replication, w->broker_count, w->unfenced_count) < 0
                   ? KA_ENOMEM
                   : 1;
    else
        rc = ka_work_unknown(
            w, v, KA_REASON_UNKNOWN_BROKER, ka_policy_reject_error_code(w->ctx->policy),
            "Cannot decide on this request: replication factor %d is above the %zu brokers "
            "kadmit's cluster view lists, and this Kafka does not list fenced brokers "
            "(DescribeCluster v2, Kafka 4.0), which its placer also uses, so kadmit cannot "
            "count the brokers this topic would be placed on. Use a replication factor of at "
            "most %zu, or retry once every broker is back.",
            replication, w->broker_count, w->broker_count);
    return rc < 0 ? KA_ENOMEM : 1;
}

/*
 * Checks explicit rows (indexed: CreateTopics' partition indices must be
 * 0..count-1 each once) and, when they are sound, adds them to w->delta.
 * *rf gets the common row length; expected_rf > 0 demands it. Returns 1
 * with a deferral (or an unknown-broker verdict) in v, 0 when sound, or
 * KA_ENOMEM.
 */
static int take_rows(struct ka_work *w, ka_verdict_t *v, const ka_replica_assignment_t *rows,
                     int32_t count, bool indexed, int32_t expected_rf, int32_t *rf)
{
    uint8_t *seen = indexed ? calloc((size_t)count, 1) : NULL;
    int rc = 1;

    if (indexed && seen == NULL)
        return KA_ENOMEM;
    *rf = expected_rf > 0 ? expected_rf : rows[0].broker_count;
    for (int32_t r = 0; r < count; r++) {
        const ka_replica_assignment_t *row = &rows[r];
        int32_t p = indexed ? row->partition_index : r;

        if (indexed && (p < 0 || p >= count || seen[p]++)) {
            rc = defer_row(v,
                           "the assignments' partition indices are not 0..%d, each once "
                           "(partition %d)",
                           count - 1, p);
            goto out;
        }
        if (row->broker_count <= 0 || row->broker_ids == NULL) {
            rc = defer_row(v, "the assignment for partition %d is empty", p);
            goto out;
        }
        if (row->broker_count != *rf) {
            rc = defer_row(v, "the assignment for partition %d has %d replicas, not %d", p,
                           row->broker_count, *rf);
            goto out;
        }
        for (int32_t i = 0; i < row->broker_count; i++) {
            if (ka_work_broker_index(w, row->broker_ids[i]) < 0) {
                rc = unknown_broker(w, v, p, row->broker_ids[i]);
                goto out;
            }
            /* w->shares marks brokers already in this row: linear, whatever the row length. */
            if (w->shares[ka_work_broker_index(w, row->broker_ids[i])] == r + 1) {
                rc = defer_row(v, "the assignment for partition %d names broker %d twice", p,
                               row->broker_ids[i]);
                goto out;
            }
            w->shares[ka_work_broker_index(w, row->broker_ids[i])] = r + 1;
        }
    }
    for (int32_t r = 0; r < count; r++)
        for (int32_t i = 0; i < rows[r].broker_count; i++)
            w->delta[ka_work_broker_index(w, rows[r].broker_ids[i])]++;
    rc = 0;
out:
    memset(w->shares, 0, w->broker_count * sizeof(*w->shares));
    free(seen);
    return rc;
}

static void undo(const ka_decision_context_t *ctx, ka_verdict_t *verdicts, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        if (verdicts[i].reservation_id != 0)
            ka_reservations_release(ctx->ledger, verdicts[i].reservation_id);
        ka_verdict_release(&verdicts[i]);
        verdicts[i].reservation_id = 0;
    }
}

/* Sets up a call: verdicts zeroed, working state built, duplicates marked. */
static int begin(struct ka_work *w, const ka_decision_context_t *ctx, ka_verdict_t *verdicts,
                 struct item_key *keys, size_t count, bool **dup)
{
    memset(verdicts, 0, count * sizeof(*verdicts));
    *dup = calloc(count + 1, sizeof(**dup));
    if (*dup == NULL || ka_work_init(w, ctx) < 0) {
        free(*dup);
        return KA_ENOMEM;
    }
    if (keys != NULL)
        mark_duplicates(keys, count, *dup);
    return 0;
}

static int finish(struct ka_work *w, ka_verdict_t *verdicts, size_t count, bool *dup,
                  struct item_key *keys, int rc)
{
    if (rc < 0)
        undo(w->ctx, verdicts, count);
    ka_work_free(w);
    free(dup);
    free(keys);
    return rc;
}

/* A rejected create of a topic the view still lists says why it was counted in full and, on a
 * view taken before the request, asks to be judged again on one taken after it. */
static int created_again(const struct ka_work *w, ka_verdict_t *v,
                         const ka_cluster_topic_t *existing, int rc)
{
    char *message;

    if (rc < 0 || existing == NULL || v->kind != KA_VERDICT_REJECT || v->message == NULL)
        return rc;
    v->wants_later_view = !w->ctx->view_follows_request;
    message = ka_message_format("%s kadmit's cluster view still lists a topic of this name; it "
                                "may have been deleted a moment ago, so the create is counted "
                                "as a new topic.",
                                v->message);
    if (message == NULL)
        return KA_ENOMEM;
    free(v->message);
    v->message = message;
    return rc;
}

static int create_topic(struct ka_work *w, const ka_create_topic_t *t, bool dup, ka_verdict_t *v)
{
    const ka_broker_defaults_t *defaults = ka_cluster_broker_defaults(w->ctx->view);
    ka_plan_t plan = {.kind = KA_RESERVATION_PARTITIONS,
                      .topic = t->name,
                      .validate_only = t->validate_only,
                      .creates_topic = true,
                      .advice = ADVICE_CREATE};
    ka_rules_item_t item = {.api = KA_RULES_CREATE,
                            .topic = t->name,
                            .configs = t->configs,
                            .config_count = t->config_count};
    int32_t partitions = t->num_partitions, replication = t->replication_factor, rf;
    const ka_cluster_topic_t *existing;
    int rc;

    if (!ka_topic_name_valid(t->name))
        return ka_work_defer(v, "the topic name is not valid");
    if (dup)
        return ka_work_defer(v, "the topic appears more than once in the request");
    /* A topic the view lists may have been deleted a moment ago (through any sidecar, or
     * earlier on this connection): creating it again is judged as a new topic, counted in
     * full beside the one the view still shows. If it does exist, the broker refuses the
     * item (TOPIC_ALREADY_EXISTS) and the reservation is released. */
    if ((existing = ka_cluster_find_topic(w->ctx->view, t->name)) != NULL)
        ka_cluster_topic_id(existing, plan.replaces_topic_id);
    if (t->assignment_count > 0 && t->assignments != NULL) {
        if (t->num_partitions != -1 || t->replication_factor != -1)
            return ka_work_defer(v,
                                 "assignments were given with num_partitions %d and "
                                 "replication_factor %d; Kafka requires -1 for both",
                                 t->num_partitions, t->replication_factor);
        rc = take_rows(w, v, t->assignments, t->assignment_count, true, 0, &rf);
        if (rc != 0)
            return rc < 0 ? rc : 0;
        item.partitions = item.added = t->assignment_count;
        item.replication = rf;
        if ((rc = ka_work_judge_rules(w, &item, v)) != 0) {
            ka_work_clear_delta(w);
            return rc < 0 ? rc : 0;
        }
        plan.partition_count = plan.new_partitions = t->assignment_count;
        return created_again(w, v, existing, ka_work_decide_exact(w, v, &plan));
    }
    item.partitions_default = partitions == -1;
    item.replication_default = replication == -1;
    if (partitions == -1)
        partitions = defaults->num_partitions;
    if (replication == -1)
        replication = defaults->default_replication_factor;
    if (partitions <= 0)
        return ka_work_defer(v, "num_partitions %d is not valid", partitions);
    if (replication <= 0)
        return ka_work_defer(v, "replication_factor %d is not valid", replication);
    if ((rc = replication_beyond_brokers(w, v, replication)) != 0)
        return rc < 0 ? rc : 0;
    item.partitions = item.added = partitions;
    item.replication = replication;
    if ((rc = ka_work_judge_rules(w, &item, v)) != 0)
        return rc < 0 ? rc : 0;
    plan.partition_count = plan.new_partitions = partitions;
    return created_again(w, v, existing,
                         ka_work_decide_auto(w, v, &plan, partitions, replication, true));
}

/* Judges one item of a request, found by its index in the request's array. */
typedef int (*judge_item_fn)(struct ka_work *w, const void *items, size_t i, bool dup,
                             ka_verdict_t *v);

/* Judges items[0..count) in request order (keys: one per item, taken over). */
static int judge_each(const ka_decision_context_t *ctx, ka_verdict_t *verdicts,
                      struct item_key *keys, size_t count, judge_item_fn judge, const void *items)
{
    struct ka_work w;
    bool *dup = NULL;
    int rc = 0;

    if (begin(&w, ctx, verdicts, keys, count, &dup) < 0) {
        free(keys);
        return KA_ENOMEM;
    }
    for (size_t i = 0; i < count && rc == 0; i++) {
        if (w.stale)
            rc = ka_work_stale(&w, &verdicts[i]);
        else
            rc = judge(&w, items, i, dup[i], &verdicts[i]);
    }
    return finish(&w, verdicts, count, dup, keys, rc);
}

static int create_topic_at(struct ka_work *w, const void *items, size_t i, bool dup,
                           ka_verdict_t *v)
{
    return create_topic(w, (const ka_create_topic_t *)items + i, dup, v);
}

int ka_engine_create_topics(const ka_decision_context_t *ctx, const ka_create_topic_t *topics,
                            size_t count, ka_verdict_t *verdicts)
{
    struct item_key *keys = malloc((count + 1) * sizeof(*keys));

    if (keys == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < count; i++)
        keys[i] = (struct item_key){topics[i].name, 0, i};
    return judge_each(ctx, verdicts, keys, count, create_topic_at, topics);
}

/* The topic's replication factor: the replica count of its first known partition. */
static int32_t topic_replication(const ka_cluster_topic_t *topic)
{
    int32_t count = 0, n = ka_cluster_topic_partition_count(topic);

    for (int32_t p = 0; p < n && count == 0; p++)
        ka_cluster_topic_replicas(topic, p, &count);
    return count;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The index of id in the sorted, distinct ids (it is there). */
static size_t index_of(const int32_t *ids, size_t n, int32_t id)
{
    return (size_t)((const int32_t *)bsearch(&id, ids, n, sizeof(*ids), cmp_i32) - ids);
}

/*
 * CreatePartitions continues the topic's leadership: each new partition's
 * leader becomes the broker of its row that leads the fewest of the topic's
 * partitions so far (the existing ones, then the new ones in order; a tie
 * keeps the placer's choice), so leaders stay spread as the topic grows.
 * Which replica of a row leads changes no broker's count, so the verdict's
 * projection stands. Cost: O((existing + new replicas) log brokers).
 */
static int continue_leaders(const ka_cluster_topic_t *topic, int32_t existing, ka_verdict_t *v)
{
    size_t r = (size_t)v->assignment_replication, cells = (size_t)v->assignment_partitions * r;
    int32_t *ids = malloc((cells ? cells : 1) * sizeof(*ids));
    int64_t *leads;
    size_t n = 0;

    if (ids == NULL)
        return KA_ENOMEM;
    memcpy(ids, v->assignment, cells * sizeof(*ids));
    qsort(ids, cells, sizeof(*ids), cmp_i32);
    for (size_t i = 0; i < cells; i++)
        if (n == 0 || ids[n - 1] != ids[i])
            ids[n++] = ids[i];
    if ((leads = calloc(n ? n : 1, sizeof(*leads))) == NULL) {
        free(ids);
        return KA_ENOMEM;
    }
    for (int32_t p = 0; p < existing; p++) {
        int32_t count = 0;
        const int32_t *rep = ka_cluster_topic_replicas(topic, p, &count);
        const int32_t *at = count > 0 ? bsearch(&rep[0], ids, n, sizeof(*ids), cmp_i32) : NULL;
        if (at != NULL)
            leads[at - ids]++;
    }
    for (int32_t p = 0; p < v->assignment_partitions; p++) {
        int32_t *row = v->assignment + (size_t)p * r;
        size_t best = 0;
        for (size_t k = 1; k < r; k++)
            if (leads[index_of(ids, n, row[k])] < leads[index_of(ids, n, row[best])])
                best = k;
        int32_t leader = row[best];
        memmove(row + 1, row, best * sizeof(*row)); /* the others keep their order */
        row[0] = leader;
        leads[index_of(ids, n, leader)]++;
    }
    free(leads);
    free(ids);
    return 0;
}

static int create_partitions(struct ka_work *w, const ka_create_partitions_t *t, bool dup,
                             ka_verdict_t *v)
{
    const ka_cluster_topic_t *topic = ka_cluster_find_topic(w->ctx->view, t->name);
    ka_plan_t plan = {.kind = KA_RESERVATION_PARTITIONS,
                      .topic = t->name,
                      .partition_count = t->count,
                      .validate_only = t->validate_only,
                      .advice = ADVICE_CREATE};
    ka_rules_item_t item = {.api = KA_RULES_GROW, .topic = t->name};
    int32_t existing, added, replication, rf;
    int rc;

    if (dup)
        return ka_work_defer(v, "the topic appears more than once in the request");
    if (topic == NULL)
        return unknown_topic(w, v, t->name, -1);
    existing = ka_cluster_topic_partition_count(topic);
    replication = topic_replication(topic);
    /* A topic's partitions never shrink, so the broker refuses a count at or below the
     * view's unless the topic it holds is another one of that name: created again a moment
     * ago, which kadmit reserved until a view shows it. So: on a view taken after the
     * request, with nothing of the topic reserved, the refusal is the broker's. */
    if (t->count <= existing || replication <= 0) {
        if (!w->ctx->view_follows_request || ka_reservations_has_topic(w->ctx->ledger, t->name))
            return ka_work_unknown(
                w, v, KA_REASON_UNKNOWN_TOPIC, ka_policy_reject_error_code(w->ctx->policy),
                "Cannot decide on this request: kadmit's cluster view shows "
                "topic %.*s with %d partitions, and a creation or growth of "
                "it is still in flight or the view predates the request. "
                "Retry shortly.",
                t->name.len > 0 ? (int)t->name.len : 0, (const char *)t->name.ptr, existing);
        if (replication <= 0)
            return ka_work_defer(v, "the topic's replication factor is not known");
        return ka_work_defer(v, "the topic already has %d partitions, not fewer than %d", existing,
                             t->count);
    }
    added = t->count - existing;
    plan.new_partitions = added;
    item.partitions = t->count;
    item.added = added;
    item.replication = replication;
    if (t->assignments != NULL) {
        /* The view's count may lag a growth admitted a moment ago: a number of rows other
         * than the view's gap is judged as given, as the partitions the broker would add. */
        if (t->assignment_count != added) {
            if (t->assignment_count <= 0)
                return ka_work_defer(v, "no assignment was given for %d new partitions", added);
            plan.new_partitions = item.added = added = t->assignment_count;
        }
        rc = take_rows(w, v, t->assignments, t->assignment_count, false, replication, &rf);
        if (rc != 0)
            return rc < 0 ? rc : 0;
        if ((rc = ka_work_judge_rules(w, &item, v)) != 0) {
            ka_work_clear_delta(w);
            return rc < 0 ? rc : 0;
        }
        return ka_work_decide_exact(w, v, &plan);
    }
    if ((rc = replication_beyond_brokers(w, v, replication)) != 0)
        return rc < 0 ? rc : 0;
    if ((rc = ka_work_judge_rules(w, &item, v)) != 0)
        return rc < 0 ? rc : 0;
    rc = ka_work_decide_auto(w, v, &plan, added, replication, true);
    if (rc == 0 && v->kind == KA_VERDICT_ADMIT_WITH_ASSIGNMENT)
        rc = continue_leaders(topic, existing, v);
    return rc;
}

static int create_partitions_at(struct ka_work *w, const void *items, size_t i, bool dup,
                                ka_verdict_t *v)
{
    return create_partitions(w, (const ka_create_partitions_t *)items + i, dup, v);
}

int ka_engine_create_partitions(const ka_decision_context_t *ctx,
                                const ka_create_partitions_t *topics, size_t count,
                                ka_verdict_t *verdicts)
{
    struct item_key *keys = malloc((count + 1) * sizeof(*keys));

    if (keys == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < count; i++)
        keys[i] = (struct item_key){topics[i].name, 0, i};
    return judge_each(ctx, verdicts, keys, count, create_partitions_at, topics);
}

static int reassign(struct ka_work *w, const ka_reassignment_t *r, bool dup, ka_verdict_t *v)
{
    const ka_cluster_topic_t *topic = ka_cluster_find_topic(w->ctx->view, r->topic);
    ka_plan_t plan = {.kind = KA_RESERVATION_REPLICAS,
                      .topic = r->topic,
                      .partition = r->partition,
                      .targets = r->replicas,
                      .target_count = r->replica_count,
                      .advice = ADVICE_REASSIGN};
    const int32_t *current;
    int32_t current_count;
    int rc;

    /* Kafka's controller applies every entry of a partition named twice, each against the
     * state before the request, so each is judged and counted in full. */
    (void)dup;
    if (topic == NULL)
        return unknown_topic(w, v, r->topic, -1);
    current = ka_cluster_topic_replicas(topic, r->partition, &current_count);
    if (current == NULL)
        return unknown_topic(w, v, r->topic, r->partition);
    {
        ka_replica_assignment_t row = {r->partition, r->replicas, r->replica_count};
        int32_t rf;

        rc = take_rows(w, v, &row, 1, false, r->replica_count > 0 ? r->replica_count : 1, &rf);
        if (rc != 0)
            return rc < 0 ? rc : 0;
    }
    /* Projected = current - removed + added: only the added replicas need
     * headroom; removed ones are credited when a view no longer shows them. */
    for (int32_t i = 0; i < current_count; i++) {
        long at = ka_work_broker_index(w, current[i]);

        for (int32_t j = 0; j < r->replica_count && at >= 0; j++)
            if (r->replicas[j] == current[i])
                w->delta[at]--;
    }
    /* A rule bounds the replica count only when the reassignment changes it. */
    if (r->replica_count != current_count) {
        ka_rules_item_t item = {.api = KA_RULES_REASSIGN,
                                .topic = r->topic,
                                .replication = r->replica_count,
                                .partition = r->partition,
                                .current_replication = current_count};

        if ((rc = ka_work_judge_rules(w, &item, v)) != 0) {
            ka_work_clear_delta(w);
            return rc < 0 ? rc : 0;
        }
    }
    return ka_work_decide_exact(w, v, &plan);
}

int ka_engine_alter_reassignments(const ka_decision_context_t *ctx,
                                  const ka_reassignment_t *partitions, size_t count,
                                  ka_verdict_t *verdicts)
{
    struct ka_work w;
    struct item_key *keys = malloc((count + 1) * sizeof(*keys));
    bool *dup = NULL;
    int rc = 0;

    if (keys == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < count; i++)
        keys[i] = (struct item_key){partitions[i].topic, partitions[i].partition, i};
    if (begin(&w, ctx, verdicts, keys, count, &dup) < 0) {
        free(keys);
        return KA_ENOMEM;
    }
    for (size_t i = 0; i < count && rc == 0; i++) {
        if (partitions[i].replicas == NULL)
            verdicts[i].kind = KA_VERDICT_ADMIT; /* a cancel never adds a replica */
        else if (w.stale)
            rc = ka_work_stale(&w, &verdicts[i]);
        else
            rc = reassign(&w, &partitions[i], dup[i], &verdicts[i]);
    }
    return finish(&w, verdicts, count, dup, keys, rc);
}

/* A topic the broker creates and places itself (auto-creation, a streams
 * group's internal topics): judged against the bound. known: the view lists it, or its
 * creation is in flight, when the call began. */
static int broker_create(struct ka_work *w, ka_slice_t name, int32_t partitions,
                         int32_t replication, bool defaults, bool known, ka_verdict_t *v)
{
    ka_plan_t plan = {.kind = KA_RESERVATION_PARTITIONS,
                      .topic = name,
                      .creates_topic = true,
                      .advice = ADVICE_CREATE};
    ka_rules_item_t item = {.api = KA_RULES_BROKER_CREATE,
                            .topic = name,
                            .partitions = partitions,
                            .replication = replication,
                            .partitions_default = defaults,
                            .replication_default = defaults,
                            .added = partitions};
    int rc;

    v->kind = KA_VERDICT_ADMIT;
    /* Nothing will be created: a bad name, or counts the broker cannot satisfy. */
    if (!ka_topic_name_valid(name) || partitions <= 0 || replication <= 0 ||
        (size_t)replication > w->broker_count || w->unfenced_count == 0)
        return 0;
    /* A topic the view lists, or whose creation is in flight (clients repeat Metadata while
     * they wait), is created only if it was deleted a moment ago. A view taken after the
     * request that still lists it settles that. Before one, it is counted within the call,
     * never reserved, and when it does not fit the request waits for such a view. */
    if (known && w->ctx->view_follows_request)
        return 0;
    plan.validate_only = known;
    if ((rc = ka_work_judge_rules(w, &item, v)) != 0)
        return rc < 0 ? rc : 0;
    plan.partition_count = plan.new_partitions = partitions;
    /* The broker places these topics itself: always the bound. */
    rc = ka_work_decide_auto(w, v, &plan, partitions, replication, false);
    if (rc < 0 || !known || v->kind != KA_VERDICT_REJECT)
        return rc;
    ka_verdict_release(v);
    memset(v, 0, sizeof(*v));
    rc = ka_work_unknown(w, v, KA_REASON_UNKNOWN_TOPIC, ka_policy_reject_error_code(w->ctx->policy),
                         "Cannot decide on auto-creating topic %.*s: kadmit's cluster view lists "
                         "it, yet it may have been deleted a moment ago, and created again it "
                         "would not fit. Retry shortly.",
                         name.len > 0 ? (int)name.len : 0, (const char *)name.ptr);
    return rc < 0 ? rc : 0;
}

/* Auto-creation names topics (broker defaults); other callers give counts. */
static int broker_creates(const ka_decision_context_t *ctx, const ka_slice_t *names,
                          const ka_create_topic_t *topics, size_t count, bool allowed,
                          ka_verdict_t *verdicts)
{
    struct ka_work w;
    bool *dup = NULL;
    int rc = 0;

    if (begin(&w, ctx, verdicts, NULL, count, &dup) < 0)
        return KA_ENOMEM;
    /* New topics first, then those the view lists or has in flight (before this call), which
     * only count if they were deleted a moment ago: that doubt never takes the headroom of a
     * real creation. dup (one flag per item) holds which are known. */
    for (size_t i = 0; i < count; i++) {
        ka_slice_t name = names != NULL ? names[i] : topics[i].name;

        dup[i] = (ctx->view != NULL && ka_cluster_find_topic(ctx->view, name) != NULL) ||
                 ka_reservations_has_topic(ctx->ledger, name);
    }
    for (size_t k = 0; k < 2 * count && rc == 0; k++) {
        size_t i = k % count;
        ka_slice_t name = names != NULL ? names[i] : topics[i].name;
        const ka_broker_defaults_t *d = ctx->view ? ka_cluster_broker_defaults(ctx->view) : NULL;
        int32_t np = topics != NULL ? topics[i].num_partitions : -1;
        int32_t rf = topics != NULL ? topics[i].replication_factor : -1;

        if (dup[i] != (k >= count))
            continue;
        if (!allowed)
            verdicts[i].kind = KA_VERDICT_ADMIT;
        else if (w.stale)
            rc = ka_work_stale(&w, &verdicts[i]);
        else
            rc = broker_create(&w, name, np > 0 ? np : d->num_partitions,
                               rf > 0 ? rf : d->default_replication_factor, np <= 0 && rf <= 0,
                               dup[i], &verdicts[i]);
    }
    return finish(&w, verdicts, count, dup, NULL, rc);
}

int ka_engine_auto_create(const ka_decision_context_t *ctx, const ka_slice_t *topics, size_t count,
                          bool allow_auto_topic_creation, ka_verdict_t *verdicts)
{
    bool allowed =
        allow_auto_topic_creation &&
        (ctx->view == NULL || ka_cluster_broker_defaults(ctx->view)->auto_create_topics_enable);

    return broker_creates(ctx, topics, NULL, count, allowed, verdicts);
}

int ka_engine_broker_creates(const ka_decision_context_t *ctx, const ka_create_topic_t *topics,
                             size_t count, ka_verdict_t *verdicts)
{
    return broker_creates(ctx, NULL, topics, count, true, verdicts);
}
