/*
 * A spy for the tests of libvlog-syslog.so: preloaded into a real daemon
 * without vlog, it writes one line per call of openlog, syslog and their
 * forms to the file SYSLOG_SPY names (`CALL NAME PRI FORMAT`, appended
 * with one write each), then calls glibc's own function. A daemon whose
 * messages show up here logs through syslog(3), and so is one vlog's
 * preload library can take over; one that writes to /dev/log by itself
 * (dnsmasq) shows nothing.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

static void note(const char *name, int pri, const char *fmt)
{
    char line[1024];
    const char *path = getenv("SYSLOG_SPY");
    int errno_was = errno, fd, n;

    if (path == NULL)
        return;
    n = snprintf(line, sizeof line, "CALL %s %d %s\n", name, pri, fmt ? fmt : "(null)");
    if (n > (int)sizeof line - 1)
        n = (int)sizeof line - 1;
    fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
        if (write(fd, line, (size_t)n) < 0) {
            /* nothing to be done */
        }
        close(fd);
    }
    errno = errno_was;
}

#define GLIBC(name, type) ((type)dlsym(RTLD_NEXT, name))

void openlog(const char *ident, int option, int facility)
{
    note("openlog", facility, ident);
    GLIBC("openlog", void (*)(const char *, int, int))(ident, option, facility);
}

void vsyslog(int pri, const char *fmt, va_list ap)
{
    note("vsyslog", pri, fmt);
    GLIBC("vsyslog", void (*)(int, const char *, va_list))(pri, fmt, ap);
}

void syslog(int pri, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    note("syslog", pri, fmt);
    GLIBC("vsyslog", void (*)(int, const char *, va_list))(pri, fmt, ap);
    va_end(ap);
}

void __vsyslog_chk(int pri, int flag, const char *fmt, va_list ap)
{
    note("__vsyslog_chk", pri, fmt);
    GLIBC("__vsyslog_chk", void (*)(int, int, const char *, va_list))(pri, flag, fmt, ap);
}

void __syslog_chk(int pri, int flag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    note("__syslog_chk", pri, fmt);
    GLIBC("__vsyslog_chk", void (*)(int, int, const char *, va_list))(pri, flag, fmt, ap);
    va_end(ap);
}
