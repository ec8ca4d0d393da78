// Python's random.Random(seed).random(): the first draw of CPython's Mersenne Twister seeded with an integer
// (init_by_array over the seed's 32-bit words), for decisions ms-swift makes with it that swift must make alike
// (GKD's choice between the dataset's replies and the student's, seeded by --seed + the global step).
#pragma once

#include <cstdint>

namespace swift {

double python_random_first(uint64_t seed);

}  // namespace swift
