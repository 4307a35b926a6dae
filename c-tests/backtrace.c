/* Backtraces: a call three functions deep, in this program and in a
 * library loaded with dlopen (argv[3], at an address of the loader's
 * choosing). MODE "serve": logs each once, says it is ready (DIR/ready),
 * waits for DIR/go (the driver has turned a backtrace on at each call
 * site with vlog-ctl meanwhile), logs each again, with VLOG_BACKTRACE
 * too, says so (DIR/logged), waits for DIR/end (the driver dumps the
 * ring through the control socket meanwhile) and ends by SIGKILL: the
 * ring file is all that is left. MODE
 * "gdb": calls each once, for gdb's breakpoints on the same lines. The
 * driver reads the lines of the calls from the markers `SITE:`. */
#include "check.h"

#include <dlfcn.h>
#include <signal.h>
#include <time.h>

VLOG_INIT("test.backtrace");

__attribute__((noinline)) static void level3(int n)
{
    VLOG_WARN("program call %d", n); /* SITE: program */
}

__attribute__((noinline)) static void level2(int n)
{
    level3(n + 1);
}

__attribute__((noinline)) static void level1(int n)
{
    level2(n + 1);
}

__attribute__((noinline)) static void always(int n)
{
    VLOG_BACKTRACE(VLOG_PRIO_WARN, "always %d", n); /* SITE: always */
}

/* The three calls, from one place in either mode. */
__attribute__((noinline)) static void calls(int n, void (*lib_level1)(int))
{
    level1(n);
    lib_level1(n);
    always(n);
}

static void wait_for(const char *path)
{
    struct timespec pause = {0, 10 * 1000 * 1000};

    for (int i = 0; i < 60 * 100 && access(path, F_OK) != 0; i++)
        nanosleep(&pause, NULL);
    CHECK(access(path, F_OK) == 0);
}

int main(int argc, char **argv)
{
    char path[600];
    void (*lib_level1)(int);
    void *lib;

    CHECK(argc == 4);
    lib = dlopen(argv[3], RTLD_NOW);
    CHECK(lib != NULL);
    *(void **)&lib_level1 = dlsym(lib, "lib_level1");
    CHECK(lib_level1 != NULL);
    if (strcmp(argv[1], "gdb") == 0) {
        calls(10, lib_level1);
        return 0;
    }
    CHECK(strcmp(argv[1], "serve") == 0);
    calls(0, lib_level1);
    snprintf(path, sizeof path, "%s/ready", argv[2]);
    fclose(fopen(path, "w"));
    snprintf(path, sizeof path, "%s/go", argv[2]);
    wait_for(path);
    calls(10, lib_level1);
    vlog_flush();
    /* The driver dumps the ring through the control socket meanwhile. */
    snprintf(path, sizeof path, "%s/logged", argv[2]);
    fclose(fopen(path, "w"));
    snprintf(path, sizeof path, "%s/end", argv[2]);
    wait_for(path);
    raise(SIGKILL);
    return 1;
}
