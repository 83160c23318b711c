/*
 * hw_image_table.c: the published table of executable segments (with their unwind tables) and
 * readable address ranges, and the lookups every walk makes in it.
 *
 * Async-signal-safety checklist (everything but hw_images_publish runs in the capture handler):
 *   - The table is a static double buffer: publication fills the idle half, then flips with one
 *     atomic store; a count of walks in flight keeps publication from touching a half in use.
 *   - Lookups are binary searches over static arrays; no allocation, no locks.
 *   - The unwind-table search is libunwind's own dwarf_search_unwind_table, asked for no unwind
 *     information (so it allocates nothing); its reads go through a session's checked accessor.
 *   - Each published segment is also registered with libunwind as a dynamic unwind table: its local
 *     unwinder consults those before dl_iterate_phdr (which takes the loader's lock, which the
 *     interrupted thread may hold).
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "hw_internal.h"

/* Exported by libunwind (libunwind-ptrace uses it) though not declared in its public headers. */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t *di,
                                              unw_proc_info_t *pi, int need_unwind_info, void *arg);

static hw_table g_tables[2];
static _Atomic int g_active_table;
/* The same segments, registered with libunwind as dynamic unwind tables (one list per table). */
static unw_dyn_info_t g_dynamic[2][HW_MAX_SEGMENTS];
static size_t g_dynamic_count[2];
static pthread_mutex_t g_publish_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int g_walks_in_flight;
/* Bumped on every publication: rules cached for addresses of the previous table are stale. */
static _Atomic uint32_t g_table_epoch = 1;

static void hw_dynamic_info_fill(unw_dyn_info_t *di, const hw_unwind_segment *segment) {
    memset(di, 0, sizeof(*di));
    di->start_ip = segment->start;
    di->end_ip = segment->end;
    di->gp = segment->gp;
    di->format = UNW_INFO_FORMAT_REMOTE_TABLE;
    di->u.rti.name_ptr = 0;
    di->u.rti.segbase = segment->eh_frame_hdr;
    di->u.rti.table_data = segment->table_data;
    di->u.rti.table_len = segment->table_words;
}

int hw_images_publish(const hw_unwind_segment *segments, size_t segment_count,
                      const hw_address_range *ranges, size_t range_count) {
    if (segment_count > HW_MAX_SEGMENTS || range_count > HW_MAX_RANGES) {
        return E2BIG;
    }
    pthread_mutex_lock(&g_publish_lock);
    /* The same images as the table in force: nothing to do. Publishing them again would invalidate
     * every cached rule and libunwind's register-state cache, and each rule derived again costs
     * memory for good: libunwind (1.6 to 1.8) allocates unwind information for a step through a
     * dynamically registered table and never frees it (dwarf_put_unwind_info is a no-op). Every
     * monitor start publishes; without this check each start/stop cycle grew the process. */
    const hw_table *active = &g_tables[atomic_load(&g_active_table)];
    if (active->segment_count == segment_count && active->range_count == range_count
        && memcmp(active->segments, segments, segment_count * sizeof(hw_unwind_segment)) == 0
        && memcmp(active->ranges, ranges, range_count * sizeof(hw_address_range)) == 0 && segment_count > 0) {
        pthread_mutex_unlock(&g_publish_lock);
        return 0;
    }
    if (atomic_load(&g_walks_in_flight) != 0) {
        pthread_mutex_unlock(&g_publish_lock);
        return EAGAIN;
    }
    int idle = 1 - atomic_load(&g_active_table);
    hw_table *table = &g_tables[idle];
    memcpy(table->segments, segments, segment_count * sizeof(hw_unwind_segment));
    memcpy(table->ranges, ranges, range_count * sizeof(hw_address_range));
    table->segment_count = segment_count;
    table->range_count = range_count;
    /* Register the new segments before the old ones go: a lookup always finds one of them. */
    for (size_t i = 0; i < segment_count; i++) {
        hw_dynamic_info_fill(&g_dynamic[idle][i], &segments[i]);
        _U_dyn_register(&g_dynamic[idle][i]);
    }
    g_dynamic_count[idle] = segment_count;
    atomic_store(&g_active_table, idle);
    const int retired = 1 - idle;
    for (size_t i = 0; i < g_dynamic_count[retired]; i++) {
        _U_dyn_cancel(&g_dynamic[retired][i]);
    }
    g_dynamic_count[retired] = 0;
    /* Cached unwind rules are keyed by address; an unloaded image's addresses may be reused. */
    atomic_fetch_add(&g_table_epoch, 1);
    unw_flush_cache(unw_local_addr_space, 0, 0);
    pthread_mutex_unlock(&g_publish_lock);
    return 0;
}

const hw_table *hw_table_active(void) {
    return &g_tables[atomic_load(&g_active_table)];
}

void hw_walk_begin(void) {
    atomic_fetch_add(&g_walks_in_flight, 1);
}

void hw_walk_end(void) {
    atomic_fetch_sub(&g_walks_in_flight, 1);
}

uint32_t hw_images_epoch(void) {
    return (uint32_t)atomic_load(&g_table_epoch);
}

const hw_unwind_segment *hw_table_segment(const hw_table *table, uintptr_t ip) {
    size_t low = 0, high = table->segment_count;
    while (low < high) {
        size_t mid = low + (high - low) / 2;
        const hw_unwind_segment *s = &table->segments[mid];
        if (ip < s->start) {
            high = mid;
        } else if (ip >= s->end) {
            low = mid + 1;
        } else {
            return s;
        }
    }
    return NULL;
}

int hw_table_readable(const hw_table *table, uintptr_t start, uintptr_t end) {
    size_t low = 0, high = table->range_count;
    while (low < high) {
        size_t mid = low + (high - low) / 2;
        const hw_address_range *r = &table->ranges[mid];
        if (start < r->start) {
            high = mid;
        } else if (start >= r->end) {
            low = mid + 1;
        } else {
            return end <= r->end;
        }
    }
    return 0;
}

int hw_table_copy(const hw_table *table, uintptr_t address, void *out, size_t size) {
    if (address == 0 || address > UINTPTR_MAX - size || !hw_table_readable(table, address, address + size)) {
        return 0;
    }
    memcpy(out, (const void *)address, size);
    return 1;
}

int hw_function_bounds(uintptr_t lookup_ip, void *arg, uintptr_t *start, uintptr_t *end) {
    const hw_unwind_segment *segment = hw_table_segment(hw_table_active(), lookup_ip);
    if (segment == NULL) {
        return 0;
    }
    unw_dyn_info_t di;
    hw_dynamic_info_fill(&di, segment);
    unw_proc_info_t info;
    memset(&info, 0, sizeof(info));
    /* The search libunwind's dynamic lookup makes, without the unwind information (no allocation). */
    if (UNW_OBJ(dwarf_search_unwind_table)(unw_local_addr_space, lookup_ip, &di, &info, 0, arg) != 0) {
        return 0;
    }
    if (start != NULL) *start = (uintptr_t)info.start_ip;
    if (end != NULL) *end = (uintptr_t)info.end_ip;
    return 1;
}

int hw_unwind_info_covers(uintptr_t lookup_ip, void *arg) {
    return hw_function_bounds(lookup_ip, arg, NULL, NULL);
}

/* `segment`'s search table holds sorted pairs of 4-byte offsets from .eh_frame_hdr (function
 * start, FDE). How many entries start at or before `address` (into *below); 0 when the table
 * cannot be read. */
static int hw_table_entries_below(const hw_table *table, const hw_unwind_segment *segment, uintptr_t address, size_t *below) {
    const uintptr_t entries = segment->table_words; /* one 8-byte pair per word */
    if (entries == 0 || !hw_table_readable(table, segment->table_data, segment->table_data + entries * 8)) {
        return 0;
    }
    const int32_t *pairs = (const int32_t *)segment->table_data;
    size_t low = 0, high = entries;
    while (low < high) {
        size_t mid = low + (high - low) / 2;
        if (segment->eh_frame_hdr + (uintptr_t)(intptr_t)pairs[2 * mid] <= address) {
            low = mid + 1;
        } else {
            high = mid;
        }
    }
    *below = low;
    return 1;
}

/* The function start of entry `index` (of a table hw_table_entries_below could read). */
static uintptr_t hw_table_entry_start(const hw_unwind_segment *segment, size_t index) {
    return segment->eh_frame_hdr + (uintptr_t)(intptr_t)((const int32_t *)segment->table_data)[2 * index];
}

/* The lowest function start in `segment`'s search table above `address`, or the segment's end. */
static uintptr_t hw_next_covered_start(const hw_table *table, const hw_unwind_segment *segment, uintptr_t address) {
    size_t below = 0;
    if (!hw_table_entries_below(table, segment, address, &below)) {
        return address; /* unknown: say "right away", which refuses the stretch */
    }
    return below < segment->table_words ? hw_table_entry_start(segment, below) : segment->end;
}

uintptr_t hw_table_function_start(const hw_table *table, uintptr_t address) {
    const hw_unwind_segment *segment = hw_table_segment(table, address);
    size_t below = 0;
    if (segment == NULL || !hw_table_entries_below(table, segment, address, &below) || below == 0) {
        return 0;
    }
    return hw_table_entry_start(segment, below - 1);
}

int hw_same_uncovered_stretch(const hw_table *table, void *arg, uintptr_t start, uintptr_t address) {
    if (start > address || address - start > 1024 * 1024) {
        return 0;
    }
    const hw_unwind_segment *segment = hw_table_segment(table, start);
    if (segment == NULL || address >= segment->end || hw_unwind_info_covers(start, arg)) {
        return 0;
    }
    return hw_next_covered_start(table, segment, start) > address;
}

uintptr_t hw_uncovered_end(const hw_table *table, void *arg, uintptr_t start, uintptr_t limit) {
    const hw_unwind_segment *segment = hw_table_segment(table, start);
    if (segment == NULL || hw_unwind_info_covers(start, arg)) {
        return start;
    }
    uintptr_t end = hw_next_covered_start(table, segment, start);
    if (end > segment->end) {
        end = segment->end;
    }
    return end - start > limit ? start + limit : end;
}
