/* SPDX-License-Identifier: Apache-2.0 */
/* PodResources API v1 client: which device IDs the kubelet has given to running pods.
 *
 * List() on the kubelet's pod-resources socket (default
 * /var/lib/kubelet/pod-resources/kubelet.sock), reduced to "in use" sets per resource name.
 * The planner uses it to refuse disruptive changes to VFs that pods hold. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "grpc/grpc-status.h"

#define DP_PODRESOURCES_SOCKET_DEFAULT "/var/lib/kubelet/pod-resources/kubelet.sock"

struct dp_resource_usage {
        char *resource; /* "openshift.io/sriov_net" */
        char **ids;     /* distinct device IDs, in the order first seen */
        size_t n_ids;
};

/* Who holds one device: for pod attribution in the metrics. */
struct dp_device_holder {
        char *resource, *id, *namespace_, *pod, *container;
};
struct dp_usage {
        struct dp_resource_usage *resources;
        size_t n_resources, cap_resources; /* cap_*: allocated, for util/array.h */
        struct dp_device_holder *holders;  /* in the kubelet's order */
        size_t n_holders, cap_holders;
};

void dp_usage_done(struct dp_usage *u);
/* A deep copy (for an answer kept past the callback). 0, or -ENOMEM with ret untouched. */
int dp_usage_copy(const struct dp_usage *src, struct dp_usage *ret);
const struct dp_resource_usage *dp_usage_find(const struct dp_usage *u, const char *resource);
/* True when the device ID of that resource is held by some pod. */
int dp_usage_in_use(const struct dp_usage *u, const char *resource, const char *id);

/* Records that a pod holds id of resource (id NULL: only the resource). 0 or -ENOMEM. */
int dp_usage_add(struct dp_usage *u, const char *resource, const char *id);
/* Decodes a packed ListPodResourcesResponse. -EBADMSG when it does not parse. */
int dp_usage_from_list_response(const uint8_t *data, size_t len, struct dp_usage *ret);

/* error 0: usage holds the answer. Otherwise a negative errno and a message saying why, for the
 * caller to log once: -ENOENT/-ECONNREFUSED (no kubelet listening), -ETIMEDOUT (no answer in
 * time), -EBUSY (refused: RESOURCE_EXHAUSTED, the kubelet's rate limit for the whole node),
 * -EAGAIN (UNAVAILABLE: the connection closed before the answer), -EPROTO (another gRPC
 * error), -EBADMSG (undecodable answer). */
typedef void (*dp_usage_done_fn)(void *userdata, int error, const char *message,
                                 const struct dp_usage *usage);

struct dp_podresources_call;

/* Asynchronous List on the caller's loop; done is called exactly once, always from the loop
 * (also when the socket cannot be reached), unless the call is cancelled first. ret may be NULL.
 * Returns 0, or a negative errno when nothing could be started (-ENOMEM). */
int dp_podresources_list(sd_event *event, const char *socket_path, uint64_t timeout_usec,
                         dp_usage_done_fn done, void *userdata, struct dp_podresources_call **ret);
/* Abandons the call: done is not called. NULL is a no-op. */
void dp_podresources_call_cancel(struct dp_podresources_call *call);
/* Blocking form for CLI tools and tests. */
int dp_podresources_list_sync(const char *socket_path, uint64_t timeout_usec, struct dp_usage *ret);
