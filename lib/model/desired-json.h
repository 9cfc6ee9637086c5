/* SPDX-License-Identifier: Apache-2.0 */
/* The desired state as JSON, in SriovNetworkNodeState *spec* names.
 *
 * {"interfaces":[{"pciAddress","name","numVfs","mtu","linkType","eSwitchMode",
 *   "externallyManaged","vfGroups":[{"resourceName","deviceType","vfRange":"a-b","policyName",
 *   "mtu","isRdma","vdpaType"}]}]}
 * Optional values that are unset (mtu 0, no linkType/eSwitchMode/vdpaType) are omitted. The
 * parse side reads back what was persisted or received, strictly: wrong types, bad PCI
 * addresses, hostile names and malformed ranges are errors with the field path in *error.
 * Fields outside the spec (priority, needVhostNet, excludeTopology) do not round-trip. */
#pragma once

#include <jansson.h>

#include "model/desired.h"

/* 0 or -ENOMEM. */
int desired_interface_to_json(const struct desired_interface *iface, json_t **ret);
int desired_state_to_json(const struct desired_state *state, json_t **ret);

/* 0, -EINVAL with *error (free()) naming the field, or -ENOMEM. */
int desired_interface_from_json(const json_t *obj, struct desired_interface *ret, char **error);
int desired_state_from_json(const json_t *obj, struct desired_state *ret, char **error);
