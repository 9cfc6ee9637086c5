/* SPDX-License-Identifier: Apache-2.0 */
/* IPAM results in, CNI results out (pure).
 *
 * An IPAM plugin answers in the cniVersion of the configuration it was given: 0.3.0 and later
 * with `ips`/`routes`/`dns`, 0.1.0/0.2.0 with `ip4`/`ip6`. Both are read into one form; the
 * plugin's own result is printed in the configuration's cniVersion (as upstream's
 * types.PrintResult converts it). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "cni/conf.h"

#define CNI_MAX_IPS    16
#define CNI_MAX_ROUTES 32

struct cni_ip {
        int family; /* AF_INET / AF_INET6 */
        uint8_t addr[16];
        int prefix;
        bool has_gw;
        uint8_t gw[16];
};

/* As libcni's types.Route: mtu, advmss and priority are left out when 0, table and scope
 * when absent. */
struct cni_route {
        int family;
        uint8_t dst[16];
        int dst_len;
        bool has_gw;
        uint8_t gw[16];
        uint32_t mtu, advmss, priority;
        bool has_table, has_scope;
        uint32_t table;
        uint8_t scope; /* RT_SCOPE_* */
};

struct cni_ipam_result {
        struct cni_ip ips[CNI_MAX_IPS];
        size_t n_ips;
        struct cni_route routes[CNI_MAX_ROUTES];
        size_t n_routes;
        json_t *dns; /* owned, may be NULL */
};

void cni_ipam_result_done(struct cni_ipam_result *r);

/* Parses an IPAM plugin's stdout; fills e (naming the field) on failure. An answer without
 * any IP is an error, as upstream ("IPAM plugin returned missing IP config"). */
int cni_ipam_result_parse(const char *text, size_t len, struct cni_ipam_result *ret,
                          struct cni_error *e);

struct cni_iface {
        const char *name;
        const char *mac;     /* may be "" */
        int mtu;             /* 0 = leave out; only results of 1.0.0 and later have one */
        const char *sandbox; /* netns path */
};

/* The result JSON (malloc'ed) in version; ipam may be NULL. */
char *cni_result_format(const char *version, const struct cni_iface *iface,
                        const struct cni_ipam_result *ipam);

/* {"cniVersion":..., "code":..., "msg":...} (malloc'ed). */
char *cni_error_format(const char *version, const struct cni_error *e);
/* {"cniVersion":..., "supportedVersions":[...]} (malloc'ed). */
char *cni_version_format(const char *version);
