/*
 * hw_stack_depth.c: what straight-line code does to the stack. From a function's start to an address
 * in it, the instructions are decoded one by one; when every one is an instruction this reader
 * knows, none transfers control away (a conditional branch not taken, or a call, which returns,
 * may be passed), and none moves the stack pointer except by a push, a pop, or `sub`/`add rsp,
 * imm`, the stack depth at the address is a fact of the code: no frame pointer, no call-frame
 * information needed. Compiled code keeps the stack depth of every instruction the same on every
 * path (which is what lets call-frame information describe it per address), so the depth along the
 * straight line is the depth.
 *
 * The decoder is deliberately narrow: general-purpose integer instructions, the SSE moves and
 * arithmetic compilers emit for baseline x86_64, hints and fences. VEX-encoded instructions, far
 * transfers, `enter`/`leave`, segment loads and anything else end the decode: "unknown", never
 * guessed.
 *
 * Async-signal-safety checklist: bytes are copied only from published readable ranges
 * (hw_table_copy); no allocation, no locks.
 */
#include <string.h>

#include "hw_internal.h"

#if defined(__x86_64__)

/* At most this many bytes are decoded from a function's start; for how it exits, this many. */
#define HW_STRAIGHT_BYTES 512
#define HW_STUB_BYTES 128

enum { HW_RSP = 4, HW_RBP = 5 };

/* How an instruction transfers control (beside falling through). */
enum { HW_FLOW_NEXT = 0, HW_FLOW_CALL = 1, HW_FLOW_JUMP = 2, HW_FLOW_SLOT_JUMP = 3, HW_FLOW_INDIRECT_JUMP = 4, HW_FLOW_RETURN = 5 };

/* A register an instruction writes: rsp only as the stack rules allow (returns 0: stop); rbp freely
 * once the caller's value is saved (then the frame pointer `mov rbp, rsp` set is gone), otherwise
 * the caller's frame pointer is lost (fp_clobbered). */
static int hw_writes(hw_straight *out, int reg) {
    if (reg == HW_RSP) {
        return 0;
    }
    if (reg == HW_RBP) {
        if (out->fp_pushed) {
            out->fp_set = 0;
        } else {
            out->fp_clobbered = 1;
        }
    }
    return 1;
}

/* The length of a ModRM operand (ModRM, SIB, displacement) at p; *rm_reg the register it names when
 * mod is 3 (-1 for memory). */
static size_t hw_modrm_length(const unsigned char *p, int rex_b, int *rm_reg) {
    const unsigned char modrm = p[0], mod = modrm >> 6, rm = modrm & 7;
    *rm_reg = mod == 3 ? (int)rm + (rex_b ? 8 : 0) : -1;
    if (mod == 3) {
        return 1;
    }
    size_t length = 1;
    if (rm == 4) {
        length += 1; /* SIB */
        if (mod == 0 && (p[1] & 7) == 5) {
            length += 4;
        }
    } else if (mod == 0 && rm == 5) {
        length += 4; /* rip + disp32 */
    }
    return length + (mod == 1 ? 1 : mod == 2 ? 4 : 0);
}

/* Decodes the instruction at p (at least 32 readable bytes), updating *out. Returns its length, or 0
 * when it is not one this reader follows. *flow: how it transfers control (HW_FLOW_*). */
static size_t hw_decode_one(const unsigned char *p, hw_straight *out, int *flow) {
    size_t i = 0;
    int operand16 = 0;
    *flow = HW_FLOW_NEXT;
    for (; i < 4; i++) { /* legacy prefixes */
        const unsigned char b = p[i];
        if (b == 0x66) {
            operand16 = 1;
        } else if (!(b == 0xF2 || b == 0xF3 || b == 0x2E || b == 0x3E || b == 0x26 || b == 0x36 || b == 0x64 ||
                     b == 0x65 || b == 0xF0)) {
            break;
        }
    }
    unsigned char rex = 0;
    if ((p[i] & 0xF0) == 0x40) {
        rex = p[i++];
    }
    const int rex_w = (rex & 8) != 0, rex_r = (rex & 4) != 0, rex_b = (rex & 1) != 0;
    const unsigned char op = p[i++];
    const size_t imm_z = operand16 ? 2 : 4; /* imm16/32 */
    int rm = -1;
    const int reg = (int)((p[i] >> 3) & 7) + (rex_r ? 8 : 0); /* when there is a ModRM */
    if (op != 0x0F) {
        if (op < 0x40 && (op & 7) < 4) { /* ALU r/m, r and r, r/m (add, or, adc, sbb, and, sub, xor, cmp) */
            i += hw_modrm_length(&p[i], rex_b, &rm);
            if (op >= 0x38) {
                return i; /* cmp */
            }
            return hw_writes(out, (op & 2) ? reg : rm) ? i : 0;
        }
        if (op < 0x40 && ((op & 7) == 4 || (op & 7) == 5)) { /* ALU al/eax, imm */
            return i + ((op & 7) == 4 ? 1 : imm_z);
        }
        if (op >= 0x50 && op <= 0x57) { /* push r */
            const int pushed = (op & 7) + (rex_b ? 8 : 0);
            if (pushed == HW_RBP && !out->fp_pushed && !out->fp_clobbered) {
                out->fp_pushed = 1;
                out->fp_slot_depth = out->depth + 8;
            }
            out->depth += 8;
            return i;
        }
        if (op >= 0x58 && op <= 0x5F) { /* pop r */
            const int popped = (op & 7) + (rex_b ? 8 : 0);
            if (out->depth < 8 || popped == HW_RSP) {
                return 0;
            }
            if (popped == HW_RBP) {
                /* Only the caller's frame pointer, from its own slot: rbp is the caller's again. */
                if (!out->fp_pushed || out->depth != out->fp_slot_depth) {
                    return 0;
                }
                out->fp_pushed = 0;
                out->fp_set = 0;
            }
            out->depth -= 8;
            return i;
        }
        switch (op) {
        case 0x63: /* movsxd */
        case 0x8B: case 0x8A: case 0x8D: /* mov r, r/m; lea */
            i += hw_modrm_length(&p[i], rex_b, &rm);
            if (op == 0x8B && rex_w && reg == HW_RBP && rm == HW_RSP && out->fp_pushed) {
                out->fp_set = 1; /* mov rbp, rsp */
                out->fp_depth = out->depth;
                return i;
            }
            return hw_writes(out, reg) ? i : 0;
        case 0x89: case 0x88: /* mov r/m, r */
            i += hw_modrm_length(&p[i], rex_b, &rm);
            if (op == 0x89 && rex_w && reg == HW_RSP && rm == HW_RBP && out->fp_pushed) {
                out->fp_set = 1; /* mov rbp, rsp */
                out->fp_depth = out->depth;
                return i;
            }
            return hw_writes(out, rm) ? i : 0;
        case 0x68: out->depth += 8; return i + 4; /* push imm32 */
        case 0x6A: out->depth += 8; return i + 1; /* push imm8 */
        case 0x69: case 0x6B: /* imul r, r/m, imm */
            i += hw_modrm_length(&p[i], rex_b, &rm);
            return hw_writes(out, reg) ? i + (op == 0x6B ? 1 : imm_z) : 0;
        case 0x80: case 0x81: case 0x83: { /* add, or, adc, sbb, and, sub, xor, cmp r/m, imm */
            const int ext = (p[i] >> 3) & 7;
            i += hw_modrm_length(&p[i], rex_b, &rm);
            const size_t imm = op == 0x81 ? imm_z : 1;
            int32_t value = 0;
            if (op == 0x81 && imm == 4) value = hw_rel32(&p[i]);
            else if (op == 0x83) value = (int8_t)p[i];
            if (rm == HW_RSP && rex_w && (ext == 5 || ext == 0)) {
                const intptr_t change = ext == 5 ? value : -(intptr_t)value;
                if (op == 0x80 || (intptr_t)out->depth + change < 0) {
                    return 0;
                }
                out->depth = (uintptr_t)((intptr_t)out->depth + change);
                return i + imm;
            }
            return ext == 7 || hw_writes(out, rm) ? i + imm : 0;
        }
        case 0x84: case 0x85: /* test */
            return i + hw_modrm_length(&p[i], rex_b, &rm);
        case 0x86: case 0x87: /* xchg */
            i += hw_modrm_length(&p[i], rex_b, &rm);
            return hw_writes(out, reg) && hw_writes(out, rm) ? i : 0;
        case 0x90: return i; /* nop (xchg eax, eax) */
        case 0x98: case 0x99: return i; /* cdqe, cqo */
        case 0xA4: case 0xA5: case 0xA6: case 0xA7: case 0xAA: case 0xAB: case 0xAC: case 0xAD: case 0xAE: case 0xAF:
            return i; /* string instructions: rsi, rdi, rcx, rax */
        case 0xA8: return i + 1;
        case 0xA9: return i + imm_z;
        case 0xC0: case 0xC1: case 0xD0: case 0xD1: case 0xD2: case 0xD3: /* shifts */
            i += hw_modrm_length(&p[i], rex_b, &rm);
            return hw_writes(out, rm) ? i + (op <= 0xC1 ? 1 : 0) : 0;
        case 0xC6: case 0xC7: /* mov r/m, imm */
            i += hw_modrm_length(&p[i], rex_b, &rm);
            return hw_writes(out, rm) ? i + (op == 0xC6 ? 1 : imm_z) : 0;
        case 0xE8: *flow = HW_FLOW_CALL; return i + 4; /* call rel32: returns with the stack as it was */
        case 0xE9: *flow = HW_FLOW_JUMP; out->jump = hw_rel32(&p[i]); return i + 4;
        case 0xEB: *flow = HW_FLOW_JUMP; out->jump = (int8_t)p[i]; return i + 1;
        case 0xC3: *flow = HW_FLOW_RETURN; return i;
        case 0xF6: case 0xF7: { /* test (imm), not, neg, mul, imul, div, idiv */
            const int ext = (p[i] >> 3) & 7;
            i += hw_modrm_length(&p[i], rex_b, &rm);
            if (ext <= 1) {
                return i + (op == 0xF6 ? 1 : imm_z);
            }
            return ext >= 4 || hw_writes(out, rm) ? i : 0; /* mul..idiv write rax, rdx */
        }
        case 0xFE: case 0xFF: { /* inc, dec; call r/m; jmp r/m; push r/m */
            const unsigned char modrm = p[i];
            const int ext = (modrm >> 3) & 7;
            i += hw_modrm_length(&p[i], rex_b, &rm);
            if (ext <= 1) return hw_writes(out, rm) ? i : 0;
            if (op == 0xFF && ext == 2) { *flow = HW_FLOW_CALL; return i; }
            if (op == 0xFF && ext == 6) { out->depth += 8; return i; }
            if (op == 0xFF && ext == 4) { /* through a slot at rip + disp32: where the slot says (a PLT-like jump) */
                *flow = (modrm & 0xC7) == 0x05 ? HW_FLOW_SLOT_JUMP : HW_FLOW_INDIRECT_JUMP;
                out->jump = *flow == HW_FLOW_SLOT_JUMP ? hw_rel32(&p[i - 4]) : 0;
                return i;
            }
            return 0;
        }
        default:
            if (op >= 0x70 && op <= 0x7F) { out->branched = 1; return i + 1; } /* jcc rel8, not taken */
            if (op >= 0x91 && op <= 0x97) return hw_writes(out, (op & 7) + (rex_b ? 8 : 0)) ? i : 0; /* xchg rax, r */
            if (op >= 0xB0 && op <= 0xBF) { /* mov r, imm */
                if (!hw_writes(out, (op & 7) + (rex_b ? 8 : 0))) return 0;
                return i + (op < 0xB8 ? 1 : rex_w ? 8 : imm_z);
            }
            return 0;
        }
    }
    /* Two-byte opcodes (0F xx) and the three-byte maps (0F 38 xx, 0F 3A xx). */
    const unsigned char op2 = p[i++];
    if (op2 == 0x38 || op2 == 0x3A) {
        const unsigned char op3 = p[i++];
        const int reg3 = (int)((p[i] >> 3) & 7) + (rex_r ? 8 : 0);
        i += hw_modrm_length(&p[i], rex_b, &rm);
        if (op2 == 0x38) {
            return op3 == 0xF0 || op3 == 0xF1 || op3 == 0xF6 ? (hw_writes(out, reg3) ? i : 0) : i; /* crc32, movbe, adcx: a register */
        }
        return op3 >= 0x14 && op3 <= 0x17 ? (hw_writes(out, rm) ? i + 1 : 0) : i + 1; /* pextr*: a register */
    }
    if (op2 >= 0x80 && op2 <= 0x8F) { out->branched = 1; return i + 4; } /* jcc rel32, not taken */
    if (op2 >= 0xC8 && op2 <= 0xCF) return hw_writes(out, (op2 & 7) + (rex_b ? 8 : 0)) ? i : 0; /* bswap */
    if (op2 == 0x05) return i; /* syscall: rcx, r11 */
    if (op2 == 0x31 || op2 == 0xA2) return hw_writes(out, 3) ? i : 0; /* rdtsc; cpuid (rbx) */
    const int has_modrm = (op2 >= 0x10 && op2 <= 0x17) || (op2 >= 0x18 && op2 <= 0x1F) || (op2 >= 0x28 && op2 <= 0x2F) ||
                          (op2 >= 0x40 && op2 <= 0x7F && op2 != 0x77) || (op2 >= 0x90 && op2 <= 0x9F) || op2 == 0xA3 || op2 == 0xA4 ||
                          op2 == 0xA5 || op2 == 0xAB || op2 == 0xAC || op2 == 0xAD || op2 == 0xAE || op2 == 0xAF ||
                          (op2 >= 0xB0 && op2 <= 0xC7 && op2 != 0xB2 && op2 != 0xB4 && op2 != 0xB5 && op2 != 0xB9) || (op2 >= 0xD0 && op2 <= 0xFE) || op2 == 0x0D;
    if (!has_modrm) {
        return 0;
    }
    const int reg2 = (int)((p[i] >> 3) & 7) + (rex_r ? 8 : 0), ext2 = (p[i] >> 3) & 7;
    i += hw_modrm_length(&p[i], rex_b, &rm);
    const int imm8 = (op2 >= 0x70 && op2 <= 0x73) || op2 == 0xA4 || op2 == 0xAC || op2 == 0xBA || op2 == 0xC2 ||
                     (op2 >= 0xC4 && op2 <= 0xC6);
    int ok = 1;
    if ((op2 >= 0x40 && op2 <= 0x4F) || op2 == 0xAF || (op2 >= 0xB6 && op2 <= 0xBF && op2 != 0xBA) || op2 == 0x50 ||
        op2 == 0x2C || op2 == 0x2D || op2 == 0xC5 || op2 == 0xD7 || op2 == 0xB8) {
        ok = hw_writes(out, reg2); /* cmov, imul, movzx/movsx, bsf/bsr/popcnt, movmskps, cvt*2si, pextrw, pmovmskb */
    } else if ((op2 >= 0x90 && op2 <= 0x9F) || op2 == 0x7E || op2 == 0xA4 || op2 == 0xA5 || op2 == 0xAB ||
               op2 == 0xAC || op2 == 0xAD || op2 == 0xB3 || op2 == 0xBB || (op2 == 0xBA && ext2 >= 5)) {
        ok = hw_writes(out, rm); /* setcc, movd/movq r/m, shld/shrd, bts/btr/btc */
    } else if (op2 == 0xB0 || op2 == 0xB1 || op2 == 0xC0 || op2 == 0xC1) {
        ok = hw_writes(out, rm) && hw_writes(out, reg2); /* cmpxchg, xadd */
    } else if (op2 == 0xAE && rm >= 0 && ext2 <= 3) {
        ok = hw_writes(out, rm); /* rdfsbase and friends */
    } else if (op2 == 0xC7) {
        ok = rm < 0; /* cmpxchg16b m; rdrand r: stop */
    }
    return ok ? i + (imm8 ? 1 : 0) : 0;
}

/* Copies `length` bytes of code at `start` and 32 more (the decoder may look 15 bytes past an
 * instruction's start), zeros where the readable code ends: an instruction that reaches into them
 * runs past the end and is refused. */
static int hw_copy_code(const hw_table *table, uintptr_t start, size_t length, unsigned char *code) {
    if (hw_table_copy(table, start, code, length + 32)) {
        return 1;
    }
    memset(&code[length], 0, 32);
    return hw_table_copy(table, start, code, length);
}

int hw_straight_line(const hw_table *table, uintptr_t start, uintptr_t end, int after_call, hw_straight *out) {
    memset(out, 0, sizeof(*out));
    unsigned char code[HW_STRAIGHT_BYTES + 32];
    const size_t length = (size_t)(end - start);
    if (end < start || length > HW_STRAIGHT_BYTES || !hw_copy_code(table, start, length, code)) {
        return 0;
    }
    size_t at = 0;
    int flow = HW_FLOW_NEXT;
    while (at < length) {
        const size_t size = hw_decode_one(&code[at], out, &flow);
        if (size == 0 || at + size > length || flow > HW_FLOW_CALL) {
            return 0;
        }
        at += size;
    }
    return (!after_call || flow == HW_FLOW_CALL) && !out->fp_clobbered;
}

int hw_straight_exit(const hw_table *table, uintptr_t start, uintptr_t *target, int *plain) {
    unsigned char code[HW_STUB_BYTES + 32];
    hw_straight state;
    memset(&state, 0, sizeof(state));
    *target = 0;
    *plain = 0;
    int calls = 0, flow = HW_FLOW_NEXT;
    if (!hw_copy_code(table, start, HW_STUB_BYTES, code)) {
        return HW_EXIT_NONE;
    }
    for (size_t at = 0, size = 0; at < HW_STUB_BYTES; at += size) {
        size = hw_decode_one(&code[at], &state, &flow);
        calls += flow == HW_FLOW_CALL;
        if (size == 0 || flow == HW_FLOW_RETURN || (flow >= HW_FLOW_JUMP && (state.depth != 0 || state.fp_pushed || state.fp_clobbered))) {
            return HW_EXIT_NONE;
        }
        if (flow < HW_FLOW_JUMP) {
            continue;
        }
        *plain = !state.branched && calls == 0;
        if (flow == HW_FLOW_INDIRECT_JUMP) {
            return HW_EXIT_INDIRECT;
        }
        *target = start + at + size + (uintptr_t)state.jump;
        return flow == HW_FLOW_JUMP || hw_table_copy(table, *target, target, sizeof(*target)) ? HW_EXIT_JUMP : HW_EXIT_NONE;
    }
    return HW_EXIT_NONE;
}

#elif defined(__aarch64__)

int hw_straight_line(const hw_table *table, uintptr_t start, uintptr_t end, int after_call, hw_straight *out) {
    (void)table; (void)start; (void)end; (void)after_call;
    memset(out, 0, sizeof(*out));
    return 0;
}

int hw_straight_exit(const hw_table *table, uintptr_t start, uintptr_t *target, int *plain) {
    (void)table; (void)start;
    *target = 0;
    *plain = 0;
    return HW_EXIT_NONE;
}

#else
#error "HangWatch capture supports x86_64 and aarch64"
#endif
