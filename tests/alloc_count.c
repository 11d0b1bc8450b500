/* Sees every heap allocation of the test runner (alloc_count.h) and, while
 * counting, looks at its call stack: walking out from the allocator, the
 * call is the library's when a frame lies in the library's code before
 * any frame of the OpenMP runtime or OpenBLAS.  Without AddressSanitizer
 * the runner defines malloc, calloc, realloc, aligned_alloc and
 * posix_memalign, each forwarding to the C library's (dlsym(RTLD_NEXT));
 * under ASan, whose allocator would then no longer see the dynamic
 * loader's allocations as the loader's (LeakSanitizer takes them as
 * roots), ASan's allocation hook is used instead. */
#define _GNU_SOURCE /* RTLD_NEXT, dladdr, dl_iterate_phdr */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_count.h"
#include "core/asan.h"
#include "gcn.h"

typedef struct code_range {
    uintptr_t lo, hi;
} code_range;

enum { MAX_RUNTIMES = 8, MAX_FRAMES = 64 };
static code_range lib_code;                   /* the executable segment holding libgcn */
static code_range runtime_code[MAX_RUNTIMES]; /* OpenMP's and OpenBLAS's */
static int n_runtimes;
static atomic_bool counting;
static atomic_uint_fast64_t calls;
static atomic_bool have_first;
static const char *first_kind;
static void *first_caller;
static _Thread_local bool inside;

static bool in_range(code_range r, uintptr_t a)
{
    return a >= r.lo && a < r.hi;
}

static bool in_runtime(uintptr_t a)
{
    for (int r = 0; r < n_runtimes; r++)
        if (in_range(runtime_code[r], a))
            return true;
    return false;
}

static bool is_runtime(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return !strncmp(base, "libgomp.so", 10) || !strncmp(base, "libomp.so", 9) ||
           !strncmp(base, "libopenblas", 11);
}

static int find_code(struct dl_phdr_info *info, size_t size, void *user)
{
    (void)size;
    uintptr_t lib_fn = *(const uintptr_t *)user;
    bool runtime = info->dlpi_name && is_runtime(info->dlpi_name);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        code_range r = {info->dlpi_addr + ph->p_vaddr, info->dlpi_addr + ph->p_vaddr + ph->p_memsz};
        if (in_range(r, lib_fn))
            lib_code = r;
        else if (runtime && n_runtimes < MAX_RUNTIMES)
            runtime_code[n_runtimes++] = r;
    }
    return 0;
}

/* Counts the allocation when it is the library's, walking out from the
 * frame of `caller`, the allocation function's return address (under ASan,
 * the hook's, inside ASan's allocator). */
static void count(const char *kind, void *caller)
{
    if (inside)
        return;
    inside = true;
    void *frames[MAX_FRAMES];
    int n = backtrace(frames, MAX_FRAMES), i = 0;
    while (i < n && frames[i] != caller)
        i++;
    if (i == n) { /* not on the unwound stack: judge the caller alone */
        frames[0] = caller;
        n = 1;
        i = 0;
    }
    for (; i < n && !in_runtime((uintptr_t)frames[i]); i++)
        if (in_range(lib_code, (uintptr_t)frames[i])) {
            atomic_fetch_add(&calls, 1);
            if (!atomic_exchange(&have_first, true)) {
                first_kind = kind;
                first_caller = frames[i];
            }
            break;
        }
    inside = false;
}

static void hook(void);

void alloc_count_begin(void)
{
    hook();
    void *warm[2];
    backtrace(warm, 2); /* loads the unwinder, which allocates, before counting */
    uintptr_t lib_fn = (uintptr_t)&gcn_ctx_create;
    lib_code = (code_range){0, 0};
    n_runtimes = 0;
    dl_iterate_phdr(find_code, &lib_fn);
    cr_assert(lib_code.hi > lib_code.lo, "alloc_count: the library's code was not found");
    atomic_store(&calls, 0);
    atomic_store(&have_first, false);
    first_kind = NULL;
    first_caller = NULL;
    atomic_store(&counting, true);
}

alloc_count alloc_count_end(void)
{
    atomic_store(&counting, false);
    alloc_count c = {.calls = atomic_load(&calls), .first = first_kind, .where = ""};
    Dl_info info;
    if (first_caller && dladdr(first_caller, &info) && info.dli_fname)
        snprintf(c.where, sizeof c.where, "%s+%#lx", info.dli_fname,
                 (unsigned long)((uintptr_t)first_caller - (uintptr_t)info.dli_fbase));
    return c;
}

#ifdef GCN_ASAN
/* ---- under AddressSanitizer: its allocation hook ------------------------ */

int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                              void (*free_hook)(const volatile void *));

static void on_malloc(const volatile void *p, size_t size)
{
    (void)p;
    (void)size;
    if (atomic_load_explicit(&counting, memory_order_relaxed))
        count("allocation", __builtin_return_address(0));
}

static void on_free(const volatile void *p)
{
    (void)p;
}

static void hook(void)
{
    static bool installed;
    if (!installed)
        installed = __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free) != 0;
    cr_assert(installed, "alloc_count: ASan's allocation hook could not be installed");
}

#else
/* ---- otherwise: the runner's own allocation functions ------------------- */

static void *(*next_malloc)(size_t);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static void (*next_free)(void *);
static void *(*next_aligned_alloc)(size_t, size_t);
static int (*next_posix_memalign)(void **, size_t, size_t);

/* dlsym may allocate before the functions it looks up are known: those
 * requests come from here, and are never freed. */
static _Alignas(64) char boot[16384];
static atomic_size_t boot_used;
static atomic_bool resolving;

static void *boot_alloc(size_t n)
{
    size_t at = atomic_fetch_add(&boot_used, (n + 63) / 64 * 64);
    return at + n <= sizeof boot ? boot + at : NULL;
}

static bool from_boot(const void *p)
{
    return (const char *)p >= boot && (const char *)p < boot + sizeof boot;
}

static bool resolve(void)
{
    if (next_free)
        return true;
    if (atomic_exchange(&resolving, true))
        return false;
    next_malloc = dlsym(RTLD_NEXT, "malloc");
    next_calloc = dlsym(RTLD_NEXT, "calloc");
    next_realloc = dlsym(RTLD_NEXT, "realloc");
    next_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
    next_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
    next_free = dlsym(RTLD_NEXT, "free");
    atomic_store(&resolving, false);
    return next_free != NULL;
}

static void hook(void)
{
    cr_assert(resolve(), "alloc_count: the C library's allocator was not found");
}

#define COUNT(kind)                                                \
    do {                                                           \
        if (atomic_load_explicit(&counting, memory_order_relaxed)) \
            count((kind), __builtin_return_address(0));            \
    } while (0)

void *malloc(size_t n)
{
    if (!resolve())
        return boot_alloc(n);
    COUNT("malloc");
    return next_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    if (!resolve())
        return size && n > SIZE_MAX / size ? NULL : boot_alloc(n * size); /* zero already */
    COUNT("calloc");
    return next_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    if (from_boot(p)) { /* its size is unknown: copy what the buffer holds after it */
        void *q = resolve() ? next_malloc(n) : boot_alloc(n);
        size_t left = (size_t)(boot + sizeof boot - (char *)p);
        if (q)
            memcpy(q, p, n < left ? n : left);
        return q;
    }
    if (!resolve())
        return boot_alloc(n);
    COUNT("realloc");
    return next_realloc(p, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    if (!resolve())
        return align <= 64 ? boot_alloc(n) : NULL;
    COUNT("aligned_alloc");
    return next_aligned_alloc(align, n);
}

int posix_memalign(void **p, size_t align, size_t n)
{
    if (!resolve()) {
        *p = align <= 64 ? boot_alloc(n) : NULL;
        return *p ? 0 : 12; /* ENOMEM */
    }
    COUNT("posix_memalign");
    return next_posix_memalign(p, align, n);
}

void free(void *p)
{
    if (p && !from_boot(p) && resolve())
        next_free(p);
}
#endif
