/* SPDX-License-Identifier: Apache-2.0 */
#include "kube/cache.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/json-split.h"
#include "util/macro.h"

struct kube_cache {
        json_t *objects;
        struct kube_cache_callbacks cb;
        bool metadata_only;
};

int kube_cache_new(const struct kube_cache_callbacks *callbacks, struct kube_cache **ret)
{
        struct kube_cache *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->objects = json_object();
        if (!c->objects) {
                free(c);
                return -ENOMEM;
        }
        if (callbacks)
                c->cb = *callbacks;
        *ret = c;
        return 0;
}

void kube_cache_keep_metadata_only(struct kube_cache *c)
{
        c->metadata_only = true;
}

/* apiVersion, kind and metadata less managedFields and annotations (the rest shared with
 * object, not copied: the decoded event is dropped right after). Annotations can be large (our
 * own NodeState carries its extra status in one) and no metadata-only consumer reads them;
 * only the mark of an undecodable object stays. NULL when out of memory. */
static json_t *metadata_of(json_t *object)
{
        json_auto_t *slim = json_object();
        json_auto_t *meta = json_copy(json_object_get(object, "metadata"));
        if (!slim || !meta)
                return NULL;
        json_object_del(meta, "managedFields");
        json_t *undecodable =
            json_object_get(json_object_get(meta, "annotations"), KUBE_UNDECODABLE_ANNOTATION);
        if (undecodable) {
                json_t *keep = json_pack("{s:O}", KUBE_UNDECODABLE_ANNOTATION, undecodable);
                if (!keep || json_object_set_new(meta, "annotations", keep) < 0)
                        return NULL;
        } else
                json_object_del(meta, "annotations");
        if (json_object_set(slim, "metadata", meta) < 0)
                return NULL;
        const char *const keep[] = { "apiVersion", "kind" };
        for (size_t i = 0; i < ELEMENTSOF(keep); i++) {
                json_t *v = json_object_get(object, keep[i]);
                if (v && json_object_set(slim, keep[i], v) < 0)
                        return NULL;
        }
        return TAKE_PTR(slim);
}

struct kube_cache *kube_cache_free(struct kube_cache *c)
{
        if (!c)
                return NULL;
        json_decref(c->objects);
        free(c);
        return NULL;
}

static const char *meta_string(json_t *object, const char *field)
{
        return json_string_value(json_object_get(json_object_get(object, "metadata"), field));
}

static int object_key(json_t *object, char **ret)
{
        const char *name = meta_string(object, "name");
        const char *ns = meta_string(object, "namespace");
        if (!name || !*name)
                return -EINVAL;
        int n = ns && *ns ? asprintf(ret, "%s/%s", ns, name) : asprintf(ret, "%s", name);
        return n < 0 ? -ENOMEM : 0;
}

static bool same_version(json_t *a, json_t *b)
{
        const char *ra = meta_string(a, "resourceVersion");
        const char *rb = meta_string(b, "resourceVersion");
        if (ra && rb)
                return strcmp(ra, rb) == 0;
        return json_equal(a, b);
}

static int upsert(struct kube_cache *c, const char *key, json_t *object)
{
        json_t *cur = json_object_get(c->objects, key);
        if (cur && same_version(cur, object))
                return 0;
        json_auto_t *old = json_incref(cur); /* keep it alive for the callback */
        if (json_object_set(c->objects, key, object) < 0)
                return -ENOMEM;
        if (old && c->cb.updated)
                c->cb.updated(old, object, c->cb.userdata);
        else if (!old && c->cb.added)
                c->cb.added(object, c->cb.userdata);
        if (c->metadata_only) {
                /* A callback may have changed the entry (deleted or replaced it): only the
                 * object just delivered is slimmed. */
                if (json_object_get(c->objects, key) != object)
                        return 0;
                json_t *slim = metadata_of(object);
                if (!slim || json_object_set_new(c->objects, key, slim) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static void remove_key(struct kube_cache *c, const char *key, json_t *last_state)
{
        json_t *old = json_object_get(c->objects, key);
        if (!old)
                return;
        json_incref(old);
        json_object_del(c->objects, key);
        if (c->cb.deleted)
                c->cb.deleted(last_state ? last_state : old, c->cb.userdata);
        json_decref(old);
}

int kube_cache_apply(struct kube_cache *c, enum kube_cache_op op, json_t *object)
{
        _cleanup_free_ char *key = NULL;
        int k = object_key(object, &key);
        if (k < 0)
                return k;
        if (op == KUBE_CACHE_DELETE) {
                remove_key(c, key, object);
                return 0;
        }
        return upsert(c, key, object);
}

int kube_cache_replace(struct kube_cache *c, json_t *items)
{
        if (!json_is_array(items))
                return -EINVAL;
        json_auto_t *fresh = json_object();
        if (!fresh)
                return -ENOMEM;
        size_t i;
        json_t *item;
        json_array_foreach(items, i, item)
        {
                _cleanup_free_ char *key = NULL;
                if (object_key(item, &key) < 0)
                        continue; /* a nameless item cannot be tracked; the caller logs */
                json_object_set(fresh, key, item);
        }

        /* Deletions first, so a consumer never sees two objects claiming the same thing. */
        const char *key;
        json_t *old;
        void *tmp;
        json_object_foreach_safe(c->objects, tmp, key, old) if (!json_object_get(fresh, key))
            remove_key(c, key, NULL);

        json_t *object;
        int r = 0;
        json_object_foreach(fresh, key, object)
        {
                int k = upsert(c, key, object);
                if (k < 0)
                        r = k;
        }
        return r;
}

json_t *kube_cache_get(struct kube_cache *c, const char *namespace_, const char *name)
{
        _cleanup_free_ char *key = NULL;
        int n = namespace_ && *namespace_ ? asprintf(&key, "%s/%s", namespace_, name)
                                          : asprintf(&key, "%s", name);
        if (n < 0)
                return NULL;
        return json_object_get(c->objects, key);
}

size_t kube_cache_size(const struct kube_cache *c)
{
        return json_object_size(c->objects);
}

json_t *kube_cache_objects(struct kube_cache *c)
{
        return c->objects;
}
