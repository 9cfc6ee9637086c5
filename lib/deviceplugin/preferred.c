/* SPDX-License-Identifier: Apache-2.0 */
#include "deviceplugin/preferred.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct candidate {
        const char *id;
        const struct dp_device *dev; /* NULL: unknown to the pool */
        bool taken;
};

struct picker {
        const char **out;
        size_t n_out, size;
};

static bool picked(const struct picker *p, const char *id)
{
        for (size_t i = 0; i < p->n_out; i++)
                if (strcmp(p->out[i], id) == 0)
                        return true;
        return false;
}

static void pick(struct picker *p, const char *id)
{
        if (p->n_out < p->size && !picked(p, id))
                p->out[p->n_out++] = id;
}

static int numa_of(const struct candidate *c)
{
        return c->dev ? c->dev->numa_node : -1;
}

static size_t chosen_on_pf(const struct picker *p, const struct dp_pool *pool, const char *pf)
{
        size_t n = 0;
        for (size_t i = 0; i < p->n_out; i++) {
                const struct dp_device *d = dp_pool_find_device(pool, p->out[i]);
                if (d && strcmp(d->pf, pf) == 0)
                        n++;
        }
        return n;
}

/* One pick among healthy untaken candidates on `node` (on any node when any_node):
 * the PF with the fewest chosen devices, then the lowest PF, then the lowest ID. */
static struct candidate *best_on_node(struct candidate *cs, size_t n, const struct picker *p,
                                      const struct dp_pool *pool, int node, bool any_node)
{
        struct candidate *best = NULL;
        size_t best_load = 0;
        for (size_t i = 0; i < n; i++) {
                struct candidate *c = &cs[i];
                if (c->taken || !c->dev || !c->dev->healthy || picked(p, c->id))
                        continue;
                if (!any_node && numa_of(c) != node)
                        continue;
                size_t load = chosen_on_pf(p, pool, c->dev->pf);
                int pfcmp = best ? strcmp(c->dev->pf, best->dev->pf) : 0;
                if (!best || load < best_load || (load == best_load && pfcmp < 0) ||
                    (load == best_load && pfcmp == 0 && strcmp(c->id, best->id) < 0)) {
                        best = c;
                        best_load = load;
                }
        }
        return best;
}

static int preferred_node(const struct candidate *cs, size_t n, const struct picker *p,
                          const struct dp_pool *pool)
{
        /* Count per node: must_include devices weigh more than any number of candidates. */
        int best = -1;
        size_t best_score = 0;
        for (size_t i = 0; i < n; i++) {
                int node = numa_of(&cs[i]);
                if (node < 0)
                        continue;
                size_t score = 0;
                for (size_t j = 0; j < p->n_out; j++) {
                        const struct dp_device *d = dp_pool_find_device(pool, p->out[j]);
                        if (d && d->numa_node == node)
                                score += n + 1;
                }
                for (size_t j = 0; j < n; j++)
                        if (numa_of(&cs[j]) == node && cs[j].dev->healthy && !cs[j].taken)
                                score++;
                if (score > best_score || (score == best_score && node < best)) {
                        best = node;
                        best_score = score;
                }
        }
        return best;
}

int dp_preferred_allocation(const struct dp_pool *pool, char *const *available, size_t n_available,
                            char *const *must, size_t n_must, size_t size, const char ***ret,
                            size_t *ret_n)
{
        /* The answer never holds more IDs than were offered: a huge allocation_size from the
         * kubelet must not size the buffer. */
        if (size > n_available + n_must)
                size = n_available + n_must;
        struct picker p = { .out = calloc(size ?: 1, sizeof(char *)), .size = size };
        struct candidate *cs = calloc(n_available ?: 1, sizeof(*cs));
        if (!p.out || !cs) {
                free(p.out);
                free(cs);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n_must; i++)
                pick(&p, must[i]);
        for (size_t i = 0; i < n_available; i++)
                cs[i] = (struct candidate){ .id = available[i],
                                            .dev = dp_pool_find_device(pool, available[i]) };

        if (pool->kind == DP_POOL_SRIOV) {
                int node = preferred_node(cs, n_available, &p, pool);
                if (node >= 0)
                        for (struct candidate *c;
                             p.n_out < size &&
                             (c = best_on_node(cs, n_available, &p, pool, node, false));)
                                c->taken = true, pick(&p, c->id);
                for (struct candidate *c;
                     p.n_out < size && (c = best_on_node(cs, n_available, &p, pool, 0, true));)
                        c->taken = true, pick(&p, c->id);
        }
        /* Whatever is left (RDMA shared IDs, unknown or unhealthy IDs), in the given order. */
        for (size_t i = 0; i < n_available && p.n_out < size; i++)
                if (cs[i].dev && cs[i].dev->healthy)
                        pick(&p, cs[i].id);
        for (size_t i = 0; i < n_available && p.n_out < size; i++)
                pick(&p, cs[i].id);
        free(cs);
        *ret = p.out;
        *ret_n = p.n_out;
        return 0;
}
