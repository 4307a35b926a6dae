/* The library c-tests/backtrace.c loads with dlopen: a call three
 * functions deep (the driver reads its line from the marker `SITE:`). */
#include <vlog.h>

VLOG_INIT("test.backtrace.lib");

__attribute__((noinline)) static void lib_level3(int n)
{
    VLOG_WARN("library call %d", n); /* SITE: library */
}

__attribute__((noinline)) static void lib_level2(int n)
{
    lib_level3(n + 1);
}

__attribute__((noinline)) void lib_level1(int n);

__attribute__((noinline)) void lib_level1(int n)
{
    lib_level2(n + 1);
}
