/* SPDX-License-Identifier: Apache-2.0 */
/* SriovNetwork / SriovIBNetwork → NetworkAttachmentDefinition, as upstream's operator renders it.
 *
 * Pure: a network object as the API returns it in, the NAD object out, no I/O. The CNI config
 * is built like upstream's template (bindata/manifests/cni-config/sriov/sriov-cni-config.yaml,
 * keys in the same order) and then re-indented exactly like Go's json.Indent(.., "", "    "),
 * so an unchanged network renders to the same bytes every time (no idle writes, and a NAD
 * written by upstream's operator compares equal). Unlike upstream, every malformed field is an
 * error naming it (spec.ipam not JSON, spec.vlanQoS without spec.vlan, an unknown linkState...)
 * instead of being dropped silently or failing later. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#define NAD_API_VERSION         "k8s.cni.cncf.io/v1"
#define NAD_KIND                "NetworkAttachmentDefinition"
#define NAD_ANNOTATION_RESOURCE "k8s.v1.cni.cncf.io/resourceName"
#define NAD_ANNOTATION_OWNER    "sriovnetwork.openshift.io/owner-ref"
#define NAD_NETWORK_GROUP       "sriovnetwork.openshift.io"

enum nad_network_kind {
        NAD_SRIOV_NETWORK,    /* SriovNetwork, CNI type "sriov" */
        NAD_SRIOV_IB_NETWORK, /* SriovIBNetwork, CNI type "ib-sriov" */
};

const char *nad_network_kind_name(enum nad_network_kind kind);

/* The NAD's namespace: spec.networkNamespace, else the network's own namespace. NULL when the
 * object has neither (borrowed from network). */
const char *nad_target_namespace(json_t *network);

/* "SriovNetwork.sriovnetwork.openshift.io/<ns>/<name>" (upstream's OwnerRefToString). Caller
 * frees; NULL on a missing name/namespace or no memory. */
char *nad_owner_ref(enum nad_network_kind kind, json_t *network);

/* Renders network into a new NAD object {apiVersion, kind, metadata{name, namespace,
 * annotations, ownerReferences (same namespace only)}, spec{config}}. resource_prefix is the
 * device-plugin prefix ("openshift.io"). On invalid input returns -EINVAL and sets *error to a
 * message naming the field ("spec.ipam: not a JSON object: ..."; caller frees). */
int nad_render(enum nad_network_kind kind, json_t *network, const char *resource_prefix,
               json_t **ret, char **error);

/* Go's json.Indent(dst, src, "", "    ") over src, after checking that src is one JSON value.
 * Caller frees; -EINVAL when src is not JSON. Exposed for tests. */
int nad_json_indent(const char *src, char **ret);
