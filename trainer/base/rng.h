/* rng.h - a small, fast, seedable generator (xoshiro256**, seeded by splitmix64): the same seed
 * gives the same numbers on every machine, which makes runs, shuffles and augmentations
 * reproducible and lets each rank and each sample have its own stream. */
#ifndef RNG_H
#define RNG_H

#include <math.h>
#include <stdint.h>

struct rng {
    uint64_t s[4];
};

static inline uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline void rng_seed(struct rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static inline uint64_t rng_next(struct rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = ((s[1] * 5) << 7 | (s[1] * 5) >> 57) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = s[3] << 45 | s[3] >> 19;
    return result;
}

/* Uniform in [0, 1). */
static inline double rng_uniform(struct rng *r)
{
    return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform integer in [0, n). */
static inline uint64_t rng_below(struct rng *r, uint64_t n)
{
    return (uint64_t)(rng_uniform(r) * (double)n);
}

/* Standard normal (Box-Muller). */
static inline double rng_normal(struct rng *r)
{
    double u = rng_uniform(r), v = rng_uniform(r);
    return sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v);
}

#endif
