#ifndef CLIBDW_SHIM_H
#define CLIBDW_SHIM_H
#include <elfutils/libdwfl.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <dwarf.h>
#endif
