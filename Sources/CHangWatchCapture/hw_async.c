/*
 * hw_async.c: the async callers of a Swift async function on the stack.
 *
 * An async function's callers are not on the thread's stack: Swift calls and returns between async
 * functions with tail calls, so the stack holds only the partial function running now, called by
 * the concurrency runtime's job loop. Its callers live in a chain of async contexts in the heap:
 * the function keeps its own context in its frame (x86_64: `push rbp; push r14; lea rbp, [rsp+8]`
 * stores the context register r14 just below the saved frame pointer), and each context holds its
 * caller's context (word 0) and the caller's resume function (word 1, a partial function's entry).
 *
 * The chain is read for the innermost frame that (1) is called from the concurrency runtime (its
 * return address lies in the runtime's code) and (2) starts with the async frame prologue (x86_64;
 * aarch64 keeps the context below its frame record too, but hw_prologue.c does not read aarch64
 * prologues yet, so no chain is read there and stacks end at the runtime's frames, as before). Its
 * return-address slot is found on the stack; the context sits two words below. Each context is read
 * with process_vm_readv on this process (a bad pointer fails with EFAULT instead of faulting), and
 * must be 16-byte aligned (the runtime's MaximumAlignment); the 4 KiB around a context are read at
 * once, so a chain costs about one system call per slab, not one per caller. The reader's resume addresses are raw:
 * the Swift side keeps only those that are exactly a function's start in the unwind tables.
 *
 * Async-signal-safety checklist: static memory only (no allocation, no locks, no stdio); code
 * bytes are copied only from published readable ranges; stack words only between the given
 * bounds; heap words only through the process_vm_readv system call.
 */
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hw_internal.h"

static _Atomic uintptr_t g_runtime_start;
static _Atomic uintptr_t g_runtime_end;

void hw_async_runtime_set(uintptr_t start, uintptr_t end) {
    atomic_store(&g_runtime_start, 0);
    atomic_store(&g_runtime_end, end);
    atomic_store(&g_runtime_start, start);
}

/* This process's memory read through the kernel: a bad address fails with EFAULT, never faults. */
int hw_checked_read(uintptr_t address, void *out, size_t size) {
    struct iovec local = {out, size};
    struct iovec remote = {(void *)address, size};
    return syscall(SYS_process_vm_readv, (long)getpid(), &local, 1L, &remote, 1L, 0L) == (long)size;
}

/* The last 4 KiB window read: an async task's contexts sit together in its allocator's slab, so
 * most parents are served from the window of their child instead of another system call. A window
 * never crosses a 4 KiB boundary (if one byte of it is mapped, all of it is). */
typedef struct hw_async_window {
    uintptr_t base;
    size_t size;
    unsigned char bytes[4096];
} hw_async_window;

/* Two words at `address`, or 0 when they are not mapped readable. */
static int hw_async_read_pair(hw_async_window *window, uintptr_t address, uintptr_t pair[2]) {
    const size_t need = 2 * sizeof(uintptr_t);
    if (window->size == 0 || address < window->base || address - window->base > window->size - need) {
        const uintptr_t page = address & ~(uintptr_t)4095;
        if (address - page > 4096 - need) {
            return hw_checked_read(address, pair, need); /* straddles two windows */
        }
        window->size = 0;
        if (!hw_checked_read(page, window->bytes, sizeof(window->bytes))) {
            return 0;
        }
        window->base = page;
        window->size = sizeof(window->bytes);
    }
    memcpy(pair, &window->bytes[address - window->base], need);
    return 1;
}

int hw_async_chain_read(const uintptr_t *frames, int count, uintptr_t sp, uintptr_t stack_high, hw_async_chain *out) {
    out->after = -1;
    out->count = 0;
    out->first_context = 0;
    out->last_context = 0;
    out->status = HW_ASYNC_NONE;
    const uintptr_t runtime_start = atomic_load(&g_runtime_start), runtime_end = atomic_load(&g_runtime_end);
    if (runtime_start == 0 || count < 2 || sp == 0 || sp >= stack_high || (sp & 7) != 0) {
        return 0;
    }
    hw_walk_begin();
    const hw_table *table = hw_table_active();
    int frame = -1;
    for (int i = 0; i + 1 < count && frame < 0; i++) {
        const uintptr_t caller = frames[i + 1];
        if (caller < runtime_start || caller >= runtime_end) {
            continue;
        }
        const uintptr_t start = hw_table_function_start(table, i == 0 ? frames[0] : frames[i] - 1);
        hw_prologue prologue;
        if (start != 0 && hw_prologue_read(table, start, &prologue) && prologue.swift_async) {
            frame = i;
        }
    }
    hw_walk_end();
    if (frame < 0) {
        return 0;
    }
    out->after = frame;
    /* The frame's return-address slot: the first stack word above sp that holds its return address
     * and sits above the two words the prologue pushed. At most 64 KiB of stack are searched. */
    const uintptr_t wanted = frames[frame + 1];
    uintptr_t slot = 0;
    const uintptr_t *word = (const uintptr_t *)(sp + 16);
    const uintptr_t *limit = (const uintptr_t *)(stack_high - sizeof(uintptr_t));
    for (int n = 0; word <= limit && n < 8192 && slot == 0; word++, n++) {
        if (*word == wanted) {
            slot = (uintptr_t)word;
        }
    }
    if (slot == 0) {
        out->status = HW_ASYNC_UNREADABLE;
        return 0;
    }
    uintptr_t context = *(const uintptr_t *)(slot - 16);
    hw_async_window window;
    window.size = 0;
    while (out->count < HW_MAX_ASYNC_FRAMES) {
        uintptr_t pair[2];
        if (context == 0 || (context & 15) != 0) {
            out->status = HW_ASYNC_INVALID;
            return out->count;
        }
        if (!hw_async_read_pair(&window, context, pair)) {
            out->status = HW_ASYNC_UNREADABLE;
            return out->count;
        }
        if (pair[1] == 0) {
            out->status = HW_ASYNC_INVALID;
            return out->count;
        }
        if (out->count == 0) {
            out->first_context = context;
        }
        out->last_context = context;
        out->resume[out->count++] = pair[1];
        if (pair[0] == 0) {
            out->status = HW_ASYNC_COMPLETE; /* the task's first context: no caller */
            return out->count;
        }
        if (pair[0] == context) {
            out->status = HW_ASYNC_INVALID;
            return out->count;
        }
        context = pair[0];
    }
    out->status = HW_ASYNC_LIMIT;
    return out->count;
}
