/*
 * CStackShapes: machine code of exact, known shapes for the blocked-thread walk's tests
 * (BlockedWalkShapeTests): a dispatcher that tail-calls through a function pointer, a merged
 * function's thunk that jumps on with a short jump, a function without call-frame information that
 * keeps no frame pointer, a function with no fixed frame called through a function pointer, one
 * that allocates its frame at run time. Written in assembly so that no compiler changes them; the
 * tests build stacks by hand from their return addresses. x86_64 only (elsewhere: none, 0s).
 */
#ifndef CSTACKSHAPES_H
#define CSTACKSHAPES_H

#include <stdint.h>

/* The addresses of the shapes' labels, by name (shape_pc, shape_f_ret, ...); 0 when unknown. */
uintptr_t shape_address(const char *name);

#endif
