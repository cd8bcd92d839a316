// pt_stdthread — a C++ std::thread is created inside libstdc++, where
// dsmcc's wrap of pthread_create does not reach: it stays on main's node.
// With one program thread per node its std::mutex (a pthread mutex in
// shared memory) cannot be one of the job's locks: the job ends in one
// line naming std::thread, rather than find node 0 holding a lock twice.
#include <cstdio>
#include <mutex>
#include <thread>

static std::mutex counter_lock;
static long counter;

int main()
{
    std::thread t([] {
        std::lock_guard<std::mutex> hold(counter_lock);
        counter++;
    });
    t.join();
    std::printf("reached: counter %ld\n", counter);
    return 0;
}
