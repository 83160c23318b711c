/*
 * hw_prologue.c: what a function's first bytes say about its frames: the standard frame-pointer
 * prologue (push rbp; mov rbp, rsp; pushes; sub rsp, n), or Swift's async one (push rbp; push r14;
 * lea rbp, [rsp + 8]; ...), gives its fixed frame size, and the
 * stack-protector store after it the slot that holds the process's canary.
 *
 * Async-signal-safety checklist: bytes are copied only from published readable ranges
 * (hw_table_copy); no allocation, no locks; the canary is read from the thread's own TCB.
 */
#include <string.h>

#include "hw_internal.h"

#if defined(__x86_64__)

int hw_prologue_read(const hw_table *table, uintptr_t function_start, hw_prologue *prologue) {
    memset(prologue, 0, sizeof(*prologue));
    unsigned char p[96];
    if (!hw_table_copy(table, function_start, p, sizeof(p))) {
        return 0;
    }
    size_t i = 0;
    if (p[0] == 0xF3 && p[1] == 0x0F && p[2] == 0x1E && p[3] == 0xFA) {
        i = 4; /* endbr64 */
    }
    static const unsigned char marking[] = {0x48, 0x0F, 0xBA, 0xED, 0x3C}; /* bts rbp, 60: an async frame's mark */
    if (memcmp(&p[i], marking, sizeof(marking)) == 0) {
        i += sizeof(marking);
    }
    if (p[i] != 0x55) {
        return 0; /* push rbp */
    }
    i++;
    uintptr_t size = 0;
    if (p[i] == 0x48 && ((p[i + 1] == 0x89 && p[i + 2] == 0xE5) || (p[i + 1] == 0x8B && p[i + 2] == 0xEC))) {
        i += 3; /* mov rbp, rsp */
    } else if (p[i] == 0x41 && p[i + 1] == 0x56 && p[i + 2] == 0x48 && p[i + 3] == 0x8D && p[i + 4] == 0x6C &&
               p[i + 5] == 0x24 && p[i + 6] == 0x08) {
        i += 7; /* Swift's async frame: push r14 (the async context); lea rbp, [rsp + 8] */
        size = 8;
        prologue->swift_async = 1;
    } else {
        return 0;
    }
    prologue->frame_set = i;
    /* Pushes of callee-saved registers and stack reservations, in any order (Swift's async
     * functions reserve, push, and reserve again). */
    for (;;) {
        if (i + 2 < sizeof(p) && p[i] >= 0x50 && p[i] <= 0x57 && p[i] != 0x54 && p[i] != 0x55) { /* push rax..rdi (not rsp, rbp) */
            size += 8;
            i += 1;
        } else if (i + 2 < sizeof(p) && p[i] == 0x41 && p[i + 1] >= 0x50 && p[i + 1] <= 0x57) { /* push r8..r15 */
            size += 8;
            i += 2;
        } else if (i + 7 <= sizeof(p) && p[i] == 0x48 && p[i + 1] == 0x83 && p[i + 2] == 0xEC) { /* sub rsp, imm8 */
            size += p[i + 3];
            i += 4;
        } else if (i + 7 <= sizeof(p) && p[i] == 0x48 && p[i + 1] == 0x81 && p[i + 2] == 0xEC) { /* sub rsp, imm32 */
            int32_t immediate = hw_rel32(&p[i + 3]);
            if (immediate < 0) {
                return 0;
            }
            size += (uintptr_t)immediate;
            i += 7;
        } else {
            break;
        }
    }
    prologue->frame_size = size;
    /* The stack protector: `mov reg, fs:[0x28]` (64 REX.W 8B modrm=00 reg 100, sib=25, disp32=0x28),
     * then, a few instructions on, `mov [rbp + disp], reg` (REX.W 89 modrm=01|10 reg 101). The entry
     * block does this before anything else that could branch around it. */
    for (size_t j = i; j + 9 <= i + 32 && j + 9 <= sizeof(p); j++) {
        if (!(p[j] == 0x64 && (p[j + 1] == 0x48 || p[j + 1] == 0x4C) && p[j + 2] == 0x8B && (p[j + 3] & 0xC7) == 0x04 &&
              p[j + 4] == 0x25 && p[j + 5] == 0x28 && p[j + 6] == 0 && p[j + 7] == 0 && p[j + 8] == 0)) {
            continue;
        }
        const unsigned char rex_r = p[j + 1] & 0x04, reg = (p[j + 3] >> 3) & 7;
        for (size_t k = j + 9; k + 4 <= j + 9 + 24 && k + 7 <= sizeof(p); k++) {
            if ((p[k] & 0xFB) != 0x48 || (p[k] & 0x04) != rex_r || p[k + 1] != 0x89 || ((p[k + 2] >> 3) & 7) != reg ||
                (p[k + 2] & 7) != 5) {
                continue;
            }
            const unsigned char mod = p[k + 2] >> 6;
            if (mod == 1) {
                prologue->has_canary = 1;
                prologue->canary_offset = (int8_t)p[k + 3];
                prologue->canary_set = k + 4;
            } else if (mod == 2) {
                prologue->has_canary = 1;
                prologue->canary_offset = hw_rel32(&p[k + 3]);
                prologue->canary_set = k + 7;
            }
            break;
        }
        break;
    }
    return 1;
}

uintptr_t hw_stack_guard(void) {
    uintptr_t guard;
    __asm__("mov %%fs:0x28, %0" : "=r"(guard));
    return guard;
}

#elif defined(__aarch64__)

int hw_prologue_read(const hw_table *table, uintptr_t function_start, hw_prologue *prologue) {
    (void)table;
    (void)function_start;
    memset(prologue, 0, sizeof(*prologue));
    return 0;
}

uintptr_t hw_stack_guard(void) {
    return 0;
}

#else
#error "HangWatch capture supports x86_64 and aarch64"
#endif
