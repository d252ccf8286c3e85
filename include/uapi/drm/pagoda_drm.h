/* SPDX-License-Identifier: MIT */
/*
 * Pagoda DRM user-space interface.
 *
 * Include as <uapi/drm/pagoda_drm.h> with the repository's include/ on the
 * include path, from the kernel driver and from user space alike. Like the
 * kernel's own DRM UAPI headers it includes "drm.h": user space gets it from
 * libdrm (-I/usr/include/libdrm), the driver from the kernel's
 * include/uapi/drm (see guest-driver/Kbuild).
 */
#ifndef _PAGODA_DRM_H_
#define _PAGODA_DRM_H_

#include "drm.h"

#if defined(__cplusplus)
extern "C" {
#endif

#define DRM_PAGODA_GET_PARAM		0x00

#define DRM_IOCTL_PAGODA_GET_PARAM	DRM_IOWR(DRM_COMMAND_BASE + DRM_PAGODA_GET_PARAM, \
						 struct drm_pagoda_get_param)

/**
 * enum drm_pagoda_param - values DRM_IOCTL_PAGODA_GET_PARAM reports
 *
 * All are read from the device when the driver binds and do not change
 * while it stays bound.
 *
 * @DRM_PAGODA_PARAM_CHIP_ID: PAGODA_REG_ID (PAGODA_ID on a Pagoda device).
 * @DRM_PAGODA_PARAM_REVISION: PAGODA_REG_REVISION, major << 16 | minor.
 * @DRM_PAGODA_PARAM_CAPS: PAGODA_REG_CAPS, PAGODA_CAPS_* bits.
 * @DRM_PAGODA_PARAM_VRAM_SIZE: CPU-visible VRAM (segment 1) in bytes.
 * @DRM_PAGODA_PARAM_NUM_SEGMENTS: memory segments the device describes.
 * @DRM_PAGODA_PARAM_NUM_ENGINES: engines (rings) the device has.
 * @DRM_PAGODA_PARAM_NUM_CONTEXTS: GPU address-space contexts.
 * @DRM_PAGODA_PARAM_PCI_VENDOR: PCI vendor ID of the device.
 * @DRM_PAGODA_PARAM_PCI_DEVICE: PCI device ID of the device.
 */
enum drm_pagoda_param {
	DRM_PAGODA_PARAM_CHIP_ID = 0,
	DRM_PAGODA_PARAM_REVISION = 1,
	DRM_PAGODA_PARAM_CAPS = 2,
	DRM_PAGODA_PARAM_VRAM_SIZE = 3,
	DRM_PAGODA_PARAM_NUM_SEGMENTS = 4,
	DRM_PAGODA_PARAM_NUM_ENGINES = 5,
	DRM_PAGODA_PARAM_NUM_CONTEXTS = 6,
	DRM_PAGODA_PARAM_PCI_VENDOR = 7,
	DRM_PAGODA_PARAM_PCI_DEVICE = 8,
};

/**
 * struct drm_pagoda_get_param - argument of DRM_IOCTL_PAGODA_GET_PARAM
 * @param: in, one of enum drm_pagoda_param. Others fail with EINVAL.
 * @pad: in, must be zero (EINVAL otherwise).
 * @value: out, the parameter's value.
 */
struct drm_pagoda_get_param {
	__u32 param;
	__u32 pad;
	__u64 value;
};

#if defined(__cplusplus)
}
#endif

#endif /* _PAGODA_DRM_H_ */
