/* SPDX-License-Identifier: Apache-2.0 */
#include "host/pci-names.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <pci/pci.h>

struct pci_names {
        struct pci_access *pacc;
};

/* libpci warns on stderr about a missing pci.ids; a missing name is not worth a message. */
static void quiet_warning(char *msg, ...)
{
}

struct pci_names *host_pci_names_new(void)
{
        struct pci_names *names = calloc(1, sizeof(*names));
        if (!names)
                return NULL;
        names->pacc = pci_alloc();
        if (!names->pacc) {
                free(names);
                return NULL;
        }
        names->pacc->warning = quiet_warning;
        /* The default mode consults ~/.pciids-cache; we want pci.ids and nothing else. */
        names->pacc->id_lookup_mode = 0;
        return names;
}

void host_pci_names_free(struct pci_names *names)
{
        if (!names)
                return;
        pci_cleanup(names->pacc);
        free(names);
}

static int lookup(struct pci_names *names, int flags, uint16_t vendor, uint16_t device, char **ret)
{
        char buf[256];
        const char *s;

        *ret = NULL;
        if (!names)
                return 0;
        flags |= PCI_LOOKUP_NO_NUMBERS | PCI_LOOKUP_NO_HWDB;
        if (flags & PCI_LOOKUP_DEVICE)
                s = pci_lookup_name(names->pacc, buf, sizeof(buf), flags, vendor, device);
        else
                s = pci_lookup_name(names->pacc, buf, sizeof(buf), flags, vendor);
        if (!s)
                return 0;
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

int host_pci_names_lookup(struct pci_names *names, uint16_t vendor, uint16_t device,
                          char **ret_vendor_name, char **ret_device_name)
{
        int r = lookup(names, PCI_LOOKUP_VENDOR, vendor, 0, ret_vendor_name);
        if (r < 0)
                return r;
        r = lookup(names, PCI_LOOKUP_DEVICE, vendor, device, ret_device_name);
        if (r < 0) {
                free(*ret_vendor_name);
                *ret_vendor_name = NULL;
        }
        return r;
}
