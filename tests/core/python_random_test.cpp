// python_random_first against CPython's random.Random(seed).random(), values printed by Python 3.11:
//   python3 -c "import random; print(repr(random.Random(42).random()))"
#include <gtest/gtest.h>

#include "swift/core/python_random.h"

TEST(PythonRandom, FirstDrawIsCPythons) {
  EXPECT_DOUBLE_EQ(swift::python_random_first(0), 0.8444218515250481);
  EXPECT_DOUBLE_EQ(swift::python_random_first(1), 0.13436424411240122);
  EXPECT_DOUBLE_EQ(swift::python_random_first(42), 0.6394267984578837);
  EXPECT_DOUBLE_EQ(swift::python_random_first(43), 0.038551839337380045);
  EXPECT_DOUBLE_EQ(swift::python_random_first(1000), 0.7773566427005639);
  EXPECT_DOUBLE_EQ(swift::python_random_first(4294967295ULL), 0.6353574441341173);  // the largest one-word seed
  EXPECT_DOUBLE_EQ(swift::python_random_first(4294967301ULL), 0.15727238718789782);  // two words
}
