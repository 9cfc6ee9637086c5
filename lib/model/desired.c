/* SPDX-License-Identifier: Apache-2.0 */
#include "model/desired.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const device_type_names[] = {
        [DEVICE_TYPE_NETDEVICE] = "netdevice",
        [DEVICE_TYPE_VFIO_PCI] = "vfio-pci",
};

const char *device_type_to_string(enum device_type t)
{
        if ((size_t)t >= sizeof(device_type_names) / sizeof(device_type_names[0]))
                return "";
        return device_type_names[t];
}

int device_type_from_string(const char *s, enum device_type *ret)
{
        for (size_t i = 0; i < sizeof(device_type_names) / sizeof(device_type_names[0]); i++)
                if (s && strcmp(s, device_type_names[i]) == 0) {
                        *ret = (enum device_type)i;
                        return 0;
                }
        return -EINVAL;
}

const char *eswitch_mode_to_string(enum eswitch_mode m)
{
        switch (m) {
        case ESWITCH_MODE_LEGACY:
                return "legacy";
        case ESWITCH_MODE_SWITCHDEV:
                return "switchdev";
        default:
                return "";
        }
}

void desired_interface_done(struct desired_interface *iface)
{
        free(iface->groups);
        *iface = (struct desired_interface){ 0 };
}

void desired_state_done(struct desired_state *state)
{
        for (size_t i = 0; i < state->n_interfaces; i++)
                desired_interface_done(&state->interfaces[i]);
        free(state->interfaces);
        *state = (struct desired_state){ 0 };
}

const struct desired_interface *desired_find_interface(const struct desired_state *state,
                                                       const char *pci_address)
{
        for (size_t i = 0; i < state->n_interfaces; i++)
                if (strcasecmp(state->interfaces[i].pci_address, pci_address) == 0)
                        return &state->interfaces[i];
        return NULL;
}

const struct vf_group *desired_interface_group_of_vf(const struct desired_interface *iface, int vf)
{
        for (size_t i = 0; i < iface->n_groups; i++)
                if (vf >= iface->groups[i].vf_start && vf <= iface->groups[i].vf_end)
                        return &iface->groups[i];
        return NULL;
}
