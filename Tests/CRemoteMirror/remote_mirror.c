#define _GNU_SOURCE
#include "remote_mirror.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

typedef void *ctx_t;
typedef int (*query_fn)(void *, int, void *, void *);
typedef void (*free_fn)(void *, const void *, void *);
typedef const void *(*read_fn)(void *, uint64_t, uint64_t, void **);
typedef uint64_t (*strlen_fn)(void *, uint64_t);
typedef uint64_t (*sym_fn)(void *, const char *, uint64_t);

static ctx_t (*m_create)(void *, query_fn, free_fn, read_fn, strlen_fn, sym_fn);
static rm_task_info (*m_task_info)(ctx_t, uint64_t);
static rm_actor_info (*m_actor_info)(ctx_t, uint64_t);
static uint64_t (*m_next_job)(ctx_t, uint64_t);
static void (*m_destroy)(ctx_t);
static void *g_library;
static ctx_t g_ctx;
static pid_t g_pid;
static unsigned g_missed;

unsigned rm_symbols_missed(void) { return g_missed; }

static int rm_read(uint64_t address, void *out, size_t size) {
    struct iovec local = {out, size};
    struct iovec remote = {(void *)(uintptr_t)address, size};
    return process_vm_readv(g_pid, &local, 1, &remote, 1, 0) == (ssize_t)size;
}

static int q_layout(void *c, int type, void *in, void *out) {
    (void)c;
    (void)in;
    switch (type) {
    case 0: case 1: *(uint8_t *)out = 8; return 1;  /* pointer size, size_t size */
    case 2: *(uint64_t *)out = ~0ull; return 1;     /* no pointer authentication */
    case 3: *(uint8_t *)out = 0; return 1;          /* no ObjC reserved bits */
    case 4: *(uint64_t *)out = 0x1000; return 1;    /* least valid pointer */
    case 5: *(uint8_t *)out = 0; return 1;          /* no ObjC interop */
    default: return 0;
    }
}

static void r_free(void *c, const void *bytes, void *context) {
    (void)c;
    (void)context;
    free((void *)bytes);
}

static const void *r_read(void *c, uint64_t address, uint64_t size, void **free_context) {
    (void)c;
    if (free_context) *free_context = NULL;
    if (size > (1u << 26)) return NULL;
    void *buffer = malloc(size ? size : 1);
    if (!buffer) return NULL;
    if (size && !rm_read(address, buffer, size)) {
        free(buffer);
        return NULL;
    }
    return buffer;
}

static uint64_t r_strlen(void *c, uint64_t address) {
    (void)c;
    char chunk[256];
    for (uint64_t length = 0; length < (1u << 20);) {
        uint64_t at = address + length;
        size_t n = 4096 - (at & 4095);
        if (n > sizeof(chunk)) n = sizeof(chunk);
        if (!rm_read(at, chunk, n)) return 0;
        char *zero = memchr(chunk, 0, n);
        if (zero) return length + (uint64_t)(zero - chunk);
        length += n;
    }
    return 0;
}

/* The base of the first mapping of `file` in process `pid` (offset 0), or 0. */
static uint64_t base_in(pid_t pid, const char *file) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    FILE *maps = fopen(path, "r");
    if (!maps) return 0;
    char line[4096];
    uint64_t base = 0;
    while (fgets(line, sizeof(line), maps)) {
        unsigned long long start, end, offset;
        char perms[8];
        int consumed = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset, &consumed) < 4 || consumed == 0) continue;
        char *name = line + consumed;
        name[strcspn(name, "\n")] = 0;
        if (offset == 0 && strcmp(name, file) == 0) {
            base = start;
            break;
        }
    }
    fclose(maps);
    return base;
}

static uint64_t r_symbol(void *c, const char *name, uint64_t length) {
    (void)c;
    char symbol[512];
    if (length >= sizeof(symbol)) return 0;
    memcpy(symbol, name, length);
    symbol[length] = 0;
    void *ours = dlsym(RTLD_DEFAULT, symbol);
    Dl_info info;
    if (!ours || !dladdr(ours, &info) || !info.dli_fname || !info.dli_fbase) {
        g_missed++;
        return 0;
    }
    char real[4096];
    const char *file = realpath(info.dli_fname, real) ? real : info.dli_fname;
    uint64_t theirs = base_in(g_pid, file);
    if (!theirs) {
        g_missed++;
        return 0;
    }
    return theirs + ((uint64_t)(uintptr_t)ours - (uint64_t)(uintptr_t)info.dli_fbase);
}

int rm_open(const char *path, pid_t pid, char *error, size_t error_size) {
    g_pid = pid;
    /* A context per process read: it keeps the addresses of the runtime's symbols it looked up. */
    if (g_ctx) {
        m_destroy(g_ctx);
        g_ctx = NULL;
    }
    void *library = g_library ? g_library : dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(error, error_size, "%s", dlerror());
        return 1;
    }
    g_library = library;
#define RM_LOAD(var, name)                                \
    do {                                                  \
        *(void **)&var = dlsym(library, name);            \
        if (!var) {                                       \
            snprintf(error, error_size, "no %s", name);   \
            return 1;                                     \
        }                                                 \
    } while (0)
    RM_LOAD(m_create, "swift_reflection_createReflectionContextWithDataLayout");
    RM_LOAD(m_task_info, "swift_reflection_asyncTaskInfo");
    RM_LOAD(m_actor_info, "swift_reflection_actorInfo");
    RM_LOAD(m_next_job, "swift_reflection_nextJob");
    RM_LOAD(m_destroy, "swift_reflection_destroyReflectionContext");
    g_ctx = m_create(NULL, q_layout, r_free, r_read, r_strlen, r_symbol);
    if (!g_ctx) {
        snprintf(error, error_size, "no reflection context");
        return 1;
    }
    return 0;
}

int rm_task_info_read(uint64_t task, rm_task_info *out) {
    *out = m_task_info(g_ctx, task);
    return out->Error == NULL;
}

int rm_actor_info_read(uint64_t actor, rm_actor_info *out) {
    *out = m_actor_info(g_ctx, actor);
    return out->Error == NULL;
}

uint64_t rm_next_job(uint64_t job) { return m_next_job(g_ctx, job); }
