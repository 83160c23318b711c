/*
 * The shapes (see include/CStackShapes.h). Every function but `shape_u` and `shape_u_other_caller`'s
 * callee has call-frame information (.cfi_*), as compiled code does; `shape_u` has none, as ~7 in
 * 20 functions of the Swift runtime and Foundation libraries. The outermost frames (`shape_outer*`)
 * say so the way `_start` does: their return address is undefined.
 *
 * Each test's stack, innermost first: shape_leaf (blocked at shape_pc) <- a function F whose rule
 * needs the frame pointer <- F's caller <- an outer frame. The callers differ in how their call
 * reaches F.
 */
#include "CStackShapes.h"

#include <string.h>

#if defined(__x86_64__)

#define SHAPE(name) ".globl " #name "\n.hidden " #name "\n" #name ":\n"
#define FRAME_ENTRY "push %rbp\n.cfi_def_cfa_offset 16\n.cfi_offset %rbp, -16\nmov %rsp, %rbp\n.cfi_def_cfa_register %rbp\n"
#define FRAME_EXIT "pop %rbp\n.cfi_def_cfa %rsp, 8\nret\n"
#define OUTER(name, callee) \
    ".p2align 4\n" SHAPE(name) ".cfi_startproc\n.cfi_undefined %rip\n" FRAME_ENTRY "call " #callee "\n" SHAPE(name##_ret) FRAME_EXIT ".cfi_endproc\n"

__asm__(
    ".text\n"
    /* The blocked frame: a frameless leaf (CFA = rsp + 8), blocked at shape_pc. */
    ".p2align 4\n" SHAPE(shape_leaf) ".cfi_startproc\nnop\n" SHAPE(shape_pc) "ret\n.cfi_endproc\n"

    /* F: push rbp; mov rbp, rsp; sub rsp, 16; call the leaf. Its frame record is at sp + 16. */
    ".p2align 4\n" SHAPE(shape_f) ".cfi_startproc\n" FRAME_ENTRY "sub $16, %rsp\ncall shape_leaf\n" SHAPE(shape_f_ret)
    "add $16, %rsp\n" FRAME_EXIT ".cfi_endproc\n"

    /* llhttp's callback dispatcher: a tail call through a function pointer (pop rbp; jmp *%rax). */
    ".p2align 4\n" SHAPE(shape_dispatch) ".cfi_startproc\n" FRAME_ENTRY "mov %rdi, %rax\npop %rbp\n.cfi_def_cfa %rsp, 8\njmp *%rax\n.cfi_endproc\n"
    ".p2align 4\n" SHAPE(shape_dispatch_caller) ".cfi_startproc\n" FRAME_ENTRY "lea shape_f(%rip), %rdi\ncall shape_dispatch\n"
    SHAPE(shape_dispatch_caller_ret) FRAME_EXIT ".cfi_endproc\n"
    OUTER(shape_outer_dispatch, shape_dispatch_caller)

    /* A switch inside a frame: an indirect jump with the frame still there (no tail call). */
    ".p2align 4\n" SHAPE(shape_switch) ".cfi_startproc\n" FRAME_ENTRY "mov %rdi, %rax\njmp *%rax\n.cfi_endproc\n"
    ".p2align 4\n" SHAPE(shape_switch_caller) ".cfi_startproc\n" FRAME_ENTRY "lea shape_f(%rip), %rdi\ncall shape_switch\n"
    SHAPE(shape_switch_caller_ret) FRAME_EXIT ".cfi_endproc\n"
    OUTER(shape_outer_switch, shape_switch_caller)

    /* A merged function's thunk: push rbp; mov rbp, rsp; pop rbp; jmp rel8 to G (F's twin, right
     * after it: a jump to a local label is short); and a thunk that jumps to another function (H). */
    ".p2align 4\n" SHAPE(shape_thunk) ".cfi_startproc\n" FRAME_ENTRY "pop %rbp\n.cfi_def_cfa %rsp, 8\njmp .Lshape_g\n.cfi_endproc\n"
    ".p2align 4\n" SHAPE(shape_g) ".Lshape_g:\n.cfi_startproc\n" FRAME_ENTRY "sub $16, %rsp\ncall shape_leaf\n" SHAPE(shape_g_ret)
    "add $16, %rsp\n" FRAME_EXIT ".cfi_endproc\n"
    ".p2align 4\n" SHAPE(shape_thunk_caller) ".cfi_startproc\n" FRAME_ENTRY "call shape_thunk\n" SHAPE(shape_thunk_caller_ret)
    FRAME_EXIT ".cfi_endproc\n"
    OUTER(shape_outer_thunk, shape_thunk_caller)
    ".p2align 4\n" SHAPE(shape_thunk_h) ".cfi_startproc\n" FRAME_ENTRY "pop %rbp\n.cfi_def_cfa %rsp, 8\njmp shape_h\n.cfi_endproc\n"
    ".p2align 4\n" SHAPE(shape_h) ".cfi_startproc\nret\n.cfi_endproc\n"
    ".p2align 4\n" SHAPE(shape_thunk_h_caller) ".cfi_startproc\n" FRAME_ENTRY "call shape_thunk_h\n"
    SHAPE(shape_thunk_h_caller_ret) FRAME_EXIT ".cfi_endproc\n"
    OUTER(shape_outer_thunk_h, shape_thunk_h_caller)

    /* U: no call-frame information, no frame pointer: push rax; call the leaf; pop rcx; ret.
     * FU calls it (and has a fixed frame); another function calls U too. */
    ".p2align 4\n" SHAPE(shape_u) "push %rax\ncall shape_leaf\n" SHAPE(shape_u_ret) "pop %rcx\nret\n"
    ".p2align 4\n" SHAPE(shape_fu) ".cfi_startproc\n" FRAME_ENTRY "sub $16, %rsp\ncall shape_u\n" SHAPE(shape_fu_ret)
    "add $16, %rsp\n" FRAME_EXIT ".cfi_endproc\n"
    ".p2align 4\n" SHAPE(shape_u_other_caller) ".cfi_startproc\n" FRAME_ENTRY "call shape_u\n" SHAPE(shape_u_other_caller_ret)
    FRAME_EXIT ".cfi_endproc\n"
    ".p2align 4\n" SHAPE(shape_fu_caller) ".cfi_startproc\n" FRAME_ENTRY "call shape_fu\n" SHAPE(shape_fu_caller_ret)
    FRAME_EXIT ".cfi_endproc\n"
    OUTER(shape_outer_fu, shape_fu_caller)

    /* Z: no fixed frame (push rbp; mov rbp, rsp; call the leaf), called through a function pointer. */
    ".p2align 4\n" SHAPE(shape_z) ".cfi_startproc\n" FRAME_ENTRY "call shape_leaf\n" SHAPE(shape_z_ret) FRAME_EXIT ".cfi_endproc\n"
    ".p2align 4\n" SHAPE(shape_z_caller) ".cfi_startproc\n" FRAME_ENTRY "lea shape_z(%rip), %rax\ncall *%rax\n"
    SHAPE(shape_z_caller_ret) FRAME_EXIT ".cfi_endproc\n"
    OUTER(shape_outer_z, shape_z_caller)

    /* D: its frame allocated at run time (sub rsp, rdi) before the call: no straight-line depth.
     * Two callers call it directly. */
    ".p2align 4\n" SHAPE(shape_d) ".cfi_startproc\n" FRAME_ENTRY "sub %rdi, %rsp\ncall shape_leaf\n" SHAPE(shape_d_ret)
    "mov %rbp, %rsp\n" FRAME_EXIT ".cfi_endproc\n"
    ".p2align 4\n" SHAPE(shape_d_caller) ".cfi_startproc\n" FRAME_ENTRY "call shape_d\n" SHAPE(shape_d_caller_ret) FRAME_EXIT
    ".cfi_endproc\n"
    OUTER(shape_outer_d, shape_d_caller)
    ".p2align 4\n" SHAPE(shape_d_other_caller) ".cfi_startproc\n" FRAME_ENTRY "call shape_d\n" SHAPE(shape_d_other_caller_ret)
    FRAME_EXIT ".cfi_endproc\n"
    OUTER(shape_outer_d_other, shape_d_other_caller)

    /* W: a wrapper without call-frame information that sets an argument and tail-jumps on
     * (`DispatchTime.now()`: xor edi, edi; xor esi, esi; jmp dispatch_time@plt), which its caller
     * reaches through a stub (a PLT slot: jmp *slot(%rip)) placed after it, as another image's would be. */
    ".p2align 4\n" SHAPE(shape_w) "xor %edi, %edi\njmp shape_h\n"
    ".p2align 4\n" SHAPE(shape_w_stub) "jmp *.Lshape_w_slot(%rip)\n"
    ".p2align 4\n" SHAPE(shape_w_caller) ".cfi_startproc\n" FRAME_ENTRY "call shape_w_stub\n" SHAPE(shape_w_caller_ret)
    FRAME_EXIT ".cfi_endproc\n"
    OUTER(shape_outer_w, shape_w_caller)
    ".section .data.rel.ro,\"aw\"\n.p2align 3\n.Lshape_w_slot:\n.quad shape_w\n.text\n"
);

#define LABELS(X) \
    X(shape_pc) X(shape_f) X(shape_f_ret) X(shape_dispatch_caller_ret) X(shape_outer_dispatch_ret) X(shape_switch_caller_ret) \
    X(shape_outer_switch_ret) X(shape_g) X(shape_g_ret) X(shape_thunk_caller_ret) X(shape_outer_thunk_ret) \
    X(shape_thunk_h_caller_ret) X(shape_outer_thunk_h_ret) X(shape_u) X(shape_u_ret) X(shape_fu_ret) \
    X(shape_u_other_caller_ret) X(shape_fu_caller_ret) X(shape_outer_fu_ret) X(shape_z_ret) X(shape_z_caller_ret) \
    X(shape_outer_z_ret) X(shape_d_ret) X(shape_d_caller_ret) X(shape_outer_d_ret) X(shape_d_other_caller_ret) \
    X(shape_outer_d_other_ret) X(shape_w) X(shape_w_caller_ret) X(shape_outer_w_ret)

#define DECLARE(name) extern void name(void) __attribute__((visibility("hidden")));
LABELS(DECLARE)

uintptr_t shape_address(const char *name) {
#define LOOKUP(label) if (strcmp(name, #label) == 0) return (uintptr_t)&label;
    LABELS(LOOKUP)
    return 0;
}

#else

uintptr_t shape_address(const char *name) {
    (void)name;
    return 0;
}

#endif
