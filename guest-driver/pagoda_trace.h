/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Pagoda tracepoints: allocations, their moves, and kernel jobs.
 * Enable with: echo 1 > /sys/kernel/tracing/events/pagoda/enable
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM pagoda

#if !defined(PAGODA_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define PAGODA_TRACE_H

#include <linux/tracepoint.h>
#include <linux/types.h>

TRACE_EVENT(pagoda_bo_create,
	TP_PROTO(const void *bo, u64 size, u32 segments, u32 flags, u32 priority),
	TP_ARGS(bo, size, segments, flags, priority),
	TP_STRUCT__entry(
		__field(const void *, bo)
		__field(u64, size)
		__field(u32, segments)
		__field(u32, flags)
		__field(u32, priority)
	),
	TP_fast_assign(
		__entry->bo = bo;
		__entry->size = size;
		__entry->segments = segments;
		__entry->flags = flags;
		__entry->priority = priority;
	),
	TP_printk("bo=%p size=%llu segments=0x%x flags=0x%x priority=%u",
		  __entry->bo, __entry->size, __entry->segments, __entry->flags,
		  __entry->priority)
);

TRACE_EVENT(pagoda_bo_move,
	TP_PROTO(const void *bo, u32 from, u32 to, u64 size, bool evict, bool clear),
	TP_ARGS(bo, from, to, size, evict, clear),
	TP_STRUCT__entry(
		__field(const void *, bo)
		__field(u32, from)
		__field(u32, to)
		__field(u64, size)
		__field(bool, evict)
		__field(bool, clear)
	),
	TP_fast_assign(
		__entry->bo = bo;
		__entry->from = from;
		__entry->to = to;
		__entry->size = size;
		__entry->evict = evict;
		__entry->clear = clear;
	),
	TP_printk("bo=%p segment %u -> %u size=%llu%s%s", __entry->bo, __entry->from,
		  __entry->to, __entry->size, __entry->evict ? " evict" : "",
		  __entry->clear ? " clear" : "")
);

DECLARE_EVENT_CLASS(pagoda_job,
	TP_PROTO(unsigned int engine, u64 seqno, u32 bytes),
	TP_ARGS(engine, seqno, bytes),
	TP_STRUCT__entry(
		__field(unsigned int, engine)
		__field(u64, seqno)
		__field(u32, bytes)
	),
	TP_fast_assign(
		__entry->engine = engine;
		__entry->seqno = seqno;
		__entry->bytes = bytes;
	),
	TP_printk("engine=%u seqno=%llu bytes=%u", __entry->engine, __entry->seqno,
		  __entry->bytes)
);

DEFINE_EVENT(pagoda_job, pagoda_job_submit,
	TP_PROTO(unsigned int engine, u64 seqno, u32 bytes),
	TP_ARGS(engine, seqno, bytes)
);

DEFINE_EVENT(pagoda_job, pagoda_job_retire,
	TP_PROTO(unsigned int engine, u64 seqno, u32 bytes),
	TP_ARGS(engine, seqno, bytes)
);

#endif /* PAGODA_TRACE_H */

/* This part must be outside the include guard. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE pagoda_trace
#include <trace/define_trace.h>
