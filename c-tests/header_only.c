/* Compiled as C99, C11 and C++ with -Wall -Wextra -Wpedantic -Werror: the header
 * must be clean in all of them. Uses every macro once. */
#include <vlog.h>

VLOG_INIT("header.check");

int header_check(int n);
int header_check(int n)
{
    VLOG_DEBUG("plain");
    VLOG_INFO("%d", n);
    VLOG_WARN("%s %d", "two", n);
    VLOG_ERROR("error");
    VLOG(n, "runtime %d", n);
    return VLOG_ENABLED(&vlog__source, VLOG_PRIO_ERROR) +
           vlog(NULL, VLOG_PRIO_INFO, __FILE__, __LINE__, __func__, "x %d", n);
}

int main(void)
{
    return header_check(1) < 0;
}
