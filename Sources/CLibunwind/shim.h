#ifndef CLIBUNWIND_SHIM_H
#define CLIBUNWIND_SHIM_H
/* HangWatch uses libunwind's local unwinder only (libunwind.so, the _UL* symbols). */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif
