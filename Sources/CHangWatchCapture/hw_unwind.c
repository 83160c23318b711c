/*
 * hw_unwind.c: walk a stack with libunwind, from a signal handler or from the watchdog thread.
 *
 * Async-signal-safety checklist for everything reachable from hw_unwind_walk():
 *   - No malloc, no free: the table and the sessions are static arrays; frames go to the caller.
 *   - No locks of our own: the unwind table is a double buffer flipped with one atomic store and
 *     guarded by an atomic count of walks in flight; sessions are claimed with compare-and-swap.
 *   - No stdio, no logging, no errno left changed (the signal handler saves and restores errno).
 *   - libunwind: unw_init_local2, unw_step and unw_get_reg are documented async-signal-safe for
 *     local unwinding; the locks inside libunwind are taken with every signal blocked, so the
 *     thread holding one can never be interrupted by our signal. The one unsafe part of libunwind's
 *     local unwinder is its lookup of unwind tables with dl_iterate_phdr(): it takes the loader's
 *     lock, which the interrupted thread may be holding (inside dl_iterate_phdr, or in a C++
 *     unwinder's callback under it) - a self-deadlock. libunwind 1.6 has no hook for that lookup
 *     (its local unwinder ignores the find_proc_info accessor), but it consults its list of
 *     dynamically registered unwind tables first: every published segment is registered there
 *     (hw_images_publish), and libunwind is only ever asked to step from an address our table
 *     covers (hw_unwind_info_covers), so its dl_iterate_phdr path is never reached.
 *   - Every memory read libunwind makes on our behalf is range-checked first (target stack, the
 *     signal context, the loaded images' segments): a corrupt frame pointer ends the walk with a
 *     truncated stack instead of a fault.
 *   - memset/memcpy are on POSIX's async-signal-safe list.
 *   - The functions that read stack words for the unwinder are HW_READS_FOREIGN_STACK
 *     (hw_internal.h): AddressSanitizer does not check those reads, everything else it does.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#include "CHangWatchCapture.h"
#include "hw_internal.h"

/* Exported by libunwind (libunwind-ptrace uses it) though not declared in its public headers. */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t *di,
                                              unw_proc_info_t *pi, int need_unwind_info, void *arg);

/* ---- the published table ------------------------------------------------------------------ */

typedef struct hw_table {
    size_t segment_count;
    size_t range_count;
    hw_unwind_segment segments[HW_MAX_SEGMENTS];
    hw_address_range ranges[HW_MAX_RANGES];
} hw_table;

static hw_table g_tables[2];
static _Atomic int g_active_table;
/* The same segments, registered with libunwind as dynamic unwind tables (one list per table). */
static unw_dyn_info_t g_dynamic[2][HW_MAX_SEGMENTS];
static size_t g_dynamic_count[2];
static pthread_mutex_t g_publish_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int g_walks_in_flight;
/* Bumped on every publication: rules cached for addresses of the previous table are stale. */
static _Atomic uint32_t g_table_epoch = 1;

static void hw_dynamic_info_fill(unw_dyn_info_t *di, const hw_unwind_segment *segment) {
    memset(di, 0, sizeof(*di));
    di->start_ip = segment->start;
    di->end_ip = segment->end;
    di->gp = segment->gp;
    di->format = UNW_INFO_FORMAT_REMOTE_TABLE;
    di->u.rti.name_ptr = 0;
    di->u.rti.segbase = segment->eh_frame_hdr;
    di->u.rti.table_data = segment->table_data;
    di->u.rti.table_len = segment->table_words;
}

int hw_images_publish(const hw_unwind_segment *segments, size_t segment_count,
                      const hw_address_range *ranges, size_t range_count) {
    if (segment_count > HW_MAX_SEGMENTS || range_count > HW_MAX_RANGES) {
        return E2BIG;
    }
    pthread_mutex_lock(&g_publish_lock);
    if (atomic_load(&g_walks_in_flight) != 0) {
        pthread_mutex_unlock(&g_publish_lock);
        return EAGAIN;
    }
    int idle = 1 - atomic_load(&g_active_table);
    hw_table *table = &g_tables[idle];
    memcpy(table->segments, segments, segment_count * sizeof(hw_unwind_segment));
    memcpy(table->ranges, ranges, range_count * sizeof(hw_address_range));
    table->segment_count = segment_count;
    table->range_count = range_count;
    /* Register the new segments before the old ones go: a lookup always finds one of them. */
    for (size_t i = 0; i < segment_count; i++) {
        hw_dynamic_info_fill(&g_dynamic[idle][i], &segments[i]);
        _U_dyn_register(&g_dynamic[idle][i]);
    }
    g_dynamic_count[idle] = segment_count;
    atomic_store(&g_active_table, idle);
    const int retired = 1 - idle;
    for (size_t i = 0; i < g_dynamic_count[retired]; i++) {
        _U_dyn_cancel(&g_dynamic[retired][i]);
    }
    g_dynamic_count[retired] = 0;
    /* Cached unwind rules are keyed by address; an unloaded image's addresses may be reused. */
    atomic_fetch_add(&g_table_epoch, 1);
    unw_flush_cache(unw_local_addr_space, 0, 0);
    pthread_mutex_unlock(&g_publish_lock);
    return 0;
}

static const hw_unwind_segment *hw_find_segment(const hw_table *table, uintptr_t ip) {
    size_t low = 0, high = table->segment_count;
    while (low < high) {
        size_t mid = low + (high - low) / 2;
        const hw_unwind_segment *s = &table->segments[mid];
        if (ip < s->start) {
            high = mid;
        } else if (ip >= s->end) {
            low = mid + 1;
        } else {
            return s;
        }
    }
    return NULL;
}

static int hw_in_ranges(const hw_table *table, uintptr_t start, uintptr_t end) {
    size_t low = 0, high = table->range_count;
    while (low < high) {
        size_t mid = low + (high - low) / 2;
        const hw_address_range *r = &table->ranges[mid];
        if (start < r->start) {
            high = mid;
        } else if (start >= r->end) {
            low = mid + 1;
        } else {
            return end <= r->end;
        }
    }
    return 0;
}

/* ---- sessions: which walk a libunwind callback belongs to --------------------------------- */

/* libunwind hands our accessors the context pointer given to unw_init_local2 as `arg` (its low
 * bit carries libunwind's own "validate" flag). A session maps that pointer to the read limits of
 * its walk. Callbacks for contexts we do not know (the host's own libunwind use) go to libunwind's
 * original accessors untouched. */
#define HW_SESSIONS 8
#define HW_SESSION_RESERVED ((uintptr_t)1)

typedef struct hw_session {
    _Atomic uintptr_t key;
    uintptr_t stack_low;
    uintptr_t stack_high;
    uintptr_t context_low;
    uintptr_t context_high;
    const hw_table *table;
    int rejected_reads;
} hw_session;

static hw_session g_sessions[HW_SESSIONS];
static unw_accessors_t g_original_accessors;
static _Atomic int g_prepared;
static pthread_once_t g_prepare_once = PTHREAD_ONCE_INIT;

static hw_session *hw_session_claim(uintptr_t key) {
    (void)key;
    for (int i = 0; i < HW_SESSIONS; i++) {
        uintptr_t expected = 0;
        if (atomic_compare_exchange_strong(&g_sessions[i].key, &expected, HW_SESSION_RESERVED)) {
            return &g_sessions[i];
        }
    }
    return NULL;
}

static hw_session *hw_session_for(void *arg) {
    uintptr_t key = (uintptr_t)arg & ~(uintptr_t)1;
    if (key == 0) {
        return NULL;
    }
    for (int i = 0; i < HW_SESSIONS; i++) {
        if (atomic_load_explicit(&g_sessions[i].key, memory_order_acquire) == key) {
            return &g_sessions[i];
        }
    }
    return NULL;
}

static int hw_session_may_read(hw_session *s, uintptr_t address) {
    if (address > UINTPTR_MAX - sizeof(unw_word_t)) {
        return 0;
    }
    uintptr_t end = address + sizeof(unw_word_t);
    if (address >= s->stack_low && end <= s->stack_high) {
        return 1;
    }
    if (address >= s->context_low && end <= s->context_high) {
        return 1;
    }
    return hw_in_ranges(s->table, address, end);
}

/* ---- the accessors that replace libunwind's defaults -------------------------------------- */

int hw_unwind_info_covers(uintptr_t lookup_ip, void *arg) {
    const hw_table *table = &g_tables[atomic_load(&g_active_table)];
    const hw_unwind_segment *segment = hw_find_segment(table, lookup_ip);
    if (segment == NULL) {
        return 0;
    }
    unw_dyn_info_t di;
    hw_dynamic_info_fill(&di, segment);
    unw_proc_info_t info;
    memset(&info, 0, sizeof(info));
    /* The search libunwind's dynamic lookup makes, without the unwind information (no allocation). */
    return UNW_OBJ(dwarf_search_unwind_table)(unw_local_addr_space, lookup_ip, &di, &info, 0, arg) == 0;
}

HW_READS_FOREIGN_STACK
static int hw_access_mem(unw_addr_space_t as, unw_word_t address, unw_word_t *value, int write,
                         void *arg) {
    hw_session *s = hw_session_for(arg);
    if (s == NULL) {
        return g_original_accessors.access_mem(as, address, value, write, arg);
    }
    if (write) {
        return -UNW_EREADONLYREG;
    }
    if (!hw_session_may_read(s, (uintptr_t)address)) {
        s->rejected_reads++;
        return -UNW_EINVAL;
    }
    memcpy(value, (const void *)(uintptr_t)address, sizeof(*value));
    return 0;
}

static void hw_prepare_once(void) {
    unw_accessors_t *accessors = unw_get_accessors(unw_local_addr_space);
    if (accessors == NULL) {
        return;
    }
    g_original_accessors = *accessors;
    /* A word-sized store; a walk in flight on another thread sees either pointer, both work. (The
     * find_proc_info accessor is not patched: libunwind's local unwinder never calls it.) */
    accessors->access_mem = hw_access_mem;
    atomic_store(&g_prepared, 1);
}

int hw_unwind_prepare(void) {
    pthread_once(&g_prepare_once, hw_prepare_once);
    return atomic_load(&g_prepared) ? 0 : ENOTSUP;
}

/* ---- registers in a context ---------------------------------------------------------------- */

uintptr_t hw_context_pc(const ucontext_t *uc) {
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.pc;
#else
#error "HangWatch capture supports x86_64 and aarch64"
#endif
}

uintptr_t hw_context_sp(const ucontext_t *uc) {
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.sp;
#endif
}

uintptr_t hw_context_fp(const ucontext_t *uc) {
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.regs[29];
#endif
}

void hw_context_set(ucontext_t *uc, uintptr_t pc, uintptr_t sp, uintptr_t fp) {
#if defined(__x86_64__)
    uc->uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
    uc->uc_mcontext.gregs[REG_RSP] = (greg_t)sp;
    uc->uc_mcontext.gregs[REG_RBP] = (greg_t)fp;
#elif defined(__aarch64__)
    uc->uc_mcontext.pc = pc;
    uc->uc_mcontext.sp = sp;
    uc->uc_mcontext.regs[29] = fp;
#endif
}

int64_t hw_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- the walk ------------------------------------------------------------------------------- */

void *hw_session_open(const ucontext_t *uc, size_t uc_size, uintptr_t stack_low, uintptr_t stack_high) {
    hw_session *s = hw_session_claim((uintptr_t)uc);
    if (s == NULL) {
        return NULL;
    }
    s->stack_low = stack_low;
    s->stack_high = stack_high;
    s->context_low = (uintptr_t)uc;
    s->context_high = (uintptr_t)uc + uc_size;
    s->table = &g_tables[atomic_load(&g_active_table)];
    s->rejected_reads = 0;
    atomic_store_explicit(&s->key, (uintptr_t)uc, memory_order_release);
    return s;
}

int hw_session_close(void *session) {
    hw_session *s = session;
    const int rejected = s->rejected_reads;
    atomic_store_explicit(&s->key, 0, memory_order_release);
    return rejected;
}

HW_READS_FOREIGN_STACK
int hw_session_read(void *session, uintptr_t address, uintptr_t *value) {
    hw_session *s = session;
    if (!hw_session_may_read(s, address)) {
        s->rejected_reads++;
        return 0;
    }
    memcpy(value, (const void *)address, sizeof(*value));
    return 1;
}

/* libunwind's own loop: unw_step until the end, an error, the cap or a stack pointer that does not
 * go up. Appends to frames[*count]. */
static void hw_libunwind_steps(ucontext_t *uc, int signal_frame, uintptr_t *frames, int *count, int max_frames,
                               int32_t *flags, uintptr_t *last_sp) {
    unw_cursor_t cursor;
    if (unw_init_local2(&cursor, (unw_context_t *)uc, signal_frame ? UNW_INIT_SIGNAL_FRAME : 0) < 0) {
        if (*count == 0) {
            frames[(*count)++] = hw_context_pc(uc);
        }
        *flags |= HW_UNWIND_INIT_FAILED;
        return;
    }
    unw_word_t previous_sp = 0, previous_ip = 0;
    int first = 1;
    for (;;) {
        unw_word_t ip = 0, sp = 0;
        if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || unw_get_reg(&cursor, UNW_REG_SP, &sp) < 0) {
            *flags |= HW_UNWIND_ERROR;
            return;
        }
        if (ip == 0) {
            *flags |= HW_UNWIND_END_OF_STACK;
            return;
        }
        if (!first && (sp < previous_sp || (sp == previous_sp && ip == previous_ip))) {
            *flags |= HW_UNWIND_NO_PROGRESS;
            return;
        }
        const int exact = first && signal_frame;
        first = 0;
        frames[(*count)++] = (uintptr_t)ip;
        *last_sp = (uintptr_t)sp;
        previous_sp = sp;
        previous_ip = ip;
        if (*count >= max_frames) {
            *flags |= HW_UNWIND_TRUNCATED;
            return;
        }
        /* Outside our table libunwind would look the address up with dl_iterate_phdr: stop here. */
        if (!hw_unwind_info_covers((uintptr_t)(exact ? ip : ip - 1), uc)) {
            *flags |= HW_UNWIND_ERROR;
            return;
        }
        int step = unw_step(&cursor);
        if (step == 0) {
            *flags |= HW_UNWIND_END_OF_STACK;
            return;
        }
        if (step < 0) {
            *flags |= HW_UNWIND_ERROR;
            return;
        }
    }
}

int hw_libunwind_walk(ucontext_t *uc, size_t uc_size, int signal_frame, uintptr_t stack_low, uintptr_t stack_high,
                      uintptr_t *frames, int *count, int max_frames, int32_t *flags, uintptr_t *last_sp) {
    void *session = hw_session_open(uc, uc_size, stack_low, stack_high);
    if (session == NULL) {
        *flags |= HW_UNWIND_BUSY;
        return -1;
    }
    hw_libunwind_steps(uc, signal_frame, frames, count, max_frames, flags, last_sp);
    if (hw_session_close(session) > 0) {
        *flags |= HW_UNWIND_READS_REJECTED;
    }
    return 0;
}

int hw_unwind_walk(ucontext_t *uc, size_t uc_size, uintptr_t stack_low, uintptr_t stack_high,
                   uintptr_t *frames, int max_frames, int32_t *flags, uintptr_t *last_sp) {
    *flags = 0;
    *last_sp = hw_context_sp(uc);
    if (max_frames > HW_MAX_FRAMES) {
        max_frames = HW_MAX_FRAMES;
    }
    if (max_frames <= 0) {
        return 0;
    }
    int count = 0;
    atomic_fetch_add(&g_walks_in_flight, 1);
    if (!atomic_load(&g_prepared)) {
        frames[count++] = hw_context_pc(uc);
        *flags = HW_UNWIND_BUSY;
    } else if (hw_rules_walk(uc, uc_size, stack_low, stack_high, frames, &count, max_frames, flags, last_sp) != 0) {
        /* No fast walk on this architecture, or no session free: libunwind's own loop. */
        if (hw_libunwind_walk(uc, uc_size, 1, stack_low, stack_high, frames, &count, max_frames, flags, last_sp) != 0) {
            frames[count++] = hw_context_pc(uc);
        }
    }
    atomic_fetch_sub(&g_walks_in_flight, 1);
    return count;
}

uint32_t hw_images_epoch(void) {
    return (uint32_t)atomic_load(&g_table_epoch);
}

/* ---- blocked threads ------------------------------------------------------------------------ */

/* Whether the bytes before `return_address` look like a call instruction. */
static int hw_follows_call(const hw_table *table, uintptr_t return_address) {
#if defined(__x86_64__)
    if (return_address < 7 || !hw_in_ranges(table, return_address - 7, return_address)) {
        return 0;
    }
    const unsigned char *p = (const unsigned char *)return_address;
    if (p[-5] == 0xE8) {
        return 1; /* call rel32 */
    }
    /* call r/m64 is FF /2: the ModRM reg field is 2. */
    if (p[-2] == 0xFF && (p[-1] & 0xF8) == 0xD0) {
        return 1; /* call reg */
    }
    if (p[-3] == 0xFF && (p[-2] & 0x38) == 0x10) {
        return 1; /* call [reg+disp8] */
    }
    if (p[-6] == 0xFF && (p[-5] & 0x38) == 0x10) {
        return 1; /* call [rip+disp32] / [reg+disp32] */
    }
    if (p[-7] == 0xFF && (p[-6] & 0x38) == 0x10) {
        return 1; /* call [reg+sib+disp32] */
    }
    return 0;
#elif defined(__aarch64__)
    if (return_address < 4 || !hw_in_ranges(table, return_address - 4, return_address)) {
        return 0;
    }
    uint32_t insn;
    memcpy(&insn, (const void *)(return_address - 4), sizeof(insn));
    return (insn & 0xFC000000u) == 0x94000000u /* bl */ || (insn & 0xFFFFFC1Fu) == 0xD63F0000u /* blr */;
#endif
}

int hw_is_return_address(uintptr_t address) {
    const hw_table *table = &g_tables[atomic_load(&g_active_table)];
    return hw_find_segment(table, address) != NULL && hw_follows_call(table, address);
}

/* First address at or above `sp` that looks like a frame record: {saved frame pointer, return
 * address}, where the return address follows a call in a known image and the saved frame pointer
 * is zero or points further up the same stack. */
HW_READS_FOREIGN_STACK
static uintptr_t hw_scan_for_frame_record(uintptr_t sp, uintptr_t stack_high) {
    const hw_table *table = &g_tables[atomic_load(&g_active_table)];
    const uintptr_t limit = sp + 64 * 1024;
    for (uintptr_t a = (sp + 7) & ~(uintptr_t)7; a + 2 * sizeof(uintptr_t) <= stack_high && a < limit;
         a += sizeof(uintptr_t)) {
        uintptr_t saved_fp, return_address;
        memcpy(&saved_fp, (const void *)a, sizeof(saved_fp));
        memcpy(&return_address, (const void *)(a + sizeof(uintptr_t)), sizeof(return_address));
        if (hw_find_segment(table, return_address) == NULL || !hw_follows_call(table, return_address)) {
            continue;
        }
        if (saved_fp == 0 || (saved_fp > a && saved_fp < stack_high)) {
            return a;
        }
    }
    return 0;
}

int hw_unwind_blocked_thread(uintptr_t sp, uintptr_t pc, uintptr_t stack_low, uintptr_t stack_high,
                             uintptr_t *frames, int max_frames, int32_t *flags) {
    *flags = 0;
    if (sp == 0 || pc == 0 || sp >= stack_high || max_frames <= 0) {
        *flags = HW_UNWIND_INIT_FAILED;
        return 0;
    }
    if (max_frames > HW_MAX_FRAMES) {
        max_frames = HW_MAX_FRAMES;
    }
    /* The frame pointer register is not in /proc/<tid>/syscall. Walk without it first: C library
     * system-call wrappers describe their frames relative to the stack pointer, so the walk gets
     * at least to the first caller that keeps a frame pointer. */
    ucontext_t uc;
    memset(&uc, 0, sizeof(uc));
    hw_context_set(&uc, pc, sp, 0);
    uintptr_t last_sp = sp;
    const uintptr_t floor = hw_stack_floor(sp, stack_low);
    int count = hw_unwind_walk(&uc, sizeof(uc), floor, stack_high, frames, max_frames, flags, &last_sp);
    if ((*flags & (HW_UNWIND_END_OF_STACK | HW_UNWIND_TRUNCATED)) != 0) {
        return count;
    }
    /* Stopped early: that frame's rule needed the frame pointer. Find its frame record by
     * scanning up from its stack pointer, then walk again with it. */
    uintptr_t record = hw_scan_for_frame_record(last_sp, stack_high);
    if (record == 0) {
        return count;
    }
    uintptr_t retry[HW_MAX_FRAMES];
    int32_t retry_flags = 0;
    memset(&uc, 0, sizeof(uc));
    hw_context_set(&uc, pc, sp, record);
    int retry_count = hw_unwind_walk(&uc, sizeof(uc), floor, stack_high, retry, max_frames, &retry_flags, &last_sp);
    if (retry_count > count) {
        memcpy(frames, retry, (size_t)retry_count * sizeof(uintptr_t));
        *flags = retry_flags | HW_UNWIND_HEURISTIC_FP;
        return retry_count;
    }
    return count;
}
