/* SPDX-License-Identifier: Apache-2.0 */
#include "policy/policy-validate.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/field-errors.h"
#include "util/macro.h"
#include "util/names.h"

static bool has_control_or_space(const char *s)
{
        for (; *s; s++)
                if ((unsigned char)*s <= ' ' || *s == 0x7f)
                        return true;
        return false;
}

bool pf_name_is_valid(const char *name)
{
        size_t len = name ? strlen(name) : 0;

        if (len == 0 || len > PF_NAME_MAX)
                return false;
        return !strchr(name, '/') && !strstr(name, "..") && !has_control_or_space(name) &&
               strcmp(name, ".") != 0;
}

/* metadata.name is a DNS subdomain: lower-case alphanumerics, '-' and '.', <= 253. */
static bool object_name_is_valid(const char *name)
{
        size_t len = strlen(name);

        if (len == 0 || len > 253)
                return false;
        for (size_t i = 0; i < len; i++) {
                char c = name[i];
                bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
                if (!alnum && ((c != '-' && c != '.') || i == 0 || i == len - 1))
                        return false;
        }
        return true;
}

static bool hex_id_is_valid(const char *s)
{
        size_t len = strlen(s);
        return len >= 1 && len <= 4 && strspn(s, "0123456789abcdefABCDEF") == len;
}

static bool one_of(const char *s, const char *const *allowed)
{
        for (; *allowed; allowed++)
                if (strcmp(s, *allowed) == 0)
                        return true;
        return false;
}

static void check_printable(struct field_errors *pr, const char *field, const char *s)
{
        for (const char *c = s; *c; c++)
                if ((unsigned char)*c < ' ' || *c == 0x7f) {
                        field_errors_add(pr, field, "contains control characters");
                        return;
                }
}

static void validate_metadata(struct field_errors *pr, const struct policy *p)
{
        if (!p->name)
                field_errors_add(pr, "metadata.name", "missing");
        else if (!object_name_is_valid(p->name))
                field_errors_add(
                    pr, "metadata.name",
                    "\"%.80s\" is not a valid object name (lower-case letters, digits, "
                    "'-' and '.', at most 253)",
                    p->name);
}

static void validate_node_selector(struct field_errors *pr, const struct policy *p)
{
        if (!p->has_node_selector)
                field_errors_add(pr, "spec.nodeSelector", "missing (required)");
        for (size_t i = 0; i < p->n_node_selector; i++) {
                check_printable(pr, "spec.nodeSelector", p->node_selector[i].key);
                check_printable(pr, "spec.nodeSelector", p->node_selector[i].value);
        }
}

static void validate_pf_names(struct field_errors *pr, const struct policy *p)
{
        for (size_t i = 0; i < p->nic.n_pf_names; i++) {
                const struct pf_name_selector *s = &p->nic.pf_names[i];
                if (!pf_name_is_valid(s->name))
                        field_errors_add(pr, "spec.nicSelector.pfNames",
                                         "\"%.80s\" is not a network interface name (no '/', '..', "
                                         "whitespace or control characters, 1..%d bytes)",
                                         s->text, PF_NAME_MAX);
                if (!s->has_range)
                        continue;
                if (s->range_error)
                        field_errors_add(pr, "spec.nicSelector.pfNames", "\"%.80s\": %s", s->text,
                                         s->range_error);
                else if (s->vf_end < s->vf_start)
                        field_errors_add(pr, "spec.nicSelector.pfNames",
                                         "\"%.80s\": range end %d is before its start %d", s->text,
                                         s->vf_end, s->vf_start);
                else if (p->has_num_vfs && s->vf_end >= p->num_vfs)
                        field_errors_add(pr, "spec.nicSelector.pfNames",
                                         "\"%.80s\": range end %d must be less than numVfs %d",
                                         s->text, s->vf_end, p->num_vfs);
        }
}

static void validate_net_filter(struct field_errors *pr, const struct policy *p)
{
        const struct nic_selector *nic = &p->nic;

        if (!nic->net_filter)
                return;
        if (strncmp(nic->net_filter, "openstack/NetworkID:", 20) != 0 &&
            strncmp(nic->net_filter, "aws/NetworkID:", 14) != 0)
                field_errors_add(
                    pr, "spec.nicSelector.netFilter",
                    "\"%.80s\" must be openstack/NetworkID:<uuid> or aws/NetworkID:<id>",
                    nic->net_filter);
        if (nic->vendor || nic->device_id || nic->n_root_devices || nic->n_pf_names)
                field_errors_add(
                    pr, "spec.nicSelector.netFilter",
                    "cannot be combined with vendor, deviceID, rootDevices or pfNames");
        if (p->eswitch_mode)
                field_errors_add(pr, "spec.eSwitchMode", "not allowed together with netFilter");
        if (p->link_type && strcasecmp(p->link_type, "eth") != 0)
                field_errors_add(pr, "spec.linkType",
                                 "only eth is allowed together with netFilter");
}

static void validate_nic_selector(struct field_errors *pr, const struct policy *p)
{
        const struct nic_selector *nic = &p->nic;

        if (!p->has_nic_selector) {
                field_errors_add(pr, "spec.nicSelector", "missing (required)");
                return;
        }
        if (!nic->vendor && !nic->device_id && !nic->n_root_devices && !nic->n_pf_names &&
            !nic->net_filter)
                field_errors_add(
                    pr, "spec.nicSelector",
                    "at least one of vendor, deviceID, rootDevices, pfNames, netFilter is "
                    "required");
        if (nic->vendor && !hex_id_is_valid(nic->vendor))
                field_errors_add(pr, "spec.nicSelector.vendor", "\"%.80s\" is not a hex vendor id",
                                 nic->vendor);
        if (nic->device_id && !hex_id_is_valid(nic->device_id))
                field_errors_add(pr, "spec.nicSelector.deviceID",
                                 "\"%.80s\" is not a hex device id", nic->device_id);
        for (size_t i = 0; i < nic->n_root_devices; i++)
                if (!pci_address_is_valid(nic->root_devices[i]))
                        field_errors_add(pr, "spec.nicSelector.rootDevices",
                                         "\"%.80s\" is not a PCI address like 0000:3b:00.0",
                                         nic->root_devices[i]);
        validate_pf_names(pr, p);
        validate_net_filter(pr, p);
}

static void validate_enums(struct field_errors *pr, const struct policy *p)
{
        static const char *const device_types[] = { "netdevice", "vfio-pci", NULL };
        static const char *const link_types[] = { "eth", "ETH", "ib", "IB", NULL };
        static const char *const eswitch_modes[] = { "legacy", "switchdev", NULL };
        static const char *const vdpa_types[] = { "virtio", "vhost", NULL };

        if (p->device_type && !one_of(p->device_type, device_types))
                field_errors_add(pr, "spec.deviceType",
                                 "\"%.80s\" is not one of netdevice, vfio-pci", p->device_type);
        if (p->link_type && !one_of(p->link_type, link_types))
                field_errors_add(pr, "spec.linkType", "\"%.80s\" is not one of eth, ETH, ib, IB",
                                 p->link_type);
        if (p->eswitch_mode && !one_of(p->eswitch_mode, eswitch_modes))
                field_errors_add(pr, "spec.eSwitchMode",
                                 "\"%.80s\" is not one of legacy, switchdev", p->eswitch_mode);
        if (p->vdpa_type && !one_of(p->vdpa_type, vdpa_types))
                field_errors_add(pr, "spec.vdpaType", "\"%.80s\" is not one of virtio, vhost",
                                 p->vdpa_type);
}

static void validate_combinations(struct field_errors *pr, const struct policy *p)
{
        bool vfio = p->device_type && strcmp(p->device_type, "vfio-pci") == 0;
        bool switchdev = p->eswitch_mode && strcmp(p->eswitch_mode, "switchdev") == 0;

        if (vfio && p->is_rdma)
                field_errors_add(pr, "spec.isRdma",
                                 "RDMA cannot be enabled with deviceType vfio-pci");
        if (switchdev && p->link_type && strcasecmp(p->link_type, "eth") != 0)
                field_errors_add(pr, "spec.eSwitchMode", "switchdev requires linkType eth");
        if (p->vdpa_type) {
                if (vfio)
                        field_errors_add(pr, "spec.vdpaType", "requires deviceType netdevice");
                if (!switchdev)
                        field_errors_add(pr, "spec.vdpaType", "requires eSwitchMode switchdev");
        }
}

static void validate_numbers(struct field_errors *pr, const struct policy *p)
{
        if (p->priority < 0 || p->priority > 99)
                field_errors_add(pr, "spec.priority", "%d is outside 0..99", p->priority);
        /* The CRD says minimum 1; without an API server in front (policy files) the same
         * bound applies, so "mtu: 0" is refused rather than read as "not set". */
        if ((p->has_mtu && p->mtu < 1) || p->mtu < 0 || p->mtu > POLICY_MAX_MTU)
                field_errors_add(pr, "spec.mtu", "%d is outside 1..%d", p->mtu, POLICY_MAX_MTU);
        if (!p->has_num_vfs)
                field_errors_add(pr, "spec.numVfs", "missing (required)");
        else if (p->num_vfs < 0 || p->num_vfs > POLICY_MAX_NUM_VFS)
                field_errors_add(pr, "spec.numVfs", "%d is outside 0..%d", p->num_vfs,
                                 POLICY_MAX_NUM_VFS);
}

int policy_validate(const struct policy *p, char **ret_reason)
{
        _cleanup_(field_errors_done) struct field_errors pr = { 0 };
        int r;

        *ret_reason = NULL;
        if (p->error) {
                *ret_reason = strdup(p->error);
                return *ret_reason ? -EINVAL : -ENOMEM;
        }
        validate_metadata(&pr, p);
        if (!p->resource_name)
                field_errors_add(&pr, "spec.resourceName", "missing (required)");
        else if (!resource_name_is_valid(p->resource_name))
                field_errors_add(
                    &pr, "spec.resourceName",
                    "\"%.80s\" must match ^[a-zA-Z0-9]([a-zA-Z0-9_-]*[a-zA-Z0-9])?$ and be "
                    "at most 63 characters",
                    p->resource_name);
        validate_node_selector(&pr, p);
        validate_numbers(&pr, p);
        validate_nic_selector(&pr, p);
        validate_enums(&pr, p);
        validate_combinations(&pr, p);

        if (pr.oom)
                return -ENOMEM;
        if (!pr.text)
                return 0;
        r = asprintf(ret_reason, "%s: policy %s: %s", p->origin ? p->origin : "API",
                     policy_display_name(p), pr.text);
        if (r < 0) {
                *ret_reason = NULL;
                return -ENOMEM;
        }
        return -EINVAL;
}
