/*
 * version.h: the version every graspd program reports (-V, NIP-11,
 * /metrics build_info).
 */
#ifndef GRASPD_VERSION_H
#define GRASPD_VERSION_H

#define GRASPD_VERSION "0.1.0"

#endif
