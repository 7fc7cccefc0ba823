/* The option structs, as the header declares them, keep the size and field offsets that callers
 * compiled against an older header write (64-bit targets): an option that took a reserved word
 * moved nothing. Each member below has a negative size, and fails the compile, when its check
 * does not hold; the file is only compiled (as C and as C++), never run. */
#include <shmcast.h>

#include <stddef.h>
#include <stdint.h>

#define AT(type, field, offset) (offsetof(type, field) == (offset) ? 1 : -1)

#if UINTPTR_MAX == UINT64_MAX
struct publisher_options_layout {
    char size[sizeof(shmcast_publisher_options) == 120 ? 1 : -1];
    char directory[AT(shmcast_publisher_options, directory, 96)];
    char spin_limit_us[AT(shmcast_publisher_options, spin_limit_us, 104)];
    char imported[AT(shmcast_publisher_options, imported, 108)];
    char cache_window_kib[AT(shmcast_publisher_options, cache_window_kib, 112)];
    char reserved[AT(shmcast_publisher_options, reserved, 116)];
};

struct subscriber_options_layout {
    char size[sizeof(shmcast_subscriber_options) == 88 ? 1 : -1];
    char resume[AT(shmcast_subscriber_options, resume, 80)];
    char spin_limit_us[AT(shmcast_subscriber_options, spin_limit_us, 84)];
};
#endif
