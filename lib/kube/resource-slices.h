/* SPDX-License-Identifier: Apache-2.0 */
/* Publishing this node's ResourceSlices (resource.k8s.io/v1) for one DRA driver.
 *
 * The caller hands over the slices it wants (kube_slices_set: full objects with fixed names,
 * without spec.pool.generation). When they differ from what was last published, the publisher
 * lists the driver's slices of this node (fieldSelector spec.nodeName, spec.driver), and
 * unless the server already holds exactly that content (an agent restart), writes every slice
 * with the pool generation one above the highest it saw (PUT with the resourceVersion read,
 * POST for a new one) and deletes the node's slices of the driver that are no longer wanted.
 * So slices are written on change only and the generation grows with every change. Requests
 * go one at a time; a failure retries the whole round after 1 s doubling to 30 s. An empty
 * set removes every slice; when the server does not serve resource.k8s.io/v1 (404) or does not
 * let us list (403), an empty set is done (nothing of ours there, or nothing we may remove), a
 * non-empty one is an error retried.
 *
 * The slices are a kept state, not a one-off write: while a non-empty set is wanted and the
 * publisher is not paused, the server's slices of this node and driver are listed every
 * KUBE_SLICES_VERIFY_USEC from the API server's watch cache (resourceVersion=0: no etcd read)
 * and, when they differ, read again consistently and put right (the kubelet deletes a node's
 * slices at its start and a gone driver's after a delay; someone may delete or edit them).
 * A list rather than a watch: the agent's ClusterRole grants list, not watch. A paused
 * publisher writes nothing (a DRA driver the kubelet has not registered must not advertise
 * devices it cannot prepare, nor fight the kubelet's wipe); resuming forgets what it believed
 * the server holds and lists again. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "kube/http.h"

struct kube_slices;

int kube_slices_new(struct kube_http *http, const char *node, const char *driver,
                    struct kube_slices **ret);
/* Takes a reference to desired (a JSON array of ResourceSlice objects). Nothing is written
 * (not even a removal) before the first call. -ENOMEM. */
int kube_slices_set(struct kube_slices *s, json_t *desired);
/* Pausing stops writing (a round in flight finishes); resuming (also a publisher that was not
 * paused: a kubelet registering the driver again wiped the slices at its start) lists the
 * server's slices and writes what differs. A new publisher is not paused. */
void kube_slices_set_paused(struct kube_slices *s, bool paused);
#define KUBE_SLICES_VERIFY_USEC (4 * 1000000ULL)
/* True when the last set is what the server holds. */
bool kube_slices_in_sync(const struct kube_slices *s);
/* Cancels what is in flight. NULL-safe; returns NULL. */
struct kube_slices *kube_slices_free(struct kube_slices *s);
