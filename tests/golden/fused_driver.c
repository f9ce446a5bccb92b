/* tests/golden/test_fused.py's driver of golden/fused.c's library outside Python, so that it can
 * run under qemu-x86_64 as a CPU of another generation: loads the library (argv[1]), runs
 * lsg_compared on the samples of a file (argv[2], written by the test) and prints its lanes, then
 * each sample's results as hex (the same bits on every CPU, or the library is wrong).
 *
 * A sample: int64 m, int32 dtype, int32 judged, uint32 max_bits, int32 spacing_n, then float64
 * a[m], g[m], bound[m] (when judged), spacing[spacing_n], limits[8], and the bits of the actual
 * and of the golden (uint32 for float32, else uint16), m each. The counts and, when judged, the
 * bins of error / bound (golden/ratio_hist.py's, limits[7] + 1 of them) are printed together. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef int compared_fn(int64_t, const double *, const double *, const void *, const void *,
                        const double *, int, const double *, uint32_t, const double *, double *,
                        double *, int64_t *, int64_t *);

static void *take(FILE *f, size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p || fread(p, 1, bytes, f) != bytes) {
        fprintf(stderr, "short sample file\n");
        exit(3);
    }
    return p;
}

static void hex(const void *p, size_t bytes) {
    const unsigned char *c = p;
    for (size_t i = 0; i < bytes; i++) printf("%02x", c[i]);
    printf("\n");
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    compared_fn *compared = (compared_fn *)dlsym(lib, "lsg_compared");
    int (*lanes)(void) = (int (*)(void))dlsym(lib, "lsg_lanes");
    printf("lanes %d\n", lanes ? lanes() : -1);
    FILE *f = fopen(argv[2], "rb");
    if (!f || !compared) return 2;
    int64_t m;
    while (fread(&m, sizeof m, 1, f) == 1) {
        int32_t head[4];
        if (fread(head, sizeof head, 1, f) != 1) return 3;
        int dtype = head[0], judged = head[1];
        uint32_t max_bits = (uint32_t)head[2];
        size_t n = (size_t)m, w = dtype == 0 ? 4 : 2;
        double *a = take(f, n * 8), *g = take(f, n * 8);
        double *bound = judged ? take(f, n * 8) : NULL;
        double *spacing = take(f, (size_t)head[3] * 8), *limits = take(f, 8 * 8);
        void *abits = take(f, n * w), *rbits = take(f, n * w);
        double *rel = malloc(n * 8), dout[13];
        int64_t iout[15 + 65] = {0}; /* the counts, then the bins */
        int code = compared(m, a, g, abits, rbits, bound, dtype, spacing, max_bits, limits, rel,
                            dout, iout, judged ? iout + 15 : NULL);
        printf("%d ", code);
        hex(rel, n * 8);
        hex(dout, sizeof dout);
        hex(iout, sizeof iout);
    }
    return 0;
}
