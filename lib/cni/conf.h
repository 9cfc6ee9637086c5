/* SPDX-License-Identifier: Apache-2.0 */
/* The `sriov` CNI plugin's network configuration: parsing and validation (pure).
 *
 * Accepts every field upstream sriov-cni accepts (k8snetworkplumbingwg/sriov-cni
 * pkg/types/types.go, validated as pkg/config/config.go LoadConf does) and ignores unknown
 * ones. Keys are read as Go's encoding/json reads them: in any letter case, the last of
 * duplicates winning; no cniVersion means 0.1.0; name is required. The MAC requested for the VF
 * follows upstream's precedence: runtimeConfig.mac, then CNI_ARGS `MAC=`, then the config's `mac`;
 * it is lower-cased. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CNI error codes (CNI spec, "Error" section); 999 is what upstream's plugins use for
 * everything their own code fails at. */
enum {
        CNI_ERR_INCOMPATIBLE_VERSION = 1,
        CNI_ERR_UNSUPPORTED_FIELD = 2,
        CNI_ERR_INVALID_ENV = 4,
        CNI_ERR_DECODE = 6,
        CNI_ERR_INVALID_CONFIG = 7,
        CNI_ERR_TRY_LATER = 11,
        CNI_ERR_GENERIC = 999,
};

struct cni_error {
        int code;
        char msg[512];
};

/* Fills e and returns -EINVAL (or the given negative errno), for `return cni_fail(...)`. */
int cni_fail(struct cni_error *e, int code, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define CNI_VERSION_MAX 16

struct cni_conf {
        json_t *root; /* the parsed stdin object (owned) */
        char cni_version[CNI_VERSION_MAX];
        char name[256];
        char device_id[32];
        bool has_vlan;
        int vlan;            /* 0..4094 */
        int qos;             /* 0..7; 0 when vlan is set without vlanQoS */
        uint16_t vlan_proto; /* ETH_P_8021Q/AD when vlan is set */
        int spoofchk;        /* -1 unset, 0 off, 1 on */
        int trust;           /* -1 unset, 0 off, 1 on */
        int link_state;      /* -1 unset, else IFLA_VF_LINK_STATE_* */
        bool has_min_tx, has_max_tx;
        uint32_t min_tx_rate, max_tx_rate; /* Mbps */
        bool has_mac;
        uint8_t mac[6];      /* after runtimeConfig > CNI_ARGS > config precedence */
        char mac_str[18];    /* lower-case text of mac */
        char ipam_type[256]; /* "" without ipam */
};

void cni_conf_done(struct cni_conf *c);

/* Parses stdin (data, len) and CNI_ARGS (args, may be NULL). On failure fills e (code 6 for
 * text that is not a JSON object, 7 for a bad field, naming it) and returns a negative errno.
 * Does not look at the host: deviceID is only checked to be a PCI address. */
int cni_conf_parse(const char *data, size_t len, const char *args, struct cni_conf *ret,
                   struct cni_error *e);

/* CNI versions this plugin speaks, oldest first (what VERSION prints). */
extern const char *const cni_supported_versions[];
bool cni_version_supported(const char *v);
/* <0, 0, >0 as strcmp, comparing "a.b.c" numerically; unparsable text sorts first. */
int cni_version_compare(const char *a, const char *b);

/* "aa:bb:cc:dd:ee:ff" (either case) -> bytes; -EINVAL otherwise. */
int cni_parse_mac(const char *s, uint8_t mac[6]);
void cni_format_mac(const uint8_t mac[6], char out[18]);
/* A link-layer address of any length (20 bytes on IPoIB) as upstream's Go net.HardwareAddr
 * prints it: lower-case hex pairs joined by ':'; "" for none. */
#define CNI_HWADDR_STR_MAX (32 * 3)
void cni_format_hwaddr(const uint8_t *addr, size_t len, char out[static CNI_HWADDR_STR_MAX]);
