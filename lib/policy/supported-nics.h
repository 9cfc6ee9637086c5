/* SPDX-License-Identifier: Apache-2.0 */
/* The supported-NIC list: which PF models policies may configure.
 *
 * Upstream's operator only discovers and admits the models of its `supported-nic-ids`
 * ConfigMap, one `data` key per model whose value is "<vendor> <pf-device> <vf-device>" in hex
 * ("Intel_ice_Columbiaville_E810-XXVDA2": "8086 159b 1889"). A policy that selects by vendor
 * only must not reach an onboard management port of a model nobody listed, so the agent keeps
 * the same table built in (SUPPORTED_NICS_BUILTIN, same keys and values), lets users add
 * models in the same key format (a file given by flag, or the ConfigMap's data in cluster
 * mode), and has an explicit opt-out (`any`) for labs and unusual hardware.
 * Pure: the file reader lives in policy-files.c. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SUPPORTED_NICS_CONFIGMAP "supported-nic-ids"
#define SUPPORTED_NIC_NAME_MAX   96

struct supported_nic {
        char name[SUPPORTED_NIC_NAME_MAX]; /* the ConfigMap key, e.g. "Nvidia_mlx5_ConnectX-6" */
        uint16_t vendor, pf_device, vf_device;
};

struct supported_nics {
        bool any;                    /* opt-out: every SR-IOV PF is eligible */
        struct supported_nic *extra; /* added to the built-in table */
        size_t n_extra;
};

/* The built-in table as upstream's chart ships it: key/value pairs, NULL-terminated. */
struct supported_nic_text {
        const char *name, *value;
};
extern const struct supported_nic_text SUPPORTED_NICS_BUILTIN[];

void supported_nics_done(struct supported_nics *s);

/* Parses one value "<vendor> <pf-device> <vf-device>" (hex, single spaces as upstream writes
 * them; surrounding blanks tolerated). Returns 0 or -EINVAL. */
int supported_nic_parse(const char *name, const char *value, struct supported_nic *ret);

/* Adds every key of a ConfigMap-data-shaped JSON object ({"Name": "8086 1521 1520", ...}), or
 * of a whole ConfigMap object (its "data"). Returns 0, -ENOMEM, or -EINVAL with *ret_error
 * (free()) naming `origin` and the key. Nothing is added when anything is wrong. */
int supported_nics_add_json(struct supported_nics *s, const json_t *value, const char *origin,
                            char **ret_error);

/* Copies the entry for a PF model (built-in or added) to *ret and returns true, or false when
 * the model is not listed (`any` does not matter here). NULL s means the built-in table. */
bool supported_nics_find(const struct supported_nics *s, uint16_t vendor, uint16_t pf_device,
                         struct supported_nic *ret);
/* true when the model may be configured: `any`, or listed. NULL s means the built-in table. */
bool supported_nics_allows(const struct supported_nics *s, uint16_t vendor, uint16_t pf_device);
/* true when some listed model has this vendor (upstream's IsSupportedVendor), and the same for
 * a PF device id (IsSupportedDevice). */
bool supported_nics_has_vendor(const struct supported_nics *s, uint16_t vendor);
bool supported_nics_has_device(const struct supported_nics *s, uint16_t pf_device);
