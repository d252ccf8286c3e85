// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda tracepoints
 *
 * The events of pagoda_trace.h are defined here, once.
 */

#define CREATE_TRACE_POINTS
#include "pagoda_trace.h"
