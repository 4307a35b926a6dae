/* A stand-in for Open vSwitch's <openvswitch/vlog.h>, for namesakes.c: the
 * names it shares with vlog.h, declared and defined as Open vSwitch's
 * header has them (its function vlog_init and vlog, its macros VLOG,
 * VLOG_INFO, VLOG_WARN, VLOG_INFO_ONCE, VLOG_WARN_ONCE and VLOG_FATAL),
 * and the few
 * around them these need. The test needs no Open vSwitch installed. */
#ifndef NAMESAKES_OPENVSWITCH_VLOG_H
#define NAMESAKES_OPENVSWITCH_VLOG_H

enum vlog_level { VLL_OFF, VLL_EMER, VLL_ERR, VLL_WARN, VLL_INFO, VLL_DBG, VLL_N_LEVELS };

struct vlog_module {
    const char *name;
    int min_level;
};

void vlog_init(void);
void vlog(const struct vlog_module *, enum vlog_level, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

#define VLOG_DEFINE_THIS_MODULE(MODULE)                                       \
    static struct vlog_module this_module = { #MODULE, VLL_INFO }

#define VLOG(LEVEL, ...)                                                      \
    do {                                                                      \
        enum vlog_level level__ = LEVEL;                                      \
        if (this_module.min_level >= (int)level__)                            \
            vlog(&this_module, level__, __VA_ARGS__);                         \
    } while (0)
#define VLOG_ERR(...) VLOG(VLL_ERR, __VA_ARGS__)
#define VLOG_WARN(...) VLOG(VLL_WARN, __VA_ARGS__)
#define VLOG_INFO(...) VLOG(VLL_INFO, __VA_ARGS__)
#define VLOG_DBG(...) VLOG(VLL_DBG, __VA_ARGS__)
#define VLOG_ONCE(LEVEL, ...)                                                 \
    do {                                                                      \
        static int once__;                                                    \
        if (!once__) {                                                        \
            once__ = 1;                                                       \
            vlog(&this_module, LEVEL, __VA_ARGS__);                           \
        }                                                                     \
    } while (0)
#define VLOG_WARN_ONCE(...) VLOG_ONCE(VLL_WARN, __VA_ARGS__)
#define VLOG_INFO_ONCE(...) VLOG_ONCE(VLL_INFO, __VA_ARGS__)
/* Open vSwitch's logs at emergency level and exits with status 1. */
void vlog_fatal(const struct vlog_module *, const char *format, ...)
    __attribute__((format(printf, 2, 3), noreturn));
#define VLOG_FATAL(...) vlog_fatal(&this_module, __VA_ARGS__)

#endif
