/* SPDX-License-Identifier: Apache-2.0 */
#include "deviceplugin/pool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"
#include "util/names.h"
#include "util/strv.h"

void dp_device_done(struct dp_device *d)
{
        strv_free_n(d->char_devices, d->n_char_devices);
        d->char_devices = NULL;
        d->n_char_devices = 0;
}

void dp_pool_done(struct dp_pool *p)
{
        for (size_t i = 0; i < p->n_devices; i++)
                dp_device_done(&p->devices[i]);
        free(p->devices);
        for (size_t i = 0; i < p->n_cards; i++)
                dp_device_done(&p->cards[i]);
        free(p->cards);
        strv_free_n(p->shared_char_devices, p->n_shared_char_devices);
        *p = (struct dp_pool){ 0 };
}

void dp_pool_set_done(struct dp_pool_set *s)
{
        for (size_t i = 0; i < s->n_pools; i++)
                dp_pool_done(&s->pools[i]);
        free(s->pools);
        *s = (struct dp_pool_set){ 0 };
}

static int strv_copy(char *const *src, size_t n, char ***ret)
{
        *ret = NULL;
        if (n == 0)
                return 0;
        char **l = calloc(n, sizeof(*l));
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (!(l[i] = strdup(src[i]))) {
                        strv_free_n(l, i);
                        return -ENOMEM;
                }
        *ret = l;
        return 0;
}

/* Copies n devices into *dst (NULL when n is 0); *n_dst counts those copied so far, so that
 * dp_pool_done() frees a partial copy. */
static int copy_devices(const struct dp_device *src, size_t n, struct dp_device **dst,
                        size_t *n_dst)
{
        *dst = NULL;
        *n_dst = 0;
        if (n == 0)
                return 0;
        if (!(*dst = calloc(n, sizeof(**dst))))
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                (*dst)[i] = src[i];
                (*dst)[i].char_devices = NULL;
                (*dst)[i].n_char_devices = 0;
                *n_dst = i + 1;
                int r =
                    strv_copy(src[i].char_devices, src[i].n_char_devices, &(*dst)[i].char_devices);
                if (r < 0)
                        return r;
                (*dst)[i].n_char_devices = src[i].n_char_devices;
        }
        return 0;
}

int dp_pool_copy(const struct dp_pool *src, struct dp_pool *ret)
{
        struct dp_pool p = *src;
        p.devices = p.cards = NULL;
        p.n_devices = p.cap_devices = p.n_cards = p.cap_cards = 0;
        p.shared_char_devices = NULL;
        p.n_shared_char_devices = 0;
        char **shared = NULL;
        int r = strv_copy(src->shared_char_devices, src->n_shared_char_devices, &shared);
        if (r < 0)
                return r;
        p.shared_char_devices = shared;
        p.n_shared_char_devices = src->n_shared_char_devices;
        r = copy_devices(src->devices, src->n_devices, &p.devices, &p.n_devices);
        if (r >= 0)
                r = copy_devices(src->cards, src->n_cards, &p.cards, &p.n_cards);
        if (r < 0) {
                dp_pool_done(&p);
                return r;
        }
        p.cap_devices = p.n_devices;
        p.cap_cards = p.n_cards;
        *ret = p;
        return 0;
}

int dp_pool_set_take(struct dp_pool_set *dst, struct dp_pool_set *src)
{
        for (size_t i = 0; i < src->n_pools; i++)
                if (dp_pool_set_find(dst, src->pools[i].resource))
                        return -EEXIST;
        if (src->n_pools == 0)
                return 0;
        if (GROW_ARRAY(dst->pools, dst->cap_pools, dst->n_pools + src->n_pools) < 0)
                return -ENOMEM;
        memcpy(dst->pools + dst->n_pools, src->pools, src->n_pools * sizeof(*src->pools));
        dst->n_pools += src->n_pools;
        free(src->pools);
        *src = (struct dp_pool_set){ 0 };
        return 0;
}

int dp_pool_set_split(struct dp_pool_set *s, char *const *names, size_t n_names,
                      struct dp_pool_set *ret)
{
        size_t moving = 0;
        for (size_t i = 0; i < s->n_pools; i++)
                moving += strv_contains(names, n_names, s->pools[i].name);
        if (moving == 0)
                return 0;
        if (GROW_ARRAY(ret->pools, ret->cap_pools, ret->n_pools + moving) < 0)
                return -ENOMEM;
        size_t kept = 0;
        for (size_t i = 0; i < s->n_pools; i++) {
                if (strv_contains(names, n_names, s->pools[i].name))
                        ret->pools[ret->n_pools++] = s->pools[i];
                else
                        s->pools[kept++] = s->pools[i];
        }
        s->n_pools = kept;
        return 0;
}

int dp_pool_set_append_copy(struct dp_pool_set *dst, const struct dp_pool_set *src)
{
        if (GROW_ARRAY(dst->pools, dst->cap_pools, dst->n_pools + src->n_pools) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < src->n_pools; i++) {
                int r = dp_pool_copy(&src->pools[i], &dst->pools[dst->n_pools]);
                if (r < 0)
                        return r;
                dst->n_pools++;
        }
        return 0;
}

const struct dp_pool *dp_pool_set_find(const struct dp_pool_set *s, const char *resource)
{
        for (size_t i = 0; i < s->n_pools; i++)
                if (strcmp(s->pools[i].resource, resource) == 0)
                        return &s->pools[i];
        return NULL;
}

const struct dp_device *dp_pool_find_device(const struct dp_pool *p, const char *id)
{
        for (size_t i = 0; i < p->n_devices; i++)
                if (strcmp(p->devices[i].id, id) == 0)
                        return &p->devices[i];
        return NULL;
}

/* A DNS-subdomain-ish prefix: lower-case letters, digits, '-', '.'; it becomes part of the
 * socket file name, so no '/' and no leading '.'. */
static bool prefix_is_valid(const char *prefix)
{
        size_t n = strlen(prefix);
        if (n == 0 || n > DP_PREFIX_MAX || prefix[0] == '.' || prefix[0] == '-')
                return false;
        for (const char *c = prefix; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-' ||
                      *c == '.'))
                        return false;
        return strstr(prefix, "..") == NULL;
}

/* resourceName as the device plugins accept it: ^[a-zA-Z0-9_-]+$ (underscores included). */
static bool pool_name_is_valid(const char *name)
{
        size_t n = strlen(name);
        if (n == 0 || n >= RESOURCE_NAME_MAX)
                return false;
        for (const char *c = name; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                      (*c >= '0' && *c <= '9') || *c == '_' || *c == '-'))
                        return false;
        return true;
}

int dp_pool_set_names(struct dp_pool *p, const char *prefix, const char *name)
{
        if (!prefix_is_valid(prefix) || !pool_name_is_valid(name))
                return -EINVAL;
        snprintf(p->prefix, sizeof(p->prefix), "%s", prefix);
        snprintf(p->name, sizeof(p->name), "%s", name);
        snprintf(p->resource, sizeof(p->resource), "%s/%s", prefix, name);
        return 0;
}
