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
 * k8s.cni.cncf.io/{resourceName, deviceID}. The pool generation is left out: the publisher sets it (kube/resource-slices.h).
 * Whole-card RDMA pools publish one device per selected card (PF, VF or RDMA NIC), named from
 * its PCI address too, deviceType DRA_DEVICE_TYPE_CARD, with the same attributes where they
 * mean the same (no PFName, pfPciAddress, pfDeviceID, EswitchMode, vfID; ifName and
 * rdmaDevice instead); rdmaHcaMax is
 * the device plugin's and plays no part. */
#pragma once

#include <jansson.h>

#include "deviceplugin/podresources.h"
#include "deviceplugin/pool.h"
#include "model/inventory.h"

#define DRA_DEVICES_PER_SLICE 128
#define DRA_DEVICE_TYPE_CARD  "rdma-shared"

/* *ret: a new JSON array of ResourceSlice objects (possibly empty). held (NULL: none): devices
 * pods still hold through the device plugin (the kubelet's PodResources), left out so that a
 * resource moved to DRA with pods running never hands out a VF twice. 0 or -ENOMEM. */
int dra_slices_build(const struct dp_pool_set *pools, const struct inventory *inv, const char *node,
                     const char *driver, const struct dp_usage *held, json_t **ret);
/* The device name of a VF's PCI address ("0000:3b:00.2" -> "0000-3b-00-2"). */
void dra_device_name(const char *pci, char buf[PCI_ADDR_MAX]);
