/*
 * The toolchain's libswiftRemoteMirror, loaded with dlopen, reading another process's memory
 * through its callbacks (process_vm_readv): the oracle of the task dump's tests (TaskOracleTests).
 * Test code only. The structs are Swift 6.3.1's swift_async_task_info_t and swift_actor_info_t as
 * the 6.3.1 library returns them (read in its code: 0x60 and 0x20 bytes).
 */
#ifndef REMOTE_MIRROR_H
#define REMOTE_MIRROR_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct rm_task_info {
    const char *Error;
    unsigned Kind;
    unsigned EnqueuePriority;
    bool IsChildTask, IsFuture, IsGroupChildTask, IsAsyncLetTask, IsSynchronousStartTask;
    unsigned MaxPriority;
    bool IsCancelled, IsStatusRecordLocked, IsEscalated, HasIsRunning, IsRunning, IsEnqueued, HasThreadPort;
    uint32_t ThreadPort;
    uint64_t Id;
    uint64_t RunJob;
    uint64_t AllocatorSlabPtr;
    unsigned ChildTaskCount;
    uint64_t *ChildTasks;
    unsigned AsyncBacktraceFramesCount;
    uint64_t *AsyncBacktraceFrames;
} rm_task_info;

typedef struct rm_actor_info {
    const char *Error;
    uint8_t State;
    bool IsDistributedRemote;
    bool IsPriorityEscalated;
    uint8_t MaxPriority;
    uint64_t FirstJob;
    bool HasThreadPort;
    uint32_t ThreadPort;
} rm_actor_info;

/* Loads the library at `path` to read process `pid`: 0, or 1 with a message in `error`. The
 * runtime's symbols are looked up in `pid` where this process has them in the same library file
 * (both load the toolchain's libswift_Concurrency.so): same offset from that file's base. */
int rm_open(const char *path, pid_t pid, char *error, size_t error_size);
int rm_task_info_read(uint64_t task, rm_task_info *out);
int rm_actor_info_read(uint64_t actor, rm_actor_info *out);
uint64_t rm_next_job(uint64_t job);
/* Symbols the library asked for and did not get. */
unsigned rm_symbols_missed(void);

#endif
