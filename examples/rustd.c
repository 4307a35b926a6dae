#include <vlog.h>

VLOG_INIT("rustd");

int parser_init(void);
int parser_check(int len);

int main(void)
{
    parser_init();
    VLOG_INFO("checking %d frames", 2);
    parser_check(64);
    if (parser_check(9000) != 0)
        VLOG_ERROR("frame dropped");
    return 0;
}
