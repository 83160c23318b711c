#ifndef CLINKMAP_SHIM_H
#define CLINKMAP_SHIM_H
/*
 * The dynamic loader's view of loaded images, for HangWatch's image reader, and a safe copy of the
 * process's own memory for reading images the loader has not finished loading. Header only.
 *
 * glibc declares dl_iterate_phdr() and struct dl_phdr_info only under _GNU_SOURCE, which the
 * Swift C library module is not built with. The struct below is the documented prefix of glibc's
 * (the fields every glibc since 2.3 provides, in order); the callback receives the real struct's
 * size and the reader checks it. The asm label binds the declaration to glibc's symbol. The TLS
 * fields (glibc 2.12 and later) are read only when that size covers them.
 */
#include <elf.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

struct hw_dl_phdr_info {
    Elf64_Addr dlpi_addr;
    const char *dlpi_name;
    const Elf64_Phdr *dlpi_phdr;
    Elf64_Half dlpi_phnum;
    unsigned long long dlpi_adds;
    unsigned long long dlpi_subs;
    size_t dlpi_tls_modid;
    /* The calling thread's block of the image's thread-local storage, or NULL. */
    void *dlpi_tls_data;
};

int hw_dl_iterate_phdr(int (*callback)(struct hw_dl_phdr_info *info, size_t size, void *data), void *data)
    __asm__("dl_iterate_phdr");

/* A copy of this process's memory that fails with EFAULT instead of faulting when the memory is not
 * mapped (an image unloaded while it is read). Also declared only under _GNU_SOURCE. */
ssize_t hw_process_vm_readv(pid_t pid, const struct iovec *local, unsigned long local_count,
                            const struct iovec *remote, unsigned long remote_count, unsigned long flags)
    __asm__("process_vm_readv");

#endif
