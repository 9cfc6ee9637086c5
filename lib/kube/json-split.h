/* SPDX-License-Identifier: Apache-2.0 */
/* Decoding API objects one at a time, so one object that cannot be decoded never fails the
 * others.
 *
 * A real API server accepts objects that jansson cannot decode: a free-form field nested
 * deeper than jansson's 2,048 levels, or an integer beyond 64 bits. Decoding a whole list body
 * (or watch event) with one json_loadb would fail every object for it. Here a small scanner
 * (iterative, no recursion, any depth) finds each member's byte span; each object is then
 * decoded on its own, and one that cannot be (or is larger than the object size cap) becomes
 * a stub: its kind, apiVersion and metadata, with the reason in the annotation
 * KUBE_UNDECODABLE_ANNOTATION, so the caller can report it by name and go on with the rest. */
#pragma once

#include <jansson.h>
#include <stddef.h>

#define KUBE_UNDECODABLE_ANNOTATION "sriov-agent.local/undecodable"
/* Larger objects are not decoded (etcd's own limit is 1.5 MiB; a policy is a few KiB). */
#define KUBE_MAX_OBJECT_SIZE (512u * 1024)

/* Calls cb for each member of the JSON object in text: key (raw, as written, not unescaped)
 * and the value's byte span. -EBADMSG if text is not an object; cb's negative return stops. */
typedef int (*kube_json_member_fn)(const char *key, size_t key_len, const char *value,
                                   size_t value_len, void *userdata);
int kube_json_object_members(const char *text, size_t len, kube_json_member_fn cb, void *userdata);

/* Calls cb for each element's byte span of the JSON array in text. */
typedef int (*kube_json_element_fn)(const char *value, size_t value_len, void *userdata);
int kube_json_array_elements(const char *text, size_t len, kube_json_element_fn cb, void *userdata);

/* The object in text (new reference), or its stub when it cannot be decoded or exceeds
 * max_size (0 = KUBE_MAX_OBJECT_SIZE); NULL when not even metadata.name can be read (why in
 * reason). */
json_t *kube_json_decode_object(const char *text, size_t len, size_t max_size, char *reason,
                                size_t reason_size);

/* A stub of a decoded object (kind, apiVersion, metadata without annotations and
 * managedFields, the reason as marker), e.g. when a budget is exhausted; NULL without a name. */
json_t *kube_object_stub(json_t *obj, const char *reason);

/* The reason an object is a stub, or NULL for a decoded object. */
const char *kube_object_undecodable(json_t *obj);
