/* Helpers shared by the C tests: CHECK aborts the test with the failed
 * expression; the dump helpers read the ring back as text. */
#ifndef VLOG_CHECK_H
#define VLOG_CHECK_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vlog.h>

#define CHECK(cond)                                                           \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,  \
                    #cond);                                                   \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

/* Fails unless `text` contains `needle`, showing both. */
#define CHECK_HAS(text, needle)                                               \
    do {                                                                      \
        if (strstr((text), (needle)) == NULL) {                               \
            fprintf(stderr, "%s:%d: \"%s\" lacks \"%s\"\n", __FILE__,         \
                    __LINE__, (text), (needle));                              \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

/* Fails unless the last vlog error contains `needle`. */
#define CHECK_ERROR(needle)                                                   \
    do {                                                                      \
        if (strstr(vlog_last_error(), (needle)) == NULL) {                    \
            fprintf(stderr, "%s:%d: error \"%s\" lacks \"%s\"\n", __FILE__,   \
                    __LINE__, vlog_last_error(), (needle));                   \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

/* Reads everything from `fd` (rewound to the start) into a malloc'd string. */
static inline char *check_slurp_fd(int fd)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = (char *)malloc(cap);
    ssize_t n;

    CHECK(buf != NULL);
    CHECK(lseek(fd, 0, SEEK_SET) == 0);
    while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
        len += (size_t)n;
        if (cap - len < 2) {
            cap *= 2;
            buf = (char *)realloc(buf, cap);
            CHECK(buf != NULL);
        }
    }
    CHECK(n == 0);
    buf[len] = '\0';
    return buf;
}

/* The ring as text, via vlog_dump; `*records` gets vlog_dump's count. */
static inline char *check_dump(int *records)
{
    FILE *f = tmpfile();
    char *text;
    int n;

    CHECK(f != NULL);
    n = vlog_dump(fileno(f));
    CHECK(n >= 0);
    if (records)
        *records = n;
    text = check_slurp_fd(fileno(f));
    fclose(f);
    return text;
}

static inline char *check_slurp_path(const char *path)
{
    FILE *f = fopen(path, "r");
    char *text;

    CHECK(f != NULL);
    text = check_slurp_fd(fileno(f));
    fclose(f);
    return text;
}

/* How many entries a /proc directory has (descriptors, threads). */
static inline int check_entries(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    int n = 0;

    CHECK(d != NULL);
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* How many descriptors this process has open (from /proc/self/fd). */
static inline int check_open_fds(void)
{
    return check_entries("/proc/self/fd") - 1; /* the directory's own */
}

/* How many times `needle` occurs in `haystack`. */
static inline int check_count(const char *haystack, const char *needle)
{
    int n = 0;
    size_t len = strlen(needle);

    while ((haystack = strstr(haystack, needle)) != NULL) {
        n++;
        haystack += len;
    }
    return n;
}

/* DIR/NAME in one of eight rotating buffers: a few paths can be in use at
 * once (as arguments of one call). */
static inline const char *check_path(const char *dir, const char *name)
{
    static char paths[8][512];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", dir, name);
    return p;
}

#endif
