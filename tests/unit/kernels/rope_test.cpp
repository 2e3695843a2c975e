#include "kernels/cpu/rope.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace pagoda {

TEST(Rope, PositionZeroIsIdentity) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  auto y = x;
  rope_apply({RopeType::kNormal, 8, 10000.0f, 1.0f}, 0, 1, 8, y.data());
  EXPECT_EQ(x, y);
}

TEST(Rope, NormalRotatesAdjacentPairsNeoxRotatesHalves) {
  const int64_t hd = 4;
  const int64_t pos = 3;
  std::vector<float> x = {1, 2, 3, 4};
  auto normal = x, neox = x;
  rope_apply({RopeType::kNormal, hd, 100.0f, 1.0f}, pos, 1, hd, normal.data());
  rope_apply({RopeType::kNeox, hd, 100.0f, 1.0f}, pos, 1, hd, neox.data());
  // Pair i uses angle pos * base^(-2i/hd): 3 and 3 * 100^(-1/2) = 0.3.
  const double a0 = 3.0, a1 = 0.3;
  auto rot = [](double x0, double x1, double a) {
    return std::pair{x0 * std::cos(a) - x1 * std::sin(a), x0 * std::sin(a) + x1 * std::cos(a)};
  };
  auto [n0, n1] = rot(1, 2, a0);
  auto [n2, n3] = rot(3, 4, a1);
  EXPECT_NEAR(normal[0], n0, 1e-5);
  EXPECT_NEAR(normal[1], n1, 1e-5);
  EXPECT_NEAR(normal[2], n2, 1e-5);
  EXPECT_NEAR(normal[3], n3, 1e-5);
  auto [e0, e2] = rot(1, 3, a0);
  auto [e1, e3] = rot(2, 4, a1);
  EXPECT_NEAR(neox[0], e0, 1e-5);
  EXPECT_NEAR(neox[1], e1, 1e-5);
  EXPECT_NEAR(neox[2], e2, 1e-5);
  EXPECT_NEAR(neox[3], e3, 1e-5);
}

TEST(Rope, PartialRotationLeavesTailAndAppliesToEveryHead) {
  std::vector<float> x = {1, 1, 9, 9, 1, 1, 9, 9};  // 2 heads of 4, only the first 2 dims rotate
  rope_apply({RopeType::kNormal, 2, 10000.0f, 1.0f}, 5, 2, 4, x.data());
  EXPECT_EQ(x[2], 9);
  EXPECT_EQ(x[3], 9);
  EXPECT_EQ(x[6], 9);
  EXPECT_EQ(x[0], x[4]);
  EXPECT_EQ(x[1], x[5]);
  EXPECT_NEAR(x[0] * x[0] + x[1] * x[1], 2.0f, 1e-5);
}

}  // namespace pagoda
