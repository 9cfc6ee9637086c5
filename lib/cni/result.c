/* SPDX-License-Identifier: Apache-2.0 */
#include "cni/result.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "util/macro.h"

void cni_ipam_result_done(struct cni_ipam_result *r)
{
        if (r && r->dns) {
                json_decref(r->dns);
                r->dns = NULL;
        }
}

/* "10.1.1.2/24" (prefix required) or "10.1.1.1" (prefix_ret NULL). */
static int parse_addr(const char *s, int *family, uint8_t addr[16], int *prefix_ret)
{
        char buf[INET6_ADDRSTRLEN + 8];
        if (!s || strlen(s) >= sizeof(buf))
                return -EINVAL;
        strcpy(buf, s);
        char *slash = strchr(buf, '/');
        if (!!slash != !!prefix_ret)
                return -EINVAL;
        if (slash)
                *slash = '\0';
        if (inet_pton(AF_INET, buf, addr) == 1)
                *family = AF_INET;
        else if (inet_pton(AF_INET6, buf, addr) == 1)
                *family = AF_INET6;
        else
                return -EINVAL;
        if (slash) {
                char *end;
                long p = strtol(slash + 1, &end, 10);
                if (*end || end == slash + 1 || p < 0 || p > (*family == AF_INET ? 32 : 128))
                        return -EINVAL;
                *prefix_ret = (int)p;
        }
        return 0;
}

static const char *str_member(json_t *o, const char *key)
{
        json_t *v = json_object_get(o, key);
        return json_is_string(v) ? json_string_value(v) : NULL;
}

static int add_ip(struct cni_ipam_result *r, json_t *o, const char *addr_key, struct cni_error *e)
{
        const char *a = str_member(o, addr_key), *gw = str_member(o, "gateway");
        if (r->n_ips >= CNI_MAX_IPS)
                return cni_fail(e, CNI_ERR_GENERIC, -E2BIG, "IPAM result has too many IPs");
        struct cni_ip *ip = &r->ips[r->n_ips];
        if (parse_addr(a, &ip->family, ip->addr, &ip->prefix) < 0)
                return cni_fail(e, CNI_ERR_GENERIC, -EBADMSG,
                                "IPAM result: \"%s\" is \"%s\": not an address/prefix", addr_key,
                                a ? a : "");
        if (gw && *gw) {
                int fam;
                if (parse_addr(gw, &fam, ip->gw, NULL) < 0 || fam != ip->family)
                        return cni_fail(e, CNI_ERR_GENERIC, -EBADMSG,
                                        "IPAM result: gateway \"%s\" is not an address of the IP's "
                                        "family",
                                        gw);
                ip->has_gw = true;
        }
        r->n_ips++;
        return 0;
}

/* An optional non-negative integer member of a route, at most max; *present tells. */
static int route_uint(json_t *o, const char *key, json_int_t max, bool *present, uint32_t *ret,
                      struct cni_error *e)
{
        json_t *v = json_object_get(o, key);
        *present = v && !json_is_null(v);
        if (!*present)
                return 0;
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max)
                return cni_fail(e, CNI_ERR_GENERIC, -EBADMSG,
                                "IPAM result: route %s is not an integer in 0-%lld", key,
                                (long long)max);
        *ret = (uint32_t)json_integer_value(v);
        return 0;
}

static int add_routes(struct cni_ipam_result *r, json_t *routes, struct cni_error *e)
{
        if (!routes || json_is_null(routes))
                return 0;
        if (!json_is_array(routes))
                return cni_fail(e, CNI_ERR_GENERIC, -EBADMSG, "IPAM result: routes is not a list");
        size_t i;
        json_t *o;
        json_array_foreach(routes, i, o)
        {
                if (r->n_routes >= CNI_MAX_ROUTES)
                        return cni_fail(e, CNI_ERR_GENERIC, -E2BIG,
                                        "IPAM result has too many routes");
                struct cni_route *rt = &r->routes[r->n_routes];
                const char *dst = str_member(o, "dst"), *gw = str_member(o, "gw");
                if (parse_addr(dst, &rt->family, rt->dst, &rt->dst_len) < 0)
                        return cni_fail(e, CNI_ERR_GENERIC, -EBADMSG,
                                        "IPAM result: route dst \"%s\" is not an address/prefix",
                                        dst ? dst : "");
                if (gw && *gw) {
                        int fam;
                        if (parse_addr(gw, &fam, rt->gw, NULL) < 0 || fam != rt->family)
                                return cni_fail(e, CNI_ERR_GENERIC, -EBADMSG,
                                                "IPAM result: route gw \"%s\" is invalid", gw);
                        rt->has_gw = true;
                }
                bool present;
                uint32_t scope = 0;
                int err;
                if ((err = route_uint(o, "mtu", UINT32_MAX, &present, &rt->mtu, e)) < 0 ||
                    (err = route_uint(o, "advmss", UINT32_MAX, &present, &rt->advmss, e)) < 0 ||
                    (err = route_uint(o, "priority", UINT32_MAX, &present, &rt->priority, e)) < 0 ||
                    (err = route_uint(o, "table", UINT32_MAX, &rt->has_table, &rt->table, e)) < 0 ||
                    (err = route_uint(o, "scope", UINT8_MAX, &rt->has_scope, &scope, e)) < 0)
                        return err;
                rt->scope = (uint8_t)scope;
                r->n_routes++;
        }
        return 0;
}

int cni_ipam_result_parse(const char *text, size_t len, struct cni_ipam_result *ret,
                          struct cni_error *e)
{
        json_error_t jerr;
        json_auto_t *o = json_loadb(text ? text : "", text ? len : 0, 0, &jerr);
        struct cni_ipam_result r = { .n_ips = 0 };
        int err;
        if (!json_is_object(o))
                return cni_fail(e, CNI_ERR_GENERIC, -EBADMSG, "IPAM result is not a JSON object");
        json_t *ips = json_object_get(o, "ips");
        if (ips && !json_is_null(ips)) {
                if (!json_is_array(ips))
                        return cni_fail(e, CNI_ERR_GENERIC, -EBADMSG,
                                        "IPAM result: ips is not a list");
                size_t i;
                json_t *ip;
                json_array_foreach(ips, i,
                                   ip) if ((err = add_ip(&r, ip, "address", e)) < 0) return err;
                if ((err = add_routes(&r, json_object_get(o, "routes"), e)) < 0)
                        return err;
        } else {
                /* 0.1.0 / 0.2.0 */
                static const char *const keys[] = { "ip4", "ip6" };
                for (size_t k = 0; k < 2; k++) {
                        json_t *ip = json_object_get(o, keys[k]);
                        if (!json_is_object(ip))
                                continue;
                        if ((err = add_ip(&r, ip, "ip", e)) < 0 ||
                            (err = add_routes(&r, json_object_get(ip, "routes"), e)) < 0)
                                return err;
                }
        }
        if (r.n_ips == 0)
                return cni_fail(e, CNI_ERR_GENERIC, -ENODATA,
                                "IPAM plugin returned missing IP config");
        json_t *dns = json_object_get(o, "dns");
        if (json_is_object(dns))
                r.dns = json_incref(dns);
        *ret = r;
        return 0;
}

static json_t *addr_string(int family, const uint8_t *addr, int prefix)
{
        char a[INET6_ADDRSTRLEN], buf[INET6_ADDRSTRLEN + 16];
        if (!inet_ntop(family, addr, a, sizeof(a)))
                return json_null();
        if (prefix >= 0)
                snprintf(buf, sizeof(buf), "%s/%d", a, prefix & 0xff);
        else
                snprintf(buf, sizeof(buf), "%s", a);
        return json_string(buf);
}

static json_t *route_list(const struct cni_ipam_result *ipam, int family)
{
        json_t *a = json_array();
        for (size_t i = 0; i < ipam->n_routes; i++) {
                const struct cni_route *rt = &ipam->routes[i];
                if (family && rt->family != family)
                        continue;
                json_t *o = json_object();
                json_object_set_new(o, "dst", addr_string(rt->family, rt->dst, rt->dst_len));
                if (rt->has_gw)
                        json_object_set_new(o, "gw", addr_string(rt->family, rt->gw, -1));
                if (rt->mtu)
                        json_object_set_new(o, "mtu", json_integer(rt->mtu));
                if (rt->advmss)
                        json_object_set_new(o, "advmss", json_integer(rt->advmss));
                if (rt->priority)
                        json_object_set_new(o, "priority", json_integer(rt->priority));
                if (rt->has_table)
                        json_object_set_new(o, "table", json_integer(rt->table));
                if (rt->has_scope)
                        json_object_set_new(o, "scope", json_integer(rt->scope));
                json_array_append_new(a, o);
        }
        return a;
}

static char *dump(json_t *o)
{
        char *s = o ? json_dumps(o, JSON_INDENT(4) | JSON_PRESERVE_ORDER) : NULL;
        json_decref(o);
        return s;
}

char *cni_result_format(const char *version, const struct cni_iface *iface,
                        const struct cni_ipam_result *ipam)
{
        json_t *o = json_object();
        json_object_set_new(o, "cniVersion", json_string(version));
        if (cni_version_compare(version, "0.3.0") < 0) {
                /* 0.1.0/0.2.0 have no interfaces: only the first IP of each family */
                for (size_t i = 0; ipam && i < ipam->n_ips; i++) {
                        const struct cni_ip *ip = &ipam->ips[i];
                        const char *key = ip->family == AF_INET ? "ip4" : "ip6";
                        if (json_object_get(o, key))
                                continue;
                        json_t *v = json_object();
                        json_object_set_new(v, "ip", addr_string(ip->family, ip->addr, ip->prefix));
                        if (ip->has_gw)
                                json_object_set_new(v, "gateway",
                                                    addr_string(ip->family, ip->gw, -1));
                        json_object_set_new(v, "routes", route_list(ipam, ip->family));
                        json_object_set_new(o, key, v);
                }
                if (ipam && ipam->dns)
                        json_object_set(o, "dns", ipam->dns);
                return dump(o);
        }
        json_t *ifc = json_object();
        json_object_set_new(ifc, "name", json_string(iface->name));
        if (iface->mac && *iface->mac)
                json_object_set_new(ifc, "mac", json_string(iface->mac));
        /* 0.3.x/0.4.0 interfaces have no mtu (libcni's 040 Interface drops it converting) */
        if (iface->mtu > 0 && cni_version_compare(version, "1.0.0") >= 0)
                json_object_set_new(ifc, "mtu", json_integer(iface->mtu));
        json_object_set_new(ifc, "sandbox", json_string(iface->sandbox));
        json_object_set_new(o, "interfaces", json_pack("[o]", ifc));
        if (ipam) {
                bool old = cni_version_compare(version, "1.0.0") < 0;
                json_t *ips = json_array();
                for (size_t i = 0; i < ipam->n_ips; i++) {
                        const struct cni_ip *ip = &ipam->ips[i];
                        json_t *v = json_object();
                        if (old)
                                json_object_set_new(v, "version",
                                                    json_string(ip->family == AF_INET ? "4" : "6"));
                        json_object_set_new(v, "interface", json_integer(0));
                        json_object_set_new(v, "address",
                                            addr_string(ip->family, ip->addr, ip->prefix));
                        if (ip->has_gw)
                                json_object_set_new(v, "gateway",
                                                    addr_string(ip->family, ip->gw, -1));
                        json_array_append_new(ips, v);
                }
                json_object_set_new(o, "ips", ips);
                if (ipam->n_routes)
                        json_object_set_new(o, "routes", route_list(ipam, 0));
                json_object_set_new(o, "dns", ipam->dns ? json_incref(ipam->dns) : json_object());
        } else {
                json_object_set_new(o, "dns", json_object());
        }
        return dump(o);
}

char *cni_error_format(const char *version, const struct cni_error *e)
{
        return dump(json_pack("{s:s, s:i, s:s}", "cniVersion",
                              version && *version ? version : "1.0.0", "code",
                              e->code ? e->code : CNI_ERR_GENERIC, "msg", e->msg));
}

char *cni_version_format(const char *version)
{
        json_t *v = json_array();
        for (size_t i = 0; cni_supported_versions[i]; i++)
                json_array_append_new(v, json_string(cni_supported_versions[i]));
        return dump(json_pack("{s:s, s:o}", "cniVersion", version && *version ? version : "1.1.0",
                              "supportedVersions", v));
}
