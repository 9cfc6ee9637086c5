/* SPDX-License-Identifier: Apache-2.0 */
/* SriovNetworkNodePolicy (sriovnetwork.openshift.io/v1): the parsed object and its parsers.
 *
 * Parsing turns API objects (jansson) or files (YAML or JSON, several documents separated by
 * `---`, `List` objects as `kubectl get -o yaml` prints them) into `struct policy` values with
 * every upstream spec field and the mutating-webhook defaults applied (priority 99, isRdma for
 * linkType ib unless vfio-pci). Parsing only checks shapes and types: a wrong type, or a file
 * that is not YAML/JSON, yields a policy whose `error` names the file, document, policy and
 * field; values (ranges, enums, names) are checked by policy_validate(). Nothing here logs or
 * touches the host; strings are owned by the policy and freed by policy_done(). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define POLICY_API_VERSION      "sriovnetwork.openshift.io/v1"
#define POLICY_KIND             "SriovNetworkNodePolicy"
#define POLICY_DEFAULT_PRIORITY 99

struct string_pair {
        char *key, *value;
};

/* One nicSelector.pfNames entry: "ens1f0" or "ens1f0#2-5". */
struct pf_name_selector {
        char *text; /* as written, for messages */
        char *name; /* the part before '#' */
        bool has_range;
        int vf_start, vf_end; /* meaningful when has_range */
        char *range_error;    /* why the "#first-last" suffix did not parse; NULL if fine */
};

struct nic_selector {
        char *vendor; /* hex text as written, NULL when absent */
        char *device_id;
        char **root_devices;
        size_t n_root_devices;
        struct pf_name_selector *pf_names;
        size_t n_pf_names;
        char *net_filter;
};

struct policy {
        char *name;      /* metadata.name; NULL when missing */
        char *namespace; /* metadata.namespace; NULL when missing */
        char *origin;    /* where it came from: "FILE document N", "FILE item N", "API" */
        char *error;     /* NULL, or why the object could not be parsed (status invalid) */

        char *resource_name;
        struct string_pair *node_selector;
        size_t n_node_selector;
        bool has_node_selector;
        int priority; /* defaulted to 99 */
        int mtu;      /* 0 = not set */
        bool has_mtu; /* spec.mtu given (the CRD's minimum is 1, so 0 given is invalid) */
        int num_vfs;
        bool has_num_vfs;
        bool has_nic_selector;
        struct nic_selector nic;
        char *device_type; /* defaulted to "netdevice" */
        bool is_rdma;
        bool need_vhost_net;
        char *link_type;    /* "eth", "ETH", "ib", "IB" or NULL */
        char *eswitch_mode; /* "legacy", "switchdev" or NULL */
        char *vdpa_type;    /* "virtio", "vhost" or NULL */
        bool exclude_topology;
        bool externally_managed;
        bool has_bridge; /* spec.bridge.ovs given: not supported by this agent ({} is none) */
};

/* Policies (parsed or failed) plus notes about skipped objects, in input order. */
struct policy_list {
        struct policy *items;
        size_t n_items, cap_items; /* cap_*: allocated, for util/array.h */
        char **notes;              /* "FILE document 2: kind ConfigMap skipped" */
        size_t n_notes, cap_notes;
};

void policy_done(struct policy *p);
void policy_list_done(struct policy_list *list);

/* Display name for messages: metadata.name or "(unnamed)". */
const char *policy_display_name(const struct policy *p);

/* One SriovNetworkNodePolicy API object. Returns 0 and fills *ret (possibly with ret->error set
 * for a malformed object), or -ENOMEM. `origin` describes where the object came from. */
int policy_from_json(const json_t *obj, const char *origin, struct policy *ret);

/* Appends every policy found in a JSON value: a policy object or a List of them. Other kinds
 * are skipped with a note. Returns 0 or -ENOMEM. */
int policy_list_add_json(struct policy_list *list, const json_t *value, const char *origin);

/* Appends the policies of a file's contents (YAML, possibly multi-document, or JSON; JSON is
 * valid YAML so one parser serves both). `file` names the source in messages. A syntax error
 * adds one invalid entry naming the file, document and position. Returns 0 or -ENOMEM. */
int policy_list_add_buffer(struct policy_list *list, const char *file, const char *data,
                           size_t size);
