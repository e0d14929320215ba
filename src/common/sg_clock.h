/* sg_clock.h: the real clock, for runtimes only.
 *
 * The core never reads a clock: time enters it as an argument (int64_t
 * microseconds, `now_us`), so the simulator can drive it in virtual time.
 */
#ifndef SG_CLOCK_H
#define SG_CLOCK_H

#include <stdint.h>

/* Monotonic time in microseconds. */
int64_t sg_clock_now_us(void);
/* Monotonic time in seconds, as a double (for reports). */
double sg_clock_now_s(void);
/* Wall-clock (Unix epoch) time in seconds, for records a person reads. */
double sg_clock_wall_s(void);

#endif
