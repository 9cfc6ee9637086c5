/* SPDX-License-Identifier: Apache-2.0 */
#include "policy/supported-nics.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Same keys and values as upstream's chart (deployment/sriov-network-operator-chart/templates/
 * configmap.yaml at 249e20012, 2026-08-06), so a cluster's ConfigMap and this table agree. */
const struct supported_nic_text SUPPORTED_NICS_BUILTIN[] = {
        { "Intel_i40e_XXV710", "8086 158a 154c" },
        { "Intel_i40e_25G_SFP28", "8086 158b 154c" },
        { "Intel_i40e_10G_X710_SFP", "8086 1572 154c" },
        { "Intel_ixgbe_10G_X550", "8086 1563 1565" },
        { "Intel_ixgbe_82576", "8086 10c9 10ca" },
        { "Intel_i40e_X710_X557_AT_10G", "8086 1589 154c" },
        { "Intel_i40e_10G_X710_BACKPLANE", "8086 1581 154c" },
        { "Intel_i40e_10G_X710_BASE_T", "8086 15ff 154c" },
        { "Intel_i40e_XXV710_N3000", "8086 0d58 154c" },
        { "Intel_i40e_40G_XL710_QSFP", "8086 1583 154c" },
        { "Intel_ice_Columbiaville_E810-CQDA2_2CQDA2", "8086 1592 1889" },
        { "Intel_ice_Columbiaville_E810-XXVDA4", "8086 1593 1889" },
        { "Intel_ice_Columbiaville_E810-XXVDA2", "8086 159b 1889" },
        { "Intel_ice_Columbiaville_E810-XXV_BACKPLANE", "8086 1599 1889" },
        { "Intel_ice_Columbiaville_E810", "8086 1591 1889" },
        { "Intel_ice_Columbiapark_E823C", "8086 188a 1889" },
        { "Intel_ice_Columbiapark_E823L_SFP", "8086 124d 1889" },
        { "Intel_ice_Columbiapark_E823L_BACKPLANE", "8086 124c 1889" },
        { "Intel_ice_Columbiapark_E825C_BACKPLANE", "8086 579c 1889" },
        { "Intel_ice_Columbiapark_E825C_QSFP", "8086 579d 1889" },
        { "Intel_ice_Columbiapark_E825C_SFP", "8086 579e 1889" },
        { "Intel_ice_Connorsville_E830_QSFP", "8086 12d2 1889" },
        { "Intel_ice_Connorsville_E830_SFP", "8086 12d3 1889" },
        { "Intel_ice_Connorsville_E835CC_QSFP", "8086 1249 1889" },
        { "Intel_ice_Connorsville_E835CC_SFP", "8086 124a 1889" },
        { "Nvidia_mlx5_ConnectX-4", "15b3 1013 1014" },
        { "Nvidia_mlx5_ConnectX-4LX", "15b3 1015 1016" },
        { "Nvidia_mlx5_ConnectX-5", "15b3 1017 1018" },
        { "Nvidia_mlx5_ConnectX-5_Ex", "15b3 1019 101a" },
        { "Nvidia_mlx5_ConnectX-6", "15b3 101b 101c" },
        { "Nvidia_mlx5_ConnectX-6_Dx", "15b3 101d 101e" },
        { "Nvidia_mlx5_ConnectX-6_Lx", "15b3 101f 101e" },
        { "Nvidia_mlx5_ConnectX-7", "15b3 1021 101e" },
        { "Nvidia_mlx5_ConnectX-8", "15b3 1023 101e" },
        { "Nvidia_mlx5_ConnectX-9", "15b3 1025 101e" },
        { "Nvidia_mlx5_MT42822_BlueField-2_integrated_ConnectX-6_Dx", "15b3 a2d6 101e" },
        { "Nvidia_mlx5_MT43244_BlueField-3_integrated_ConnectX-7_Dx", "15b3 a2dc 101e" },
        { "Broadcom_bnxt_BCM57414_2x25G", "14e4 16d7 16dc" },
        { "Broadcom_bnxt_BCM75508_2x100G", "14e4 1750 1806" },
        { "Qlogic_qede_QL45000_50G", "1077 1654 1664" },
        { "Red_Hat_Virtio_network_device", "1af4 1000 1000" },
        { "Red_Hat_Virtio_1_0_network_device", "1af4 1041 1041" },
        { "Marvell_OCTEON_TX2_CN96XX", "177d b200 b203" },
        { "Marvell_OCTEON_TX2_CN98XX", "177d b100 b103" },
        { "Marvell_OCTEON_Fusion_CNF95XX", "177d b600 b603" },
        { "Marvell_OCTEON10_CN10XXX", "177d b900 b903" },
        { "Marvell_OCTEON_Fusion_CNF105XX", "177d ba00 ba03" },
        { "Amazon_Elastic_Network_Adapter", "1d0f ec20 ec20" },
        { NULL, NULL },
};

void supported_nics_done(struct supported_nics *s)
{
        free(s->extra);
        *s = (struct supported_nics){ 0 };
}

static int parse_hex16(const char **p, uint16_t *ret)
{
        char *end;
        unsigned long v;

        while (**p == ' ' || **p == '\t')
                (*p)++;
        if (!((**p >= '0' && **p <= '9') || (**p >= 'a' && **p <= 'f') ||
              (**p >= 'A' && **p <= 'F')))
                return -EINVAL;
        errno = 0;
        v = strtoul(*p, &end, 16);
        if (errno || v > 0xffff || end - *p > 4)
                return -EINVAL;
        *p = end;
        *ret = (uint16_t)v;
        return 0;
}

int supported_nic_parse(const char *name, const char *value, struct supported_nic *ret)
{
        struct supported_nic n = { 0 };
        const char *p = value;

        if (!value || parse_hex16(&p, &n.vendor) < 0 || parse_hex16(&p, &n.pf_device) < 0 ||
            parse_hex16(&p, &n.vf_device) < 0)
                return -EINVAL;
        p += strspn(p, " \t\r\n");
        if (*p)
                return -EINVAL;
        snprintf(n.name, sizeof(n.name), "%s", name ? name : "");
        *ret = n;
        return 0;
}

int supported_nics_add_json(struct supported_nics *s, const json_t *value, const char *origin,
                            char **ret_error)
{
        const json_t *data = value, *kind = json_object_get(value, "kind");
        struct supported_nic *arr;
        const char *key;
        json_t *v;
        size_t n = 0;

        *ret_error = NULL;
        if (json_is_string(kind) && strcmp(json_string_value(kind), "ConfigMap") == 0)
                data = json_object_get(value, "data");
        if (json_is_null(data) || !data)
                return 0; /* an empty ConfigMap or file adds nothing */
        if (!json_is_object(data))
                return asprintf(ret_error,
                                "%s: expected a mapping of model names to \"<vendor> "
                                "<pf-device> <vf-device>\"",
                                origin) < 0
                           ? -ENOMEM
                           : -EINVAL;
        arr = reallocarray(s->extra, s->n_extra + json_object_size(data) + 1, sizeof(*arr));
        if (!arr)
                return -ENOMEM;
        s->extra = arr;
        json_object_foreach((json_t *)data, key, v)
        {
                if (!json_is_string(v) ||
                    supported_nic_parse(key, json_string_value(v), &arr[s->n_extra + n]) < 0)
                        return asprintf(ret_error,
                                        "%s: key %s: value must be \"<vendor> <pf-device> "
                                        "<vf-device>\" in hex, like \"8086 1521 1520\"",
                                        origin, key) < 0
                                   ? -ENOMEM
                                   : -EINVAL;
                n++;
        }
        s->n_extra += n;
        return 0;
}

static bool builtin_entry(size_t i, struct supported_nic *ret)
{
        return supported_nic_parse(SUPPORTED_NICS_BUILTIN[i].name, SUPPORTED_NICS_BUILTIN[i].value,
                                   ret) == 0;
}

/* Calls match() on every listed model (built-in first) until it returns true. */
static const struct supported_nic *scan(const struct supported_nics *s,
                                        bool (*match)(const struct supported_nic *, uint16_t,
                                                      uint16_t),
                                        uint16_t a, uint16_t b, struct supported_nic *buf)
{
        for (size_t i = 0; SUPPORTED_NICS_BUILTIN[i].name; i++)
                if (builtin_entry(i, buf) && match(buf, a, b))
                        return buf;
        for (size_t i = 0; s && i < s->n_extra; i++)
                if (match(&s->extra[i], a, b))
                        return &s->extra[i];
        return NULL;
}

static bool match_model(const struct supported_nic *n, uint16_t vendor, uint16_t device)
{
        return n->vendor == vendor && n->pf_device == device;
}

static bool match_vendor(const struct supported_nic *n, uint16_t vendor, uint16_t unused)
{
        (void)unused;
        return n->vendor == vendor;
}

static bool match_device(const struct supported_nic *n, uint16_t device, uint16_t unused)
{
        (void)unused;
        return n->pf_device == device;
}

bool supported_nics_find(const struct supported_nics *s, uint16_t vendor, uint16_t pf_device,
                         struct supported_nic *ret)
{
        const struct supported_nic *n = scan(s, match_model, vendor, pf_device, ret);

        if (n && n != ret)
                *ret = *n;
        return n != NULL;
}

bool supported_nics_allows(const struct supported_nics *s, uint16_t vendor, uint16_t pf_device)
{
        struct supported_nic buf;
        return (s && s->any) || scan(s, match_model, vendor, pf_device, &buf);
}

bool supported_nics_has_vendor(const struct supported_nics *s, uint16_t vendor)
{
        struct supported_nic buf;
        return (s && s->any) || scan(s, match_vendor, vendor, 0, &buf);
}

bool supported_nics_has_device(const struct supported_nics *s, uint16_t pf_device)
{
        struct supported_nic buf;
        return (s && s->any) || scan(s, match_device, pf_device, 0, &buf);
}
