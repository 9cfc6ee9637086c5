/* SPDX-License-Identifier: Apache-2.0 */
/* The ResourceSlices that publish this node's DRA devices (resource.k8s.io/v1), built from the
 * pools cut out for DRA and the inventory. Pure: no I/O.
 *
 * One pool per node (pool name = node name); one device per VF of an SR-IOV pool, named from
 * its PCI address ("0000-3b-00-2", as upstream dra-driver-sriov names them, so the name never
 * changes while the VF exists); devices sorted by name, at most DRA_DEVICES_PER_SLICE per
 * slice; slice i is named "<node>-sriov-agent-<i>". Attributes, names as upstream where it has
 * one: resource.kubernetes.io/pcieRoot and pciBusID, dra.net/numaNode,
 * sriovnetwork.k8snetworkplumbingwg.io/{PFName, pfPciAddress, pfDeviceID, EswitchMode,
 * pciAddress, vfID, vendor, deviceID, linkType, rdmaCapable, resourceName, deviceType},
 * k8s.cni.cncf.io/{resourceName, deviceID}. The pool generation is left out: the publisher sets it
 * (kube/resource-slices.h). Whole-card RDMA pools publish one device per selected card (PF, VF or
 * RDMA NIC), named from its PCI address too, deviceType DRA_DEVICE_TYPE_CARD, with the same
 * attributes where they mean the same (no PFName, pfPciAddress, pfDeviceID, EswitchMode, vfID;
 * ifName and rdmaDevice instead); rdmaHcaMax is the device plugin's and plays no part. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "deviceplugin/podresources.h"
#include "deviceplugin/pool.h"
#include "model/inventory.h"

#define DRA_DEVICES_PER_SLICE 128
#define DRA_DEVICE_TYPE_CARD  "rdma-shared"

/* resource.k8s.io/v1's limits a slice is checked against before it is written. */
#define DRA_ATTRIBUTE_VALUE_MAX   64  /* string and version values */
#define DRA_ATTRIBUTES_PER_DEVICE 32  /* attributes and capacities together */
#define DRA_DEVICE_NAME_MAX       63  /* a DNS label */
#define DRA_ATTRIBUTE_ID_MAX      32  /* the C identifier after the domain */
#define DRA_ATTRIBUTE_DOMAIN_MAX  63  /* the DNS subdomain before the '/' */
#define DRA_OBJECT_NAME_MAX       253 /* a slice's name, a DNS subdomain */

/* *ret: a new JSON array of ResourceSlice objects (possibly empty). held (NULL: none): devices
 * pods still hold through the device plugin (the kubelet's PodResources), left out so that a
 * resource moved to DRA with pods running never hands out a VF twice. Every device is checked
 * against resource.k8s.io/v1's limits first: a resource with a device that would break one
 * (a policy resourceName long enough to make the resourceName attribute longer than 64
 * characters, say) is left out alone, and *rejected (when not NULL; a new JSON array) gets
 * {"resourceName", "reason"} for it, the reason naming the device, the field and the limit;
 * every other resource is still published, so one bad resource never takes the node's slices
 * with it. Slice names stay within 253 characters for any node name (a long one is cut and a
 * hash of it added). 0 or -ENOMEM. */
int dra_slices_build_checked(const struct dp_pool_set *pools, const struct inventory *inv,
                             const char *node, const char *driver, const struct dp_usage *held,
                             json_t **ret, json_t **rejected);
/* dra_slices_build_checked() that logs each rejected resource instead (`plan`). */
int dra_slices_build(const struct dp_pool_set *pools, const struct inventory *inv, const char *node,
                     const char *driver, const struct dp_usage *held, json_t **ret);
/* Why a device (a ResourceSlice's devices[] entry) breaks a limit: false and why (naming the
 * field and the limit) filled, or true. */
bool dra_device_is_valid(json_t *device, char *why, size_t size);
/* The name of slice `index` of a node's pool: "<node>-sriov-agent-<index>", the node cut and a
 * hash of it added when that would be longer than DRA_OBJECT_NAME_MAX. */
void dra_slice_name(const char *node, size_t index, char *buf, size_t size);
/* The device name of a VF's PCI address ("0000:3b:00.2" -> "0000-3b-00-2"). */
void dra_device_name(const char *pci, char buf[PCI_ADDR_MAX]);
