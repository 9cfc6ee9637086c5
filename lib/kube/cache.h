/* SPDX-License-Identifier: Apache-2.0 */
/* The local copy of one kind of object, keyed "namespace/name" ("name" when cluster-scoped).
 *
 * Changes come from watch events (kube_cache_apply) or a full list (kube_cache_replace, which
 * reconciles: objects missing from the list are delivered as deletions, changed ones as
 * updates, so a consumer sees the same sequence whether it watched continuously or relisted
 * after a gap). Callbacks fire only for real changes (resourceVersion differs); objects are
 * borrowed for the call. The cache holds its own references. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct kube_cache_callbacks {
        void (*added)(json_t *object, void *userdata);
        void (*updated)(json_t *old_object, json_t *object, void *userdata);
        void (*deleted)(json_t *object, void *userdata); /* the last known state */
        void *userdata;
};

struct kube_cache;

int kube_cache_new(const struct kube_cache_callbacks *callbacks, struct kube_cache **ret);
/* Keep only apiVersion, kind and metadata (without managedFields and annotations, except the
 * undecodable mark of json-split.h) of each object once the
 * callbacks have seen it whole: for kinds whose consumers need the whole object only when it
 * changes (this node's NodeState, whose status lists every VF) or only its metadata (Node
 * labels, Namespace existence). A Node's status (images, conditions) or a NodeState's can be
 * hundreds of KiB decoded; its metadata is a few. `updated` then gets the old object's
 * metadata only, `deleted` the event's object or, after a relist, the metadata. */
void kube_cache_keep_metadata_only(struct kube_cache *c);
struct kube_cache *kube_cache_free(struct kube_cache *c);

enum kube_cache_op {
        KUBE_CACHE_UPSERT,
        KUBE_CACHE_DELETE,
};
/* -EINVAL if the object has no metadata.name. */
int kube_cache_apply(struct kube_cache *c, enum kube_cache_op op, json_t *object);
/* items: the complete current list (JSON array). */
int kube_cache_replace(struct kube_cache *c, json_t *items);

json_t *kube_cache_get(struct kube_cache *c, const char *namespace_, const char *name);
size_t kube_cache_size(const struct kube_cache *c);
/* All objects, as a JSON object keyed like the cache (borrowed, do not modify). */
json_t *kube_cache_objects(struct kube_cache *c);
