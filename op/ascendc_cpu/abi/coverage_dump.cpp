// lsg_coverage_dump, compiled into the coverage build's libraries only (LSG_COVERAGE): the agent
// calls it after each case so that every case's gcov counters land in a directory of its own
// (farm coverage counts, per branch, the cases that reach it). Each shared library carries its
// own copy of gcov's runtime and counters, so each exports its own dump.
#include <cstdlib>

extern "C" {
void __gcov_dump(void);
void __gcov_reset(void);

// Write this library's counters under `prefix` (gcov's GCOV_PREFIX: the build directory's path
// follows it), or where the build put the objects when it is empty, then zero them. gcov reads
// GCOV_PREFIX at each dump. Returns 0.
__attribute__((visibility("default"))) int lsg_coverage_dump(const char* prefix) {
    if (prefix != nullptr && prefix[0] != '\0') {
        setenv("GCOV_PREFIX", prefix, 1);
    } else {
        unsetenv("GCOV_PREFIX");
    }
    __gcov_dump();
    __gcov_reset();
    return 0;
}
}  // extern "C"
