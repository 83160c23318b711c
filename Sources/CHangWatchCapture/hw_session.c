/*
 * hw_session.c: checked memory reads for one walk, and the libunwind accessor that makes libunwind's
 * own reads checked too.
 *
 * libunwind hands our accessor the context pointer given to unw_init_local2 as `arg` (its low bit
 * carries libunwind's own "validate" flag). A session maps that pointer to the read limits of its
 * walk: the target's stack, the context itself, the published image ranges. Reads for contexts we
 * do not know (the host's own libunwind use) go to libunwind's original accessor untouched.
 *
 * Async-signal-safety checklist: sessions are a static array claimed with compare-and-swap; a read
 * is a range check and a memcpy; nothing allocates, locks or logs. hw_unwind_prepare is the one
 * exception (pthread_once), called at install time, never from the handler.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hw_internal.h"

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
    return hw_table_readable(s->table, address, end);
}

void *hw_session_open(const void *key, size_t key_size, uintptr_t stack_low, uintptr_t stack_high) {
    for (int i = 0; i < HW_SESSIONS; i++) {
        uintptr_t expected = 0;
        if (!atomic_compare_exchange_strong(&g_sessions[i].key, &expected, HW_SESSION_RESERVED)) {
            continue;
        }
        hw_session *s = &g_sessions[i];
        s->stack_low = stack_low;
        s->stack_high = stack_high;
        s->context_low = (uintptr_t)key;
        s->context_high = (uintptr_t)key + key_size;
        s->table = hw_table_active();
        s->rejected_reads = 0;
        atomic_store_explicit(&s->key, (uintptr_t)key, memory_order_release);
        return s;
    }
    return NULL;
}

int hw_session_close(void *session) {
    hw_session *s = session;
    const int rejected = s->rejected_reads;
    atomic_store_explicit(&s->key, 0, memory_order_release);
    return rejected;
}

void *hw_session_key(void *session) {
    return (void *)atomic_load_explicit(&((hw_session *)session)->key, memory_order_relaxed);
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

/* ---- the accessor that replaces libunwind's default ----------------------------------------------- */

HW_READS_FOREIGN_STACK
static int hw_access_mem(unw_addr_space_t as, unw_word_t address, unw_word_t *value, int write, void *arg) {
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

int hw_unwind_prepared(void) {
    return atomic_load(&g_prepared);
}

/* ---- registers in a context -------------------------------------------------------------------- */

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

int hw_context_cut_call_short(const ucontext_t *uc) {
    /* The kernel hands a handler the interrupted call's context with the program counter past the
     * system-call instruction and the result register set to -EINTR (calls it restarts itself, under
     * SA_RESTART, are rewound to the instruction instead and lose nothing). The register test comes
     * first: it rules out almost every capture without a read. */
#if defined(__x86_64__)
    if (uc->uc_mcontext.gregs[REG_RAX] != -EINTR) {
        return 0;
    }
    unsigned char instruction[2];
    const uintptr_t pc = hw_context_pc(uc);
    return pc >= 2 && hw_checked_read(pc - 2, instruction, sizeof(instruction)) && instruction[0] == 0x0f &&
           instruction[1] == 0x05; /* syscall */
#elif defined(__aarch64__)
    if ((int64_t)uc->uc_mcontext.regs[0] != -EINTR) {
        return 0;
    }
    uint32_t instruction = 0;
    const uintptr_t pc = hw_context_pc(uc);
    return pc >= 4 && hw_checked_read(pc - 4, &instruction, sizeof(instruction)) && instruction == 0xd4000001u; /* svc #0 */
#endif
}

pid_t hw_gettid(void) {
    return (pid_t)syscall(SYS_gettid);
}

int64_t hw_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
