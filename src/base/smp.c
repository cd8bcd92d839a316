/*
 * smp.c — a node's application threads: how many, and which one this is.
 */
#include "base/smp.h"

#include <stdatomic.h>

#include "base/state.h"

DSM_STATE int smp_threads_per_node = 1;
static __thread int my_index;
static DSM_STATE atomic_bool parked;

void smp_set_threads(int threads) { smp_threads_per_node = threads > 1 ? threads : 1; }
int  smp_threads(void) { return smp_threads_per_node; }
int  smp_index(void) { return my_index; }
void smp_set_index(int index) { my_index = index; }
bool smp_concurrent(void) { return smp_threads_per_node > 1 && !atomic_load(&parked); }
void smp_park(bool p) { atomic_store(&parked, p); }
