/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Pagoda tracepoints: allocations, their moves, kernel jobs, address
 * spaces (binds, page tables, root resizes) and render jobs.
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

TRACE_EVENT(pagoda_vm_bind,
	TP_PROTO(const void *vm, u32 op, u32 flags, u64 va, u64 size, int ret),
	TP_ARGS(vm, op, flags, va, size, ret),
	TP_STRUCT__entry(
		__field(const void *, vm)
		__field(u32, op)
		__field(u32, flags)
		__field(u64, va)
		__field(u64, size)
		__field(int, ret)
	),
	TP_fast_assign(
		__entry->vm = vm;
		__entry->op = op;
		__entry->flags = flags;
		__entry->va = va;
		__entry->size = size;
		__entry->ret = ret;
	),
	TP_printk("vm=%p op=%u flags=0x%x va=0x%llx size=0x%llx ret=%d", __entry->vm,
		  __entry->op, __entry->flags, __entry->va, __entry->size, __entry->ret)
);

TRACE_EVENT(pagoda_pt_alloc,
	TP_PROTO(const void *vm, u32 level, u64 addr),
	TP_ARGS(vm, level, addr),
	TP_STRUCT__entry(
		__field(const void *, vm)
		__field(u32, level)
		__field(u64, addr)
	),
	TP_fast_assign(
		__entry->vm = vm;
		__entry->level = level;
		__entry->addr = addr;
	),
	TP_printk("vm=%p level=%u table=0x%llx", __entry->vm, __entry->level, __entry->addr)
);

TRACE_EVENT(pagoda_pt_root_resize,
	TP_PROTO(const void *vm, u32 from, u32 to),
	TP_ARGS(vm, from, to),
	TP_STRUCT__entry(
		__field(const void *, vm)
		__field(u32, from)
		__field(u32, to)
	),
	TP_fast_assign(
		__entry->vm = vm;
		__entry->from = from;
		__entry->to = to;
	),
	TP_printk("vm=%p root entries %u -> %u", __entry->vm, __entry->from, __entry->to)
);

TRACE_EVENT(pagoda_render_submit,
	TP_PROTO(const void *vm, u32 ctx, u64 va, u32 size),
	TP_ARGS(vm, ctx, va, size),
	TP_STRUCT__entry(
		__field(const void *, vm)
		__field(u32, ctx)
		__field(u64, va)
		__field(u32, size)
	),
	TP_fast_assign(
		__entry->vm = vm;
		__entry->ctx = ctx;
		__entry->va = va;
		__entry->size = size;
	),
	TP_printk("vm=%p ctx=%u va=0x%llx size=%u", __entry->vm, __entry->ctx, __entry->va,
		  __entry->size)
);

TRACE_EVENT(pagoda_phys_portion,
	TP_PROTO(u32 ctx, u32 portion, u32 start, u32 end),
	TP_ARGS(ctx, portion, start, end),
	TP_STRUCT__entry(
		__field(u32, ctx)
		__field(u32, portion)
		__field(u32, start)
		__field(u32, end)
	),
	TP_fast_assign(
		__entry->ctx = ctx;
		__entry->portion = portion;
		__entry->start = start;
		__entry->end = end;
	),
	TP_printk("ctx=%u portion=%u bytes=[0x%x, 0x%x)", __entry->ctx, __entry->portion,
		  __entry->start, __entry->end)
);

TRACE_EVENT(pagoda_render_run,
	TP_PROTO(u32 ctx, u32 slot, u64 seqno),
	TP_ARGS(ctx, slot, seqno),
	TP_STRUCT__entry(
		__field(u32, ctx)
		__field(u32, slot)
		__field(u64, seqno)
	),
	TP_fast_assign(
		__entry->ctx = ctx;
		__entry->slot = slot;
		__entry->seqno = seqno;
	),
	TP_printk("ctx=%u slot=%u seqno=%llu", __entry->ctx, __entry->slot, __entry->seqno)
);

#endif /* PAGODA_TRACE_H */

/* This part must be outside the include guard. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE pagoda_trace
#include <trace/define_trace.h>
